#!/usr/bin/env bash
# Runs one libFuzzer target over its kept corpus (tests/fuzz/corpus/TARGET) and the seeds (every
# file under scenarios/, tests/golden/ and tests/data/), writing new inputs to SCRATCH/TARGET.
#   run.sh TARGET EXE SECONDS SCRATCH          # CTest smoke run: replay all, then fuzz SECONDS
#   run.sh TARGET EXE runs=N SCRATCH [FLAGS]   # long run: N executions (reports/reliability.md)
# Exit status non-zero on a crash, leak, sanitizer report, uncaught exception, timeout (60 s per
# input) or more than 2 GiB resident; libFuzzer writes the input as SCRATCH/TARGET/crash-*. The
# largest seed (a 48-layer, 128-expert scenario) takes 0.15 s of CPU, but the 2 CI cores are
# shared: 10 s of wall time was once exceeded by starvation alone.
set -euo pipefail
target=$1 exe=$(realpath "$2") budget=$3 scratch=$(realpath -m "$4")
shift 4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$scratch/$target"
case "$budget" in
  runs=*) limit=(-runs="${budget#runs=}") ;;
  *) limit=(-max_total_time="$budget") ;;
esac
cd "$scratch/$target"  # crash-*, leak-*, timeout-* files land here
corpora=("$scratch/$target" "$root/scenarios" "$root/tests/golden" "$root/tests/data")
[ -d "$here/corpus/$target" ] && corpora+=("$here/corpus/$target")  # git keeps no empty folder
exec "$exe" "${limit[@]}" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 "$@" "${corpora[@]}"
