// The memory model (core/cost/memory_model) on a model small enough to count by hand: what each kind
// of Plan keeps per GPU follows from what the Plan does (shards, owners, run-ahead replicas).
#include <string>

#include "catch_compat.hpp"
#include "two_block_model.hpp"
#include "core/error.hpp"
#include "core/cost/memory_model.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"

using namespace dmuon;

namespace {

// 560 elements: embedding and head 80 each (AdamW, outside any block), and two blocks of a
// norm (8, AdamW), wq 8x8 and w1 16x8 (Muon): 384 Muon elements, 176 AdamW; the largest
// block 200 elements, the largest Muon parameter 128, the largest block's Muon parameters 192.
ModelSpec small_model() { return test::two_block_model("small", 10, 8); }

TrainingSpec small_training() {
  TrainingSpec t;
  t.seq_len = 10;  // activations: 34 B x hidden 8 x 10 tokens = 2720 B per block
  t.micro_batch = 1;
  t.prefetch_layers = 1;  // two bf16 blocks in flight
  return t;
}

struct Fixture {
  ModelSpec model = small_model();
  Routing routing = route_parameters(model, {});
  TrainingSpec training = small_training();

  // Matrices: layers.0.wq, layers.0.w1, layers.1.wq, layers.1.w1; `owner` one rank each.
  MemoryBreakdown memory(Strategy s, const Mesh& mesh, const std::vector<int>& owner = {0, 0, 1, 2}) const {
    const Plan plan = build_plan(s, model, routing, mesh, owner);
    return memory_per_gpu(plan, model, routing, training);
  }
};

}  // namespace

TEST_CASE("the small model is what the hand counts assume", "[memory]") {
  const Fixture f;
  CHECK(f.routing.muon_numel == 384);
  CHECK(f.routing.adamw_numel == 176);
  CHECK(f.routing.muon_matrices.size() == 4);
}

TEST_CASE("adamw shards master, gradient and both moments by the shard count", "[memory]") {
  const Fixture f;
  const MemoryBreakdown m = f.memory(Strategy::adamw, Mesh{1, 4});
  CHECK(m.master_bytes == 4.0 * 560 / 4);
  CHECK(m.grad_bytes == 4.0 * 560 / 4);
  CHECK(m.state_bytes == 8.0 * 560 / 4);  // every element is AdamW's, Muon-routed ones too
  // Two bf16 blocks in flight and one block's fp32 gradient; no Newton-Schulz workspace.
  CHECK(m.transient_bytes == 2.0 * 2 * 200 + 4.0 * 200);
  CHECK(m.activation_bytes == 2 * 2720.0);
  // A 2-D mesh shards over its shard dimension only (HSDP replicates the shards).
  CHECK(f.memory(Strategy::adamw, Mesh{2, 2}).master_bytes == 4.0 * 560 / 2);
}

TEST_CASE("fsdp-gather shards Muon momentum and AdamW moments and adds the NS workspace", "[memory]") {
  const Fixture f;
  const MemoryBreakdown m = f.memory(Strategy::fsdp_gather, Mesh{1, 4});
  CHECK(m.master_bytes == 560.0);
  CHECK(m.state_bytes == (4.0 * 384 + 8.0 * 176) / 4);
  CHECK(m.transient_bytes == 2.0 * 2 * 200 + 4.0 * 200 + 4 * 2 * 128.0);
  // zero1-a2a keeps the same shards (its owners hold no whole matrix between steps).
  const MemoryBreakdown z = f.memory(Strategy::zero1_a2a, Mesh{1, 4}, {0, 1, 2, 3});
  CHECK(z.total_bytes() == m.total_bytes());
}

