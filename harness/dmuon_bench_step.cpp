#include "harness/dmuon_bench_step.hpp"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>

#include "core/cost/calibration.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/cost/forward_backward_cost.hpp"
#include "core/io/provenance.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "core/plan/step_units.hpp"
#include "harness/dmuon_bench_step_report.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/exec/bench.hpp"
#include "kernels/exec/launch.hpp"

namespace po = boost::program_options;

namespace dmuon::bench {
namespace {

struct Args {
  std::string scenario, backend = "nccl", launcher = "auto", machine, out_dir = "reports", calibration;
  std::vector<std::string> strategies;
  exec::BenchOptions bench;
  int max_batch = 64;
  double reserve_gib = 0;  // device memory each rank holds for the run (--reserve-GiB)
  bool compute_standin = false;
  std::string command;
};

bool parse(int argc, char** argv, Args& a) {
  po::options_description o("dmuon-bench step options");
  o.add_options()("help,h", "show this help")
      ("scenario", po::value(&a.scenario)->required(), "scenario YAML (model, optimizer, strategies, cluster)")
      ("backend", po::value(&a.backend)->default_value(a.backend), "nccl (the only backend that measures)")
      ("launcher", po::value(&a.launcher)->default_value(a.launcher), "auto | threads | mpi | env")
      ("strategy", po::value(&a.strategies)->composing(), "measure only these (repeatable; default: the scenario's)")
      ("warmup", po::value(&a.bench.warmup)->default_value(a.bench.warmup), "untimed iterations")
      ("iterations", po::value(&a.bench.iterations)->default_value(a.bench.iterations), "timed iterations")
      ("timeout", po::value(&a.bench.timeout_seconds)->default_value(a.bench.timeout_seconds),
       "seconds the NCCL bootstrap, communicator set-up or a step phase may take before the job aborts")
      ("ns-impl", po::value(&a.bench.ns_impl)->default_value(a.bench.ns_impl), "automatic | standard | symmetric | gram ...")
      ("tune-cache", po::value(&a.bench.tune_cache_file), "NS autotune cache (JSON)")
      ("max-batch", po::value(&a.max_batch)->default_value(a.max_batch), "same-shape matrices per batched NS call")
      ("calibration", po::value(&a.calibration), "calibration YAML for the owner assignment's cost model")
      ("compute-standin", po::bool_switch(&a.compute_standin),
       "measure the whole step: forward/backward weight GEMMs (cuBLASLt) between the collectives, then the optimizer")
      ("reserve-GiB", po::value(&a.reserve_gib)->default_value(a.reserve_gib),
       "device memory each rank allocates and holds for the whole run, untouched (to see whether launch costs "
       "move with the footprint)")
      ("machine", po::value(&a.machine), "report name: reports/step-<machine>.* (default <world>x<gpu>)")
      ("out-dir", po::value(&a.out_dir)->default_value(a.out_dir), "where the reports go");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(o).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: dmuon-bench step --scenario FILE [options]\n" << o;
    return false;
  }
  po::notify(vm);
  if (a.backend != "nccl") throw Error("--backend: '" + a.backend + "' cannot measure a step (available: nccl)");
  if (!(a.reserve_gib >= 0) || !std::isfinite(a.reserve_gib)) {
    throw Error("--reserve-GiB: must be a finite number >= 0, got " + std::to_string(a.reserve_gib));
  }
  exec::validate(a.bench);
  // The first iteration picks cuBLASLt's algorithms for every stand-in shape: never time it.
  if (a.compute_standin && a.bench.warmup < 1) throw Error("--compute-standin: needs --warmup >= 1, got --warmup " + std::to_string(a.bench.warmup));
  a.command = command_line(argc, argv, "dmuon-bench");
  return true;
}

// "NVIDIA H200" -> "h200"; "NVIDIA H100 80GB HBM3" -> "h100".
std::string short_gpu_name(const std::string& name) {
  std::string out;
  for (const std::string& word : {std::string("H200"), std::string("H100"), std::string("A100"), std::string("B200")}) {
    if (name.find(word) != std::string::npos) out = word;
  }
  if (out.empty()) out = name;
  for (char& c : out) c = c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// [allocated, staged, standin, standin flops, samples, per sample: comm seconds, spans, 7 a span,
//  optimizer seconds, spans, ..., whole step seconds, spans, ...]
std::vector<double> flatten(const exec::RankMeasurement& m) {
  std::vector<double> v{m.allocated_bytes, static_cast<double>(m.staged_ns_calls), m.standin ? 1.0 : 0.0, m.standin_flops,
                        static_cast<double>(m.samples.size())};
  auto put = [&](const exec::RunTiming& t) {
    v.push_back(t.seconds);
    v.push_back(static_cast<double>(t.spans.size()));
    for (const auto& s : t.spans) {
      v.insert(v.end(), {static_cast<double>(s.op), static_cast<double>(s.fused_ops),
                         s.stream == StreamKind::compute ? 0.0 : 1.0, s.start_seconds, s.end_seconds,
                         static_cast<double>(s.standin_unit), s.standin_backward ? 1.0 : 0.0});
    }
  };
  for (const auto& s : m.samples) {
    put(s.comm_phase);
    put(s.optimizer);
    put(s.whole_step);
  }
  return v;
}

exec::RankMeasurement unflatten(const std::vector<double>& v) {
  std::size_t i = 0;
  auto next = [&] { return v.at(i++); };
  exec::RankMeasurement m;
  m.allocated_bytes = next();
  m.staged_ns_calls = static_cast<int>(next());
  m.standin = next() != 0.0;
  m.standin_flops = next();
  const auto samples = static_cast<std::size_t>(next());
  auto get = [&](exec::RunTiming& t) {
    t.seconds = next();
    const auto n = static_cast<std::size_t>(next());
    for (std::size_t k = 0; k < n; ++k) {
      exec::OpSpan s;
      s.op = static_cast<int>(next());
      s.fused_ops = static_cast<int>(next());
      s.stream = next() == 0.0 ? StreamKind::compute : StreamKind::comm;
      s.start_seconds = next();
      s.end_seconds = next();
      s.standin_unit = static_cast<int>(next());
      s.standin_backward = next() != 0.0;
      t.spans.push_back(s);
    }
  };
  for (std::size_t k = 0; k < samples; ++k) {
    exec::IterationSample s;
    get(s.comm_phase);
    get(s.optimizer);
    get(s.whole_step);
    m.samples.push_back(std::move(s));
  }
  return m;
}

// --calibration, else the scenario's cluster.calibration, as dmuon-sim picks it: the owner
// assignment and sharding decisions then match the simulator's for the same scenario.
CostModel cost_model(const Scenario& sc, const Args& a) {
  std::optional<CalibrationTable> table;
  const std::string file = a.calibration.empty() ? sc.calibration_file : a.calibration;
  if (!file.empty()) table = load_calibration(file);
  return CostModel(device_profile(sc.cluster.gpu, "cluster.gpu"), table);
}

void run_rank(exec::RankHandle& h, const Args& a, StepReport& report) {
  const Scenario sc = load_scenario(a.scenario);
  // Allocated on the rank's device after the launcher selected it; freed when the rank returns.
  std::optional<cuda::DeviceBuffer> reserve;
  if (a.reserve_gib > 0) {
    reserve.emplace(static_cast<std::size_t>(a.reserve_gib * double(std::size_t{1} << 30)),
                    "--reserve-GiB on rank " + std::to_string(h.rank()));
  }
  const Routing routing = route_parameters(sc.model, sc.routing);
  const Mesh mesh = mesh_for_cluster(sc.cluster);
  if (mesh.world() != h.world()) {
    throw Error(a.scenario + ": cluster has " + std::to_string(mesh.world()) + " GPUs (nodes x gpus_per_node), the job " +
                std::to_string(h.world()) + " ranks");
  }
  const CostModel cost = cost_model(sc, a);
  // The stand-in's units and GEMMs; their pricing (peak, no calibration) plays no part here.
  const ForwardBackwardCost units =
      forward_backward_cost(sc.model, sc.training, sc.training.peak_tflops.value_or(cost.device().gemm_tflops));
  StepPlanOptions po = plan_options_for(sc);  // as dmuon-sim plans this scenario
  po.plan.max_batch = a.max_batch;
  std::vector<Strategy> strategies = sc.strategies;
  if (!a.strategies.empty()) {
    strategies.clear();
    for (const auto& s : a.strategies) strategies.push_back(parse_strategy(s, "--strategy"));
  }
  for (Strategy s : strategies) {
    const std::string name(to_string(s));
    if (h.rank() == 0) std::cerr << "dmuon-bench step: " << name << ": planning and measuring" << std::endl;
    const StepPlan sp = plan_step(sc.model, routing, sc.optimizer, s, mesh, cost, po);
    std::optional<exec::StandinInputs> standin;
    if (a.compute_standin) {
      standin = exec::StandinInputs{&units, step_schedule(sp.plan, h.rank(), assign_step_units(sp.plan, routing, units),
                                                          sc.training.prefetch_layers)};
    }
    const exec::RankMeasurement mine =
        exec::measure_plan(h, sp.plan, sc.model, routing, sc.optimizer, a.bench, standin ? &*standin : nullptr);
    const auto all = h.all_gather_ragged(flatten(mine));
    if (h.rank() != 0) continue;
    std::vector<exec::RankMeasurement> ranks;
    for (const auto& v : all) ranks.push_back(unflatten(v));
    StrategyResult r = summarize(name, sp.plan, ranks);
    if (sp.assignment) r.ns_imbalance_predicted = sp.assignment->imbalance();
    if (r.standin) {
      std::cerr << "dmuon-bench step: " << name << ": whole step " << r.standin->step_seconds * 1e3 << " ms, compute busy "
                << r.standin->compute_busy_seconds * 1e3 << " ms, exposed comm " << r.standin->exposed_comm_seconds * 1e3
                << " ms" << std::endl;
    } else {
      std::cerr << "dmuon-bench step: " << name << ": optimizer step " << r.step_seconds * 1e3 << " ms, fwd+bwd comm "
                << r.comm_phase_seconds * 1e3 << " ms" << std::endl;
    }
    report.strategies.push_back(std::move(r));
  }
  if (h.rank() == 0) {
    report.scenario = a.scenario;
    report.world = h.world();
  }
}

}  // namespace

int step_command(int argc, char** argv) {
  Args a;
  try {
    if (!parse(argc, argv, a)) return 0;
  } catch (const std::exception& e) {
    std::cerr << "dmuon-bench step: " << e.what() << " (see --help)\n";
    return 2;
  }
  exec::LaunchOptions lo;
  try {
    lo.launcher = exec::parse_launcher(a.launcher, "--launcher");
    lo.barrier_timeout_seconds = a.bench.timeout_seconds;
    lo.bootstrap_timeout_seconds = a.bench.timeout_seconds;
  } catch (const Error& e) {
    std::cerr << "dmuon-bench step: " << e.what() << "\n";
    return 2;
  }
  return exec::launch_ranks(lo, &argc, &argv, [&](exec::RankHandle& h) {
    StepReport mine;
    run_rank(h, a, mine);
    if (h.rank() != 0) return;
    const auto devices = cuda::visible_devices();
    mine.gpu = devices.empty() ? "unknown" : devices.front().name;
    mine.machine = a.machine.empty() ? std::to_string(mine.world) + "x" + short_gpu_name(mine.gpu) : a.machine;
    mine.command = a.command;
    mine.date = utc_now();
    mine.launcher = a.launcher;
    mine.iterations = a.bench.iterations;
    mine.warmup = a.bench.warmup;
    std::filesystem::create_directories(a.out_dir);
    const std::string base = a.out_dir + "/step-" + mine.machine;
    write_json(mine, base + ".json");
    write_markdown(mine, base + ".md");
    write_chrome_trace(mine, base + "-trace.json");
    std::cerr << "dmuon-bench step: wrote " << base << ".{md,json} and " << base << "-trace.json" << std::endl;
  });
}

}  // namespace dmuon::bench
