#!/bin/bash
set -o pipefail
nvidia-smi -L | grep -q H100 || exit 3
date -u
cmake --build build-dev -j16 --target test_gpu_sym_gemm dmuon-bench > /tmp/b.txt 2>&1 || { tail -30 /tmp/b.txt; exit 1; }
date -u
timeout 60 ./build-dev/tests/test_gpu_sym_gemm 2>&1 | tail -2
for mode in off on; do
  DMUON_SYM_DIAG_PAIRS=$mode timeout 60 ./build-dev/harness/dmuon-bench sym-gemm --shapes 4096x14336,4096x4096,2048x11008 --dtype fp16 --repeats 30 > $OUT/ab5-$mode.txt 2>&1
  echo "ab $mode exit $?"; grep -E "^\| [0-9]" $OUT/ab5-$mode.txt | cut -d'|' -f2-7
done
date -u
