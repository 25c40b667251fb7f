// dmuon-verify: the numerics regression tool and CI gate. Runs the built-in suite and/or
// golden cases against the Eigen reference; prints a line per check, then "N passed, M failed".
// Exit 0: all passed; 1: a check failed; 2: bad arguments or input.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/model/model_yaml.hpp"
#include "core/plan/plan_printer.hpp"
#include "core/io/provenance.hpp"
#include "core/plan/step_planner.hpp"
#include "harness/verify/builtin_suite.hpp"
#include "harness/verify/distributed_checks.hpp"
#include "harness/verify/golden.hpp"
#ifdef DMUON_HAVE_CUDA
#include "harness/verify/cuda_checks.hpp"
#endif
#ifdef DMUON_HAVE_NCCL
#include "harness/dmuon_verify_nccl.hpp"
#endif

namespace po = boost::program_options;
using namespace dmuon;

namespace {

struct Args {
  std::string backend = "cpu";
  std::string suite = "quick";
  std::vector<std::string> golden;
  std::string json;
  std::string filter;
  std::uint64_t seed = 20261122;
  bool list = false;
  int world = 0;            // > 0: add the distributed cases on a 1-D mesh of this many ranks
  std::string mesh;         // "RxS": the distributed cases on a 2-D (replicate x shard) mesh
  std::string model;        // model YAML for the distributed cases and --print-plan
  std::string print_plan;   // a strategy: print its plan and exit
  int print_ops = 12;
};

// --world N or --mesh RxS (not both); a 1-rank mesh when neither is given.
Mesh mesh_of(const Args& a) {
  if (!a.mesh.empty()) {
    if (a.world > 0) throw Error("--mesh and --world: give one of them");
    int r = 0, s = 0;
    char x = 0;
    if (std::sscanf(a.mesh.c_str(), "%d%c%d", &r, &x, &s) != 3 || x != 'x') {
      throw Error("--mesh: expected REPLICATExSHARD such as 2x2, got '" + a.mesh + "'");
    }
    return make_mesh(r, s, "--mesh");
  }
  if (a.world < 0) throw Error("--world: must be >= 1, got " + std::to_string(a.world));
  return make_mesh(1, std::max(1, a.world), "--world");
}

// Returns false when --help was printed.
bool parse_args(int argc, char** argv, Args& a) {
  po::options_description opts("dmuon-verify options");
  opts.add_options()
      ("help,h", "show this help")
      ("backend", po::value(&a.backend)->default_value(a.backend),
       "cpu (Eigen reference) | cuda (the GPU NS engine vs the reference; CUDA builds)")
      ("suite", po::value(&a.suite)->default_value(a.suite),
       "quick | full (adds 4096x11008 for the dmuon preset: tens of minutes) | none")
      ("golden", po::value(&a.golden)->composing(), "directory with manifest.json and .npy files (repeatable)")
      ("json", po::value(&a.json), "also write the results as JSON to this file")
      ("filter", po::value(&a.filter), "run only cases whose name contains this text")
      ("seed", po::value(&a.seed)->default_value(a.seed), "seed of the suite's random inputs")
      ("list", po::bool_switch(&a.list), "list the cases and exit")
      ("world", po::value(&a.world), "also run every strategy's Plan on N CPU ranks against the single-device reference")
      ("mesh", po::value(&a.mesh), "like --world on a 2-D REPLICATExSHARD mesh, e.g. 2x2")
      ("model", po::value(&a.model), "model YAML for --world/--mesh/--print-plan (default: a built-in tiny MoE model)")
      ("print-plan", po::value(&a.print_plan), "print the Plan of this strategy on --world/--mesh and exit")
      ("print-ops", po::value(&a.print_ops)->default_value(a.print_ops), "ops shown per rank by --print-plan");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: dmuon-verify [options]\n" << opts;
    return false;
  }
  po::notify(vm);
#ifdef DMUON_HAVE_NCCL
  if (a.backend == "nccl") return true;  // --world N = GPUs (default 2); see harness/dmuon_verify_nccl.hpp
#endif
#ifdef DMUON_HAVE_CUDA
  if (a.backend != "cpu" && a.backend != "cuda") {
    throw Error("--backend: '" + a.backend + "' is not available in this build (available: cpu, cuda)");
  }
  if (a.backend == "cuda" && (a.world > 0 || !a.mesh.empty())) {
    throw Error("--backend cuda: --world/--mesh run on CPU ranks; use --backend cpu");
  }
#else
  if (a.backend != "cpu") {
    throw Error("--backend: '" + a.backend + "' is not available in this build (available: cpu)");
  }
#endif
  if (a.suite != "quick" && a.suite != "full" && a.suite != "none") {
    throw Error("--suite: expected quick, full or none, got '" + a.suite + "'");
  }
  if (a.print_ops < 0) throw Error("--print-ops: must be >= 0");
  return true;
}

