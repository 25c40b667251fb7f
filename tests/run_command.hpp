// Runs a command-line program of the project with arguments and captures what it prints, for
// the CLI tests (exit codes and one-line errors).
#pragma once
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "catch_compat.hpp"

struct CommandOutcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline CommandOutcome run_command(const std::string& exe, const std::string& args) {
  const std::string command = exe + " " + args + " 2>&1";
  CommandOutcome o;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) o.output += buffer.data();
  const int status = pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

inline long output_lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// A usage error as the CLIs report one: exit 2 and exactly one line, which contains `message`.
inline void check_usage_error(const CommandOutcome& o, const std::string& message) {
  INFO(o.output);
  CHECK(o.exit_code == 2);
  CHECK(output_lines(o.output) == 1);
  CHECK(o.output.find(message) != std::string::npos);
}
