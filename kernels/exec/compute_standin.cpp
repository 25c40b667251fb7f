#include "kernels/exec/compute_standin.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::exec {
namespace {

constexpr std::size_t kBf16Bytes = 2;

std::int64_t at_least_one(std::int64_t elements) { return std::max<std::int64_t>(1, elements); }

}  // namespace

ComputeStandin::ComputeStandin(const ForwardBackwardCost& cost, std::uint64_t seed) {
  std::int64_t a = 0, b = 0, d = 0;  // elements of the largest A (m x k), B (k x n), D (m x n)
  for (const ComputeUnit& unit : cost.units) {
    forward_.push_back(standin_gemms(unit, Phase::forward));
    backward_.push_back(standin_gemms(unit, Phase::backward));
    for (const auto* list : {&forward_.back(), &backward_.back()}) {
      for (const StandinGemm& g : *list) {
        a = std::max(a, g.m * g.k);
        b = std::max(b, g.k * g.n);
        d = std::max(d, g.m * g.n);
      }
    }
  }
  a_ = cuda::DeviceBuffer(static_cast<std::size_t>(at_least_one(a)) * kBf16Bytes, "compute stand-in A");
  b_ = cuda::DeviceBuffer(static_cast<std::size_t>(at_least_one(b)) * kBf16Bytes, "compute stand-in B");
  d_ = cuda::DeviceBuffer(static_cast<std::size_t>(at_least_one(d)) * kBf16Bytes, "compute stand-in D");
  // Unit-variance operands: the products stay far from bf16's range limits.
  cuda::fill_normal(a_.get(), DType::bf16, static_cast<long>(at_least_one(a)), seed, 1.0f, nullptr);
  cuda::fill_normal(b_.get(), DType::bf16, static_cast<long>(at_least_one(b)), seed + 1, 1.0f, nullptr);
  cuda::fill_normal(d_.get(), DType::bf16, static_cast<long>(at_least_one(d)), seed + 2, 1.0f, nullptr);
  cuda::synchronize(nullptr);
}

// Column-major D (m x n) = A (m x k) B (k x n); an expert stack's `count` products one after
// another over the same scratch (the shapes, not the values, set the time).
void ComputeStandin::enqueue(int unit, Phase phase, cudaStream_t stream) {
  const auto& lists = phase == Phase::backward ? backward_ : forward_;
  if (unit < 0 || static_cast<std::size_t>(unit) >= lists.size()) {
    throw Error("compute stand-in: unit " + std::to_string(unit) + " of " + std::to_string(lists.size()));
  }
  for (const StandinGemm& g : lists[static_cast<std::size_t>(unit)]) {
    cuda::GemmOp op;
    op.a = {a_.get(), static_cast<long>(g.m), static_cast<long>(g.k), static_cast<long>(g.m), 0};
    op.b = {b_.get(), static_cast<long>(g.k), static_cast<long>(g.n), static_cast<long>(g.k), 0};
    op.d = {d_.get(), static_cast<long>(g.m), static_cast<long>(g.n), static_cast<long>(g.m), 0};
    op.type = CUDA_R_16BF;
    for (std::int64_t c = 0; c < g.count; ++c) lt_.run(op, stream);
  }
}

double ComputeStandin::flops() const {
  double total = 0;
  for (const auto* lists : {&forward_, &backward_}) {
    for (const auto& list : *lists) {
      for (const StandinGemm& g : list) total += g.flops();
    }
  }
  return total;
}

}  // namespace dmuon::exec
