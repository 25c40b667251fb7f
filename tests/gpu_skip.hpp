// GPU and NCCL tests that cannot run here (no GPU, or fewer than they need) call skip_test():
// it prints "SKIP <what>: <why>" (harness/tools/device_gpu_tests.sh counts those lines) and marks
// the process, and tests/gpu_test_main.cpp then exits with kSkipReturnCode unless a check failed.
// tests/CMakeLists.txt sets that code as the test's SKIP_RETURN_CODE, so CTest reports such a test
// as skipped ("Not Run"), never as passed.
#pragma once
#include <iostream>
#include <string>

#include "kernels/cuda/device_query.hpp"

namespace dmuon::test {

// Autotools' and CTest's conventional "skipped" exit code.
inline constexpr int kSkipReturnCode = 77;

// Whether any test case of this process called skip_test().
inline bool& any_skipped() {
  static bool skipped = false;
  return skipped;
}

inline void skip_test(const std::string& what, const std::string& why) {
  std::cout << "SKIP " << what << ": " << why << "\n";
  any_skipped() = true;
}

}  // namespace dmuon::test

// True (after recording the skip) when no GPU is visible; the caller returns.
inline bool skip_without_gpu() {
  const std::string reason = dmuon::cuda::no_device_reason();
  if (reason.empty()) return false;
  dmuon::test::skip_test("GPU checks", reason);
  return true;
}
