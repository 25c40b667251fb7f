#!/bin/bash
# One identity case of issue 15 (sourced by the reports/measured/sim-speed-*/identity scripts):
# `identity_case NAME ARGS...` runs dmuon-sim ($SIM) with ARGS twice, with --per-rank (every rank's
# Plan and program built, every GPU simulated) and without (folded: replica 0's or the templates'
# lists, and in lockstep only their GPUs simulated), and compares the --json and the --csv outputs
# (every collective's start and seconds) with harness/tools/sim_json_identical.py (1e-9 relative;
# command, date, host, *wall* and simulated_gpus skipped). It writes under $OUT (the JSONs and
# outputs stay, the CSVs are deleted: MBs at 1,024 GPUs), prints one verdict line with the GPUs
# the folded run simulated, and sets status=1 on any difference or missing output.
identity_case() {
  local name=$1; shift
  # dmuon-sim exits 1 when a strategy does not fit the GPU (the JSON says so); both runs must agree
  "$SIM" "$@" --per-rank --json "$OUT/$name-per-rank.json" --csv "$OUT/$name-per-rank.csv" > "$OUT/$name-per-rank.txt" 2>&1
  "$SIM" "$@" --json "$OUT/$name-folded.json" --csv "$OUT/$name-folded.csv" > "$OUT/$name-folded.txt" 2>&1
  [ -s "$OUT/$name-per-rank.json" ] && [ -s "$OUT/$name-folded.json" ] || { echo "$name: no JSON"; status=1; return; }
  local json csv gpus
  json=$(/usr/bin/python3 harness/tools/sim_json_identical.py "$OUT/$name-per-rank.json" "$OUT/$name-folded.json") || status=1
  csv=$(/usr/bin/python3 harness/tools/sim_json_identical.py "$OUT/$name-per-rank.csv" "$OUT/$name-folded.csv") || status=1
  gpus=$(/usr/bin/python3 -c "import json, sys
print(' '.join(f\"{s['strategy']}:{s.get('simulated_gpus', '-')}\" for r in json.load(open(sys.argv[1]))['runs'] for s in r['strategies']))" "$OUT/$name-folded.json")
  rm -f "$OUT/$name-per-rank.csv" "$OUT/$name-folded.csv"
  echo "$name: json $(tail -1 <<< "$json"); csv $(tail -1 <<< "$csv"); simulated GPUs (folded run) $gpus"
}
