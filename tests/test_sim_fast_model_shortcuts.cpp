// The fast model's two shortcuts past SimGrid 3.32's costs, each of which must move no date:
// the skipped selective-update marking walk (sim/l07_selective_update.hpp) and collectives'
// parallel tasks over proxy hosts (sim/proxy_task.hpp). Every strategy on a mesh of 8 nodes x 4
// GPUs (owners, replicate-group collectives across nodes, ZeRO-3 re-gathers) and concurrent
// all-reduces sharing NIC ports and the spine are simulated with each shortcut and with neither
// (SimGrid's walk kept, every task over its GPUs' dense matrix): the same dates, exactly.
#include <string>

#include "catch_compat.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/l07_selective_update.hpp"
#include "sim/simulator.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;

namespace {

sim::SimOutcome run(const sim::StepProgram& p, const ClusterSpec& c, bool skip_walk, bool proxies) {
  sim::SimOptions o;
  o.keep_marking_walk = !skip_walk;
  o.proxy_tasks = proxies;
  return sim::simulate(p, c, o);
}

// The default (both shortcuts), each alone, and the reference (neither): all the same.
void same_every_way(const sim::StepProgram& p, const ClusterSpec& c) {
  const sim::SimOutcome reference = run(p, c, false, false);
  REQUIRE(reference.collectives.size() > 0);
  for (const auto& [skip_walk, proxies] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
    INFO((skip_walk ? "walk skipped" : "walk kept") << ", " << (proxies ? "proxy tasks" : "dense tasks"));
    simtest::same_outcome(run(p, c, skip_walk, proxies), reference);
  }
}

}  // namespace

TEST_CASE("The marking walk is interposed, and skipping it is reversible", "[sim]") {
  // Fails where the executable does not export the walk (sim/CMakeLists.txt's link option) or
  // libsimgrid no longer defines it: the library would then walk, correct but slow.
  REQUIRE(sim::marking_walk_interposed());
  CHECK(sim::skip_marking_walk(true));
  CHECK_FALSE(sim::skip_marking_walk(false));
}

TEST_CASE("The fast model's shortcuts move no date of any strategy's step", "[sim]") {
  for (const bool z3 : {false, true}) {
    const Scenario s = simtest::replica_scenario(8, 4, z3, false);
    const CostModel cost = sim::scenario_cost_model(s, "");
    const Routing routing = route_parameters(s.model, s.routing);
    for (Strategy strategy : {Strategy::adamw, Strategy::ddp_redundant, Strategy::fsdp_gather, Strategy::zero1_a2a,
                              Strategy::dedicated, Strategy::owner_striped}) {
      INFO(to_string(strategy) << (z3 ? " ZeRO-3" : ""));
      const StepPlan sp = plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, {});
      sim::ProgramOptions po;
      po.steps = 2;
      same_every_way(sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, po), s.cluster);
    }
  }
}

TEST_CASE("The fast model's shortcuts move no date of concurrent tasks sharing NIC ports and the spine", "[sim]") {
  // Four all-reduces across 4 nodes at once, of different sizes: two on rail 0, one on rail 1,
  // one with a member on each rail (its ring crosses the spine). The tasks share ports and end
  // at different times, so rates change mid-flight.
  ClusterSpec c = simtest::cluster(4, 2);
  c.network->nics_per_node = 2;
  c.network->spine_oversubscription = 4;
  sim::StepProgram p;
  p.ranks.resize(8);
  const std::vector<std::vector<int>> groups = {{0, 2, 4, 6}, {0, 2, 4, 6}, {1, 3, 5, 7}, {0, 3, 4, 7}};
  const std::vector<double> bytes = {64e6, 8e6, 32e6, 16e6};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    sim::SimCollective sc;
    sc.call.kind = OpKind::all_reduce;
    sc.call.members = groups[g];
    sc.call.bytes = bytes[g];
    sc.calls = 1;
    sc.group = "g" + std::to_string(g);
    p.collectives.push_back(sc);
    for (int r : groups[g]) {
      sim::SimOp op;
      op.stream = g % 2 == 1 ? sim::kGatherStream : sim::kComputeStream;
      op.category = "all_reduce";
      op.collective = static_cast<int>(g);
      p.ranks[static_cast<std::size_t>(r)].push_back(op);
    }
  }
  same_every_way(p, c);
  const sim::SimOutcome o = run(p, c, true, true);
  REQUIRE(o.collectives.size() == 4);
  // The small one on the shared rail ends before the large one it shares the rail with.
  CHECK(o.collectives[1].end_s < o.collectives[0].end_s);
}
