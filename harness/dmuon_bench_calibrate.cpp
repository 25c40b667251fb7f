#include "harness/dmuon_bench_calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>

#include "core/cost/adamw_fused_cost.hpp"
#include "core/cost/calibration.hpp"
#include "core/cost/step_overhead.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/io/provenance.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "harness/bench/calibrate_ns.hpp"
#include "harness/bench/grouped_calls.hpp"
#include "harness/bench/layers_json.hpp"
#include "harness/bench/step_launch_probe.hpp"
#include "kernels/cuda/ceilings.hpp"
#include "kernels/exec/collective_sweep.hpp"
#include "kernels/exec/contention_probe.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/elementwise_timing.hpp"
#include "kernels/exec/bench.hpp"
#include "kernels/exec/launch.hpp"

namespace po = boost::program_options;

namespace dmuon::bench {
namespace {

constexpr std::size_t kMinBytes = std::size_t{4} << 10;  // the smallest size of every curve
constexpr std::size_t kGiB = std::size_t{1} << 30;

struct Args {
  std::string scenario, out, layers_json, commit, profile, ns_grid = "full", tune_cache;
  int max_batch = 64;
  long gemm_size = 8192;
  long ns_grid_batch_elements = kDefaultGridBatchElements;
  std::size_t max_collective_bytes = kGiB, max_elementwise_bytes = kGiB;
  int collective_iterations = 20, collective_warmup = 5, collective_passes = 3;
  double timeout_seconds = 300;
  bool print_ns_calls = false;
  std::string command;
};

// Everything read and planned before any GPU work, so bad input fails in a second.
struct Inputs {
  Scenario scenario;
  std::vector<NsCallShape> scenario_calls, grid;
  std::vector<NsFamily> families;
  std::optional<ForwardBackwardTable> forward_backward;
};

bool power_of_two(std::size_t x) { return x != 0 && (x & (x - 1)) == 0; }

bool parse(int argc, char** argv, Args& a) {
  po::options_description o("dmuon-bench calibrate options");
  o.add_options()("help,h", "show this help")
      ("scenario", po::value(&a.scenario)->required(), "scenario YAML: its model's Muon calls, its optimizer preset")
      ("out", po::value(&a.out)->required(), "calibration YAML to write (scenarios/calibration/<gpu>.yaml)")
      ("layers-json", po::value(&a.layers_json), "forward/backward JSON of harness/tools/measure_layers.py to merge")
      ("commit", po::value(&a.commit), "git commit recorded in the file (default: git rev-parse --short HEAD)")
      ("profile", po::value(&a.profile), "device profile name (default from the GPU name)")
      ("ns-grid", po::value(&a.ns_grid)->default_value(a.ns_grid), "Newton-Schulz grid per kernel family: full | small | none")
      ("ns-grid-batch-elements", po::value(&a.ns_grid_batch_elements)->default_value(a.ns_grid_batch_elements),
       "largest batched grid call, in elements (batches 4, 16, 64 up to this)")
      ("max-batch", po::value(&a.max_batch)->default_value(a.max_batch), "same-shape matrices per batched NS call (as dmuon-bench step)")
      ("tune-cache", po::value(&a.tune_cache), "NS autotune cache (JSON)")
      ("gemm-size", po::value(&a.gemm_size)->default_value(a.gemm_size), "n of the n^3 GEMM ceiling")
      ("max-elementwise-bytes", po::value(&a.max_elementwise_bytes)->default_value(a.max_elementwise_bytes),
       "largest elementwise payload (4 KiB, 16 KiB, ... up to this)")
      ("max-collective-bytes", po::value(&a.max_collective_bytes)->default_value(a.max_collective_bytes),
       "largest collective size (4 KiB, 8 KiB, ... up to this; a power of two)")
      ("collective-iterations", po::value(&a.collective_iterations)->default_value(a.collective_iterations),
       "timed calls per collective point up to 64 MiB (fewer above)")
      ("collective-warmup", po::value(&a.collective_warmup)->default_value(a.collective_warmup), "untimed calls first")
      ("collective-passes", po::value(&a.collective_passes)->default_value(a.collective_passes),
       "sweeps over all collective points; each point is the median of its passes")
      ("timeout", po::value(&a.timeout_seconds)->default_value(a.timeout_seconds),
       "seconds NCCL set-up or one collective point may take before the job aborts")
      ("print-ns-calls", po::bool_switch(&a.print_ns_calls), "print the Newton-Schulz calls it would time and exit (no GPU)");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(o).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: dmuon-bench calibrate --scenario FILE --out FILE [--layers-json FILE] [options]\n" << o;
    return false;
  }
  po::notify(vm);
  a.command = command_line(argc, argv, "dmuon-bench");
  return true;
}

void check_numbers(const Args& a) {
  if (a.max_batch < 1) throw Error("--max-batch: must be >= 1");
  if (a.gemm_size < 256) throw Error("--gemm-size: must be >= 256");
  if (a.ns_grid_batch_elements < 1) {
    throw Error("--ns-grid-batch-elements: must be >= 1, got " + std::to_string(a.ns_grid_batch_elements));
  }
  if (!power_of_two(a.max_collective_bytes) || a.max_collective_bytes < kMinBytes) {
    throw Error("--max-collective-bytes: expected a power of two >= 4096, got " + std::to_string(a.max_collective_bytes));
  }
  if (a.max_elementwise_bytes < kMinBytes) {
    throw Error("--max-elementwise-bytes: must be >= 4096, got " + std::to_string(a.max_elementwise_bytes));
  }
  if (a.collective_passes < 1) throw Error("--collective-passes must be >= 1, got " + std::to_string(a.collective_passes));
  if (a.collective_iterations < 1 || a.collective_warmup < 0) {
    throw Error("--collective-iterations must be >= 1 and --collective-warmup >= 0");
  }
  if (!(a.timeout_seconds > 0) || a.timeout_seconds > 1e6) throw Error("--timeout: expected seconds in (0, 1e6]");
}

Inputs prepare(const Args& a) {
  check_numbers(a);
  const std::filesystem::path dir = std::filesystem::path(a.out).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir)) throw Error("--out: no directory " + dir.string());
  if (!a.profile.empty()) device_profile(a.profile, "--profile");
  Inputs in;
  in.grid = ns_grid_calls(parse_ns_grid(a.ns_grid, "--ns-grid"), a.ns_grid_batch_elements);
  in.scenario = load_scenario(a.scenario);
  in.families = ns_families(in.scenario.optimizer);
  in.scenario_calls = scenario_ns_calls(in.scenario, a.max_batch);
  if (!a.layers_json.empty()) in.forward_backward = load_layers_json(a.layers_json);
  return in;
}

