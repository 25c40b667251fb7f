// Eight consecutive elements of a bf16, fp16 or fp32 buffer in one 16-byte access (two for
// fp32), as floats. The Newton-Schulz normalisation and identity kernels read and write whole
// matrices; element by element (2-byte accesses behind a run-time dtype switch) they ran at
// 1.2-1.5 TB/s on H100 (ncu, reports/kernels-sym-gemm.md), under half of what the memory moves.
// Callers check vector_aligned() for the buffer and the per-entry element count first.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda {

inline constexpr int kVec = 8;  // elements per vector access

template <class T>
__device__ __forceinline__ float to_float(T x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else return x;
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return v;
}

// Elements [8 v, 8 v + 8) of p.
template <class T>
__device__ __forceinline__ void load8(const T* p, long v, float (&out)[kVec]) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));  // elements per 16 bytes
  const uint4* q = reinterpret_cast<const uint4*>(p) + v * (kVec / kPer);
#pragma unroll
  for (int w = 0; w < kVec / kPer; ++w) {
    const uint4 raw = q[w];  // plain load: Q may alias Z (launch_add_identity)
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int k = 0; k < kPer; ++k) out[w * kPer + k] = to_float(e[k]);
  }
}

template <class T>
__device__ __forceinline__ void store8(T* p, long v, const float (&in)[kVec]) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  uint4* q = reinterpret_cast<uint4*>(p) + v * (kVec / kPer);
#pragma unroll
  for (int w = 0; w < kVec / kPer; ++w) {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int k = 0; k < kPer; ++k) e[k] = from_float<T>(in[w * kPer + k]);
    q[w] = raw;
  }
}

// Whether `p` (bytes) and every batch entry of `elems` elements of `element_bytes` start on a
// 16-byte boundary and hold whole vectors: the kernels then read and write only through load8 /
// store8. Otherwise the element-by-element kernels run.
inline bool vector_aligned(const void* p, long elems, int element_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && elems % kVec == 0 &&
         (elems * element_bytes) % 16 == 0;
}

template <class T>
struct ElementType {
  using type = T;
};

// Calls f(ElementType<T>{}) with T the element type of `dtype` (bf16, fp16, else fp32).
template <class F>
void with_element_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::bf16: return f(ElementType<__nv_bfloat16>{});
    case DType::fp16: return f(ElementType<__half>{});
    default: return f(ElementType<float>{});
  }
}

}  // namespace dmuon::cuda
