// core/plan/step_units: the unit of each forward/backward op (buckets and run-ahead collectives
// included, every rank agreeing), the step's issue order (forward ascending with FSDP2's
// prefetch gate, backward in reverse), and the compute stand-in's GEMMs against
// forward_backward_cost's FLOPs.
#include <algorithm>
#include <map>
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/model/model_yaml.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/plan/step_units.hpp"

using namespace dmuon;

namespace {

ModelSpec model(const std::string& file) { return load_model_file(std::string(DMUON_SOURCE_DIR) + "/scenarios/models/" + file); }

TrainingSpec training(std::int64_t seq, std::int64_t micro_batch) {
  TrainingSpec t;
  t.seq_len = seq;
  t.micro_batch = micro_batch;
  return t;
}

std::vector<int> round_robin(const Routing& r, int positions) {
  std::vector<int> owner;
  for (std::size_t m = 0; m < r.muon_matrices.size(); ++m) owner.push_back(static_cast<int>(m % positions));
  return owner;
}

struct Setup {
  ModelSpec model;
  Routing routing;
  ForwardBackwardCost cost;
  Plan plan;
};

Setup setup(Strategy s, Mesh mesh, PlanOptions o = {}) {
  Setup x{model("qwen2-0.5b.yaml"), {}, {}, {}};
  x.routing = route_parameters(x.model, {});
  x.cost = forward_backward_cost(x.model, training(512, 1), 989);
  const int positions = s == Strategy::zero1_a2a ? mesh.shard : mesh.world();
  x.plan = build_plan(s, x.model, x.routing, mesh, round_robin(x.routing, positions), o);
  return x;
}

// Per communicator group, the collective ids each member issues, in schedule order.
std::map<int, std::map<int, std::vector<std::int64_t>>> issue_order(const Plan& plan, const StepUnits& units) {
  std::map<int, std::map<int, std::vector<std::int64_t>>> out;  // group -> rank -> ids
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    for (const StepItem& item : step_schedule(plan, r, units, 1).items) {
      if (item.kind != StepItemKind::op) continue;
      const Op& op = plan.ranks[static_cast<std::size_t>(r)][static_cast<std::size_t>(item.index)];
      out[op.group][r].push_back(op.collective);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("an op belongs to the lowest unit it touches; buckets and collectives agree over ranks", "[step_units]") {
  for (Strategy s : {Strategy::adamw, Strategy::ddp_redundant, Strategy::dedicated, Strategy::owner_striped}) {
    INFO(to_string(s));
    PlanOptions o;
    o.ddp_bucket_bytes = 8 << 20;               // buckets spanning several blocks
    o.striped_bucket_bytes_per_rail = 16 << 20;  // owner-striped: several blocks a bucket
    const Setup x = setup(s, Mesh{2, 2}, o);
    const StepUnits units = assign_step_units(x.plan, x.routing, x.cost);
    REQUIRE(units.units == static_cast<int>(x.cost.units.size()));
    std::map<int, int> bucket_unit;
    bool spanning_bucket = false;
    for (std::size_t r = 0; r < x.plan.ranks.size(); ++r) {
      for (std::size_t i = 0; i < x.plan.ranks[r].size(); ++i) {
        const Op& op = x.plan.ranks[r][i];
        const int u = units.unit_of_op[r][i];
        if (op.phase == Phase::optimizer) {
          CHECK(u == -1);
          continue;
        }
        const OpUnitSpan span = op_unit_span(op, x.routing, x.cost);
        if (op.bucket < 0) {
          CHECK(u == span.lowest);
          continue;
        }
        CHECK(u <= span.lowest);  // a bucket's unit is its lowest op's
        spanning_bucket = spanning_bucket || u < span.lowest || !span.single;
        auto [it, fresh] = bucket_unit.emplace(op.bucket, u);
        CHECK(it->second == u);
      }
    }
    if (s == Strategy::owner_striped) CHECK(spanning_bucket);
    // Every member of a communicator issues its collectives in one order (as NCCL needs).
    for (const auto& [group, per_rank] : issue_order(x.plan, units)) {
      for (const auto& [rank, ids] : per_rank) CHECK(ids == per_rank.begin()->second);
    }
  }
}

TEST_CASE("a DDP bucket spanning several units belongs to its lowest (latest in backward)", "[step_units]") {
  PlanOptions o;
  o.ddp_bucket_bytes = 64 << 20;
  const Setup x = setup(Strategy::ddp_redundant, Mesh{1, 2}, o);
  const StepUnits units = assign_step_units(x.plan, x.routing, x.cost);
  int spanning = 0;
  for (std::size_t i = 0; i < x.plan.ranks[0].size(); ++i) {
    const Op& op = x.plan.ranks[0][i];
    if (op.phase != Phase::backward) continue;
    const OpUnitSpan span = op_unit_span(op, x.routing, x.cost);
    spanning += !span.single;
    CHECK(units.unit_of_op[0][i] == span.lowest);
  }
  CHECK(spanning > 0);
}

TEST_CASE("the schedule runs forward units in order behind their collectives, backward in reverse", "[step_units]") {
  const Setup x = setup(Strategy::owner_striped, Mesh{2, 2});
  const StepUnits units = assign_step_units(x.plan, x.routing, x.cost);
  for (int rank = 0; rank < 4; ++rank) {
    const auto& ops = x.plan.ranks[static_cast<std::size_t>(rank)];
    const StepSchedule s = step_schedule(x.plan, rank, units, 1);
    std::vector<int> forward, backward;  // compute units in issue order
    std::map<int, int> forward_item;    // unit -> item
    int ops_seen = 0, gated = 0, run_ahead = 0;
    for (std::size_t k = 0; k < s.items.size(); ++k) {
      const StepItem& item = s.items[k];
      for (int a : item.after) CHECK(a < static_cast<int>(k));
      if (item.kind == StepItemKind::forward_compute) {
        forward.push_back(item.index);
        forward_item[item.index] = static_cast<int>(k);
        for (int a : item.after) CHECK(units.unit_of_op[static_cast<std::size_t>(rank)][static_cast<std::size_t>(s.items[static_cast<std::size_t>(a)].index)] == item.index);
      } else if (item.kind == StepItemKind::backward_compute) {
        backward.push_back(item.index);
        CHECK(item.after.empty());
      } else {
        ++ops_seen;
        const Op& op = ops[static_cast<std::size_t>(item.index)];
        const int u = units.unit_of_op[static_cast<std::size_t>(rank)][static_cast<std::size_t>(item.index)];
        if (op.phase == Phase::backward) {
          REQUIRE(item.after.size() == 1);
          const StepItem& c = s.items[static_cast<std::size_t>(item.after[0])];
          CHECK((c.kind == StepItemKind::backward_compute && c.index == u));
        } else if (op.run_ahead || u < 2) {
          run_ahead += op.run_ahead;
          CHECK(item.after.empty());
        } else {  // the prefetch gate: the forward compute of unit u - 2 (prefetch_layers 1)
          ++gated;
          REQUIRE(item.after.size() == 1);
          CHECK(item.after[0] == forward_item.at(u - 2));
        }
      }
    }
    CHECK(run_ahead > 0);
    CHECK(gated > 0);  // FSDP2's gathers of norms and embeddings are not run-ahead
    CHECK(ops_seen == static_cast<int>(std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.phase != Phase::optimizer; })));
    REQUIRE(static_cast<int>(forward.size()) == units.units);
    for (int u = 0; u < units.units; ++u) {
      CHECK(forward[static_cast<std::size_t>(u)] == u);
      CHECK(backward[static_cast<std::size_t>(u)] == units.units - 1 - u);
    }
  }
}

TEST_CASE("a dependency the unit order would reverse is refused, naming rank and ops", "[step_units]") {
  ForwardBackwardCost cost;
  cost.units.resize(2);
  cost.unit_of_param = {1, 0};
  Op later, earlier;  // op 0 touches unit 1, op 1 (unit 0) depends on it
  later.kind = earlier.kind = OpKind::all_gather;
  later.stream = earlier.stream = StreamKind::comm;
  later.phase = earlier.phase = Phase::forward;
  later.label = "b";
  earlier.label = "a";
  later.parts = {{0, 0, 4}};
  earlier.parts = {{1, 0, 4}};
  earlier.deps = {0};
  Plan plan;
  plan.ranks = {{later, earlier}};
  const StepUnits units = assign_step_units(plan, Routing{}, cost);
  CHECK(units.unit_of_op[0] == std::vector<int>{1, 0});
  CHECK_THROWS_WITH(step_schedule(plan, 0, units, 1),
                    "step schedule: rank 0 op 1 (all_gather 'a', forward) depends on rank 0 op 0 (all_gather 'b', forward), "
                    "which the unit order puts after it");
  CHECK_THROWS_WITH(step_schedule(plan, 0, units, -1), "training.prefetch_layers: must be >= 0, got -1");
  CHECK_THROWS_WITH(step_schedule(plan, 3, units, 1), "step schedule: rank 3 is not in the plan");
}

namespace {

// forward_backward_cost's non-attention forward FLOPs of each unit against the stand-in's.
void check_flops(const ModelSpec& m, const TrainingSpec& t) {
  const ForwardBackwardCost cost = forward_backward_cost(m, t, 989);
  const TransformerConfig& c = m.transformers.front().config;
  const double attention = 2.0 * double(t.seq_len * t.seq_len) * double(c.heads * c.effective_head_dim()) * double(t.micro_batch);
  int blocks = 0;
  for (const ComputeUnit& u : cost.units) {
    INFO(m.name << " unit (" << u.tower << ", " << u.part << ", " << u.layer << ")");
    double forward = 0, backward = 0;
    for (const StandinGemm& g : standin_gemms(u, Phase::forward)) forward += g.flops();
    for (const StandinGemm& g : standin_gemms(u, Phase::backward)) backward += g.flops();
    const double expected = u.forward_flops - (u.part == 1 ? attention : 0.0);
    CHECK((forward > 0) == (u.part != 0));  // the embedding unit is a lookup, no GEMM
    CHECK(forward == Approx(expected).epsilon(1e-12));
    CHECK(backward == Approx(2 * expected).epsilon(1e-12));
    blocks += u.part == 1;
  }
  CHECK(blocks == c.layers);
}

}  // namespace

TEST_CASE("the stand-in's GEMM FLOPs are forward_backward_cost's non-attention FLOPs per unit", "[step_units]") {
  check_flops(model("qwen2-0.5b.yaml"), training(2048, 2));  // tied head: its GEMM in the last unit
  TrainingSpec moe = training(4096, 1);
  moe.moe_top_k = 8;  // 128 experts, 4096 x 8 / 128 = 256 tokens each
  check_flops(model("qwen3-30b-a3b.yaml"), moe);
  const ComputeUnit head = forward_backward_cost(model("qwen2-0.5b.yaml"), training(2048, 2), 989).units.back();
  const auto fwd = standin_gemms(head, Phase::forward);
  REQUIRE(fwd.size() == 1);
  CHECK((fwd[0].m == 4096 && fwd[0].k == 896 && fwd[0].n == 151936));
  const auto bwd = standin_gemms(head, Phase::backward);
  REQUIRE(bwd.size() == 2);
  CHECK((bwd[0].m == 4096 && bwd[0].k == 151936 && bwd[0].n == 896));  // dX
  CHECK((bwd[1].m == 896 && bwd[1].k == 4096 && bwd[1].n == 151936));   // dW
  CHECK_THROWS_AS(standin_gemms(head, Phase::optimizer), Error);
}