std::string gb_per_s(double bytes, double seconds) { return std::to_string(bytes / seconds / 1e9).substr(0, 7); }

// Ceilings, launch cost and elementwise curves, on device 0.
void measure_device(const Args& a, CalibrationTable& t) {
  t.gemm_tflops = cuda::measure_gemm_tflops(a.gemm_size, 10);
  t.hbm_GBps = cuda::measure_copy_GBps(std::min(a.max_elementwise_bytes, kGiB), 10);
  t.launch_overhead_us = cuda::measure_launch_overhead_seconds() * 1e6;
  std::cerr << "  ceilings: GEMM " << t.gemm_tflops << " TFLOP/s, copy " << t.hbm_GBps << " GB/s, launch "
            << *t.launch_overhead_us << " us" << std::endl;
  const cuda::ElementwiseSizeCurves c = cuda::measure_elementwise_curves(kMinBytes, a.max_elementwise_bytes);
  t.elementwise_curves.momentum.points = c.momentum;
  t.elementwise_curves.muon_update.points = c.muon_update;
  t.elementwise_curves.adamw.points = c.adamw;
  t.elementwise_curves.copy.points = c.copy;
  // The rates older readers use: each kernel's GB/s at its largest payload.
  auto rate = [](const std::vector<std::pair<double, double>>& p) { return p.back().first / p.back().second / 1e9; };
  t.elementwise.momentum_GBps = rate(c.momentum);
  t.elementwise.update_GBps = rate(c.muon_update);
  t.elementwise.adamw_GBps = rate(c.adamw);
  std::cerr << "  elementwise at " << c.momentum.back().first << " B: momentum " << *t.elementwise.momentum_GBps
            << " GB/s, update " << *t.elementwise.update_GBps << ", adamw " << *t.elementwise.adamw_GBps << ", copy "
            << gb_per_s(c.copy.back().first, c.copy.back().second) << std::endl;
}

