// Plans built from replica 0 (PlanOptions::fold_replicas, PlanWriter's replica-0 mode): for the
// data-parallel strategies, every op of every rank is the op of the Plan built rank by rank, over
// meshes with uneven shards and one GPU a node; a builder order the move cannot follow is refused.
#include <string>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/plan_writer.hpp"
#include "core/plan/replica_symmetry.hpp"
#include "core/plan/step_planner.hpp"

using namespace dmuon;

namespace {

// Two blocks whose 2048-row matrices split unevenly over 3 GPUs; an untied vocabulary of 4096.
Scenario scenario() {
  return parse_scenario(
      "name: fold\n"
      "model:\n  name: small\n  transformer: {hidden: 2048, layers: 2, heads: 16, ffn: 5632, vocab: 4096}\n"
      "optimizer: {preset: dmuon}\n"
      "cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}\n",
      "fold.yaml");
}

// An all-reduce of 8 elements, for the writer tests to place on any group.
Op small_all_reduce() {
  Op op;
  op.kind = OpKind::all_reduce;
  op.regions = {{0, 0, 8}};
  return op;
}

Plan planned(const Scenario& s, Strategy strategy, const Mesh& mesh, bool fold) {
  const Routing routing = route_parameters(s.model, s.routing);
  StepPlanOptions o;
  o.plan.fold_replicas = fold;
  return plan_step(s.model, routing, s.optimizer, strategy, mesh, CostModel(device_profile("h100-sxm", "gpu")), o).plan;
}

}  // namespace

TEST_CASE("a data-parallel Plan built from replica 0 is the Plan built rank by rank", "[plan][replica]") {
  const Scenario s = scenario();
  for (const Mesh mesh : {Mesh{2, 4}, Mesh{3, 3}, Mesh{4, 2}, Mesh{3, 1}}) {
    for (Strategy strategy : {Strategy::adamw, Strategy::ddp_redundant, Strategy::fsdp_gather, Strategy::zero1_a2a}) {
      INFO(mesh.to_string() << " " << to_string(strategy));
      const Plan folded = planned(s, strategy, mesh, true);
      const Plan per_rank = planned(s, strategy, mesh, false);
      CHECK(folded.replica_symmetric);
      CHECK(per_rank.replica_symmetric);
      CHECK(folded.matrix_owner == per_rank.matrix_owner);
      REQUIRE(folded.groups.size() == per_rank.groups.size());
      for (std::size_t g = 0; g < folded.groups.size(); ++g) CHECK(folded.groups[g].ranks == per_rank.groups[g].ranks);
      REQUIRE(folded.ranks.size() == per_rank.ranks.size());
      for (std::size_t r = 0; r < folded.ranks.size(); ++r) {
        INFO("rank " << r);
        REQUIRE(folded.ranks[r].size() == per_rank.ranks[r].size());
        for (std::size_t i = 0; i < folded.ranks[r].size(); ++i) {
          INFO("op " << i << " '" << per_rank.ranks[r][i].label << "'");
          CHECK(same_op(folded.ranks[r][i], per_rank.ranks[r][i]));
        }
      }
    }
  }
}

TEST_CASE("a Plan kept folded holds replica 0's lists, validates, and unfolds to the Plan built rank by rank",
          "[plan][replica]") {
  const Scenario s = scenario();
  const Routing routing = route_parameters(s.model, s.routing);
  for (Strategy strategy : {Strategy::fsdp_gather, Strategy::zero1_a2a}) {
    INFO(to_string(strategy));
    StepPlanOptions o;
    o.plan.keep_folded = true;
    const Mesh mesh{3, 3};
    const Plan folded = plan_step(s.model, routing, s.optimizer, strategy, mesh, CostModel(device_profile("h100-sxm", "gpu")), o).plan;
    CHECK(folded.folded);
    CHECK(folded.replica_symmetric);
    REQUIRE(folded.ranks.size() == 9);  // replica 0's lists, the others empty
    for (std::size_t r = 0; r < 9; ++r) CHECK(folded.ranks[r].empty() == (r >= 3));
    CHECK_NOTHROW(folded.validate(s.model, routing));
    const Plan every = unfolded(folded);
    const Plan per_rank = planned(s, strategy, mesh, false);
    CHECK_FALSE(every.folded);
    REQUIRE(every.ranks.size() == per_rank.ranks.size());
    for (std::size_t r = 0; r < every.ranks.size(); ++r) {
      REQUIRE(every.ranks[r].size() == per_rank.ranks[r].size());
      for (std::size_t i = 0; i < every.ranks[r].size(); ++i) CHECK(same_op(every.ranks[r][i], per_rank.ranks[r][i]));
    }
    Plan broken = folded;
    broken.ranks.pop_back();  // a folded Plan short of a rank
    CHECK_THROWS_AS(broken.validate(s.model, routing), Error);
    Plan filled = folded;
    filled.ranks[4] = filled.ranks[1];  // a folded Plan holding a list outside its templates
    CHECK_THROWS_AS(filled.validate(s.model, routing), Error);
  }
}

