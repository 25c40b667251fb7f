// A tiny `dmuon-bench calibrate` on this machine's GPUs (small grid, sizes up to 64 MiB): the
// file it writes loads back, holds every section, its curves take longer at larger sizes where
// the work is bandwidth-bound, and its grouped-call probe prices extra calls. Skips
// (tests/gpu_skip.hpp) without a GPU.
#include <string>

#include "catch_compat.hpp"
#include "core/cost/calibration.hpp"
#include "gpu_skip.hpp"
#include "run_command.hpp"
#include "test_temp_dir.hpp"

namespace {

// The point 4x smaller than the largest one takes less time than the largest: at 16 vs 64 MiB
// every curve here moves bytes, not latency.
void check_grows(const dmuon::SizeCurve& c, const std::string& what) {
  INFO(what);
  REQUIRE(c.points.size() >= 3);
  const auto& last = c.points.back();
  double quarter_seconds = -1;
  for (const auto& [x, s] : c.points) {
    if (x <= last.first / 4) quarter_seconds = s;
  }
  REQUIRE(quarter_seconds > 0);
  CHECK(last.second > quarter_seconds);
  for (const auto& [x, s] : c.points) CHECK(s > 0);
}

}  // namespace

TEST_CASE("a tiny calibrate writes a file that loads back with growing curves", "[gpu]") {
  if (skip_without_gpu()) return;
  const std::string out = dmuon::test::temp_path("calibration.yaml");
  const std::string args = "calibrate --scenario " + std::string(DMUON_SOURCE_DIR) +
                           "/scenarios/verify-small.yaml --out " + out +
                           " --ns-grid small --gemm-size 2048 --max-elementwise-bytes 67108864"
                           " --max-collective-bytes 67108864 --collective-iterations 5 --commit test --timeout 120";
  const auto o = run_command(DMUON_BENCH_EXE, args);
  INFO(o.output);
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("busbw") != std::string::npos);  // the nccl-tests table

  const dmuon::CalibrationTable t = dmuon::load_calibration(out);
  CHECK(t.commit == "test");
  CHECK(!t.date.empty());
  CHECK(t.machine.find("NCCL") != std::string::npos);
  CHECK(t.source.find("dmuon-bench calibrate --scenario") == 0);
  CHECK(t.gemm_tflops > 0);
  CHECK(t.hbm_GBps > 0);
  REQUIRE(t.launch_overhead_us.has_value());
  CHECK(*t.launch_overhead_us > 0);
  CHECK(*t.launch_overhead_us < 100);
  // The fused AdamW split of the adamw Plan's optimizer phase: some host time per tensor, and a
  // GPU share within a small factor of the AdamW curve.
  REQUIRE(t.adamw_fused_issue_us.has_value());
  REQUIRE(t.adamw_fused_vs_curve.has_value());
  CHECK(*t.adamw_fused_issue_us > 0);
  CHECK(*t.adamw_fused_issue_us < 100);
  CHECK(*t.adamw_fused_vs_curve > 0.3);
  CHECK(*t.adamw_fused_vs_curve < 5);
  // Several GPUs: compute beside NCCL measured, a fraction within reason; one GPU: none.
  if (t.machine.rfind("1 x ", 0) == 0) {
    CHECK_FALSE(t.compute_slowdown_beside_nccl.has_value());
    CHECK_FALSE(t.collective_slowdown_beside_compute.has_value());
  } else {
    REQUIRE(t.compute_slowdown_beside_nccl.has_value());
    CHECK(*t.compute_slowdown_beside_nccl >= 0);
    CHECK(*t.compute_slowdown_beside_nccl < 2);
    CHECK(o.output.find("compute beside NCCL: 100 GEMMs") != std::string::npos);
    REQUIRE(t.collective_slowdown_beside_compute.has_value());
    CHECK(*t.collective_slowdown_beside_compute >= 0);
    CHECK(*t.collective_slowdown_beside_compute < 4);  // the probe's GEMM loop covers up to 4 x
    CHECK(o.output.find("NCCL beside compute: ") != std::string::npos);
  }
  // Scenario calls (dmuon preset: Gram fp16) and the small grid for both kernel families.
  bool gram = false, standard = false;
  for (const auto& m : t.ns) {
    gram = gram || m.kernel == dmuon::NsKernel::gram;
    standard = standard || m.kernel == dmuon::NsKernel::standard;
    CHECK(m.seconds > 0);
  }
  CHECK(gram);
  CHECK(standard);
  CHECK(t.elementwise.momentum_GBps.has_value());
  check_grows(t.elementwise_curves.momentum, "momentum");
  check_grows(t.elementwise_curves.muon_update, "muon_update");
  check_grows(t.elementwise_curves.adamw, "adamw");
  check_grows(t.elementwise_curves.copy, "copy");
  // The grouped-call probe: all-reduce, reduce and broadcast groups of 1 to 16 calls at 1 to 64
  // MiB. A reduction on one rank launches a scaling kernel a call: each extra call costs
  // something, and less than a whole group of sixteen would if it cost a launch of 100 us.
  CHECK(o.output.find("# grouped calls on one GPU") != std::string::npos);
  REQUIRE(t.local_grouped_calls.size() == 3);
  for (const auto& g : t.local_grouped_calls) {
    INFO(dmuon::to_string(g.kind));
    REQUIRE(g.points.size() == 4);
    CHECK(g.points.front().first == 1048576);
    CHECK(g.points.back().first == 67108864);
    for (const auto& [bytes, seconds] : g.points) {
      CHECK(seconds >= 0);
      CHECK(seconds < 100e-6);
      if (g.kind != dmuon::OpKind::broadcast) CHECK(seconds > 0);
    }
  }
  REQUIRE(!t.collectives.empty());
  for (const auto& c : t.collectives) {
    CHECK(c.nodes == 1);
    // One-rank in-place collectives move nothing (NCCL returns at once); all-to-all copies the
    // rank's own part.
    if (c.ranks == 1 && c.kind != dmuon::OpKind::all_to_all) continue;
    check_grows(c.curve, std::string(dmuon::to_string(c.kind)) + " on " + std::to_string(c.ranks) + " ranks");
  }
}
