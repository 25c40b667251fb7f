// The GPU Newton-Schulz engine against the Eigen reference. Skips (tests/gpu_skip.hpp) without a GPU.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <Eigen/SVD>

#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "core/optimizer/ns_rounding.hpp"
#include "core/error.hpp"
#include "harness/verify/gpu_ns.hpp"
#include "harness/verify/ns_checks.hpp"
#include "harness/verify/test_matrices.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/device_query.hpp"
#include "reference/newton_schulz.hpp"
#include "test_temp_dir.hpp"

using namespace dmuon;
using cuda::NsImpl;

namespace {

double rel(const Eigen::MatrixXd& got, const Eigen::MatrixXd& want) { return (got - want).norm() / want.norm(); }

NsConfig config(const std::string& preset, NsImpl impl) {
  NsConfig ns = optimizer_preset(preset).muon.ns;
  ns.variant = cuda::kernel_family(impl) == NsKernel::gram ? NsVariant::gram : NsVariant::standard;
  if (ns.variant == NsVariant::gram && ns.restarts.empty()) ns.restarts = {2};
  return ns;
}

}  // namespace

TEST_CASE("GPU NS matches the emulated reference for every implementation and orientation", "[gpu]") {
  if (skip_without_gpu()) return;
  const auto devices = cuda::visible_devices();
  const bool sm90 = devices[0].sm_major == 9 && devices[0].sm_minor == 0;
  cuda::NsEngine engine;
  for (auto [rows, cols] : {std::pair{96L, 320L}, std::pair{320L, 96L}, std::pair{37L, 53L}, std::pair{384L, 384L}}) {
    const Eigen::MatrixXd g = verify::gaussian_matrix(rows, cols, 7 + rows);
    const Eigen::VectorXd sigma = Eigen::BDCSVD<Eigen::MatrixXd>(g).singularValues();
    const double kappa = sigma(0) / sigma(sigma.size() - 1);
    for (const std::string preset : {"torch", "dmuon"}) {
      for (NsImpl impl : {NsImpl::standard, NsImpl::symmetric, NsImpl::symmetric_sm90, NsImpl::gram,
                          NsImpl::gram_symmetric, NsImpl::gram_sm90}) {
        if (preset == "torch" && cuda::kernel_family(impl) == NsKernel::gram) continue;
        // The sm_90a kernel runs on sm_90 only, its m x m products for m a multiple of 8;
        // symmetric_sm90's X X^T also needs rows of the wide X a multiple of 8 long (a tall
        // input runs wide after a transposed normalisation: 320x96 covers that path).
        const long m = std::min(rows, cols), n = std::max(rows, cols);
        if (impl == NsImpl::symmetric_sm90 && (n % 8 != 0 || m % 8 != 0 || !sm90)) continue;
        if (impl == NsImpl::gram_sm90 && (m % 8 != 0 || !sm90)) continue;
        const NsConfig ns = config(preset, impl);
        const Eigen::MatrixXd want = ref::newton_schulz(g, ns, ref::Rounding::emulate);
        const auto got = verify::gpu_newton_schulz(engine, {g}, ns, impl, DType::fp32);
        INFO(rows << "x" << cols << " " << preset << " " << cuda::to_string(impl));
        // The GPU and the reference round at the same points in different orders: both within
        // the rounding tolerance of exact NS. A wrong transpose, coefficient or epilogue is off by O(1).
        CHECK(rel(got[0], want) < 2 * ns_rounding_tolerance(ns, kappa));
      }
    }
  }
}

TEST_CASE("GPU batched NS equals single calls; graphs replay the same numbers", "[gpu]") {
  if (skip_without_gpu()) return;
  const NsConfig ns = config("dmuon", NsImpl::gram);
  std::vector<Eigen::MatrixXd> mats;
  for (int i = 0; i < 4; ++i) mats.push_back(verify::gaussian_matrix(128, 512, 100 + i));
  cuda::NsEngine graphs;
  cuda::NsEngineOptions direct_options;
  direct_options.use_graphs = false;
  cuda::NsEngine direct(nullptr, direct_options);
  const auto batched = verify::gpu_newton_schulz(graphs, mats, ns, NsImpl::gram, DType::bf16);
  const auto again = verify::gpu_newton_schulz(graphs, mats, ns, NsImpl::gram, DType::bf16);
  const auto no_graph = verify::gpu_newton_schulz(direct, mats, ns, NsImpl::gram, DType::bf16);
  for (int i = 0; i < 4; ++i) {
    const auto single = verify::gpu_newton_schulz(graphs, {mats[i]}, ns, NsImpl::gram, DType::bf16);
    CHECK(rel(batched[i], single[0]) < cuda::accuracy_gate(ns));
    CHECK(rel(batched[i], again[i]) == 0.0);
    CHECK(rel(batched[i], no_graph[i]) == 0.0);
  }
}

