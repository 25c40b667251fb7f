// Plan builders produce valid plans for every strategy, world size and mesh; validate() catches
// deliberately broken plans with a message naming rank, op and collective.
#include <string>

#include "catch_compat.hpp"
#include "harness/verify/distributed_checks.hpp"
#include "core/error.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"

using namespace dmuon;

namespace {

// The model dmuon-verify --world checks with (two dense layers, an MoE layer with 6 experts,
// biases and norms): small enough to enumerate.
ModelSpec tiny_model() { return verify::distributed_test_model(); }

std::vector<int> round_robin_owners(const Routing& r, int positions) {
  std::vector<int> owner;
  for (std::size_t m = 0; m < r.muon_matrices.size(); ++m) owner.push_back(static_cast<int>(m % positions));
  return owner;
}

Plan build(Strategy s, const ModelSpec& model, const Routing& routing, const Mesh& mesh) {
  const int positions = s == Strategy::zero1_a2a ? mesh.shard : mesh.world();
  PlanOptions o;
  o.zero1_chunk_matrices = 5;
  o.ddp_bucket_bytes = 4096;
  return build_plan(s, model, routing, mesh, round_robin_owners(routing, positions), o);
}

std::string validate_error(const Plan& plan, const ModelSpec& model, const Routing& routing) {
  try {
    plan.validate(model, routing);
  } catch (const Error& e) {
    return e.what();
  }
  return "(valid)";
}

int count(const Plan& plan, int rank, OpKind kind, Phase phase) {
  int n = 0;
  for (const auto& op : plan.ranks[static_cast<std::size_t>(rank)]) n += op.kind == kind && op.phase == phase;
  return n;
}

}  // namespace

TEST_CASE("every strategy builds a valid plan on 1-D and 2-D meshes", "[plan]") {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  for (Strategy s : all_strategies()) {
    for (Mesh mesh : {Mesh{1, 1}, Mesh{1, 2}, Mesh{1, 3}, Mesh{1, 4}, Mesh{1, 8}, Mesh{2, 2}, Mesh{2, 3}}) {
      INFO(to_string(s) << " on mesh " << mesh.to_string());
      const Plan plan = build(s, model, routing, mesh);
      CHECK_NOTHROW(plan.validate(model, routing));
      CHECK(plan.ranks.size() == static_cast<std::size_t>(mesh.world()));
    }
  }
}

TEST_CASE("strategies differ where DESIGN.md says they do", "[plan]") {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  const Mesh mesh{1, 4};
  const auto n_matrices = static_cast<int>(routing.muon_matrices.size());
  // ddp-redundant: every rank runs every Newton-Schulz, one matrix per call.
  const Plan ddp = build(Strategy::ddp_redundant, model, routing, mesh);
  CHECK(count(ddp, 0, OpKind::newton_schulz, Phase::optimizer) == n_matrices);
  CHECK(count(ddp, 0, OpKind::all_gather, Phase::forward) == 0);
  // dedicated: no optimizer-phase collectives at all; NS only on owners; the expert batch of
  // same-shape matrices on one owner is one call.
  const Plan ded = build(Strategy::dedicated, model, routing, mesh);
  int ns_calls = 0, ns_matrices = 0;
  for (int r = 0; r < 4; ++r) {
    for (const auto& op : ded.ranks[static_cast<std::size_t>(r)]) {
      if (op.phase == Phase::optimizer) CHECK_FALSE(is_collective(op.kind));
      if (op.kind == OpKind::newton_schulz) {
        ++ns_calls;
        ns_matrices += static_cast<int>(op.matrices.size());
      }
    }
  }
  CHECK(ns_matrices == n_matrices);
  CHECK(ns_calls < n_matrices);
  CHECK(count(ded, 0, OpKind::broadcast, Phase::forward) > 0);
  CHECK(count(ded, 0, OpKind::reduce, Phase::backward) > 0);
  // adamw: no Newton-Schulz anywhere.
  const Plan adam = build(Strategy::adamw, model, routing, mesh);
  CHECK(count(adam, 2, OpKind::newton_schulz, Phase::optimizer) == 0);
  // zero1-a2a: all-to-all in the optimizer phase, gathers and scatters in pairs.
  const Plan z = build(Strategy::zero1_a2a, model, routing, mesh);
  CHECK(count(z, 1, OpKind::all_to_all, Phase::optimizer) % 2 == 0);
  CHECK(count(z, 1, OpKind::all_to_all, Phase::optimizer) >= 2 * (n_matrices / 5));
}

