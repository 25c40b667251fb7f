// `dmuon-bench refit-overhead`: re-derives a one-GPU calibration's local_collective_step_overhead_us
// from the phase its step launch probe measured (the "forward/backward phase" line `dmuon-bench
// calibrate` logs) with the current fit (core/cost/step_overhead.hpp local_step_overhead_seconds),
// for calibration files written before that fit. No GPU: the probe's Plan is planned again and
// priced with the file's own curves and executor_issue_us.
#pragma once

namespace dmuon::bench {

// argv[0] is "refit-overhead". Rewrites the file's local_collective_step_overhead_us line in
// place, keeping every other line (its comments too). Exit 0 on success, 2 on bad arguments or
// input (a file without executor_issue_us or that key, a non-positive phase), with one line on
// stderr naming the option, file or key.
int refit_overhead_command(int argc, char** argv);

}  // namespace dmuon::bench