void measure_ns(const Args& a, const Inputs& in, CalibrationTable& t) {
  cuda::NsEngineOptions eo;
  eo.check_finite = false;  // no host sync inside timed calls
  eo.tune_cache_file = a.tune_cache;
  eo.tune_repeats = 7;  // as dmuon-bench kernels: fewer picked noise winners at batch > 1
  cuda::NsEngine engine(nullptr, eo);
  const auto start = std::chrono::steady_clock::now();
  std::cerr << "  Newton-Schulz: " << in.scenario_calls.size() << " scenario calls, " << in.grid.size()
            << " grid calls x " << in.families.size() << " kernel families" << std::endl;
  time_ns_calls(engine, in.families.front(), in.scenario_calls, "plan", t.ns);
  for (const NsFamily& f : in.families) time_ns_calls(engine, f, in.grid, "grid", t.ns);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "  Newton-Schulz: " << t.ns.size() << " measurements in " << seconds << " s" << std::endl;
}

// One nccl-tests line: size count type redop root time algbw busbw.
void print_curve(const exec::CommSweepCurve& c) {
  const bool reduces = c.kind == OpKind::all_reduce || c.kind == OpKind::reduce_scatter || c.kind == OpKind::reduce;
  const bool rooted = c.kind == OpKind::broadcast || c.kind == OpKind::reduce;
  std::printf("# %s, %d rank%s per communicator, %d communicator%s at once, bfloat16, in place\n",
              std::string(to_string(c.kind)).c_str(), c.ranks, c.ranks == 1 ? "" : "s", c.communicators,
              c.communicators == 1 ? "" : "s");
  std::printf("#%14s %12s %9s %6s %5s %10s %8s %8s\n", "size(B)", "count", "type", "redop", "root", "time(us)",
              "algbw", "busbw");
  std::printf("#%14s %12s %9s %6s %5s %10s %8s %8s\n", "", "(elements)", "", "", "", "", "(GB/s)", "(GB/s)");
  for (const auto& p : c.points) {
    const double algbw = p.bytes / p.seconds / 1e9;
    std::printf("%15.0f %12lld %9s %6s %5d %s%9.2f %8.2f %8.2f\n", p.bytes, static_cast<long long>(p.count), "bfloat16",
                reduces ? "avg" : "none", rooted ? 0 : -1, p.below_resolution ? "<" : " ", p.seconds * 1e6, algbw,
                algbw * exec::bus_bandwidth_factor(c.kind, c.ranks));
  }
  if (std::any_of(c.points.begin(), c.points.end(), [](const auto& p) { return p.below_resolution; })) {
    std::printf("# <: the call enqueues no GPU work (below CUDA events' resolution): recorded as %.1f us\n",
                exec::kEventResolutionSeconds * 1e6);
  }
  std::fflush(stdout);
}

