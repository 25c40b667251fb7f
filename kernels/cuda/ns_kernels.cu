// Normalisation and small helper kernels of the Newton-Schulz engine.
#include "kernels/cuda/ns_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_element.cuh"
#include "kernels/cuda/ns_device_math.cuh"
#include "kernels/cuda/ns_kernels_vector.hpp"

namespace dmuon::cuda {
namespace {

using namespace ns_detail;

__device__ __forceinline__ float load(const void* p, int dtype, long i) { return load_element(p, dtype, i); }
__device__ __forceinline__ void store(void* p, int dtype, long i, float v) { store_element(p, dtype, i, v); }

__global__ void sum_squares_kernel(const void* in, int in_dtype, int norm_dtype, long elems, double* sums) {
  const int b = blockIdx.y;
  const long base = static_cast<long>(b) * elems;
  double acc = 0;
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < elems;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const double x = round_to(load(in, in_dtype, base + i), norm_dtype);
    acc += x * x;
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) atomicAdd(&sums[b], total);
}

struct ScaleParams {
  int norm_dtype;
  int clamp;
  double scale, eps;
};

__global__ void norm_scale_kernel(const double* sums, int batch, ScaleParams p, float* divisor, int* status) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const double s = sums[b];
  if (!isfinite(s)) {
    status[b] = kNormNonFinite;
    divisor[b] = 1.0f;
    return;
  }
  const double frob = round_to_d(sqrt(s), p.norm_dtype);
  if (frob == 0.0) {
    status[b] = kNormZero;
    divisor[b] = 1.0f;
    return;
  }
  const double scaled = frob * p.scale;
  const float n = static_cast<float>(round_to_d(p.clamp ? fmax(scaled, p.eps) : scaled + p.eps, p.norm_dtype));
  // The reference refuses this (reference/newton_schulz.cpp); x / inf would be a zero update.
  status[b] = isfinite(n) ? kNormOk : kNormOverflow;
  divisor[b] = isfinite(n) ? n : 1.0f;
}

__global__ void normalize_kernel(const void* in, int in_dtype, int norm_dtype, int compute_dtype, long elems,
                                 const float* divisor, const int* status, void* X) {
  const int b = blockIdx.y;
  const long base = static_cast<long>(b) * elems;
  const bool ok = status[b] == kNormOk;
  const float d = divisor[b];
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < elems;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    float v = 0.0f;
    if (ok) v = normalized(load(in, in_dtype, base + i), norm_dtype, d);
    store(X, compute_dtype, base + i, v);
  }
}

__global__ void normalize_transposed_kernel(const void* in, int in_dtype, int norm_dtype, int compute_dtype,
                                            long rows, long cols, const float* divisor, const int* status, void* X) {
  __shared__ float tile[32][33];
  const int b = blockIdx.z;
  const long base = static_cast<long>(b) * rows * cols;
  const bool ok = status[b] == kNormOk;
  const float d = divisor[b];
  const long r0 = static_cast<long>(blockIdx.y) * 32, c0 = static_cast<long>(blockIdx.x) * 32;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) {
      tile[k][threadIdx.x] =
          ok ? normalized(load(in, in_dtype, base + r * cols + c), norm_dtype, d) : 0.0f;
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) store(X, compute_dtype, base + c * rows + r, tile[threadIdx.x][k]);
  }
}

// 32 x 32 tiles of 16-bit words through shared memory, so that both sides coalesce.
__global__ void transpose_16_kernel(const unsigned short* in, unsigned short* out, long rows, long cols) {
  __shared__ unsigned short tile[32][33];
  const long base = static_cast<long>(blockIdx.z) * rows * cols;
  const long r0 = static_cast<long>(blockIdx.y) * 32, c0 = static_cast<long>(blockIdx.x) * 32;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = in[base + r * cols + c];
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[base + c * rows + r] = tile[threadIdx.x][k];
  }
}

