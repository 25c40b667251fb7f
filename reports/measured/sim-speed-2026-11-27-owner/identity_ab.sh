#!/bin/bash
# Issue 15, owner strategies (stop 37): the same cases run by two builds of dmuon-sim (BEFORE: the
# commit before the change; AFTER: the change), each case's --json and --csv (every collective's
# start and seconds) compared by harness/tools/sim_json_identical.py (1e-9 relative; command, date,
# host and *wall* skipped). The changes must not move a prediction, so every case must say 0 differ.
# The CSVs are deleted after comparison (MBs at 1,024 GPUs); the JSONs and verdicts stay.
# Run from the repository root: bash reports/measured/sim-speed-2026-11-27-owner/identity_ab.sh BEFORE_BUILD AFTER_BUILD OUTDIR [big]
BEFORE=${1:?usage: identity_ab.sh BEFORE_BUILD AFTER_BUILD OUTDIR [big]}/harness/dmuon-sim
AFTER=${2:?usage}/harness/dmuon-sim
OUT=${3:?usage}
mkdir -p "$OUT"
status=0
run() {  # name, then dmuon-sim arguments
  local name=$1; shift
  # dmuon-sim exits 1 when a strategy does not fit the GPU (the JSON says so); both builds must agree
  "$BEFORE" "$@" --json "$OUT/$name-before.json" --csv "$OUT/$name-before.csv" > "$OUT/$name-before.txt" 2>&1
  "$AFTER" "$@" --json "$OUT/$name-after.json" --csv "$OUT/$name-after.csv" > "$OUT/$name-after.txt" 2>&1
  [ -s "$OUT/$name-before.json" ] && [ -s "$OUT/$name-after.json" ] || { echo "$name: no JSON"; status=1; return; }
  local json csv
  json=$(/usr/bin/python3 harness/tools/sim_json_identical.py "$OUT/$name-before.json" "$OUT/$name-after.json") || status=1
  csv=$(/usr/bin/python3 harness/tools/sim_json_identical.py "$OUT/$name-before.csv" "$OUT/$name-after.csv") || status=1
  rm -f "$OUT/$name-before.csv" "$OUT/$name-after.csv"
  echo "$name: json $(tail -1 <<< "$json"); csv $(tail -1 <<< "$csv")"
}
run 16node --scenario scenarios/16node.yaml
run 16node-sweep --scenario scenarios/16node.yaml --sweep nodes=2,3,32
run 16node-flows --scenario scenarios/16node.yaml --mode flows --sweep nodes=2
run llama3-8b-16node-h100 --scenario scenarios/llama3-8b-16node-h100.yaml
run qwen3-30b-a3b-16node --scenario scenarios/qwen3-30b-a3b-16node.yaml
run 8xa800-llm --scenario scenarios/8xa800-llm.yaml
run llama3-8b-h200-calibrated --scenario scenarios/llama3-8b-2xh200.yaml --calibration scenarios/calibration/h200.yaml --sweep nodes=2,4
run llama3-8b-h100-calibrated --scenario scenarios/llama3-8b-16node-h100.yaml --calibration scenarios/calibration/h100-sxm-x2.yaml --sweep nodes=2,4
run 16node-per-rank --scenario scenarios/16node.yaml --per-rank
if [ "${4:-}" = big ]; then
  for s in adamw ddp-redundant fsdp-gather zero1-a2a dedicated owner-striped; do
    run "16node-1024gpus-$s" --scenario scenarios/16node.yaml --strategy "$s" --sweep nodes=128 --parallel 1
  done
fi
exit $status
