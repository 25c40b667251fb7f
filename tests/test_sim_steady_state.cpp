// Steps simulated back to back (simulation.steps, sim/step_program.hpp): the program holds each
// step's ops and launches once per step, a forward collective of step t+1 waits for step t's
// update of its parameters on its rank (an owner's post-step broadcast starts when the owner has
// updated that matrix), the reported figures are the last step's period, and the period stops
// changing once the pipeline is full.
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"

// One default-constructed RunOptions passed by reference (GCC 12: see test_sim_sharded_ns.cpp).
static const dmuon::sim::RunOptions kRunDefaults;

using namespace dmuon;

namespace {

// Two blocks with 2048 x 8192 MLP matrices on 2 nodes x 4 A800s: owners' broadcasts cross nodes.
Scenario two_nodes(int steps) {
  return parse_scenario(
      "name: steady\n"
      "model:\n  name: small\n  transformer: {hidden: 2048, layers: 2, heads: 16, ffn: 8192, vocab: 4096}\n"
      "optimizer: {preset: torch}\n"
      "cluster:\n  nodes: 2\n  gpus_per_node: 4\n  gpu: a800-sxm4-80gb\n  gpu_memory_GiB: 80\n"
      "  nvlink: {bw_GBps: 200, latency_us: 3.4, efficiency: 0.8}\n"
      "  network: {nics_per_node: 4, nic_bw_Gbps: 200, latency_us: 14, efficiency: 0.96}\n"
      "training: {seq_len: 1024, micro_batch: 1, mfu: 0.4, peak_tflops: 312}\n"
      "simulation: {steps: " + std::to_string(steps) + "}\n",
      "steady.yaml");
}

sim::StepProgram program(const Scenario& s, Strategy strategy, int steps) {
  const Routing routing = route_parameters(s.model, s.routing);
  const CostModel cost = sim::scenario_cost_model(s);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, {});
  sim::ProgramOptions o;
  o.steps = steps;
  return sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, o);
}

}  // namespace

TEST_CASE("simulation.steps is read and checked", "[sim][steady]") {
  CHECK(two_nodes(3).sim_steps == 3);
  CHECK(parse_scenario("name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 1, heads: 1, ffn: 64, vocab: 8}}\n"
                       "cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}\n", "x.yaml").sim_steps == 2);
  for (const std::string bad : {"0", "9", "two"}) {
    INFO(bad);
    try {
      parse_scenario("name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 1, heads: 1, ffn: 64, vocab: 8}}\n"
                     "cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}\nsimulation: {steps: " + bad + "}\n", "x.yaml");
      FAIL("accepted simulation.steps: " << bad);
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("steps") != std::string::npos);
    }
  }
}

TEST_CASE("each step's ops and launches are repeated; the next step's forward waits for this step's update",
          "[sim][steady]") {
  const Scenario s = two_nodes(2);
  const sim::StepProgram one = program(s, Strategy::owner_striped, 1);
  const sim::StepProgram two = program(s, Strategy::owner_striped, 2);
  REQUIRE(two.steps == 2);
  REQUIRE(two.collectives.size() == 2 * one.collectives.size());
  CHECK(two.last_step_collectives == one.collectives.size());
  int waits = 0, run_ahead_waits = 0;
  for (std::size_t r = 0; r < two.ranks.size(); ++r) {
    const auto& a = one.ranks[r];
    const auto& b = two.ranks[r];
    REQUIRE(b.size() == 2 * a.size());
    REQUIRE(two.last_step_begin.at(r) == a.size());
    const int n = static_cast<int>(a.size());
    for (int i = 0; i < n; ++i) {
      const sim::SimOp& first = b[static_cast<std::size_t>(i)];
      const sim::SimOp& second = b[static_cast<std::size_t>(n + i)];
      CHECK(first.deps == a[static_cast<std::size_t>(i)].deps);  // step 1 as a lone step
      if (first.collective >= 0) {
        CHECK(second.collective == first.collective + static_cast<int>(one.collectives.size()));
      }
      for (int d : second.deps) {
        if (d >= n) continue;  // within step 2
        // A dependency on step 1: only a forward collective has one, on an optimizer op.
        ++waits;
        CHECK(second.collective >= 0);
        CHECK(second.phase == Phase::forward);
        CHECK(b[static_cast<std::size_t>(d)].phase == Phase::optimizer);
        if (two.collectives[static_cast<std::size_t>(second.collective)].run_ahead) ++run_ahead_waits;
      }
    }
  }
  CHECK(waits > 0);
  CHECK(run_ahead_waits > 0);  // the owners' post-step broadcasts wait for their matrices' updates
}

TEST_CASE("the reported step is the last one's period, and it is steady after two steps", "[sim][steady]") {
  for (Strategy strategy : {Strategy::adamw, Strategy::dedicated, Strategy::owner_striped}) {
    INFO(to_string(strategy));
    const auto r1 = sim::run_strategy(two_nodes(1), strategy, sim::scenario_cost_model(two_nodes(1)), kRunDefaults);
    const auto r2 = sim::run_strategy(two_nodes(2), strategy, sim::scenario_cost_model(two_nodes(2)), kRunDefaults);
    const auto r3 = sim::run_strategy(two_nodes(3), strategy, sim::scenario_cost_model(two_nodes(3)), kRunDefaults);
    CHECK(r1.step_s > 0);
    // A period, not the time since the first step began.
    CHECK(r2.step_s < 1.5 * r1.step_s);
    CHECK(r3.step_s == Approx(r2.step_s).epsilon(1e-9));
    CHECK(r3.outcome.collectives.size() == r1.outcome.collectives.size());
  }
}