// Q = Z + a I as torch's `Z + a * I` computes it (DMuon's first Gram Q): a*I is a tensor of the
// compute dtype, so a is rounded to it first, then the sum is rounded once more.
__global__ void add_identity_kernel(const void* Z, void* Q, long m, float a_exact, int dtype) {
  const float a = round_to(a_exact, dtype);
  const long per = m * m;
  const long base = static_cast<long>(blockIdx.y) * per;
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < per;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const bool diagonal = (i % m) == (i / m);
    const float z = load(Z, dtype, base + i);
    store(Q, dtype, base + i, diagonal ? z + a : z);
  }
}

__global__ void store_fp32_kernel(const float* in, void* out, long n, int dtype) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    store(out, dtype, i, in[i]);
  }
}

// One 32x32 tile of the upper triangle per block: read the mirrored lower tile through shared
// memory so that both the read and the write are coalesced.
__global__ void mirror_lower_kernel(void* A, long m, int dtype) {
  __shared__ float tile[32][33];
  const long tr = blockIdx.x, tc = blockIdx.y;  // tile row / column of the upper element
  if (tr > tc) return;
  const long base = static_cast<long>(blockIdx.z) * m * m;
  // Source: lower tile (tc, tr); element (row, col) lives at row + col*m (column-major).
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long row = tc * 32 + threadIdx.x, col = tr * 32 + k;
    if (row < m && col < m) tile[k][threadIdx.x] = load(A, dtype, base + row + col * m);
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long row = tr * 32 + threadIdx.x, col = tc * 32 + k;
    if (row < m && col < m && row < col) store(A, dtype, base + row + col * m, tile[threadIdx.x][k]);
  }
}

__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_normal_kernel(void* p, int dtype, long n, std::uint64_t seed, float scale) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = mix(seed ^ mix(static_cast<std::uint64_t>(i)));
    const float u1 = (static_cast<float>(r >> 40) + 1.0f) * (1.0f / 16777217.0f);  // (0, 1]
    const float u2 = static_cast<float>((r >> 16) & 0xffffff) * (1.0f / 16777216.0f);
    store(p, dtype, i, scale * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

__global__ void diff_norms_kernel(const void* a, const void* b, int dtype, long n, double* out) {
  double diff = 0, ref = 0, bad = 0;
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const double x = load(a, dtype, i), y = load(b, dtype, i);
    if (!isfinite(x)) bad += 1;
    diff += (x - y) * (x - y);
    ref += y * y;
  }
  diff = block_sum(diff);
  __syncthreads();
  ref = block_sum(ref);
  __syncthreads();
  bad = block_sum(bad);
  if (threadIdx.x == 0) {
    atomicAdd(&out[0], diff);
    atomicAdd(&out[1], ref);
    atomicAdd(&out[2], bad);
  }
}

void check_launch(const char* what) { check(cudaGetLastError(), what, __FILE__, __LINE__); }

}  // namespace

void launch_sum_squares(const void* in, DType in_dtype, DType norm_dtype, long elems, int batch, double* sums,
                        cudaStream_t stream) {
  DMUON_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(double) * batch, stream));
  if (launch_sum_squares_vec(in, in_dtype, norm_dtype, elems, batch, sums, stream)) return;
  const dim3 grid(blocks_for(elems, 1024), batch);
  sum_squares_kernel<<<grid, kThreads, 0, stream>>>(in, static_cast<int>(in_dtype), static_cast<int>(norm_dtype),
                                                    elems, sums);
  check_launch("sum_squares_kernel");
}

void launch_norm_scale(const double* sums, int batch, const NsConfig& ns, float* divisor, int* status,
                       cudaStream_t stream) {
  const ScaleParams p{static_cast<int>(ns.normalize_dtype), ns.norm_mode == NormMode::clamp ? 1 : 0,
                      ns.norm_scale, ns.eps};
  norm_scale_kernel<<<(batch + 127) / 128, 128, 0, stream>>>(sums, batch, p, divisor, status);
  check_launch("norm_scale_kernel");
}

