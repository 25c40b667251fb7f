// dmuon-verify: the numerics regression tool and CI gate. Runs the built-in suite and/or
// golden cases against the Eigen reference; prints a line per check, then "N passed, M failed".
// Exit 0: all passed; 1: a check failed; 2: bad arguments or input.
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/error.hpp"
#include "harness/verify/builtin_suite.hpp"
#include "harness/verify/golden.hpp"

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
};

// Returns false when --help was printed.
bool parse_args(int argc, char** argv, Args& a) {
  po::options_description opts("dmuon-verify options");
  opts.add_options()
      ("help,h", "show this help")
      ("backend", po::value(&a.backend)->default_value(a.backend),
       "cpu (Eigen reference); cuda and nccl come with the kernels and executor")
      ("suite", po::value(&a.suite)->default_value(a.suite),
       "quick | full (adds 4096x11008 for the dmuon preset: tens of minutes) | none")
      ("golden", po::value(&a.golden)->composing(), "directory with manifest.json and .npy files (repeatable)")
      ("json", po::value(&a.json), "also write the results as JSON to this file")
      ("filter", po::value(&a.filter), "run only cases whose name contains this text")
      ("seed", po::value(&a.seed)->default_value(a.seed), "seed of the suite's random inputs")
      ("list", po::bool_switch(&a.list), "list the cases and exit");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: dmuon-verify [options]\n" << opts;
    return false;
  }
  po::notify(vm);
  if (a.backend != "cpu") {
    throw Error("--backend: '" + a.backend + "' is not available in this build (available: cpu)");
  }
  if (a.suite != "quick" && a.suite != "full" && a.suite != "none") {
    throw Error("--suite: expected quick, full or none, got '" + a.suite + "'");
  }
  return true;
}

std::vector<verify::VerifyCase> select_cases(const Args& a) {
  std::vector<verify::VerifyCase> all;
  if (a.suite != "none") all = verify::builtin_cases({a.suite == "full", a.seed});
  for (const auto& dir : a.golden) {
    for (auto& c : verify::load_golden_cases(dir)) all.push_back(std::move(c));
  }
  std::vector<verify::VerifyCase> chosen;
  for (auto& c : all) {
    if (a.filter.empty() || c.name.find(a.filter) != std::string::npos) chosen.push_back(std::move(c));
  }
  if (chosen.empty()) throw Error("no case selected (check --suite, --golden and --filter)");
  return chosen;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<verify::VerifyCase> cases;
  try {
    if (!parse_args(argc, argv, args)) return 0;
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
      verify::write_json_report(args.json, args.backend, results);
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
