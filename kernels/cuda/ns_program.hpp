// The GEMM/kernel sequence of one Newton-Schulz call, enqueued on a stream (no allocation, no
// synchronisation: capturable into a CUDA graph). Buffers are provided by the engine.
#pragma once
#include <cuda_runtime_api.h>

#include "core/optimizer/optimizer_config.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/ns_engine.hpp"
#include "kernels/cuda/sym_gemm_sm90.hpp"

namespace dmuon::cuda {

// The wide problem X (m x n, m <= n) of a row-major rows x cols input. A row-major tall input
// (rows > cols) read column-major is X itself (ld m); a row-major wide input read column-major
// is Y = X^T (n x m, ld n). The program changes operand order instead of moving data.
struct NsGeometry {
  long m = 0, n = 0;
  bool x_column_major = false;  // true: memory holds X (tall input); false: memory holds X^T
  int batch = 1;
  // A sharded call that splits its m x m products (Op::ns_product_begin): `product_blocks`
  // members, this one computing column block `product_block` of ceil(m / blocks) columns. The
  // m x m buffers hold blocks * ceil(m / blocks) columns so the all-gather moves equal blocks
  // in place (the last one padded past column m; nothing reads the padding).
  int product_blocks = 1, product_block = 0;
  long x_elems() const { return m * n; }
  long s_elems() const { return m * m; }
  long product_width() const { return (m + product_blocks - 1) / product_blocks; }
  long s_capacity() const { return product_blocks > 1 ? product_blocks * product_width() * m : s_elems(); }
};

NsGeometry geometry_of(long rows, long cols, int batch);

// Device buffers of one call: two m x n iterates and five m x m matrices per batch entry,
// plus per-matrix normalisation scalars; a sharded call also an m x m fp32 partial product.
struct NsBuffers {
  void* x[2] = {nullptr, nullptr};
  void* s[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  double* sums = nullptr;
  float* divisor = nullptr;
  int* status = nullptr;
  float* partial = nullptr;  // sharded calls only
  SymWorkspace sym;          // the sm_90a kernel's stream-K workspace, at the arena's start (empty off sm_90)
};

// Bytes NsBuffers needs for this geometry and compute dtype, each piece 256-byte aligned. The
// stream-K workspace comes first, at the same offset for every geometry, so that an arena zeroed
// once when allocated keeps its flags zero whatever it is carved for next.
std::size_t ns_buffer_bytes(const NsGeometry& g, DType compute, bool sharded = false);
NsBuffers carve_ns_buffers(void* arena, const NsGeometry& g, DType compute, bool sharded = false);

// True when the library can run every GEMM `impl` needs for this geometry (symmetric_lt may not)
// and, for symmetric_sm90, when the sm_90a kernel takes this geometry on this device.
bool ns_impl_supported(LtGemm& gemm, NsImpl impl, const NsGeometry& g, const NsBuffers& buf, DType compute);

// S = X X^T (m x m, complete) as `impl` computes it: standard/gram one full GEMM, symmetric and
// gram_symmetric lower block rows then a mirror, symmetric_lt cuBLASLt's lower fill then a mirror,
// symmetric_sm90 the sm_90a triangle kernel. Exposed for the benchmark that compares them.
void enqueue_gram(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const void* X, void* S,
                  DType compute, SymWorkspace sym = {});

// B = c A A + b A (A symmetric m x m, complete; g.m = g.n = m), standard NS's middle product, as
// `impl` computes it: standard one full GEMM with b A in its epilogue, symmetric lower block rows
// then a mirror, symmetric_sm90 the sm_90a kernel with b A fused. Exposed for the benchmark.
void enqueue_quadratic(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const void* A, void* B,
                       float b, float c, DType compute, SymWorkspace sym = {});

// Enqueues normalisation, the iterations of `impl` (not automatic) and the final product into
// `out` (compute dtype, the input's layout).
void enqueue_ns(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const NsBuffers& buf,
                const void* in, DType in_dtype, void* out, const NsConfig& ns);
// The same program for one member of a sharded call (NsEngine::run_sharded): g is the member's
// X_j (g.n its columns, g.batch 1, buffers carved with `sharded`); the squared norm and every
// X X^T go through `reduce` (the X X^T as the fp32 partial product, stored in the compute dtype
// after the sum). impl: standard, symmetric, gram or gram_symmetric (sharded_impl's). With
// g.product_blocks > 1 the member computes its column block of every m x m product (no
// symmetric savings: a block of columns is no triangle) and reduce.gather all-gathers the
// products needed whole, in core/plan/ns_sharding.hpp's ns_split_gathers order.
void enqueue_sharded_ns(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const NsBuffers& buf,
                        const void* in, DType in_dtype, void* out, const NsConfig& ns, const NsShardReduce& reduce);

}  // namespace dmuon::cuda
