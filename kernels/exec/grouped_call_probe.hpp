// One GPU's grouped NCCL calls timed, for `dmuon-bench calibrate` (calibration key
// local_grouped_calls, core/cost/grouped_calls.hpp): groups of 1, 2, 4, 8 and 16 in-place calls
// of one kind between one ncclGroupStart/End, the group's total bytes split evenly over its calls,
// as the executor issues a multi-region all-reduce, broadcast or reduce on one rank
// (kernels/exec/collectives.cpp). No CUDA or NCCL header: harness/ calls it from a launch_ranks body.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "core/plan/plan.hpp"
#include "kernels/exec/launch.hpp"

namespace dmuon::exec {

struct GroupedCallOptions {
  std::vector<OpKind> kinds = {OpKind::all_reduce, OpKind::reduce, OpKind::broadcast};
  // Group totals, bytes; each split over the group's calls in whole 128-element (bf16) parts.
  std::vector<std::size_t> group_bytes = {std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{16} << 20,
                                          std::size_t{64} << 20, std::size_t{256} << 20};
  std::vector<int> calls = {1, 2, 4, 8, 16};
  int warmup = 3;
  int iterations = 20;  // groups per timed loop, back to back (the host's pace is the point)
  int passes = 3;       // timed loops per point; the median is kept
  double timeout_seconds = 300;
};

struct GroupedCallPoint {
  OpKind kind = OpKind::all_reduce;
  double group_bytes = 0;
  std::vector<std::pair<int, double>> seconds_by_calls;  // (calls in the group, seconds per group)
};

// Every rank times groups on a one-rank communicator of its own (split from the world), all at
// once; returns this rank's points, kind by kind, sizes ascending. Throws dmuon::Error naming the
// rank, kind, size and call count on an NCCL/CUDA failure or a timeout.
std::vector<GroupedCallPoint> probe_grouped_calls(RankHandle& rank, const GroupedCallOptions& options);

}  // namespace dmuon::exec