TEST_CASE("ddp-redundant keeps everything on every GPU, also on one GPU", "[memory]") {
  const Fixture f;
  for (Mesh mesh : {Mesh{1, 4}, Mesh{1, 1}}) {
    const MemoryBreakdown m = f.memory(Strategy::ddp_redundant, mesh);
    CHECK(m.master_bytes == 4.0 * 560);
    CHECK(m.grad_bytes == 4.0 * 560);
    CHECK(m.state_bytes == 4.0 * 384 + 8.0 * 176);
    CHECK(m.transient_bytes == 2.0 * 560 + 4 * 2 * 128.0);  // bf16 copy of every weight
  }
  // On one GPU FSDP2 still unshards block by block: the Plan's forward all-gathers tell.
  CHECK(f.memory(Strategy::fsdp_gather, Mesh{1, 1}).transient_bytes == 2.0 * 2 * 200 + 4.0 * 200 + 4 * 2 * 128.0);
}

TEST_CASE("owner strategies charge the most-loaded owner's whole matrices", "[memory]") {
  const Fixture f;
  // Rank 0 owns layers.0.wq and layers.0.w1: 64 + 128 = 192 elements, the most.
  const MemoryBreakdown m = f.memory(Strategy::dedicated, Mesh{1, 4});
  CHECK(m.master_bytes == 4.0 * 192 + 4.0 * 176 / 4);
  CHECK(m.grad_bytes == 4.0 * 192 + 4.0 * 176 / 4);
  CHECK(m.state_bytes == 4.0 * 192 + 8.0 * 176 / 4);
  // bf16 packed copy of the owned matrices, two blocks in flight, the largest block's Muon
  // gradients in fp32, the NS workspace.
  CHECK(m.transient_bytes == 2.0 * 192 + 2.0 * 2 * 200 + 4.0 * 192 + 4 * 2 * 128.0);
  // Spread evenly, the most-loaded owner holds one w1 (128).
  CHECK(f.memory(Strategy::dedicated, Mesh{1, 4}, {0, 1, 2, 3}).master_bytes == 4.0 * 128 + 4.0 * 176 / 4);
}

TEST_CASE("run-ahead broadcasts add a bf16 replica of every Muon matrix", "[memory]") {
  const Fixture f;
  for (Mesh mesh : {Mesh{1, 4}, Mesh{2, 2}}) {
    INFO("mesh " << mesh.to_string());
    const Plan striped = build_plan(Strategy::owner_striped, f.model, f.routing, mesh, {0, 0, 1, 2});
    bool run_ahead = false;
    for (const auto& ops : striped.ranks) {
      for (const Op& op : ops) run_ahead = run_ahead || op.run_ahead;
    }
    REQUIRE(run_ahead);
    const MemoryBreakdown with = memory_per_gpu(striped, f.model, f.routing, f.training);
    const MemoryBreakdown dedicated = f.memory(Strategy::dedicated, mesh);
    CHECK(with.transient_bytes - dedicated.transient_bytes == 2.0 * 384);
    CHECK(with.master_bytes == dedicated.master_bytes);

    // The model reads the Plan, not the strategy's name: the same Plan without run-ahead ops
    // holds no replica.
    PlanOptions o;
    o.striped_run_ahead = false;
    const Plan plain = build_plan(Strategy::owner_striped, f.model, f.routing, mesh, {0, 0, 1, 2}, o);
    CHECK(memory_per_gpu(plain, f.model, f.routing, f.training).transient_bytes == dedicated.transient_bytes);
  }
}

TEST_CASE("activation checkpointing keeps each block's input and one whole block", "[memory]") {
  Fixture f;
  f.training.activation_checkpointing = true;
  CHECK(activation_bytes(f.model, f.training) == 2 * (2.0 * 8 * 10) + 2720.0);
}

TEST_CASE("a breakdown over the GPU's memory fails naming the strategy and every part", "[memory]") {
  MemoryBreakdown m;
  m.master_bytes = 3.0 * (1 << 30);
  m.activation_bytes = 1.0 * (1 << 30);
  CHECK_NOTHROW(check_fits(Strategy::adamw, m, 4));
  try {
    check_fits(Strategy::ddp_redundant, m, 3.5);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "strategy ddp-redundant needs 4.00 GiB per GPU (master 3.00 + grads 0.00 + optimizer state 0.00 + "
          "transient 0.00 + activations 1.00 GiB) but cluster.gpu_memory_GiB is 3.5");
  }
}
