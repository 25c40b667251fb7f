#!/bin/bash
# Issue 15, stop 39: 2,048 to 16,384 GPUs of 16node.yaml, every strategy alone (--parallel 1),
# /usr/bin/time -v. before: the Release build of f964c36 (/tmp/pre, stop 38's last commit); after:
# the build of this stop's code (build). Before and after back to back at 2,048 to 8,192 GPUs;
# 16,384 GPUs after only (stop 38 and earlier ran the before builds there: 4.8 to 10.4 min).
# Run from the repository root.
OUT=reports/measured/sim-speed-2026-11-27-l07/big
source harness/tools/sim_big_run.sh
run() { big_run "$OUT" "$@"; }  # tag bin strategy nodes
for n in 256 512 1024; do
  for s in adamw ddp-redundant fsdp-gather zero1-a2a dedicated owner-striped; do
    run after build/harness/dmuon-sim $s $n
    run before /tmp/pre/build/harness/dmuon-sim $s $n
  done
done
for s in adamw ddp-redundant fsdp-gather zero1-a2a dedicated owner-striped; do
  run after build/harness/dmuon-sim $s 2048
done
echo "$(date -u +%H:%M:%S) done" >> $OUT/order.txt
