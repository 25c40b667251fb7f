#!/bin/bash
# One device call: build every target the GPU machine can build (no SimGrid there), then run the
# whole CTest suite (GPU tests run for real; CPU tests too) and dmuon-verify on both GPU backends.
# Run from the repository root on the GPU machine with $OUT set; writes $OUT/run.log,
# $OUT/ctest.txt, $OUT/verify-{cuda,nccl}.{json,txt}. Needs .boost-po
# (bash ../shared/tools/stage-boost-po.sh .boost-po) carried along. DMUON_CTEST_REGEX limits CTest
# to the matching tests (e.g. 'gpu|nccl' for the GPU ones) where the device time is short.
set -o pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared hosts (device KINDS.md)
OUT=${OUT:?set OUT}
LOG=$OUT/run.log
say() { echo "== $(date -u +%FT%TZ) $*" | tee -a "$LOG"; }
say "machine: $(git rev-parse --short HEAD 2>/dev/null) $(git status --short | wc -l) changed files"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
device_configure . > $OUT/build.txt 2>&1 &&
  cmake --build build-dev -j"$(nproc)" >> $OUT/build.txt 2>&1 || { tail -60 $OUT/build.txt >> "$LOG"; say "BUILD FAILED"; exit 1; }
say "ctest"
ctest --test-dir build-dev -j4 --timeout 300 --output-on-failure ${DMUON_CTEST_REGEX:+-R "$DMUON_CTEST_REGEX"} > $OUT/ctest.txt 2>&1
echo "ctest exit $?" >> "$LOG"
grep -E "tests passed|Failed|\*\*\*|Test +#" $OUT/ctest.txt | tail -60 >> "$LOG"
# A GPU test that could not run here exits 77 (CTest: "***Skipped"); each skipped case printed
# "SKIP <what>: <why>". Both are 0 on a machine with the GPUs the tests need.
echo "ctest skipped tests: $(grep -c '\*\*\*Skipped' $OUT/ctest.txt)" >> "$LOG"
grep -h "^SKIP" build-dev/Testing/Temporary/LastTest.log | sort | uniq -c >> "$LOG"
say "dmuon-verify --backend cuda"
./build-dev/harness/dmuon-verify --backend cuda --json $OUT/verify-cuda.json > $OUT/verify-cuda.txt 2>&1
echo "verify cuda exit $?" >> "$LOG"; tail -3 $OUT/verify-cuda.txt >> "$LOG"
say "dmuon-verify --backend nccl"
./build-dev/harness/dmuon-verify --backend nccl --json $OUT/verify-nccl.json > $OUT/verify-nccl.txt 2>&1
echo "verify nccl exit $?" >> "$LOG"; tail -3 $OUT/verify-nccl.txt >> "$LOG"
say "done"
tail -c 9000 "$LOG"