// The sweep on every local GPU, one thread each, then the grouped-call probe (one GPU each) and the
// step launch probe; returns rank 0's curves. Throws on failure.
std::vector<exec::CommSweepCurve> measure_collectives(const Args& a, const Scenario& sc, bench::StepLaunchProbe* probe,
                                                      std::optional<exec::ContentionProbe>* contention,
                                                      std::vector<exec::GroupedCallPoint>* grouped, int* argc,
                                                      char*** argv) {
  exec::CommSweepOptions o;
  o.max_bytes = a.max_collective_bytes;
  o.min_bytes = std::min(kMinBytes, a.max_collective_bytes);
  o.iterations = a.collective_iterations;
  o.warmup = a.collective_warmup;
  o.passes = a.collective_passes;
  o.timeout_seconds = a.timeout_seconds;
  exec::LaunchOptions lo;
  lo.launcher = exec::Launcher::threads;  // one process, one thread a GPU, as dmuon-bench step on one host
  lo.bootstrap_timeout_seconds = a.timeout_seconds;
  lo.barrier_timeout_seconds = a.timeout_seconds;
  std::vector<exec::CommSweepCurve> curves;
  const int code = exec::launch_ranks(lo, argc, argv, [&](exec::RankHandle& h) {
    auto mine = exec::sweep_collectives(h, o, [&](const exec::CommSweepCurve& c) {
      if (h.rank() == 0) print_curve(c);
    });
    auto groups = exec::probe_grouped_calls(
        h, grouped_call_options(a.max_collective_bytes, a.collective_warmup, a.collective_iterations, a.collective_passes,
                                a.timeout_seconds));
    if (h.rank() == 0) print_grouped_calls(groups);
    const bench::StepLaunchProbe p = bench::measure_step_launches(h, sc, a.timeout_seconds);
    std::optional<exec::ContentionProbe> beside;
    if (h.world() > 1) beside = exec::measure_compute_beside_nccl(h, a.timeout_seconds);
    if (h.rank() == 0) {
      *contention = beside;
      if (beside) {
        std::cerr << "  compute beside NCCL: " << beside->gemms << " GEMMs of " << beside->gemm_n << "^3 bf16 "
                  << beside->alone_seconds * 1e3 << " ms alone, " << beside->beside_seconds * 1e3 << " ms beside "
                  << beside->all_gathers << " all-gathers of " << beside->all_gather_bytes << " bytes (rank 0, medians of "
                  << beside->repetitions << "); slowdown " << beside->slowdown << " (mean over ranks)"
                  << (beside->slowdown < 0 ? ": faster beside NCCL, recorded as 0" : "") << std::endl;
        std::cerr << "  NCCL beside compute: " << beside->collective_calls << " all-gathers "
                  << beside->collective_alone_seconds * 1e3 << " ms alone, " << beside->collective_beside_seconds * 1e3
                  << " ms beside GEMMs (rank 0, medians); slowdown " << beside->collective_slowdown << " (mean over ranks)"
                  << (beside->collective_slowdown < 0 ? ": faster beside compute, recorded as 0" : "") << std::endl;
      }
      curves = std::move(mine);
      *grouped = std::move(groups);
      *probe = p;
      std::cerr << "  step launch probe (adamw Plan of " << sc.name << ", " << p.iterations
                << " iterations): executor issue " << p.issue_seconds * 1e6 << " us a launch, forward/backward phase "
                << p.comm_phase_seconds * 1e3 << " ms" << std::endl;
    }
  });
  if (code != 0) throw Error("the collective sweep failed (the rank errors are above)");
  return curves;
}

// collective_step_overhead_us (several GPUs, per NCCL call) or local_collective_step_overhead_us
// (one GPU, per launch) from the probe's phase and the curves just measured. A phase its curves
// (and, on one GPU, the host's issue) already fill is recorded as 0 and said so. On one GPU the
// overhead is fitted as the simulator applies it, each launch also waiting for the host's issue
// (local_step_overhead_seconds); the plain spread over every launch is printed beside it.
void set_collective_step_overhead(CalibrationTable& t, const StepPlan& sp, const bench::StepLaunchProbe& probe, int world) {
  const CostModel measured(device_profile(t.gpu, "--profile"), t);
  const CurvePricedCollectives priced = curve_priced_collectives(sp.plan, 0, measured);
  const bool local = world == 1;
  const double spread = collective_step_overhead_seconds(probe.comm_phase_seconds, priced, local);
  const double overhead = local ? local_step_overhead_seconds(probe.comm_phase_seconds, priced, probe.issue_seconds) : spread;
  std::cerr << "  " << (local ? "local " : "") << "collective step overhead: " << overhead * 1e6 << " us a "
            << (local ? "launch" : "call") << " (phase " << probe.comm_phase_seconds * 1e3 << " ms, "
            << (local ? priced.launches : priced.calls) << (local ? " launches" : " calls") << " whose curves sum to "
            << priced.seconds * 1e3 << " ms";
  if (local) std::cerr << ", each issued " << probe.issue_seconds * 1e6 << " us after the last; spread evenly: " << spread * 1e6 << " us";
  std::cerr << ")" << (overhead <= 0 ? "; nothing left beyond the curves (and the host's issue): recorded as 0" : "")
            << std::endl;
  (local ? t.local_collective_step_overhead_us : t.collective_step_overhead_us) = std::max(0.0, overhead) * 1e6;
}

