#!/bin/bash
# stop 46 (run as scratch/check.sh; kept here): the final tree's GPU tests and dmuon-verify --backend cuda on an H100, then the sustained SM clock
# and power of the 4096 x 14336 NS calls (torch preset against dmuon preset), each looped for ~3 s.
set -o pipefail
nvidia-smi -L | grep -q H100 || { echo "not an H100:"; nvidia-smi -L; exit 3; }
LOG=$OUT/run.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
say "machine $(git rev-parse --short HEAD 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv >> $LOG
source harness/tools/device_configure.sh
say "configure + build"
device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-verify dmuon-bench test_gpu_devices test_gpu_ns_engine test_gpu_elementwise test_gpu_sym_gemm >> /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt >> $LOG; say "BUILD FAILED"; cat $LOG; exit 1; }
say "GPU tests"
for t in test_gpu_devices test_gpu_ns_engine test_gpu_elementwise test_gpu_sym_gemm; do
  ./build-dev/tests/$t > $OUT/$t.txt 2>&1; echo "$t exit $?" >> $LOG; grep -E "passed|failed|FAILED" $OUT/$t.txt | tail -3 >> $LOG
done
say "dmuon-verify --backend cuda"
./build-dev/harness/dmuon-verify --backend cuda --golden tests/golden/torch --json $OUT/verify-cuda.json > /tmp/verify.txt 2>&1; echo "verify exit $?" >> $LOG
grep -E "FAIL|passed" /tmp/verify.txt | tail -5 >> $LOG
say "clock and power of the chosen calls"
cp reports/measured/whole-model-2026-11-27-2243/call2/tune.json /tmp/tune.json
Q=timestamp,clocks.sm,power.draw,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader > /dev/null 2>&1 || Q=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader >> $LOG 2>&1
COMMON="--chosen-only --no-retune --batch-elements 0 --tune-cache /tmp/tune.json --gemm-size 512 --elementwise-elements 1048576"
for spec in "4096x14336 torch" "4096x14336 dmuon" "4096x14336 torch" "4096x14336 dmuon"; do
  set -- $spec
  say "$1 $2 (500 repeats)"
  nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 20 > /tmp/smi.csv &
  SMI=$!
  ./build-dev/harness/dmuon-bench kernels --shapes $1 --presets $2 $COMMON --repeats 500 2>&1 | grep " batch " >> $LOG
  kill $SMI; sleep 0.2
  # busy samples only (power above 300 W): count, median clock, median power, reasons seen
  awk -F', ' '{gsub(/ MHz| W/,"",$2); gsub(/ W/,"",$3); if ($3+0 > 300) {print $2, $3, $4}}' /tmp/smi.csv | sort -n > /tmp/busy.txt
  n=$(wc -l < /tmp/busy.txt); echo "busy samples $n; clock MHz median $(awk '{print $1}' /tmp/busy.txt | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'); power W median $(awk '{print $2}' /tmp/busy.txt | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'); reasons $(awk '{print $3}' /tmp/busy.txt | sort | uniq -c | tr '\n' ' ')" >> $LOG
  cp /tmp/smi.csv $OUT/smi-$1-$2-$(date +%s).csv
done
say "done"
cd $OUT && tar czf check.tgz *.txt *.csv verify-cuda.json 2>/dev/null; rm -f *.csv test_gpu_*.txt
cat $LOG
