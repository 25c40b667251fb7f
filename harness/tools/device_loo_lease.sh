#!/bin/bash
# One device call of issue 12's leave-one-out on ONE lease: calibrate on the calibration scenario,
# then `dmuon-bench step` on each step scenario in the same call. The host's pace (executor issue,
# eager floor) and the one-rank collective curves move between leases by up to 2x
# (reports/sim-validation.md section 0), so a calibration is compared with steps of its own lease.
# Run from the repository root on the GPU machine with $OUT set and .boost-po carried:
#   DMUON_COMMIT=<commit> EXPECT_GPU=H100 bash harness/tools/device_loo_lease.sh NAME CAL-SCENARIO STEP-SCENARIO...
# EXPECT_GPU (a substring of nvidia-smi's GPU name) stops the call before it builds anything when
# another GPU came. FLOOR_PROCESSES (device_calibrate.sh, default 3) and PROCESSES
# (device_validate.sh, default 1; the 2026-11-27 leases used 3) pass through; with both at 3 the
# call can pass the device's 10 minutes: then run device_calibrate.sh and device_validate.sh steps
# as two calls on the warm machine, as reports/sim-validation.md section 0 (stop 40) did. Everything comes back as $OUT/NAME.yaml, $OUT/NAME-ns-tune.json and
# $OUT/lease.tgz (calibrate/ with the calibration's logs, steps/ with the step reports): the device
# tool returns at most 8 files.
set -o pipefail
OUT=${OUT:?set OUT}
NAME=${1:?usage: device_loo_lease.sh NAME CAL-SCENARIO STEP-SCENARIO...}
CAL=${2:?usage: device_loo_lease.sh NAME CAL-SCENARIO STEP-SCENARIO...}
shift 2
GPUS=$(nvidia-smi -L)
echo "$GPUS"
if [ -n "$EXPECT_GPU" ] && ! grep -q "$EXPECT_GPU" <<< "$GPUS"; then
  echo "device_loo_lease.sh: expected $EXPECT_GPU GPUs; stopping before measuring"
  exit 3
fi
TOOLS=$(dirname "$0")
bash "$TOOLS/device_calibrate.sh" "$CAL" "$NAME" > /dev/null
cp "$OUT/tune.json" "$OUT/$NAME-ns-tune.json"
grep -E "^== |calibrate exit|executor issue|collective step|host floor eager|FAIL" "$OUT/run.log" | tail -10
[ $# -gt 0 ] && bash "$TOOLS/device_validate.sh" steps "$@" > /dev/null
grep -E "optimizer step|^== |exit [^0]" "$OUT/run-steps.log" 2>/dev/null
mkdir -p /tmp/lease/calibrate
mv "$OUT"/run.log "$OUT"/calibrate.txt "$OUT"/layers.json /tmp/lease/calibrate/ 2>/dev/null
mv "$OUT"/floor-*.json "$OUT"/test_*.txt /tmp/lease/calibrate/ 2>/dev/null
[ -f "$OUT/run-steps.log" ] && mv "$OUT/run-steps.log" /tmp/lease/calibrate/
[ -f "$OUT/steps.tgz" ] && tar xzf "$OUT/steps.tgz" -C /tmp/lease && rm "$OUT/steps.tgz"
rm -f "$OUT/tune.json"
tar czf "$OUT/lease.tgz" -C /tmp/lease .
ls "$OUT"
