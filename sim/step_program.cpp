#include "sim/step_program.hpp"

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "core/cost/forward_backward_cost.hpp"
#include "core/cost/plan_cost.hpp"
#include "sim/op_list.hpp"
#include "sim/rank_builder.hpp"
#include "sim/replica_fold.hpp"

namespace dmuon::sim {
namespace {

// "measured 62%, interpolated 30%, roofline 8%" (of the seconds, all GPUs together).
std::string describe_shares(const std::map<std::string_view, double>& seconds_by_source) {
  double total = 0;
  for (const auto& [source, s] : seconds_by_source) total += s;
  std::string out;
  for (const auto& [source, s] : seconds_by_source) {
    char share[32];
    std::snprintf(share, sizeof share, " %.0f%%", total > 0 ? 100 * s / total : 0.0);
    out += (out.empty() ? "" : ", ") + std::string(source) + share;
  }
  return out.empty() ? "none" : out;
}

// Steps back to back: each rank's list and the collectives repeated, step k's copy of op i
// depending on step k's copies of i's dependencies and, for a forward collective, on step
// k-1's copy of its producer. Host issue times continue on the rank's one clock.
void repeat_steps(StepProgram& prog, int steps) {
  const std::size_t C = prog.collectives.size();
  prog.collectives_per_step = C;
  prog.steps = steps;
  prog.last_step_collectives = C * static_cast<std::size_t>(steps - 1);
  for (int k = 1; k < steps; ++k) {
    for (std::size_t c = 0; c < C; ++c) {
      SimCollective copy = prog.collectives[c];
      copy.label += " (step " + std::to_string(k + 1) + ")";
      prog.collectives.push_back(std::move(copy));
    }
  }
  prog.last_step_begin.clear();
  for (auto& ops : prog.ranks) {
    const int n = static_cast<int>(ops.size());
    long launches = 0;
    double host_s = 0;
    for (const SimOp& op : ops) launches += op.launches, host_s += op.host_s;
    // Host seconds one step's launches and fused lists take on this rank (0 without the host
    // issue model).
    const double issued = prog.issue_s_per_launch ? *prog.issue_s_per_launch * double(launches) + host_s : 0;
    ops.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(steps));
    for (int k = 1; k < steps; ++k) {
      for (int i = 0; i < n; ++i) {
        SimOp copy = ops[static_cast<std::size_t>(i)];
        for (int& d : copy.deps) d += k * n;
        if (copy.producer >= 0) copy.deps.push_back((k - 1) * n + copy.producer);
        copy.producer = -1;
        if (copy.collective >= 0) copy.collective += static_cast<int>(C) * k;
        copy.issued_s += issued * k;
        copy.issued_end_s += issued * k;
        ops.push_back(std::move(copy));
      }
    }
    prog.last_step_begin.push_back(static_cast<std::size_t>(n) * static_cast<std::size_t>(steps - 1));
  }
}

}  // namespace

std::vector<int> StepProgram::originals() const {
  std::vector<int> original(collectives.size());
  for (std::size_t c = 0; c < original.size(); ++c) original[c] = static_cast<int>(c);
  for (std::size_t c = 0; c < replica_copies.size(); ++c) {
    for (std::size_t k = 0; k * collectives_per_step < original.size(); ++k) {
      for (int copy : replica_copies[c]) {
        original[static_cast<std::size_t>(copy) + k * collectives_per_step] = static_cast<int>(c + k * collectives_per_step);
      }
    }
  }
  return original;
}

