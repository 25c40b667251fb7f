// Host-side logic of the NCCL executor, no GPU needed: which buffer ranges a rank allocates for
// a Plan (a dedicated owner holds optimizer state only for what it owns) and which cross-stream
// waits it derives (the Plan's dependencies plus write-after-read).
#include <algorithm>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/model/model_yaml.hpp"
#include "core/plan/step_planner.hpp"
#include "core/io/yaml_reader.hpp"
#include "kernels/exec/buffers.hpp"
#include "kernels/exec/deps.hpp"

using namespace dmuon;

namespace {

ModelSpec tiny_model() {
  const char* text = R"(name: layout-tiny
dtype: bf16
transformer: {hidden: 32, layers: 2, heads: 4, kv_heads: 2, ffn: 48, vocab: 100, qkv_bias: true}
)";
  return parse_model(YamlValue::load_string(text, "layout-tiny"));
}

StepPlan plan_of(Strategy s, const ModelSpec& model, const Routing& routing) {
  return plan_step(model, routing, optimizer_preset("torch"), s, make_mesh(1, 2, "mesh"), CostModel(device_profile("h200")));
}

constexpr int K(BufferKind b) { return static_cast<int>(b); }

}  // namespace

TEST_CASE("a dedicated owner allocates momentum and NS buffers only for the matrices it owns", "[nccl][layout]") {
  const ModelSpec model = tiny_model();
  const Routing routing = route_parameters(model, {});
  const StepPlan sp = plan_of(Strategy::dedicated, model, routing);
  for (int rank = 0; rank < 2; ++rank) {
    const exec::Footprint f = exec::plan_footprint(sp.plan, rank, model, routing);
    for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) {
      const Region r = matrix_region(routing, m);
      const exec::Range& mom = f.ranges[r.param][static_cast<std::size_t>(K(BufferKind::momentum))];
      const bool owner = sp.plan.matrix_owner[m] == rank;
      INFO("rank " << rank << " matrix " << routing.muon_matrices[m].name);
      CHECK(owner == !mom.empty());
      CHECK(owner == (std::find(f.ns_order.begin(), f.ns_order.end(), r.param) != f.ns_order.end()));
      // Every rank receives every parameter (forward broadcast) and every gradient (backward).
      CHECK_FALSE(f.ranges[r.param][static_cast<std::size_t>(K(BufferKind::param))].empty());
    }
  }
}

TEST_CASE("FSDP ranks hold AdamW state for their own shard only", "[nccl][layout]") {
  const ModelSpec model = tiny_model();
  const Routing routing = route_parameters(model, {});
  const StepPlan sp = plan_of(Strategy::adamw, model, routing);
  for (int rank = 0; rank < 2; ++rank) {
    const exec::Footprint f = exec::plan_footprint(sp.plan, rank, model, routing);
    for (std::size_t p = 0; p < model.params.size(); ++p) {
      const Region shard = shard_region(model, p, 2, rank);
      const exec::Range& m = f.ranges[p][static_cast<std::size_t>(K(BufferKind::adam_m))];
      CHECK(m.lo == shard.offset);
      CHECK(m.hi == shard.offset + shard.count);
    }
  }
}

TEST_CASE("cross-stream waits: read-after-write from the plan, write-after-read derived", "[nccl][deps]") {
  const ModelSpec model = tiny_model();
  const Routing routing = route_parameters(model, {});
  std::vector<Op> ops(3);
  ops[0].kind = OpKind::momentum;  // compute: reads grad[0], writes ns_input[0]
  ops[0].regions = {{0, 0, 4}};
  ops[1].kind = OpKind::reduce;    // comm: writes grad[0] after the momentum read it
  ops[1].stream = StreamKind::comm;
  ops[1].buffer = BufferKind::grad;
  ops[1].regions = {{0, 0, 4}};
  ops[2].kind = OpKind::adamw;     // compute: reads grad[0] the reduce wrote
  ops[2].regions = {{0, 0, 4}};
  ops[2].deps = {1};
  const auto waits = exec::cross_stream_waits(ops, routing);
  CHECK(waits[0].empty());
  CHECK(waits[1] == std::vector<int>{0});  // write after read: not in the plan's deps
  CHECK(waits[2] == std::vector<int>{1});
}