void launch_normalize(const void* in, DType in_dtype, const NsConfig& ns, long elems, int batch,
                      const float* divisor, const int* status, void* X, cudaStream_t stream) {
  if (launch_normalize_vec(in, in_dtype, ns, elems, batch, divisor, status, X, stream)) return;
  const dim3 grid(blocks_for(elems, 2048), batch);
  normalize_kernel<<<grid, kThreads, 0, stream>>>(in, static_cast<int>(in_dtype),
                                                  static_cast<int>(ns.normalize_dtype),
                                                  static_cast<int>(ns.compute_dtype), elems, divisor, status, X);
  check_launch("normalize_kernel");
}

void launch_normalize_transposed(const void* in, DType in_dtype, const NsConfig& ns, long rows, long cols, int batch,
                                 const float* divisor, const int* status, void* X, cudaStream_t stream) {
  if ((rows + 31) / 32 > 65535) throw Error("launch_normalize_transposed: " + std::to_string(rows) + " rows exceed the grid");
  if (launch_normalize_transposed_vec(in, in_dtype, ns, rows, cols, batch, divisor, status, X, stream)) return;
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 31) / 32), batch);
  normalize_transposed_kernel<<<grid, dim3(32, 8), 0, stream>>>(
      in, static_cast<int>(in_dtype), static_cast<int>(ns.normalize_dtype), static_cast<int>(ns.compute_dtype), rows, cols,
      divisor, status, X);
  check_launch("normalize_transposed_kernel");
}

void launch_transpose_16(const void* in, void* out, long rows, long cols, int batch, cudaStream_t stream) {
  if ((rows + 31) / 32 > 65535) throw Error("launch_transpose_16: " + std::to_string(rows) + " rows exceed the grid");
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 31) / 32), batch);
  transpose_16_kernel<<<grid, dim3(32, 8), 0, stream>>>(static_cast<const unsigned short*>(in),
                                                        static_cast<unsigned short*>(out), rows, cols);
  check_launch("transpose_16_kernel");
}

void launch_add_identity(const void* Z, void* Q, long m, int batch, float a, DType dtype, cudaStream_t stream) {
  if (launch_add_identity_vec(Z, Q, m, batch, a, dtype, stream)) return;
  const dim3 grid(blocks_for(m * m, 1024), batch);
  add_identity_kernel<<<grid, kThreads, 0, stream>>>(Z, Q, m, a, static_cast<int>(dtype));
  check_launch("add_identity_kernel");
}

void launch_store_fp32(const float* in, void* out, long n, DType dtype, cudaStream_t stream) {
  store_fp32_kernel<<<blocks_for(n, 1024), kThreads, 0, stream>>>(in, out, n, static_cast<int>(dtype));
  check_launch("store_fp32_kernel");
}

void launch_mirror_lower(void* A, long m, int batch, DType dtype, cudaStream_t stream) {
  if (launch_mirror_lower_vec(A, m, batch, dtype, stream)) return;
  const unsigned tiles = static_cast<unsigned>((m + 31) / 32);
  mirror_lower_kernel<<<dim3(tiles, tiles, batch), dim3(32, 8), 0, stream>>>(A, m, static_cast<int>(dtype));
  check_launch("mirror_lower_kernel");
}

void launch_fill_normal(void* p, DType dtype, long n, std::uint64_t seed, float scale, cudaStream_t stream) {
  fill_normal_kernel<<<blocks_for(n, 4096), kThreads, 0, stream>>>(p, static_cast<int>(dtype), n, seed, scale);
  check_launch("fill_normal_kernel");
}

void launch_diff_norms(const void* a, const void* b, DType dtype, long n, double* out, cudaStream_t stream) {
  DMUON_CUDA_CHECK(cudaMemsetAsync(out, 0, 3 * sizeof(double), stream));
  diff_norms_kernel<<<blocks_for(n, 1024), kThreads, 0, stream>>>(a, b, static_cast<int>(dtype), n, out);
  check_launch("diff_norms_kernel");
}

}  // namespace dmuon::cuda
