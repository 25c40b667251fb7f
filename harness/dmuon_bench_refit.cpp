#include "harness/dmuon_bench_refit.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "core/cost/calibration.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/step_overhead.hpp"
#include "core/error.hpp"
#include "core/io/file_read.hpp"
#include "core/io/scenario.hpp"
#include "harness/bench/step_launch_probe.hpp"

namespace po = boost::program_options;

namespace dmuon::bench {
namespace {

constexpr const char* kKey = "local_collective_step_overhead_us:";

// The file with its one top-level `local_collective_step_overhead_us:` line replaced.
std::string with_overhead(const std::string& text, const std::string& file, double overhead_us) {
  std::istringstream in(text);
  std::ostringstream out;
  std::string line;
  int found = 0;
  while (std::getline(in, line)) {
    if (line.rfind(kKey, 0) == 0) {
      std::ostringstream v;
      v.precision(17);
      v << overhead_us;
      line = std::string(kKey) + " " + v.str();
      ++found;
    }
    out << line << '\n';
  }
  if (found != 1) {
    throw Error(file + ": local_collective_step_overhead_us: expected one top-level line, found " + std::to_string(found));
  }
  return out.str();
}

}  // namespace

int refit_overhead_command(int argc, char** argv) {
  std::string scenario_file, calibration_file;
  double phase_ms = 0;
  po::options_description o("dmuon-bench refit-overhead options");
  o.add_options()("help,h", "show this help")
      ("scenario", po::value(&scenario_file)->required(), "the calibration's scenario (its probe ran its adamw Plan on one GPU)")
      ("calibration", po::value(&calibration_file)->required(), "one-GPU calibration YAML, rewritten in place")
      ("phase-ms", po::value(&phase_ms)->required(), "the probe's forward/backward phase, ms (calibrate's log)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, o), vm);
    if (vm.count("help")) {
      std::cout << "usage: dmuon-bench refit-overhead --scenario FILE --calibration FILE --phase-ms X\n" << o;
      return 0;
    }
    po::notify(vm);
    if (!(phase_ms > 0) || !std::isfinite(phase_ms)) throw Error("--phase-ms: expected a positive number of ms");
    const Scenario scenario = load_scenario(scenario_file);
    const CalibrationTable table = load_calibration(calibration_file);
    if (!table.executor_issue_us) throw Error(calibration_file + ": executor_issue_us: missing (no probe to refit)");
    if (!table.local_collective_step_overhead_us) throw Error(calibration_file + ": local_collective_step_overhead_us: missing");
    const CostModel cost(device_profile(table.gpu, "gpu"), table);
    const StepPlan sp = step_probe_plan(scenario, 1);
    const CurvePricedCollectives priced = curve_priced_collectives(sp.plan, 0, cost);
    const double issue_s = *table.executor_issue_us * 1e-6;
    const double overhead_s = local_step_overhead_seconds(phase_ms * 1e-3, priced, issue_s);
    const std::string text = with_overhead(read_regular_file(calibration_file), calibration_file, overhead_s * 1e6);
    std::ofstream out(calibration_file, std::ios::binary);
    if (!out) throw Error(calibration_file + ": cannot open for writing");
    out << text;
    if (!out.flush()) throw Error(calibration_file + ": write failed");
    std::cerr << "dmuon-bench refit-overhead: " << calibration_file << ": local_collective_step_overhead_us "
              << *table.local_collective_step_overhead_us << " -> " << overhead_s * 1e6 << " (phase " << phase_ms << " ms, "
              << priced.launches << " launches, each issued " << *table.executor_issue_us << " us after the last)\n";
    return 0;
  } catch (const po::error& e) {
    std::cerr << "dmuon-bench refit-overhead: " << e.what() << "\n";
  } catch (const Error& e) {
    std::cerr << "dmuon-bench refit-overhead: " << e.what() << "\n";
  }
  return 2;
}

}  // namespace dmuon::bench
