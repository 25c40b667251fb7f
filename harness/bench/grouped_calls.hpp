// The grouped-call probe's part of `dmuon-bench calibrate`: its options from calibrate's, its
// table on stdout, and the calibration key local_grouped_calls fitted from it
// (core/cost/grouped_calls.hpp, kernels/exec/grouped_call_probe.hpp).
#pragma once
#include <cstddef>
#include <vector>

#include "core/cost/grouped_calls.hpp"
#include "kernels/exec/grouped_call_probe.hpp"

namespace dmuon::bench {

// The probe's default group sizes up to `max_bytes` (calibrate's --max-collective-bytes; a
// smaller largest size than the probe's default smallest: that size alone), with the sweep's
// warmup, iterations, passes and timeout.
exec::GroupedCallOptions grouped_call_options(std::size_t max_bytes, int warmup, int iterations, int passes,
                                              double timeout_seconds);

// One entry a kind: each group size's least-squares slope of group time against calls. A slope
// below 0 (noise around a call that enqueues nothing) is recorded as 0; the table says so.
std::vector<LocalGroupedCalls> fit_grouped_calls(const std::vector<exec::GroupedCallPoint>& points);

// The probe's times and the fitted extra call per kind and size, one line each.
void print_grouped_calls(const std::vector<exec::GroupedCallPoint>& points);

}  // namespace dmuon::bench
