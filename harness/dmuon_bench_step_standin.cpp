#include "harness/dmuon_bench_step_standin.hpp"

#include <algorithm>
#include <iomanip>

#include "harness/dmuon_bench_step_report.hpp"

namespace dmuon::bench {
namespace {

constexpr StreamKind kCompute = StreamKind::compute;

std::vector<exec::OpSpan> standin_spans(const exec::RunTiming& t) {
  std::vector<exec::OpSpan> out;
  for (const exec::OpSpan& s : t.spans) {
    if (s.standin_unit >= 0) out.push_back(s);
  }
  return out;
}

}  // namespace

StandinResult summarize_standin(const std::vector<exec::RankMeasurement>& ranks) {
  StandinResult r;
  const std::size_t world = ranks.size(), iters = ranks.front().samples.size();
  std::vector<double> step, busy, standin, exposed;
  std::vector<std::vector<double>> rank_step(world), rank_busy(world), rank_standin(world), rank_exposed(world);
  for (std::size_t i = 0; i < iters; ++i) {
    double s = 0, b = 0, g = 0;
    for (std::size_t k = 0; k < world; ++k) {
      const exec::RunTiming& t = ranks[k].samples.at(i).whole_step;
      const double kb = exec::busy_seconds(t.spans, &kCompute), kg = exec::busy_seconds(standin_spans(t), nullptr);
      s = std::max(s, t.seconds);
      b = std::max(b, kb);
      g = std::max(g, kg);
      rank_step[k].push_back(t.seconds);
      rank_busy[k].push_back(kb);
      rank_standin[k].push_back(kg);
      rank_exposed[k].push_back(t.seconds - kb);
    }
    step.push_back(s);
    busy.push_back(b);
    standin.push_back(g);
    exposed.push_back(s - b);
  }
  r.step_seconds = median(step);
  r.step_seconds_samples = step;
  r.compute_busy_seconds = median(busy);
  r.standin_seconds = median(standin);
  r.exposed_comm_seconds = median(exposed);
  for (std::size_t k = 0; k < world; ++k) {
    r.standin_flops = std::max(r.standin_flops, ranks[k].standin_flops);
    r.ranks.push_back({median(rank_step[k]), median(rank_busy[k]), median(rank_standin[k]), median(rank_exposed[k])});
  }
  return r;
}

void add_standin_json(nlohmann::json& x, const StandinResult& s) {
  x["compute_standin"] = true;
  x["step_seconds_median"] = s.step_seconds;
  x["step_seconds_samples"] = s.step_seconds_samples;
  x["compute_busy_seconds_median"] = s.compute_busy_seconds;
  x["standin_gemm_seconds_median"] = s.standin_seconds;
  x["exposed_comm_seconds_median"] = s.exposed_comm_seconds;
  x["standin_gemm_flops_per_step"] = s.standin_flops;
  x["standin_gemm_tflops_per_s"] = s.standin_seconds > 0 ? s.standin_flops / s.standin_seconds / 1e12 : 0.0;
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t k = 0; k < s.ranks.size(); ++k) {
    const StandinRank& r = s.ranks[k];
    ranks.push_back({{"rank", k},
                     {"step_seconds", r.step_seconds},
                     {"compute_busy_seconds", r.compute_busy_seconds},
                     {"standin_gemm_seconds", r.standin_seconds},
                     {"exposed_comm_seconds", r.exposed_comm_seconds}});
  }
  x["standin_ranks"] = ranks;
}

void write_standin_markdown(std::ostream& f, const std::vector<StrategyResult>& strategies) {
  f << "- compute stand-in: each iteration is one run of the whole step: forward and backward with the model's weight "
       "GEMMs (cuBLASLt bf16, the scenario's tokens) on the compute stream between the Plan's collectives "
       "(core/plan/step_units.hpp), then the optimizer step. Not in the stand-in: attention's s^2 products, norms, "
       "activations, the loss (it runs less than the model's full compute). Exposed comm = step - compute-stream busy "
       "(stand-in GEMMs and optimizer compute).\n\n";
  f << "| strategy | step ms | compute busy ms | stand-in GEMMs ms | exposed comm ms | stand-in TFLOP/s |\n";
  f << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& st : strategies) {
    if (!st.standin) continue;
    const StandinResult& s = *st.standin;
    f << "| " << st.strategy << " | " << std::setprecision(2) << s.step_seconds * 1e3 << " | " << s.compute_busy_seconds * 1e3
      << " | " << s.standin_seconds * 1e3 << " | " << s.exposed_comm_seconds * 1e3 << " | " << std::setprecision(1)
      << (s.standin_seconds > 0 ? s.standin_flops / s.standin_seconds / 1e12 : 0.0) << " |\n";
  }
  f << "\nPer rank (medians):\n\n| strategy | rank | step ms | compute busy ms | stand-in GEMMs ms | exposed comm ms |\n";
  f << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& st : strategies) {
    if (!st.standin) continue;
    for (std::size_t k = 0; k < st.standin->ranks.size(); ++k) {
      const StandinRank& r = st.standin->ranks[k];
      f << "| " << st.strategy << " | " << k << " | " << std::setprecision(2) << r.step_seconds * 1e3 << " | "
        << r.compute_busy_seconds * 1e3 << " | " << r.standin_seconds * 1e3 << " | " << r.exposed_comm_seconds * 1e3 << " |\n";
    }
  }
}

std::string standin_span_name(const exec::OpSpan& span) {
  return std::string(span.standin_backward ? "backward" : "forward") + " unit " + std::to_string(span.standin_unit) +
         " (stand-in GEMMs)";
}

}  // namespace dmuon::bench
