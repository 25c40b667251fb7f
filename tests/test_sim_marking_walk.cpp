// The fast model skips SimGrid's selective-update marking walk (sim/l07_selective_update.hpp):
// this executable's definition takes libsimgrid's calls, and every date of a simulation is the
// same with the library's walk kept: each strategy on a mesh of 8 nodes x 4 GPUs (owners, shared
// replicate-group collectives across nodes, ZeRO-3 re-gathers) and concurrent all-reduces sharing
// NIC ports.
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

sim::SimOutcome run(const sim::StepProgram& p, const ClusterSpec& c, bool keep_walk) {
  sim::SimOptions o;
  o.keep_marking_walk = keep_walk;
  return sim::simulate(p, c, o);
}

}  // namespace

TEST_CASE("The marking walk is interposed, and skipping it is reversible", "[sim]") {
  // Fails where the executable does not export the walk (sim/CMakeLists.txt's link option) or
  // libsimgrid no longer defines it: the library would then walk, correct but slow.
  REQUIRE(sim::marking_walk_interposed());
  CHECK(sim::skip_marking_walk(true));
  CHECK_FALSE(sim::skip_marking_walk(false));
}

TEST_CASE("Skipping the marking walk moves no date of a fast-mode simulation", "[sim]") {
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
      const sim::StepProgram p = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, po);
      const sim::SimOutcome skipped = run(p, s.cluster, false), walked = run(p, s.cluster, true);
      REQUIRE(skipped.collectives.size() > 0);
      simtest::same_outcome(skipped, walked);
    }
  }
}

TEST_CASE("Skipping the marking walk moves no date of concurrent tasks sharing NIC ports", "[sim]") {
  // Three all-reduces across 4 nodes at once, two of them on the same rail, of different sizes:
  // the tasks share NIC ports and end at different times, so rates change mid-flight.
  const ClusterSpec c = simtest::cluster(4, 2);
  sim::StepProgram p;
  p.ranks.resize(8);
  const std::vector<std::vector<int>> groups = {{0, 2, 4, 6}, {0, 2, 4, 6}, {1, 3, 5, 7}};
  const std::vector<double> bytes = {64e6, 8e6, 32e6};
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
      op.stream = g == 1 ? sim::kGatherStream : sim::kComputeStream;
      op.category = "all_reduce";
      op.collective = static_cast<int>(g);
      p.ranks[static_cast<std::size_t>(r)].push_back(op);
    }
  }
  const sim::SimOutcome skipped = run(p, c, false), walked = run(p, c, true);
  REQUIRE(skipped.collectives.size() == 3);
  // The small one on the shared rail ends first, and sharing slowed the large one.
  CHECK(skipped.collectives[1].end_s < skipped.collectives[0].end_s);
  simtest::same_outcome(skipped, walked);
}
