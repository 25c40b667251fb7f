// The simulator prices sharded Newton-Schulz (core/plan/ns_sharding.hpp): every member runs its share
// of the flops and takes part in the call's all-reduces on the node's NVLink, on its compute
// stream; a scenario whose MLP matrices dominate the optimizer gets a shorter step with it.
#include <string>

#include "catch_compat.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"

// One default-constructed RunOptions passed by reference: a `{}` temporary there makes GCC 12
// warn of an uninitialized std::string inside it (-Wmaybe-uninitialized, a false positive).
static const dmuon::sim::RunOptions kRunDefaults;

using namespace dmuon;

namespace {

// Three 16384 x 1024 MLP matrices (standard NS; stored tall, so a member's columns of the wide
// orientation are rows of the matrix: one region, ns_shard_by_stored_rows) and little else on
// 2 x 4 A800s. (A transformer's down_proj is stored wide, 1024 x 16384: sharded, its member would
// launch per row, and the planner prices that and leaves it whole.)
Scenario wide_mlp(bool sharded, const std::string& split = "cheaper") {
  return parse_scenario(
      "name: wide-mlp\n"
      "model:\n  name: wide\n  dtype: bf16\n  params:\n"
      "    - {name: embed.weight, shape: [1000, 1024], layer: -1}\n"
      "    - {name: layers.0.mlp.gate_proj.weight, shape: [16384, 1024], layer: 0}\n"
      "    - {name: layers.0.mlp.up_proj.weight, shape: [16384, 1024], layer: 0}\n"
      "    - {name: layers.0.mlp.down_proj.weight, shape: [16384, 1024], layer: 0}\n"
      "optimizer: {preset: torch}\n"
      "cluster:\n  nodes: 2\n  gpus_per_node: 4\n  gpu: a800-sxm4-80gb\n  gpu_memory_GiB: 80\n"
      "  nvlink: {bw_GBps: 200, latency_us: 3.4, efficiency: 0.8}\n"
      "  network: {nics_per_node: 4, nic_bw_Gbps: 200, latency_us: 14, efficiency: 0.96}\n"
      "training: {seq_len: 1024, micro_batch: 1, mfu: 0.4, peak_tflops: 312}\n"
      "planner: {sharded_ns: " + std::string(sharded ? "true" : "false") + ", split_ns_products: " + split + "}\n",
      "wide-mlp.yaml");
}

}  // namespace

TEST_CASE("the simulator runs a sharded call's all-reduces on NVLink before its member's share", "[sim][sharded-ns]") {
  const Scenario s = wide_mlp(true);
  const Routing routing = route_parameters(s.model, s.routing);
  StepPlanOptions o;
  o.node_link = {200 * 0.8, 3.4};
  const CostModel cost = sim::scenario_cost_model(s);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::owner_striped, mesh_for_cluster(s.cluster), cost, o);
  const sim::StepProgram prog = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training);
  const double m = 1024;
  int norms = 0, products = 0;
  for (const auto& c : prog.collectives) {
    if (c.label.rfind("NS ", 0) != 0) continue;
    REQUIRE(c.label.rfind("NS product gather ", 0) != 0);  // nothing split here
    CHECK(c.call.kind == OpKind::all_reduce);
    CHECK(c.stream == sim::kComputeStream);
    CHECK(c.call.members.size() >= 2);
    const bool norm = c.label.rfind("NS norm ", 0) == 0;
    CHECK(c.call.bytes == (norm ? 8.0 : m * m * kNsAllReduceBytesPerElement));
    norms += norm;
    products += !norm;
  }
  REQUIRE(norms >= 2);
  CHECK(products == norms * s.optimizer.muon.ns.steps);  // standard NS: one X X^T per iteration
  // A member's compute op is priced below the whole call and waits for the call's last all-reduce.
  const double whole = cost.ns_seconds(16384, 1024, NsKernel::standard, s.optimizer.muon.ns.compute_dtype,
                                       s.optimizer.muon.ns.steps, {}, 1);
  int members = 0;
  for (const auto& ops : prog.ranks) {
    for (const auto& op : ops) {
      if (op.category != "newton_schulz" || op.deps.empty() || ops[op.deps.back()].collective < 0) continue;
      ++members;
      // k >= 2 members: at most (2 alpha + 2) / (4 alpha + 2) = 0.515 of the call, alpha = 16.
      CHECK(op.seconds < 0.52 * whole);
    }
  }
  CHECK(members >= 2 * norms);
}

TEST_CASE("sharding the MLP matrices' Newton-Schulz shortens the simulated step", "[sim][sharded-ns]") {
  const auto on = sim::run_strategy(wide_mlp(true), Strategy::owner_striped, sim::scenario_cost_model(wide_mlp(true)), kRunDefaults);
  const auto off = sim::run_strategy(wide_mlp(false), Strategy::owner_striped, sim::scenario_cost_model(wide_mlp(false)), kRunDefaults);
  CHECK(on.optimizer_s < 0.8 * off.optimizer_s);
  CHECK(on.step_s < off.step_s);
}

TEST_CASE("a split call's all-gathers run on the group, in the number and size the cost model prices", "[sim][sharded-ns]") {
  const Scenario s = wide_mlp(true, "always");
  const Routing routing = route_parameters(s.model, s.routing);
  const CostModel cost = sim::scenario_cost_model(s);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::owner_striped, mesh_for_cluster(s.cluster), cost,
                                plan_options_for(s));
  const sim::StepProgram prog = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training);
  const NsConfig& ns = s.optimizer.muon.ns;
  int norms = 0, gathers = 0;
  for (const auto& c : prog.collectives) {
    if (c.label.rfind("NS norm ", 0) == 0) ++norms;
    if (c.label.rfind("NS product gather ", 0) != 0) continue;
    ++gathers;
    CHECK(c.call.kind == OpKind::all_gather);
    CHECK(c.stream == sim::kComputeStream);
    const int k = static_cast<int>(c.call.members.size());
    CHECK(c.call.bytes == Approx(ns_shard_comm(NsKernel::standard, 16384, 1024, ns.steps, {}, k).gather_bytes_each));
  }
  REQUIRE(norms >= 1);
  CHECK(gathers == norms * ns_split_gathers(NsKernel::standard, ns.steps, {}));
}
