// dmuon-bench kernels' whole-model figure (harness/bench/whole_model): every Muon matrix of a
// model counted once, each shape at the model's batch, summed against torch's per-matrix time;
// per-model counts survive merging shapes of two models; a shape without a timing is named and
// no speedup is claimed for that model.
#include <cmath>

#include "catch_compat.hpp"
#include "harness/bench/kernel_shapes.hpp"
#include "harness/bench/whole_model.hpp"

using namespace dmuon::bench;

TEST_CASE("per-model counts survive merging the shapes of two models") {
  std::vector<BenchShape> shapes;
  merge_shapes(shapes, {{4096, 4096, 64, {"big"}, {64}}, {1024, 4096, 64, {"big"}, {64}}});
  merge_shapes(shapes, {{4096, 4096, 8, {"small"}, {8}}});
  REQUIRE(shapes.size() == 2);
  CHECK(shapes[0].count == 64);  // the largest count: what the bench batches
  REQUIRE(shapes[0].models == std::vector<std::string>{"big", "small"});
  CHECK(shapes[0].counts == std::vector<int>{64, 8});
  // Real model files: Llama-3-8B has 224 Muon matrices in four shapes.
  const auto llama = shapes_from_models({std::string(DMUON_SOURCE_DIR) + "/scenarios/models/llama3-8b.yaml"});
  int total = 0;
  for (const auto& s : llama) {
    REQUIRE(s.counts.size() == 1);
    CHECK(s.counts[0] == s.count);
    total += s.counts[0];
  }
  CHECK(total == 224);
}

TEST_CASE("the whole-model sum prices each shape at the model's batch") {
  std::vector<BenchShape> shapes;
  merge_shapes(shapes, {{4096, 4096, 64, {"big"}, {64}}, {1024, 4096, 64, {"big"}, {64}}});
  merge_shapes(shapes, {{4096, 4096, 8, {"small"}, {8}}});
  const std::vector<ShapeTime> times = {
      {4096, 4096, "dmuon", 1, 3.0e-3, "standard"}, {4096, 4096, "dmuon", 4, 2.5e-3, "standard"}, {4096, 4096, "dmuon", 16, 2.0e-3, "standard"},
      {1024, 4096, "dmuon", 1, 0.3e-3, "standard"}, {1024, 4096, "dmuon", 16, 0.1e-3, "standard"}};
  const std::map<std::pair<long, long>, double> torch = {{{4096, 4096}, 4.0e-3}, {{1024, 4096}, 0.4e-3}};
  const auto w = whole_model_speedups(shapes, times, torch);
  REQUIRE(w.size() == 2);
  CHECK(w[0].model == "big");
  CHECK(w[0].complete());
  CHECK(w[0].matrices == 128);
  CHECK(w[0].seconds == Approx(64 * 2.0e-3 + 64 * 0.1e-3));  // batch 16 for both shapes
  CHECK(w[0].torch_seconds == Approx(64 * 4.0e-3 + 64 * 0.4e-3));
  CHECK(w[0].speedup() == Approx((64 * 4.4e-3) / (64 * 2.1e-3)));
  // "small" has 8 of 4096x4096: batch 16 exceeds its count, so batch 4 prices it.
  CHECK(w[1].model == "small");
  CHECK(w[1].matrices == 8);
  CHECK(w[1].seconds == Approx(8 * 2.5e-3));
  CHECK(w[0].torch_best_seconds == 0);  // no best times given
  CHECK(w[0].conservative_speedup() == w[0].speedup());
}

TEST_CASE("the parts name each shape's matrices, batch and implementation, and sum to the model") {
  std::vector<BenchShape> shapes;
  merge_shapes(shapes, {{14336, 4096, 64, {"big"}, {64}}, {4096, 4096, 64, {"big"}, {64}}});
  merge_shapes(shapes, {{4096, 4096, 8, {"small"}, {8}}});
  const std::vector<ShapeTime> times = {{14336, 4096, "dmuon", 64, 4.5e-3, "gram_sm90"},
                                        {4096, 4096, "dmuon", 1, 3.0e-3, "standard"},
                                        {4096, 4096, "dmuon", 64, 2.5e-3, "symmetric_sm90"}};
  const std::map<std::pair<long, long>, double> torch = {{{14336, 4096}, 9.0e-3}, {{4096, 4096}, 3.2e-3}};
  const std::map<std::pair<long, long>, double> best = {{{4096, 4096}, 3.0e-3}};
  const auto w = whole_model_speedups(shapes, times, torch, best);
  REQUIRE(w.size() == 2);
  REQUIRE(w[0].parts.size() == 2);
  const ModelPart& mlp = w[0].parts[0];
  CHECK(mlp.shape == "14336x4096");
  CHECK(mlp.count == 64);
  CHECK(mlp.batch == 64);
  CHECK(mlp.chosen == "gram_sm90");
  CHECK(mlp.seconds == Approx(64 * 4.5e-3));
  CHECK(mlp.torch_seconds == Approx(64 * 9.0e-3));
  CHECK(mlp.torch_best_seconds == 0);  // no best time for this shape
  const ModelPart& attn = w[0].parts[1];
  CHECK(attn.chosen == "symmetric_sm90");
  CHECK(attn.torch_best_seconds == Approx(64 * 3.0e-3));
  CHECK(w[0].seconds == Approx(mlp.seconds + attn.seconds));
  CHECK(w[0].torch_seconds == Approx(mlp.torch_seconds + attn.torch_seconds));
  CHECK(w[0].torch_best_seconds == 0);  // incomplete best: no model sum, though a part keeps its own
  // "small" prices its 8 matrices at batch 1 (64 exceeds its count): that call's implementation.
  REQUIRE(w[1].parts.size() == 1);
  CHECK(w[1].parts[0].batch == 1);
  CHECK(w[1].parts[0].chosen == "standard");
  CHECK(w[1].parts[0].seconds == Approx(8 * 3.0e-3));
  CHECK(w[1].torch_best_seconds == Approx(8 * 3.0e-3));
}

