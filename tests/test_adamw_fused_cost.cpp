// core/cost/adamw_fused_cost: the fused AdamW launch of a rank's optimizer phase (its tensors and
// curve price), the split of a measured phase into host per tensor and GPU over the curve that
// `dmuon-bench calibrate` records, and how the simulator's pricing uses the two keys.
#include "catch_compat.hpp"
#include "core/cost/adamw_fused_cost.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/plan_cost.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"

using namespace dmuon;

namespace {

Scenario tiny(int gpus) {
  return parse_scenario(R"(name: tiny
model: {name: tiny, transformer: {hidden: 256, layers: 2, heads: 4, ffn: 512, vocab: 1000}}
optimizer: {preset: torch}
cluster: {nodes: 1, gpus_per_node: )" + std::to_string(gpus) + R"(, gpu: h200}
training: {seq_len: 128, micro_batch: 1}
)",
                        "tiny.yaml");
}

Plan plan_of(const Scenario& s, Strategy strategy, const CostModel& cost) {
  const Routing routing = route_parameters(s.model, s.routing);
  return plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost).plan;
}

CalibrationTable table(std::optional<double> vs_curve) {
  CalibrationTable t;
  t.gpu = "h200";
  t.gemm_tflops = 700;
  t.hbm_GBps = 4000;
  t.adamw_fused_vs_curve = vs_curve;
  return t;
}

}  // namespace

TEST_CASE("an adamw Plan's optimizer phase: every parameter a tensor, priced as one fused launch", "[cost][adamw]") {
  const Scenario s = tiny(1);
  const CostModel cost(device_profile("h200"), table(std::nullopt));
  const Plan plan = plan_of(s, Strategy::adamw, cost);
  const Routing routing = route_parameters(s.model, s.routing);
  const FusedAdamw f = fused_adamw(plan, 0, routing, s.optimizer, cost);
  CHECK(f.tensors == static_cast<int>(s.model.params.size()));  // one rank: whole parameters
  double bytes = 0;
  for (const auto& p : s.model.params) bytes += CostModel::adamw_bytes(p.numel());
  CHECK(f.curve_seconds == Approx(cost.elementwise_seconds(bytes, ElementwiseKind::adamw)).epsilon(1e-12));
  // A table that scales fused launches still reports the curve's own price.
  const CostModel scaled(device_profile("h200"), table(1.25));
  CHECK(fused_adamw(plan, 0, routing, s.optimizer, scaled).curve_seconds == Approx(f.curve_seconds).epsilon(1e-12));
  const auto priced = rank_compute_times(plan.ranks[0], routing, s.optimizer, scaled);
  double sum = 0;
  for (std::size_t i = 0; i < priced.size(); ++i) sum += plan.ranks[0][i].kind == OpKind::adamw ? priced[i].seconds : 0;
  CHECK(sum == Approx(1.25 * f.curve_seconds).epsilon(1e-12));
  CHECK_THROWS_WITH(fused_adamw(plan, 1, routing, s.optimizer, cost), Catch::Contains("rank 1 is not a rank"));
}

TEST_CASE("a Muon Plan's optimizer phase is not a fused AdamW launch to measure", "[cost][adamw]") {
  const Scenario s = tiny(1);
  const CostModel cost(device_profile("h200"), table(std::nullopt));
  const Routing routing = route_parameters(s.model, s.routing);
  CHECK_THROWS_WITH(fused_adamw(plan_of(s, Strategy::ddp_redundant, cost), 0, routing, s.optimizer, cost),
                    Catch::Contains("the phase must be AdamW ops only"));
}

TEST_CASE("a measured phase splits into host per tensor and GPU over the curve", "[cost][adamw]") {
  const FusedAdamw f{400, 10e-3};
  const FusedAdamwCost c = fused_adamw_cost(11.2e-3, 0.6e-3, f);
  CHECK(c.issue_us_per_tensor == Approx(1.5).epsilon(1e-12));
  CHECK(c.vs_curve == Approx(1.06).epsilon(1e-12));
  CHECK_THROWS_WITH(fused_adamw_cost(0.5e-3, 0.6e-3, f), Catch::Contains("exceed the phase"));
  CHECK_THROWS_WITH(fused_adamw_cost(0, 0.6e-3, f), Catch::Contains("phase seconds must be > 0"));
  CHECK_THROWS_WITH(fused_adamw_cost(11e-3, -1, f), Catch::Contains("host seconds must be > 0"));
  CHECK_THROWS_WITH(fused_adamw_cost(11e-3, 1e-3, FusedAdamw{}), Catch::Contains("no tensors"));
}
