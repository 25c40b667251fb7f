// `dmuon-bench step`'s command line without a GPU: a bad flag exits 2 with one line naming it,
// before any GPU work. CUDA_VISIBLE_DEVICES is emptied so the case holds on the GPU machine too.
#include <string>

#include "catch_compat.hpp"
#include "run_command.hpp"

namespace {

const std::string kScenario = std::string(DMUON_SOURCE_DIR) + "/scenarios/verify-small.yaml";

void expect_usage_error(const std::string& args, const std::string& message) {
  INFO(args);
  const std::string exe = "CUDA_VISIBLE_DEVICES= " + std::string(DMUON_BENCH_EXE);
  check_usage_error(run_command(exe, "step --scenario " + kScenario + " " + args), message);
}

}  // namespace

TEST_CASE("dmuon-bench step: bad flags exit 2 with one line naming the flag", "[cli]") {
  expect_usage_error("--reserve-GiB -1", "--reserve-GiB: must be a finite number >= 0, got -1");
  expect_usage_error("--reserve-GiB nan", "--reserve-GiB: must be a finite number >= 0");
  expect_usage_error("--reserve-GiB lots", "reserve-GiB");
  expect_usage_error("--backend gloo", "--backend: 'gloo' cannot measure a step");
}
