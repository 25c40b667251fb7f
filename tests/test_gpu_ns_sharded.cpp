// The NS engine's sharded call on one GPU (harness/verify/gpu_sharded_ns.hpp: k members whose
// all-reduces are done on the host), against the single-device emulated reference: standard and
// Gram (restarts), tall (in place) and wide (staged) layouts, even and ragged splits, k = 2 and
// 3; and one member alone agrees with the engine's own call within the accuracy gate. Skips
// without a GPU.
#include <Eigen/SVD>

#include "catch_compat.hpp"
#include "ns_shard_blocks.hpp"
#include "gpu_skip.hpp"
#include "core/optimizer/ns_rounding.hpp"
#include "core/plan/ns_sharding.hpp"
#include "harness/verify/gpu_ns.hpp"
#include "harness/verify/gpu_sharded_ns.hpp"
#include "harness/verify/test_matrices.hpp"
#include "reference/newton_schulz.hpp"

using namespace dmuon;
using cuda::NsImpl;

namespace {

double rel(const Eigen::MatrixXd& got, const Eigen::MatrixXd& want) { return (got - want).norm() / want.norm(); }

using test::column_blocks;

Eigen::MatrixXd joined(const std::vector<Eigen::MatrixXd>& blocks) {
  Eigen::Index cols = 0;
  for (const auto& b : blocks) cols += b.cols();
  Eigen::MatrixXd out(blocks.front().rows(), cols);
  Eigen::Index at = 0;
  for (const auto& b : blocks) {
    out.middleCols(at, b.cols()) = b;
    at += b.cols();
  }
  return out;
}

}  // namespace

TEST_CASE("the engine's sharded call matches the single-device reference within the rounding tolerance", "[gpu]") {
  if (skip_without_gpu()) return;
  // m x n of the wide orientation: an even split, a ragged one, and m = 256 (symmetric blocks).
  for (auto [m, n] : {std::pair{96L, 640L}, std::pair{64L, 999L}, std::pair{256L, 771L}}) {
    const Eigen::MatrixXd x = verify::gaussian_matrix(m, n, 31 + m);
    const Eigen::VectorXd sigma = Eigen::BDCSVD<Eigen::MatrixXd>(x).singularValues();
    const double kappa = sigma(0) / sigma(sigma.size() - 1);
    for (const std::string preset : {"torch", "dmuon"}) {
      const NsConfig ns = optimizer_preset(preset).muon.ns;
      const Eigen::MatrixXd want = ref::newton_schulz(x, ns, ref::Rounding::emulate);
      const bool gram = ns.variant == NsVariant::gram;
      for (NsImpl impl : gram ? std::vector<NsImpl>{NsImpl::gram, NsImpl::gram_symmetric, NsImpl::standard}
                              : std::vector<NsImpl>{NsImpl::standard, NsImpl::symmetric}) {
        for (int k : {2, 3}) {
          for (const bool column_major : {false, true}) {
            INFO(m << "x" << n << " " << preset << " " << cuda::to_string(impl) << " k " << k
                   << (column_major ? " column-major (tall)" : " row-major (wide)"));
            const auto got = verify::gpu_sharded_newton_schulz(column_blocks(x, k), ns, impl, DType::bf16, column_major);
            REQUIRE(got.size() == static_cast<std::size_t>(k));
            // As tests/test_gpu_ns_engine.cpp: each side within the rounding tolerance of exact NS.
            CHECK(rel(joined(got), want) < 2 * ns_rounding_tolerance(ns, kappa));
          }
        }
      }
    }
  }
}

TEST_CASE("split m x m products on the engine match the reference, gathering as the simulator prices", "[gpu]") {
  if (skip_without_gpu()) return;
  // m = 96 over 2 and 3; m = 250 over 4 (blocks of 63, the last 61: a padded all-gather).
  for (auto [m, n, k] : {std::tuple{96L, 640L, 2}, std::tuple{96L, 999L, 3}, std::tuple{250L, 771L, 4}}) {
    const Eigen::MatrixXd x = verify::gaussian_matrix(m, n, 17 + m);
    const Eigen::VectorXd sigma = Eigen::BDCSVD<Eigen::MatrixXd>(x).singularValues();
    const double kappa = sigma(0) / sigma(sigma.size() - 1);
    for (const std::string preset : {"torch", "dmuon"}) {
      const NsConfig ns = optimizer_preset(preset).muon.ns;
      const Eigen::MatrixXd want = ref::newton_schulz(x, ns, ref::Rounding::emulate);
      const NsImpl impl = ns.variant == NsVariant::gram ? NsImpl::gram : NsImpl::standard;
      for (const bool column_major : {false, true}) {
        INFO(m << "x" << n << " " << preset << " k " << k << (column_major ? " column-major" : " row-major"));
        int gathers = 0;
        const auto got =
            verify::gpu_sharded_newton_schulz(column_blocks(x, k), ns, impl, DType::bf16, column_major, true, &gathers);
        CHECK(rel(joined(got), want) < 2 * ns_rounding_tolerance(ns, kappa));
        CHECK(gathers == ns_split_gathers(ns_kernel_of(ns), ns.steps, ns.restarts));
      }
    }
  }
}

TEST_CASE("one member alone is the engine's own call within the accuracy gate", "[gpu]") {
  if (skip_without_gpu()) return;
  const Eigen::MatrixXd x = verify::gaussian_matrix(96, 640, 5);
  for (const std::string preset : {"torch", "dmuon"}) {
    const NsConfig ns = optimizer_preset(preset).muon.ns;
    const NsImpl impl = ns.variant == NsVariant::gram ? NsImpl::gram : NsImpl::standard;
    cuda::NsEngine engine;
    const Eigen::MatrixXd whole = verify::gpu_newton_schulz(engine, {x}, ns, impl, DType::bf16).front();
    const auto alone = verify::gpu_sharded_newton_schulz({x}, ns, impl, DType::bf16, false);
    INFO(preset);
    // The partial product is stored from fp32 as the GEMM's own epilogue would: the two differ
    // only where cuBLASLt picks another kernel (summation order) for the fp32 output, so they
    // are two implementations of one call and the gate between implementations applies.
    CHECK(rel(alone.front(), whole) < cuda::accuracy_gate(ns));
  }
}
