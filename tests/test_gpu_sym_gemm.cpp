// The sm_90a symmetric-product kernel S = X X^T against an fp64 reference on every shape class:
// m below one tile, m and n tails that are not multiples of the tile, odd m, batch > 1, bf16 and
// fp16. The output is poisoned (all-ones bits: NaN in both dtypes) first, so an element the
// kernel failed to write fails the check. Skips (tests/gpu_skip.hpp) without an sm_90 GPU.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/sym_gemm_sm90.hpp"

using namespace dmuon;

namespace {

// Inputs are k/64 with |k| < 256: exact in bf16 and fp16, so the reference sees the same numbers.
std::uint16_t encode(double v, DType t) {
  if (t == DType::bf16) {
    const float f = static_cast<float>(v);
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<std::uint16_t>(bits >> 16);
  }
  if (v == 0) return 0;
  const std::uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  const double frac = std::frexp(std::fabs(v), &e);  // |v| = frac 2^e, frac in [0.5, 1)
  const auto mant = static_cast<std::uint16_t>(std::lround((frac * 2 - 1) * 1024));
  return static_cast<std::uint16_t>(sign | ((e - 1 + 15) << 10) | mant);
}

double decode(std::uint16_t h, DType t) {
  if (t == DType::bf16) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const int e = (h >> 10) & 31, mant = h & 1023;
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == 31) return NAN;
  if (e == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, e - 25);
}

struct Outcome {
  long unwritten = 0, outside = 0;
  double rel_frobenius = 0;
};

Outcome check_xxt(long m, long n, int batch, DType t, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> k(-255, 255);
  std::vector<double> x(static_cast<std::size_t>(m * n * batch));
  std::vector<std::uint16_t> xh(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = k(rng) / 64.0;
    xh[i] = encode(x[i], t);
  }
  const std::size_t s_elems = static_cast<std::size_t>(m * m * batch);
  cuda::DeviceBuffer dx(xh.size() * 2, "test X"), ds(s_elems * 2, "test S");
  dx.upload(xh.data(), xh.size() * 2);
  std::vector<std::uint16_t> sh(s_elems, 0xFFFF);
  ds.upload(sh.data(), s_elems * 2);
  cuda::launch_sym_xxt_sm90(dx.get(), m, n, batch, t, ds.get(), nullptr);
  cuda::synchronize(nullptr);
  ds.download(sh.data(), s_elems * 2);

  Outcome o;
  double err2 = 0, ref2 = 0;
  // One rounding to 8 (bf16) or 11 (fp16) bits plus fp32 accumulation over n terms.
  const double unit = t == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  for (int b = 0; b < batch; ++b) {
    const double* xb = x.data() + static_cast<std::size_t>(b) * m * n;
    for (long i = 0; i < m; ++i) {
      for (long j = 0; j < m; ++j) {
        double ref = 0, mag = 0;
        for (long q = 0; q < n; ++q) {
          ref += xb[i * n + q] * xb[j * n + q];
          mag += std::fabs(xb[i * n + q] * xb[j * n + q]);
        }
        const double got = decode(sh[static_cast<std::size_t>(b) * m * m + i * m + j], t);
        if (!std::isfinite(got)) {
          ++o.unwritten;
          continue;
        }
        err2 += (got - ref) * (got - ref);
        ref2 += ref * ref;
        if (std::fabs(got - ref) > unit * std::fabs(ref) + 1e-6 * mag) ++o.outside;
      }
    }
  }
  o.rel_frobenius = std::sqrt(err2 / ref2);
  return o;
}

}  // namespace

TEST_CASE("sm_90a X X^T matches fp64 on every shape class and writes every element", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string why = cuda::sym_xxt_sm90_unsupported(128, 128, DType::bf16, reinterpret_cast<void*>(256));
  if (!why.empty()) return dmuon::test::skip_test("sym_xxt_sm90", why);
  struct Shape { long m, n; int batch; DType t; };
  const Shape shapes[] = {
      {1, 8, 1, DType::bf16},       {37, 64, 1, DType::bf16},    {100, 200, 1, DType::bf16},
      {128, 128, 1, DType::bf16},   {129, 136, 1, DType::fp16},  {255, 1000, 2, DType::bf16},
      {257, 520, 3, DType::fp16},   {300, 64, 1, DType::bf16},   {640, 1024, 2, DType::bf16},
      {777, 2048, 1, DType::fp16},  {1025, 1032, 1, DType::bf16},
  };
  for (const Shape& s : shapes) {
    for (unsigned seed : {1u, 2u}) {  // twice: the scheduler's counter must reset between launches
      const Outcome o = check_xxt(s.m, s.n, s.batch, s.t, seed * 977 + static_cast<unsigned>(s.m));
      INFO(s.m << "x" << s.n << " batch " << s.batch << " " << to_string(s.t) << " seed " << seed
               << ": rel " << o.rel_frobenius);
      CHECK(o.unwritten == 0);
      CHECK(o.outside == 0);
      CHECK(o.rel_frobenius < (s.t == DType::bf16 ? 3e-3 : 5e-4));
    }
  }
}

TEST_CASE("sm_90a X X^T refuses what TMA cannot address", "[gpu]") {
  CHECK_FALSE(cuda::sym_xxt_sm90_unsupported(64, 12, DType::bf16, reinterpret_cast<void*>(256)).empty());
  CHECK_FALSE(cuda::sym_xxt_sm90_unsupported(64, 64, DType::bf16, reinterpret_cast<void*>(258)).empty());
  CHECK_FALSE(cuda::sym_xxt_sm90_unsupported(64, 64, DType::fp32, reinterpret_cast<void*>(256)).empty());
}
