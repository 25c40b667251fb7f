#!/bin/bash
# Issue 15's identity check for the replica fold: each case run with --per-rank (every rank's step
# program built) and without (replica 0's built and moved), the two --json outputs compared by
# harness/tools/sim_json_identical.py (every leaf but command, date, host, *wall*; 1e-9 relative).
# Run from the repository root: bash reports/measured/sim-speed-2026-11-27-fold/identity.sh BUILD OUTDIR
SIM=${1:?usage: identity.sh BUILD OUTDIR}/harness/dmuon-sim
OUT=${2:?usage: identity.sh BUILD OUTDIR}
mkdir -p "$OUT"
status=0
run() {  # name, then dmuon-sim arguments
  local name=$1; shift
  # dmuon-sim exits 1 when a strategy does not fit the GPU (the JSON says so); both runs must agree
  "$SIM" "$@" --per-rank --json "$OUT/$name-per-rank.json" > "$OUT/$name-per-rank.txt" 2>&1
  "$SIM" "$@" --json "$OUT/$name-folded.json" > "$OUT/$name-folded.txt" 2>&1
  [ -s "$OUT/$name-per-rank.json" ] && [ -s "$OUT/$name-folded.json" ] || { echo "$name: no JSON"; status=1; return; }
  local verdict
  verdict=$(/usr/bin/python3 harness/tools/sim_json_identical.py "$OUT/$name-per-rank.json" "$OUT/$name-folded.json") || status=1
  echo "$name: $(tail -1 <<< "$verdict")"
}
run 16node --scenario scenarios/16node.yaml
run 16node-sweep --scenario scenarios/16node.yaml --sweep nodes=2,3,32
run 16node-flows --scenario scenarios/16node.yaml --mode flows --sweep nodes=2
run llama3-8b-16node-h100 --scenario scenarios/llama3-8b-16node-h100.yaml
run qwen3-30b-a3b-16node --scenario scenarios/qwen3-30b-a3b-16node.yaml
run 8xa800-llm --scenario scenarios/8xa800-llm.yaml
run llama3-8b-h200-calibrated --scenario scenarios/llama3-8b-2xh200.yaml --calibration scenarios/calibration/h200.yaml --sweep nodes=2,4
run llama3-8b-h100-calibrated --scenario scenarios/llama3-8b-16node-h100.yaml --calibration scenarios/calibration/h100-sxm-x2.yaml --sweep nodes=2,4
exit $status
