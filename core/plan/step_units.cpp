#include "core/plan/step_units.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace dmuon {
namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Lowest unit seen so far, or -1; merged over a collective's members and a bucket's ops.
void lower(int& unit, int candidate) {
  if (candidate >= 0 && (unit < 0 || candidate < unit)) unit = candidate;
}

std::string op_name(int rank, int index, const Op& op) {
  return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " (" + std::string(to_string(op.kind)) + " '" +
         op.label + "', " + std::string(to_string(op.phase)) + ")";
}

}  // namespace

// Visits the op's parameters as they come (repeats included): the lowest unit and whether they
// share one do not depend on the order.
OpUnitSpan op_unit_span(const Op& op, const Routing& routing, const ForwardBackwardCost& cost) {
  OpUnitSpan s;
  auto visit = [&](std::size_t param) {
    const int u = cost.unit_of_param.at(param);
    if (s.lowest >= 0 && u != s.lowest) s.single = false;
    lower(s.lowest, u);
  };
  for (std::size_t m : op.matrices) visit(routing.muon_matrices.at(m).param);
  for (const Region& r : op.regions) visit(r.param);
  for (const Region& r : op.parts) visit(r.param);
  for (const Transfer& t : op.transfers) visit(t.from.param);
  return s;
}

StepUnits assign_step_units(const Plan& plan, const Routing& routing, const ForwardBackwardCost& cost) {
  StepUnits out;
  out.units = static_cast<int>(cost.units.size());
  out.unit_of_op.resize(plan.ranks.size());
  // First pass: each op's own lowest unit, merged per collective id and per bucket.
  std::vector<int> by_collective, by_bucket;
  auto slot = [](std::vector<int>& v, std::int64_t id) -> int& {
    if (at(id) >= v.size()) v.resize(at(id) + 1, -1);
    return v[at(id)];
  };
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    auto& units = out.unit_of_op[r];
    units.assign(plan.ranks[r].size(), -1);
    for (std::size_t i = 0; i < plan.ranks[r].size(); ++i) {
      const Op& op = plan.ranks[r][i];
      if (op.phase == Phase::optimizer) continue;
      units[i] = op_unit_span(op, routing, cost).lowest;
      if (op.collective >= 0) lower(slot(by_collective, op.collective), units[i]);
    }
  }
  // A bucket's unit is the lowest of its collectives' (all members') units.
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (op.phase == Phase::optimizer || op.bucket < 0 || op.collective < 0) continue;
      lower(slot(by_bucket, op.bucket), by_collective[at(op.collective)]);
    }
  }
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    for (std::size_t i = 0; i < plan.ranks[r].size(); ++i) {
      const Op& op = plan.ranks[r][i];
      if (op.phase == Phase::optimizer) continue;
      int& unit = out.unit_of_op[r][i];
      if (op.collective >= 0) unit = by_collective[at(op.collective)];
      if (op.bucket >= 0 && at(op.bucket) < by_bucket.size() && by_bucket[at(op.bucket)] >= 0) unit = by_bucket[at(op.bucket)];
      unit = std::max(unit, 0);  // names no parameter: with the first unit
    }
  }
  return out;
}

