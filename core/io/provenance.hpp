// Where a written figure came from, stamped the same way by every tool (dmuon-sim's JSON,
// dmuon-bench's reports, traces and calibration files): the command line, the UTC date, the host,
// and the commit when git knows it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace dmuon {

// "2026-11-23 11:02:05 UTC": the one date format of every file a tool writes.
std::string utc_now();
// argv joined by spaces, after `program` when given: command_line(argc, argv) is the command as
// typed; command_line(argc, argv, "dmuon-bench") for a subcommand whose argv[0] is its name.
std::string command_line(int argc, char** argv, const std::string& program = "");
// `git rev-parse --short HEAD` of the working directory; "" when git or a repository is missing
// (the GPU machine gets a copy of the tree without .git: pass the commit there).
std::string git_commit();

// "<hostname>, <CPU model>, <n> logical CPUs": the host a figure was taken on. GPU machines are
// lent per call, and their hosts differ (the same FSDP2 step took 223 and 151 ms on two 2 x H200
// leases, reports/sim-validation.md): without the host, two runs cannot be told apart.
std::string host_description();

// {"command": command, "date": date, "host": host_description()}: the provenance keys of every
// JSON file and trace.
nlohmann::json provenance_json(const std::string& command, const std::string& date);

}  // namespace dmuon
