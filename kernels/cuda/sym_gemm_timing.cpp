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

double rel_diff(const void* got, const void* want, DType dtype, long elems, DeviceBuffer& norms, cudaStream_t stream,
                long* nonfinite) {
  launch_diff_norms(got, want, dtype, elems, norms.as<double>(), stream);
  double h[3] = {0, 0, 0};
  DMUON_CUDA_CHECK(cudaMemcpyAsync(h, norms.get(), sizeof(h), cudaMemcpyDeviceToHost, stream));
  synchronize(stream);
  *nonfinite = static_cast<long>(h[2]);
  return h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::sqrt(h[0]);
}

// B = c A A + b A three ways, A = X X^T with X refilled at N(0, 1/n): A's diagonal ~1, so A^2
// stays finite in fp16. Keller's b and c. Writes into `a` (m x m) and three fresh outputs.
void time_square(SymGemmTiming& t, LtGemm& gemm, cudaStream_t stream, void* x, void* a, DType dtype, int warmup,
                 int repeats, SymWorkspace ws) {
  const long m = t.m, n = t.n, s_elems = m * m * t.batch;
  fill_normal(x, dtype, m * n * t.batch, 0x5e12ull + m * 37 + n, static_cast<float>(1 / std::sqrt(double(n))), stream);
  enqueue_gram(gemm, stream, NsImpl::standard, geometry_of(m, n, t.batch), x, a, dtype);
  const NsGeometry g = geometry_of(m, m, t.batch);
  DeviceBuffer full_out(s_elems * 2, "sym-gemm B full"), sm90_out(s_elems * 2, "sym-gemm B sm90"),
      blocks_out(s_elems * 2, "sym-gemm B blocks"), norms(3 * sizeof(double), "sym-gemm B norms");
  constexpr float b = -4.7750f, c = 2.0315f;
  auto run = [&](NsImpl impl, DeviceBuffer& out) {
    enqueue_quadratic(gemm, stream, impl, g, a, out.get(), b, c, dtype, impl == NsImpl::symmetric_sm90 ? ws : SymWorkspace{});
  };
  auto full = [&] { run(NsImpl::standard, full_out); };
  auto blocks = [&] { run(NsImpl::symmetric, blocks_out); };
  auto sm90 = [&] { run(NsImpl::symmetric_sm90, sm90_out); };
  const SymProduct probe = SymProduct::square(a, a, m, t.batch, dtype, c, a, b, sm90_out.get());
  const bool have_sm90 = sym_gemm_sm90_unsupported(probe).empty();
  if (have_sm90) {
    DMUON_CUDA_CHECK(cudaMemsetAsync(sm90_out.get(), 0xFF, s_elems * 2, stream));
    sm90();
    full();
    t.square_rel_diff = rel_diff(sm90_out.get(), full_out.get(), dtype, s_elems, norms, stream, &t.square_nonfinite);
  }
  for (int round = 0; round < 2; ++round) {
    if (have_sm90) t.square_sm90_ms[round] = median_ms(time_on_stream(stream, warmup, repeats, sm90));
    t.square_full_ms[round] = median_ms(time_on_stream(stream, warmup, repeats, full));
    t.square_blocks_ms[round] = median_ms(time_on_stream(stream, warmup, repeats, blocks));
  }
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
  // The kernel as Newton-Schulz runs it: with a stream-K workspace (zeroed once, as NsEngine does).
  const std::size_t ws_bytes = have_sm90 ? sym_gemm_sm90_workspace_bytes() : 0;
  DeviceBuffer workspace(ws_bytes > 0 ? ws_bytes : 1, "sym-gemm stream-K workspace");
  DMUON_CUDA_CHECK(cudaMemsetAsync(workspace.get(), 0, ws_bytes, stream.get()));
  const SymWorkspace ws{ws_bytes > 0 ? workspace.get() : nullptr, ws_bytes};

  auto full = [&] { enqueue_gram(gemm, stream.get(), NsImpl::standard, g, x.get(), s_full.get(), dtype); };
  auto blocks = [&] { enqueue_gram(gemm, stream.get(), NsImpl::symmetric, g, x.get(), s_blocks.get(), dtype); };
  auto sm90 = [&] { enqueue_gram(gemm, stream.get(), NsImpl::symmetric_sm90, g, x.get(), s_sym.get(), dtype, ws); };

  // Correctness beside the timing: poison S (all-ones bits are NaN in bf16 and fp16), one call
  // each, then compare the kernel's S with the full GEMM's.
  if (have_sm90) {
    DMUON_CUDA_CHECK(cudaMemsetAsync(s_sym.get(), 0xFF, s_elems * 2, stream.get()));
    sm90();
    full();
    t.rel_diff = rel_diff(s_sym.get(), s_full.get(), dtype, s_elems, norms, stream.get(), &t.nonfinite);
  }
  for (int round = 0; round < 2; ++round) {
    if (have_sm90) t.sm90_ms[round] = median_ms(time_on_stream(stream.get(), warmup, repeats, sm90));
    t.full_ms[round] = median_ms(time_on_stream(stream.get(), warmup, repeats, full));
    t.blocks_ms[round] = median_ms(time_on_stream(stream.get(), warmup, repeats, blocks));
  }
  time_square(t, gemm, stream.get(), x.get(), s_full.get(), dtype, warmup, repeats, ws);
  return t;
}

}  // namespace dmuon::cuda
