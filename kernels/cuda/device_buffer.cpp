#include "kernels/cuda/device_buffer.hpp"

#include <algorithm>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/ns_kernels.hpp"

namespace dmuon::cuda {

void* device_alloc(std::size_t bytes, const std::string& what) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free allocation error before asking for the free size
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error("out of GPU memory allocating " + what + ": wanted " + std::to_string(bytes) + " bytes, " +
                std::to_string(free_bytes) + " bytes free of " + std::to_string(total_bytes));
  }
  check(status, ("cudaMalloc(" + what + ")").c_str(), __FILE__, __LINE__);
  return ptr;
}

void device_free(void* ptr) noexcept {
  if (ptr) cudaFree(ptr);  // a destructor cannot throw; a failing free means a dead context anyway
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_) throw Error("DeviceBuffer::upload: " + std::to_string(bytes) + " bytes into a buffer of " +
                                  std::to_string(bytes_));
  DMUON_CUDA_CHECK(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_) throw Error("DeviceBuffer::download: " + std::to_string(bytes) + " bytes from a buffer of " +
                                  std::to_string(bytes_));
  DMUON_CUDA_CHECK(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
}

void copy_to_host(void* host, const void* device, std::size_t bytes) {
  DMUON_CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
}

void copy_to_device(void* device, const void* host, std::size_t bytes) {
  DMUON_CUDA_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::zero(Stream stream) {
  if (ptr_) DMUON_CUDA_CHECK(cudaMemsetAsync(ptr_, 0, bytes_, stream));
}

void fill_normal(void* device_ptr, DType dtype, long n, std::uint64_t seed, float scale, Stream stream) {
  if (dtype != DType::fp32 && dtype != DType::bf16 && dtype != DType::fp16) {
    throw Error("fill_normal: dtype must be fp32, bf16 or fp16");
  }
  if (n > 0) launch_fill_normal(device_ptr, dtype, n, seed, scale, stream);
}

void synchronize(Stream stream) { DMUON_CUDA_CHECK(cudaStreamSynchronize(stream)); }

std::vector<double> time_on_stream(Stream stream, int warmup, int repeats, const std::function<void()>& work) {
  for (int i = 0; i < warmup; ++i) work();
  cudaEvent_t start = nullptr, stop = nullptr;
  DMUON_CUDA_CHECK(cudaEventCreate(&start));
  DMUON_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> seconds;
  try {
    for (int i = 0; i < repeats; ++i) {
      DMUON_CUDA_CHECK(cudaEventRecord(start, stream));
      work();
      DMUON_CUDA_CHECK(cudaEventRecord(stop, stream));
      DMUON_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      DMUON_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      seconds.push_back(ms * 1e-3);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return seconds;
}

}  // namespace dmuon::cuda
