#include "kernels/cuda/sym_gemm_timing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/ns_kernels.hpp"
#include "kernels/cuda/ns_program.hpp"
#include "kernels/cuda/owned_stream.hpp"
#include "kernels/cuda/sym_gemm_sm90.hpp"

namespace dmuon::cuda {
namespace {

double median_ms(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return seconds.empty() ? 0 : 1e3 * seconds[seconds.size() / 2];
}

}  // namespace

SymGemmTiming time_sym_gemm(long m, long n, int batch, DType dtype, int warmup, int repeats) {
  SymGemmTiming t;
  t.m = m;
  t.n = n;
  t.batch = batch;
  OwnedStream stream;
  LtGemm gemm;
  const NsGeometry g = geometry_of(m, n, batch);  // m <= n: memory holds X row-major
  const long x_elems = m * n * batch, s_elems = m * m * batch;
  DeviceBuffer x(x_elems * 2, "sym-gemm X"), s_full(s_elems * 2, "sym-gemm S full"),
      s_sym(s_elems * 2, "sym-gemm S sm90"), s_blocks(s_elems * 2, "sym-gemm S blocks"),
      norms(3 * sizeof(double), "sym-gemm norms");
  fill_normal(x.get(), dtype, x_elems, 0x5e11ull + m * 31 + n, 1.0f, stream.get());
  t.note = sym_xxt_sm90_unsupported(m, n, dtype, x.get());
  const bool have_sm90 = t.note.empty();

  auto full = [&] { enqueue_gram(gemm, stream.get(), NsImpl::standard, g, x.get(), s_full.get(), dtype); };
  auto blocks = [&] { enqueue_gram(gemm, stream.get(), NsImpl::symmetric, g, x.get(), s_blocks.get(), dtype); };
  auto sm90 = [&] { enqueue_gram(gemm, stream.get(), NsImpl::symmetric_sm90, g, x.get(), s_sym.get(), dtype); };

  // Correctness beside the timing: poison S (all-ones bits are NaN in bf16 and fp16), one call
  // each, then compare the kernel's S with the full GEMM's.
  if (have_sm90) {
    DMUON_CUDA_CHECK(cudaMemsetAsync(s_sym.get(), 0xFF, s_elems * 2, stream.get()));
    sm90();
    full();
    launch_diff_norms(s_sym.get(), s_full.get(), dtype, s_elems, norms.as<double>(), stream.get());
    double h[3] = {0, 0, 0};
    DMUON_CUDA_CHECK(cudaMemcpyAsync(h, norms.get(), sizeof(h), cudaMemcpyDeviceToHost, stream.get()));
    synchronize(stream.get());
    t.rel_diff = h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::sqrt(h[0]);
    t.nonfinite = static_cast<long>(h[2]);
  }
  for (int round = 0; round < 2; ++round) {
    if (have_sm90) t.sm90_ms[round] = median_ms(time_on_stream(stream.get(), warmup, repeats, sm90));
    t.full_ms[round] = median_ms(time_on_stream(stream.get(), warmup, repeats, full));
    t.blocks_ms[round] = median_ms(time_on_stream(stream.get(), warmup, repeats, blocks));
  }
  return t;
}

}  // namespace dmuon::cuda
