#!/bin/bash
set -o pipefail
LOG=$OUT/ncu2.log
if [ ! -x build-dev/harness/dmuon-bench ]; then
  source harness/tools/device_configure.sh
  device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench >> /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt; exit 1; }
fi
B=./build-dev/harness/dmuon-bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for spec in "4096x14336 dmuon" "4096x4096 dmuon"; do
  set -- $spec
  timeout 240 $NCU --launch-count 700 --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    $B kernels --shapes $1 --presets $2 --chosen-only --batch-elements 0 --tune-cache scratch/tune.json --repeats 1 --warmup 0 \
    > /tmp/ncu-$1-$2.csv 2>&1
  echo "ncu $1 $2 exit $?" >> $LOG
  grep -E '^"ID"|sym_gemm|nvjet|dmuon::' /tmp/ncu-$1-$2.csv | cut -d, -f1,5,9,15- > $OUT/ncu-$1-$2.csv
done
$B sym-gemm --shapes 4096x4096 --dtype fp16 --repeats 20 >> $LOG 2>&1
timeout 200 $NCU --clock-control none --cache-control none -k regex:sym_gemm_kernel -c 40 --set full \
  $B sym-gemm --shapes 4096x4096 --dtype fp16 --repeats 1 --warmup 3 > $OUT/ncu-full-4096.txt 2>&1
echo "ncu full exit $?" >> $LOG
cat $LOG
