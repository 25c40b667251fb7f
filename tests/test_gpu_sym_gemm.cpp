// The sm_90a symmetric-product kernel (S = X X^T, and alpha A B^T + beta C) against an fp64
// reference on every shape class:
// m below one tile, m and n tails that are not multiples of the tile, odd m, batch > 1, bf16 and
// fp16; each with the item schedule and, where the launcher splits it, with a stream-K workspace
// (several segments an item, partials from up to a dozen clusters). The output is
// poisoned (all-ones bits: NaN in both dtypes) first, so an element the kernel failed to write
// fails the check. Skips (tests/gpu_skip.hpp) without an sm_90 GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/ns_program.hpp"
#include "kernels/cuda/sym_gemm_schedule.hpp"
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

std::vector<double> random_exact(std::size_t count, DType t, std::mt19937& rng, std::vector<std::uint16_t>& bits) {
  std::uniform_int_distribution<int> k(-255, 255);
  std::vector<double> v(count);
  bits.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = k(rng) / 64.0;
    bits[i] = encode(v[i], t);
  }
  return v;
}

// The product the kernel is asked for: D = alpha A B^T + beta C (B = A when `two` is false; no C
// when `with_c` is false, beta 0). The reference is the lower triangle's fp64 value, mirrored.
struct Product {
  long m, k;
  int batch;
  DType t;
  bool two = false, with_c = false;
  float alpha = 1.0f, beta = 0.0f;
};

// A zeroed stream-K workspace for this device, as NsEngine allocates it.
struct Workspace {
  std::size_t bytes = cuda::sym_gemm_sm90_workspace_bytes();
  cuda::DeviceBuffer buffer{bytes, "test stream-K workspace"};
  Workspace() { REQUIRE(cudaMemset(buffer.get(), 0, bytes) == cudaSuccess); }
  cuda::SymWorkspace get() { return {buffer.get(), bytes}; }
};

// Whether the kernel splits this product's items with a workspace (the launcher's own rule, for
// this GPU's clusters of two SMs; it may run a cluster or two fewer). One-operand products pair
// their diagonal tiles (DMUON_SYM_DIAG_PAIRS unset).
bool splits(long m, long k, int batch, bool one_operand) {
  int device = 0, sms = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess);
  return cuda::sym::stream_k_clusters((m + 127) / 128, batch, static_cast<int>((k + 63) / 64), sms / 2, 0, 1,
                                      one_operand) > 0;
}

