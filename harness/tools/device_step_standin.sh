#!/bin/bash
# One device call for issue 13 item 5, the compute stand-in of `dmuon-bench step`: build
# dmuon-bench and the stand-in's GPU test (a warm machine keeps build-dev), run the test, then
# `dmuon-bench step --compute-standin` on SCENARIO and the same without the stand-in (the two
# timed runs as before), and print a short table last. Run from the repository root on the GPU
# machine with $OUT set; needs .boost-po carried along.
#   device_step_standin.sh SCENARIO [MACHINE]     reports: $OUT/step-MACHINE{,-plain}.{md,json}
set -o pipefail
OUT=${OUT:?set OUT}
scenario=${1:?usage: device_step_standin.sh SCENARIO [MACHINE]}
machine=${2:-standin-1xh100}
export NCCL_NVLS_ENABLE=0
LOG=$OUT/run.log
say() { echo "== $(date -u +%FT%TZ) $*" | tee -a "$LOG"; }
say "commit $(git rev-parse --short HEAD 2>/dev/null), $(git status --short 2>/dev/null | wc -l) changed files"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
{ device_configure . && cmake --build build-dev -j16 --target dmuon-bench test_gpu_step_standin; } \
  > $OUT/build.txt 2>&1 || { tail -60 $OUT/build.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
say "test_gpu_step_standin"
timeout 120 ./build-dev/tests/test_gpu_step_standin > $OUT/test.txt 2>&1
echo "test_gpu_step_standin exit $?" | tee -a "$LOG"; tail -4 $OUT/test.txt >> "$LOG"
common=(--scenario "$scenario" --ns-impl standard --warmup 2 --iterations 10 --timeout 120 --out-dir $OUT)
say "dmuon-bench step --compute-standin"
timeout 150 ./build-dev/harness/dmuon-bench step "${common[@]}" --compute-standin --machine "$machine" > $OUT/bench.txt 2>&1
echo "exit $?" | tee -a "$LOG"; tail -5 $OUT/bench.txt >> "$LOG"
say "dmuon-bench step (no stand-in)"
timeout 90 ./build-dev/harness/dmuon-bench step "${common[@]}" --machine "$machine-plain" > $OUT/bench-plain.txt 2>&1
echo "exit $?" | tee -a "$LOG"; tail -5 $OUT/bench-plain.txt >> "$LOG"
tail -c 4000 "$LOG"
for f in $OUT/step-$machine.md $OUT/step-$machine-plain.md; do [ -f "$f" ] && sed -n '/^| strategy/,/^$/p' "$f"; done
