// Normalisation and small helper kernels of the Newton-Schulz engine.
#include "kernels/cuda/ns_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_element.cuh"
#include "kernels/cuda/vector_access.cuh"

namespace dmuon::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load(const void* p, int dtype, long i) { return load_element(p, dtype, i); }
__device__ __forceinline__ void store(void* p, int dtype, long i, float v) { store_element(p, dtype, i, v); }

// The value x takes when stored in `dtype` (fp32: unchanged), as an fp32 number.
__device__ __forceinline__ float round_to(float x, int dtype) {
  switch (dtype) {
    case static_cast<int>(DType::bf16): return __bfloat162float(__float2bfloat16_rn(x));
    case static_cast<int>(DType::fp16): return __half2float(__float2half_rn(x));
    default: return x;
  }
}

__device__ __forceinline__ double round_to_d(double x, int dtype) {
  return static_cast<double>(round_to(static_cast<float>(x), dtype));
}

__device__ __forceinline__ double block_sum(double v) {
  __shared__ double partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  }
  return total;  // valid in thread 0
}

int blocks_for(long n, int cap) {
  const long b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < cap ? (b < 1 ? 1 : b) : cap);
}

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
    if (ok) v = round_to(round_to(load(in, in_dtype, base + i), norm_dtype) / d, norm_dtype);
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
          ok ? round_to(round_to(load(in, in_dtype, base + r * cols + c), norm_dtype) / d, norm_dtype) : 0.0f;
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const long c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) store(X, compute_dtype, base + c * rows + r, tile[threadIdx.x][k]);
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

// The same three kernels, eight elements an access (vector_access.cuh), for buffers whose
// batch entries are whole 16-byte vectors; same roundings, element for element (the squares'
// double sum is added in another order).
template <class T>
__global__ void sum_squares_vec_kernel(const T* in, int norm_dtype, long elems, double* sums) {
  const int b = blockIdx.y;
  const T* x = in + static_cast<long>(b) * elems;
  double acc = 0;
  for (long v = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; v < elems / kVec;
       v += static_cast<long>(gridDim.x) * blockDim.x) {
    float e[kVec];
    load8(x, v, e);
    double part = 0;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const double r = round_to(e[k], norm_dtype);
      part += r * r;
    }
    acc += part;
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) atomicAdd(&sums[b], total);
}

template <class Tin, class Tout>
__global__ void normalize_vec_kernel(const Tin* in, int norm_dtype, long elems, const float* divisor,
                                     const int* status, Tout* X) {
  const int b = blockIdx.y;
  const long base = static_cast<long>(b) * elems;
  const bool ok = status[b] == kNormOk;
  const float d = divisor[b];
  for (long v = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; v < elems / kVec;
       v += static_cast<long>(gridDim.x) * blockDim.x) {
    float e[kVec] = {};
    if (ok) {
      load8(in + base, v, e);
#pragma unroll
      for (int k = 0; k < kVec; ++k) e[k] = round_to(round_to(e[k], norm_dtype) / d, norm_dtype);
    }
    store8(X + base, v, e);
  }
}

// One division a vector: its first element's row and column, then the column steps along.
template <class T>
__global__ void add_identity_vec_kernel(const T* Z, T* Q, long m, float a_exact) {
  const float a = to_float(from_float<T>(a_exact));
  const long per = m * m;
  const long base = static_cast<long>(blockIdx.y) * per;
  for (long v = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; v < per / kVec;
       v += static_cast<long>(gridDim.x) * blockDim.x) {
    float e[kVec];
    load8(Z + base, v, e);
    long row = v * kVec / m, col = v * kVec % m;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      if (col == row) e[k] += a;
      if (++col == m) col = 0, ++row;
    }
    store8(Q + base, v, e);
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

// Whether the vector kernels take this dtype (bf16, fp16, fp32). DMUON_NS_VECTOR=0 sends every
// call to the element kernels: a measurement knob for timing both paths side by side in one run
// (reports/kernels-sym-gemm.md), not a setting.
bool vectors(DType dtype) {
  static const bool enabled = [] {
    const char* v = std::getenv("DMUON_NS_VECTOR");
    return !(v && std::string(v) == "0");
  }();
  return enabled && (dtype == DType::bf16 || dtype == DType::fp16 || dtype == DType::fp32);
}

}  // namespace

