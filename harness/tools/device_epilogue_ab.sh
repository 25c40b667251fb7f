#!/bin/bash
# One device call for the sym_gemm_sm90 epilogues (issue 16): build; test_gpu_sym_gemm under the
# tree's rule (epilogue_overlaps in kernels/cuda/sym_gemm_sm90.cu; its inline-vs-overlap bits case
# runs either way); the inline/overlap A/B of `dmuon-bench sym-gemm` (DMUON_SYM_EPILOGUE, alternating);
# torch's NS baseline; `dmuon-bench kernels` (whole model) with the tree's rule, then with every
# epilogue inline, against the same torch.json; test_gpu_ns_engine as time allows. To try a rule
# before committing it, edit epilogue_overlaps in the working tree: uncommitted edits travel.
# Run from the repository root on the GPU machine with $OUT set and .boost-po carried:
#   BUDGET=<seconds this call may use, default 560> bash harness/tools/device_epilogue_ab.sh
# BUDGET trims the A/B's second round and drops Qwen2.5-3B from the whole model when time is short.
# Written at stop 47; ran at stop 48 (reports/measured/sym-epilogue-overlap-2026-12-07/call1).
set -o pipefail
source harness/tools/device_configure.sh
device_start
{ device_configure . && timeout 330 cmake --build build-dev -j16 --target test_gpu_sym_gemm test_gpu_ns_engine dmuon-bench; } \
  > /tmp/b.txt 2>&1 || { tail -40 /tmp/b.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
obj=$(find build-dev -name "sym_gemm_sm90.cu.o" | head -1)
cuobjdump -sass "$obj" > /tmp/sym.sass 2>&1
awk '/Function : /{f=0} /Function : .*sym_gemm_kernelI6__halfLb1ELb1E/{f=1} f' /tmp/sym.sass > /tmp/k.sass
echo "overlap+C fp16 SASS: $(wc -l < /tmp/k.sass) lines, HGMMA $(grep -c HGMMA /tmp/k.sass), STL $(grep -c STL /tmp/k.sass), LDL $(grep -c LDL /tmp/k.sass)" | tee -a "$LOG"
grep -nE "HGMMA|STL|LDL|SETMAXREG|EXIT|BAR.SYNC" /tmp/k.sass | sed -E 's/ +/ /g' | cut -c1-90 > $OUT/sass-map.txt
say "test_gpu_sym_gemm (rule)"
timeout 120 ./build-dev/tests/test_gpu_sym_gemm > /tmp/ts.txt 2>&1; rc=$?
echo "test_gpu_sym_gemm exit $rc" | tee -a "$LOG"; grep -E "FAILED|failed|passed|CHECK|with expansion|differ|unwritten" /tmp/ts.txt | head -20 | tee -a "$LOG"
[ $rc = 124 ] && { say "HUNG: stop"; exit 1; }
say "sym-gemm A/B"
for round in 1 2; do
  for mode in inline overlap; do
    [ $SECONDS -gt 280 ] && [ $round = 2 ] && continue
    DMUON_SYM_EPILOGUE=$mode timeout 60 ./build-dev/harness/dmuon-bench sym-gemm --shapes 4096x14336,4096x4096,2048x11008 \
      --dtype fp16 --repeats 30 > /tmp/ab.txt 2>&1
    echo "-- fp16 $mode round $round exit $?" | tee -a "$LOG"; grep -E "^\| [0-9]" /tmp/ab.txt | cut -d'|' -f2-7 | tee -a "$LOG"
  done
done
# The device time left decides how much of the whole-model A/B runs (the call's limit shrinks to it).
BUDGET=${BUDGET:-560}
[ $SECONDS -gt $((BUDGET - 150)) ] && { say "no time for the whole model"; exit 0; }
say "torch baseline"
MODELS="--model scenarios/models/llama3-8b.yaml"
[ $SECONDS -lt $((BUDGET - 300)) ] && MODELS="--model scenarios/models/qwen2.5-3b.yaml $MODELS"
SHAPES=$(./build-dev/harness/dmuon-bench kernels $MODELS --print-shapes 2>>"$LOG")
PYTHONUNBUFFERED=1 timeout 90 python3 harness/tools/torch_ns_baseline.py --shapes "$SHAPES" --out $OUT/torch.json >> "$LOG" 2>&1
for mode in rule inline; do
  say "dmuon-bench kernels ($mode)"
  div=1; [ $mode = rule ] && div=2
  env $([ $mode = inline ] && echo DMUON_SYM_EPILOGUE=inline) timeout $(( (BUDGET - SECONDS) / div )) ./build-dev/harness/dmuon-bench kernels $MODELS \
    --torch-json $OUT/torch.json --tune-cache /tmp/tune-$mode.json --report-md $OUT/kernels-$mode.md \
    --report-json $OUT/kernels-$mode.json > /tmp/k-$mode.txt 2>&1
  echo "kernels ($mode) exit $?" | tee -a "$LOG"
  grep -E "^\| (qwen|llama)[^|]*\| (torch|dmuon) \|" $OUT/kernels-$mode.md | tee -a "$LOG"
done
say "test_gpu_ns_engine"
timeout $((BUDGET - SECONDS)) ./build-dev/tests/test_gpu_ns_engine > /tmp/tn.txt 2>&1; echo "test_gpu_ns_engine exit $?" | tee -a "$LOG"
grep -E "FAILED|passed|failed" /tmp/tn.txt | head -5 | tee -a "$LOG"
say "done"
