#include "harness/dmuon_bench_kernels.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/io/provenance.hpp"
#include "core/plan/plan_builders.hpp"
#include "harness/bench/kernel_report.hpp"
#include "harness/bench/whole_model.hpp"
#include "kernels/cuda/ceilings.hpp"
#include "kernels/cuda/sym_gemm_sm90.hpp"
#include "kernels/cuda/device_query.hpp"

namespace po = boost::program_options;

namespace dmuon::bench {
namespace {

struct Args {
  std::vector<std::string> models;
  std::string shapes, presets = "torch,dmuon", torch_json, calibration, report_md, report_json, tune_cache, profile;
  int repeats = 10, warmup = 3;
  long batch_elements = 1L << 32;  // a memory guard on the executor's batch (below), not the batch itself
  long gemm_size = 8192;
  long elementwise_elements = 1L << 27;
  bool print_shapes = false, no_batched = false, chosen_only = false, no_retune = false;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool parse(int argc, char** argv, Args& a) {
  po::options_description o("dmuon-bench kernels options");
  o.add_options()("help,h", "show this help")
      ("model", po::value(&a.models)->composing(), "model YAML: its distinct Muon matrix shapes (repeatable)")
      ("shapes", po::value(&a.shapes), "extra shapes RxC[:count],... (e.g. 8192x28672)")
      ("presets", po::value(&a.presets)->default_value(a.presets), "optimizer presets whose NS to time")
      ("torch-json", po::value(&a.torch_json), "baseline from harness/tools/torch_ns_baseline.py")
      ("repeats", po::value(&a.repeats)->default_value(a.repeats), "timed calls per variant (median)")
      ("warmup", po::value(&a.warmup)->default_value(a.warmup), "untimed calls first")
      ("batch-elements", po::value(&a.batch_elements)->default_value(a.batch_elements),
       "also time the shape at the executor's batch (the model's count of it, at most the Plan's "
       "max_batch), capped at this many elements (0: never)")
      ("chosen-only", po::bool_switch(&a.chosen_only), "time only the autotuner's winner")
      ("no-retune", po::bool_switch(&a.no_retune),
       "with --chosen-only: take the winner from --tune-cache without re-timing the candidates first (shapes "
       "the cache lacks are still tuned), so that a profiler sees only the timed calls")
      ("gemm-size", po::value(&a.gemm_size)->default_value(a.gemm_size), "n of the n^3 GEMM ceiling")
      ("elementwise-elements", po::value(&a.elementwise_elements)->default_value(a.elementwise_elements),
       "elements of the elementwise bandwidth runs")
      ("tune-cache", po::value(&a.tune_cache), "autotuner JSON cache (keyed by GPU name)")
      ("profile", po::value(&a.profile), "device profile name for the calibration (default from the GPU name)")
      ("calibration", po::value(&a.calibration), "write the calibration YAML here")
      ("report-md", po::value(&a.report_md), "write the Markdown report here")
      ("report-json", po::value(&a.report_json), "write the JSON report here")
      ("print-shapes", po::bool_switch(&a.print_shapes), "print the shapes as RxC,... and exit (no GPU)");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(o).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: dmuon-bench kernels [--model FILE]... [--shapes LIST] [options]\n" << o;
    return false;
  }
  po::notify(vm);
  if (a.models.empty() && a.shapes.empty()) throw Error("give --model and/or --shapes");
  if (a.repeats < 1 || a.warmup < 0) throw Error("--repeats must be >= 1 and --warmup >= 0");
  for (const auto& p : split(a.presets)) optimizer_preset(p, "--presets");
  if (a.no_retune && !a.chosen_only) throw Error("--no-retune needs --chosen-only (the other variants' times come from the autotuner)");
  return true;
}

void run(const Args& a, KernelBench& b, const std::vector<BenchShape>& shapes) {
  const auto devices = cuda::visible_devices();
  b.gpu_name = devices.at(0).name;
  b.profile = a.profile.empty() ? profile_for_gpu(b.gpu_name) : a.profile;
  std::cerr << "dmuon-bench kernels: " << b.gpu_name << ", " << shapes.size() << " shapes\n";
  b.gemm_tflops = cuda::measure_gemm_tflops(a.gemm_size, 10);
  b.hbm_GBps = cuda::measure_copy_GBps(std::size_t{1} << 30, 10);
  std::cerr << "  ceilings: GEMM " << b.gemm_tflops << " TFLOP/s, copy " << b.hbm_GBps << " GB/s\n";
  cuda::NsEngineOptions eo;
  eo.check_finite = false;  // no host sync inside timed calls
  eo.tune_cache_file = a.tune_cache;
  eo.tune_repeats = 7;  // median of 7: 3 picked noise winners at batch > 1 (first H100 run)
  cuda::NsEngine engine(nullptr, eo);
  TimingOptions t;
  t.repeats = a.repeats;
  t.warmup = a.warmup;
  t.retune = !a.no_retune;
  for (const auto& s : shapes) {
    for (const auto& preset : split(a.presets)) {
      const NsConfig ns = optimizer_preset(preset).muon.ns;
      b.rows.push_back(time_ns(engine, s, 1, preset, ns, t, !a.chosen_only));
      const auto& r = b.rows.back();
      std::cerr << "  " << s.label() << " " << preset << " batch 1: " << cuda::to_string(r.chosen) << " "
                << r.chosen_seconds * 1e3 << " ms, " << r.useful_tflops << " useful TFLOP/s\n";
      // The model's batch as the executor runs it. Until 2026-11-27 a 2^26-element cap set it
      // instead (batch 1-2 for the 2048 x 11008 and 4096 x 14336 classes), which the executor never does.
      const int batch = executor_batch(s.count, s.rows, s.cols, a.batch_elements, PlanOptions{}.max_batch);
      if (batch > 1) {
        b.rows.push_back(time_ns(engine, s, batch, preset, ns, t, false));
        const auto& rb = b.rows.back();
        std::cerr << "  " << s.label() << " " << preset << " batch " << batch << ": " << cuda::to_string(rb.chosen)
                  << " " << rb.chosen_seconds * 1e3 << " ms\n";
      }
      engine.release_workspace();  // the next shape allocates its own; keeps peak memory at one shape
    }
  }
  // The kernel's rate against cuBLAS on the same shapes, in each preset's compute dtype (issue 16).
  std::vector<DType> dtypes;
  for (const auto& preset : split(a.presets)) {
    const DType t = optimizer_preset(preset).muon.ns.compute_dtype;
    if (std::find(dtypes.begin(), dtypes.end(), t) == dtypes.end()) dtypes.push_back(t);
  }
  if (cuda::sym_xxt_sm90_unsupported(128, 128, DType::bf16, reinterpret_cast<void*>(256)).empty()) {
    b.sym_rates = measure_sym_kernel_rates(shapes, dtypes, 3, 10);
  }
  b.elementwise = time_elementwise(a.elementwise_elements, 20);
}

}  // namespace

int kernels_command(int argc, char** argv) {
  Args a;
  std::vector<BenchShape> shapes;
  try {
    if (!parse(argc, argv, a)) return 0;
    shapes = shapes_from_models(a.models);
    if (!a.shapes.empty()) merge_shapes(shapes, parse_shape_list(a.shapes));
  } catch (const po::error& e) {
    std::cerr << "dmuon-bench kernels: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "dmuon-bench kernels: " << e.what() << "\n";
    return 2;
  }
  if (a.print_shapes) {
    for (std::size_t i = 0; i < shapes.size(); ++i) std::cout << (i ? "," : "") << shapes[i].label();
    std::cout << "\n";
    return 0;
  }
  KernelBench b;
  b.command = command_line(argc, argv, "dmuon-bench");
  b.date = utc_now();
  try {
    const std::string reason = cuda::no_device_reason();
    if (!reason.empty()) throw Error(reason);
    if (!a.torch_json.empty()) b.torch = load_torch_baseline(a.torch_json);
    run(a, b, shapes);
    if (!a.report_json.empty()) write_report_json(b, a.report_json);
    if (!a.report_md.empty()) write_report_markdown(b, a.report_md);
    if (!a.calibration.empty()) save_calibration(calibration_of(b), a.calibration);
  } catch (const Error& e) {
    std::cerr << "dmuon-bench kernels: " << e.what() << "\n";
    return 1;
  }
  const Speedup all = speedup_vs_torch(b, "dmuon", false, 0);
  const Speedup gram = speedup_vs_torch(b, "dmuon", false, 4);
  const Speedup same = speedup_vs_torch(b, "torch", false, 0);
  std::cout << "geomean speedup vs torch: dmuon preset " << all.geomean << " (" << all.shapes << " shapes), aspect>=4 "
            << gram.geomean << " (" << gram.shapes << "), torch preset " << same.geomean << "\n";
  for (const auto& w : whole_model_vs_torch(b)) {
    std::cout << "whole model " << w.model << " " << w.preset << ": " << w.matrices << " matrices, ours "
              << w.seconds * 1e3 << " ms, torch " << w.torch_seconds * 1e3 << " ms";
    if (w.complete()) {
      std::cout << ", speedup " << w.speedup();
      if (w.torch_best_seconds > 0) {
        std::cout << "; torch best " << w.torch_best_seconds * 1e3 << " ms, speedup " << w.speedup_vs_best();
      }
      std::cout << "\n";
    } else {
      std::cout << ", not claimed (" << w.missing.size() << " shapes without a timing)\n";
    }
  }
  for (const auto& r : b.rows) {
    std::cout << r.shape.label() << " " << r.preset << " b" << r.batch << " " << cuda::to_string(r.chosen) << " "
              << r.chosen_seconds * 1e3 << " ms " << r.useful_tflops << " TFLOP/s\n";
  }
  return 0;
}

}  // namespace dmuon::bench
