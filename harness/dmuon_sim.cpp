// dmuon-sim: one training step of every strategy of a scenario on a simulated cluster.
//   dmuon-sim --scenario scenarios/16node.yaml [--strategy S]... [--mode fast|flows]
//             [--json FILE] [--csv FILE] [--trace FILE] [--sweep key=v1,v2,...]
//             [--validate reports/step-<machine>.json] [--calibration FILE] [--host-memory-GiB G]
// Exit 0 when every strategy was simulated; 1 when one could not be (it does not fit the GPU's
// memory, or the scenario lacks what the simulator needs: its row says why, and one line on
// stderr counts them); 2 on bad arguments or input (one line on stderr naming what is wrong).
#include <boost/program_options.hpp>
#include <algorithm>
#include <iostream>
#include <thread>
#include <sstream>

#include "core/error.hpp"
#include "core/io/provenance.hpp"
#include "harness/sim/sim_report.hpp"
#include "harness/sim/sim_validate.hpp"
#include "sim/memory_estimate.hpp"

namespace po = boost::program_options;
using namespace dmuon;

namespace {

struct Args {
  std::string scenario, mode, json, csv, trace, sweep, validate, calibration, command;
  std::vector<std::string> strategies;
  int trace_nodes = 2;
  double host_memory_GiB = 0;  // 0: MemAvailable
  bool per_rank = false;       // build every rank's Plan and program (no replica fold)
  int parallel = std::max(1u, std::thread::hardware_concurrency());
};

bool parse(int argc, char** argv, Args& a) {
  po::options_description o("dmuon-sim options");
  o.add_options()("help,h", "show this help")
      ("scenario", po::value(&a.scenario), "scenario YAML (model, optimizer, strategies, cluster, training)")
      ("strategy", po::value(&a.strategies)->composing(), "simulate only these (repeatable; default: the scenario's)")
      ("mode", po::value(&a.mode), "fast | flows (default: the scenario's simulation.mode, else fast)")
      ("calibration", po::value(&a.calibration), "calibration YAML (measured NS times) for the cost model")
      ("json", po::value(&a.json), "write every figure as JSON")
      ("csv", po::value(&a.csv), "write one row per collective (bytes, seconds, algbw, busbw)")
      ("trace", po::value(&a.trace), "Chrome trace (Perfetto); FILE-<strategy>.json per strategy")
      ("trace-nodes", po::value(&a.trace_nodes)->default_value(a.trace_nodes), "nodes the trace shows (0 = all)")
      ("parallel", po::value(&a.parallel)->default_value(a.parallel), "strategies simulated at once (one process each)")
      ("host-memory-GiB", po::value(&a.host_memory_GiB),
       "host memory the simulations may use (default: MemAvailable); a larger estimate is refused up front")
      ("sweep", po::value(&a.sweep), "key=v1,v2,... e.g. nodes=1,2,4,8,16 or training.mfu=0.3,0.4")
      ("validate", po::value(&a.validate), "measured dmuon-bench step report: prediction vs measurement")
      ("per-rank", po::bool_switch(&a.per_rank),
       "build every rank's Plan and step program and simulate every GPU, not the template replicas' (replica 0's, or the owner strategies' owner-free ones) moved to the others (the reference the fold and the lockstep must equal)");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(o).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: dmuon-sim --scenario FILE [options]\n" << o;
    return false;
  }
  po::notify(vm);
  if (a.scenario.empty() && a.validate.empty()) throw Error("--scenario: required");
  if (a.parallel < 1) throw Error("--parallel: must be >= 1, got " + std::to_string(a.parallel));
  if (vm.count("host-memory-GiB") && !(a.host_memory_GiB > 0)) {
    throw Error("--host-memory-GiB: must be > 0, got " + std::to_string(a.host_memory_GiB));
  }
  a.command = command_line(argc, argv);
  return true;
}

SimMode mode_of(const Args& a, SimMode scenario_mode) {
  if (a.mode.empty()) return scenario_mode;
  if (a.mode == "fast") return SimMode::fast;
  if (a.mode == "flows") return SimMode::flows;
  throw Error("--mode: '" + a.mode + "' is not fast or flows");
}

