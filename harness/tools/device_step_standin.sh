#!/bin/bash
# One device call for issue 13 item 5, the compute stand-in of `dmuon-bench step`: build
# dmuon-bench and the stand-in's GPU test (a warm machine keeps build-dev), then
# `dmuon-bench step --compute-standin` on SCENARIO, the GPU test, and the step without the
# stand-in (the two timed runs as before); a short table last. Run from the repository root on
# the GPU machine with $OUT set; needs .boost-po carried along. Six files come back: run.log
# (every program's output), step-MACHINE{,-plain}.{md,json} and traces.tgz.
#   device_step_standin.sh SCENARIO [MACHINE]
set -o pipefail
OUT=${OUT:?set OUT}
scenario=${1:?usage: device_step_standin.sh SCENARIO [MACHINE]}
machine=${2:-standin-1xh100}
export NCCL_NVLS_ENABLE=0
LOG=$OUT/run.log
work=/tmp/standin-out
mkdir -p $work
say() { echo "== $(date -u +%FT%TZ) $*" | tee -a "$LOG"; }
say "commit $(git rev-parse --short HEAD 2>/dev/null), $(git status --short 2>/dev/null | wc -l) changed files"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
{ device_configure . && cmake --build build-dev -j16 --target dmuon-bench test_gpu_step_standin; } \
  > $work/build.txt 2>&1 || { tail -60 $work/build.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
common=(--scenario "$scenario" --ns-impl standard --warmup 2 --iterations 10 --timeout 120 --out-dir $work)
say "dmuon-bench step --compute-standin"
timeout 150 ./build-dev/harness/dmuon-bench step "${common[@]}" --compute-standin --machine "$machine" >> "$LOG" 2>&1
say "exit $?"
say "test_gpu_step_standin"
timeout 120 ./build-dev/tests/test_gpu_step_standin >> "$LOG" 2>&1
say "exit $?"
say "dmuon-bench step (no stand-in)"
timeout 90 ./build-dev/harness/dmuon-bench step "${common[@]}" --machine "$machine-plain" >> "$LOG" 2>&1
say "exit $?"
cp $work/step-*.md $work/step-*.json $OUT/ 2>/dev/null
rm -f $OUT/step-*-trace.json
(cd $work && tar czf $OUT/traces.tgz step-*-trace.json 2>/dev/null)
for f in $OUT/step-$machine.md $OUT/step-$machine-plain.md; do [ -f "$f" ] && sed -n '/^| strategy/,/^$/p' "$f"; done
