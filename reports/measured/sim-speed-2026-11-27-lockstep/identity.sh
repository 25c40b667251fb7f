#!/bin/bash
# Issue 15's identity check for the replica lockstep (stop 36): each case run with --per-rank (every
# rank's program built, every GPU simulated) and without (replica 0 built and, where the replicas
# run in lockstep, simulated alone); the --json outputs and the --csv outputs (every collective's
# start and seconds) compared by harness/tools/sim_json_identical.py (1e-9 relative; the JSON's
# command, date, host, *wall* and simulated_gpus skipped). The CSVs are deleted after comparison
# (MBs at 1,024 GPUs); the JSONs and the verdicts stay.
# Run from the repository root: bash reports/measured/sim-speed-2026-11-27-lockstep/identity.sh BUILD OUTDIR [big]
SIM=${1:?usage: identity.sh BUILD OUTDIR [big]}/harness/dmuon-sim
OUT=${2:?usage: identity.sh BUILD OUTDIR [big]}
mkdir -p "$OUT"
status=0
# run NAME ARGS...: harness/tools/sim_identity_case.sh (this script's own loop until stop 38, moved there)
source harness/tools/sim_identity_case.sh
run() { identity_case "$@"; }
run 16node --scenario scenarios/16node.yaml
run 16node-sweep --scenario scenarios/16node.yaml --sweep nodes=2,3,32
run 16node-flows --scenario scenarios/16node.yaml --mode flows --sweep nodes=2
run llama3-8b-16node-h100 --scenario scenarios/llama3-8b-16node-h100.yaml
run qwen3-30b-a3b-16node --scenario scenarios/qwen3-30b-a3b-16node.yaml
run 8xa800-llm --scenario scenarios/8xa800-llm.yaml
run llama3-8b-h200-calibrated --scenario scenarios/llama3-8b-2xh200.yaml --calibration scenarios/calibration/h200.yaml --sweep nodes=2,4
run llama3-8b-h100-calibrated --scenario scenarios/llama3-8b-16node-h100.yaml --calibration scenarios/calibration/h100-sxm-x2.yaml --sweep nodes=2,4
if [ "${3:-}" = big ]; then
  for s in adamw ddp-redundant fsdp-gather zero1-a2a; do
    run "16node-1024gpus-$s" --scenario scenarios/16node.yaml --strategy "$s" --sweep nodes=128 --parallel 1
  done
fi
exit $status
