# Sourced by the device scripts (device_validate.sh, device_calibrate.sh): one report from the
# reports of one measurement run in several processes.
#   median_reports OUT RUN...   the one run copied to OUT, or the median over the runs
#                               (harness/tools/median_of_processes.py); its exit status
MEDIAN_REPORTS_TOOLS=$(dirname "${BASH_SOURCE[0]}")
median_reports() {
  local out=$1
  shift
  if [ $# -eq 1 ]; then
    cp "$1" "$out"
  else
    python3 "$MEDIAN_REPORTS_TOOLS/median_of_processes.py" "$out" "$@"
  fi
}
