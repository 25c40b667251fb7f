#!/bin/bash
# Device call 1 of 2026-12-07 session 2: H200 -> the kernels run (targets on H200); H100 -> build,
# the sm_90a GPU tests on the tree after stop 48's removal, and the per-kernel breakdown at batch.
set -o pipefail
export NCCL_NVLS_ENABLE=0
nvidia-smi -L | tee $OUT/gpu.txt
if nvidia-smi -L | grep -q H200; then
  bash harness/tools/device_kernels_run.sh > /dev/null 2>&1
  tail -c 6000 $OUT/run.log
  exit 0
fi
LOG=$OUT/breakdown.log
source harness/tools/device_configure.sh
echo "== $(date -u +%H:%M:%S) build" >> $LOG
device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench test_gpu_sym_gemm test_gpu_ns_engine >> /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt; exit 1; }
echo "== $(date -u +%H:%M:%S) GPU tests" >> $LOG
for t in test_gpu_sym_gemm test_gpu_ns_engine; do
  timeout 120 ./build-dev/tests/$t > /tmp/$t.txt 2>&1; echo "$t exit $?" >> $LOG
  grep -E "passed|failed|FAILED|SKIP" /tmp/$t.txt | head -10 >> $LOG
done
bash harness/tools/device_ns_breakdown.sh "14336x4096:64 4096x4096:64" dmuon > /dev/null
tail -c 9000 $LOG
