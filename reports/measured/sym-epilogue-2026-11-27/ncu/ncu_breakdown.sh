#!/bin/bash
# per-kernel durations of one NS call (application clocks, warm caches) against its wall time
set -o pipefail
LOG=$OUT/ncu.log
if [ ! -x build-dev/harness/dmuon-bench ]; then
  source harness/tools/device_configure.sh
  device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench >> /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt; exit 1; }
fi
B=./build-dev/harness/dmuon-bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1); echo "ncu: $NCU" >> $LOG
for spec in "4096x14336 dmuon" "14336x4096 dmuon" "4096x4096 dmuon" "4096x14336 torch"; do
  set -- $spec
  echo "== $1 $2 wall" >> $LOG
  $B kernels --shapes $1 --presets $2 --chosen-only --batch-elements 0 --tune-cache scratch/tune.json --repeats 20 2>&1 | grep " batch " >> $LOG
  timeout 200 $NCU --launch-count 150 --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    $B kernels --shapes $1 --presets $2 --chosen-only --batch-elements 0 --tune-cache scratch/tune.json --repeats 1 --warmup 0 \
    > $OUT/ncu-$1-$2.csv 2>&1
  echo "ncu exit $?" >> $LOG
done
cat $LOG
