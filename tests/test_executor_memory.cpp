// The executor's buffer layout as core/cost/executor_memory prices it, on a model small enough
// to count by hand: per (parameter, kind) the range the rank's ops touch, whole bf16 param and
// grad buffers wherever a collective carries them, fp32 master only where the rank updates, and
// every sub-buffer rounded up to 256 bytes as kernels/exec/buffers.cpp allocates it.
#include <string>

#include "catch_compat.hpp"
#include "two_block_model.hpp"
#include "core/cost/executor_memory.hpp"
#include "core/model/routing.hpp"
#include "core/plan/plan_builders.hpp"

using namespace dmuon;

namespace {

// Every dimension a multiple of 256, so that every half of every parameter is a whole number of
// 256-byte units in bf16 and no sub-buffer is padded: embedding and head 128x256 (AdamW), two
// blocks of norm 256 (AdamW), wq 256x256 and w1 512x256 (Muon).
constexpr double kMuon = 2 * (65536.0 + 131072.0);    // 393216
constexpr double kAdamW = 2 * 32768.0 + 2 * 256.0;     // 66048
constexpr double kTotal = kMuon + kAdamW;              // 459264

ModelSpec aligned_model() { return test::two_block_model("aligned", 128, 256); }

struct Fixture {
  ModelSpec model = aligned_model();
  Routing routing = route_parameters(model, {});
  // Matrices: layers.0.wq, layers.0.w1, layers.1.wq, layers.1.w1.
  MemoryBreakdown busiest(Strategy s, const std::vector<int>& owner = {0, 0, 1, 1}) const {
    return executor_memory_per_gpu(build_plan(s, model, routing, Mesh{1, 2}, owner), model, routing);
  }
};

}  // namespace

TEST_CASE("the aligned model is what the hand counts assume", "[memory][executor]") {
  const Fixture f;
  CHECK(double(f.routing.muon_numel) == kMuon);
  CHECK(double(f.routing.adamw_numel) == kAdamW);
}

TEST_CASE("adamw on two GPUs: whole bf16 param and grad, sharded fp32 master and moments", "[memory][executor]") {
  const MemoryBreakdown m = Fixture().busiest(Strategy::adamw);
  CHECK(m.transient_bytes == 2 * kTotal);  // the forward all-gather writes every element
  CHECK(m.grad_bytes == 2 * kTotal);       // the reduce-scatter reads every element, bf16
  CHECK(m.master_bytes == 4 * kTotal / 2);
  CHECK(m.state_bytes == 8 * kTotal / 2);
  CHECK(m.activation_bytes == 0);
}

TEST_CASE("ddp-redundant: everything on every GPU, NS input and output over every matrix", "[memory][executor]") {
  const MemoryBreakdown m = Fixture().busiest(Strategy::ddp_redundant);
  CHECK(m.master_bytes == 4 * kTotal);
  CHECK(m.grad_bytes == 2 * kTotal);
  CHECK(m.state_bytes == 4 * kMuon + 8 * kAdamW);
  CHECK(m.transient_bytes == 2 * kTotal + 2 * 2 * kMuon);  // bf16 param + NS input + NS output
}

TEST_CASE("dedicated: the busiest owner's matrices, whatever the strategy's name", "[memory][executor]") {
  const Fixture f;
  // Balanced owners: each rank owns one block's wq and w1.
  const double half = kMuon / 2;
  MemoryBreakdown m = f.busiest(Strategy::dedicated);
  CHECK(m.master_bytes == 4 * half + 4 * kAdamW / 2);
  CHECK(m.state_bytes == 4 * half + 8 * kAdamW / 2);
  CHECK(m.transient_bytes == 2 * kTotal + 2 * 2 * half);
  CHECK(m.grad_bytes == 2 * kTotal);
  // Rank 0 owns three of four matrices (262144 elements): it is the one reported.
  const double most = 65536.0 + 131072.0 + 65536.0;
  m = f.busiest(Strategy::dedicated, {0, 0, 0, 1});
  CHECK(m.master_bytes == 4 * most + 4 * kAdamW / 2);
  CHECK(m.state_bytes == 4 * most + 8 * kAdamW / 2);
  const Plan plan = build_plan(Strategy::dedicated, f.model, f.routing, Mesh{1, 2}, {0, 0, 0, 1});
  CHECK(executor_memory_of_rank(plan, 1, f.model, f.routing).total_bytes() < m.total_bytes());
  CHECK(executor_memory_of_rank(plan, 0, f.model, f.routing).total_bytes() == m.total_bytes());
}

TEST_CASE("every sub-buffer is rounded up to 256 bytes", "[memory][executor]") {
  ModelSpec model;
  model.name = "tiny";
  model.params.push_back(test::param("layers.0.norm", {10}, ParamRole::norm, 0));  // 20 B bf16, 40 B fp32
  const Routing routing = route_parameters(model, {});
  const Plan plan = build_plan(Strategy::adamw, model, routing, Mesh{1, 1}, {});
  const MemoryBreakdown m = executor_memory_per_gpu(plan, model, routing);
  CHECK(m.master_bytes == kExecutorAlignBytes);
  CHECK(m.grad_bytes == kExecutorAlignBytes);
  CHECK(m.state_bytes == 2 * kExecutorAlignBytes);  // AdamW m and v
  CHECK(m.transient_bytes == kExecutorAlignBytes);  // bf16 param
}
