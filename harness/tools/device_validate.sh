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
# PROCESSES (default 1) runs every measurement that many times, each a process of its own, in
# rounds (every scenario once, then again), and the report is the median over the processes
# (harness/tools/median_of_processes.py); each process's own report is kept under p<round>/.
# The host's pace differs from process to process by more than one process's iterations spread
# (reports/sim-validation.md, section 0, stop 40).
# Each prints a one-line summary per run at the end of $OUT/run-<what>.log.
set -o pipefail
OUT=${OUT:?set OUT}
what=${1:?usage: device_validate.sh steps|fsdp2 ...}
PROCESSES=${PROCESSES:-1}
[[ "$PROCESSES" =~ ^[1-9][0-9]*$ ]] || { echo "device_validate.sh: PROCESSES must be a positive integer, got '$PROCESSES'" >&2; exit 2; }
shift
LOG=$OUT/run-$what.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
source "$(dirname "$0")/median_reports.sh"

source "$(dirname "$0")/device_configure.sh"
build() { device_build_bench "$LOG" || exit 1; }

# The scenario's `name:` (reports are named after it).
scenario_name() { sed -n 's/^name: *//p' "$1" | head -1; }

# One report from the rounds' reports of one measurement: the median over processes, or the one.
# median_file DIR FILE: DIR/p1/FILE ... DIR/p$PROCESSES/FILE -> DIR/FILE.
median_file() {
  local dir=$1 file=$2 runs=()
  for ((p = 1; p <= PROCESSES; ++p)); do [ -f "$dir/p$p/$file" ] && runs+=("$dir/p$p/$file"); done
  if [ ${#runs[@]} -gt 0 ]; then
    median_reports "$dir/$file" "${runs[@]}" >> "$LOG" 2>&1 || echo "median of $file failed" >> "$LOG"
  fi
  echo "$file: ${#runs[@]} of $PROCESSES processes" >> "$LOG"
}

steps() {
  build
  mkdir -p /tmp/steps
  for ((p = 1; p <= PROCESSES; ++p)); do
    for s in "$@"; do
      local name; name=$(scenario_name "$s")
      say "step $name (process $p of $PROCESSES)"
      mkdir -p /tmp/steps/p$p
      ./build-dev/harness/dmuon-bench step --scenario "$s" --out-dir /tmp/steps/p$p --machine "$name" --timeout 300 \
        --warmup 2 --iterations "${STEP_ITERATIONS:-5}" --tune-cache /tmp/steps/tune.json > /tmp/steps/p$p/$name.log 2>&1
      echo "step $name exit $?" >> "$LOG"
      grep -E "optimizer step|error|Error" /tmp/steps/p$p/$name.log | tail -8 >> "$LOG"
    done
  done
  for s in "$@"; do
    local name; name=$(scenario_name "$s")
    median_file /tmp/steps "step-$name.json"
    # the first process's table and trace stand beside the median report
    for f in "step-$name.md" "step-$name-trace.json"; do [ -f /tmp/steps/p1/$f ] && cp /tmp/steps/p1/$f /tmp/steps/; done
  done
  tar czf $OUT/steps.tgz -C /tmp steps
}

fsdp2() {
  local ngpu=$1 mode=$2
  shift 2
  mkdir -p /tmp/fsdp2-$mode
  for ((p = 1; p <= PROCESSES; ++p)); do
    mkdir -p /tmp/fsdp2-$mode/p$p
    for s in "$@"; do
      local name; name=$(scenario_name "$s")
      say "fsdp2 $mode $name on $ngpu GPU(s) (process $p of $PROCESSES)"
      # compute-only is one plain process (the tool refuses torchrun there)
      local launch="torchrun --standalone --nproc_per_node $ngpu"
      [ "$mode" = compute-only ] && launch=python3
      PYTHONUNBUFFERED=1 timeout 420 $launch harness/tools/fsdp2_step.py \
        --scenario "$s" --mode "$mode" --out /tmp/fsdp2-$mode/p$p/$name.json > /tmp/fsdp2-$mode/p$p/$name.log 2>&1
      echo "fsdp2 $mode $name exit $?" >> "$LOG"
      tail -4 /tmp/fsdp2-$mode/p$p/$name.log >> "$LOG"
    done
  done
  for s in "$@"; do median_file /tmp/fsdp2-$mode "$(scenario_name "$s").json"; done
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
