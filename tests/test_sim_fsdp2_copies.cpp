// PyTorch FSDP2's copy-in/copy-out and casts (core/cost/fsdp2_copies.hpp, training.fsdp2_copies):
// the byte counts per collective, and the simulator adding them on the compute stream, one op per
// unit and direction, only when the scenario says the step runs under FSDP2.
#include <string>

#include "catch_compat.hpp"
#include "core/cost/fsdp2_copies.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"

// One default-constructed RunOptions passed by reference (GCC 12: see test_sim_sharded_ns.cpp).
static const dmuon::sim::RunOptions kRunDefaults;

using namespace dmuon;

namespace {

Scenario two_gpus(bool copies) {
  return parse_scenario(
      "name: copies\n"
      "model:\n  name: small\n  transformer: {hidden: 1024, layers: 3, heads: 8, ffn: 4096, vocab: 8192}\n"
      "optimizer: {preset: torch}\n"
      "cluster:\n  nodes: 1\n  gpus_per_node: 2\n  gpu: h200\n  gpu_memory_GiB: 141\n"
      "  nvlink: {bw_GBps: 450, latency_us: 3.4, efficiency: 0.8}\n"
      "training: {seq_len: 1024, micro_batch: 1, fsdp2_copies: " + std::string(copies ? "true" : "false") + "}\n",
      "copies.yaml");
}

}  // namespace

TEST_CASE("FSDP2's copy and cast bytes per collective", "[sim][fsdp2]") {
  // 1000 elements over 2 ranks: all-gather 6 x 500 (cast the fp32 shard) + 4 x 1000 (split);
  // reduce-scatter 6 x 1000 (cast the bf16 gradients) + 8 x 500 (into the fp32 shard).
  CHECK(fsdp2_all_gather_copy_bytes(1000, 2) == 7000);
  CHECK(fsdp2_reduce_scatter_copy_bytes(1000, 2) == 10000);
  CHECK(fsdp2_all_gather_copy_bytes(1000, 1) == 10000);
  CHECK_THROWS_AS(fsdp2_all_gather_copy_bytes(1000, 0), Error);
  CHECK(two_gpus(true).training.fsdp2_copies);
  CHECK_FALSE(two_gpus(false).training.fsdp2_copies);
}

TEST_CASE("the simulator adds FSDP2's copies on the compute stream when the scenario asks", "[sim][fsdp2]") {
  for (bool copies : {false, true}) {
    INFO("fsdp2_copies " << copies);
    const Scenario s = two_gpus(copies);
    const Routing routing = route_parameters(s.model, s.routing);
    const CostModel cost = sim::scenario_cost_model(s);
    const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster), cost, {});
    sim::ProgramOptions o;
    const sim::StepProgram p = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, o);
    double params = 0;
    for (const auto& param : s.model.params) params += double(param.numel());
    for (const auto& ops : p.ranks) {
      int count = 0;
      double bytes = 0;
      for (const auto& op : ops) {
        if (op.category != "fsdp2_copy") continue;
        ++count;
        CHECK(op.stream == sim::kComputeStream);
        // Datasheet pricing: bytes / HBM bandwidth + one launch.
        bytes += (op.seconds - cost.launch_overhead_s()) * cost.device().hbm_GBps * 1e9;
      }
      if (!copies) {
        CHECK(count == 0);
        continue;
      }
      // Every parameter is all-gathered once and reduce-scattered once per step (adamw, no
      // re-gather): N (6/2 + 4) + N (6 + 8/2) = 17 N bytes.
      CHECK(count >= 2);
      CHECK(bytes == Approx(17 * params).epsilon(1e-6));
    }
  }
  const auto off = sim::run_strategy(two_gpus(false), Strategy::adamw, sim::scenario_cost_model(two_gpus(false)), kRunDefaults);
  const auto on = sim::run_strategy(two_gpus(true), Strategy::adamw, sim::scenario_cost_model(two_gpus(true)), kRunDefaults);
  CHECK(on.fwd_bwd_s > off.fwd_bwd_s);
}
