// The CPU plan interpreter: every strategy's plan, on 1-D meshes and a 2x2 mesh, reproduces the
// single-device reference (bitwise for `dedicated` on 1-D meshes, whose reductions sum in rank
// order); collectives have NCCL's reduction orders; broken plans end in a clear error within
// seconds instead of a hang.
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "harness/verify/distributed_checks.hpp"
#include "core/error.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"
#include "reference/model_step.hpp"
#include "reference/plan_interpreter.hpp"

using namespace dmuon;
using dmuon::ref::PlanInterpreter;
using dmuon::ref::Rounding;
using Params = std::vector<Eigen::VectorXd>;
using RankParams = std::vector<Params>;  // [rank][param]

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
  o.striped_all_reduce_from_nodes = 3;  // owner-striped: ring chains on 2 x n, all-reduces from 3 x n
  return build_plan(s, model, routing, mesh, round_robin_owners(routing, positions), o);
}

Eigen::VectorXd gaussian(std::int64_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::VectorXd v(n);
  for (std::int64_t i = 0; i < n; ++i) v[i] = normal(rng);
  return v;
}

Params random_params(const ModelSpec& model, unsigned seed) {
  std::mt19937_64 rng(seed);
  Params out;
  for (const auto& p : model.params) out.push_back(gaussian(p.numel(), rng));
  return out;
}

RankParams random_grads(const ModelSpec& model, int world, unsigned seed) {
  RankParams out;
  for (int r = 0; r < world; ++r) out.push_back(random_params(model, seed * 1000 + static_cast<unsigned>(r)));
  return out;
}

bool bitwise_equal(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() && (a.array() == b.array()).all();
}

double relative_difference(const Eigen::VectorXd& got, const Eigen::VectorXd& want) {
  return (got - want).norm() / want.norm();
}

// Two steps of the plan and of the single-device reference from the same parameters and
// gradients; then every rank's parameters against the reference.
void check_strategy(Strategy s, const Mesh& mesh, const std::string& preset, Rounding rounding) {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  const auto config = optimizer_preset(preset);
  const Params initial = random_params(model, 7);
  PlanInterpreter interpreter(build(s, model, routing, mesh), model, routing, config, rounding, initial);
  ref::ModelStep reference(model, routing, config, s == Strategy::adamw, initial, rounding);
  for (unsigned step = 1; step <= 2; ++step) {
    const RankParams grads = random_grads(model, mesh.world(), step);
    interpreter.step(grads);
    reference.step(grads);
  }
  const RankParams got = interpreter.params_after_forward();
  // dedicated on a 1-D mesh reduces Muon gradients in rank order, exactly as the reference.
  const bool bitwise = s == Strategy::dedicated && mesh.replicate == 1;
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    INFO(to_string(s) << " on mesh " << mesh.to_string() << ", preset " << preset << ", parameter "
                      << model.params[p].name);
    REQUIRE(relative_difference(reference.params()[p], initial[p]) > 1e-6);  // the step changed it
    for (std::size_t r = 0; r < got.size(); ++r) {
      INFO("rank " << r);
      CHECK(bitwise_equal(got[r][p], got[0][p]));
    }
    if (bitwise && routing.per_param[p] == Update::muon) {
      CHECK(bitwise_equal(got[0][p], reference.params()[p]));
    } else {
      CHECK(relative_difference(got[0][p], reference.params()[p]) <= 1e-12);
    }
  }
}

const std::vector<Mesh>& meshes() {
  static const std::vector<Mesh> all = {Mesh{1, 1}, Mesh{1, 2}, Mesh{1, 3}, Mesh{1, 4}, Mesh{1, 8}, Mesh{2, 2}};
  return all;
}

// What two steps of a (possibly broken) plan ended in.
struct Outcome {
  std::string message = "(no error)";
  double seconds = 0;
  std::vector<std::string> rank_errors;
  RankParams params;  // after a forward, when no error
};

