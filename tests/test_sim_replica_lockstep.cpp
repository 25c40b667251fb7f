// Replica lockstep (sim/replica_lockstep.hpp): a folded program whose replicas run at replica 0's
// dates is simulated on replica 0's GPUs alone, with every outcome equal to simulating every GPU;
// a program where that does not hold (a replica spanning nodes, a shared collective on a copied
// collective's NVLink ports) is named and simulated GPU by GPU.
#include <fstream>
#include <sstream>
#include <string>

#include "catch_compat.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/replica_lockstep.hpp"
#include "sim/simulator.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"
#include "sim/topology.hpp"
#include "sim_test_support.hpp"
#include "test_temp_dir.hpp"

using namespace dmuon;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Scenario scenario(int nodes, int gpus, bool z3) { return simtest::replica_scenario(nodes, gpus, z3, false); }

// The program as run_strategy simulates it: Plan and program kept folded, two steps.
sim::StepProgram folded_program(const Scenario& s, Strategy strategy, const Mesh& mesh, const CostModel& cost) {
  const Routing routing = route_parameters(s.model, s.routing);
  StepPlanOptions po;
  po.plan.keep_folded = true;
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, strategy, mesh, cost, po);
  sim::ProgramOptions o;
  o.steps = 2;
  o.keep_folded = true;
  sim::StepProgram prog = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, o);
  sim::apply_measured_collectives(prog, cost, static_cast<int>(s.cluster.gpus_per_node));
  return prog;
}

sim::SimCollective collective(std::vector<int> members, std::string group) {
  sim::SimCollective c;
  c.call.members = std::move(members);
  c.group = std::move(group);
  c.label = group + " op";
  return c;
}

}  // namespace

TEST_CASE("replicas in lockstep simulate to every GPU's dates", "[sim][replica]") {
  const std::string calibration = std::string(DMUON_SOURCE_DIR) + "/scenarios/calibration/h100-sxm-x2.yaml";
  struct Case {
    int nodes, gpus;
    bool z3, calibrated;
    SimMode mode;
  };
  // The calibration brings the host issue model, measured collective curves and both slowdowns
  // of compute and NCCL beside each other: every per-GPU coupling the runner has.
  for (const Case c : {Case{3, 4, false, false, SimMode::fast}, Case{4, 2, true, true, SimMode::fast},
                       Case{3, 4, true, true, SimMode::fast}, Case{3, 2, false, false, SimMode::flows}}) {
    const Scenario s = scenario(c.nodes, c.gpus, c.z3);
    const CostModel cost = sim::scenario_cost_model(s, c.calibrated ? calibration : "");
    const sim::Topology topo(s.cluster);
    for (Strategy strategy : {Strategy::adamw, Strategy::ddp_redundant, Strategy::fsdp_gather, Strategy::zero1_a2a}) {
      INFO(c.nodes << " x " << c.gpus << (c.z3 ? " Z3" : "") << (c.calibrated ? " calibrated " : " ")
                   << (c.mode == SimMode::flows ? "flows " : "fast ") << to_string(strategy));
      const sim::StepProgram prog = folded_program(s, strategy, mesh_for_cluster(s.cluster), cost);
      REQUIRE(prog.replicas == c.nodes);
      CHECK(sim::replica_lockstep_obstacle(prog, topo).empty());
      sim::SimOptions so;
      so.mode = c.mode;
      const sim::SimOutcome lockstep = sim::simulate(prog, s.cluster, so);
      so.lockstep_replicas = false;
      const sim::SimOutcome every = sim::simulate(prog, s.cluster, so);
      CHECK(lockstep.simulated_gpus == c.gpus);
      CHECK(every.simulated_gpus == c.nodes * c.gpus);
      REQUIRE(lockstep.optimizer_compute_s.size() == static_cast<std::size_t>(c.nodes * c.gpus));
      simtest::same_outcome(lockstep, every);
    }
  }
}

