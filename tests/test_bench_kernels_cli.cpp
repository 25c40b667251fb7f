// `dmuon-bench kernels`' command line without a GPU: a bad flag combination exits 2 with one line
// naming it, before any GPU work. CUDA_VISIBLE_DEVICES is emptied so the case holds on the GPU
// machine too.
#include <string>

#include "catch_compat.hpp"
#include "run_command.hpp"

namespace {

void expect_usage_error(const std::string& args, const std::string& message) {
  INFO(args);
  check_usage_error(run_command("CUDA_VISIBLE_DEVICES= " + std::string(DMUON_BENCH_EXE), "kernels " + args), message);
}

}  // namespace

TEST_CASE("dmuon-bench kernels: bad flag combinations exit 2 with one line", "[cli]") {
  expect_usage_error("", "give --model and/or --shapes");
  expect_usage_error("--shapes 256x2048 --no-retune", "--no-retune needs --chosen-only");
  expect_usage_error("--shapes 256x2048 --repeats 0", "--repeats must be >= 1");
  expect_usage_error("--shapes 256x2048 --presets adam", "--presets");
}

TEST_CASE("dmuon-bench kernels: --chosen-only --no-retune passes the flag checks (then needs a GPU)", "[cli]") {
  const auto o = run_command("CUDA_VISIBLE_DEVICES= " + std::string(DMUON_BENCH_EXE),
                             "kernels --shapes 256x2048 --chosen-only --no-retune");
  INFO(o.output);
  CHECK(o.exit_code == 1);
  CHECK(o.output.find("no CUDA device") != std::string::npos);
}
