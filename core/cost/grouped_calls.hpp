// One GPU: what each NCCL call past the first costs inside one op's group. The executor issues a
// multi-region all-reduce, broadcast or reduce as one NCCL call per region inside one
// ncclGroupStart/End (kernels/exec/collectives.cpp). On one rank each call is a launch of its own
// (or nothing, in place: broadcast), and its cost is not the curve's cheapest isolated call: an
// isolated call pays a whole group's entry and exit, an extra call in a group does not (H100,
// 2026-11-27 traces: 3.5-3.8 us a call past the first against an isolated call's 4.85 us).
// `dmuon-bench calibrate` times groups of 1..16 calls of one total size back to back
// (kernels/exec/grouped_call_probe.hpp) and stores the slope of group time against calls.
#pragma once
#include <utility>
#include <vector>

#include "core/plan/plan.hpp"

namespace dmuon {

// Calibration key local_grouped_calls: one entry a kind. points: (the group's total bytes, the
// seconds each call past the first adds), bytes strictly increasing, seconds >= 0.
struct LocalGroupedCalls {
  OpKind kind = OpKind::all_reduce;
  std::vector<std::pair<double, double>> points;
  bool operator==(const LocalGroupedCalls&) const = default;
};

// The kinds the executor issues as one NCCL call per region (core/cost/plan_cost.hpp nccl_calls).
bool issued_per_region(OpKind kind);

// Seconds one call past the first adds to a group of `group_bytes`: linear in log(bytes) between
// the two points around it, the nearest point's value outside the measured range (the host's
// enqueue does not scale with bytes, so the last rate is no guide beyond it). Throws
// dmuon::Error for an entry without points or bytes < 0 / NaN.
double extra_call_seconds_at(const LocalGroupedCalls& calls, double group_bytes);

// The least-squares slope of seconds against calls: (calls in a group, seconds the group took).
// Throws dmuon::Error with fewer than two distinct call counts.
double seconds_per_extra_call(const std::vector<std::pair<int, double>>& seconds_by_calls);

}  // namespace dmuon
