// Sharded Newton-Schulz (core/plan/ns_sharding.hpp): the column-sharded call equals single-device
// NS within 1e-12 in fp64 (ragged splits included), the CPU interpreter runs owner-striped
// Plans with sharded calls to the single-device reference, and Plan::validate refuses
// malformed sharded calls with a message naming the problem.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "interpreter_vs_reference.hpp"
#include "ns_shard_blocks.hpp"
#include "error_message.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/model/model_yaml.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "core/io/yaml_reader.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"
#include "harness/verify/distributed_checks.hpp"
#include "reference/model_step.hpp"
#include "reference/newton_schulz.hpp"
#include "reference/plan_interpreter.hpp"

using namespace dmuon;
using test::random_matrix;
using dmuon::ref::Rounding;

namespace {

using test::column_blocks;

// owner-striped with most matrices sharded: k = 2, 3, 4 (capped at the node's GPUs) in turn,
// every fourth matrix whole; a call over fewer than all GPUs of a node sits at its end, so
// groups start at positions other than 0 too.
Plan sharded_plan(const ModelSpec& model, const Routing& routing, const Mesh& mesh, std::vector<int>* shards_out = nullptr) {
  std::vector<int> owner, shards;
  for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) {
    const int node = static_cast<int>(m) % mesh.replicate;
    int k = m % 4 == 3 ? 1 : std::min(mesh.shard, 2 + static_cast<int>(m % 4));
    if (!ns_shardable(ns_wide_columns(routing.muon_matrices[m]), k)) k = 1;
    shards.push_back(k);
    owner.push_back(mesh.rank(node, k == 1 ? static_cast<int>(m / 4) % mesh.shard : mesh.shard - k));
  }
  PlanOptions o;
  o.ns_shards = shards;
  o.striped_all_reduce_from_nodes = 3;
  if (shards_out) *shards_out = shards;
  return build_plan(Strategy::owner_striped, model, routing, mesh, owner, o);
}

std::string validate_error(const Plan& plan, const ModelSpec& model, const Routing& routing) {
  return test::error_of([&] { plan.validate(model, routing); });
}

// (rank, op index) of every member of the first sharded call with `k` members.
std::vector<std::pair<int, int>> first_call(const Plan& plan, std::size_t k) {
  std::int64_t id = -1;
  std::vector<std::pair<int, int>> out;
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    for (int i = 0; i < static_cast<int>(plan.ranks[r].size()); ++i) {
      const Op& op = plan.ranks[r][i];
      if (!is_sharded_ns(op) || plan.groups[op.group].ranks.size() != k) continue;
      if (id < 0) id = op.collective;
      if (op.collective == id) out.push_back({r, i});
    }
  }
  REQUIRE(out.size() == k);
  return out;
}

}  // namespace

TEST_CASE("sharded Newton-Schulz equals single-device NS within 1e-12 in fp64, products whole or split", "[sharded-ns]") {
  const std::vector<std::pair<int, int>> shapes = {{16, 40}, {40, 16}, {24, 24}, {7, 31}, {33, 10}};
  for (const std::string preset : {"torch", "dmuon", "moonlight"}) {
    const NsConfig ns = optimizer_preset(preset).muon.ns;
    for (const auto& [rows, cols] : shapes) {
      const Eigen::MatrixXd g = random_matrix(rows, cols, static_cast<unsigned>(rows * 100 + cols));
      const Eigen::MatrixXd want = ref::newton_schulz(g, ns, Rounding::exact);
      const Eigen::MatrixXd wide = rows > cols ? Eigen::MatrixXd(g.transpose()) : g;
      // One block is single-device NS itself, bit for bit.
      const auto one = ref::sharded_newton_schulz({wide}, ns, Rounding::exact);
      CHECK(((rows > cols ? Eigen::MatrixXd(one[0].transpose()) : one[0]).array() == want.array()).all());
      // Products whole, and split (Op::ns_product_begin; m = 7 over 4: blocks of 2, 2, 2, 1).
      for (const bool split : {false, true}) {
        for (int k : {2, 3, 4}) {
          INFO(preset << " " << rows << "x" << cols << " over " << k << " (ragged: " << (wide.cols() % k != 0)
                      << ", products " << (split ? "split" : "whole") << ")");
          const auto blocks = ref::sharded_newton_schulz(column_blocks(wide, k), ns, Rounding::exact, split);
          Eigen::MatrixXd got(wide.rows(), wide.cols());
          Eigen::Index at = 0;
          for (const auto& b : blocks) got.middleCols(at, b.cols()) = b, at += b.cols();
          if (rows > cols) got.transposeInPlace();
          CHECK((got - want).cwiseAbs().maxCoeff() <= 1e-12);
          CHECK(want.cwiseAbs().maxCoeff() > 0.1);  // a real output, not two zeros agreeing
        }
      }
    }
  }
}

