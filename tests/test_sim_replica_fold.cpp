// Replica-symmetric Plans (core/plan/replica_symmetry.hpp) and the step program built from
// replica 0 alone (sim/replica_fold.hpp): the data-parallel strategies' Plans are marked and
// checked, a rank that breaks the symmetry is named, and the folded program is the program built
// rank by rank, field by field, across meshes, ZeRO-3 re-gathers, FSDP2 copies and a calibration
// (host issue model, measured collective curves).
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/replica_symmetry.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/replica_fold.hpp"
#include "sim/simulator.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;

namespace {

Scenario scenario(int nodes, int gpus, bool z3, bool copies) { return simtest::replica_scenario(nodes, gpus, z3, copies); }

struct Built {
  StepPlan step;
  sim::StepProgram folded, per_rank;
};

Built build(const Scenario& s, Strategy strategy, const CostModel& cost) {
  const Routing routing = route_parameters(s.model, s.routing);
  Built b{plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, {}), {}, {}};
  sim::ProgramOptions o;
  o.steps = 2;
  b.folded = sim::build_step_program(b.step.plan, s.model, routing, s.optimizer, cost, s.training, o);
  o.fold_replicas = false;
  b.per_rank = sim::build_step_program(b.step.plan, s.model, routing, s.optimizer, cost, s.training, o);
  const int gpus = static_cast<int>(s.cluster.gpus_per_node);
  sim::apply_measured_collectives(b.folded, cost, gpus);
  sim::apply_measured_collectives(b.per_rank, cost, gpus);
  return b;
}

void same_op(const sim::SimOp& a, const sim::SimOp& b) {
  CHECK(a.stream == b.stream);
  CHECK(a.phase == b.phase);
  CHECK(a.category == b.category);
  CHECK(a.label == b.label);
  CHECK(a.seconds == b.seconds);
  CHECK(a.collective == b.collective);
  CHECK(a.deps == b.deps);
  CHECK(a.source == b.source);
  CHECK(a.launches == b.launches);
  CHECK(a.host_s == b.host_s);
  CHECK(a.issue_clock == b.issue_clock);
  CHECK(a.issued_s == b.issued_s);
  CHECK(a.issued_end_s == b.issued_end_s);
  CHECK(a.producer == b.producer);
  CHECK(a.host_wait_s == b.host_wait_s);
}

void same_collective(const sim::SimCollective& a, const sim::SimCollective& b) {
  CHECK(a.call.kind == b.call.kind);
  CHECK(a.call.members == b.call.members);
  CHECK(a.call.bytes == b.call.bytes);
  CHECK(a.call.rooted == b.call.rooted);
  CHECK(a.call.transfers == b.call.transfers);
  CHECK(a.phase == b.phase);
  CHECK(a.stream == b.stream);
  CHECK(a.run_ahead == b.run_ahead);
  CHECK(a.label == b.label);
  CHECK(a.group == b.group);
  CHECK(a.merged == b.merged);
  CHECK(a.calls == b.calls);
  CHECK(a.pack_seconds == b.pack_seconds);
  CHECK(a.local_seconds == b.local_seconds);
  CHECK(a.measured_seconds == b.measured_seconds);
}

void same_program(const sim::StepProgram& a, const sim::StepProgram& b) {
  REQUIRE(a.ranks.size() == b.ranks.size());
  REQUIRE(a.collectives.size() == b.collectives.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    INFO("rank " << r);
    REQUIRE(a.ranks[r].size() == b.ranks[r].size());
    for (std::size_t i = 0; i < a.ranks[r].size(); ++i) {
      INFO("op " << i);
      same_op(a.ranks[r][i], b.ranks[r][i]);
    }
  }
  for (std::size_t c = 0; c < a.collectives.size(); ++c) {
    INFO("collective " << c);
    same_collective(a.collectives[c], b.collectives[c]);
  }
  CHECK(a.steps == b.steps);
  CHECK(a.last_step_begin == b.last_step_begin);
  CHECK(a.last_step_collectives == b.last_step_collectives);
  CHECK(a.fwd_bwd_compute_s == b.fwd_bwd_compute_s);
  CHECK(a.compute_source == b.compute_source);
  CHECK(a.optimizer_source == b.optimizer_source);
  CHECK(a.launches_note == b.launches_note);
}