namespace {

// Appends the forward (units ascending) and backward (units descending) items of one rank.
class ScheduleBuilder {
 public:
  ScheduleBuilder(const std::vector<Op>& ops, const std::vector<int>& unit_of_op, int units)
      : ops_(ops), per_unit_fwd_(static_cast<std::size_t>(units)), per_unit_bwd_(static_cast<std::size_t>(units)) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].phase == Phase::optimizer) continue;
      const int u = unit_of_op[i];
      if (u < 0 || u >= units) throw Error("step schedule: op " + std::to_string(i) + " has unit " + std::to_string(u) +
                                           " outside [0, " + std::to_string(units) + ")");
      (ops[i].phase == Phase::forward ? per_unit_fwd_ : per_unit_bwd_)[static_cast<std::size_t>(u)].push_back(static_cast<int>(i));
    }
  }

  StepSchedule build(std::int64_t prefetch_layers) {
    const int units = static_cast<int>(per_unit_fwd_.size());
    s_.units = units;
    std::vector<int> forward_item(static_cast<std::size_t>(units), -1);
    for (int u = 0; u < units; ++u) {
      const std::int64_t gate = u - 1 - prefetch_layers;
      std::vector<int> mine;
      for (int i : per_unit_fwd_[static_cast<std::size_t>(u)]) {
        const bool gated = gate >= 0 && !ops_[at(i)].run_ahead;
        mine.push_back(add(StepItemKind::op, i, gated ? std::vector<int>{forward_item[at(gate)]} : std::vector<int>{}));
      }
      forward_item[static_cast<std::size_t>(u)] = add(StepItemKind::forward_compute, u, std::move(mine));
    }
    for (int u = units - 1; u >= 0; --u) {
      const int compute = add(StepItemKind::backward_compute, u, {});
      for (int i : per_unit_bwd_[static_cast<std::size_t>(u)]) add(StepItemKind::op, i, {compute});
    }
    return std::move(s_);
  }

 private:
  int add(StepItemKind kind, int index, std::vector<int> after) {
    s_.items.push_back({kind, index, std::move(after)});
    return static_cast<int>(s_.items.size()) - 1;
  }

  const std::vector<Op>& ops_;
  std::vector<std::vector<int>> per_unit_fwd_, per_unit_bwd_;  // Plan ops per unit, in Plan order
  StepSchedule s_;
};

// Every Plan dependency of a scheduled op must be issued before it (optimizer ops come last).
void check_order(const std::vector<Op>& ops, const StepSchedule& s, int rank) {
  std::vector<int> position(ops.size(), -1);
  for (std::size_t k = 0; k < s.items.size(); ++k) {
    if (s.items[k].kind == StepItemKind::op) position[at(s.items[k].index)] = static_cast<int>(k);
  }
  for (std::size_t k = 0; k < s.items.size(); ++k) {
    if (s.items[k].kind != StepItemKind::op) continue;
    const int i = s.items[k].index;
    for (int d : ops[at(i)].deps) {
      if (position[at(d)] >= 0 && position[at(d)] < static_cast<int>(k)) continue;
      throw Error("step schedule: " + op_name(rank, i, ops[at(i)]) + " depends on " + op_name(rank, d, ops[at(d)]) +
                  ", which the unit order puts after it");
    }
  }
}

}  // namespace

StepSchedule step_schedule(const Plan& plan, int rank, const StepUnits& units, std::int64_t prefetch_layers) {
  if (rank < 0 || at(rank) >= plan.ranks.size() || at(rank) >= units.unit_of_op.size()) {
    throw Error("step schedule: rank " + std::to_string(rank) + " is not in the plan");
  }
  if (prefetch_layers < 0) throw Error("training.prefetch_layers: must be >= 0, got " + std::to_string(prefetch_layers));
  const auto& ops = plan.ranks[at(rank)];
  if (units.unit_of_op[at(rank)].size() != ops.size()) {
    throw Error("step schedule: rank " + std::to_string(rank) + "'s units were assigned for another plan");
  }
  StepSchedule s = ScheduleBuilder(ops, units.unit_of_op[at(rank)], units.units).build(prefetch_layers);
  check_order(ops, s, rank);
  return s;
}

std::vector<StandinGemm> standin_gemms(const ComputeUnit& unit, Phase phase) {
  if (phase == Phase::optimizer) throw Error("compute stand-in: the optimizer phase has no forward/backward GEMMs");
  std::vector<StandinGemm> out;
  for (const UnitGemm& g : unit.gemms) {
    const auto tokens = std::max<std::int64_t>(1, std::llround(g.tokens));
    const auto in = std::llround(g.in), width = std::llround(g.out), count = std::llround(g.count);
    if (phase == Phase::forward) {
      out.push_back({tokens, width, in, count});
    } else {
      out.push_back({tokens, in, width, count});  // dX = dY W
      out.push_back({in, width, tokens, count});  // dW = X^T dY
    }
  }
  return out;
}

}  // namespace dmuon
