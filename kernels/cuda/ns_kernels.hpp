// The non-GEMM kernels of a Newton-Schulz call (normalisation, identity add, triangle mirror)
// and the device helpers the autotuner and benchmarks use (random fill, difference norms).
#pragma once
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/optimizer/dtype.hpp"
#include "core/optimizer/optimizer_config.hpp"

namespace dmuon::cuda {

// Per-matrix status written by launch_norm_scale.
// kNormOverflow: the input is finite but its normaliser is not representable in normalize_dtype
// (fp16 above 65504, fp32/bf16 above ~3.4e38); dividing by it would be a silent zero update.
enum NormStatus : int { kNormOk = 0, kNormZero = 1, kNormNonFinite = 2, kNormOverflow = 3 };

// sums[b] = sum of squares of matrix b's elements after rounding to ns.normalize_dtype
// (double accumulation). Clears `sums` first.
void launch_sum_squares(const void* in, DType in_dtype, DType norm_dtype, long elems, int batch, double* sums,
                        cudaStream_t stream);
// divisor[b] = the normaliser of reference/newton_schulz.cpp (norm rounded to normalize_dtype,
// clamp or add with norm_scale and eps, rounded again); status[b] says zero / non-finite /
// overflow.
void launch_norm_scale(const double* sums, int batch, const NsConfig& ns, float* divisor, int* status,
                       cudaStream_t stream);
// X = compute(norm(norm(in) / divisor)); zeros for a matrix whose status is not kNormOk.
void launch_normalize(const void* in, DType in_dtype, const NsConfig& ns, long elems, int batch,
                      const float* divisor, const int* status, void* X, cudaStream_t stream);
// The same for a rows x cols row-major input written transposed: X is cols x rows row-major,
// X[c][r] = compute(norm(norm(in[r][c]) / divisor)). A tall input read as its wide X (gram_sm90:
// the sm_90a kernel reads rows of X). 32 x 32 tiles through shared memory, so both sides coalesce.
void launch_normalize_transposed(const void* in, DType in_dtype, const NsConfig& ns, long rows, long cols, int batch,
                                 const float* divisor, const int* status, void* X, cudaStream_t stream);
// out = in^T for `batch` rows x cols row-major 16-bit matrices (bf16 or fp16; the bits are copied):
// out is cols x rows row-major. symmetric_sm90 on a tall input runs wide and hands its result back
// in the input's layout with this one pass (its last product's a X term needs X in the wide layout).
void launch_transpose_16(const void* in, void* out, long rows, long cols, int batch, cudaStream_t stream);
// Q = Z + a I for batch m x m matrices (one rounding of the fp32 sum); Q may alias Z.
void launch_add_identity(const void* Z, void* Q, long m, int batch, float a, DType dtype, cudaStream_t stream);
// out = in (fp32) stored once in `dtype` (bf16 or fp16), n elements: a sharded call's all-reduced
// partial products, rounded where a single GEMM over all columns rounds its accumulator.
void launch_store_fp32(const float* in, void* out, long n, DType dtype, cudaStream_t stream);
// Copies the strictly lower triangle of each column-major m x m matrix onto the upper one.
void launch_mirror_lower(void* A, long m, int batch, DType dtype, cudaStream_t stream);

// Standard normal values times `scale`, deterministic in (seed, index).
void launch_fill_normal(void* p, DType dtype, long n, std::uint64_t seed, float scale, cudaStream_t stream);
// out[0] = sum (a-b)^2, out[1] = sum b^2, out[2] = count of non-finite a (double accumulation).
void launch_diff_norms(const void* a, const void* b, DType dtype, long n, double* out, cudaStream_t stream);

}  // namespace dmuon::cuda