const Strategy kSymmetric[] = {Strategy::adamw, Strategy::ddp_redundant, Strategy::fsdp_gather, Strategy::zero1_a2a};

}  // namespace

TEST_CASE("the data-parallel strategies' Plans are replica-symmetric; the owner strategies' are not",
          "[plan][replica]") {
  const Scenario s = scenario(3, 4, false, false);
  const CostModel cost = sim::scenario_cost_model(s);
  const Routing routing = route_parameters(s.model, s.routing);
  for (Strategy strategy : kSymmetric) {
    INFO(to_string(strategy));
    const StepPlan sp = plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, {});
    CHECK(sp.plan.replica_symmetric);
    CHECK_NOTHROW(check_replica_symmetric(sp.plan));
  }
  for (Strategy strategy : {Strategy::dedicated, Strategy::owner_striped}) {
    INFO(to_string(strategy));
    CHECK_FALSE(plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, {}).plan.replica_symmetric);
  }
  Scenario one = scenario(1, 4, false, false);  // one replica: nothing to fold
  CHECK_FALSE(plan_step(one.model, routing, one.optimizer, Strategy::adamw, mesh_for_cluster(one.cluster), cost, {}).plan.replica_symmetric);
}

TEST_CASE("a Plan marked replica-symmetric whose replica differs is refused with the rank named", "[plan][replica]") {
  const Scenario s = scenario(2, 4, false, false);
  const CostModel cost = sim::scenario_cost_model(s);
  const Routing routing = route_parameters(s.model, s.routing);
  StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::fsdp_gather, mesh_for_cluster(s.cluster), cost, {});
  Op& op = sp.plan.ranks.at(6).back();  // rank (1, 2)
  op.label += " (changed)";
  try {
    sp.plan.validate(s.model, routing);
    FAIL("validate accepted a replica that differs");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("rank 6") != std::string::npos);
    CHECK(what.find("replica-symmetric") != std::string::npos);
  }
  sp.plan.replica_symmetric = false;  // the same Plan, not marked: valid
  CHECK_NOTHROW(sp.plan.validate(s.model, routing));
}

TEST_CASE("validating replica 0 for a replica-symmetric Plan still finds what every rank would show", "[plan][replica]") {
  const Scenario s = scenario(2, 4, false, false);
  const CostModel cost = sim::scenario_cost_model(s);
  const Routing routing = route_parameters(s.model, s.routing);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster), cost, {});
  // The same change on ranks 1 and 5 (position 1 of both replicas): still replica-symmetric.
  {  // rank (r, 1) issues two collectives of its shard group in the other order: the group's order differs
    Plan p = sp.plan;
    for (int r : {1, 5}) {
      auto& ops = p.ranks[static_cast<std::size_t>(r)];
      std::size_t a = ops.size(), b = ops.size();
      for (std::size_t i = 0; i < ops.size() && b == ops.size(); ++i) {
        if (!is_collective(ops[i].kind) || ops[i].phase != Phase::forward) continue;
        (a == ops.size() ? a : b) = i;
      }
      REQUIRE(b < ops.size());
      std::swap(ops[a].collective, ops[b].collective);
      std::swap(ops[a].parts, ops[b].parts);
      std::swap(ops[a].label, ops[b].label);
    }
    CHECK_NOTHROW(check_replica_symmetric(p));
    CHECK_THROWS_AS(p.validate(s.model, routing), Error);
  }
  {  // rank (r, 1) drops its last op (an update): its shard of that parameter is updated by no rank
    Plan p = sp.plan;
    for (int r : {1, 5}) p.ranks[static_cast<std::size_t>(r)].pop_back();
    CHECK_NOTHROW(check_replica_symmetric(p));
    try {
      p.validate(s.model, routing);
      FAIL("validate accepted a Plan that leaves elements without an update");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("updated by no rank") != std::string::npos);
    }
  }
}

