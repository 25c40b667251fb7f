#!/bin/bash
# big runs: before (/tmp/pre, 3c3f3e5) and after (build, 5980daf)
cd /work/main
OUT=reports/measured/sim-speed-2026-11-27-templates/big
source harness/tools/sim_big_run.sh
run() { big_run "$OUT" "$@"; }  # tag bin strategy nodes
for n in 256 512; do
  for s in dedicated owner-striped; do
    run before /tmp/pre/build/harness/dmuon-sim $s $n
    run after build/harness/dmuon-sim $s $n
  done
done
for s in dedicated owner-striped; do
  run after build/harness/dmuon-sim $s 1024
  run before /tmp/pre/build/harness/dmuon-sim $s 1024
done
echo "$(date -u +%H:%M:%S) done" >> $OUT/order.txt
