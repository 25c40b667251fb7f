#!/bin/bash
# One device call: the per-matrix NS time of given shapes against the batch of the call, to decide
# whether the executor's batched calls (PlanOptions::max_batch, 64) should be cut smaller.
#   device_batch_sweep.sh "SHAPES" "BATCHES" [PRESETS]
#   e.g. device_batch_sweep.sh "14336x4096,4096x14336,4096x4096" "1 4 8 16 32 64" dmuon,torch
# Each batch b runs `dmuon-bench kernels --shapes R1xC1:b,... --chosen-only` (the autotuner's
# winner only, at batch 1 and at batch b), one shared tune cache; reports to $OUT/sweep-b<b>.json
# and the lines to $OUT/sweep.log. Run from the repository root with $OUT set, .boost-po carried.
set -o pipefail
OUT=${OUT:?set OUT}
SHAPES=${1:?usage: device_batch_sweep.sh SHAPES BATCHES [PRESETS]}
BATCHES=${2:?usage: device_batch_sweep.sh SHAPES BATCHES [PRESETS]}
PRESETS=${3:-dmuon,torch}
LOG=$OUT/sweep.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
source "$(dirname "$0")/device_configure.sh"
device_build_bench "$LOG" || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >> "$LOG"
for b in $BATCHES; do
  list=$(tr ',' '\n' <<< "$SHAPES" | sed "s/\$/:$b/" | paste -sd,)
  say "batch $b: $list"
  ./build-dev/harness/dmuon-bench kernels --shapes "$list" --presets "$PRESETS" --chosen-only \
    --tune-cache "$OUT/tune.json" --report-json "$OUT/sweep-b$b.json" 2>&1 | grep -E " batch |error|Error" >> "$LOG"
done
say "done"
cat "$LOG"