TEST_CASE("ReplicaMove moves a replica-0 collective's group, id, root and transfers", "[plan][replica]") {
  Plan plan;
  plan.mesh = {3, 2};
  plan.groups = {{"world", {0, 1, 2, 3, 4, 5}}, {"shard[0]", {0, 1}}, {"shard[1]", {2, 3}}, {"shard[2]", {4, 5}},
                 {"replicate[0]", {0, 2, 4}}};
  plan.ranks.resize(6);
  const ReplicaMove move(plan);
  CHECK(move.local(1));
  CHECK_FALSE(move.local(0));
  CHECK_FALSE(move.local(4));
  Op a2a;
  a2a.kind = OpKind::all_to_all;
  a2a.group = 1;
  a2a.collective = 10;
  a2a.root = 1;
  a2a.transfers = {{0, 1, {0, 0, 4}, {0, 0, 4}}};
  const Op moved = move.moved(a2a, 2);
  CHECK(moved.group == 3);
  CHECK(moved.collective == 12);
  CHECK(moved.root == 5);
  CHECK(moved.transfers.at(0).src == 4);
  CHECK(moved.transfers.at(0).dst == 5);
  Op shared = a2a;
  shared.group = 4;  // replicate[0] spans the replicas: the same collective everywhere
  CHECK(same_op(move.moved(shared, 2), shared));
  plan.groups.pop_back();
  plan.groups.pop_back();  // shard[2] gone: replica 2 has no copy of shard[0]
  CHECK_THROWS_AS(ReplicaMove(plan), Error);
}

TEST_CASE("the program folded from replica 0 is the program built rank by rank", "[sim][replica]") {
  const std::string calibration = std::string(DMUON_SOURCE_DIR) + "/scenarios/calibration/h100-sxm-x2.yaml";
  struct Case {
    int nodes, gpus;
    bool z3, copies, calibrated;
  };
  for (const Case c : {Case{2, 4, false, false, false}, Case{3, 3, true, false, false}, Case{4, 2, false, true, true},
                       Case{3, 4, true, true, true}}) {
    const Scenario s = scenario(c.nodes, c.gpus, c.z3, c.copies);
    const CostModel cost = sim::scenario_cost_model(s, c.calibrated ? calibration : "");
    for (Strategy strategy : kSymmetric) {
      INFO(c.nodes << " x " << c.gpus << (c.z3 ? " Z3" : "") << (c.copies ? " copies" : "") << (c.calibrated ? " calibrated" : "")
                   << " " << to_string(strategy));
      const Built b = build(s, strategy, cost);
      REQUIRE(b.step.plan.replica_symmetric);
      CHECK(b.folded.built_ranks == static_cast<std::size_t>(c.gpus));  // folded, not fallen back
      CHECK(b.per_rank.built_ranks == static_cast<std::size_t>(c.nodes * c.gpus));
      same_program(b.folded, b.per_rank);
    }
  }
}

TEST_CASE("a program kept folded simulates exactly as the program copied to every rank", "[sim][replica]") {
  const std::string calibration = std::string(DMUON_SOURCE_DIR) + "/scenarios/calibration/h100-sxm-x2.yaml";
  for (const bool calibrated : {false, true}) {
    const Scenario s = scenario(3, 4, calibrated, calibrated);
    const CostModel cost = sim::scenario_cost_model(s, calibrated ? calibration : "");
    const Routing routing = route_parameters(s.model, s.routing);
    for (Strategy strategy : {Strategy::fsdp_gather, Strategy::zero1_a2a}) {
      INFO((calibrated ? "calibrated " : "") << to_string(strategy));
      const StepPlan sp = plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, {});
      sim::ProgramOptions o;
      o.steps = 2;
      const sim::StepProgram copied = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, o);
      o.keep_folded = true;
      // From the Plan kept folded too (PlanOptions::keep_folded), as run_strategy builds it.
      StepPlanOptions po;
      po.plan.keep_folded = true;
      const StepPlan folded = plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost, po);
      REQUIRE(folded.plan.folded);
      const sim::StepProgram kept = sim::build_step_program(folded.plan, s.model, routing, s.optimizer, cost, s.training, o);
      o.fold_replicas = false;  // a folded Plan built rank by rank: unfolded first
      same_program(sim::build_step_program(folded.plan, s.model, routing, s.optimizer, cost, s.training, o), copied);
      REQUIRE(kept.replicas == 3);
      REQUIRE(kept.ranks.size() == 4);
      CHECK(kept.world() == copied.ranks.size());
      for (std::size_t r = 0; r < kept.world(); ++r) {
        REQUIRE(kept.ops(r).size() == copied.ranks[r].size());
        for (std::size_t i = 0; i < kept.ops(r).size(); ++i) {
          CHECK(kept.collective(r, kept.ops(r)[i].collective) == copied.ranks[r][i].collective);
        }
      }
      sim::SimOptions so;
      const sim::SimOutcome a = sim::simulate(kept, s.cluster, so), b = sim::simulate(copied, s.cluster, so);
      simtest::same_outcome(a, b);
    }
  }
}

