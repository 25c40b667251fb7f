// The simulator's fast paths predict exactly what the per-rank reference does: the runner that
// waits on one dependency per stream and wakes only the stream that waits (sim/runner.hpp)
// against SimOptions::reference_runner, for every strategy of the flagship scenario at 4 nodes
// (32 GPUs, two of them on a 2-D mesh), in both modes. And the host-memory check refuses a
// simulation that would not fit before starting it, naming the estimate.
#include <algorithm>
#include <cmath>
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "sim/memory_estimate.hpp"
#include "sim/strategy_run.hpp"
#include "sim/topology.hpp"

using namespace dmuon;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-12}); }

sim::StrategyResult run(const Scenario& s, Strategy strategy, SimMode mode, bool reference) {
  sim::RunOptions o;
  o.sim.mode = mode;
  o.sim.reference_runner = reference;
  return sim::run_strategy(s, strategy, sim::scenario_cost_model(s), o);
}

void require_identical(const sim::SimOutcome& fast, const sim::SimOutcome& ref) {
  REQUIRE(close(fast.step_s, ref.step_s));
  REQUIRE(close(fast.grads_ready_s, ref.grads_ready_s));
  REQUIRE(close(fast.critical_compute_busy_s, ref.critical_compute_busy_s));
  REQUIRE(fast.optimizer_compute_s.size() == ref.optimizer_compute_s.size());
  for (std::size_t r = 0; r < fast.optimizer_compute_s.size(); ++r) {
    REQUIRE(close(fast.optimizer_compute_s[r], ref.optimizer_compute_s[r]));
  }
  REQUIRE(fast.critical_seconds_by_source.size() == ref.critical_seconds_by_source.size());
  for (const auto& [source, seconds] : ref.critical_seconds_by_source) {
    REQUIRE(close(fast.critical_seconds_by_source.at(source), seconds));
  }
  REQUIRE(fast.collectives.size() == ref.collectives.size());
  for (std::size_t c = 0; c < fast.collectives.size(); ++c) {
    INFO("collective " << c << " " << ref.collectives[c].label);
    REQUIRE(fast.collectives[c].algorithm == ref.collectives[c].algorithm);
    REQUIRE(close(fast.collectives[c].start_s, ref.collectives[c].start_s));
    REQUIRE(close(fast.collectives[c].end_s, ref.collectives[c].end_s));
  }
}

Scenario flagship(int nodes) {
  return load_scenario_with_overrides(std::string(DMUON_SOURCE_DIR) + "/scenarios/16node.yaml",
                                      {{"cluster.nodes", std::to_string(nodes)}});
}

}  // namespace

TEST_CASE("the fast runner predicts what the per-rank reference runner does, every strategy", "[sim][fast_path]") {
  const Scenario s = flagship(4);
  for (Strategy strategy : s.strategies) {
    for (SimMode mode : {SimMode::fast, SimMode::flows}) {
      if (mode == SimMode::flows && strategy != Strategy::dedicated && strategy != Strategy::adamw) continue;
      INFO(to_string(strategy) << " " << to_string(mode));
      const auto fast = run(s, strategy, mode, false);
      const auto ref = run(s, strategy, mode, true);
      REQUIRE(fast.step_s > 0);
      require_identical(fast.outcome, ref.outcome);
    }
  }
}