TEST_CASE("torch's best times give a second sum; targets take the lower speedup") {
  const std::vector<BenchShape> shapes = {{4096, 4096, 64, {"m"}, {64}}, {1024, 4096, 64, {"m"}, {64}}};
  const std::vector<ShapeTime> times = {{4096, 4096, "dmuon", 64, 2.0e-3, "standard"}, {1024, 4096, "dmuon", 64, 0.1e-3, "standard"}};
  // A disturbed median (5.5 ms) against a best of 3.3 ms, as torch's 4096 x 4096 read on an H100.
  const std::map<std::pair<long, long>, double> median = {{{4096, 4096}, 5.5e-3}, {{1024, 4096}, 0.6e-3}};
  const std::map<std::pair<long, long>, double> best = {{{4096, 4096}, 3.3e-3}, {{1024, 4096}, 0.35e-3}};
  auto w = whole_model_speedups(shapes, times, median, best);
  REQUIRE(w.size() == 1);
  CHECK(w[0].torch_best_seconds == Approx(64 * 3.65e-3));
  CHECK(w[0].speedup() == Approx(6.1 / 2.1));
  CHECK(w[0].speedup_vs_best() == Approx(3.65 / 2.1));
  CHECK(w[0].conservative_speedup() == Approx(3.65 / 2.1));
  // A best time missing for one shape: no best sum at all, rather than a partial one.
  w = whole_model_speedups(shapes, times, median, {{{4096, 4096}, 3.3e-3}});
  CHECK(w[0].torch_best_seconds == 0);
  CHECK(w[0].conservative_speedup() == w[0].speedup());
}

TEST_CASE("a shape without torch's time or ours is named and no speedup is claimed") {
  const std::vector<BenchShape> shapes = {{4096, 4096, 2, {"m"}, {2}}, {256, 2048, 3, {"m"}, {3}}};
  const std::vector<ShapeTime> times = {{4096, 4096, "torch", 1, 3.0e-3, "standard"}, {256, 2048, "torch", 1, 1.0e-4, "standard"}};
  const std::map<std::pair<long, long>, double> torch = {{{4096, 4096}, 4.0e-3}};
  const auto w = whole_model_speedups(shapes, times, torch);
  REQUIRE(w.size() == 1);
  CHECK_FALSE(w[0].complete());
  CHECK(w[0].missing == std::vector<std::string>{"256x2048"});
  CHECK(w[0].matrices == 2);
  REQUIRE(w[0].parts.size() == 1);  // the missing shape is named, not priced
  CHECK(w[0].parts[0].shape == "4096x4096");
}

TEST_CASE("shapes are timed at the executor's batch: the model's count, at most max_batch, within the element guard") {
  // Qwen2.5-3B's 72 11008 x 2048 MLP matrices: 64 a call, as the executor batches them.
  CHECK(executor_batch(72, 11008, 2048, 1L << 32, 64) == 64);
  CHECK(executor_batch(36, 2048, 11008, 1L << 32, 64) == 36);
  // The element guard wins where it is lower (the old 2^26 default gave 2 here).
  CHECK(executor_batch(72, 11008, 2048, 1L << 26, 64) == 2);
  CHECK(executor_batch(64, 14336, 4096, 1L << 26, 64) == 1);
  // No batched timing: one matrix, a guard of 0, a shape larger than the guard.
  CHECK(executor_batch(1, 4096, 4096, 1L << 32, 64) == 1);
  CHECK(executor_batch(72, 2048, 2048, 0, 64) == 0);
  CHECK(executor_batch(8, 8192, 28672, 1000, 64) == 0);
}
