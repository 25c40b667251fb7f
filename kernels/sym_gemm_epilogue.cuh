// Epilogue of the symmetric-product kernel: one consumer warpgroup's 64 x N fp32 accumulators
// (wgmma's m64nN fragment layout) rounded once to 16 bits and written to the lower triangle of
// S and, transposed, to the upper one. Every element of S is written by exactly one thread:
// (r, c) with r >= c directly, (c, r) with r > c as the mirror.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace dmuon::cuda::sym {

template <typename T>
__device__ __forceinline__ T to_elem(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}

// acc: fragment of rows row0 .. row0+63; columns 0..127 map to col_a.., 128..255 to col_b..
// Fragment: thread (warp w, lane l) holds, for 8-column group j, acc[4j + 2h + e] at row
// 16w + l/4 + 8h, column 8j + 2(l%4) + e.
template <typename T, int N>
__device__ __forceinline__ void store_mirrored(const float* acc, T* s, int m, int row0, int col_a, int col_b) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x / 32) % 4;
  const long ld = m;
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    const int local = 8 * j + 2 * (lane % 4);
    const int col = (local < 128 ? col_a : col_b - 128) + local;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 16 * warp + lane / 4 + 8 * h;
      if (row >= m) continue;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = col + e;
        const T v = to_elem<T>(acc[4 * j + 2 * h + e]);
        if (c <= row) s[row * ld + c] = v;
        if (c < row) s[c * ld + row] = v;
      }
    }
  }
}

}  // namespace dmuon::cuda::sym
