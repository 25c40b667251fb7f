#!/bin/bash
# stop 45: per-kernel durations and SM clock of the chosen NS calls (tune cache of the 22:54 run), with the
# wall time and nvidia-smi's clock samples of the same call timed without the profiler.
set -o pipefail
nvidia-smi -L | grep -q H100 || { echo "not an H100:"; nvidia-smi -L; exit 3; }
R=$OUT; mkdir -p $R/ncu; LOG=$R/ncu/ncu.log
source harness/tools/device_configure.sh
device_build_bench $LOG || exit 1
B=./build-dev/harness/dmuon-bench
T=reports/measured/whole-model-2026-11-27-2243/call2/tune.json
NCU=/usr/local/cuda/bin/ncu
COMMON="--chosen-only --no-retune --batch-elements 0 --tune-cache /tmp/tune.json --gemm-size 512 --elementwise-elements 1048576"
cp $T /tmp/tune.json
for spec in "4096x14336 torch" "4096x14336 dmuon" "4096x4096 dmuon" "14336x4096 dmuon" "14336x4096 torch"; do
  set -- $spec
  echo "== $(date -u +%T) $1 $2 wall (20 repeats)" >> $LOG
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 50 > $R/ncu/smi-$1-$2.csv &
  SMI=$!
  $B kernels --shapes $1 --presets $2 $COMMON --repeats 20 2>&1 | grep " batch " >> $LOG
  kill $SMI
  timeout 120 $NCU --launch-count 120 --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second --csv \
    $B kernels --shapes $1 --presets $2 $COMMON --repeats 1 --warmup 0 > $R/ncu/ncu-$1-$2.csv 2>&1
  echo "ncu exit $?" >> $LOG
done
cat $LOG
cd $R && tar czf ncu.tgz ncu && rm -rf ncu