Outcome run_two_steps(const Plan& plan) {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  PlanInterpreter interpreter(plan, model, routing, optimizer_preset("torch"), Rounding::exact,
                              random_params(model, 7));
  const auto start = std::chrono::steady_clock::now();
  Outcome out;
  try {
    for (unsigned step = 1; step <= 2; ++step) interpreter.step(random_grads(model, plan.mesh.world(), step));
    out.params = interpreter.params_after_forward();
  } catch (const Error& e) {
    out.message = e.what();
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.rank_errors = interpreter.rank_errors();
  return out;
}

std::string validate_error(const Plan& plan, const ModelSpec& model, const Routing& routing) {
  try {
    plan.validate(model, routing);
  } catch (const Error& e) {
    return e.what();
  }
  return "(valid)";
}

// Index of the first (or last) op of `kind` on one rank.
int find_op(const Plan& plan, int rank, OpKind kind, bool last = false) {
  const auto& ops = plan.ranks[static_cast<std::size_t>(rank)];
  int found = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (ops[static_cast<std::size_t>(i)].kind != kind) continue;
    found = i;
    if (!last) break;
  }
  REQUIRE(found >= 0);
  return found;
}

void erase_op(Plan& plan, int rank, int index) {
  auto& ops = plan.ranks[static_cast<std::size_t>(rank)];
  ops.erase(ops.begin() + index);
  for (auto& op : ops) op.deps.clear();  // keep indices valid after the erase
}

}  // namespace

TEST_CASE("every strategy's plan reproduces the single-device reference", "[interpreter]") {
  for (Strategy s : all_strategies()) {
    for (const Mesh& mesh : meshes()) check_strategy(s, mesh, "torch", Rounding::exact);
  }
}

TEST_CASE("dedicated reproduces the reference with DMuon's preset and with emulated rounding", "[interpreter]") {
  for (const Mesh& mesh : meshes()) check_strategy(Strategy::dedicated, mesh, "dmuon", Rounding::exact);
  check_strategy(Strategy::dedicated, Mesh{1, 3}, "dmuon", Rounding::emulate);
  check_strategy(Strategy::dedicated, Mesh{1, 2}, "torch", Rounding::emulate);
}

TEST_CASE("owner-striped reproduces the reference on 2-D meshes of world 8 and 6", "[interpreter]") {
  // Its striped collectives (scatter on the owner's node, one broadcast per rail, all-gather in
  // every node; reduce-scatter, reduce per rail, gather to the owner) only exist on 2-D meshes.
  check_strategy(Strategy::owner_striped, Mesh{2, 4}, "torch", Rounding::exact);
  check_strategy(Strategy::owner_striped, Mesh{3, 2}, "dmuon", Rounding::exact);
  check_strategy(Strategy::owner_striped, Mesh{4, 2}, "torch", Rounding::emulate);
}

TEST_CASE("collectives follow NCCL's reduction orders", "[interpreter]") {
  // Three ranks holding 1e16, 1 and -1e16 in every element: the sum depends on the order.
  // Group order (reduce): (1e16 + 1) - 1e16 = 0. The ring sums chunk c from member c+1:
  // chunk 0: (1 - 1e16) + 1e16 = 0, chunk 1: (-1e16 + 1e16) + 1 = 1, chunk 2: 0.
  Plan plan;
  plan.mesh = Mesh{1, 3};
  plan.groups = {{"world", {0, 1, 2}}};
  plan.ranks.resize(3);
  const std::vector<double> values = {1e16, 1.0, -1e16};
  auto run = [&](Op op) {
    ref::RankBuffers buffers(3, {3});
    for (int r = 0; r < 3; ++r) buffers.buffer(r, 0, BufferKind::grad).setConstant(values[static_cast<std::size_t>(r)]);
    op.buffer = BufferKind::grad;
    op.group = 0;
    ref::check_collective(op, plan.groups[0], buffers, "test");
    ref::move_collective_data(op, plan.groups[0], buffers);
    std::vector<Eigen::VectorXd> out;
    for (int r = 0; r < 3; ++r) out.push_back(buffers.buffer(r, 0, BufferKind::grad));
    return out;
  };
  Op op;
  op.kind = OpKind::reduce;
  op.root = 1;
  op.regions = {{0, 0, 3}};
  auto out = run(op);
  CHECK(out[1] == Eigen::Vector3d(0, 0, 0));
  CHECK(out[0] == Eigen::Vector3d::Constant(1e16));  // non-roots keep their data
  op.kind = OpKind::all_reduce;
  for (const auto& v : run(op)) CHECK(v == Eigen::Vector3d(0, 1, 0));
  op.reduce_op = ReduceOp::avg;
  for (const auto& v : run(op)) CHECK(v == Eigen::Vector3d(0, 1.0 / 3.0, 0));
  Op rs;
  rs.kind = OpKind::reduce_scatter;
  rs.parts = {{0, 0, 1}, {0, 1, 1}, {0, 2, 1}};
  out = run(rs);
  CHECK(out[0][0] == 0.0);
  CHECK(out[1][1] == 1.0);
  CHECK(out[2][2] == 0.0);
  CHECK(out[0][1] == 1e16);  // parts other than a member's own are not written
  Op gather = rs;
  gather.kind = OpKind::all_gather;
  for (const auto& v : run(gather)) CHECK(v == Eigen::Vector3d(1e16, 1, -1e16));
  Op a2a;
  a2a.kind = OpKind::all_to_all;
  a2a.transfers = {{0, 2, {0, 0, 1}, {0, 1, 1}}, {2, 0, {0, 1, 1}, {0, 0, 1}}};
  out = run(a2a);
  CHECK(out[2] == Eigen::Vector3d(-1e16, 1e16, -1e16));
  CHECK(out[0] == Eigen::Vector3d(-1e16, 1e16, 1e16));  // sends read before receives write
}

