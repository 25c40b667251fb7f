// Error checking for every NCCL call: a failure becomes a dmuon::Error naming the call, the
// file:line, NCCL's result string and NCCL's own last-error text (which says which peer or
// transport failed).
#pragma once
#include <string>

#include <nccl.h>

#include "core/error.hpp"

namespace dmuon::comm {

inline void check(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  std::string detail = ncclGetLastError(nullptr);
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
              ncclGetErrorString(status) + (detail.empty() ? "" : " (" + detail + ")"));
}

}  // namespace dmuon::comm

#define DMUON_NCCL_CHECK(call) ::dmuon::comm::check((call), #call, __FILE__, __LINE__)
