#!/bin/bash
# One device call for issue 16's sm_90a X X^T kernel: build only its targets, show the kernel's
# resources and SASS instruction mix, run its GPU test and the NS engine test, then
# `dmuon-bench sym-gemm` (the kernel, the full cuBLAS GEMM and the block-row variant side by side).
# Run from the repository root on the GPU machine with $OUT set; needs .boost-po carried along.
# SYM_SHAPES overrides the benchmark's shapes; SYM_SKIP_TESTS=1 times only; SYM_AUTOTUNE=1 also
# runs `dmuon-bench kernels` on three model shapes, whose variants column shows what the
# autotuner measured for symmetric_sm90 / gram_sm90 and which implementation it chose (SYM_KERNEL_SHAPES
# overrides those shapes).
set -o pipefail
OUT=${OUT:?set OUT}
export NCCL_NVLS_ENABLE=0
LOG=$OUT/run.log
say() { echo "== $(date -u +%FT%TZ) $*" | tee -a "$LOG"; }
say "commit $(git rev-parse --short HEAD 2>/dev/null), $(git status --short | wc -l) changed files"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
{ device_configure . && cmake --build build-dev -j16 --target test_gpu_sym_gemm test_gpu_ns_engine dmuon-bench; } \
  > $OUT/build.txt 2>&1 || { tail -60 $OUT/build.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
grep -A3 "sym_xxt_kernel" $OUT/build.txt | grep -E "registers|spill" | head -4 >> "$LOG"
obj=$(find build-dev -name "sym_gemm_sm90.cu.o" | head -1)
if [ -n "$obj" ]; then
  cuobjdump -res-usage "$obj" > $OUT/res-usage.txt 2>&1
  cuobjdump -sass "$obj" > $OUT/sym.sass 2>&1
  echo "SASS: HGMMA $(grep -c HGMMA $OUT/sym.sass), UTMALDG $(grep -c UTMALDG $OUT/sym.sass), LDL/STL $(grep -cE 'LDL|STL' $OUT/sym.sass), USETMAXREG $(grep -c SETMAXREG $OUT/sym.sass)" | tee -a "$LOG"
  grep -E "REG|SHARED|STACK" $OUT/res-usage.txt | head -4 >> "$LOG"
  grep -nE "STL|LDL" $OUT/sym.sass | head -8 >> "$LOG"
fi
if [ "${SYM_SKIP_TESTS:-0}" != 1 ]; then
  say "test_gpu_sym_gemm"
  timeout 120 ./build-dev/tests/test_gpu_sym_gemm > $OUT/test_sym.txt 2>&1
  rc=$?
  echo "test_gpu_sym_gemm exit $rc" | tee -a "$LOG"; tail -5 $OUT/test_sym.txt >> "$LOG"
  # A hung kernel (exit 124) would hang the benchmark too: stop here.
  [ $rc = 124 ] && { say "test timed out: no benchmark"; tail -c 3000 "$LOG"; exit 1; }
  say "test_gpu_ns_engine"
  timeout 180 ./build-dev/tests/test_gpu_ns_engine > $OUT/test_ns.txt 2>&1
  echo "test_gpu_ns_engine exit $?" | tee -a "$LOG"; tail -5 $OUT/test_ns.txt >> "$LOG"
fi
say "dmuon-bench sym-gemm"
timeout 240 ./build-dev/harness/dmuon-bench sym-gemm ${SYM_SHAPES:+--shapes $SYM_SHAPES} --report-md $OUT/sym-gemm.md \
  > $OUT/bench.txt 2>&1
echo "bench exit $?" | tee -a "$LOG"
if [ "${SYM_AUTOTUNE:-0}" = 1 ]; then
  say "dmuon-bench kernels (autotuner)"
  timeout 300 ./build-dev/harness/dmuon-bench kernels --shapes ${SYM_KERNEL_SHAPES:-4096x14336,14336x4096,4096x4096,2048x11008} --presets torch,dmuon \
    --repeats 5 --batch-elements 0 --gemm-size 4096 --elementwise-elements 1000000 --tune-cache $OUT/tune.json \
    --report-md $OUT/kernels.md > $OUT/kernels.txt 2>&1
  echo "kernels exit $?" | tee -a "$LOG"
  grep -E "^\| [0-9]+x[0-9]+ " $OUT/kernels.md | cut -d'|' -f2,5,7,8,13 | tee -a "$LOG"
fi
say "done"
tail -c 2500 "$LOG"
grep "^|" $OUT/bench.txt | cut -d'|' -f2-7
