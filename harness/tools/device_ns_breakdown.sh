#!/bin/bash
# One device call (issue 16): where one Newton-Schulz call's GPU time goes, kernel by kernel, at
# batch 1 and at the executor's batch. For each "RxC:count" spec, `dmuon-bench kernels` first times
# the autotuner's winner (and fills a tune cache), then the same command with --no-retune (so the
# profiled launches are the timed calls, not the autotuner's candidates) runs under ncu (each
# launch's duration and SM clock, --clock-control none --cache-control none), and
# harness/tools/ncu_ns_breakdown.py sums each call's kernels by kind. ncu's per-launch times are not
# a back-to-back call's (ncu_ns_breakdown.py says how far). Run from the repository root on the GPU
# machine with $OUT set and .boost-po carried:
#   bash harness/tools/device_ns_breakdown.sh "14336x4096:64 4096x4096:64" [PRESET]
# Writes $OUT/breakdown.log and one $OUT/ncu-<R>x<C>-<count>-<PRESET>.csv a spec (the device tool
# returns at most 8 files: at most 7 specs). Reuses build-dev's dmuon-bench where it is there.
set -o pipefail
OUT=${OUT:?set OUT}
SPECS=${1:?usage: device_ns_breakdown.sh \"RxC:count ...\" [PRESET]}
PRESET=${2:-dmuon}
TOOLS=$(dirname "$0")
LOG=$OUT/breakdown.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
source "$TOOLS/device_configure.sh"
device_build_bench "$LOG" || exit 1
B=./build-dev/harness/dmuon-bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] && [ -x "$NCU" ] || { say "no ncu on this machine"; exit 1; }
TUNE=$(mktemp -d)/tune.json
# Small ceilings and elementwise runs: they are not what is profiled.
QUIET=(--gemm-size 1024 --elementwise-elements 1048576)
for spec in $SPECS; do
  say "$spec $PRESET: wall (10 repeats)"
  $B kernels --shapes "$spec" --presets "$PRESET" --chosen-only --tune-cache "$TUNE" --repeats 10 "${QUIET[@]}" 2>&1 |
    grep -E " batch [0-9]+:|kernels:" >> "$LOG"
  say "$spec $PRESET: ncu"
  csv=$OUT/ncu-${spec/:/-}-$PRESET.csv
  timeout 240 "$NCU" --clock-control none --cache-control none --launch-count 200 \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second --csv \
    $B kernels --shapes "$spec" --presets "$PRESET" --chosen-only --no-retune --tune-cache "$TUNE" --repeats 1 \
    --warmup 0 "${QUIET[@]}" > "$csv" 2>&1
  echo "ncu exit $?" >> "$LOG"
  python3 "$TOOLS/ncu_ns_breakdown.py" "$csv" --label "$spec $PRESET" >> "$LOG" 2>&1
done
say "done"
cat "$LOG"
