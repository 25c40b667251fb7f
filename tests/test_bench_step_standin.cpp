// dmuon-bench step --compute-standin's figures from synthetic whole-step runs (no GPU): per
// iteration the slowest rank's step, the busiest rank's compute stream, exposed communication =
// their difference, medians; and the JSON, Markdown and trace writers on such a report.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "harness/dmuon_bench_step_report.hpp"
#include "test_temp_dir.hpp"

using namespace dmuon;

namespace {

exec::OpSpan span(int op, StreamKind stream, double start, double end, int unit = -1, bool backward = false) {
  exec::OpSpan s{op, 1, stream, start, end};
  s.standin_unit = unit;
  s.standin_backward = backward;
  return s;
}

// One rank's whole step: a collective [0, 1], forward GEMMs [1, 3], backward GEMMs [3, 7],
// a collective [7, 8] and an optimizer compute op [8, 9] + `slow` (ms).
exec::RunTiming whole_step(double slow) {
  exec::RunTiming t;
  t.seconds = (9 + slow) * 1e-3;
  t.spans = {span(0, StreamKind::comm, 0, 1e-3), span(-1, StreamKind::compute, 1e-3, 3e-3, 0),
             span(-1, StreamKind::compute, 3e-3, 7e-3, 0, true), span(1, StreamKind::comm, 7e-3, 8e-3),
             span(2, StreamKind::compute, 8e-3, (9 + slow) * 1e-3)};
  return t;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("stand-in figures: slowest step, busiest compute stream, exposed comm as their difference", "[standin]") {
  std::vector<exec::RankMeasurement> ranks(2);
  for (int k = 0; k < 2; ++k) {
    ranks[static_cast<std::size_t>(k)].standin = true;
    ranks[static_cast<std::size_t>(k)].standin_flops = 1e12 * (k + 1);
    for (double slow : {0.0, 2.0, 1.0}) {
      exec::IterationSample s;
      s.whole_step = whole_step(k == 1 ? slow : 0.0);  // rank 1 runs its optimizer op longer
      ranks[static_cast<std::size_t>(k)].samples.push_back(s);
    }
  }
  const bench::StandinResult r = bench::summarize_standin(ranks);
  CHECK(r.step_seconds == Approx(10e-3));         // median of 9, 11, 10 ms
  CHECK(r.compute_busy_seconds == Approx(8e-3));  // 6 ms of GEMMs + 1..3 ms optimizer: median 8
  CHECK(r.standin_seconds == Approx(6e-3));
  CHECK(r.exposed_comm_seconds == Approx(2e-3));  // the two 1 ms collectives nothing hides
  CHECK(r.standin_flops == 2e12);
  REQUIRE(r.ranks.size() == 2);
  CHECK(r.ranks[0].step_seconds == Approx(9e-3));
  CHECK(r.ranks[0].exposed_comm_seconds == Approx(2e-3));

  Plan plan;
  plan.ranks.resize(2);
  for (auto& ops : plan.ranks) {
    ops.resize(3);
    ops[0].kind = ops[1].kind = OpKind::all_gather;
    ops[2].kind = OpKind::adamw;
  }
  bench::StepReport report;
  report.machine = "test";
  report.world = 2;
  report.strategies.push_back(bench::summarize("adamw", plan, ranks));
  REQUIRE(report.strategies.back().standin);
  bench::write_json(report, test::temp_path("step.json"));
  bench::write_markdown(report, test::temp_path("step.md"));
  bench::write_chrome_trace(report, test::temp_path("trace.json"));
  const auto j = nlohmann::json::parse(read(test::temp_path("step.json")));
  const auto& x = j.at("strategies").at(0);
  CHECK(x.at("compute_standin") == true);
  CHECK(x.at("step_seconds_median").get<double>() == Approx(10e-3));
  CHECK(x.at("exposed_comm_seconds_median").get<double>() == Approx(2e-3));
  CHECK(x.at("standin_ranks").size() == 2);
  CHECK(!x.contains("optimizer_step_seconds_median"));  // the two-run figures are not measured
  const std::string md = read(test::temp_path("step.md"));
  CHECK(md.find("# Training step (compute stand-in) on test") == 0);
  CHECK(md.find("| adamw | 10.00 | 8.00 | 6.00 | 2.00 |") != std::string::npos);
  CHECK(read(test::temp_path("trace.json")).find("backward unit 0 (stand-in GEMMs)") != std::string::npos);
}
