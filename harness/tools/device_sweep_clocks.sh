#!/bin/bash
# One device call testing why the one-GPU collective sweep read 7-13 us for small one-rank
# reduce-scatters that the same lease's steps issued 6.0-6.4 us apart (reports/sim-validation.md,
# stop 31): is the GPU's SM clock low after the sweep's no-work points? Runs `dmuon-bench calibrate
# --ns-grid none` twice on one scenario, without (--collective-warm-ms 0) and with the busy kernel
# before each point (20 ms), logging nvidia-smi's SM clock every 20 ms beside both, then
# `dmuon-bench step` on the step scenarios for the executor's own reduce-scatter spacing. Also runs
# the GPU test binaries named in DMUON_GPU_TESTS first. Run from the repository root on the GPU
# machine with $OUT set and .boost-po carried:
#   EXPECT_GPU=H100 DMUON_GPU_TESTS="test_gpu_sym_gemm" bash harness/tools/device_sweep_clocks.sh CAL-SCENARIO STEP-SCENARIO...
# Everything comes back in $OUT/sweep-clocks.tgz and $OUT/run.log.
set -o pipefail
OUT=${OUT:?set OUT}
CAL=${1:?usage: device_sweep_clocks.sh CAL-SCENARIO STEP-SCENARIO...}
shift
LOG=$OUT/run.log
W=/tmp/sweep-clocks
mkdir -p $W
export NCCL_NVLS_ENABLE=0
say() { echo "== $(date -u +%H:%M:%S.%N | cut -c1-12) $*" | tee -a "$LOG"; }
GPUS=$(nvidia-smi -L); echo "$GPUS" | tee -a "$LOG"
if [ -n "$EXPECT_GPU" ] && ! grep -q "$EXPECT_GPU" <<< "$GPUS"; then say "expected $EXPECT_GPU; stopping"; exit 3; fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,persistence_mode,power.limit --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
device_configure . > $W/build.txt 2>&1 &&
  cmake --build build-dev -j16 --target dmuon-bench $DMUON_GPU_TESTS >> $W/build.txt 2>&1 ||
  { tail -60 $W/build.txt >> "$LOG"; say "BUILD FAILED"; exit 1; }
for t in $DMUON_GPU_TESTS; do
  ./build-dev/tests/$t > $W/$t.txt 2>&1; say "$t exit $?"
  grep -E "passed|failed|FAILED|SKIP" $W/$t.txt | head -10 >> "$LOG"
done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw --format=csv,noheader -lms 20 > $W/clocks.csv 2>&1 &
SMI=$!
for ms in 0 20; do
  say "calibrate --collective-warm-ms $ms start"
  ./build-dev/harness/dmuon-bench calibrate --scenario "$CAL" --out $W/warm-$ms.yaml --commit "${DMUON_COMMIT:-unknown}" \
    --ns-grid none --collective-warm-ms $ms > $W/calibrate-warm-$ms.txt 2> $W/calibrate-warm-$ms.log
  say "calibrate --collective-warm-ms $ms exit $?"
  grep -E "executor issue|collective step" $W/calibrate-warm-$ms.log | tee -a "$LOG"
done
kill $SMI
for s in "$@"; do
  name=$(sed -n 's/^name: *//p' "$s" | head -1)
  say "step $name"
  ./build-dev/harness/dmuon-bench step --scenario "$s" --out-dir $W/steps --machine "$name" --timeout 300 \
    --warmup 2 --iterations 5 --tune-cache $W/tune.json > $W/step-$name.log 2>&1
  say "step $name exit $?"
done
rm -f $W/build.txt
tar czf $OUT/sweep-clocks.tgz -C /tmp sweep-clocks
ls -la $OUT