// --print-plan: the same planner the executors use (owners balanced on an H100 roofline).
void print_strategy_plan(const Args& a) {
  const Strategy strategy = parse_strategy(a.print_plan, "--print-plan");
  const ModelSpec model = a.model.empty() ? verify::distributed_test_model() : load_model_file(a.model);
  const Routing routing = route_parameters(model, {});
  const OptimizerConfig config = optimizer_preset("dmuon");
  const StepPlan sp = plan_step(model, routing, config, strategy, mesh_of(a), CostModel(device_profile("h100-sxm")));
  print_plan(std::cout, sp.plan, model, routing, a.print_ops);
}

std::vector<verify::VerifyCase> filtered(std::vector<verify::VerifyCase> all, const Args& a) {
  std::vector<verify::VerifyCase> chosen;
  for (auto& c : all) {
    if (a.filter.empty() || c.name.find(a.filter) != std::string::npos) chosen.push_back(std::move(c));
  }
  if (chosen.empty()) throw Error("no case selected (check --suite, --golden and --filter)");
  return chosen;
}

std::vector<verify::VerifyCase> select_cases(const Args& a) {
  std::vector<verify::VerifyCase> all;
#ifdef DMUON_HAVE_NCCL
  if (a.backend == "nccl") return filtered(verify::nccl_cases(a.world > 0 ? a.world : 2, a.model, a.seed), a);
#endif
#ifdef DMUON_HAVE_CUDA
  if (a.backend == "cuda") {
    if (a.suite != "none") all = verify::cuda_builtin_cases(a.suite == "full", a.seed);
    for (const auto& dir : a.golden) {
      for (auto& c : verify::cuda_golden_cases(dir)) all.push_back(std::move(c));
    }
    return filtered(std::move(all), a);
  }
#endif
  if (a.suite != "none") all = verify::builtin_cases({a.suite == "full", a.seed});
  if (a.world > 0 || !a.mesh.empty()) {
    verify::DistributedOptions d;
    d.mesh = mesh_of(a);
    d.model_file = a.model;
    d.seed = a.seed;
    for (auto& c : verify::distributed_cases(d)) all.push_back(std::move(c));
  }
  for (const auto& dir : a.golden) {
    for (auto& c : verify::load_golden_cases(dir)) all.push_back(std::move(c));
  }
  return filtered(std::move(all), a);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<verify::VerifyCase> cases;
  try {
    if (!parse_args(argc, argv, args)) return 0;
    if (!args.print_plan.empty()) {
      print_strategy_plan(args);
      return 0;
    }
    cases = select_cases(args);
  } catch (const po::error& e) {
    std::cerr << "dmuon-verify: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "dmuon-verify: " << e.what() << "\n";
    return 2;
  }
  if (args.list) {
    for (const auto& c : cases) std::cout << c.name << "\n";
    return 0;
  }
  std::vector<verify::CaseResult> results;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::cerr << "[" << i + 1 << "/" << cases.size() << "] " << cases[i].name << "\n";
    try {
      for (auto& r : cases[i].run()) {
        verify::print_result(std::cout, r);
        results.push_back(std::move(r));
      }
    } catch (const Error& e) {
      // A case that cannot run (shape mismatch in a golden file...) is a failed check.
      verify::CaseResult r;
      r.name = cases[i].name;
      r.detail = e.what();
      verify::print_result(std::cout, r);
      results.push_back(std::move(r));
    }
  }
  verify::print_summary(std::cout, results);
  if (!args.json.empty()) {
    try {
      verify::write_json_report(args.json, args.backend, command_line(argc, argv), results);
    } catch (const Error& e) {
      std::cerr << "dmuon-verify: " << e.what() << "\n";
      return 2;
    }
  }
  for (const auto& r : results) {
    if (!r.passed) return 1;
  }
  return 0;
}
