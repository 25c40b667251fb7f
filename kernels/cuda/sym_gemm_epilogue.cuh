// Epilogue of the symmetric-product kernel: one consumer warpgroup's 64 x N fp32 accumulators
// (wgmma's m64nN fragment layout) become alpha acc + beta C in fp32, rounded once to 16 bits (a
// GEMM epilogue's order) and written to the lower triangle of D and, transposed, to the upper one.
// Every element of D is written by exactly one thread: (r, c) with r >= c directly, (c, r) with
// r > c as the mirror. C is read chunk by chunk into the staging buffer: row r, column c of the
// piece, i.e. only its lower triangle (and the diagonal tiles' upper halves, whose results the
// mirror overwrites).
// The fragments go through a 64 x 64 shared-memory chunk so that both the tile and its transpose
// leave in 16-byte stores (v1 stored 2-byte fragments straight to global: ~20 us an item, 10% of
// a 4096 x 14336 product and more on shorter k). Only rows of D below `rows` are written (m; 0
// for a dummy piece).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace dmuon::cuda::sym {

constexpr int kChunk = 64;             // columns staged at a time
constexpr int kPitch = kChunk + 8;     // elements; 144-byte rows keep fragment writes and
                                       // column gathers free of bank conflicts
constexpr int kStageElems = 64 * kPitch;

template <typename T>
__device__ __forceinline__ T to_elem(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}

template <typename T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return __bfloat162float(v);
}

// The epilogue's scaling: D = alpha acc + beta C; without C (kHasC false) only alpha.
template <typename T>
struct Scale {
  const T* c = nullptr;  // this batch entry's C
  float alpha = 1.0f, beta = 0.0f;
};

// C's 64 x 64 chunk at (row0, col0), one thread's share (4 rows of 8 columns) in registers,
// coalesced: 16-byte loads where the 8 columns are inside and aligned (C 16-byte aligned,
// m % 8 == 0), else element by element; zeros outside rows below `rows` and columns below m (a
// dummy piece, rows 0, reads nothing). Loading the fragments' pairs straight from global memory
// (32 scattered 4-byte loads a thread and chunk) made c A^2 + b A of 4096 x 4096 take 0.19 ms
// against 0.126 for X X^T of the same size. Held in registers so that the next chunk's loads are
// in flight while this chunk is scaled and stored (store_mirrored): staged straight into shared
// memory, every chunk waited out its loads' latency with the warpgroup stopped behind a barrier.
struct CChunk {
  uint4 v[4];
};

template <typename T>
__device__ __forceinline__ void load_c_chunk(CChunk& out, const Scale<T>& sc, int m, int rows, int row0, int col0,
                                             bool vector_loads) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int it = 0; it < 4; ++it) {
    const int r = t / 8 + 16 * it, c = 8 * (t % 8);
    const int row = row0 + r, col = col0 + c;
    if (vector_loads && row < rows && col + 7 < m) {
      out.v[it] = *reinterpret_cast<const uint4*>(sc.c + static_cast<long>(row) * m + col);
    } else {
      T v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = row < rows && col + e < m ? sc.c[static_cast<long>(row) * m + col + e] : T(0.0f);
      out.v[it] = *reinterpret_cast<const uint4*>(v);
    }
  }
}

// The chunk load_c_chunk read, into `stage` at the rows and columns it came from.
template <typename T>
__device__ __forceinline__ void put_c_chunk(T* stage, const CChunk& in) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int it = 0; it < 4; ++it) {
    const int r = t / 8 + 16 * it, c = 8 * (t % 8);
    *reinterpret_cast<uint4*>(stage + r * kPitch + c) = in.v[it];
  }
}

// Named barrier of one warpgroup (ids 1, 2; 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int id) { asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory"); }

// Eight 16-bit values to row `row` of S at columns col..col+7, each only where keep(col + e):
// one 16-byte store when all are kept and the address is aligned.
template <typename T, typename Keep>
__device__ __forceinline__ void store8(T* s, long ld, long row, int col, const T (&v)[8], bool aligned, Keep keep) {
  T* p = s + row * ld + col;
  if (aligned && keep(col) && keep(col + 7)) {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(v);
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e)
    if (keep(col + e)) p[e] = v[e];
}