TEST_CASE("broken plans end in a clear error within seconds", "[interpreter]") {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  const Plan good = build(Strategy::dedicated, model, routing, Mesh{1, 3});

  SECTION("a collective missing on one rank, others after it") {
    Plan bad = good;
    erase_op(bad, 2, find_op(bad, 2, OpKind::reduce));
    const Outcome f = run_two_steps(bad);
    CHECK_THAT(f.message, Catch::Contains("deadlock"));
    CHECK_THAT(f.message, Catch::Contains("rank 0 op"));
    CHECK_THAT(f.message, Catch::Contains("rank 2 op"));
    CHECK(f.seconds < 5);
  }
  SECTION("the last collective missing on one rank") {
    Plan bad = good;
    erase_op(bad, 2, find_op(bad, 2, OpKind::reduce_scatter, true));
    const Outcome f = run_two_steps(bad);
    CHECK_THAT(f.message, Catch::Contains("deadlock"));
    CHECK_THAT(f.message, Catch::Contains("rank 2 finished its ops without issuing collective"));
    CHECK(f.seconds < 5);
  }
  SECTION("a collective whose size differs on one rank") {
    Plan bad = good;
    bad.ranks[1][static_cast<std::size_t>(find_op(bad, 1, OpKind::broadcast))].regions.front().count -= 1;
    const Outcome f = run_two_steps(bad);
    CHECK_THAT(f.message, Catch::Contains("does not match"));
    CHECK_THAT(f.message, Catch::Contains("rank 1 op"));
    CHECK_THAT(f.message, Catch::Contains("regions"));
    CHECK(f.seconds < 5);
    int echoes = 0;  // the members that waited are told which rank failed
    for (const auto& e : f.rank_errors) echoes += e.find("failed: ") != std::string::npos;
    CHECK(echoes >= 1);
  }
  SECTION("two ranks waiting on different collectives of one group") {
    Plan bad = good;
    const int first = find_op(bad, 0, OpKind::broadcast), second = find_op(bad, 0, OpKind::broadcast, true);
    std::swap(bad.ranks[0][static_cast<std::size_t>(first)], bad.ranks[0][static_cast<std::size_t>(second)]);
    const Outcome f = run_two_steps(bad);
    CHECK_THAT(f.message, Catch::Contains("deadlock: no rank can proceed"));
    for (const char* rank : {"rank 0 op", "rank 1 op", "rank 2 op"}) CHECK_THAT(f.message, Catch::Contains(rank));
    CHECK(f.seconds < 5);
  }
  SECTION("a rank that throws wakes the ranks waiting for it") {
    Plan bad = build(Strategy::zero1_a2a, model, routing, Mesh{1, 2});
    bad.ranks[1][static_cast<std::size_t>(find_op(bad, 1, OpKind::newton_schulz))].matrices = {9999};
    const Outcome f = run_two_steps(bad);
    CHECK_THAT(f.message, Catch::Contains("rank 1 op"));
    CHECK_THAT(f.message, Catch::Contains("unknown Muon matrix 9999"));
    CHECK_THAT(f.rank_errors[0], Catch::Contains("rank 1 failed: rank 1 op"));
    CHECK(f.seconds < 5);
  }
  SECTION("a matrix left without a Newton-Schulz runs, differs, and validate names it") {
    Plan bad = good;
    const int ns = find_op(bad, 0, OpKind::newton_schulz);
    const std::size_t lost = bad.ranks[0][static_cast<std::size_t>(ns)].matrices.front();
    erase_op(bad, 0, ns);
    const Outcome f = run_two_steps(bad);
    CHECK(f.message == "(no error)");
    ref::ModelStep reference(model, routing, optimizer_preset("torch"), false, random_params(model, 7), Rounding::exact);
    for (unsigned step = 1; step <= 2; ++step) reference.step(random_grads(model, 3, step));
    const std::size_t param = routing.muon_matrices[lost].param;
    REQUIRE(f.params.size() == 3);
    CHECK(relative_difference(f.params[1][param], reference.params()[param]) > 1e-6);
    CHECK_THAT(validate_error(bad, model, routing), Catch::Contains("has no Newton-Schulz (no owner)"));
  }
  SECTION("a collective region outside its parameter on every rank") {
    Plan bad = good;
    for (int r = 0; r < 3; ++r) {
      auto& op = bad.ranks[static_cast<std::size_t>(r)][static_cast<std::size_t>(find_op(bad, r, OpKind::broadcast))];
      op.regions.front().count += 1000000;
    }
    const Outcome f = run_two_steps(bad);
    CHECK_THAT(f.message, Catch::Contains("outside parameter"));
    CHECK_THAT(f.message, Catch::Contains("broadcast"));
    CHECK(f.seconds < 5);
  }
}