TEST_CASE("a trace of replicas in lockstep shows every traced GPU's own dates, as simulating every GPU does",
          "[sim][replica]") {
  const Scenario s = scenario(3, 2, true);
  const CostModel cost = sim::scenario_cost_model(s);
  const sim::StepProgram prog = folded_program(s, Strategy::fsdp_gather, mesh_for_cluster(s.cluster), cost);
  const std::string dir = dmuon::test::temp_dir().string();
  sim::SimOptions so;
  so.trace_nodes = 3;  // replicas 1 and 2 read replica 0's dates
  so.trace_file = dir + "/lockstep.json";
  REQUIRE(sim::simulate(prog, s.cluster, so).simulated_gpus == 2);
  so.lockstep_replicas = false;
  so.trace_file = dir + "/every.json";
  REQUIRE(sim::simulate(prog, s.cluster, so).simulated_gpus == 6);
  const std::string lockstep = read(dir + "/lockstep.json");
  CHECK(lockstep.size() > 1000);
  CHECK(lockstep == read(dir + "/every.json"));
}

TEST_CASE("a replica spanning nodes is not in lockstep: every GPU is simulated", "[sim][replica]") {
  const Scenario s = scenario(4, 2, false);  // replicas of two nodes: their shard collectives use NICs and spine
  const CostModel cost = sim::scenario_cost_model(s);
  const sim::StepProgram prog = folded_program(s, Strategy::fsdp_gather, Mesh{2, 4}, cost);
  REQUIRE(prog.replicas == 2);
  const std::string why = sim::replica_lockstep_obstacle(prog, sim::Topology(s.cluster));
  CHECK(why.find("spans nodes") != std::string::npos);
  CHECK(why.find("shard[0]") != std::string::npos);
  const sim::SimOutcome o = sim::simulate(prog, s.cluster, {});
  CHECK(o.simulated_gpus == 8);
}

TEST_CASE("the lockstep rules: unfolded programs, shared collectives on copied NVLink ports, uneven members",
          "[sim][replica]") {
  const Scenario two = scenario(2, 2, false);  // replica = node
  const sim::Topology topo(two.cluster);
  sim::StepProgram prog;
  prog.ranks.resize(2);
  prog.collectives_per_step = 4;
  CHECK(sim::replica_lockstep_obstacle(prog, topo) == "the program is not folded");
  prog.replicas = 2;
  prog.shard = 2;
  prog.replica_list = {0, 0};    // both replicas run replica 0's lists
  prog.copy_position = {-1, 0};  // replica 1 is replica 0's first copy
  // shard[0] copied to shard[1] (collective 1); replicate[0] shared, one member per node: in lockstep.
  prog.collectives = {collective({0, 1}, "shard[0]"), collective({2, 3}, "shard[1]"), collective({0, 2}, "replicate[0]"),
                      collective({1, 3}, "replicate[1]")};
  prog.replica_copies = {{1}, {}, {}, {}};
  CHECK(sim::replica_lockstep_obstacle(prog, topo).empty());
  // A world all-reduce routes over the NVLink ports shard[0] uses.
  prog.collectives[2] = collective({0, 1, 2, 3}, "world");
  CHECK(sim::replica_lockstep_obstacle(prog, topo).find("'world' is shared and routes over NVLink ports") != std::string::npos);
  // The same beside a copied collective of one GPU: no NVLink used, in lockstep.
  prog.collectives[0] = collective({0}, "self[0]");
  prog.collectives[1] = collective({2}, "self[1]");
  CHECK(sim::replica_lockstep_obstacle(prog, topo).empty());
  // A shared collective with two members in replica 0 and one in replica 1.
  prog.collectives[3] = collective({0, 1, 3}, "odd");
  CHECK(sim::replica_lockstep_obstacle(prog, topo).find("as many members in every replica") != std::string::npos);
  // One with members in replica 1 only, which is no template: nothing would run it.
  prog.collectives[3] = collective({2, 3}, "lost");
  CHECK(sim::replica_lockstep_obstacle(prog, topo).find("of group 'lost' lies inside a replica that is no template") !=
        std::string::npos);

  // Two replicas of two GPUs on one node of four: a shared collective of ranks 0 and 2 uses the
  // NVLink ports of rank 0, which replica 0's copied collective uses.
  const Scenario one = scenario(1, 4, false);
  prog.collectives = {collective({0, 1}, "shard[0]"), collective({2, 3}, "shard[1]"), collective({0, 2}, "replicate[0]"),
                      collective({1, 3}, "replicate[1]")};
  CHECK(sim::replica_lockstep_obstacle(prog, sim::Topology(one.cluster)).find("'replicate[0]' is shared and routes") !=
        std::string::npos);
}