// adamw_fused_issue_us and adamw_fused_vs_curve from the probe's optimizer phase, priced with the
// AdamW curve just measured, on the rank the probe timed. A phase that cannot be split is said so
// and leaves both keys out.
void set_adamw_fused(CalibrationTable& t, const Scenario& sc, const StepPlan& sp, const bench::StepLaunchProbe& probe) {
  const CostModel measured(device_profile(t.gpu, "--profile"), t);
  const Routing routing = route_parameters(sc.model, sc.routing);
  try {
    const FusedAdamw fused = fused_adamw(sp.plan, probe.optimizer_rank, routing, sc.optimizer, measured);
    const FusedAdamwCost c = fused_adamw_cost(probe.optimizer_phase_seconds, probe.optimizer_host_seconds, fused);
    std::cerr << "  fused AdamW (rank " << probe.optimizer_rank << "): " << fused.tensors << " tensors, optimizer phase " << probe.optimizer_phase_seconds * 1e3
              << " ms of which host " << probe.optimizer_host_seconds * 1e3 << " ms (" << c.issue_us_per_tensor
              << " us a tensor), GPU " << c.vs_curve << " x the AdamW curve's " << fused.curve_seconds * 1e3 << " ms"
              << std::endl;
    t.adamw_fused_issue_us = c.issue_us_per_tensor;
    t.adamw_fused_vs_curve = c.vs_curve;
  } catch (const Error& e) {
    std::cerr << "  fused AdamW: not recorded (" << e.what() << ")" << std::endl;
  }
}

void print_summary(const CalibrationTable& t, const std::string& out) {
  std::cout << "calibration " << out << ": " << t.machine << "\n  commit " << (t.commit.empty() ? "unknown" : t.commit)
            << ", " << t.date << "\n  GEMM " << t.gemm_tflops << " TFLOP/s, copy " << t.hbm_GBps << " GB/s, launch "
            << t.launch_overhead_us.value_or(0) << " us, executor issue " << t.executor_issue_us.value_or(0)
            << " us a launch, collective step overhead " << t.collective_step_overhead_us.value_or(0)
            << " us a call (one GPU: " << t.local_collective_step_overhead_us.value_or(0)
            << " us a launch), fused AdamW "
            << (t.adamw_fused_vs_curve ? std::to_string(t.adamw_fused_issue_us.value_or(0)) + " us a tensor on the host, GPU " +
                                             std::to_string(*t.adamw_fused_vs_curve) + " x its curve"
                                       : std::string("not measured"))
            << ", compute beside NCCL "
            << (t.compute_slowdown_beside_nccl ? std::to_string(*t.compute_slowdown_beside_nccl) + " slower"
                                               : std::string("not measured (one GPU)"))
            << ", NCCL beside compute "
            << (t.collective_slowdown_beside_compute ? std::to_string(*t.collective_slowdown_beside_compute) + " slower"
                                                     : std::string("not measured (one GPU)"))
            << "\n  elementwise (GB/s at the largest size): momentum "
            << t.elementwise.momentum_GBps.value_or(0) << ", update " << t.elementwise.update_GBps.value_or(0)
            << ", adamw " << t.elementwise.adamw_GBps.value_or(0) << "\n  Newton-Schulz: " << t.ns.size()
            << " measurements\n  collectives (busbw GB/s at the largest size):";
  for (const auto& c : t.collectives) {
    const auto& p = c.curve.points.back();
    std::cout << " " << to_string(c.kind) << "/" << c.ranks << " "
              << p.first / p.second / 1e9 * exec::bus_bandwidth_factor(c.kind, c.ranks);
  }
  std::cout << "\n  forward/backward: "
            << (t.forward_backward ? std::to_string(t.forward_backward->layers.size()) + " layers, " +
                                         std::to_string(t.forward_backward->gemm.size()) + " GEMMs, " +
                                         std::to_string(t.forward_backward->attention.size()) + " attention"
                                   : std::string("none (no --layers-json)"));
  if (t.forward_backward) {
    for (const auto& f : t.forward_backward->host_floor) {
      std::cout << ", host floor " << to_string(f.mode) << " " << f.per_layer_s * 1e3 << " ms a layer";
    }
  }
  std::cout << std::endl;
}