TEST_CASE("ReplicaFold copies replica 0's collectives replica by replica and checks the launch order", "[sim][replica]") {
  Plan plan;
  plan.mesh = {3, 2};
  plan.groups = {{"world", {0, 1, 2, 3, 4, 5}}, {"shard[0]", {0, 1}}, {"shard[1]", {2, 3}}, {"shard[2]", {4, 5}}};
  plan.ranks.resize(6);
  sim::StepProgram prog;
  sim::SimCollective local, shared;
  local.call.members = {0, 1};
  local.call.rooted = {{1, 8.0}};
  local.group = "shard[0]";
  shared.call.members = {0, 1, 2, 3, 4, 5};
  shared.group = "world";
  sim::ReplicaFold fold(plan);
  REQUIRE(fold.templates() == std::vector<int>{0});
  // Replica 0 creates 0 and 2 local, 1 shared.
  REQUIRE(fold.each_replica(prog, [&](int t) {
    CHECK(t == 0);
    prog.collectives = {local, shared, local};
  }));
  REQUIRE(prog.collectives.size() == 7);  // replica 1: copies of 0 and 2 (3, 4); replica 2: 5, 6
  CHECK(fold.collective(0, 1) == 3);
  CHECK(fold.collective(2, 1) == 4);
  CHECK(fold.collective(0, 2) == 5);
  CHECK(fold.collective(2, 2) == 6);
  CHECK(fold.collective(1, 2) == 1);
  CHECK(prog.collectives[5].call.members == std::vector<int>{4, 5});
  CHECK(prog.collectives[5].call.rooted.at(0).first == 5);
  CHECK(prog.collectives[5].group == "shard[2]");
  std::set<std::pair<int, int>> edges{{0, 1}, {1, 2}};
  fold.add_edges(edges);
  CHECK(edges == std::set<std::pair<int, int>>{{0, 1}, {1, 2}, {3, 1}, {1, 4}, {5, 1}, {1, 6}});
  // Neighbours (0, 2) in order; their replica-2 copies (5, 6) out of order under these positions.
  std::vector<int> positions{0, 1, 2, 3, 4, 5, 6};
  CHECK(fold.order_kept({{0, 2}}, positions, 1));
  CHECK(fold.order_kept({{0, 2}}, positions, 2));
  std::swap(positions[5], positions[6]);
  CHECK(fold.order_kept({{0, 2}}, positions, 1));
  CHECK_FALSE(fold.order_kept({{0, 2}}, positions, 2));
  sim::SimOp op;
  op.collective = 2;
  CHECK(fold.moved({op}, 2).at(0).collective == 6);
  // Two groups of one name: a copy's group cannot be told, so nothing is folded.
  plan.groups.push_back({"shard[0]", {0, 2}});
  sim::ReplicaFold ambiguous(plan);
  sim::StepProgram again;
  CHECK_FALSE(ambiguous.each_replica(again, [&](int) { again.collectives = {local, shared, local}; }));
}