// acc: fragment of D rows row0 .. row0+63; columns 0..127 map to col_a.., 128..255 to col_b...
// Fragment: thread (warp w, lane l) holds, for 8-column group j, acc[4j + 2h + e] at row
// 16w + l/4 + 8h, column 8j + 2(l%4) + e. `stage`: this warpgroup's kStageElems buffer.
template <typename T, int N, bool kHasC>
__device__ __forceinline__ void store_mirrored(const float* acc, T* s, const Scale<T>& sc, int m, int rows, int row0,
                                               int col_a, int col_b, T* stage, int barrier_id) {
  const int t = threadIdx.x % 128;
  const int lane = t % 32, warp = t / 32;
  const long ld = m;
  // Rows of S start 16-byte aligned: vector stores (col0 and row0 are multiples of 64).
  const bool aligned = m % 8 == 0 && reinterpret_cast<std::uintptr_t>(s) % 16 == 0;
  const bool vector_loads = m % 8 == 0 && reinterpret_cast<std::uintptr_t>(sc.c) % 16 == 0;
  // S column of chunk q's column 0.
  auto chunk_col = [&](int q) { return (q < 2 ? col_a : col_b - 128) + q * kChunk; };
  [[maybe_unused]] CChunk c_next;  // C of the chunk about to be staged, loaded one chunk ahead
  if constexpr (kHasC) load_c_chunk(c_next, sc, m, rows, row0, chunk_col(0), vector_loads);
#pragma unroll
  for (int q = 0; q < N / kChunk; ++q) {
    const int col0 = chunk_col(q);
    warpgroup_sync(barrier_id);  // the previous chunk's reads are done
    if constexpr (kHasC) {
      put_c_chunk(stage, c_next);
      if (q + 1 < N / kChunk) load_c_chunk(c_next, sc, m, rows, row0, chunk_col(q + 1), vector_loads);
      warpgroup_sync(barrier_id);
    }
#pragma unroll
    for (int jj = 0; jj < kChunk / 8; ++jj) {
      const int j = q * (kChunk / 8) + jj;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * warp + lane / 4 + 8 * h, c = 8 * jj + 2 * (lane % 4);
        float v0 = sc.alpha * acc[4 * j + 2 * h], v1 = sc.alpha * acc[4 * j + 2 * h + 1];
        if constexpr (kHasC) {  // C's pair sits where the result goes: read, then overwritten
          T cp[2];
          *reinterpret_cast<std::uint32_t*>(cp) = *reinterpret_cast<const std::uint32_t*>(stage + r * kPitch + c);
          v0 = fmaf(sc.beta, to_float(cp[0]), v0);
          v1 = fmaf(sc.beta, to_float(cp[1]), v1);
        }
        T pair[2] = {to_elem<T>(v0), to_elem<T>(v1)};
        *reinterpret_cast<std::uint32_t*>(stage + r * kPitch + c) = *reinterpret_cast<std::uint32_t*>(pair);
      }
    }
    warpgroup_sync(barrier_id);
    // The tile: row r, 8 columns per thread; a quarter warp writes one 128-byte row segment.
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      const int r = t / 8 + 16 * it, c = 8 * (t % 8);
      const int row = row0 + r;
      if (row >= rows) continue;
      T v[8];
      *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(stage + r * kPitch + c);
      store8(s, ld, row, col0 + c, v, aligned, [&](int col) { return col <= row; });
    }
    // The transpose: S row col0 + c gets the chunk's column c, 8 tile rows per thread.
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      const int c = t % 64, r = 8 * (t / 64 + 2 * it);
      const int row = col0 + c;
      if (row >= rows) continue;
      T v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = stage[(r + e) * kPitch + c];
      store8(s, ld, row, row0 + r, v, aligned, [&](int col) { return col > row && col < m; });
    }
  }
}

}  // namespace dmuon::cuda::sym
