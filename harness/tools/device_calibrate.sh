#!/bin/bash
# One device call for issue 12: build dmuon-bench, run the calibrate tests, time the scenario's
# forward/backward layers on PyTorch (harness/tools/measure_layers.py) and run
# `dmuon-bench calibrate` with them. Run from the repository root on the GPU machine with $OUT set:
#   DMUON_COMMIT=<commit> bash harness/tools/device_calibrate.sh SCENARIO NAME
# writes $OUT/NAME.yaml (the calibration; commit it as scenarios/calibration/NAME.yaml),
# $OUT/layers.json, $OUT/calibrate.txt (the nccl-tests tables and the summary), $OUT/run.log. FSDP2's
# host floor is measure_layers.py's one-rank floor on every machine (harness/tools/one_rank_floor.py
# says why). WORLD_FLOOR_RUNS=1 on several GPUs also times FSDP2 on all of them at 32 tokens (the
# calibration model at its depth and half of it, each the median of FLOOR_PROCESSES runs:
# $OUT/floor-{full,half}.json, their own reports floor-{full,half}-p<N>.json; ~190 s on 2 x H100 with
# three processes), for host_floor_statistics.py's comparison; the calibration does not use them.
# The GPU machine's copy of the tree has no .git: pass the commit in DMUON_COMMIT (else
# "unknown"). DMUON_CALIBRATE_ARGS adds options (e.g. "--ns-grid small", or
# "--ns-grid-batch-elements 268435456": the grid's bound before 2026-11-27; the 2^30 default's 21
# more batched points a family are estimated at 2-3.5 minutes, not yet timed: with them, build first
# with DMUON_CALIBRATE_STAGE=tests, then calibrate on the warm machine). DMUON_CALIBRATE_STAGE:
# calibrate (default: build, layers, calibrate), tests (build, then the calibrate CLI and GPU
# tests only; about a minute) or all (both; can pass the 10-minute device limit with a cold
# build). Needs .boost-po (bash ../shared/tools/stage-boost-po.sh .boost-po) carried along.
set -o pipefail
OUT=${OUT:?set OUT}
SCENARIO=${1:?usage: device_calibrate.sh SCENARIO NAME (e.g. scenarios/qwen2-0.5b-1xh100.yaml h100-sxm)}
NAME=${2:?usage: device_calibrate.sh SCENARIO NAME}
STAGE=${DMUON_CALIBRATE_STAGE:-calibrate}
COMMIT=${DMUON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared hosts (device KINDS.md)
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
say "machine: commit $COMMIT, scenario $SCENARIO"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG" 2>&1
say "configure + build"
source "$(dirname "$0")/device_configure.sh"
source "$(dirname "$0")/median_reports.sh"
device_configure . > $OUT/build.txt 2>&1 &&
  cmake --build build-dev -j16 --target dmuon-bench test_bench_calibrate_cli test_gpu_calibrate >> $OUT/build.txt 2>&1 ||
  { tail -60 $OUT/build.txt >> "$LOG"; say "BUILD FAILED"; tail -c 6000 "$LOG"; exit 1; }
rm -f $OUT/build.txt
if [ "$STAGE" = tests ] || [ "$STAGE" = all ]; then
  say "calibrate tests"
  for t in test_bench_calibrate_cli test_gpu_calibrate; do
    ./build-dev/tests/$t > $OUT/$t.txt 2>&1; echo "$t exit $?" >> "$LOG"
    grep -E "passed|failed|FAILED|SKIP" $OUT/$t.txt | head -20 >> "$LOG"
  done
fi
if [ "$STAGE" = tests ]; then say "done (tests only)"; tail -c 5000 "$LOG"; exit 0; fi
LAYERS=()
if [ -f harness/tools/measure_layers.py ]; then
  say "forward/backward layers (measure_layers.py)"
  # Bounded: the layers must leave the calibration most of the device call's 10 minutes. The host
  # floor is the median of FLOOR_PROCESSES processes (default 3): the host's pace differs from
  # process to process (reports/sim-validation.md, section 0, stop 40).
  if PYTHONUNBUFFERED=1 timeout 300 python3 harness/tools/measure_layers.py --scenario "$SCENARIO" \
      --host-floor --host-floor-processes "${FLOOR_PROCESSES:-3}" --out $OUT/layers.json >> "$LOG" 2>&1; then
    LAYERS=(--layers-json $OUT/layers.json)
  else
    say "measure_layers.py FAILED (exit $?): calibrating without forward_backward"
  fi
else
  say "harness/tools/measure_layers.py absent: calibrating without forward_backward"
fi
# WORLD_FLOOR_RUNS=1, several GPUs: FSDP2's floor runs on all of them (the full depth and half of it,
# 32 tokens), kept beside the calibration for harness/tools/host_floor_statistics.py, not merged:
# until 2026-11-27 they replaced the one-rank floor, which predicts the FSDP2 steps better.
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${WORLD_FLOOR_RUNS:-0}" = 1 ] && [ "$NGPU" -ge 2 ]; then
  say "FSDP2 floor runs on $NGPU GPUs (fsdp2_step.py --num-layers; not used by the calibration)"
  floor_run() {  # DEPTH-ARGS... OUT
    local out=${@: -1}
    PYTHONUNBUFFERED=1 timeout 150 torchrun --standalone --nproc_per_node "$NGPU" harness/tools/fsdp2_step.py \
      --scenario "$SCENARIO" --seq-len 32 --micro-batch 1 --mode fsdp2 "${@:1:$#-1}" --out "$out" >> "$LOG" 2>&1
  }
  # Each depth in FLOOR_PROCESSES processes, in rounds (full, half, full, half, ...), the median
  # of each depth's runs (median_of_processes.py): one run a depth read 147 and 334 ms on one lease
  # and 128-165 ms for the same 18 layers in two processes of another (reports/sim-validation.md).
  floor_depth() {  # NAME DEPTH-ARGS...: floor-NAME-p1..pN.json -> floor-NAME.json
    local name=$1 runs=()
    shift
    for ((p = 1; p <= ${FLOOR_PROCESSES:-3}; ++p)); do runs+=($OUT/floor-$name-p$p.json); done
    median_reports $OUT/floor-$name.json "${runs[@]}" >> "$LOG" 2>&1
  }
  floor_rounds() {
    for ((p = 1; p <= ${FLOOR_PROCESSES:-3}; ++p)); do
      floor_run $OUT/floor-full-p$p.json || return 1
      HALF=$(python3 -c "import json; print(max(1, json.load(open('$OUT/floor-full-p1.json'))['num_layers'] // 2))") &&
        floor_run --num-layers "$HALF" $OUT/floor-half-p$p.json || return 1
    done
    floor_depth full && floor_depth half
  }
  if floor_rounds && python3 harness/tools/world_host_floor.py $OUT/floor-half.json $OUT/floor-full.json >> "$LOG" 2>&1; then
    say "FSDP2 floor runs on $NGPU GPUs done (floor-{half,full}.json)"
  else
    say "FSDP2 floor runs on $NGPU GPUs FAILED (exit $?)"
  fi
fi
say "dmuon-bench calibrate"
./build-dev/harness/dmuon-bench calibrate --scenario "$SCENARIO" --out $OUT/$NAME.yaml --commit "$COMMIT" \
  --tune-cache $OUT/tune.json "${LAYERS[@]}" $DMUON_CALIBRATE_ARGS > $OUT/calibrate.txt 2>> "$LOG"
echo "calibrate exit $?" >> "$LOG"
say "done"
tail -c 5000 "$LOG"
echo "---- summary ($OUT/calibrate.txt) ----"
sed -n '/^calibration /,$p' $OUT/calibrate.txt