StepProgram build_step_program(const Plan& plan, const ModelSpec& model, const Routing& routing,
                               const OptimizerConfig& optimizer, const CostModel& cost, const TrainingSpec& training,
                               const ProgramOptions& options) {
  StepProgram prog;
  // Forward/backward compute per unit: core's cost model (core/cost/forward_backward_cost.hpp).
  const CalibrationTable* calibration = cost.calibration();
  const ForwardBackwardCost units =
      forward_backward_cost(model, training, training.peak_tflops.value_or(cost.device().gemm_tflops),
                            calibration && calibration->forward_backward ? &*calibration->forward_backward : nullptr);
  prog.compute_source = units.description;
  prog.compute_seconds_by_source = units.seconds_by_source;
  prog.fwd_bwd_compute_s = units.total_s;
  if (options.plan_as_is) {
    prog.fwd_bwd_compute_s = 0;
    prog.compute_source = "none (the Plan as the executor benchmark runs it)";
    prog.compute_seconds_by_source.clear();
  }
  // Ranks of a replica-symmetric Plan run their template rank's ops: priced once.
  const bool fold = options.fold_replicas && plan.replica_symmetric && plan.mesh.replicate > 1;
  const std::size_t world = static_cast<std::size_t>(plan.mesh.world());
  const auto template_rank = [&](std::size_t rank) { return static_cast<std::size_t>(plan.template_rank(static_cast<int>(rank))); };
  std::vector<std::vector<NsTime>> seconds(plan.ranks.size());
  std::vector<bool> priced(plan.ranks.size(), false);
  const auto price = [&](std::size_t rank) -> const std::vector<NsTime>& {
    const std::size_t r = plan.folded ? template_rank(rank) : rank;  // a folded Plan's other replicas: the same ops
    if (!priced[r]) seconds[r] = rank_compute_times(plan.ranks[r], routing, optimizer, cost), priced[r] = true;
    return seconds[r];
  };
  std::map<std::string_view, double> optimizer_by_source;
  for (std::size_t r = 0; r < world; ++r) {
    const std::size_t same = fold || plan.folded ? template_rank(r) : r;  // summed in rank order either way: the same sums
    const auto& mine = price(same);
    for (std::size_t i = 0; i < plan.ranks[same].size(); ++i) {
      if (!is_collective(plan.ranks[same][i].kind)) optimizer_by_source[mine[i].source] += mine[i].seconds;
    }
  }
  prog.optimizer_source = cost.calibrated() ? describe_shares(optimizer_by_source) : "roofline";
  // The measured contention factors, where the calibration has them, as "; <what> x 1.25 <where>".
  const auto note_factor = [&](std::optional<double> slowdown, const char* what, const char* where) {
    if (!slowdown || !(*slowdown > 0)) return;
    char note[128];
    std::snprintf(note, sizeof note, "; %s x %.3g %s (measured)", what, 1 + *slowdown, where);
    prog.optimizer_source += note;
  };
  note_factor(cost.compute_slowdown_beside_nccl(), "compute", "beside a collective of several GPUs");
  note_factor(cost.collective_slowdown_beside_compute(), "collectives", "beside compute");
  // The host issue model, only with a measured cost per launch. Scenario mode (a real step) is
  // kept simple: one host issues the whole program in its order on one clock, never waiting for
  // the GPU, and forward/backward compute units cost it nothing (their kernels' launch cost is
  // PyTorch's, not the executor's, and hides behind a layer's GPU time).
  const std::optional<double> issue_s = cost.executor_issue_seconds();
  prog.issue_s_per_launch = issue_s;
  prog.compute_slowdown_beside_nccl = cost.compute_slowdown_beside_nccl();
  prog.collective_slowdown_beside_compute = cost.collective_slowdown_beside_compute();
  // One build of the collectives and rank lists; false when `fold` would not give exactly what
  // building every rank gives (sim/replica_fold.hpp), nothing kept.
  const auto build = [&](const Plan& from, bool merge, ReplicaFold* folder) {
    prog.ranks.clear();
    prog.collectives.clear();
    prog.replicas = 1;
    prog.replica_copies.clear();
    RankBuilder builder(prog, from, routing, units, training, options.plan_as_is, merge, issue_s.has_value());
    builder.ns = &optimizer.muon.ns;
    builder.cost = &cost;
    // One pass over the ranks in order: every rank, or the templates' with the other replicas'
    // copies between them.
    const auto each_rank = [&](const std::function<void(int)>& build_rank) {
      if (!folder) {
        for (std::size_t r = 0; r < from.ranks.size(); ++r) build_rank(static_cast<int>(r));
        return true;
      }
      const int S = folder->shard();
      return folder->each_replica(prog, [&](int t) {
        for (int s = 0; s < S; ++s) build_rank(t * S + s);
      });
    };
    if (!each_rank([&](int r) { builder.build(r, price(static_cast<std::size_t>(r))); })) return false;
    if (folder) folder->add_edges(builder.edges);
    builder.positions = global_positions(static_cast<int>(prog.collectives.size()), builder.edges);
    builder.collecting = false;
    std::vector<int> built_rank;  // the rank of each list in prog.ranks
    const auto keep = [&](std::vector<SimOp> ops, int r) {
      if (issue_s) assign_issue_times(ops, *issue_s, options.plan_as_is);
      prog.ranks.push_back(merge_compute_runs(std::move(ops), issue_s.has_value()));
      built_rank.push_back(r);
    };
    if (!folder) {
      for (std::size_t r = 0; r < from.ranks.size(); ++r) keep(builder.build(static_cast<int>(r), price(r)), static_cast<int>(r));
    } else {
      const int S = folder->shard();
      builder.keep_classified = true;  // a promoted replica reads its template's
      folder->set_positions(&builder.positions);
      const bool second = folder->each_replica(
          prog,
          [&](int t) {
            builder.neighbours = &folder->neighbours(t);
            for (int s = 0; s < S; ++s) keep(builder.build(t * S + s, price(static_cast<std::size_t>(t * S + s))), t * S + s);
          },
          [&](int rep) {
            builder.neighbours = nullptr;  // a template's pairs only
            for (int s = 0; s < S; ++s) {
              const int r = rep * S + s, t = static_cast<int>(template_rank(static_cast<std::size_t>(r)));
              keep(builder.build_moved(r, t, *folder, price(static_cast<std::size_t>(t))), r);
            }
          });
      if (!second) return false;
    }
    prog.built_ranks = built_rank.size();
    if (folder) {
      if (options.keep_folded) {
        folder->fold(prog, prog.collectives.size());
        return true;
      }
      // Every rank's list, in rank order: a template's as built, the others' moved from it.
      std::vector<std::vector<SimOp>> lists(world);
      std::vector<char> built(world, 0);
      for (std::size_t k = 0; k < built_rank.size(); ++k) {
        const auto r = static_cast<std::size_t>(built_rank[k]);
        lists[r] = std::move(prog.ranks[k]), built[r] = 1;
      }
      for (std::size_t r = 0; r < world; ++r) {
        if (!built[r]) lists[r] = folder->moved(lists[template_rank(r)], plan.mesh.replica_of(static_cast<int>(r)));
      }
      prog.ranks = std::move(lists);
    }
    return true;
  };
  for (bool merge : {true, false}) {
    try {
      std::optional<ReplicaFold> folding;
      if (fold) folding.emplace(plan);
      if (!folding || !build(plan, merge, &*folding)) {
        // Every rank built instead; a folded Plan first gets every rank's list.
        if (plan.folded) {
          build(unfolded(plan), merge, nullptr);
        } else {
          build(plan, merge, nullptr);
        }
      }
    } catch (const MergeCycle&) {
      if (!merge) throw;
      prog.launches_note = "one launch per Plan collective (merging a layer's launches would form a cycle)";
      continue;
    }
    break;
  }
  for (auto& c : prog.collectives) {
    if (c.call.members.size() != 1) continue;
    c.local_seconds = cost.elementwise_seconds(2 * c.call.bytes) + (c.calls - 1) * cost.launch_overhead_s();
  }
  const int steps = options.plan_as_is ? 1 : options.steps;
  if (steps < 1) throw Error("sim: steps to simulate must be >= 1, got " + std::to_string(steps));
  repeat_steps(prog, steps);
  return prog;
}

}  // namespace dmuon::sim
