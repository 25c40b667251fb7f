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

TEST_CASE("FSDP2's copies run in the GPU's wait for the host where the FSDP2 floor paces a unit", "[sim][fsdp2]") {
  // The FSDP2 host floor is measured with FSDP2 running, copies included (they move parameter
  // bytes whatever the tokens): a block the host paces hides its copies in the GPU's wait.
  const Scenario s = two_gpus(true);
  const Routing routing = route_parameters(s.model, s.routing);
  const auto copies_of = [&](double floor_per_layer_s) {
    CalibrationTable t;
    t.gpu = "h200", t.gemm_tflops = 800, t.hbm_GBps = 4000;
    t.forward_backward = ForwardBackwardTable{};
    t.forward_backward->host_floor = {
        {"small", HostFloorMode::fsdp2, 1, 32, {1, 3}, {floor_per_layer_s, 3 * floor_per_layer_s}, floor_per_layer_s, 0, 2}};
    const CostModel cost(device_profile("h200", "test"), t);
    const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster), cost, {});
    const sim::StepProgram p = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, {});
    std::vector<double> seconds;
    int waiting_units = 0;
    for (const auto& op : p.ranks[0]) {
      if (op.category == "fsdp2_copy") seconds.push_back(op.seconds);
      waiting_units += op.host_wait_s > 0;
      // A unit keeps the wait its copies left; only compute ops of the forward/backward have one.
      CHECK(op.host_wait_s >= 0);
      CHECK(op.host_wait_s <= op.seconds);
      if (op.category != "forward" && op.category != "backward") CHECK(op.host_wait_s == 0);
      if (floor_per_layer_s < 1e-3) CHECK(op.host_wait_s == 0);
      if (floor_per_layer_s > 1e-2 && (op.category == "forward" || op.category == "backward") &&
          op.label.find("unit 2") != std::string::npos) {
        CHECK(op.host_wait_s > 0);  // a block, paced by 50 ms a layer
      }
    }
    // Three blocks, forward and backward, wait for a 50 ms-a-layer host.
    if (floor_per_layer_s > 1e-2) CHECK(waiting_units >= 6);
    return seconds;
  };
  // A floor far below the GPU's work (1 us a layer): nothing paced, every copy in full.
  const std::vector<double> full = copies_of(1e-6);
  // 50 ms a layer, far above it: every block's copies (forward gathers, backward reductions) fit
  // in its wait; the embedding's and head's units never wait for the host and keep theirs.
  const std::vector<double> paced = copies_of(0.05);
  REQUIRE(full.size() == paced.size());
  REQUIRE(full.size() >= 8);  // 5 units forward and backward, some with no FSDP2 copy
  int hidden = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    CHECK(full[i] > 0);
    CHECK(paced[i] <= full[i]);
    hidden += paced[i] == 0;
  }
  CHECK(hidden >= 6);  // 3 blocks x (forward all-gather copy + backward reduce-scatter copy)
  CHECK(hidden < static_cast<int>(full.size()));
}
