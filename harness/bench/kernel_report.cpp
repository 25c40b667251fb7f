#include "harness/bench/kernel_report.hpp"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/file_read.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/io/provenance.hpp"

namespace dmuon::bench {
namespace {

using nlohmann::json;

bool from_model(const BenchShape& s) {
  for (const auto& m : s.models) {
    if (m != "list") return true;
  }
  return false;
}

std::optional<double> torch_seconds(const KernelBench& b, const BenchShape& s) {
  if (!b.torch) return std::nullopt;
  auto it = b.torch->seconds.find({s.rows, s.cols});
  if (it == b.torch->seconds.end()) return std::nullopt;
  return it->second;
}

// Our seconds per matrix for the row (the batched call divided by its batch).
double per_matrix(const NsBenchRow& r) { return r.chosen_seconds / r.batch; }

std::string fmt(double v, int precision = 3) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

std::string restarts_text(const NsConfig& ns) {
  if (ns.variant != NsVariant::gram || ns.restarts.empty()) return "";
  std::string t = " restarts [";
  for (std::size_t i = 0; i < ns.restarts.size(); ++i) t += (i ? "," : "") + std::to_string(ns.restarts[i]);
  return t + "]";
}

const NsBenchRow* find_row(const KernelBench& b, long rows, long cols, const std::string& preset) {
  for (const auto& r : b.rows) {
    if (r.shape.rows == rows && r.shape.cols == cols && r.preset == preset && r.batch == 1) return &r;
  }
  return nullptr;
}

struct Target {
  std::string name;
  double goal = 0, measured = 0;
  bool known = false;
};

// Issue 16's whole-model goals, per model and preset.
struct WholeModelGoal {
  const char* model;
  const char* preset;
  double goal;
};
constexpr WholeModelGoal kWholeModelGoals[] = {
    {"llama3-8b", "dmuon", 2.0}, {"llama3-8b", "torch", 1.6}, {"qwen2.5-3b", "dmuon", 2.2}, {"qwen2.5-3b", "torch", 1.7}};

std::vector<Target> targets(const KernelBench& b) {
  std::vector<Target> t;
  for (const auto& w : whole_model_vs_torch(b)) {
    for (const auto& g : kWholeModelGoals) {
      if (w.model != g.model || w.preset != g.preset) continue;
      // Judged against torch's median and its best time, whichever gives less (WholeModelSpeedup).
      t.push_back({"whole-model NS speedup vs torch, " + w.model + ", " + w.preset + " preset", g.goal,
                   w.conservative_speedup(), w.complete()});
    }
  }
  const Speedup all = speedup_vs_torch(b, "dmuon", false, 0);
  const Speedup gram = speedup_vs_torch(b, "dmuon", false, 4);
  t.push_back({"geomean speedup vs torch NS (model shapes, batch 1)", 1.5, all.geomean, all.shapes > 0});
  t.push_back({"geomean speedup vs torch NS, aspect >= 4 (Gram)", 1.8, gram.geomean, gram.shapes > 0});
  const NsBenchRow* big = find_row(b, 8192, 28672, "dmuon");
  t.push_back({"useful TFLOP/s on 8192x28672", 600, big ? big->useful_tflops : 0, big != nullptr});
  return t;
}

json row_json(const KernelBench& b, const NsBenchRow& r) {
  json variants = json::array();
  for (const auto& v : r.variants) {
    json j{{"impl", std::string(cuda::to_string(v.impl))}, {"available", v.available},
           {"passed_gate", v.passed_gate},
           {"rel_diff_vs_standard", std::isnan(v.rel_diff) ? json(nullptr) : json(v.rel_diff)}};
    if (v.timed) j["median_seconds"] = v.median_seconds;
    if (!v.note.empty()) j["note"] = v.note;
    variants.push_back(j);
  }
  json j{{"rows", r.shape.rows},       {"cols", r.shape.cols},
         {"aspect", r.shape.aspect()}, {"count_in_model", r.shape.count},
         {"models", r.shape.models},   {"preset", r.preset},
         {"kernel_semantics", std::string(to_string(r.ns.variant))},
         {"dtype", std::string(to_string(r.ns.compute_dtype))},
         {"steps", r.ns.steps},        {"batch", r.batch},
         {"chosen", std::string(cuda::to_string(r.chosen))},
         {"seconds", r.chosen_seconds}, {"seconds_per_matrix", per_matrix(r)},
         {"useful_tflops", r.useful_tflops}, {"variants", variants}};
  if (auto t = torch_seconds(b, r.shape)) {
    j["torch_seconds"] = *t;
    j["speedup_vs_torch"] = *t / per_matrix(r);
  }
  return j;
}

}  // namespace

TorchBaseline load_torch_baseline(const std::string& file) {
  const std::string text = read_regular_file(file);
  json j;
  try {
    j = json::parse(text);
    if (j.at("format").get<std::string>() != "dmuon-torch-ns-baseline-1") throw Error(file + ": unknown format");
    TorchBaseline t;
    t.torch_version = j.at("torch_version").get<std::string>();
    t.device = j.at("device").get<std::string>();
    t.flags = j.at("flags").dump();
    for (const auto& r : j.at("rows")) {
      const std::pair<long, long> key{r.at("rows").get<long>(), r.at("cols").get<long>()};
      t.seconds[key] = r.at("median_seconds").get<double>();
      if (r.contains("min_seconds")) t.best_seconds[key] = r.at("min_seconds").get<double>();
      t.rel_error[key] = r.at("rel_error_vs_float64").get<double>();
    }
    return t;
  } catch (const json::exception& e) {
    throw Error(file + ": malformed torch baseline: " + e.what());
  }
}

std::vector<WholeModelSpeedup> whole_model_vs_torch(const KernelBench& b) {
  if (!b.torch) return {};
  std::vector<BenchShape> shapes;
  std::vector<ShapeTime> times;
  for (const auto& r : b.rows) {
    merge_shapes(shapes, {r.shape});
    times.push_back(
        {r.shape.rows, r.shape.cols, r.preset, r.batch, per_matrix(r), std::string(cuda::to_string(r.chosen))});
  }
  return whole_model_speedups(shapes, times, b.torch->seconds, b.torch->best_seconds);
}

Speedup speedup_vs_torch(const KernelBench& b, const std::string& preset, bool batched, double min_aspect) {
  double log_sum = 0;
  Speedup s;
  std::set<std::pair<long, long>> seen;
  for (const auto& r : b.rows) {
    if (r.preset != preset || !from_model(r.shape) || r.shape.aspect() < min_aspect) continue;
    // batched: the largest batch measured for the shape; otherwise batch 1.
    if (!batched && r.batch != 1) continue;
    if (batched) {
      bool larger = false;
      for (const auto& o : b.rows) {
        larger |= o.preset == preset && o.shape.rows == r.shape.rows && o.shape.cols == r.shape.cols &&
                  o.batch > r.batch;
      }
      if (larger) continue;
    }
    const auto t = torch_seconds(b, r.shape);
    if (!t || !seen.insert({r.shape.rows, r.shape.cols}).second) continue;
    log_sum += std::log(*t / per_matrix(r));
    ++s.shapes;
  }
  if (s.shapes > 0) s.geomean = std::exp(log_sum / s.shapes);
  return s;
}

void write_report_json(const KernelBench& b, const std::string& path) {
  json rows = json::array();
  for (const auto& r : b.rows) rows.push_back(row_json(b, r));
  json t = json::array();
  for (const auto& x : targets(b)) {
    t.push_back({{"name", x.name}, {"target", x.goal}, {"measured", x.measured}, {"met", x.known && x.measured >= x.goal}});
  }
  json whole = json::array();
  for (const auto& w : whole_model_vs_torch(b)) {
    json parts = json::array();
    for (const auto& p : w.parts) {
      parts.push_back({{"shape", p.shape}, {"matrices", p.count}, {"batch", p.batch}, {"chosen", p.chosen},
                       {"seconds", p.seconds}, {"torch_seconds", p.torch_seconds},
                       {"torch_best_seconds", p.torch_best_seconds > 0 ? json(p.torch_best_seconds) : json(nullptr)}});
    }
    whole.push_back({{"model", w.model}, {"preset", w.preset}, {"matrices", w.matrices}, {"seconds", w.seconds},
                     {"torch_seconds", w.torch_seconds},
                     {"speedup", w.complete() ? json(w.speedup()) : json(nullptr)},
                     {"torch_best_seconds", w.torch_best_seconds > 0 ? json(w.torch_best_seconds) : json(nullptr)},
                     {"speedup_vs_torch_best",
                      w.complete() && w.torch_best_seconds > 0 ? json(w.speedup_vs_best()) : json(nullptr)},
                     {"missing_shapes", w.missing}, {"parts", parts}});
  }
  const NsBenchRow* big_std = find_row(b, 8192, 28672, "torch");
  const NsBenchRow* big_gram = find_row(b, 8192, 28672, "dmuon");
  json j{{"tool", "dmuon-bench kernels"},
         {"gpu", b.gpu_name},
         {"profile", b.profile},
         {"gemm_tflops_8192_bf16", b.gemm_tflops},
         {"hbm_copy_GBps", b.hbm_GBps},
         {"geomean_speedup_vs_torch", speedup_vs_torch(b, "dmuon", false, 0).geomean},
         {"gram_speedup_vs_torch_aspect4", speedup_vs_torch(b, "dmuon", false, 4).geomean},
         {"geomean_speedup_vs_torch_same_math", speedup_vs_torch(b, "torch", false, 0).geomean},
         {"geomean_speedup_vs_torch_batched", speedup_vs_torch(b, "dmuon", true, 0).geomean},
         {"geomean_speedup_vs_torch_same_math_batched", speedup_vs_torch(b, "torch", true, 0).geomean},
         {"useful_tflops_8192x28672_torch_preset", big_std ? big_std->useful_tflops : 0.0},
         {"useful_tflops_8192x28672_dmuon_preset", big_gram ? big_gram->useful_tflops : 0.0},
         {"targets", t},
         {"whole_model_speedup_vs_torch", whole},
         {"sym_kernel_vs_full_cublas", sym_kernel_rates_json(b.sym_rates)},
         {"elementwise_GBps",
          {{"momentum", b.elementwise.momentum_GBps.value_or(0)},
           {"muon_update", b.elementwise.update_GBps.value_or(0)},
           {"adamw_multi_tensor", b.elementwise.adamw_GBps.value_or(0)}}},
         {"rows", rows}};
  j.update(provenance_json(b.command, b.date));
  if (b.torch) {
    j["torch"] = {{"version", b.torch->torch_version}, {"device", b.torch->device}, {"flags", b.torch->flags}};
  }
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) throw Error(path + ": cannot write the report");
}