void launch_sum_squares(const void* in, DType in_dtype, DType norm_dtype, long elems, int batch, double* sums,
                        cudaStream_t stream) {
  DMUON_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(double) * batch, stream));
  if (vectors(in_dtype) && vector_aligned(in, elems, static_cast<int>(bytes_per_element(in_dtype)))) {
    const dim3 grid(blocks_for(elems / kVec, 1024), batch);
    with_element_type(in_dtype, [&](auto t) {
      using T = typename decltype(t)::type;
      sum_squares_vec_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<int>(norm_dtype),
                                                               elems, sums);
    });
    return check_launch("sum_squares_vec_kernel");
  }
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
  if (vectors(in_dtype) && vectors(ns.compute_dtype) &&
      vector_aligned(in, elems, static_cast<int>(bytes_per_element(in_dtype))) &&
      vector_aligned(X, elems, static_cast<int>(bytes_per_element(ns.compute_dtype)))) {
    const dim3 grid(blocks_for(elems / kVec, 2048), batch);
    with_element_type(in_dtype, [&](auto tin) {
      with_element_type(ns.compute_dtype, [&](auto tout) {
        using Tin = typename decltype(tin)::type;
        using Tout = typename decltype(tout)::type;
        normalize_vec_kernel<Tin, Tout><<<grid, kThreads, 0, stream>>>(
            static_cast<const Tin*>(in), static_cast<int>(ns.normalize_dtype), elems, divisor, status, static_cast<Tout*>(X));
      });
    });
    return check_launch("normalize_vec_kernel");
  }
  const dim3 grid(blocks_for(elems, 2048), batch);
  normalize_kernel<<<grid, kThreads, 0, stream>>>(in, static_cast<int>(in_dtype),
                                                  static_cast<int>(ns.normalize_dtype),
                                                  static_cast<int>(ns.compute_dtype), elems, divisor, status, X);
  check_launch("normalize_kernel");
}

void launch_normalize_transposed(const void* in, DType in_dtype, const NsConfig& ns, long rows, long cols, int batch,
                                 const float* divisor, const int* status, void* X, cudaStream_t stream) {
  if ((rows + 31) / 32 > 65535) throw Error("launch_normalize_transposed: " + std::to_string(rows) + " rows exceed the grid");
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 31) / 32), batch);
  normalize_transposed_kernel<<<grid, dim3(32, 8), 0, stream>>>(
      in, static_cast<int>(in_dtype), static_cast<int>(ns.normalize_dtype), static_cast<int>(ns.compute_dtype), rows, cols,
      divisor, status, X);
  check_launch("normalize_transposed_kernel");
}

void launch_add_identity(const void* Z, void* Q, long m, int batch, float a, DType dtype, cudaStream_t stream) {
  const int bytes = static_cast<int>(bytes_per_element(dtype));
  if (vectors(dtype) && vector_aligned(Z, m * m, bytes) && vector_aligned(Q, m * m, bytes)) {
    const dim3 grid(blocks_for(m * m / kVec, 1024), batch);
    with_element_type(dtype, [&](auto t) {
      using T = typename decltype(t)::type;
      add_identity_vec_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(Z), static_cast<T*>(Q), m, a);
    });
    return check_launch("add_identity_vec_kernel");
  }
  const dim3 grid(blocks_for(m * m, 1024), batch);
  add_identity_kernel<<<grid, kThreads, 0, stream>>>(Z, Q, m, a, static_cast<int>(dtype));
  check_launch("add_identity_kernel");
}

void launch_store_fp32(const float* in, void* out, long n, DType dtype, cudaStream_t stream) {
  store_fp32_kernel<<<blocks_for(n, 1024), kThreads, 0, stream>>>(in, out, n, static_cast<int>(dtype));
  check_launch("store_fp32_kernel");
}

void launch_mirror_lower(void* A, long m, int batch, DType dtype, cudaStream_t stream) {
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
