// main() of the GPU and NCCL tests: Catch2's own run, then kSkipReturnCode (77) when a test case
// could not run on this machine (tests/gpu_skip.hpp) and nothing failed, so that CTest, told by
// SKIP_RETURN_CODE, reports the test as skipped instead of passed. A failure always wins.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>  // Catch2 3 (GPU machine)
#else
#define CATCH_CONFIG_RUNNER  // Catch2 2 (Debian): this file compiles Catch's implementation
#include <catch2/catch.hpp>
#endif

#include <iostream>

#include "gpu_skip.hpp"

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && dmuon::test::any_skipped()) {
    std::cout << "SKIPPED: some checks could not run on this machine (exit " << dmuon::test::kSkipReturnCode
              << ", reported by CTest as skipped)\n";
    return dmuon::test::kSkipReturnCode;
  }
  return failed;
}
