#!/bin/bash
# Device calls of issue 12's leave-one-out validation: the measurements `dmuon-sim --validate`
# compares its predictions with. Run from the repository root on the GPU machine with $OUT set
# and .boost-po carried; builds build-dev first when it is not there (a warm machine keeps it).
#
#   device_validate.sh steps SCENARIO...    dmuon-bench step on each scenario (every strategy it
#                                           lists; STEP_ITERATIONS timed iterations, default 5,
#                                           after 2 warm-up), one shared NS tune cache; reports go to
#                                           $OUT/steps.tgz (step-<scenario name>.{json,md}
#                                           and -trace.json)
#   device_validate.sh fsdp2 NGPU MODE SCENARIO...
#                                           harness/tools/fsdp2_step.py on each scenario's model
#                                           and shape (MODE fsdp2 | compute-only), torchrun with
#                                           NGPU processes; JSONs go to $OUT/fsdp2-<mode>.tgz
# Each prints a one-line summary per run at the end of $OUT/run-<what>.log.
set -o pipefail
OUT=${OUT:?set OUT}
what=${1:?usage: device_validate.sh steps|fsdp2 ...}
shift
LOG=$OUT/run-$what.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

build() {
  [ -x build-dev/harness/dmuon-bench ] && return 0
  say "configure + build dmuon-bench"
  source "$(dirname "$0")/device_configure.sh"
  device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench >> /tmp/build.txt 2>&1 ||
    { tail -60 /tmp/build.txt >> "$LOG"; say "BUILD FAILED"; exit 1; }
}

# The scenario's `name:` (reports are named after it).
scenario_name() { sed -n 's/^name: *//p' "$1" | head -1; }

steps() {
  build
  mkdir -p /tmp/steps
  for s in "$@"; do
    local name; name=$(scenario_name "$s")
    say "step $name"
    ./build-dev/harness/dmuon-bench step --scenario "$s" --out-dir /tmp/steps --machine "$name" --timeout 300 \
      --warmup 2 --iterations "${STEP_ITERATIONS:-5}" --tune-cache /tmp/steps/tune.json > /tmp/steps/$name.log 2>&1
    echo "step $name exit $?" >> "$LOG"
    grep -E "optimizer step|error|Error" /tmp/steps/$name.log | tail -8 >> "$LOG"
  done
  tar czf $OUT/steps.tgz -C /tmp steps
}

fsdp2() {
  local ngpu=$1 mode=$2
  shift 2
  mkdir -p /tmp/fsdp2-$mode
  for s in "$@"; do
    local name; name=$(scenario_name "$s")
    say "fsdp2 $mode $name on $ngpu GPU(s)"
    # compute-only is one plain process (the tool refuses torchrun there)
    local launch="torchrun --standalone --nproc_per_node $ngpu"
    [ "$mode" = compute-only ] && launch=python3
    PYTHONUNBUFFERED=1 timeout 420 $launch harness/tools/fsdp2_step.py \
      --scenario "$s" --mode "$mode" --out /tmp/fsdp2-$mode/$name.json > /tmp/fsdp2-$mode/$name.log 2>&1
    echo "fsdp2 $mode $name exit $?" >> "$LOG"
    tail -4 /tmp/fsdp2-$mode/$name.log >> "$LOG"
  done
  tar czf $OUT/fsdp2-$mode.tgz -C /tmp fsdp2-$mode
}

say "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | tr '\n' ' ')"
case "$what" in
  steps) steps "$@" ;;
  fsdp2) fsdp2 "$@" ;;
  *) echo "device_validate.sh: unknown '$what' (steps | fsdp2)" >&2; exit 2 ;;
esac
say "done"
tail -c 6000 "$LOG"