TEST_CASE("zero1-a2a keeps at most max_in_flight chunks gathered ahead", "[plan]") {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  const Mesh mesh{1, 2};
  PlanOptions o;
  o.zero1_chunk_matrices = 3;
  o.zero1_max_in_flight = 2;
  const Plan plan = build_plan(Strategy::zero1_a2a, model, routing, mesh, round_robin_owners(routing, 2), o);
  int outstanding = 0, most = 0;
  for (const auto& op : plan.ranks[0]) {
    if (op.kind != OpKind::all_to_all) continue;
    outstanding += op.buffer == BufferKind::ns_input ? 1 : -1;
    most = std::max(most, outstanding);
  }
  CHECK(most == 2);
  CHECK(outstanding == 0);
}

TEST_CASE("validate catches broken plans with a clear message", "[plan]") {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  const Mesh mesh{1, 3};
  const Plan good = build(Strategy::dedicated, model, routing, mesh);
  REQUIRE_NOTHROW(good.validate(model, routing));

  SECTION("a matrix left without an owner") {
    Plan bad = good;
    for (auto& ops : bad.ranks) {
      for (auto it = ops.begin(); it != ops.end(); ++it) {
        if (it->kind == OpKind::newton_schulz) {
          it->matrices.erase(it->matrices.begin());
          goto done;
        }
      }
    }
  done:
    CHECK(validate_error(bad, model, routing).find("has no Newton-Schulz (no owner)") != std::string::npos);
  }
  SECTION("a collective whose size differs on one rank") {
    Plan bad = good;
    for (auto& op : bad.ranks[1]) {
      if (op.kind == OpKind::broadcast) {
        op.regions.front().count -= 1;
        break;
      }
    }
    const auto message = validate_error(bad, model, routing);
    CHECK(message.find("does not match") != std::string::npos);
    CHECK(message.find("rank 1") != std::string::npos);
  }
  SECTION("a collective missing on one rank") {
    Plan bad = good;
    auto& ops = bad.ranks[2];
    for (auto it = ops.begin(); it != ops.end(); ++it) {
      if (it->kind == OpKind::reduce) {
        ops.erase(it);
        break;
      }
    }
    for (auto& op : ops) op.deps.clear();  // keep indices valid after the erase
    CHECK(validate_error(bad, model, routing).find("has no matching op on rank 2") != std::string::npos);
  }
  SECTION("two collectives issued in a different order on one rank") {
    Plan bad = good;
    auto& ops = bad.ranks[0];
    int first = -1;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (ops[static_cast<std::size_t>(i)].kind != OpKind::broadcast) continue;
      if (first < 0) {
        first = i;
      } else {
        std::swap(ops[static_cast<std::size_t>(first)], ops[static_cast<std::size_t>(i)]);
        break;
      }
    }
    for (auto& op : ops) op.deps.clear();
    CHECK(validate_error(bad, model, routing).find("different order") != std::string::npos);
  }
  SECTION("a dependency on a later op") {
    Plan bad = good;
    bad.ranks[0][0].deps = {5};
    CHECK(validate_error(bad, model, routing).find("is not an earlier op") != std::string::npos);
  }
  SECTION("a parameter updated twice") {
    Plan bad = good;
    for (const auto& op : good.ranks[0]) {
      if (op.kind == OpKind::adamw) {
        bad.ranks[0].push_back(op);
        break;
      }
    }
    CHECK(validate_error(bad, model, routing).find("updated twice on rank 0") != std::string::npos);
  }
  SECTION("an owner outside the world") {
    auto owners = round_robin_owners(routing, 3);
    owners[4] = 7;
    CHECK_THROWS_WITH(build_plan(Strategy::dedicated, model, routing, mesh, owners),
                      Catch::Contains("outside [0, 3)"));
  }
}
