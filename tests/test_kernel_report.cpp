// dmuon-bench kernels' report writers (harness/bench/kernel_report): the whole-model section's
// per-shape breakdown, in the markdown and as `parts` in the JSON, from a bench run built here
// (no GPU: the writers only format what a run measured).
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "harness/bench/kernel_report.hpp"
#include "test_temp_dir.hpp"

using namespace dmuon;
using namespace dmuon::bench;

namespace {

NsBenchRow row(long rows, long cols, int count, int batch, cuda::NsImpl chosen, double call_seconds) {
  NsBenchRow r;
  r.shape = {rows, cols, count, {"m"}, {count}};
  r.preset = "dmuon";
  r.batch = batch;
  r.chosen = chosen;
  r.chosen_seconds = call_seconds;
  return r;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("the whole-model section names where each model's time goes") {
  KernelBench b;
  b.command = "dmuon-bench kernels (test)";
  b.date = "2026-12-07";
  b.gpu_name = "test GPU";
  b.profile = "h100-sxm";
  // 64 matrices at batch 64 in 0.288 s (4.5 ms each) and 64 at batch 64 in 0.16 s (2.5 ms each).
  b.rows = {row(14336, 4096, 64, 64, cuda::NsImpl::gram_sm90, 0.288),
            row(4096, 4096, 64, 64, cuda::NsImpl::symmetric_sm90, 0.16)};
  TorchBaseline t;
  t.torch_version = "2.11";
  t.device = "test GPU";
  t.seconds = {{{14336, 4096}, 9.0e-3}, {{4096, 4096}, 3.2e-3}};
  b.torch = t;
  const auto dir = test::temp_dir();
  write_report_markdown(b, (dir / "k.md").string());
  write_report_json(b, (dir / "k.json").string());
  const std::string md = read(dir / "k.md");
  INFO(md);
  // ours 288 + 160 = 448 ms: 64% and 36%; torch 576 and 204.8 ms.
  CHECK(md.find("| m | dmuon | 128 | 448.0 | 780.8 | 1.74x |") != std::string::npos);
  CHECK(md.find("| m | dmuon | 14336x4096 | 64 | 64 | gram_sm90 | 288.0 | 64% | 576.0 | 2.00x |") != std::string::npos);
  CHECK(md.find("| m | dmuon | 4096x4096 | 64 | 64 | symmetric_sm90 | 160.0 | 36% | 204.8 | 1.28x |") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(read(dir / "k.json"));
  const auto& whole = j.at("whole_model_speedup_vs_torch");
  REQUIRE(whole.size() == 1);
  const auto& parts = whole[0].at("parts");
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].at("shape") == "14336x4096");
  CHECK(parts[0].at("matrices") == 64);
  CHECK(parts[0].at("batch") == 64);
  CHECK(parts[0].at("chosen") == "gram_sm90");
  CHECK(parts[0].at("seconds").get<double>() == Approx(0.288));
  CHECK(parts[1].at("torch_seconds").get<double>() == Approx(64 * 3.2e-3));
  CHECK(parts[1].at("torch_best_seconds").is_null());  // the baseline has no best times
}