// gram_sm90 and symmetric_sm90 run a tall input wide (a transposed normalisation, the result
// written back in the input's layout): batched, every matrix must equal its single call and the
// reference, so a wrong batch stride or tile edge in the transposed passes (rows 328 and 104: not
// multiples of 32) fails.
TEST_CASE("GPU gram_sm90 and symmetric_sm90 on tall inputs: batched equals single calls and the reference", "[gpu]") {
  if (skip_without_gpu()) return;
  const auto devices = cuda::visible_devices();
  if (!(devices[0].sm_major == 9 && devices[0].sm_minor == 0)) return dmuon::test::skip_test("sm_90 kernels", "not an sm_90 GPU");
  std::vector<Eigen::MatrixXd> mats;
  for (int i = 0; i < 3; ++i) mats.push_back(verify::gaussian_matrix(328, 104, 300 + i));
  cuda::NsEngine engine;
  for (const auto& [preset, impl] : {std::pair{"dmuon", NsImpl::gram_sm90}, std::pair{"torch", NsImpl::symmetric_sm90},
                                     std::pair{"dmuon", NsImpl::symmetric_sm90}}) {
    const NsConfig ns = config(preset, impl);
    const auto batched = verify::gpu_newton_schulz(engine, mats, ns, impl, DType::fp32);
    for (int i = 0; i < 3; ++i) {
      const auto single = verify::gpu_newton_schulz(engine, {mats[i]}, ns, impl, DType::fp32);
      const Eigen::VectorXd sigma = Eigen::BDCSVD<Eigen::MatrixXd>(mats[i]).singularValues();
      const double kappa = sigma(0) / sigma(sigma.size() - 1);
      INFO(preset << " " << cuda::to_string(impl) << " matrix " << i);
      CHECK(rel(batched[i], single[0]) < cuda::accuracy_gate(ns));
      CHECK(rel(batched[i], ref::newton_schulz(mats[i], ns, ref::Rounding::emulate)) <
            2 * ns_rounding_tolerance(ns, kappa));
    }
  }
}

// symmetric_sm90 on a tall input is the wide program on the transposed memory: the same products
// at the same rounding points, so its result is the wide call's on X^T, transposed, to the bit (the
// norm's double sum runs in another order; its float divisor is the same for these inputs). A
// transposing pass that drops, swaps or rounds anything differs.
TEST_CASE("GPU symmetric_sm90: a tall input gives the bits of its wide transpose", "[gpu]") {
  if (skip_without_gpu()) return;
  const auto devices = cuda::visible_devices();
  if (!(devices[0].sm_major == 9 && devices[0].sm_minor == 0)) return dmuon::test::skip_test("symmetric_sm90", "not an sm_90 GPU");
  cuda::NsEngine engine;
  for (const std::string preset : {"torch", "dmuon"}) {
    const NsConfig ns = config(preset, NsImpl::symmetric_sm90);
    const Eigen::MatrixXd tall = verify::gaussian_matrix(328, 104, 41);
    const auto got = verify::gpu_newton_schulz(engine, {tall}, ns, NsImpl::symmetric_sm90, DType::fp32);
    const Eigen::MatrixXd wide = tall.transpose();
    const auto want = verify::gpu_newton_schulz(engine, {wide}, ns, NsImpl::symmetric_sm90, DType::fp32);
    INFO(preset);
    REQUIRE(got[0].rows() == 328);
    CHECK((got[0] - want[0].transpose()).cwiseAbs().maxCoeff() == 0.0);
    CHECK(got[0].norm() > 1.0);
  }
}

TEST_CASE("GPU NS: zero input gives zero, NaN input is named or skipped", "[gpu]") {
  if (skip_without_gpu()) return;
  const NsConfig ns = config("torch", NsImpl::standard);
  cuda::NsEngine engine;
  const auto zero = verify::gpu_newton_schulz(engine, {Eigen::MatrixXd::Zero(64, 96)}, ns, NsImpl::standard, DType::fp32);
  CHECK(zero[0].cwiseAbs().maxCoeff() == 0.0);
  Eigen::MatrixXd bad = verify::gaussian_matrix(64, 96, 3);
  bad(5, 9) = INFINITY;
  const Eigen::MatrixXd good = verify::gaussian_matrix(64, 96, 4);
  CHECK_THROWS_WITH(verify::gpu_newton_schulz(engine, {good, bad}, ns, NsImpl::standard, DType::fp32, {"q", "k"}),
                    Catch::Contains("NaN or Inf") && Catch::Contains("k"));
  cuda::NsEngineOptions o;
  o.non_finite = NonfinitePolicy::skip;
  cuda::NsEngine skipping(nullptr, o);
  cuda::NsOutcome outcome;
  const auto out = verify::gpu_newton_schulz(skipping, {good, bad}, ns, NsImpl::standard, DType::fp32, {}, &outcome);
  CHECK(outcome.skipped == std::vector<int>{1});
  CHECK(out[1].cwiseAbs().maxCoeff() == 0.0);
  CHECK(out[0].allFinite());
  CHECK(out[0].norm() > 1.0);
}

