// What becomes of one rank's op list once built: host issue times (step_program.hpp's
// assign_issue_times) and runs of compute ops merged into one event. SimGrid-free.
#pragma once
#include <vector>

#include "sim/step_program.hpp"

namespace dmuon::sim {

// Consecutive compute-stream ops that nothing can start between, as one op (seconds, launches
// and dependencies summed); dependencies renumbered.
std::vector<SimOp> merge_compute_runs(std::vector<SimOp> ops, bool host_issue);

}  // namespace dmuon::sim
