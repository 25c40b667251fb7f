// Counter-based random fill (splitmix64 of seed + index): no state, any element computable alone.
// Built as C++17 by nvcc: it sees only executor_types.hpp, no core header.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/exec/fill.hpp"

namespace dmuon::exec {
namespace {

__device__ inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ inline void store(float* p, float x) { *p = x; }
__device__ inline void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ inline void store(__half* p, float x) { *p = __float2half_rn(x); }

template <class T>
__global__ void fill_kernel(T* out, std::int64_t n, std::uint64_t seed, std::int64_t first, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t h = splitmix64(seed + static_cast<std::uint64_t>(first + i));
    const float u = static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 bits: exact in fp32
    store(out + i, scale * u);
  }
}

template <class Bits>
__global__ void fill_bits_kernel(Bits* out, std::int64_t n, Bits bits) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = bits;
  }
}

}  // namespace

void fill_negative_zero(void* data, ElementType type, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + threads - 1) / threads, 4096));
  if (type == ElementType::fp32) {
    fill_bits_kernel<<<blocks, threads, 0, stream>>>(static_cast<std::uint32_t*>(data), n, std::uint32_t{0x80000000u});
  } else {  // bf16 and fp16: the sign bit alone
    fill_bits_kernel<<<blocks, threads, 0, stream>>>(static_cast<std::uint16_t*>(data), n, std::uint16_t{0x8000u});
  }
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw std::runtime_error(std::string("fill -0 kernel launch: ") + cudaGetErrorString(status));
}

void fill_uniform(void* data, ElementType type, std::int64_t n, std::uint64_t seed, std::int64_t first_index, double scale,
                  cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + threads - 1) / threads, 4096));
  const float s = static_cast<float>(scale);
  switch (type) {
    case ElementType::fp32: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<float*>(data), n, seed, first_index, s); break;
    case ElementType::bf16:
      fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n, seed, first_index, s);
      break;
    case ElementType::fp16: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__half*>(data), n, seed, first_index, s); break;
  }
  const cudaError_t status = cudaGetLastError();
  // cuda_check.hpp pulls in C++20 core headers; the .cpp caller adds the context to this error.
  if (status != cudaSuccess) throw std::runtime_error(std::string("fill kernel launch: ") + cudaGetErrorString(status));
}

}  // namespace dmuon::exec
