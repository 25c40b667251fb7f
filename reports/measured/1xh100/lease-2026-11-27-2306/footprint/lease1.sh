#!/bin/bash
# stop 45 call 1 (1 x H100): build + calibrate tests, then the footprint experiment.
set -o pipefail
nvidia-smi -L | grep -q H100 || { echo "not an H100:"; nvidia-smi -L; exit 3; }
export NCCL_NVLS_ENABLE=0
date -u
DMUON_COMMIT=cd2ab04 DMUON_CALIBRATE_STAGE=tests bash harness/tools/device_calibrate.sh scenarios/validation/qwen2.5-3b-dmuon-1xh100.yaml h100-sxm > /dev/null
tail -12 $OUT/run.log
S=scenarios/validation
mkdir -p /tmp/fp
for round in 1 2; do
  for spec in "qwen2-0.5b 0" "qwen2-0.5b 16" "qwen2-0.5b 48" "qwen2.5-3b 0" "qwen2.5-3b 16"; do
    set -- $spec
    ./build-dev/harness/dmuon-bench step --scenario $S/$1-torch-1xh100.yaml --strategy adamw --reserve-GiB $2 \
      --warmup 2 --iterations 5 --timeout 120 --out-dir /tmp/fp/r$round-$1-$2 --machine fp > /tmp/fp/log-r$round-$1-$2.txt 2>&1
    echo "$(date -u +%T) round $round $1 reserve $2 GiB: exit $? $(grep 'fwd+bwd comm' /tmp/fp/log-r$round-$1-$2.txt | tail -1)"
  done
done
nvidia-smi --query-gpu=memory.used,memory.total --format=csv
tar czf $OUT/fp.tgz -C /tmp/fp .
date -u
