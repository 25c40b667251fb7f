// Loads and stores of one element of a bf16, fp16 or fp32 buffer as float (fp32 arithmetic,
// round-to-nearest on store), shared by the fused elementwise and Newton-Schulz helper kernels.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda {

__device__ __forceinline__ float load_element(const void* p, int dtype, long i) {
  switch (dtype) {
    case static_cast<int>(DType::bf16): return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case static_cast<int>(DType::fp16): return __half2float(static_cast<const __half*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void store_element(void* p, int dtype, long i, float v) {
  switch (dtype) {
    case static_cast<int>(DType::bf16): static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case static_cast<int>(DType::fp16): static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

}  // namespace dmuon::cuda
