#!/bin/bash
# Stop 44 call 4 (1 x H100): the diagonal pairs (uncommitted tree on 41771fb): build, GPU tests, then
# dmuon-bench sym-gemm A/B on one build, DMUON_SYM_DIAG_PAIRS off / on / off / on.
set -o pipefail
nvidia-smi -L | grep -q H100 || { nvidia-smi -L; echo "not an H100: stopping"; exit 3; }
LOG=$OUT/run.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
say "build"
source harness/tools/device_configure.sh
{ device_configure . && cmake --build build-dev -j16 --target test_gpu_sym_gemm test_gpu_ns_engine dmuon-bench; } \
  > /tmp/build.txt 2>&1 || { tail -60 /tmp/build.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
say "test_gpu_sym_gemm"
timeout 120 ./build-dev/tests/test_gpu_sym_gemm > $OUT/test_sym.txt 2>&1; rc=$?
echo "test_gpu_sym_gemm exit $rc" | tee -a "$LOG"; tail -4 $OUT/test_sym.txt | tee -a "$LOG"
[ $rc = 124 ] && { say "test timed out: stopping"; exit 1; }
grep -B3 -A12 "FAILED" $OUT/test_sym.txt | head -60
say "sym-gemm A/B"
S=4096x14336,4096x4096,2048x11008,8192x28672
for r in 1 2; do
  for mode in off on; do
    DMUON_SYM_DIAG_PAIRS=$mode timeout 100 ./build-dev/harness/dmuon-bench sym-gemm --shapes $S --dtype fp16 --repeats 30 \
      > $OUT/ab-$mode-$r.txt 2>&1
    echo "ab $mode $r exit $?" | tee -a "$LOG"
    grep -E "^\| [0-9]" $OUT/ab-$mode-$r.txt | cut -d'|' -f2-7 | tee -a "$LOG"
  done
done
say "test_gpu_ns_engine"
timeout 150 ./build-dev/tests/test_gpu_ns_engine > $OUT/test_ns.txt 2>&1
echo "test_gpu_ns_engine exit $?" | tee -a "$LOG"; tail -3 $OUT/test_ns.txt | tee -a "$LOG"
say "done"
