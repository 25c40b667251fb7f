// The vector forms of the Newton-Schulz element kernels (ns_kernels.hpp): eight elements per
// 16-byte access (vector_access.cuh) where a buffer and every batch entry are whole vectors. Each
// launch_*_vec returns false, launching nothing, where they are not (ns_kernels.cu then runs the
// element kernels). Same roundings element for element as the element kernels; the squares'
// double sum is added in another order.
#include "kernels/cuda/ns_kernels_vector.hpp"

#include <cstdlib>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/ns_device_math.cuh"
#include "kernels/cuda/ns_kernels.hpp"
#include "kernels/cuda/vector_access.cuh"

namespace dmuon::cuda {
namespace {

using namespace ns_detail;

// The transposing kernels' square tile (elements a side) and its vectors a line; their launchers
// size the grid with the same tile.
constexpr int kTile = 64, kVecs = kTile / kVec;

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
      for (int k = 0; k < kVec; ++k) e[k] = normalized(e[k], norm_dtype, d);
    }
    store8(X + base, v, e);
  }
}

// The transposed normalisation in 64 x 64 tiles: each thread reads eight elements along an input
// row and writes eight along an output row (an input column), through shared memory.
template <class Tin, class Tout>
__global__ void normalize_transposed_vec_kernel(const Tin* in, int norm_dtype, long rows, long cols,
                                                const float* divisor, const int* status, Tout* X) {
  __shared__ float tile[kTile][kTile + 1];
  const int b = blockIdx.z;
  const long base = static_cast<long>(b) * rows * cols;
  const bool ok = status[b] == kNormOk;
  const float d = divisor[b];
  const long r0 = static_cast<long>(blockIdx.y) * kTile, c0 = static_cast<long>(blockIdx.x) * kTile;
  for (int t = threadIdx.x; t < kTile * kVecs; t += blockDim.x) {
    const int row = t / kVecs, v = t % kVecs;
    const long r = r0 + row, c = c0 + v * kVec;
    if (r >= rows || c >= cols) continue;
    float e[kVec] = {};
    if (ok) {
      load8(in + base + r * cols, c / kVec, e);
#pragma unroll
      for (int k = 0; k < kVec; ++k) e[k] = normalized(e[k], norm_dtype, d);
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k) tile[row][v * kVec + k] = e[k];
  }
  __syncthreads();
  for (int t = threadIdx.x; t < kTile * kVecs; t += blockDim.x) {
    const int col = t / kVecs, v = t % kVecs;
    const long c = c0 + col, r = r0 + v * kVec;
    if (r >= rows || c >= cols) continue;
    float e[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) e[k] = tile[v * kVec + k][col];
    store8(X + base + c * rows, r / kVec, e);
  }
}

// The lower triangle mirrored onto the upper one in 64 x 64 tiles (column-major m x m, m % 8 == 0):
// block (tr, tc), tr <= tc, reads the lower tile (tc, tr) eight rows an access and writes the upper
// tile (tr, tc) the same way. On a diagonal tile a vector also covers elements on or below the
// diagonal: those get their own values back (no other block writes them).
template <class T>
__global__ void mirror_lower_vec_kernel(T* A, long m) {
  __shared__ float tile[kTile][kTile + 1];  // tile[c][r]: element (r, c) of the source tile
  const long tr = blockIdx.x, tc = blockIdx.y;
  if (tr > tc) return;
  T* a = A + static_cast<long>(blockIdx.z) * m * m;
  for (int t = threadIdx.x; t < kTile * kVecs; t += blockDim.x) {
    const int c = t / kVecs, v = t % kVecs;
    const long col = tr * kTile + c, row = tc * kTile + v * kVec;
    if (col >= m || row >= m) continue;
    float e[kVec];
    load8(a + col * m + tc * kTile, v, e);
#pragma unroll
    for (int k = 0; k < kVec; ++k) tile[c][v * kVec + k] = e[k];
  }
  __syncthreads();
  const bool diagonal = tr == tc;
  for (int t = threadIdx.x; t < kTile * kVecs; t += blockDim.x) {
    const int c = t / kVecs, v = t % kVecs;  // destination column c of the tile, rows v * 8 + k
    const long col = tc * kTile + c, row = tr * kTile + v * kVec;
    if (col >= m || row >= m) continue;
    float e[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const int r = v * kVec + k;
      e[k] = diagonal && r >= c ? tile[c][r] : tile[r][c];  // own value : the mirrored one
    }
    store8(a + col * m + tr * kTile, v, e);
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

void check_launch(const char* what) { check(cudaGetLastError(), what, __FILE__, __LINE__); }

int element_bytes(DType dtype) { return static_cast<int>(bytes_per_element(dtype)); }

}  // namespace

bool launch_sum_squares_vec(const void* in, DType in_dtype, DType norm_dtype, long elems, int batch, double* sums,
                            cudaStream_t stream) {
  if (!vectors(in_dtype) || !vector_aligned(in, elems, element_bytes(in_dtype))) return false;
  const dim3 grid(blocks_for(elems / kVec, 1024), batch);
  with_element_type(in_dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    sum_squares_vec_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<int>(norm_dtype),
                                                             elems, sums);
  });
  check_launch("sum_squares_vec_kernel");
  return true;
}

