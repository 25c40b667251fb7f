// Host-side logic of the NCCL executor's sharded Newton-Schulz (no GPU needed): the verify case's
// cost settings make the planner shard the dominant matrix (and only they do), each member's
// columns, place in the stored matrix, group position and buffers follow from the Plan, bad ops
// are refused naming them, the CPU interpreter runs the very Plans the GPU case runs to the
// reference, and the engine's choice of implementation for a sharded call.
#include <algorithm>
#include <map>
#include <random>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/model/routing.hpp"
#include "core/plan/ns_sharding.hpp"
#include "harness/verify/sharded_ns_case.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/ns_engine.hpp"
#include "kernels/exec/buffers.hpp"
#include "kernels/exec/ns_shard_member.hpp"
#include "reference/model_step.hpp"
#include "reference/plan_interpreter.hpp"

using namespace dmuon;

namespace {

struct Case {
  // No bool overload: a string literal converts to bool before std::string and would pick it.
  explicit Case(const std::string& orientation, const std::string& preset = "torch")
      : model(verify::sharded_ns_test_model(orientation)), routing(route_parameters(model, {})), config(optimizer_preset(preset)) {}
  ModelSpec model;
  Routing routing;
  OptimizerConfig config;
  Plan plan(const StepPlanOptions& o) const {
    return plan_step(model, routing, config, Strategy::owner_striped, make_mesh(1, 2, "mesh"), verify::flops_only_cost(), o).plan;
  }
};

// (rank, op index) of every sharded op.
std::vector<std::pair<int, int>> sharded_ops(const Plan& plan) {
  std::vector<std::pair<int, int>> out;
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    for (int i = 0; i < static_cast<int>(plan.ranks[r].size()); ++i) {
      if (is_sharded_ns(plan.ranks[r][i])) out.push_back({r, i});
    }
  }
  return out;
}

constexpr std::size_t K(BufferKind b) { return static_cast<std::size_t>(b); }

}  // namespace

TEST_CASE("the verify case's cost settings make the planner shard the dominant matrix", "[sharded-ns][nccl]") {
  for (const bool tall : {false, true}) {
    for (const std::string preset : {"torch", "dmuon"}) {
      INFO((tall ? "tall " : "wide ") << preset);
      const Case c(tall ? "tall" : "wide", preset);
      const Plan plan = c.plan(verify::free_link_plan_options());
      CHECK(sharded_ns_calls(plan) == 1);
      for (const auto& [rank, index] : sharded_ops(plan)) {
        CHECK(c.routing.muon_matrices[plan.ranks[rank][index].matrices[0]].name == "layers.1.mlp.weight");
      }
      // Not hard-wired: with the planner's defaults (no link to price) or sharding off, none.
      CHECK(sharded_ns_calls(c.plan(StepPlanOptions())) == 0);
      StepPlanOptions off = verify::free_link_plan_options();
      off.sharded_ns = false;
      CHECK(sharded_ns_calls(c.plan(off)) == 0);
    }
  }
}