// nodes -> cluster.nodes, mfu -> training.mfu; a dotted key is taken as it is.
std::string sweep_path(const std::string& key) {
  for (const char* k : {"nodes", "gpus_per_node", "gpu", "gpu_memory_GiB"}) {
    if (key == k) return "cluster." + key;
  }
  for (const char* k : {"seq_len", "micro_batch", "mfu", "peak_tflops", "prefetch_layers", "reshard_after_forward"}) {
    if (key == k) return "training." + key;
  }
  return key;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int run(const Args& a) {
  if (!a.validate.empty()) {
    const SimMode mode = mode_of(a, SimMode::fast);
    const auto v = simcli::validate(a.validate, a.scenario, a.calibration, mode);
    simcli::print_validation(std::cout, v);
    if (!a.json.empty()) simcli::write_validation_json(a.json, v, a.command);
    return 0;
  }
  std::vector<std::pair<std::string, std::string>> points{{"", ""}};  // (label, value)
  std::string path;
  if (!a.sweep.empty()) {
    const auto eq = a.sweep.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--sweep: expected key=v1,v2,..., got '" + a.sweep + "'");
    path = sweep_path(a.sweep.substr(0, eq));
    points.clear();
    for (const auto& v : split(a.sweep.substr(eq + 1), ',')) points.push_back({a.sweep.substr(0, eq) + "=" + v, v});
    if (points.empty()) throw Error("--sweep: no values after '='");
  }
  std::vector<simcli::ScenarioRun> runs;
  std::size_t done = 0, total = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    Scenario sc = path.empty() ? load_scenario(a.scenario)
                               : load_scenario_with_overrides(a.scenario, {{path, points[i].second}});
    sc.sim_mode = mode_of(a, sc.sim_mode);
    std::vector<Strategy> strategies;
    for (const auto& s : a.strategies) strategies.push_back(parse_strategy(s, "--strategy"));
    if (strategies.empty()) strategies = sc.strategies;
    if (total == 0) total = strategies.size() * points.size();
    const CostModel cost = sim::scenario_cost_model(sc, a.calibration);
    sim::RunOptions options;
    options.sim.mode = sc.sim_mode;
    options.sim.trace_file = a.trace;
    options.sim.trace_nodes = a.trace_nodes;
    options.program.fold_replicas = !a.per_rank;
    if (a.host_memory_GiB > 0) {
      options.host_memory_limit_bytes = a.host_memory_GiB * 1024 * 1024 * 1024;
      options.host_memory_limit_source = "--host-memory-GiB allows";
    } else {
      options.host_memory_limit_bytes = sim::host_memory_available_bytes();
      options.host_memory_limit_source = "available on this host (MemAvailable; --host-memory-GiB sets it)";
    }
    std::vector<sim::RunOptions> per_strategy;
    for (Strategy s : strategies) {
      sim::RunOptions mine = options;
      if (!a.trace.empty()) {
        std::string suffix = strategies.size() > 1 ? std::string(to_string(s)) : "";
        if (points.size() > 1) suffix += (suffix.empty() ? "" : "-") + points[i].second;
        if (!suffix.empty()) mine.sim.trace_file = simcli::with_suffix(a.trace, suffix);
      }
      per_strategy.push_back(mine);
    }
    auto progress = [&](std::size_t) {
      ++done;
      std::cerr << "\r[" << std::string(20 * done / total, '#') << std::string(20 - 20 * done / total, ' ') << "] " << done
                << "/" << total << " " << points[i].first << std::string(20, ' ') << std::flush;
    };
    simcli::ScenarioRun run = simcli::run_scenario(sc, strategies, cost, per_strategy, a.parallel, points[i].first, progress);
    std::cerr << "\r[" << std::string(20, '#') << "] " << done << "/" << total << std::string(40, ' ') << "\n";
    simcli::print_table(std::cout, run);
    runs.push_back(std::move(run));
  }
  if (!a.sweep.empty()) simcli::print_scaling_table(std::cout, a.sweep.substr(0, a.sweep.find('=')), runs);
  if (!a.json.empty()) simcli::write_json(a.json, runs, a.command);
  if (!a.csv.empty()) simcli::write_csv(a.csv, runs);
  std::size_t failed = 0, rows = 0;
  std::string first;
  for (const auto& run : runs) {
    for (const auto& row : run.rows) {
      ++rows;
      if (row.result) continue;
      if (failed++ == 0) first = std::string(to_string(row.strategy)) + ": " + row.error;
    }
  }
  if (failed == 0) return 0;
  std::cerr << "dmuon-sim: " << failed << " of " << rows << " strategy runs not simulated (first: " << first << ")\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a;
    if (!parse(argc, argv, a)) return 0;
    return run(a);
  } catch (const po::error& e) {
    std::cerr << "dmuon-sim: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "dmuon-sim: " << e.what() << "\n";
    return 2;
  }
}