// The owner strategies' templates (Plan::replica_template): replicas holding no owner's work run
// the first one's lists. Their Plan kept folded unfolds to the Plan built rank by rank, the
// program folded from the templates is the program built rank by rank, and the lockstep over
// the templates' GPUs simulates every GPU's dates.
TEST_CASE("owner strategies: replicas without an owner's work fold onto a template, exactly", "[sim][replica]") {
  struct Case {
    int nodes, gpus, layers;
    bool z3;
  };
  std::size_t promoted = 0;  // replicas built from their template's classification (build_moved)
  for (const Case c : {Case{8, 4, 1, false}, Case{12, 4, 1, true}, Case{12, 2, 1, false}, Case{32, 2, 2, false}}) {
    const Scenario s = simtest::replica_scenario(c.nodes, c.gpus, c.z3, false, c.layers);
    const CostModel cost = sim::scenario_cost_model(s, "");
    const Routing routing = route_parameters(s.model, s.routing);
    const Mesh mesh = mesh_for_cluster(s.cluster);
    for (Strategy strategy : {Strategy::dedicated, Strategy::owner_striped}) {
      INFO(c.nodes << " x " << c.gpus << ", " << c.layers << " layer(s)" << (c.z3 ? " Z3 " : " ") << to_string(strategy));
      StepPlanOptions po;
      po.plan.keep_folded = true;
      const StepPlan folded = plan_step(s.model, routing, s.optimizer, strategy, mesh, cost, po);
      const StepPlan per_rank_plan = plan_step(s.model, routing, s.optimizer, strategy, mesh, cost, {});
      REQUIRE(folded.plan.folded);
      REQUIRE(folded.plan.replica_template.size() == static_cast<std::size_t>(c.nodes));
      int templates = 0;
      for (int rep = 0; rep < c.nodes; ++rep) templates += folded.plan.replica_template[static_cast<std::size_t>(rep)] == rep;
      CHECK(4 * (c.nodes - templates) >= c.nodes);  // at least a quarter of the replicas share
      CHECK_NOTHROW(folded.plan.validate(s.model, routing));
      const Plan every = unfolded(folded.plan);
      REQUIRE(every.ranks.size() == per_rank_plan.plan.ranks.size());
      for (std::size_t r = 0; r < every.ranks.size(); ++r) {
        REQUIRE(every.ranks[r].size() == per_rank_plan.plan.ranks[r].size());
        for (std::size_t i = 0; i < every.ranks[r].size(); ++i) CHECK(same_op(every.ranks[r][i], per_rank_plan.plan.ranks[r][i]));
      }
      sim::ProgramOptions o;
      o.steps = 2;
      o.keep_folded = true;
      const sim::StepProgram kept = sim::build_step_program(folded.plan, s.model, routing, s.optimizer, cost, s.training, o);
      o.keep_folded = false;
      const sim::StepProgram copied = sim::build_step_program(folded.plan, s.model, routing, s.optimizer, cost, s.training, o);
      o.fold_replicas = false;
      const sim::StepProgram reference =
          sim::build_step_program(per_rank_plan.plan, s.model, routing, s.optimizer, cost, s.training, o);
      REQUIRE(kept.replicas == c.nodes);
      promoted += kept.promoted_replicas;
      CHECK(kept.ranks.size() == (static_cast<std::size_t>(templates) + kept.promoted_replicas) * static_cast<std::size_t>(c.gpus));
      same_program(copied, reference);
      sim::SimOptions so;
      const sim::SimOutcome a = sim::simulate(kept, s.cluster, so), b = sim::simulate(reference, s.cluster, so);
      CHECK(a.simulated_gpus == static_cast<int>(kept.ranks.size()));
      CHECK(b.simulated_gpus == c.nodes * c.gpus);
      simtest::same_outcome(a, b);
    }
  }
  CHECK(promoted > 0);  // dedicated's last replicas sort a reduce-scatter after the shared reduce
}

TEST_CASE("a template standing for several replicas holding an owner's work is refused", "[plan][replica]") {
  const Scenario s = simtest::replica_scenario(8, 4, false, false, 1);
  const CostModel cost = sim::scenario_cost_model(s, "");
  const Routing routing = route_parameters(s.model, s.routing);
  StepPlanOptions po;
  po.plan.keep_folded = true;
  Plan plan = plan_step(s.model, routing, s.optimizer, Strategy::dedicated, mesh_for_cluster(s.cluster), cost, po).plan;
  REQUIRE_FALSE(plan.replica_template.empty());
  const int free = plan.replica_template.back();  // the template of the last replica stands for several
  REQUIRE(free != 7);
  int owner = -1;
  for (int r = 0; r < 32 && owner < 0; ++r) {
    for (const Op& op : plan.ranks[static_cast<std::size_t>(r)]) {
      if (op.kind == OpKind::newton_schulz) owner = r;
    }
  }
  REQUIRE(owner >= 0);
  for (const Op& op : plan.ranks[static_cast<std::size_t>(owner)]) {
    if (op.kind != OpKind::newton_schulz) continue;
    Op moved = op;
    moved.deps.clear();
    plan.ranks[static_cast<std::size_t>(free * 4)].push_back(moved);
    break;
  }
  try {
    plan.validate(s.model, routing);
    FAIL("accepted an owner's work in a shared template");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("an owner's work in template replica " + std::to_string(free)) != std::string::npos);
  }
}
