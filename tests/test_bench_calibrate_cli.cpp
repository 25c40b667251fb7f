// `dmuon-bench calibrate`'s command line without a GPU: every flag and input is checked before
// any GPU work (exit 2, one line naming it), and a machine without a GPU gets one line and exit
// 1. CUDA_VISIBLE_DEVICES is emptied so that the no-GPU case holds on the GPU machine too.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "catch_compat.hpp"
#include "run_command.hpp"
#include "test_temp_dir.hpp"

namespace {

const std::string kScenario = std::string(DMUON_SOURCE_DIR) + "/scenarios/verify-small.yaml";

CommandOutcome run(const std::string& args) {
  return run_command("CUDA_VISIBLE_DEVICES= " + std::string(DMUON_BENCH_EXE), "calibrate " + args);
}

std::string valid(const std::string& more = "") {
  return "--scenario " + kScenario + " --out " + dmuon::test::temp_path("cal.yaml") + " " + more;
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = dmuon::test::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

void expect_usage_error(const std::string& args, const std::string& message) {
  INFO(args);
  check_usage_error(run(args), message);
}

}  // namespace

TEST_CASE("missing and malformed flags exit 2 with one line", "[cli]") {
  expect_usage_error("--out x.yaml", "--scenario");
  expect_usage_error("--scenario " + kScenario, "--out");
  expect_usage_error("--scenario /nonexistent/s.yaml --out x.yaml", "/nonexistent/s.yaml");
  expect_usage_error(valid("--ns-grid huge"), "--ns-grid: expected none, small or full, got 'huge'");
  expect_usage_error(valid("--max-collective-bytes 5000"), "--max-collective-bytes: expected a power of two");
  expect_usage_error(valid("--max-elementwise-bytes 100"), "--max-elementwise-bytes");
  expect_usage_error(valid("--collective-iterations 0"), "--collective-iterations");
  expect_usage_error(valid("--collective-passes 0"), "--collective-passes must be >= 1, got 0");
  expect_usage_error(valid("--timeout 0"), "--timeout");
  expect_usage_error(valid("--max-batch 0"), "--max-batch");
  expect_usage_error(valid("--profile tpu-v9"), "tpu-v9");
  expect_usage_error("--scenario " + kScenario + " --out /nonexistent/dir/cal.yaml", "--out: no directory /nonexistent/dir");
  expect_usage_error(valid("--no-such-flag"), "no-such-flag");
}

TEST_CASE("--layers-json is read strictly, naming the file and the field", "[cli]") {
  expect_usage_error(valid("--layers-json /nonexistent/fb.json"), "/nonexistent/fb.json: cannot open file");
  const std::string bad_json = write("bad.json", "{\"source\": ");
  expect_usage_error(valid("--layers-json " + bad_json), bad_json + ":1: not valid YAML");
  const std::string ok_head = "{\"source\": \"t\", \"elementwise_GBps\": 2000, \"attention\": [], ";
  const std::string missing = write("missing.json", ok_head + "\"layers\": [],"
                                    " \"gemm\": [{\"tokens\": 4096, \"in\": 2048, \"out\": 2048, \"backward_s\": 1e-3}]}");
  expect_usage_error(valid("--layers-json " + missing), missing + ":1: gemm[0]: missing required key 'forward_s'");
  const std::string negative = write("negative.json", ok_head + "\"gemm\": [], \"layers\": [{\"model\": \"m\", "
                                     "\"part\": \"block\", \"micro_batch\": 2, \"seq_len\": 2048, \"forward_s\": -1, \"backward_s\": 1}]}");
  expect_usage_error(valid("--layers-json " + negative), negative + ":1: layers[0].forward_s: must be > 0, got -1");
  const std::string part = write("part.json", ok_head + "\"gemm\": [], \"layers\": [{\"model\": \"m\", "
                                 "\"part\": \"mlp\", \"micro_batch\": 2, \"seq_len\": 2048, \"forward_s\": 1, \"backward_s\": 1}]}");
  expect_usage_error(valid("--layers-json " + part), part + ":1: layers[0].part: expected block, embedding, head or whole");
  const std::string unknown = write("unknown.json", ok_head + "\"gemm\": [], \"layers\": [], \"extra\": 1}");
  expect_usage_error(valid("--layers-json " + unknown), unknown + ":1: extra: unknown key 'extra'");
  const std::string no_layers = write("no-layers.json", ok_head + "\"gemm\": []}");
  expect_usage_error(valid("--layers-json " + no_layers), no_layers + ":1: (top level): missing required key 'layers'");
}

TEST_CASE("valid input on a machine without a GPU: one line, exit 1", "[cli]") {
  const std::string ok = write("ok.json", "{\"source\": \"t\", \"elementwise_GBps\": 2000, \"gemm\": [], \"attention\": [], "
                                          "\"layers\": [{\"model\": \"m\", \"part\": \"head\", \"micro_batch\": 2, "
                                          "\"seq_len\": 2048, \"forward_s\": 1e-3, \"backward_s\": 2e-3}]}");
  const auto o = run(valid("--ns-grid small --layers-json " + ok));
  INFO(o.output);
  CHECK(o.exit_code == 1);
  CHECK(output_lines(o.output) == 1);
  CHECK(o.output.find("dmuon-bench calibrate: no CUDA device visible") != std::string::npos);
}

TEST_CASE("--print-ns-calls lists the scenario's Plan calls and the grid without a GPU", "[cli]") {
  const auto o = run(valid("--ns-grid small --print-ns-calls"));
  INFO(o.output);
  CHECK(o.exit_code == 0);
  // verify-small: Qwen2-0.5B under the dmuon preset; the torch preset's family is added.
  CHECK(o.output.find("family scenario (dmuon)\nfamily torch\n") != std::string::npos);
  CHECK(o.output.find("plan 896x4864 b1\n") != std::string::npos);
  CHECK(o.output.find("grid 256x512 b4\n") != std::string::npos);
  CHECK(o.output.find("grid 512x") == std::string::npos);  // small: m in {128, 256}
}

namespace {

// The grid calls `--print-ns-calls` lists: (rows, cols) -> its batches, ascending.
std::map<std::pair<long, long>, std::vector<long>> grid_of(const std::string& output) {
  std::map<std::pair<long, long>, std::vector<long>> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    long rows = 0, cols = 0, batch = 0;
    if (std::sscanf(line.c_str(), "grid %ldx%ld b%ld", &rows, &cols, &batch) == 3) out[{rows, cols}].push_back(batch);
  }
  for (auto& [shape, batches] : out) std::sort(batches.begin(), batches.end());
  return out;
}

// Every grid shape has batch 1 and every batch of {4, 16, 64} whose call holds at most `cap`
// elements, and no other: the batches the efficiency grid can price a Plan's batch from.
void check_batches_up_to(const std::map<std::pair<long, long>, std::vector<long>>& grid, long cap) {
  for (const auto& [shape, batches] : grid) {
    std::vector<long> expected{1};
    for (long b : {4L, 16L, 64L}) {
      if (shape.first * shape.second * b <= cap) expected.push_back(b);
    }
    INFO(shape.first << "x" << shape.second);
    CHECK(batches == expected);
  }
}

}  // namespace

