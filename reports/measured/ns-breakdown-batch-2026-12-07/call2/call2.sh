#!/bin/bash
# Device call 2 of 2026-12-07 session 2: one launch an entry for batches past L2 (DMUON_SYM_ENTRY_LAUNCHES).
set -o pipefail
export NCCL_NVLS_ENABLE=0
LOG=$OUT/run.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
nvidia-smi -L | tee -a $LOG
source harness/tools/device_configure.sh
say build
device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench test_gpu_sym_gemm test_gpu_ns_engine >> /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt | tee -a $LOG; exit 1; }
say "GPU tests"
for t in test_gpu_sym_gemm test_gpu_ns_engine; do
  timeout 150 ./build-dev/tests/$t > $OUT/$t.txt 2>&1; echo "$t exit $?" >> $LOG
  grep -E "passed|failed|FAILED|SKIP" $OUT/$t.txt | head -10 >> $LOG
done
DMUON_SYM_ENTRY_LAUNCHES=off timeout 100 ./build-dev/tests/test_gpu_sym_gemm "sm_90a batches past L2*" > /tmp/off.txt 2>&1; echo "entry test, launches off: exit $?" >> $LOG
grep -E "passed|failed" /tmp/off.txt >> $LOG
B=./build-dev/harness/dmuon-bench
Q=(--gemm-size 1024 --elementwise-elements 1048576)
say "A/B: entry launches off / on, two rounds"
for r in 1 2; do
  for mode in off on; do
    echo "-- round $r, DMUON_SYM_ENTRY_LAUNCHES=$mode" >> $LOG
    DMUON_SYM_ENTRY_LAUNCHES=$mode timeout 120 $B kernels --shapes 14336x4096:64,4096x14336:32 --presets dmuon --chosen-only \
      --tune-cache /tmp/tune.json --repeats 10 "${Q[@]}" 2>&1 | grep -E " batch [0-9]+:" >> $LOG
  done
done
say "whole model (dmuon preset, entry launches on) against torch in this call"
SHAPES=$($B kernels --model scenarios/models/llama3-8b.yaml --print-shapes)
PYTHONUNBUFFERED=1 timeout 120 python3 harness/tools/torch_ns_baseline.py --shapes "$SHAPES" --out $OUT/torch.json > /tmp/torch.txt 2>&1
echo "torch exit $?" >> $LOG
timeout 200 $B kernels --model scenarios/models/llama3-8b.yaml --presets dmuon --torch-json $OUT/torch.json \
  --tune-cache /tmp/tune.json --report-md $OUT/kernels.md --report-json $OUT/kernels.json > $OUT/kernels.txt 2>&1
echo "kernels exit $?" >> $LOG
grep -E "whole model|b64|b32|b1 " $OUT/kernels.txt >> $LOG
say done
cat $LOG