TEST_CASE("GPU NS: a norm that overflows normalize_dtype is an error naming the matrix, as in the reference", "[gpu]") {
  if (skip_without_gpu()) return;
  NsConfig ns = config("torch", NsImpl::standard);
  ns.normalize_dtype = DType::fp16;  // ends at 65504; this matrix's norm is about 78000
  const Eigen::MatrixXd g = verify::gaussian_matrix(64, 96, 5);
  const Eigen::MatrixXd big = 1000.0 * g;
  const Eigen::MatrixXd small = verify::gaussian_matrix(64, 96, 4);
  CHECK_THROWS_WITH(ref::newton_schulz(big, ns, ref::Rounding::emulate), Catch::Contains("overflows normalize_dtype fp16"));
  for (const NonfinitePolicy policy : {NonfinitePolicy::error, NonfinitePolicy::skip}) {
    cuda::NsEngineOptions o;
    o.non_finite = policy;  // skip is for NaN/Inf steps; an overflow is a config error either way
    cuda::NsEngine engine(nullptr, o);
    CHECK_THROWS_WITH(verify::gpu_newton_schulz(engine, {small, big}, ns, NsImpl::standard, DType::fp32, {"q", "big_w"}),
                      Catch::Contains("overflows normalize_dtype fp16") && Catch::Contains("big_w"));
  }
  // With an fp32 normalisation the same matrix is fine and matches the reference.
  ns.normalize_dtype = DType::fp32;
  const Eigen::VectorXd sigma = Eigen::BDCSVD<Eigen::MatrixXd>(g).singularValues();
  cuda::NsEngine engine;
  const auto out = verify::gpu_newton_schulz(engine, {big}, ns, NsImpl::standard, DType::fp32);
  CHECK(rel(out[0], ref::newton_schulz(big, ns, ref::Rounding::emulate)) <
        2 * ns_rounding_tolerance(ns, sigma(0) / sigma(sigma.size() - 1)));
}

TEST_CASE("GPU autotuner gates, picks a passing winner and caches it by GPU name", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string cache = dmuon::test::temp_path("tune.json");
  cuda::NsEngineOptions o;
  o.tune_cache_file = cache;
  o.tune_repeats = 2;
  cuda::NsEngine engine(nullptr, o);
  const NsConfig ns = config("dmuon", NsImpl::gram);
  const auto results = engine.tune(512, 2048, 1, ns);
  REQUIRE_FALSE(results.empty());
  bool standard_passed = false;
  for (const auto& r : results) {
    std::cout << "tune 512x2048 " << cuda::to_string(r.impl) << " available " << r.available << " gate "
              << r.passed_gate << " rel " << r.rel_diff << " " << r.median_seconds * 1e3 << " ms\n";
    if (r.impl == NsImpl::standard) standard_passed = r.passed_gate && r.rel_diff == 0.0;
  }
  CHECK(standard_passed);
  const NsImpl winner = engine.chosen(512, 2048, 1, ns);
  std::ifstream in(cache);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find(engine.gpu_name()) != std::string::npos);
  CHECK(text.find(std::string(cuda::to_string(winner))) != std::string::npos);
}

TEST_CASE("GPU out-of-memory names the bytes wanted and free", "[gpu]") {
  if (skip_without_gpu()) return;
  CHECK_THROWS_WITH(cuda::DeviceBuffer(std::size_t{1} << 50, "a petabyte"),
                    Catch::Contains("a petabyte") && Catch::Contains("wanted 1125899906842624 bytes") &&
                        Catch::Contains("bytes free"));
}

TEST_CASE("NsEngine rejects bad calls with a message", "[gpu]") {
  if (skip_without_gpu()) return;
  cuda::NsEngine engine;
  cuda::NsCall call;
  call.rows = 0;
  call.cols = 8;
  CHECK_THROWS_WITH(engine.run(call, config("torch", NsImpl::standard), NsImpl::standard),
                    Catch::Contains("positive"));
  CHECK_THROWS_WITH(cuda::parse_ns_impl("fast", "--impl"), Catch::Contains("unknown NS implementation"));
}
