#include "core/cost/adamw_fused_cost.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/cost/plan_cost.hpp"
#include "core/error.hpp"

namespace dmuon {

FusedAdamw fused_adamw(const Plan& plan, int rank, const Routing& routing, const OptimizerConfig& optimizer,
                       const CostModel& cost) {
  const std::string where = "fused AdamW: rank " + std::to_string(rank);
  if (rank < 0 || static_cast<std::size_t>(rank) >= plan.ranks.size()) {
    throw Error(where + " is not a rank of the Plan (" + std::to_string(plan.ranks.size()) + " ranks)");
  }
  const std::vector<Op>& ops = plan.ranks[static_cast<std::size_t>(rank)];
  const std::vector<NsTime> priced = rank_compute_times(ops, routing, optimizer, cost);
  FusedAdamw out;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.phase != Phase::optimizer) continue;
    if (op.kind != OpKind::adamw) {
      throw Error(where + " op " + std::to_string(i) + " (" + op.label + "): a " + std::string(to_string(op.kind)) +
                  " op in the optimizer phase; the phase must be AdamW ops only to measure their launch");
    }
    out.tensors += adamw_tensors(op);
    out.curve_seconds += priced[i].seconds;
  }
  if (out.tensors == 0) throw Error(where + ": no AdamW tensors in the optimizer phase");
  // rank_compute_times applied the table's adamw_fused_vs_curve: the curve's own price is wanted.
  out.curve_seconds /= cost.adamw_fused_vs_curve();
  return out;
}

FusedAdamwCost fused_adamw_cost(double phase_seconds, double host_seconds, const FusedAdamw& fused) {
  const auto positive = [](double x) { return x > 0 && std::isfinite(x); };
  if (!positive(phase_seconds)) throw Error("fused AdamW: phase seconds must be > 0, got " + std::to_string(phase_seconds));
  if (!positive(host_seconds)) throw Error("fused AdamW: host seconds must be > 0, got " + std::to_string(host_seconds));
  if (fused.tensors <= 0 || !positive(fused.curve_seconds)) throw Error("fused AdamW: no tensors priced");
  if (!(host_seconds < phase_seconds)) {
    throw Error("fused AdamW: the host's " + std::to_string(host_seconds) + " s exceed the phase's " +
                std::to_string(phase_seconds) + " s: no GPU share to measure");
  }
  return {host_seconds / fused.tensors * 1e6, (phase_seconds - host_seconds) / fused.curve_seconds};
}

}  // namespace dmuon
