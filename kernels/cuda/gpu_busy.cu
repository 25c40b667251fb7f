#include "kernels/cuda/gpu_busy.hpp"

#include <cstdint>

namespace dmuon::cuda {
namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Wall time, not clock64(): a cycle count would last longer the lower the clock it should raise.
__global__ void busy_kernel(std::uint64_t nanoseconds) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < nanoseconds) {
  }
}

}  // namespace

cudaError_t launch_busy(double seconds, cudaStream_t stream) {
  if (!(seconds > 0)) return cudaSuccess;
  int device = 0, sms = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  busy_kernel<<<sms, 128, 0, stream>>>(static_cast<std::uint64_t>(seconds * 1e9));
  return cudaGetLastError();
}

}  // namespace dmuon::cuda
