#!/bin/bash
# Stop 44 call 1 (1 x H100): build + calibrate tests (new 2^30 grid code), then ncu of X X^T 4096x14336 fp16:
# the sm_90a triangle kernel and cuBLAS's full GEMM, one launch each, --set full.
set -o pipefail
nvidia-smi -L | grep -q H100 || { nvidia-smi -L; echo "not an H100: stopping"; exit 3; }
date -u
DMUON_COMMIT=$(cat scratch/commit) DMUON_CALIBRATE_STAGE=tests bash harness/tools/device_calibrate.sh \
  scenarios/validation/qwen2.5-3b-dmuon-1xh100.yaml h100-sxm > /dev/null
tail -20 $OUT/run.log
date -u
B=./build-dev/harness/dmuon-bench
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu | head -1)
mkdir -p /tmp/ncu
$B sym-gemm --shapes 4096x14336 --dtype fp16 --repeats 20 > /tmp/ncu/wall.txt 2>&1
timeout 240 $NCU --clock-control none --cache-control none -k regex:'sym_gemm_kernel|nvjet|gemm' --launch-skip 6 -c 6 --set full \
  $B sym-gemm --shapes 4096x14336 --dtype fp16 --repeats 2 --warmup 3 > /tmp/ncu/ncu-full-4096x14336.txt 2>&1
echo "ncu exit $?"
grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|L2 Hit Rate  |No Eligible" /tmp/ncu/ncu-full-4096x14336.txt | head -60
cat /tmp/ncu/wall.txt | tail -15
tar czf $OUT/call1.tgz -C /tmp/ncu . -C $OUT run.log $(cd $OUT && ls test_*.txt)
date -u
