#!/bin/bash
# One device call on 2 GPUs for sharded Newton-Schulz with split m x m products (issue 13 items 3
# and 4): build the targets it needs, run the GPU tests of sharded NS (the engine's split program
# on one GPU against the reference, the NCCL executor's cases on two), dmuon-verify --backend
# nccl, then time the probe scenarios (scenarios/sharded-ns/*.yaml) with dmuon-bench step for
# both presets and planner.split_ns_products never / cheaper. Run from the repository root with
# $OUT set and .boost-po carried. Writes $OUT/run.log, $OUT/ctest.txt, $OUT/verify-nccl.{json,txt}
# and (through device_validate.sh steps) $OUT/steps.tgz. GPUS=4 (kind nvidia-h200-x4) runs the
# probes on 4 GPUs (gpus_per_node 4, names ending -x4) and dmuon-verify --world 4, and skips
# CTest, whose GPU cases are written for 2 GPUs. PROBES (a glob, default every
# scenarios/sharded-ns/*-2xh200.yaml) picks the probe scenarios to time.
set -o pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared hosts (device KINDS.md)
OUT=${OUT:?set OUT}
GPUS=${GPUS:-2}
LOG=$OUT/run.log
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
say "tree $(git rev-parse --short HEAD 2>/dev/null), $(git status --short | wc -l) changed files"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
device_configure . > $OUT/build.txt 2>&1 &&
  cmake --build build-dev -j16 --target test_gpu_ns_sharded test_nccl_sharded_ns test_nccl_executor test_split_products \
    test_sharded_ns test_gpu_elementwise test_region_runs dmuon-bench dmuon-verify >> $OUT/build.txt 2>&1 || { tail -60 $OUT/build.txt >> "$LOG"; say "BUILD FAILED"; exit 1; }
if [ "$GPUS" = 2 ]; then
  say "ctest"
  ctest --test-dir build-dev -j2 --timeout 300 --output-on-failure \
    -R '^(test_gpu_ns_sharded|test_nccl_sharded_ns|test_nccl_executor|test_split_products|test_sharded_ns|test_gpu_elementwise|test_region_runs)$' > $OUT/ctest.txt 2>&1
  echo "ctest exit $?; skipped $(grep -c '\*\*\*Skipped' $OUT/ctest.txt)" >> "$LOG"
  grep -E "tests passed|Failed|Test +#" $OUT/ctest.txt | tail -20 >> "$LOG"
fi
say "dmuon-verify --backend nccl"
./build-dev/harness/dmuon-verify --backend nccl --world "$GPUS" --json $OUT/verify-nccl.json > $OUT/verify-nccl.txt 2>&1
echo "verify nccl exit $?" >> "$LOG"; tail -3 $OUT/verify-nccl.txt >> "$LOG"
# The probe scenarios, each for both presets and both split rules (variants written beside them,
# so their relative paths hold; the reports are named after each variant's `name:`).
variants=()
for s in ${PROBES:-scenarios/sharded-ns/*-2xh200.yaml}; do
  for preset in dmuon torch; do
    for split in never cheaper; do
      suffix=$preset-$split; [ "$GPUS" = 2 ] || suffix=$suffix-x$GPUS
      v=${s%.yaml}-$suffix.yaml
      sed -e "s/^  preset: .*/  preset: $preset/" -e "s/^  split_ns_products: .*/  split_ns_products: $split/" \
        -e "s/^  gpus_per_node: .*/  gpus_per_node: $GPUS/" -e "s/^name: \(.*\)/name: \1-$suffix/" "$s" > "$v"
      variants+=("$v")
    done
  done
done
bash "$(dirname "$0")/device_validate.sh" steps "${variants[@]}"
cat $OUT/run-steps.log >> "$LOG"
say "done"
tail -c 6000 "$LOG"