TEST_CASE("sharded Newton-Schulz columns: ragged splits and refusals", "[sharded-ns]") {
  CHECK(ns_shard_columns(10, 4, 0) == std::make_pair<std::int64_t, std::int64_t>(0, 3));
  CHECK(ns_shard_columns(10, 4, 3) == std::make_pair<std::int64_t, std::int64_t>(9, 10));
  CHECK_FALSE(ns_shardable(9, 4));  // ceil(9 / 4) = 3: 3 + 3 + 3 leaves the fourth member none
  CHECK_FALSE(ns_shardable(3, 4));
  CHECK_THROWS_WITH(ns_shard_columns(3, 4, 0), Catch::Contains("cannot give each of 4 members"));
}

TEST_CASE("the interpreter runs owner-striped with sharded Newton-Schulz to the reference", "[sharded-ns]") {
  const ModelSpec model = verify::distributed_test_model();
  const Routing routing = route_parameters(model, {});
  for (const Mesh& mesh : {Mesh{1, 4}, Mesh{2, 4}, Mesh{2, 3}}) {
    for (const std::string preset : {"torch", "dmuon"}) {
      INFO("mesh " << mesh.to_string() << ", preset " << preset);
      std::vector<int> shards;
      const Plan plan = sharded_plan(model, routing, mesh, &shards);
      REQUIRE(validate_error(plan, model, routing) == "(no error)");
      REQUIRE(std::count_if(shards.begin(), shards.end(), [](int k) { return k > 1; }) >= 3);
      test::check_interpreter_matches_reference(plan, model, routing, optimizer_preset(preset), mesh.world());
    }
  }
}

TEST_CASE("Plan::validate refuses malformed sharded Newton-Schulz calls", "[sharded-ns]") {
  const ModelSpec model = verify::distributed_test_model();
  const Routing routing = route_parameters(model, {});
  const Mesh mesh{2, 4};
  const Plan good = sharded_plan(model, routing, mesh);
  REQUIRE(validate_error(good, model, routing) == "(no error)");
  const auto call = first_call(good, 3);
  auto op = [&](Plan& p, std::size_t member) -> Op& { return p.ranks[call[member].first][call[member].second]; };

  Plan gap = good;
  op(gap, 1).ns_column_begin += 1;
  CHECK_THAT(validate_error(gap, model, routing), Catch::Contains("do not continue the group's previous member"));

  Plan short_end = good;
  op(short_end, 2).ns_column_end -= 1;
  CHECK_THAT(validate_error(short_end, model, routing), Catch::Contains("the members' columns end at"));

  Plan two = good;
  for (std::size_t j = 0; j < call.size(); ++j) op(two, j).matrices.push_back(0);
  CHECK_THAT(validate_error(two, model, routing), Catch::Contains("matrices, not one"));

  Plan missing = good;
  auto& ops = missing.ranks[call[1].first];
  ops.erase(ops.begin() + call[1].second);
  for (auto& o : ops) o.deps.clear();
  CHECK_THAT(validate_error(missing, model, routing), Catch::Contains("has no matching op on rank " + std::to_string(call[1].first)));

  Plan led = good;
  led.matrix_owner[op(led, 0).matrices[0]] = call[1].first;
  CHECK_THAT(validate_error(led, model, routing), Catch::Contains("not led by the matrix's owner"));

  Plan outsider = good;  // the group names a rank of the other node in place of a member
  outsider.groups[op(outsider, 0).group].ranks[0] = mesh.rank(1 - mesh.replica_of(call[0].first), 0);
  CHECK_THAT(validate_error(outsider, model, routing), Catch::Contains("is not a member of group"));
}

