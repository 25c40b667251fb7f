// Sharded Newton-Schulz with split m x m products (Op::ns_product_begin, core/plan/ns_sharding.hpp;
// the split call against single-device NS is in tests/test_sharded_ns.cpp): the CPU interpreter runs
// owner-striped Plans whose calls split their products to the single-device reference (world 8
// on a 2 x 4 mesh, and one node of 4), the per-member flops and all-gathers follow closed forms,
// Plan::validate refuses malformed split calls, and the planner's rule (never / cheaper / always)
// and its scenario key do what they say.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "error_message.hpp"
#include "interpreter_vs_reference.hpp"
#include "ns_shard_blocks.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/io/scenario.hpp"
#include "core/model/routing.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/plan/step_planner.hpp"
#include "harness/verify/distributed_checks.hpp"
#include "harness/verify/sharded_ns_case.hpp"
#include "reference/model_step.hpp"
#include "reference/newton_schulz.hpp"
#include "reference/plan_interpreter.hpp"

using namespace dmuon;
using test::random_matrix;
using dmuon::ref::Rounding;

namespace {

// owner-striped with every shardable matrix's call over the last k GPUs of a node (k = 2, 3, 4
// in turn, capped at the node), each call splitting its m x m products where every member gets
// a product column.
Plan split_plan(const ModelSpec& model, const Routing& routing, const Mesh& mesh, int* split_calls) {
  PlanOptions o;
  std::vector<int> owner;
  *split_calls = 0;
  for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) {
    const MuonMatrix& mm = routing.muon_matrices[m];
    int k = std::min(mesh.shard, 2 + static_cast<int>(m % 3));
    if (!ns_shardable(ns_wide_columns(mm), k)) k = 1;
    const bool split = k > 1 && ns_shardable(ns_wide_rows(mm), k);
    o.ns_shards.push_back(k);
    o.ns_split_products.push_back(split);
    *split_calls += split;
    owner.push_back(mesh.rank(static_cast<int>(m) % mesh.replicate, mesh.shard - k));
  }
  o.striped_all_reduce_from_nodes = 3;
  return build_plan(Strategy::owner_striped, model, routing, mesh, owner, o);
}

std::string validate_error(const Plan& plan, const ModelSpec& model, const Routing& routing) {
  return test::error_of([&] { plan.validate(model, routing); });
}

}  // namespace

TEST_CASE("split calls: product columns, all-gathers and flops follow their closed forms", "[split-products]") {
  // 9 product columns cannot give 4 members one each (3 + 3 + 3): refused, as the planner would.
  const Eigen::MatrixXd nine = random_matrix(9, 40, 3);
  CHECK_THROWS_WITH(ref::sharded_newton_schulz(test::column_blocks(nine, 4), optimizer_preset("dmuon").muon.ns,
                                               Rounding::exact, true),
                    Catch::Contains("9 product columns cannot give each of 4 members one"));
  CHECK(ns_product_columns(5120, 8, 7) == std::make_pair<std::int64_t, std::int64_t>(4480, 5120));
  CHECK(ns_product_columns(7, 4, 3) == std::make_pair<std::int64_t, std::int64_t>(6, 7));
  // Standard NS: B every iteration. Gram, 5 steps, restart at 2 (Z 5, R after iterations 0 and 2
  // and 3, Q before the restart and for the result): 5 + 3 + 2 = 10; no restart: 5 + 4 + 1.
  CHECK(ns_split_gathers(NsKernel::standard, 5, {}) == 5);
  CHECK(ns_split_gathers(NsKernel::gram, 5, {2}) == 10);
  CHECK(ns_split_gathers(NsKernel::gram, 5, {}) == 10);
  CHECK(ns_split_gathers(NsKernel::gram, 6, {2, 4}) == 6 + 3 + 3);
  const NsShardComm comm = ns_shard_comm(NsKernel::gram, 5120, 5120, 5, {2}, 8);
  CHECK(comm.matrix_all_reduces == 2);
  CHECK(comm.product_all_gathers == 10);
  CHECK(comm.gather_bytes_each == Approx(8.0 * 640 * 5120 * 2));
  CHECK(ns_shard_comm(NsKernel::gram, 5120, 5120, 5, {2}).product_all_gathers == 0);
  // Split: each member's flops count its columns' share of the m x m part (ns_flops' convention)
  // and the m x n part for its own columns as before. Over 3 members the m x m part is then done
  // once, where unsplit each member did it whole (2 ns_flops(m, m) - ns_flops(m, 2m)).
  for (NsKernel kernel : {NsKernel::standard, NsKernel::gram}) {
    const long m = 1024, n = 4096;
    const std::vector<int> restarts = kernel == NsKernel::gram ? std::vector<int>{2} : std::vector<int>{};
    const double products = ns_product_counts(kernel, 5, restarts).square;
    double split = 0, whole = 0;
    for (int j = 0; j < 3; ++j) {
      const auto [b, e] = ns_product_columns(m, 3, j);
      const auto [cb, ce] = ns_shard_columns(n, 3, j);
      split += ns_shard_flops(kernel, m, n, ce - cb, 5, restarts, e - b);
      whole += ns_shard_flops(kernel, m, n, ce - cb, 5, restarts);
    }
    const double whole_squares = 2 * ns_flops(kernel, m, m, 5, restarts) - ns_flops(kernel, m, 2 * m, 5, restarts);
    INFO(to_string(kernel));
    // Gram, restart at 2: Z 5, Q 3 (free at 0 and at the restart), the R update 2 x 3 (after 0, 2, 3).
    CHECK(products == (kernel == NsKernel::gram ? 5 + 3 + 6 : 5));
    CHECK(split - whole == Approx(-2 * whole_squares).epsilon(1e-12));
    CHECK(split == Approx(ns_flops(kernel, m, n, 5, restarts)).epsilon(1e-12));  // the members add up to the call
  }
}

