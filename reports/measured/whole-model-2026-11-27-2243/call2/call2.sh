#!/bin/bash
# stop 45 call 2 (H200): the kernels run on the committed tree.
set -o pipefail
nvidia-smi -L | grep -q H200 || { echo "not an H200:"; nvidia-smi -L; exit 3; }
R=$OUT; mkdir -p $R/k
echo "start $(date -u +%FT%TZ)"; nvidia-smi -L
OUT=$R/k bash harness/tools/device_kernels_run.sh > $R/k/stdout.txt 2>&1; echo "kernels run exit $?"
grep -E "exit|passed|failed|FAIL|whole model|speedup" $R/k/run.log | head -40
echo "end $(date -u +%FT%TZ)"
cd $R && tar czf results.tgz k && mv k/run.log run.log && rm -rf k