TEST_CASE("a member's columns, place in the matrix, group position and buffers come from the Plan", "[sharded-ns][nccl]") {
  for (const bool tall : {false, true}) {
    INFO("orientation " << (tall ? "tall" : "wide"));
    const Case c(tall ? "tall" : "wide");
    const Plan plan = c.plan(verify::free_link_plan_options());
    const auto ops = sharded_ops(plan);
    REQUIRE(ops.size() == 2);
    std::vector<int> positions;
    for (const auto& [rank, index] : ops) {
      const Op& op = plan.ranks[rank][index];
      const exec::NsShardMember s = exec::ns_shard_member(op, plan, rank, c.routing, "here");
      const MuonMatrix& mm = c.routing.muon_matrices[s.matrix];
      positions.push_back(s.position);
      CHECK(s.members == 2);
      CHECK(plan.groups[op.group].ranks[s.position] == rank);
      // The planner's split: ceil(1999 / 2) = 1000, then 999 (ragged).
      const auto [begin, end] = ns_shard_columns(1999, 2, s.position);
      CHECK(s.column_begin == begin);
      CHECK(s.column_end == end);
      CHECK(s.m == 96);
      CHECK(s.columns == end - begin);
      CHECK(s.column_major == tall);
      CHECK(s.contiguous() == tall);
      CHECK(s.regions() == ns_shard_regions(c.routing, s.matrix, begin, end));
      const Region whole = matrix_region(c.routing, s.matrix);
      CHECK(s.block.offset >= whole.offset);
      CHECK(s.block.offset + s.block.count <= whole.offset + whole.count);
      CHECK(region_elements(s.regions()) == s.m * s.columns);
      // The rank allocates NS buffers for its block, not the whole matrix (a tall matrix's
      // block of rows is exactly that; a wide one's runs span from its first to its last row).
      const exec::Footprint f = exec::plan_footprint(plan, rank, c.model, c.routing);
      for (const BufferKind kind : {BufferKind::ns_input, BufferKind::ns_output, BufferKind::momentum}) {
        const exec::Range& got = f.ranges[mm.param][K(kind)];
        CHECK(got.lo == s.block.offset);
        CHECK(got.hi == s.block.offset + s.block.count);
      }
    }
    std::sort(positions.begin(), positions.end());
    CHECK(positions == std::vector<int>{0, 1});
    // The sharded call's group gets a communicator (its all-reduces run inside the op).
    const std::vector<int> groups = comm::communicator_groups(plan);
    const Op& first = plan.ranks[ops.front().first][ops.front().second];
    CHECK(std::count(groups.begin(), groups.end(), first.group) == 1);
    Plan only_ns = plan;  // with no collective left, the sharded call alone still needs one
    for (auto& rank_ops : only_ns.ranks) {
      rank_ops.erase(std::remove_if(rank_ops.begin(), rank_ops.end(), [](const Op& op) { return is_collective(op.kind); }),
                     rank_ops.end());
    }
    CHECK(comm::communicator_groups(only_ns) == std::vector<int>{first.group});
  }
}

TEST_CASE("ns_shard_member refuses what is not this rank's share of a sharded call, naming the op", "[sharded-ns][nccl]") {
  const Case c("wide");
  const Plan plan = c.plan(verify::free_link_plan_options());
  const auto [rank, index] = sharded_ops(plan).front();
  const Op& good = plan.ranks[rank][index];
  auto error = [&](const Op& op, int r) {
    try {
      (void)exec::ns_shard_member(op, plan, r, c.routing, "rank 0 op 9");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error(good, rank) == "(no error)");
  Op unsharded = good;
  unsharded.group = -1;
  CHECK_THAT(error(unsharded, rank), Catch::Contains("rank 0 op 9: not a sharded Newton-Schulz op"));
  Op two = good;
  two.matrices.push_back(two.matrices.front());
  CHECK_THAT(error(two, rank), Catch::Contains("names one known Muon matrix"));
  CHECK_THAT(error(good, 5), Catch::Contains("rank 5 is not a member of group"));
  Op outside = good;
  outside.ns_column_end = 2000;
  CHECK_THAT(error(outside, rank), Catch::Contains("columns [") && Catch::Contains("1999 columns"));
  Op empty = good;
  empty.ns_column_end = empty.ns_column_begin;
  CHECK_THAT(error(empty, rank), Catch::Contains("layers.1.mlp.weight"));
  // A split call's member: its block of the 96 product columns for its place, nothing else.
  const Plan split = c.plan(verify::free_link_plan_options(ProductSplit::always));
  const auto [split_rank, split_index] = sharded_ops(split).front();
  const Op& member = split.ranks[split_rank][split_index];
  const exec::NsShardMember s = exec::ns_shard_member(member, split, split_rank, c.routing, "rank 0 op 9");
  CHECK(s.split_products);
  CHECK(std::make_pair(member.ns_product_begin, member.ns_product_end) == ns_product_columns(96, 2, s.position));
  // Every rank's shares at once; a call whose members disagree on splitting is refused up front.
  const auto mine = exec::checked_ns_shard_members(split, split_rank, c.routing);
  REQUIRE(mine.count(split_index) == 1);
  CHECK(mine.at(split_index).split_products);
  Plan disagree = split;
  const auto [other_rank, other_index] = sharded_ops(split).back();
  REQUIRE(other_rank != split_rank);
  disagree.ranks[other_rank][other_index].ns_product_begin = disagree.ranks[other_rank][other_index].ns_product_end = 0;
  CHECK_THROWS_WITH(exec::checked_ns_shard_members(disagree, split_rank, c.routing),
                    Catch::Contains("rank " + std::to_string(other_rank) + " op " + std::to_string(other_index)) &&
                        Catch::Contains("does not split its m x m products while another member of the call does"));
  Op shifted = member;
  shifted.ns_product_end -= 1;
  try {
    (void)exec::ns_shard_member(shifted, split, split_rank, c.routing, "rank 0 op 9");
    FAIL("a shifted product block was accepted");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("rank 0 op 9: product columns [") && Catch::Contains("block of 96 over 2"));
  }
}

