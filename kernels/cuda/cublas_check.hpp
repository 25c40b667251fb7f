// Error checking for every cuBLAS / cuBLASLt call: a failure becomes a dmuon::Error naming the
// call, the file:line and cuBLAS's status name.
#pragma once
#include <string>

#include <cublas_api.h>

#include "core/error.hpp"

namespace dmuon::cuda {

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
              cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

}  // namespace dmuon::cuda

#define DMUON_CUBLAS_CHECK(call) ::dmuon::cuda::check_cublas((call), #call, __FILE__, __LINE__)
