#include "core/cost/step_overhead.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/cost/plan_cost.hpp"
#include "core/error.hpp"

namespace dmuon {

CurvePricedCollectives curve_priced_collectives(const Plan& plan, int rank, const CostModel& cost) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= plan.ranks.size()) {
    throw Error("collective step overhead: rank " + std::to_string(rank) + " is not a rank of the Plan (" +
                std::to_string(plan.ranks.size()) + " ranks)");
  }
  CurvePricedCollectives out;
  const auto& ops = plan.ranks[static_cast<std::size_t>(rank)];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (!is_collective(op.kind) || op.phase == Phase::optimizer) continue;
    const std::string where = "collective step overhead: rank " + std::to_string(rank) + " op " + std::to_string(i) +
                              " (" + op.label + ")";
    if (op.kind == OpKind::all_to_all) throw Error(where + ": an all-to-all has no single curve size");
    const OpKind kind = executed_collective_kind(op);
    const int ranks = static_cast<int>(plan.groups.at(static_cast<std::size_t>(op.group)).ranks.size());
    const auto seconds = cost.collective_seconds(kind, ranks, 1, collective_payload_bytes(op, rank, plan.bytes_per_element));
    if (!seconds) {
      throw Error(where + ": the calibration has no " + std::string(to_string(kind)) + " curve over " +
                  std::to_string(ranks) + " GPUs of one node");
    }
    out.seconds += *seconds;
    out.calls += nccl_calls(op);
    out.launches += 1;
  }
  return out;
}

double collective_step_overhead_seconds(double measured_seconds, const CurvePricedCollectives& priced, bool per_launch) {
  if (!(measured_seconds > 0) || !std::isfinite(measured_seconds)) {
    throw Error("collective step overhead: the measured phase must take a positive finite time, got " +
                std::to_string(measured_seconds) + " s");
  }
  if (priced.calls < 1) throw Error("collective step overhead: the Plan has no forward/backward collective to measure");
  return (measured_seconds - priced.seconds) / (per_launch ? priced.launches : priced.calls);
}

}  // namespace dmuon