CalibrationTable run(const Args& a, const Inputs& in, int* argc, char*** argv) {
  const auto devices = cuda::visible_devices();
  CalibrationTable t;
  t.gpu = a.profile.empty() ? profile_for_gpu(devices.front().name) : a.profile;
  t.source = a.command;
  t.date = utc_now();
  t.commit = a.commit.empty() ? git_commit() : a.commit;
  t.machine = std::to_string(devices.size()) + " x " + devices.front().name + ", " + cuda::cuda_versions() +
              ", NCCL " + exec::nccl_version() + "; host " + host_description();
  std::cerr << "dmuon-bench calibrate: " << t.machine << "; scenario " << in.scenario.name << " (" << in.scenario.file
            << ")" << std::endl;
  if (in.scenario.cluster.gpu != t.gpu) {
    std::cerr << "  note: the scenario's cluster.gpu is " << in.scenario.cluster.gpu << ", this GPU's profile " << t.gpu
              << std::endl;
  }
  measure_device(a, t);
  measure_ns(a, in, t);
  bench::StepLaunchProbe probe;
  std::optional<exec::ContentionProbe> contention;
  std::vector<exec::GroupedCallPoint> grouped;
  for (const auto& c : measure_collectives(a, in.scenario, &probe, &contention, &grouped, argc, argv)) {
    if (c.points.empty()) continue;  // no size of the range splits into whole parts of this group
    CollectiveCurve cc;
    cc.kind = c.kind;
    cc.ranks = c.ranks;
    cc.nodes = 1;  // one host
    for (const auto& p : c.points) cc.curve.points.emplace_back(p.bytes, p.seconds);
    t.collectives.push_back(std::move(cc));
  }
  t.executor_issue_us = probe.issue_seconds * 1e6;
  t.local_grouped_calls = fit_grouped_calls(grouped);  // before the overhead fit, which prices groups with it
  if (contention) {
    t.compute_slowdown_beside_nccl = std::max(0.0, contention->slowdown);
    t.collective_slowdown_beside_compute = std::max(0.0, contention->collective_slowdown);
  }
  // The Plan the probe ran (planned again, deterministically), priced by both setters.
  const int world = static_cast<int>(devices.size());
  const StepPlan probe_plan = bench::step_probe_plan(in.scenario, world);
  set_collective_step_overhead(t, probe_plan, probe, world);
  set_adamw_fused(t, in.scenario, probe_plan, probe);
  t.forward_backward = in.forward_backward;
  return t;
}

}  // namespace

int calibrate_command(int argc, char** argv) {
  Args a;
  Inputs in;
  try {
    if (!parse(argc, argv, a)) return 0;
    in = prepare(a);
  } catch (const po::error& e) {
    std::cerr << "dmuon-bench calibrate: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "dmuon-bench calibrate: " << e.what() << "\n";
    return 2;
  }
  if (a.print_ns_calls) {
    for (const NsFamily& f : in.families) std::cout << "family " << f.label << "\n";
    for (const NsCallShape& c : in.scenario_calls) std::cout << "plan " << c.label() << "\n";
    for (const NsCallShape& c : in.grid) std::cout << "grid " << c.label() << "\n";
    return 0;
  }
  try {
    const std::string reason = cuda::no_device_reason();
    if (!reason.empty()) throw Error(reason);
    const CalibrationTable t = run(a, in, &argc, &argv);
    save_calibration(t, a.out);
    print_summary(t, a.out);
  } catch (const Error& e) {
    std::cerr << "dmuon-bench calibrate: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace dmuon::bench
