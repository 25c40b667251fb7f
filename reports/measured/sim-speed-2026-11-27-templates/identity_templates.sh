#!/bin/bash
# Issue 15, owner strategies folded onto templates (stop 38): each case run with --per-rank (every
# rank's Plan and program built, every GPU simulated) and without (the template replicas built and,
# in lockstep, simulated alone), the --json and --csv outputs (every collective's start and seconds)
# compared by harness/tools/sim_json_identical.py (1e-9 relative; command, date, host, *wall* and
# simulated_gpus skipped). Only configurations where at least a quarter of the replicas hold no
# owner's work fold, so the cases are the owner strategies on many nodes.
# The CSVs are deleted after comparison; the JSONs, the outputs and the verdicts stay.
# Run from the repository root: bash reports/measured/sim-speed-2026-11-27-templates/identity_templates.sh BUILD OUTDIR
SIM=${1:?usage: identity_templates.sh BUILD OUTDIR}/harness/dmuon-sim
OUT=${2:?usage: identity_templates.sh BUILD OUTDIR}
mkdir -p "$OUT"
status=0
source harness/tools/sim_identity_case.sh  # identity_case NAME ARGS...
run() { identity_case "$@"; }
for s in dedicated owner-striped; do
  # The H100 calibration (measured collective curves, the host issue model) at 2,048 GPUs.
  run "llama3-8b-h100-calibrated-2048gpus-$s" --scenario scenarios/llama3-8b-16node-h100.yaml \
    --calibration scenarios/calibration/h100-sxm-x2.yaml --strategy "$s" --sweep nodes=256 --parallel 1
  run "16node-1024gpus-$s" --scenario scenarios/16node.yaml --strategy "$s" --sweep nodes=128 --parallel 1
  run "16node-2048gpus-$s" --scenario scenarios/16node.yaml --strategy "$s" --sweep nodes=256 --parallel 1
  run "16node-4096gpus-$s" --scenario scenarios/16node.yaml --strategy "$s" --sweep nodes=512 --parallel 1
done
exit $status
