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
    const double bytes = collective_payload_bytes(op, rank, plan.bytes_per_element);
    const auto seconds = cost.collective_seconds(kind, ranks, 1, bytes);
    if (!seconds) {
      throw Error(where + ": the calibration has no " + std::string(to_string(kind)) + " curve over " +
                  std::to_string(ranks) + " GPUs of one node");
    }
    out.seconds += *seconds;
    out.calls += nccl_calls(op);
    out.launches += 1;
    double launch = *seconds;
    if (ranks == 1 && nccl_calls(op) > 1) {
      launch += (nccl_calls(op) - 1) * cost.local_extra_call_seconds(kind, bytes).value_or(0.0);
    }
    out.launch_seconds.push_back(launch);
  }
  return out;
}

namespace {

// What every fit of an overhead needs: a measured phase and collectives to spread it over.
void require_phase(double measured_seconds, const CurvePricedCollectives& priced) {
  if (!(measured_seconds > 0) || !std::isfinite(measured_seconds)) {
    throw Error("collective step overhead: the measured phase must take a positive finite time, got " +
                std::to_string(measured_seconds) + " s");
  }
  if (priced.calls < 1) throw Error("collective step overhead: the Plan has no forward/backward collective to measure");
}

}  // namespace

double collective_step_overhead_seconds(double measured_seconds, const CurvePricedCollectives& priced, bool per_launch) {
  require_phase(measured_seconds, priced);
  return (measured_seconds - priced.seconds) / (per_launch ? priced.launches : priced.calls);
}

double host_paced_phase_seconds(const std::vector<double>& launch_seconds, double issue_s, double overhead_s) {
  if (!(issue_s >= 0) || !(overhead_s >= 0)) {
    throw Error("host-paced phase: issue and overhead seconds must be >= 0, got " + std::to_string(issue_s) + " and " +
                std::to_string(overhead_s));
  }
  double end = 0;
  for (std::size_t i = 0; i < launch_seconds.size(); ++i) {
    if (!(launch_seconds[i] >= 0)) throw Error("host-paced phase: launch " + std::to_string(i) + " has negative seconds");
    end = std::max(end, issue_s * double(i + 1)) + launch_seconds[i] + overhead_s;
  }
  return end;
}

double local_step_overhead_seconds(double measured_seconds, const CurvePricedCollectives& priced, double issue_s) {
  require_phase(measured_seconds, priced);
  if (!(issue_s >= 0) || !std::isfinite(issue_s)) {
    throw Error("local collective step overhead: the issue cost must be a finite number >= 0 s, got " +
                std::to_string(issue_s));
  }
  const auto phase = [&](double o) { return host_paced_phase_seconds(priced.launch_seconds, issue_s, o); };
  if (phase(0) >= measured_seconds) return 0;
  // At o = measured / launches the launches alone take the measured phase: the root is below.
  double lo = 0, hi = measured_seconds / double(priced.launch_seconds.size());
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    (phase(mid) < measured_seconds ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace dmuon