TEST_CASE("the CPU interpreter runs the verify case's sharded Plans to the reference", "[sharded-ns][nccl]") {
  for (const std::string orientation : {"wide", "tall", "square"}) {
    for (const ProductSplit split : {ProductSplit::never, ProductSplit::always}) {
      for (const std::string preset : {"torch", "dmuon"}) {
        INFO(orientation << " " << preset << " products " << to_string(split));
        const Case c(orientation, preset);
        const Plan plan = c.plan(verify::free_link_plan_options(split));
        REQUIRE(sharded_ns_calls(plan) == 1);
        std::mt19937_64 rng(11);
        std::normal_distribution<double> normal(0.0, 1.0);
        auto random = [&](const ModelSpec& m) {
          std::vector<Eigen::VectorXd> out;
          for (const auto& p : m.params) {
            Eigen::VectorXd v(p.numel());
            for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = normal(rng);
            out.push_back(v);
          }
          return out;
        };
        const auto initial = random(c.model);
        ref::PlanInterpreter interpreter(plan, c.model, c.routing, c.config, ref::Rounding::exact, initial);
        ref::ModelStep reference(c.model, c.routing, c.config, false, initial, ref::Rounding::exact);
        const std::vector<std::vector<Eigen::VectorXd>> grads = {random(c.model), random(c.model)};
        interpreter.step(grads);
        reference.step(grads);
        const auto got = interpreter.params_after_forward();
        for (std::size_t p = 0; p < c.model.params.size(); ++p) {
          INFO(c.model.params[p].name);
          const Eigen::VectorXd& want = reference.params()[p];
          for (const auto& rank : got) CHECK((rank[p] - want).norm() <= 1e-12 * want.norm());
        }
      }
    }
  }
}

TEST_CASE("a sharded call's implementation: the requested one, automatic by variant, sm90 and lt as cuBLAS symmetric",
          "[sharded-ns][nccl]") {
  using cuda::NsImpl;
  const NsConfig standard = optimizer_preset("torch").muon.ns;
  const NsConfig gram = optimizer_preset("dmuon").muon.ns;
  REQUIRE(gram.variant == NsVariant::gram);
  CHECK(cuda::sharded_impl(NsImpl::automatic, standard) == NsImpl::standard);
  CHECK(cuda::sharded_impl(NsImpl::automatic, gram) == NsImpl::gram);
  CHECK(cuda::sharded_impl(NsImpl::symmetric_sm90, standard) == NsImpl::symmetric);
  CHECK(cuda::sharded_impl(NsImpl::symmetric_lt, standard) == NsImpl::symmetric);
  CHECK(cuda::sharded_impl(NsImpl::gram_sm90, gram) == NsImpl::gram_symmetric);
  for (NsImpl i : {NsImpl::standard, NsImpl::symmetric, NsImpl::gram, NsImpl::gram_symmetric}) {
    CHECK(cuda::sharded_impl(i, gram) == i);
  }
}