bool launch_normalize_vec(const void* in, DType in_dtype, const NsConfig& ns, long elems, int batch,
                          const float* divisor, const int* status, void* X, cudaStream_t stream) {
  if (!vectors(in_dtype) || !vectors(ns.compute_dtype) || !vector_aligned(in, elems, element_bytes(in_dtype)) ||
      !vector_aligned(X, elems, element_bytes(ns.compute_dtype))) {
    return false;
  }
  const dim3 grid(blocks_for(elems / kVec, 2048), batch);
  with_element_type(in_dtype, [&](auto tin) {
    with_element_type(ns.compute_dtype, [&](auto tout) {
      using Tin = typename decltype(tin)::type;
      using Tout = typename decltype(tout)::type;
      normalize_vec_kernel<Tin, Tout><<<grid, kThreads, 0, stream>>>(
          static_cast<const Tin*>(in), static_cast<int>(ns.normalize_dtype), elems, divisor, status, static_cast<Tout*>(X));
    });
  });
  check_launch("normalize_vec_kernel");
  return true;
}

bool launch_normalize_transposed_vec(const void* in, DType in_dtype, const NsConfig& ns, long rows, long cols, int batch,
                                     const float* divisor, const int* status, void* X, cudaStream_t stream) {
  // Whole vectors along input rows (cols % 8) and output rows (rows % 8), every entry aligned.
  if (!vectors(in_dtype) || !vectors(ns.compute_dtype) || rows % kVec != 0 || cols % kVec != 0 ||
      !vector_aligned(in, rows * cols, element_bytes(in_dtype)) ||
      !vector_aligned(X, rows * cols, element_bytes(ns.compute_dtype))) {
    return false;
  }
  const dim3 tiles(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile), batch);
  with_element_type(in_dtype, [&](auto tin) {
    with_element_type(ns.compute_dtype, [&](auto tout) {
      using Tin = typename decltype(tin)::type;
      using Tout = typename decltype(tout)::type;
      normalize_transposed_vec_kernel<Tin, Tout><<<tiles, kThreads, 0, stream>>>(
          static_cast<const Tin*>(in), static_cast<int>(ns.normalize_dtype), rows, cols, divisor, status,
          static_cast<Tout*>(X));
    });
  });
  check_launch("normalize_transposed_vec_kernel");
  return true;
}

bool launch_add_identity_vec(const void* Z, void* Q, long m, int batch, float a, DType dtype, cudaStream_t stream) {
  if (!vectors(dtype) || !vector_aligned(Z, m * m, element_bytes(dtype)) || !vector_aligned(Q, m * m, element_bytes(dtype))) {
    return false;
  }
  const dim3 grid(blocks_for(m * m / kVec, 1024), batch);
  with_element_type(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    add_identity_vec_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(Z), static_cast<T*>(Q), m, a);
  });
  check_launch("add_identity_vec_kernel");
  return true;
}

bool launch_mirror_lower_vec(void* A, long m, int batch, DType dtype, cudaStream_t stream) {
  if (!vectors(dtype) || m % kVec != 0 || !vector_aligned(A, m * m, element_bytes(dtype))) return false;
  const auto tiles = static_cast<unsigned>((m + kTile - 1) / kTile);
  with_element_type(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    mirror_lower_vec_kernel<T><<<dim3(tiles, tiles, batch), kThreads, 0, stream>>>(static_cast<T*>(A), m);
  });
  check_launch("mirror_lower_vec_kernel");
  return true;
}

}  // namespace dmuon::cuda
