// A non-blocking CUDA stream owned for the duration of one measurement (RAII).
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::cuda {

class OwnedStream {
 public:
  OwnedStream() { DMUON_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~OwnedStream() { (void)cudaStreamDestroy(s_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace dmuon::cuda