TEST_CASE("a split call's in-call collectives are priced from the calibration's curves where it has them",
          "[split-products]") {
  const NsConfig ns = optimizer_preset("dmuon").muon.ns;
  const NodeLink link{360, 3.4};
  const CostModel datasheet(device_profile("h200"));
  // A flat 1 ms all-gather on 2 GPUs of one node, nothing else: only the gathers change.
  CalibrationTable table;
  const DeviceProfile h200 = device_profile("h200");
  table.gpu = "h200";
  table.gemm_tflops = h200.gemm_tflops;  // as the profile, so only the collectives differ
  table.hbm_GBps = h200.hbm_GBps;
  table.collectives.push_back({OpKind::all_gather, 2, 1, SizeCurve{{{4096.0, 1e-3}, {1e9, 1e-3}}}});
  const CostModel measured(device_profile("h200"), table);
  const NsShardComm comm = ns_shard_comm(NsKernel::gram, 5120, 5120, ns.steps, ns.restarts, 2);
  const double ring = ring_all_gather_seconds(comm.gather_bytes_each, 2, link);
  CHECK(sharded_ns_seconds(measured, ns, 5120, 5120, 2, link, true) - sharded_ns_seconds(datasheet, ns, 5120, 5120, 2, link, true) ==
        Approx(comm.product_all_gathers * (1e-3 - ring)).epsilon(1e-9));
  // Products whole: no all-gather, so the curve changes nothing.
  CHECK(sharded_ns_seconds(measured, ns, 5120, 5120, 2, link, false) ==
        Approx(sharded_ns_seconds(datasheet, ns, 5120, 5120, 2, link, false)).epsilon(1e-12));
}

TEST_CASE("the interpreter runs owner-striped with split products to the reference", "[split-products]") {
  const ModelSpec model = verify::distributed_test_model();
  const Routing routing = route_parameters(model, {});
  for (const Mesh& mesh : {Mesh{2, 4}, Mesh{1, 4}}) {
    for (const std::string preset : {"torch", "dmuon"}) {
      INFO("mesh " << mesh.to_string() << ", preset " << preset);
      int split_calls = 0;
      const Plan plan = split_plan(model, routing, mesh, &split_calls);
      REQUIRE(validate_error(plan, model, routing) == "(no error)");
      REQUIRE(split_calls >= 3);
      test::check_interpreter_matches_reference(plan, model, routing, optimizer_preset(preset), mesh.world());
    }
  }
}

