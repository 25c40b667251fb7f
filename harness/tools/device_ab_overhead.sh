#!/bin/bash
# Side-by-side cost of a kernel change on the GPU machine: builds dmuon-bench at BASE (a commit,
# in a git worktree) and at the working tree, then runs, alternating A B A B, the fused
# elementwise bandwidth runs of `dmuon-bench kernels` and `dmuon-bench step` of SCENARIO for
# STRATEGIES. Run from the repository root with $OUT set; writes $OUT/ab.log, $OUT/{base,new}-*.
# Needs .boost-po carried along; the working tree's build-dev is reused when present.
#   bash harness/tools/device_ab_overhead.sh BASE SCENARIO "adamw dedicated"
set -o pipefail
OUT=${OUT:?set OUT}
base=${1:?base commit}; scenario=${2:?scenario}; strategies=${3:-adamw}
LOG=$OUT/ab.log
say() { echo "== $(date -u +%FT%TZ) $*" | tee -a "$LOG"; }
source "$(dirname "$0")/device_configure.sh"
configure() { device_configure "$1" > /dev/null && cmake --build "$1/build-dev" -j16 --target dmuon-bench > /dev/null; }
say "build base $base and the working tree"
if [ "$(git -C /tmp/ab-base rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$base" 2>/dev/null)" ]; then
  rm -rf /tmp/ab-base && git worktree add -f /tmp/ab-base "$base" > /dev/null 2>&1 || { say "no worktree for $base"; exit 1; }
fi
configure /tmp/ab-base || { say "base build failed"; exit 1; }
configure "$PWD" || { say "working-tree build failed"; exit 1; }
scenario=$(realpath "$scenario")
strategy_args=""; for s in $strategies; do strategy_args="$strategy_args --strategy $s"; done
for round in 1 2; do
  for side in base new; do
    root=$PWD; [ $side = base ] && root=/tmp/ab-base
    exe=$root/build-dev/harness/dmuon-bench
    say "round $round $side: kernels (elementwise)"
    $exe kernels --shapes 256x256 --presets torch --chosen-only --batch-elements 0 --repeats 20 \
      --report-json $OUT/$side-kernels-$round.json > /dev/null 2>>"$LOG"
    python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['elementwise_GBps']; print('   elementwise GB/s', e)" \
      $OUT/$side-kernels-$round.json | tee -a "$LOG"
    say "round $round $side: step $scenario ($strategies)"
    (cd $root && $exe step --scenario $scenario $strategy_args --warmup 3 --iterations 20 --launcher threads \
      --out-dir $OUT --machine $side-$round 2>&1 | grep "optimizer step" | tee -a "$LOG")
  done
done
say "done"
