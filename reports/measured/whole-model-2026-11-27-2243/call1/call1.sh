#!/bin/bash
# stop 45 call 1 (H100): the kernels run (build, GPU tests incl. sym_gemm, verify, torch, dmuon-bench kernels)
# with diagonal pairs + tall symmetric_sm90, then per-kernel ncu durations of chosen NS calls.
set -o pipefail
nvidia-smi -L | grep -q H100 || { echo "not an H100:"; nvidia-smi -L; exit 3; }
R=$OUT; mkdir -p $R/k $R/ncu
echo "start $(date -u +%FT%TZ) tree $(git rev-parse --short HEAD) + uncommitted"; git status --short | head
OUT=$R/k bash harness/tools/device_kernels_run.sh > $R/k/stdout.txt 2>&1; echo "kernels run exit $?"
grep -E "exit|passed|failed|FAIL|whole model|speedup" $R/k/run.log | head -40
B=./build-dev/harness/dmuon-bench
NCU=/usr/local/cuda/bin/ncu
LOG=$R/ncu/ncu.log
for spec in "4096x14336 torch" "14336x4096 torch" "4096x14336 dmuon" "4096x4096 dmuon" "4096x4096 torch"; do
  set -- $spec
  echo "== $(date -u +%T) $1 $2 wall" >> $LOG
  $B kernels --shapes $1 --presets $2 --chosen-only --batch-elements 0 --tune-cache $R/k/tune.json --repeats 20 \
    --gemm-size 512 --elementwise-elements 1048576 2>&1 | grep " batch " >> $LOG
  timeout 150 $NCU --launch-count 200 --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    $B kernels --shapes $1 --presets $2 --chosen-only --batch-elements 0 --tune-cache $R/k/tune.json --repeats 1 --warmup 0 \
    --gemm-size 512 --elementwise-elements 1048576 > $R/ncu/ncu-$1-$2.csv 2>&1
  echo "ncu exit $?" >> $LOG
done
cat $LOG
echo "end $(date -u +%FT%TZ)"
cd $R && tar czf results.tgz k ncu && rm -rf ncu && mv k/run.log run.log && rm -rf k
