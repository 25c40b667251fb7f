#!/bin/bash
# One device call for issue [C]: build, GPU tests, dmuon-verify --backend cuda, torch baseline and
# dmuon-bench kernels. Run from the repository root on the GPU machine with $OUT set; writes
#   $OUT/run.log  $OUT/verify-cuda.json  $OUT/torch.json  $OUT/tune.json  $OUT/calibration.yaml  $OUT/kernels.md  $OUT/kernels.json
# Needs .boost-po (bash ../shared/tools/stage-boost-po.sh .boost-po) carried along.
set -o pipefail
OUT=${OUT:?set OUT}
LOG=$OUT/run.log
MODELS="--model scenarios/models/qwen2.5-3b.yaml --model scenarios/models/llama3-8b.yaml --shapes 8192x28672"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
say "machine"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
device_configure . > $OUT/build.txt 2>&1 &&
cmake --build build-dev -j16 --target dmuon-verify test_gpu_devices test_gpu_ns_engine test_gpu_elementwise test_gpu_sym_gemm \
  >> $OUT/build.txt 2>&1 || { tail -60 $OUT/build.txt >> "$LOG"; say "BUILD FAILED"; exit 1; }
cmake --build build-dev -j16 --target dmuon-bench >> $OUT/build.txt 2>&1 || { tail -40 $OUT/build.txt >> "$LOG"; say "dmuon-bench BUILD FAILED"; }
rm -f $OUT/build.txt
say "GPU tests"
for t in test_gpu_devices test_gpu_ns_engine test_gpu_elementwise test_gpu_sym_gemm; do
  ./build-dev/tests/$t > /tmp/$t.txt 2>&1; echo "$t exit $?" >> "$LOG"
  grep -E "^tune|FAILED|failed|passed|SKIP" /tmp/$t.txt | head -40 >> "$LOG"
done
say "torch baseline + golden (torch's NS at 768x2048, 2048x768)"
SHAPES=$(./build-dev/harness/dmuon-bench kernels $MODELS --print-shapes 2>>"$LOG" || echo "2048x2048,256x2048,11008x2048,2048x11008,4096x4096,1024x4096,14336x4096,4096x14336,8192x28672")
PYTHONUNBUFFERED=1 python3 harness/tools/torch_ns_baseline.py --shapes "$SHAPES" --out $OUT/torch.json \
  --golden-dir /tmp/golden-large >> "$LOG" 2>&1
say "dmuon-verify --backend cuda"
./build-dev/harness/dmuon-verify --backend cuda --golden tests/golden/torch --golden /tmp/golden-large --json $OUT/verify-cuda.json \
  > /tmp/verify.txt 2>/dev/null; echo "verify exit $?" >> "$LOG"
grep -E "FAIL|golden|passed" /tmp/verify.txt >> "$LOG"
say "dmuon-bench kernels"
./build-dev/harness/dmuon-bench kernels $MODELS --torch-json $OUT/torch.json --tune-cache $OUT/tune.json \
  --calibration $OUT/calibration.yaml --report-md $OUT/kernels.md --report-json $OUT/kernels.json >> "$LOG" 2>&1
echo "bench exit $?" >> "$LOG"
say "done"
tail -c 9000 "$LOG"
