#include "sim/op_list.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace dmuon::sim {

// Merges runs of consecutive compute-stream ops into one op when nothing can start in between:
// an op joins the run when every dependency it has outside the run lies before the run's
// start in the list, and no collective listed since the run began waits on one of its members. The GPU runs such a run
// back to back anyway; the simulation then needs one event instead of hundreds (an AdamW or
// DDP optimizer phase is ~1000 elementwise kernels per GPU). With `host_issue` a run keeps its
// first op's issue time and the latest end its members' launches allow (SimOp::issued_end_s).
std::vector<SimOp> merge_compute_runs(std::vector<SimOp> ops, bool host_issue) {
  std::vector<int> new_index(ops.size(), -1);
  std::vector<SimOp> out;
  int run_start = -1;  // old index of the current run's first op
  int run_out = -1;    // its index in `out`
  int run_count = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    SimOp& op = ops[i];
    const bool compute = op.collective < 0;
    bool joins = compute && run_out >= 0 && op.phase == out[static_cast<std::size_t>(run_out)].phase &&
                 op.category == out[static_cast<std::size_t>(run_out)].category &&
                 op.issue_clock == out[static_cast<std::size_t>(run_out)].issue_clock &&
                 op.source == out[static_cast<std::size_t>(run_out)].source;  // keeps the shares by source
    if (joins) {
      for (int d : op.deps) joins = joins && (d < run_start || new_index[static_cast<std::size_t>(d)] == run_out);
    }
    std::vector<int> deps;
    for (int d : op.deps) deps.push_back(new_index[static_cast<std::size_t>(d)]);
    if (joins) {
      SimOp& run = out[static_cast<std::size_t>(run_out)];
      run.seconds += op.seconds;
      run.host_wait_s += op.host_wait_s;
      // Back to back after its first launch's issue, the run ends no earlier than any member's
      // issue plus the GPU time of that member and those after it.
      if (host_issue) run.issued_end_s = std::max(run.issued_end_s + op.seconds, op.issued_end_s);
      run.launches += op.launches;
      run.host_s += op.host_s;  // a step's host seconds stay whole (repeat_steps offsets by them)
      for (int d : deps) {
        if (d != run_out) run.deps.push_back(d);
      }
      ++run_count;
      run.label = run.label.substr(0, run.label.find(" (+")) + " (+" + std::to_string(run_count - 1) + ")";
      new_index[i] = run_out;
      continue;
    }
    // A collective that waits on a member of the run must not wait for the whole run.
    if (!compute && std::find(deps.begin(), deps.end(), run_out) != deps.end()) run_out = -1;
    op.deps = std::move(deps);
    new_index[i] = static_cast<int>(out.size());
    if (compute) {
      run_start = static_cast<int>(i), run_out = static_cast<int>(out.size()), run_count = 1;
    } else if (op.stream == kComputeStream) {
      run_out = -1;
    }
    out.push_back(std::move(op));
  }
  // A producer lies later in the list (an optimizer op): renumbered once every op has its index.
  for (auto& s : out) {
    if (s.producer >= 0) s.producer = new_index[static_cast<std::size_t>(s.producer)];
    std::sort(s.deps.begin(), s.deps.end());
    s.deps.erase(std::unique(s.deps.begin(), s.deps.end()), s.deps.end());
  }
  return out;
}

void assign_issue_times(std::vector<SimOp>& ops, double seconds_per_launch, bool optimizer_restarts) {
  if (!(seconds_per_launch >= 0)) throw Error("sim: executor issue cost must be >= 0 s a launch");
  long issued[2] = {0, 0};   // launches enqueued so far on each clock
  double extra[2] = {0, 0};  // and the ops' host_s so far
  for (SimOp& op : ops) {
    op.issue_clock = optimizer_restarts && op.phase == Phase::optimizer ? 1 : 0;
    if (op.issue_clock == 0 && (issued[1] > 0 || extra[1] > 0)) {
      throw Error("sim: rank op '" + op.label + "' of the forward/backward run follows optimizer ops (host issue model)");
    }
    if (!(op.host_s >= 0)) throw Error("sim: rank op '" + op.label + "': host seconds must be >= 0");
    long& n = issued[op.issue_clock];
    double& x = extra[op.issue_clock];
    x += op.host_s;
    op.issued_s = seconds_per_launch * double(n + (op.launches > 0 ? 1 : 0)) + x;
    n += op.launches;
    // A collective's GPU time is only known when it runs: its bound is its last launch's issue.
    op.issued_end_s = op.collective >= 0 ? seconds_per_launch * double(n) + x : op.issued_s + op.seconds;
  }
}

}  // namespace dmuon::sim