TEST_CASE("the full grid steps m by half octaves from 1024, batches up to 2^30 elements a call", "[cli]") {
  const auto o = run(valid("--ns-grid full --print-ns-calls"));
  INFO(o.output);
  REQUIRE(o.exit_code == 0);
  for (const char* shape : {"grid 1536x1536 b1\n", "grid 3072x3072 b1\n", "grid 3072x24576 b1\n", "grid 6144x6144 b1\n",
                            "grid 4096x4096 b64\n", "grid 8192x32768 b1\n"}) {
    CHECK(o.output.find(shape) != std::string::npos);
  }
  CHECK(o.output.find("grid 6144x49152") == std::string::npos);  // over the 32768-column bound
  CHECK(o.output.find("grid 768x") == std::string::npos);        // octaves below 1024
  const auto grid = grid_of(o.output);
  CHECK(grid.size() > 30);
  check_batches_up_to(grid, 1L << 30);
  // The shapes whose too-small batches priced qwen2.5-1.5b's MLP calls slow (stop 43).
  CHECK(grid.at({1536, 6144}).back() == 64);
  CHECK(grid.at({1536, 12288}).back() == 16);
}

TEST_CASE("--ns-grid-batch-elements bounds the grid's batched calls; a bound below 1 is refused", "[cli]") {
  const auto o = run(valid("--ns-grid full --print-ns-calls --ns-grid-batch-elements 268435456"));
  INFO(o.output);
  REQUIRE(o.exit_code == 0);
  const auto grid = grid_of(o.output);
  check_batches_up_to(grid, 1L << 28);
  CHECK(grid.at({1536, 12288}).back() == 4);  // the bound before stop 43
  expect_usage_error(valid("--ns-grid-batch-elements 0"), "--ns-grid-batch-elements: must be >= 1, got 0");
}
