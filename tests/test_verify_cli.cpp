// dmuon-verify's command line: exit codes and one-line errors for bad arguments and input.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "run_command.hpp"
#include "test_temp_dir.hpp"

namespace {

using Outcome = CommandOutcome;

Outcome run(const std::string& args) { return run_command(std::string(DMUON_VERIFY_EXE), args); }

}  // namespace

TEST_CASE("bad arguments exit 2 with one clear line", "[cli]") {
  auto o = run("--backend tpu");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--backend: 'tpu' is not available") != std::string::npos);
  o = run("--suite huge");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--suite") != std::string::npos);
  o = run("--no-such-flag");
  CHECK(o.exit_code == 2);
  o = run("--suite none --golden /nonexistent/dir");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("/nonexistent/dir/manifest.json: golden manifest not found") != std::string::npos);
  o = run("--filter no-case-has-this-name");
  CHECK(o.exit_code == 2);
}

TEST_CASE("a passing selection prints lines and the summary, exit 0", "[cli]") {
  const auto o = run("--filter adamw/torch");
  CHECK(o.exit_code == 0);
  CHECK(o.output.find("PASS  adamw/torch/closed-form-3-steps") != std::string::npos);
  CHECK(o.output.find("1 passed, 0 failed") != std::string::npos);
}

TEST_CASE("--json writes the results with the provenance stamp every tool writes", "[cli]") {
  const std::string file = (dmuon::test::temp_dir() / "verify.json").string();
  const auto o = run("--filter adamw/torch --json " + file);
  REQUIRE(o.exit_code == 0);
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  CHECK(j.at("tool") == "dmuon-verify");
  CHECK(j.at("passed") == 1);
  CHECK(j.at("failed") == 0);
  CHECK(j.at("cases").size() == 1);
  // The command as typed (program name first) and a "YYYY-MM-DD HH:MM:SS UTC" date.
  CHECK(j.at("command").get<std::string>().find("--filter adamw/torch --json") != std::string::npos);
  const std::string date = j.at("date").get<std::string>();
  CHECK(date.size() == 23);
  CHECK(date.substr(19) == " UTC");
}

TEST_CASE("--list names cases without running them", "[cli]") {
  const auto o = run("--list");
  CHECK(o.exit_code == 0);
  CHECK(o.output.find("ns/mlp-class-512x1376/dmuon") != std::string::npos);
  CHECK(o.output.find("passed") == std::string::npos);
}

TEST_CASE("--world runs every strategy's plan on CPU ranks against the single-device reference", "[cli][distributed]") {
  const auto o = run("--suite none --world 3");
  CHECK(o.exit_code == 0);
  for (const char* strategy : {"adamw", "ddp-redundant", "fsdp-gather", "zero1-a2a", "dedicated"}) {
    INFO(strategy);
    CHECK(o.output.find(std::string("PASS  dist/") + strategy + "/mesh3/dmuon/ranks-agree") != std::string::npos);
  }
  // dedicated on a 1-D mesh reduces in rank order: bitwise equal to the reference.
  const auto line = o.output.find("PASS  dist/dedicated/mesh3/torch/muon-vs-single-device");
  REQUIRE(line != std::string::npos);
  CHECK(o.output.find("bitwise", line) < o.output.find('\n', line));
  CHECK(o.output.find("0 failed") != std::string::npos);
}

TEST_CASE("--mesh and --print-plan reject bad values with one line", "[cli][distributed]") {
  auto o = run("--suite none --mesh 2x");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--mesh: expected REPLICATExSHARD") != std::string::npos);
  o = run("--suite none --mesh 2x2 --world 4");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("give one of them") != std::string::npos);
  o = run("--print-plan fastest");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--print-plan") != std::string::npos);
  o = run("--print-plan dedicated --world 2 --print-ops 3");
  CHECK(o.exit_code == 0);
  CHECK(o.output.find("plan dedicated on mesh 2") != std::string::npos);
}
