#!/bin/bash
# dmuon-sim wall time, CPU time and peak RSS per strategy and GPU count (reports/sim-speed.md).
#   harness/tools/sim_speed_bench.sh OUT.csv TAG DMUON_SIM RUNS NODES...
# Appends one row per run: gpus,strategy,tag,run,rc,wall_s,rss_kB,plan_s,sim_s,load1,cpu_s
# (scenarios/16node.yaml with --sweep nodes=N, each strategy alone: --parallel 1; wall, RSS and
# CPU from /usr/bin/time -v, which counts the forked planning/simulation child; plan_s and
# sim_s are dmuon-sim's own plan_wall_seconds and sim_wall_seconds; load1 the 1-minute load
# average after the run). Run from the repository root.
set -u
out=$1 tag=$2 bin=$3 runs=$4
shift 4
strategies=${STRATEGIES:-"adamw ddp-redundant fsdp-gather zero1-a2a dedicated owner-striped"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for nodes in "$@"; do
  for s in $strategies; do
    for k in $(seq 1 "$runs"); do
      /usr/bin/time -v "$bin" --scenario scenarios/16node.yaml --strategy "$s" --sweep "nodes=$nodes" --parallel 1 \
        --json "$tmp/run.json" > /dev/null 2> "$tmp/time.txt"
      rc=$?
      wall=$(awk '/Elapsed \(wall/ {n = split($NF, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$tmp/time.txt")
      rss=$(awk '/Maximum resident/ {print $NF}' "$tmp/time.txt")
      cpu=$(awk -F: '/User time|System time/ {s += $2} END {print s}' "$tmp/time.txt")
      times=$(/usr/bin/python3 -c "import json, sys
try:
    s = json.load(open(sys.argv[1]))['runs'][0]['strategies'][0]
    print(s['plan_wall_seconds'], s['sim_wall_seconds'], sep=',')
except Exception:
    print('', '', sep=',')" "$tmp/run.json")
      echo "$((nodes * 8)),$s,$tag,$k,$rc,$wall,$rss,$times,$(cut -d' ' -f1 /proc/loadavg),$cpu" >> "$out"
      rm -f "$tmp/run.json"
    done
  done
done