namespace {

// A model whose three MLP matrices (16384 x 1024, standard NS) each take longer than a GPU's fair
// share on a 2 x 4 mesh: what sharding is for. Launches cost nothing here, so the strictly wide
// down_proj (1024 x 16384, one region per row when sharded) shards like the tall ones; with the
// profile's launch cost it does not (the last case below).
CostModel free_launch_cost() {
  DeviceProfile profile = device_profile("a800-sxm4-80gb");
  profile.launch_overhead_us = 0;
  return CostModel(profile);
}

struct WideMlp {
  ModelSpec model = parse_model(YamlValue::load_string(
      "name: wide-mlp\ndtype: bf16\ntransformer: {hidden: 1024, layers: 1, heads: 8, ffn: 16384, vocab: 1000}\n", "wide-mlp"));
  Routing routing = route_parameters(model, {});
  OptimizerConfig optimizer = optimizer_preset("torch");
  CostModel cost = free_launch_cost();
};

StepPlan plan_wide(const WideMlp& f, bool sharded, double nvlink_GBps) {
  StepPlanOptions o;
  o.sharded_ns = sharded;
  o.node_link = {nvlink_GBps, 3.4};
  return plan_step(f.model, f.routing, f.optimizer, Strategy::owner_striped, Mesh{2, 4}, f.cost, o);
}

}  // namespace

TEST_CASE("the planner shards Newton-Schulz where the cost model says it pays", "[sharded-ns][planner]") {
  const WideMlp f;
  const StepPlan with = plan_wide(f, true, 160);
  const StepPlan without = plan_wide(f, false, 160);
  const StepPlan no_link = plan_wide(f, true, 0);  // no NVLink figure: nothing to price it with
  CHECK(sharded_ns_calls(with.plan) >= 2);            // the MLP matrices
  CHECK(sharded_ns_calls(without.plan) == 0);
  CHECK(sharded_ns_calls(no_link.plan) == 0);
  REQUIRE(with.assignment.has_value());
  REQUIRE(without.assignment.has_value());
  CHECK(with.assignment->makespan_seconds < 0.9 * without.assignment->makespan_seconds);
  // Priced per member: every member's flops are below the whole call's.
  for (const auto& ops : with.plan.ranks) {
    for (const Op& op : ops) {
      if (!is_sharded_ns(op)) continue;
      const MuonMatrix& mm = f.routing.muon_matrices[op.matrices[0]];
      CHECK(op.flops < ns_flops(NsKernel::standard, mm.rows, mm.cols, f.optimizer.muon.ns.steps, {}));
      CHECK(op.payload_bytes == Approx(f.optimizer.muon.ns.steps * 1024.0 * 1024 * 4 + 8));
    }
  }
  // The NCCL executor's refusal names the Plan's first sharded op, on every rank alike.
  int rank = -1, index = -1;
  for (int r = 0; r < static_cast<int>(with.plan.ranks.size()) && rank < 0; ++r) {
    for (int i = 0; i < static_cast<int>(with.plan.ranks[r].size()) && rank < 0; ++i) {
      if (is_sharded_ns(with.plan.ranks[r][i])) rank = r, index = i;
    }
  }
  REQUIRE(rank >= 0);
  CHECK_THROWS_WITH(refuse_sharded_ns(with.plan, "the NCCL executor"),
                    Catch::Contains("rank " + std::to_string(rank) + " op " + std::to_string(index) + " (newton_schulz") &&
                        Catch::Contains("sharded Newton-Schulz is not supported by the NCCL executor") &&
                        Catch::Contains("planner.sharded_ns: false"));
  CHECK_NOTHROW(refuse_sharded_ns(without.plan, "the NCCL executor"));
}

TEST_CASE("a strictly wide matrix's member is priced as its tall orientation's", "[sharded-ns][planner]") {
  const WideMlp f;
  const NsConfig& ns = f.optimizer.muon.ns;
  const NodeLink link{160, 3.4};
  const CostModel launches{device_profile("a800-sxm4-80gb")};
  REQUIRE(launches.launch_overhead_s() > 0);
  // The executor packs a wide member's strided column block with pitched kernels: no per-row
  // launches, so the orientation changes nothing in the price.
  const double tall = sharded_ns_seconds(launches, ns, 16384, 1024, 2, link);
  const double wide = sharded_ns_seconds(launches, ns, 1024, 16384, 2, link);
  CHECK(wide == Approx(tall));
}

TEST_CASE("a scenario's planner.sharded_ns is read strictly", "[sharded-ns][scenario]") {
  const std::string head = "name: p\nmodel:\n  name: small\n  transformer: {hidden: 256, layers: 2, heads: 4, ffn: 704, vocab: 1000}\n";
  CHECK(parse_scenario(head + "planner: {sharded_ns: false}\n", "p.yaml").planner.sharded_ns == std::optional<bool>(false));
  CHECK_FALSE(parse_scenario(head, "p.yaml").planner.sharded_ns.has_value());
  CHECK_THROWS_WITH(parse_scenario(head + "planner: {sharded_ns: 3}\n", "p.yaml"), Catch::Contains("sharded_ns"));
}