Outcome check_product(const Product& q, unsigned seed, cuda::SymWorkspace ws = {}) {
  std::mt19937 rng(seed);
  const long m = q.m, n = q.k;
  const std::size_t x_elems = static_cast<std::size_t>(m * n * q.batch);
  const std::size_t s_elems = static_cast<std::size_t>(m * m * q.batch);
  std::vector<std::uint16_t> ah, bh, ch;
  const std::vector<double> a = random_exact(x_elems, q.t, rng, ah);
  const std::vector<double> b = q.two ? random_exact(x_elems, q.t, rng, bh) : a;
  const std::vector<double> c = q.with_c ? random_exact(s_elems, q.t, rng, ch) : std::vector<double>(s_elems, 0.0);
  cuda::DeviceBuffer da(ah.size() * 2, "test A"), db(q.two ? bh.size() * 2 : 2, "test B"),
      dc(q.with_c ? ch.size() * 2 : 2, "test C"), dd(s_elems * 2, "test D");
  da.upload(ah.data(), ah.size() * 2);
  if (q.two) db.upload(bh.data(), bh.size() * 2);
  if (q.with_c) dc.upload(ch.data(), ch.size() * 2);
  std::vector<std::uint16_t> dh(s_elems, 0xFFFF);
  dd.upload(dh.data(), s_elems * 2);
  cuda::SymProduct p;
  p.a = da.get();
  p.b = q.two ? db.get() : nullptr;
  p.m = m;
  p.k = n;
  p.batch = q.batch;
  p.dtype = q.t;
  p.alpha = q.alpha;
  p.c = q.with_c ? dc.get() : nullptr;
  p.beta = q.beta;
  p.d = dd.get();
  p.workspace = ws;
  if (!q.two && !q.with_c && q.alpha == 1.0f) {
    cuda::launch_sym_xxt_sm90(da.get(), m, n, q.batch, q.t, dd.get(), nullptr, ws);  // the X X^T entry point
  } else {
    cuda::launch_sym_gemm_sm90(p, nullptr);
  }
  cuda::synchronize(nullptr);
  dd.download(dh.data(), s_elems * 2);

  Outcome o;
  double err2 = 0, ref2 = 0;
  // One rounding to 8 (bf16) or 11 (fp16) bits plus fp32 accumulation over n terms.
  const double unit = q.t == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  for (int e = 0; e < q.batch; ++e) {
    const double* ae = a.data() + static_cast<std::size_t>(e) * m * n;
    const double* be = b.data() + static_cast<std::size_t>(e) * m * n;
    const double* ce = c.data() + static_cast<std::size_t>(e) * m * m;
    for (long i = 0; i < m; ++i) {
      for (long j = 0; j < m; ++j) {
        const long lo = std::max(i, j), hi = std::min(i, j);  // the kernel computes row lo, column hi
        double ref = 0, mag = 0;
        for (long r = 0; r < n; ++r) {
          ref += ae[lo * n + r] * be[hi * n + r];
          mag += std::fabs(ae[lo * n + r] * be[hi * n + r]);
        }
        ref = q.alpha * ref + q.beta * ce[lo * m + hi];
        mag = std::fabs(q.alpha) * mag + std::fabs(q.beta * ce[lo * m + hi]);
        const double got = decode(dh[static_cast<std::size_t>(e) * m * m + i * m + j], q.t);
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
  Workspace ws;
  int split_shapes = 0;
  for (const Shape& s : shapes) {
    // Twice: the flags must be back at zero for the next launch (stale partials would be added
    // to the second seed's products, a flag left counted would let a head read too early).
    for (unsigned seed : {1u, 2u, 11u, 12u}) {
      const bool split = seed > 10;
      if (split && !splits(s.m, s.n, s.batch, true)) continue;
      split_shapes += seed == 11;
      const Outcome o = check_product({s.m, s.n, s.batch, s.t}, seed * 977 + static_cast<unsigned>(s.m),
                                      split ? ws.get() : cuda::SymWorkspace{});
      INFO(s.m << "x" << s.n << " batch " << s.batch << " " << to_string(s.t) << " seed " << seed
               << (split ? " stream-K" : "") << ": rel " << o.rel_frobenius);
      CHECK(o.unwritten == 0);
      CHECK(o.outside == 0);
      CHECK(o.rel_frobenius < (s.t == DType::bf16 ? 3e-3 : 5e-4));
    }
  }
  CHECK(split_shapes >= 4);  // 255x1000 (2), 640x1024 (2), 777x2048, 1025x1032 on an H100
}

// Newton-Schulz's m x m products: alpha A B^T + beta C with two operands, C read in the epilogue
// (odd m: C's scalar loads), one operand with C (standard NS's c A^2 + b A), alpha alone.
TEST_CASE("sm_90a alpha A B^T + beta C matches fp64: two operands, the fused epilogue, tails", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string why = cuda::sym_xxt_sm90_unsupported(128, 128, DType::bf16, reinterpret_cast<void*>(256));
  if (!why.empty()) return dmuon::test::skip_test("sym_gemm_sm90", why);
  const Product products[] = {
      {64, 64, 1, DType::bf16, true, true, 1.5f, -0.75f},     {200, 200, 2, DType::fp16, true, true, 1.0f, 0.5f},
      {129, 136, 1, DType::bf16, true, true, -2.0f, 1.25f},   {384, 512, 1, DType::bf16, true, false, 0.5f, 0.0f},
      {520, 520, 2, DType::bf16, false, true, -4.75f, 3.5f},  {777, 776, 1, DType::fp16, true, true, 1.0f, -1.0f},
      {1024, 1024, 1, DType::bf16, true, true, 2.0f, 2.0f},   {896, 1024, 1, DType::fp16, false, true, -4.75f, 3.5f},
  };
  Workspace ws;
  int split_products = 0;
  for (const Product& q : products) {
    for (unsigned seed : {3u, 4u, 13u, 14u}) {
      const bool split = seed > 10;
      if (split && !splits(q.m, q.k, q.batch, !q.two)) continue;
      split_products += seed == 13;
      const Outcome o = check_product(q, seed * 131 + static_cast<unsigned>(q.m), split ? ws.get() : cuda::SymWorkspace{});
      INFO(q.m << "x" << q.k << " batch " << q.batch << " " << to_string(q.t) << (q.two ? " A B^T" : " A A^T")
               << (q.with_c ? " + beta C" : "") << " seed " << seed << (split ? " stream-K" : "") << ": rel "
               << o.rel_frobenius);
      CHECK(o.unwritten == 0);
      CHECK(o.outside == 0);
      CHECK(o.rel_frobenius < (q.t == DType::bf16 ? 3e-3 : 5e-4));
    }
  }
  CHECK(split_products >= 3);  // 777x776, 1024x1024, 896x1024 (one operand + C) on an H100
}

// A one-operand product without C pairs its diagonal tiles into doubles (sym_gemm_schedule.hpp);
// the same operand passed as a second, equal buffer keeps them singles. Each element is the same
// wgmma chain over k either way: the same bits, with tails, batch entries (doubles across two of
// them), a lone single and alpha. Without a workspace: stream-K's split points differ between the
// two schedules. (Products with C never pair: the other tests cover them.)
TEST_CASE("sm_90a diagonal pairs give the singles' bits", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string why = cuda::sym_xxt_sm90_unsupported(128, 128, DType::bf16, reinterpret_cast<void*>(256));
  if (!why.empty()) return dmuon::test::skip_test("sym_gemm_sm90 diagonal pairs", why);
  const char* knob = std::getenv("DMUON_SYM_DIAG_PAIRS");
  if (knob && std::string(knob) == "off") {
    return dmuon::test::skip_test("sym_gemm_sm90 diagonal pairs", "DMUON_SYM_DIAG_PAIRS=off: both launches run singles");
  }
  struct Case { long m, k; int batch; DType t; float alpha; };
  const Case cases[] = {{4096, 1024, 1, DType::fp16, 1.0f}, {1000, 512, 3, DType::bf16, -1.25f},
                        {640, 640, 2, DType::fp16, 0.5f},   {129, 136, 1, DType::bf16, 1.0f}};
  for (const Case& c : cases) {
    INFO(c.m << "x" << c.k << " batch " << c.batch << " " << to_string(c.t) << " alpha " << c.alpha);
    std::mt19937 rng(static_cast<unsigned>(c.m * 7 + c.k));
    const std::size_t x_elems = static_cast<std::size_t>(c.m * c.k * c.batch);
    const std::size_t s_elems = static_cast<std::size_t>(c.m * c.m * c.batch);
    std::vector<std::uint16_t> xh;
    random_exact(x_elems, c.t, rng, xh);
    cuda::DeviceBuffer x(x_elems * 2, "X"), x2(x_elems * 2, "X copy"), d1(s_elems * 2, "D pairs"),
        d2(s_elems * 2, "D singles");
    x.upload(xh.data(), x_elems * 2);
    x2.upload(xh.data(), x_elems * 2);
    auto run = [&](const void* b, cuda::DeviceBuffer& d) {
      cuda::SymProduct p;
      p.a = x.get();
      p.b = b;
      p.m = c.m;
      p.k = c.k;
      p.batch = c.batch;
      p.dtype = c.t;
      p.alpha = c.alpha;
      p.d = d.get();
      cuda::launch_sym_gemm_sm90(p, nullptr);
      cuda::synchronize(nullptr);
      std::vector<std::uint16_t> h(s_elems);
      d.download(h.data(), s_elems * 2);
      return h;
    };
    const std::vector<std::uint16_t> pairs = run(nullptr, d1), singles = run(x2.get(), d2);
    long differ = 0;
    for (std::size_t i = 0; i < s_elems; ++i) differ += pairs[i] != singles[i];
    CHECK(differ == 0);
  }
}

// Stream-K adds the partials in segment order whoever finishes first: two launches on the same
// input give the same bits. A workspace too small for the launch is refused by name.
TEST_CASE("sm_90a stream-K: the same bits every launch; a short workspace refused", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string why = cuda::sym_xxt_sm90_unsupported(128, 128, DType::bf16, reinterpret_cast<void*>(256));
  if (!why.empty()) return dmuon::test::skip_test("sym_gemm_sm90 stream-K", why);
  const long m = 1024, k = 4096;
  const std::size_t x_elems = static_cast<std::size_t>(m * k), s_elems = static_cast<std::size_t>(m * m);
  REQUIRE(splits(m, k, 1, true));
  Workspace ws;
  cuda::DeviceBuffer x(x_elems * 2, "X"), d(s_elems * 2, "D");
  auto run = [&](const std::vector<std::uint16_t>& xh, bool split, int launches) {
    x.upload(xh.data(), xh.size() * 2);
    for (int i = 0; i < launches; ++i) {
      cuda::launch_sym_xxt_sm90(x.get(), m, k, 1, DType::bf16, d.get(), nullptr, split ? ws.get() : cuda::SymWorkspace{});
    }
    cuda::synchronize(nullptr);
    std::vector<std::uint16_t> h(s_elems);
    d.download(h.data(), h.size() * 2);
    return h;
  };
  std::mt19937 rng(7);
  std::vector<std::uint16_t> wide;  // j/64, |j| < 256: sums that fp32 rounds, so order shows
  random_exact(x_elems, DType::bf16, rng, wide);
  CHECK(run(wide, true, 1) == run(wide, true, 3));
  // j/64 with |j| <= 15: every product a multiple of 2^-12 below 1/16, every partial and total
  // of 4096 of them below 2^8, exact in fp32's 24 bits: split and unsplit agree bit for bit.
  std::uniform_int_distribution<int> j(-15, 15);
  std::vector<std::uint16_t> narrow(x_elems);
  for (auto& e : narrow) e = encode(j(rng) / 64.0, DType::bf16);
  CHECK(run(narrow, true, 1) == run(narrow, false, 1));
  CHECK_THROWS_WITH(cuda::launch_sym_xxt_sm90(x.get(), m, k, 1, DType::bf16, d.get(), nullptr,
                                              cuda::SymWorkspace{ws.buffer.get(), 4096}),
                    Catch::Contains("workspace is too small"));
}

TEST_CASE("sm_90a X X^T refuses what TMA cannot address", "[gpu]") {
  CHECK_FALSE(cuda::sym_xxt_sm90_unsupported(64, 12, DType::bf16, reinterpret_cast<void*>(256)).empty());
  CHECK_FALSE(cuda::sym_xxt_sm90_unsupported(64, 64, DType::bf16, reinterpret_cast<void*>(258)).empty());
  CHECK_FALSE(cuda::sym_xxt_sm90_unsupported(64, 64, DType::fp32, reinterpret_cast<void*>(256)).empty());
  // D over an input: other CTAs still read A, B or C while D is written.
  cuda::SymProduct p;
  p.a = reinterpret_cast<void*>(1 << 20);
  p.m = p.k = 64;
  p.d = reinterpret_cast<void*>((1 << 20) + 64 * 64);  // inside A's 64 x 64 x 2 bytes
  CHECK(cuda::sym_gemm_sm90_unsupported(p).find("overlaps") != std::string::npos);
  p.d = reinterpret_cast<void*>(1 << 22);
  p.c = reinterpret_cast<void*>((1 << 22) + 4096);
  CHECK(cuda::sym_gemm_sm90_unsupported(p).find("overlaps") != std::string::npos);
  p.k = 12;
  CHECK(cuda::sym_gemm_sm90_unsupported(p).find("multiple of 8") != std::string::npos);
}

// The kernel reads rows of X: enqueue_gram (the benchmark's entry, without the engine's
// ns_impl_supported check) refuses a tall input's column-major memory by name instead of
// returning the rows of another product.
TEST_CASE("enqueue_gram refuses a tall input on the sm_90a kernel", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string why = cuda::sym_xxt_sm90_unsupported(64, 256, DType::bf16, reinterpret_cast<void*>(256));
  if (!why.empty()) return dmuon::test::skip_test("enqueue_gram on sm_90a", why);
  cuda::LtGemm gemm;
  const cuda::NsGeometry tall = cuda::geometry_of(256, 64, 1);
  REQUIRE(tall.x_column_major);
  cuda::DeviceBuffer x(256 * 64 * 2, "X"), s(64 * 64 * 2, "S");
  for (cuda::NsImpl impl : {cuda::NsImpl::symmetric_sm90, cuda::NsImpl::gram_sm90}) {
    CHECK_THROWS_WITH(cuda::enqueue_gram(gemm, nullptr, impl, tall, x.get(), s.get(), DType::bf16),
                      Catch::Contains("a tall input (256 x 64"));
  }
  // The wide orientation of the same shape is taken (64 x 256: memory holds X row-major).
  const cuda::NsGeometry wide = cuda::geometry_of(64, 256, 1);
  REQUIRE_FALSE(wide.x_column_major);
  CHECK_NOTHROW(cuda::enqueue_gram(gemm, nullptr, cuda::NsImpl::symmetric_sm90, wide, x.get(), s.get(), DType::bf16));
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}
