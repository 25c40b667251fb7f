// dmuon-verify's command line: exit codes and one-line errors for bad arguments and input.
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "catch_compat.hpp"

namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Outcome run(const std::string& args) {
  const std::string command = std::string(DMUON_VERIFY_EXE) + " " + args + " 2>&1";
  Outcome o;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) o.output += buffer.data();
  const int status = pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

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

TEST_CASE("--list names cases without running them", "[cli]") {
  const auto o = run("--list");
  CHECK(o.exit_code == 0);
  CHECK(o.output.find("ns/mlp-class-512x1376/dmuon") != std::string::npos);
  CHECK(o.output.find("passed") == std::string::npos);
}