TEST_CASE("Plan::validate refuses malformed split calls", "[split-products]") {
  const ModelSpec model = verify::distributed_test_model();
  const Routing routing = route_parameters(model, {});
  int split_calls = 0;
  const Plan good = split_plan(model, routing, Mesh{2, 4}, &split_calls);
  REQUIRE(validate_error(good, model, routing) == "(no error)");
  // The first split call's members, in group order.
  std::vector<std::pair<int, int>> call;
  std::int64_t id = -1;
  for (int r = 0; r < static_cast<int>(good.ranks.size()); ++r) {
    for (int i = 0; i < static_cast<int>(good.ranks[r].size()); ++i) {
      const Op& op = good.ranks[r][i];
      if (!splits_ns_products(op)) continue;
      if (id < 0) id = op.collective;
      if (op.collective == id) call.push_back({r, i});
    }
  }
  REQUIRE(call.size() >= 2);
  auto op = [&](Plan& p, std::size_t member) -> Op& { return p.ranks[call[member].first][call[member].second]; };

  Plan one_whole = good;  // one member computes every product whole while the others split
  op(one_whole, 1).ns_product_begin = op(one_whole, 1).ns_product_end = 0;
  CHECK_THAT(validate_error(one_whole, model, routing), Catch::Contains("splits its m x m products not"));
  // The interpreter refuses it too, unvalidated, naming the member (its steps would not be one call).
  const auto params = test::random_params(model, 3);
  ref::PlanInterpreter interpreter(one_whole, model, routing, optimizer_preset("dmuon"), Rounding::exact, params);
  CHECK_THROWS_WITH(interpreter.step(std::vector<std::vector<Eigen::VectorXd>>(8, params)),
                    Catch::Contains("are not member 1's split of the call"));

  Plan shifted = good;  // a block other than ns_product_columns' for its place
  op(shifted, 0).ns_product_end += 1;
  CHECK_THAT(validate_error(shifted, model, routing), Catch::Contains("are not member 0's block"));
}

TEST_CASE("the planner splits products as its rule says, and the scenario key is read strictly", "[split-products][planner]") {
  const ModelSpec model = verify::sharded_ns_test_model("wide");
  const Routing routing = route_parameters(model, {});
  auto splits = [&](const std::string& preset, const StepPlanOptions& o, int calls) {
    const Plan plan = plan_step(model, routing, optimizer_preset(preset), Strategy::owner_striped, make_mesh(1, 2, "mesh"),
                                verify::flops_only_cost(), o).plan;
    REQUIRE(sharded_ns_calls(plan) == calls);
    return split_ns_calls(plan);
  };
  for (const std::string preset : {"torch", "dmuon"}) {
    INFO(preset);
    CHECK(splits(preset, verify::free_link_plan_options(ProductSplit::never), 1) == 0);
    CHECK(splits(preset, verify::free_link_plan_options(ProductSplit::always), 1) == 1);
    // On a free link a split member does half the m x m GEMMs for nothing: cheaper.
    CHECK(splits(preset, verify::free_link_plan_options(ProductSplit::cheaper), 1) == 1);
    // At 0.01 GB/s a 96 x 96 all-gather costs about a millisecond: not cheaper, and not sharded at all
    // (the all-reduces cost more than the columns save).
    StepPlanOptions slow = verify::free_link_plan_options(ProductSplit::cheaper);
    slow.node_link.bw_GBps = 0.01;
    CHECK(splits(preset, slow, 0) == 0);
  }

  const std::string head = "name: p\nmodel:\n  name: small\n  transformer: {hidden: 256, layers: 2, heads: 4, ffn: 704, vocab: 1000}\n";
  CHECK(parse_scenario(head + "planner: {split_ns_products: always}\n", "p.yaml").planner.split_ns_products ==
        std::optional<ProductSplit>(ProductSplit::always));
  CHECK_FALSE(parse_scenario(head, "p.yaml").planner.split_ns_products.has_value());
  CHECK_THROWS_WITH(parse_scenario(head + "planner: {split_ns_products: true}\n", "p.yaml"),
                    Catch::Contains("split_ns_products") && Catch::Contains("must be never, cheaper or always, got 'true'"));
}
