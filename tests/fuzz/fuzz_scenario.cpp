// libFuzzer target: the scenario loader (core/io/scenario.hpp parse_scenario), then what every
// consumer does next: route the model and, for small problems, plan every listed strategy
// (owners by the cost model, build, validate, annotate). The input is named as if it were a file
// in scenarios/, so `model: models/x.yaml` resolves to the real model files.
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "fuzz_common.hpp"

namespace {

// Planning is quadratic-ish in matrices x ranks; the loader is the target, planning a bonus.
constexpr std::size_t kMaxPlannedMatrices = 48;
constexpr std::int64_t kMaxPlannedRanks = 16;
constexpr std::int64_t kMaxPlannedNumel = 1 << 22;

void plan_small(const dmuon::Scenario& s, const dmuon::Routing& routing) {
  const auto& c = s.cluster;
  if (c.nodes > kMaxPlannedRanks || c.gpus_per_node > kMaxPlannedRanks ||
      c.nodes * c.gpus_per_node > kMaxPlannedRanks)
    return;
  if (routing.muon_matrices.size() > kMaxPlannedMatrices) return;
  if (s.model.params.size() > 4 * kMaxPlannedMatrices) return;
  if (routing.muon_numel + routing.adamw_numel > kMaxPlannedNumel) return;
  const dmuon::Mesh mesh = dmuon::mesh_for_cluster(c);
  const dmuon::CostModel cost(dmuon::device_profile("h100-sxm"));
  dmuon::StepPlanOptions options;
  options.owner_memory_capacity_bytes = c.gpu_memory_GiB * 1024.0 * 1024.0 * 1024.0;
  for (const dmuon::Strategy strategy : s.strategies) {
    const dmuon::StepPlan p = dmuon::plan_step(s.model, routing, s.optimizer, strategy, mesh, cost, options);
    dmuon::fuzz::require(static_cast<int>(p.plan.ranks.size()) == mesh.world(), "one op list per rank");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = dmuon::fuzz::as_text(data, size);
  dmuon::fuzz::expect_only_errors([&] {
    const dmuon::Scenario s = dmuon::parse_scenario(text, DMUON_SOURCE_DIR "/scenarios/fuzz-input.yaml");
    const dmuon::Routing routing = dmuon::route_parameters(s.model, s.routing);
    plan_small(s, routing);
  });
  return 0;
}
