#include "harness/bench/step_launch_probe.hpp"

#include <algorithm>
#include <string>

#include "core/cost/calibration.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/median.hpp"
#include "core/model/routing.hpp"
#include "kernels/exec/bench.hpp"

namespace dmuon::bench {
namespace {

// Timed iterations: the probe takes seconds, and 5 samples of the first launches moved the
// issue cost by 30% between two leases whose steps took the same time (reports/sim-validation.md).
constexpr int kProbeIterations = 15;

// Per iteration the slowest rank's seconds, then the median (collective: every rank calls it).
double median_of_slowest(exec::RankHandle& h, const std::vector<double>& mine) {
  // all_gather concatenates the ranks' lists in rank order: iteration i of rank r at r * n + i.
  const std::vector<double> all = h.all_gather(mine);
  const std::size_t n = mine.size();
  std::vector<double> slowest(n, 0);
  for (std::size_t k = 0; k < all.size(); ++k) slowest[k % n] = std::max(slowest[k % n], all[k]);
  return median(slowest);
}

}  // namespace

StepPlan step_probe_plan(const Scenario& sc, int world) {
  const Routing routing = route_parameters(sc.model, sc.routing);
  ClusterSpec cluster = sc.cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = world;
  const CostModel cost(device_profile(sc.cluster.gpu, "cluster.gpu"));
  return plan_step(sc.model, routing, sc.optimizer, Strategy::adamw, mesh_for_cluster(cluster), cost);
}

StepLaunchProbe measure_step_launches(exec::RankHandle& h, const Scenario& sc, double timeout_seconds) {
  const Routing routing = route_parameters(sc.model, sc.routing);
  const StepPlan sp = step_probe_plan(sc, h.world());
  exec::BenchOptions bo;
  bo.warmup = 2;
  bo.iterations = kProbeIterations;
  bo.timeout_seconds = timeout_seconds;
  const exec::RankMeasurement m = exec::measure_plan(h, sp.plan, sc.model, routing, sc.optimizer, bo);
  std::vector<double> per_launch, phase, optimizer, optimizer_host;
  for (const auto& s : m.samples) {
    const exec::RunTiming& t = s.comm_phase;
    phase.push_back(t.seconds);
    if (t.host_issue_sample_launches > 0) per_launch.push_back(t.host_issue_sample_seconds / t.host_issue_sample_launches);
    optimizer.push_back(s.optimizer.seconds);
    // What the GPU waits for: the loop until the fused launch is enqueued, not the event records
    // after it (those overlap the kernels).
    optimizer_host.push_back(s.optimizer.host_adamw_launched_seconds);
  }
  if (per_launch.size() != phase.size()) {
    throw Error("executor issue cost: the adamw Plan of " + sc.name + " has fewer than " +
                std::to_string(exec::kIssueSampleLaunches) + " forward/backward launches a rank");
  }
  StepLaunchProbe probe;
  probe.iterations = static_cast<int>(phase.size());
  const std::vector<double> issues = h.all_gather(std::vector<double>{median(per_launch)});
  probe.issue_seconds = *std::max_element(issues.begin(), issues.end());
  probe.comm_phase_seconds = median_of_slowest(h, phase);
  // The optimizer phase of one rank, host and phase of the same rank: the one whose phase's
  // median is the longest (calibrate prices that rank's fused list).
  const std::vector<double> pairs = h.all_gather(std::vector<double>{median(optimizer), median(optimizer_host)});
  for (std::size_t r = 0; 2 * r + 1 < pairs.size(); ++r) {
    if (pairs[2 * r] <= probe.optimizer_phase_seconds) continue;
    probe.optimizer_rank = static_cast<int>(r);
    probe.optimizer_phase_seconds = pairs[2 * r];
    probe.optimizer_host_seconds = pairs[2 * r + 1];
  }
  return probe;
}

}  // namespace dmuon::bench