TEST_CASE("a wait that nothing else ends stops at the deadline", "[interpreter]") {
  // Rank 1 stays "running" (it never arrives, finishes or fails), so no deadlock can be proven.
  Plan plan;
  plan.mesh = Mesh{1, 2};
  plan.groups = {{"world", {0, 1}}};
  Op op;
  op.kind = OpKind::broadcast;
  op.group = 0;
  op.root = 0;
  op.collective = 0;
  op.regions = {{0, 0, 1}};
  plan.ranks = {{op}, {op}};
  ref::RankBuffers buffers(2, {1});
  const auto start = std::chrono::steady_clock::now();
  ref::Rendezvous rendezvous(plan, buffers, start + std::chrono::milliseconds(200), 0.2);
  CHECK_THROWS_WITH(rendezvous.arrive(0, 0), Catch::Contains("timeout after 0.2 s: rank 0 op 0 (broadcast, collective 0) "
                                                              "waits; rank 1 is running"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK_THAT(rendezvous.first_error(), Catch::Contains("timeout"));
}

TEST_CASE("the interpreter rejects inputs of the wrong shape", "[interpreter]") {
  const auto model = tiny_model();
  const auto routing = route_parameters(model, {});
  const Plan plan = build(Strategy::dedicated, model, routing, Mesh{1, 2});
  Params initial = random_params(model, 7);
  PlanInterpreter interpreter(plan, model, routing, optimizer_preset("torch"), Rounding::exact, initial);
  RankParams grads = random_grads(model, 2, 1);
  grads[1][3].resize(5);
  CHECK_THROWS_WITH(interpreter.step(grads), Catch::Contains("rank 1 gradient of '" + model.params[3].name + "'"));
  CHECK_THROWS_WITH(interpreter.step(random_grads(model, 3, 1)), Catch::Contains("gradients for 3 ranks"));
  initial.pop_back();
  CHECK_THROWS_WITH(PlanInterpreter(plan, model, routing, optimizer_preset("torch"), Rounding::exact, initial),
                    Catch::Contains("initial parameters"));
}
