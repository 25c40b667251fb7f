// Error checking for every CUDA runtime call: a failure becomes a dmuon::Error naming the
// call, the file:line and CUDA's own message.
#pragma once
#include <string>

#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace dmuon::cuda {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace dmuon::cuda

#define DMUON_CUDA_CHECK(call) ::dmuon::cuda::check((call), #call, __FILE__, __LINE__)
