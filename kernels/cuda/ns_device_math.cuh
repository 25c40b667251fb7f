// Device helpers the Newton-Schulz element kernels share (ns_kernels.cu, and the vector forms in
// ns_kernels_vector.cu): the block size, rounding to a storage dtype, the normalisation of one
// element, a block's double sum.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda::ns_detail {

inline constexpr int kThreads = 256;

// The value x takes when stored in `dtype` (fp32: unchanged), as an fp32 number.
__device__ __forceinline__ float round_to(float x, int dtype) {
  switch (dtype) {
    case static_cast<int>(DType::bf16): return __bfloat162float(__float2bfloat16_rn(x));
    case static_cast<int>(DType::fp16): return __half2float(__float2half_rn(x));
    default: return x;
  }
}

// An input element normalised as reference/newton_schulz.cpp does it: rounded to `norm_dtype`,
// divided by the normaliser, rounded again. The element and vector kernels (plain and transposed)
// all use this one definition, so their outputs agree bit for bit.
__device__ __forceinline__ float normalized(float x, int norm_dtype, float divisor) {
  return round_to(round_to(x, norm_dtype) / divisor, norm_dtype);
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

// Blocks for n elements at one per thread, at most `cap` (grid-stride loops do the rest).
inline int blocks_for(long n, int cap) {
  const long b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < cap ? (b < 1 ? 1 : b) : cap);
}

}  // namespace dmuon::cuda::ns_detail