namespace {

std::string whole_model_markdown(const KernelBench& b) {
  const auto whole = whole_model_vs_torch(b);
  if (whole.empty()) return "";
  std::ostringstream md;
  md << "## Whole model\n\nEach model's Muon matrices, every shape at the model's batch (the largest batch timed "
        "that does not exceed the model's count of it), summed, against torch's per-matrix time times the same "
        "counts (`whole_model_speedup_vs_torch` in the JSON): torch's median per shape, and its fastest sample "
        "(`torch_best_seconds`). Torch's eager calls wait on the host, whose pace can move within one call; the "
        "targets above take the lower of the two speedups.\n\n"
     << "| model | preset | matrices | ours ms | torch ms (median) | speedup | torch ms (best) | speedup vs best |\n"
     << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& w : whole) {
    md << "| " << w.model << " | " << w.preset << " | " << w.matrices << " | " << fmt(w.seconds * 1e3, 1) << " | "
       << fmt(w.torch_seconds * 1e3, 1) << " | ";
    if (w.complete()) {
      md << fmt(w.speedup(), 2) << "x | ";
      if (w.torch_best_seconds > 0) {
        md << fmt(w.torch_best_seconds * 1e3, 1) << " | " << fmt(w.speedup_vs_best(), 2) << "x |\n";
      } else {
        md << "- | - |\n";
      }
    } else {
      std::string missing;
      for (const auto& m : w.missing) missing += (missing.empty() ? "" : ", ") + m;
      md << "not claimed: no timing for " << missing << " | | |\n";
    }
  }
  md << "\nWhere each model's time goes (`parts` in the JSON): each shape's matrices at the model's batch, the "
        "implementation the autotuner chose there, ours against torch's median for the same matrices.\n\n"
     << "| model | preset | shape | matrices | batch | chosen | ours ms | share of ours | torch ms (median) | speedup |\n"
     << "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& w : whole) {
    for (const auto& p : w.parts) {
      md << "| " << w.model << " | " << w.preset << " | " << p.shape << " | " << p.count << " | " << p.batch << " | "
         << (p.chosen.empty() ? "-" : p.chosen) << " | " << fmt(p.seconds * 1e3, 1) << " | "
         << fmt(100.0 * p.seconds / w.seconds, 0) << "% | " << fmt(p.torch_seconds * 1e3, 1) << " | "
         << fmt(p.seconds > 0 ? p.torch_seconds / p.seconds : 0.0, 2) << "x |\n";
    }
  }
  md << "\n";
  return md.str();
}

}  // namespace

