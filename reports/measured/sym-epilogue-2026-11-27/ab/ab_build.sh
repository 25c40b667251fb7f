#!/bin/bash
# A/B of the epilogue change: build-old (HEAD's epilogue) and build-dev (the working tree's), tests, sym-gemm side by side
set -o pipefail
LOG=$OUT/ab.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
source harness/tools/device_configure.sh
E=kernels/cuda/sym_gemm_epilogue.cuh
if [ ! -x build-old/harness/dmuon-bench ]; then
  say "build old"
  cp scratch/sym_gemm_epilogue.old.cuh $E
  cmake -S . -B build-old -DCMAKE_BUILD_TYPE=Release -DDMUON_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DBOOST_ROOT="$PWD/.boost-po" -DBoost_NO_SYSTEM_PATHS=ON -DBoost_USE_STATIC_LIBS=ON > /tmp/b.txt 2>&1 &&
  cmake --build build-old -j16 --target dmuon-bench >> /tmp/b.txt 2>&1 || { tail -30 /tmp/b.txt >> $LOG; say "OLD BUILD FAILED"; }
  cp scratch/sym_gemm_epilogue.new.cuh $E
fi
say "build new"
device_configure . > /tmp/b.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench dmuon-verify test_gpu_sym_gemm test_gpu_ns_engine >> /tmp/b.txt 2>&1 || { tail -30 /tmp/b.txt >> $LOG; say "NEW BUILD FAILED"; exit 1; }
say "tests"
for t in test_gpu_sym_gemm test_gpu_ns_engine; do ./build-dev/tests/$t > /tmp/$t.txt 2>&1; echo "$t exit $?" >> $LOG; grep -E "passed|failed|FAILED" /tmp/$t.txt | tail -3 >> $LOG; done
say "verify"
./build-dev/harness/dmuon-verify --backend cuda --golden tests/golden/torch > /tmp/v.txt 2>&1; echo "verify exit $?" >> $LOG; grep -E "passed|FAIL" /tmp/v.txt | tail -3 >> $LOG
for r in 1 2; do for w in old dev; do
  say "sym-gemm $w round $r"
  ./build-$w/harness/dmuon-bench sym-gemm --shapes 4096x4096,4096x14336,2048x11008,2048x2048 --dtype fp16 --repeats 30 2>/dev/null | grep -E "^\| [0-9]" >> $LOG
done; done
say done
cat $LOG