TEST_CASE("a simulation whose memory estimate exceeds the limit is refused up front", "[sim][memory]") {
  const Scenario s = flagship(128);
  const Routing routing = route_parameters(s.model, s.routing);
  const sim::SimMemoryEstimate e = sim::estimate_sim_memory(s, Strategy::adamw, routing);
  REQUIRE(e.gpus == 1024);
  REQUIRE(e.params > 0);
  REQUIRE(e.matrices == 0);  // AdamW: no Muon matrix
  // The estimate grows with the cluster: 1,024 GPUs need more than 64.
  REQUIRE(e.bytes > sim::estimate_sim_memory(flagship(8), Strategy::adamw, routing).bytes);
  // ... and with the steps simulated (the step program is repeated), by the strategy's trait.
  Scenario one = s, three = s;
  one.sim_steps = 1;
  three.sim_steps = 3;
  const double per_step = double(e.gpus) * double(e.params) * traits(Strategy::adamw).sim_host_bytes_per_param_per_extra_step_folded;
  REQUIRE(e.folded);  // several nodes: the replicas are folded, and priced so
  const sim::SimMemoryEstimate per_rank = sim::estimate_sim_memory(s, Strategy::adamw, routing, false);
  CHECK_FALSE(per_rank.folded);
  CHECK(per_rank.bytes > 10 * e.bytes);
  CHECK_FALSE(sim::estimate_sim_memory(s, Strategy::dedicated, routing).folded);  // owners differ by replica
  // ... but replicas holding no owner's work fold onto a template once they are at least a
  // quarter of the replicas: not at 128 nodes (540 matrices may sit on every node), at 2,048 yes,
  // the templates' GPUs priced as unfolded and the others' copies apart.
  CHECK(sim::estimate_sim_memory(s, Strategy::dedicated, routing).templates == 0);
  const Scenario big = flagship(2048);
  const sim::SimMemoryEstimate owner = sim::estimate_sim_memory(big, Strategy::owner_striped, routing);
  const sim::SimMemoryEstimate owner_per_rank = sim::estimate_sim_memory(big, Strategy::owner_striped, routing, false);
  CHECK(owner.templates == 543);  // the matrices, the owner-free template, two promoted
  CHECK(owner_per_rank.templates == 0);
  const double gpus = 16384, built = 543 * 8, per_gpu = double(owner.params) * owner.bytes_per_param +
                                                       double(owner.matrices) * owner.bytes_per_matrix;
  CHECK(owner.bytes - owner_per_rank.bytes ==
        Approx((gpus - built) * (double(owner.params) * owner.bytes_per_param_copied - per_gpu)));
  CHECK(e.bytes - sim::estimate_sim_memory(one, Strategy::adamw, routing).bytes == Approx(per_step));
  CHECK(sim::estimate_sim_memory(three, Strategy::adamw, routing).bytes - e.bytes == Approx(per_step));
  // Refused before anything is built: a 1,024-GPU run under a 0.1 GiB limit fails at once with the
  // estimate in the message.
  REQUIRE(e.bytes > 0.1 * 1024 * 1024 * 1024);
  sim::RunOptions o;
  o.host_memory_limit_bytes = 0.1 * 1024 * 1024 * 1024;
  o.host_memory_limit_source = "test limit";
  try {
    sim::run_strategy(s, Strategy::adamw, sim::scenario_cost_model(s), o);
    FAIL("no error");
  } catch (const Error& err) {
    const std::string m = err.what();
    INFO(m);
    REQUIRE(m.find("adamw") != std::string::npos);
    REQUIRE(m.find("1024 GPUs") != std::string::npos);
    REQUIRE(m.find("estimated") != std::string::npos);
    REQUIRE(m.find("0.1 GiB test limit") != std::string::npos);
    REQUIRE(m.find("B platform") != std::string::npos);
  }
  try {  // the templated estimate says so
    sim::check_sim_memory(owner, Strategy::owner_striped, 0.1 * 1024 * 1024 * 1024, "test limit");
    FAIL("no error");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("up to 543 template replicas' GPUs") != std::string::npos);
  }
  // run_strategies keeps the refusal as that strategy's error and runs nothing for it.
  const auto outcomes = sim::run_strategies(s, {Strategy::adamw}, sim::scenario_cost_model(s), {o}, 1);
  REQUIRE(!outcomes.at(0).result);
  REQUIRE(outcomes.at(0).error.find("estimated") != std::string::npos);
  // 8,192 GPUs are a cluster the simulator can hold (its platform has no per-pair routes), left
  // to the estimate; past sim/topology's 1,048,576 GPUs a cluster is refused before planning,
  // whatever the limit.
  CHECK_NOTHROW(sim::Topology(flagship(1024).cluster));
  sim::RunOptions unlimited;
  const Scenario huge = flagship(131073);  // x 8 GPUs = 1,048,584
  try {
    sim::run_strategy(huge, Strategy::adamw, sim::scenario_cost_model(huge), unlimited);
    FAIL("no error");
  } catch (const Error& err) {
    REQUIRE(std::string(err.what()).find("1048584 GPUs") != std::string::npos);
  }
  // Under the limit nothing is refused.
  REQUIRE_NOTHROW(sim::check_sim_memory(e, Strategy::adamw, e.bytes * 1.01, "test limit"));
  REQUIRE_THROWS_AS(sim::check_sim_memory(e, Strategy::adamw, e.bytes * 0.99, "test limit"), Error);
}