void write_report_markdown(const KernelBench& b, const std::string& path) {
  std::ostringstream md;
  md << "# Newton-Schulz and elementwise kernels on " << b.gpu_name << "\n\n"
     << "Produced by `" << b.command << "` on " << b.date << " (GPU: " << b.gpu_name << ", profile `" << b.profile
     << "`).\n";
  if (b.torch) md << "Baseline: torch " << b.torch->torch_version << " `torch.optim._muon._zeropower_via_newtonschulz` "
                  << "on " << b.torch->device << " in the same device command, flags " << b.torch->flags << ".\n";
  md << "\nCeilings measured in the same run: 8192^3 bf16 GEMM " << fmt(b.gemm_tflops, 1) << " TFLOP/s; "
     << "device-to-device copy " << fmt(b.hbm_GBps, 0) << " GB/s (read + written).\n\n"
     << "Presets: `torch` = torch.optim.Muon's math (Keller x5, bf16, standard NS: our variants may only "
     << "reorder the same products); `dmuon` = DMuon's (Polar Express /1.05, fp16, Gram NS with a restart "
     << "before iteration 2; the autotuner may pick standard/symmetric NS where faster). Both are timed on "
     << "fp32 inputs like torch's. Speedup = torch seconds per matrix / ours per matrix (batched calls "
     << "divided by their batch). Useful TFLOP/s = batch x standard-NS flops (5 (4 m^2 n + 2 m^3)) / time.\n\n"
     << "Where the speedups come from: torch's NS runs eagerly from Python, ~17 kernels per call, so on small "
     << "shapes (256x2048, 1024x4096, 2048x2048) its GPU timeline has launch gaps that our CUDA-graph replay "
     << "removes; on large shapes both run the same cuBLAS GEMMs (the `torch` preset's standard variant "
     << "returns torch's output bit for bit, see dmuon-verify --backend cuda), and the gains are the symmetric "
     << "products (block rows, or on sm_90 our triangle kernel: `symmetric_sm90`, `gram_sm90`) and Gram NS "
     << "(~1.4x over standard NS at the same dtype on aspect >= 3.5; compare the gram and standard entries of "
     << "the variants column). cuBLASLt offers no algorithm for CUBLASLT_MATMUL_DESC_FILL_MODE=lower with "
     << "bf16/fp16 on this GPU (symmetric_lt n/a).\n\n"
     << "## Targets\n\n| target | goal | measured | met |\n| --- | --- | --- | --- |\n";
  for (const auto& t : targets(b)) {
    md << "| " << t.name << " | " << fmt(t.goal, 1) << " | " << (t.known ? fmt(t.measured, 2) : "not measured")
       << " | " << (t.known && t.measured >= t.goal ? "yes" : "no") << " |\n";
  }
  const Speedup same = speedup_vs_torch(b, "torch", false, 0);
  const Speedup batched = speedup_vs_torch(b, "dmuon", true, 0);
  const Speedup same_batched = speedup_vs_torch(b, "torch", true, 0);
  md << "\nOther summaries: same math as torch (`torch` preset), batch 1: " << fmt(same.geomean, 2) << "x over "
     << same.shapes << " shapes; at the model's batch (per matrix): dmuon " << fmt(batched.geomean, 2)
     << "x, torch preset " << fmt(same_batched.geomean, 2) << "x.\n\n"
     << whole_model_markdown(b) << sym_kernel_rates_markdown(b.sym_rates) << "## Per shape\n\n"
     << "| shape | aspect | in model | preset | batch | chosen | ms (call) | ms/matrix | useful TFLOP/s | torch ms | "
        "speedup | variants (ms; rel diff vs standard) |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& r : b.rows) {
    std::string variants;
    for (const auto& v : r.variants) {
      variants += std::string(cuda::to_string(v.impl)) + " ";
      variants += !v.available ? "n/a" : !v.passed_gate ? "gate-fail" : v.timed ? fmt(v.median_seconds * 1e3) : "-";
      variants += " (" + (std::isnan(v.rel_diff) ? std::string("not re-tuned") : fmt(v.rel_diff, 4)) + "); ";
    }
    const auto t = torch_seconds(b, r.shape);
    md << "| " << r.shape.label() << " | " << fmt(r.shape.aspect(), 2) << " | x" << r.shape.count << " | "
       << r.preset << restarts_text(r.ns) << " | " << r.batch << " | " << cuda::to_string(r.chosen) << " | "
       << fmt(r.chosen_seconds * 1e3) << " | " << fmt(per_matrix(r) * 1e3) << " | " << fmt(r.useful_tflops, 1)
       << " | " << (t ? fmt(*t * 1e3) : "-") << " | " << (t ? fmt(*t / per_matrix(r), 2) : "-") << " | "
       << variants << " |\n";
  }
  md << "\n## Fused elementwise kernels (bf16 grads, fp32 state, bf16 copy-out)\n\n"
     << "momentum " << fmt(b.elementwise.momentum_GBps.value_or(0), 0) << " GB/s, Muon update "
     << fmt(b.elementwise.update_GBps.value_or(0), 0) << " GB/s, multi-tensor AdamW "
     << fmt(b.elementwise.adamw_GBps.value_or(0), 0) << " GB/s (CostModel byte counts; copy ceiling "
     << fmt(b.hbm_GBps, 0) << " GB/s).\n";
  std::ofstream out(path);
  out << md.str();
  if (!out) throw Error(path + ": cannot write the report");
}