TEST_CASE("the replica-0 writer refuses a collective that is not the copy of the last replica-0 one", "[plan][replica]") {
  const Scenario s = scenario();
  const Routing routing = route_parameters(s.model, s.routing);
  const Mesh mesh{3, 2};
  const Op op = small_all_reduce();
  {
    PlanWriter w(Strategy::adamw, s.model, routing, mesh, true);
    CHECK_THROWS_AS(w.collective(w.shard_group(1), op), Error);  // nothing of replica 0 before it
  }
  {
    PlanWriter w(Strategy::adamw, s.model, routing, mesh, true);
    w.collective(w.shard_group(0), op);
    w.collective(w.shard_group(1), op);
    try {
      w.collective(w.replicate_group(0), op);  // spans replicas: written for replica 0's member
      w.collective(w.shard_group(2), op);      // ids 0, 1, 2, 3: not shard[0]'s id 0 + 2
      FAIL("accepted a collective out of the builders' order");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("shard[2]") != std::string::npos);
    }
  }
  PlanWriter w(Strategy::adamw, s.model, routing, mesh, true);
  w.collective(w.shard_group(0), op);
  w.collective(w.shard_group(1), op);
  w.collective(w.shard_group(2), op);
  w.compute(4, op);  // rank (2, 0): not written, moved from rank 0 at finish
  const Plan plan = w.finish();
  CHECK(plan.replica_symmetric);
  REQUIRE(plan.ranks.at(5).size() == 1);
  CHECK(plan.ranks[5][0].group == w.shard_group(2));
  CHECK(plan.ranks[5][0].collective == 2);
  CHECK(plan.ranks[2][0].collective == 1);
  CHECK(plan.ranks[4].size() == 1);  // the compute op was not written for rank 4 itself
}

TEST_CASE("the template writer writes template replicas only and numbers their copies as every rank written",
          "[plan][replica]") {
  const Scenario s = scenario();
  const Routing routing = route_parameters(s.model, s.routing);
  const Mesh mesh{4, 2};
  const Op op = small_all_reduce();
  const std::vector<int> templates{0, 1, 1, 1};  // replicas 2 and 3 run replica 1's lists
  {
    PlanWriter w(Strategy::dedicated, s.model, routing, mesh, false, true, templates);
    w.collective(w.shard_group(0), op);
    try {
      w.collective(w.shard_group(2), op);  // replica 1 wrote nothing to copy
      FAIL("accepted a copy of nothing");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("template replica 1") != std::string::npos);
    }
  }
  PlanWriter w(Strategy::dedicated, s.model, routing, mesh, false, true, templates);
  w.collective(w.shard_group(0), op);  // id 0, replica 0: its own template
  w.collective(w.shard_group(1), op);  // id 1
  w.collective(w.shard_group(2), op);  // id 2 = replica 1's id 1 + 1: skipped
  w.collective(w.shard_group(3), op);  // id 3
  w.compute(5, op);                    // rank (2, 1): not written
  CHECK_THROWS_AS(w.group_of({4}, "inside a copied replica"), Error);
  CHECK_THROWS_AS(w.group_of({2}, "inside a template standing for three replicas"), Error);
  CHECK(w.group_of({0}, "inside a template standing for itself") >= 0);
  const Plan folded = w.finish();
  CHECK(folded.folded);
  CHECK(folded.replica_template == templates);
  REQUIRE(folded.ranks.size() == 8);
  for (int r = 4; r < 8; ++r) CHECK(folded.ranks[static_cast<std::size_t>(r)].empty());
  CHECK(folded.template_rank(7) == 3);
  const Plan every = unfolded(folded);
  REQUIRE(every.ranks[4].size() == 1);
  CHECK(every.ranks[4][0].collective == 2);
  CHECK(every.ranks[4][0].group == w.shard_group(2));
  REQUIRE(every.ranks[7].size() == 1);
  CHECK(every.ranks[7][0].collective == 3);
  CHECK(every.ranks[0][0].collective == 0);
  // A template later than its replica is no template.
  Plan wrong = folded;
  wrong.replica_template = {0, 2, 2, 2};
  CHECK_THROWS_AS(ReplicaMove(wrong), Error);
}
