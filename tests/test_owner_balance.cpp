// owner-striped's balance on 16node.yaml's model (issue 13 item 4), computed as the simulator's
// "owner imbalance" is (max - mean) / mean of each GPU's optimizer compute, without running SimGrid.
// From 8 nodes on the makespan is the 5120 x 5120 merger's sharded call over 8 GPUs (6.76 ms, 5.5
// of them its in-call collectives), which no assignment beats; the planner then balances compute
// under it (core/owners/owner_refine.cpp), which is what the simulator's figure measures.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/plan_cost.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"

using namespace dmuon;

namespace {

const std::string kScenario = std::string(DMUON_SOURCE_DIR) + "/scenarios/16node.yaml";

struct Balance {
  StepPlan step;
  std::vector<double> optimizer_seconds;  // per rank: compute ops of the optimizer phase
  std::vector<double> owner_seconds;      // of which Newton-Schulz, momentum and update (not AdamW)
  double imbalance() const {
    const double mean = std::accumulate(optimizer_seconds.begin(), optimizer_seconds.end(), 0.0) / double(optimizer_seconds.size());
    return *std::max_element(optimizer_seconds.begin(), optimizer_seconds.end()) / mean - 1;
  }
};

// Plans owner-striped as dmuon-sim does (sim/strategy_run.cpp: NVLink after efficiency prices
// the sharded calls' all-reduces; no calibration in 16node.yaml: the roofline cost model).
Balance plan_16node(const std::vector<std::pair<std::string, std::string>>& overrides,
                    ProductSplit split = ProductSplit::cheaper) {
  const Scenario s = load_scenario_with_overrides(kScenario, overrides);
  DeviceProfile device = device_profile(s.cluster.gpu, "cluster.gpu");
  device.memory_GiB = s.cluster.gpu_memory_GiB;
  REQUIRE(s.calibration_file.empty());
  const CostModel cost(device);
  const Routing routing = route_parameters(s.model, s.routing);
  StepPlanOptions options;
  options.node_link = {s.cluster.nvlink->bw_GBps * s.cluster.nvlink->efficiency, s.cluster.nvlink->latency_us};
  options.split_ns_products = split;
  Balance out{plan_step(s.model, routing, s.optimizer, Strategy::owner_striped, mesh_for_cluster(s.cluster), cost, options), {}, {}};
  for (const auto& ops : out.step.plan.ranks) {
    const std::vector<NsTime> t = rank_compute_times(ops, routing, s.optimizer, cost);
    double seconds = 0, owner = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].phase != Phase::optimizer || is_collective(ops[i].kind)) continue;
      seconds += t[i].seconds;
      if (ops[i].kind != OpKind::adamw) owner += t[i].seconds;
    }
    out.optimizer_seconds.push_back(seconds);
    out.owner_seconds.push_back(owner);
  }
  return out;
}

// The rank whose optimizer compute is the largest holds a member of the merger's call.
bool busiest_holds_merger(const Balance& b) {
  const auto most = std::max_element(b.optimizer_seconds.begin(), b.optimizer_seconds.end());
  const auto& ops = b.step.plan.ranks[static_cast<std::size_t>(most - b.optimizer_seconds.begin())];
  return std::any_of(ops.begin(), ops.end(), [](const Op& op) {
    return op.kind == OpKind::newton_schulz && op.label.find("visual.merger.mlp.0.") != std::string::npos;
  });
}

}  // namespace

TEST_CASE("owner-striped at 32 nodes of 16node.yaml: within 5% under the sharded merger's floor", "[owners][striped]") {
  const Balance split = plan_16node({{"cluster.nodes", "32"}});
  const Balance whole = plan_16node({{"cluster.nodes", "32"}}, ProductSplit::never);
  for (const Balance* b : {&split, &whole}) {
    // The lower bound counts each matrix's least one-GPU time over every k and way of sharding.
    CHECK(b->step.assignment->gap_to_lower_bound() < 1e-9);
  }
  // Products whole: column sharding does not pay for the merger (its m x m products, as full
  // GEMMs, are 2/3 of its work), so it runs whole on one GPU: 9.32 ms of Newton-Schulz and
  // 0.32 ms of momentum and update, which an owner's load counts.
  CHECK(whole.step.assignment->lower_bound_seconds == Approx(9.64e-3).epsilon(0.01));
  CHECK(whole.imbalance() > 4.0);
  // Split over 8 GPUs: 6.76 ms a member, most of it the all-gathers of 5120 x 5120 products.
  CHECK(split.step.assignment->lower_bound_seconds < 0.75 * whole.step.assignment->lower_bound_seconds);
  // The simulator's figure (compute only): 4.07 -> 0.338 -> 0.181 (wide members priced without
  // per-row launches) -> 0.047 as of this commit, the busiest GPU two thirds of two MLP matrices
  // and a visual o_proj.
  CHECK(split.imbalance() < 0.05);
  CHECK_FALSE(busiest_holds_merger(split));
  // The planner's compute per rank is what the Plan computes there, less the AdamW every rank
  // shares: within a microsecond (a ragged call's last member is priced as its widest).
  const Assignment& a = *split.step.assignment;
  for (std::size_t r = 0; r < split.owner_seconds.size(); ++r) CHECK(std::abs(a.compute_seconds[r] - split.owner_seconds[r]) < 2e-6);
  CHECK(a.imbalance() < 0.07);  // 0.063: the same figure without the AdamW
  CHECK(a.makespan_seconds > 4 * a.compute_makespan_seconds);  // the floor is the merger's collectives
}

TEST_CASE("owner-striped at 16 and 64 nodes: balanced up to the merger's compute", "[owners][striped]") {
  const Balance sixteen = plan_16node({{"cluster.nodes", "16"}});
  CHECK(sixteen.imbalance() < 0.045);  // 0.042 as of this commit (0.039 with MLP matrices sharded)
  CHECK_FALSE(busiest_holds_merger(sixteen));
  // The compute rule's two-GPU MLP calls would even compute by under 1% for 13 in-call
  // collectives a member (0.5% of the step): only the merger's call is sharded.
  int other_sharded = 0;  // 224 members' calls before (each MLP call over 2 GPUs)
  for (const auto& ops : sixteen.step.plan.ranks) {
    for (const Op& op : ops) other_sharded += is_sharded_ns(op) && op.label.find("visual.merger.mlp.0.") == std::string::npos;
  }
  CHECK(other_sharded == 0);
  // At 64 nodes a merger member's 1.21 ms of compute (1/8 of the call and its momentum and
  // update) is more than any other GPU's: the figure is that floor over the mean, 0.35.
  const Balance sixty_four = plan_16node({{"cluster.nodes", "64"}});
  CHECK(busiest_holds_merger(sixty_four));
}

TEST_CASE("owner-striped without the merger's floor: within 5% at 16 nodes", "[owners][striped]") {
  // The merger routed to AdamW: what the assignment does with the other 539 matrices.
  const Balance b = plan_16node({{"cluster.nodes", "16"},
                                 {"routing.adamw", "[visual.patch_embed.proj.weight, action_expert.action_in_proj.weight, "
                                                   "action_expert.action_out_proj.weight, visual.merger.mlp.0.weight]"}});
  CHECK(b.step.assignment->imbalance() < 0.03);  // 0.023 as of this commit
  CHECK(b.imbalance() < 0.025);                  // 0.019 (0.028 before)
}