CalibrationTable calibration_of(const KernelBench& b) {
  CalibrationTable t;
  t.gpu = b.profile;
  t.source = b.command + " (" + b.date + ")";
  t.gemm_tflops = b.gemm_tflops;
  t.hbm_GBps = b.hbm_GBps;
  t.elementwise = b.elementwise;
  std::map<std::string, std::size_t> index;
  for (const auto& r : b.rows) {
    for (const auto& v : r.variants) {
      if (!v.timed) continue;
      NsMeasurement m;
      m.rows = std::min(r.shape.rows, r.shape.cols);
      m.cols = std::max(r.shape.rows, r.shape.cols);
      m.kernel = cuda::kernel_family(v.impl);
      m.dtype = r.ns.compute_dtype;
      m.steps = r.ns.steps;
      if (m.kernel == NsKernel::gram) m.restarts = r.ns.restarts;
      m.batch = r.batch;
      m.seconds = v.median_seconds;
      std::string key = std::to_string(m.rows) + "x" + std::to_string(m.cols) + std::string(to_string(m.kernel)) +
                        std::string(to_string(m.dtype)) + std::to_string(m.steps) + "b" + std::to_string(m.batch);
      for (int x : m.restarts) key += "r" + std::to_string(x);
      auto it = index.find(key);
      if (it == index.end()) {
        index[key] = t.ns.size();
        t.ns.push_back(m);
      } else if (m.seconds < t.ns[it->second].seconds) {
        t.ns[it->second] = m;  // the same problem measured twice (e.g. RxC and CxR): keep the faster
      }
    }
  }
  return t;
}

}  // namespace dmuon::bench
