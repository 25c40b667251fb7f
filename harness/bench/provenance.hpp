// Where a benchmark figure came from: the command, the date and the commit, written the same
// way by every dmuon-bench subcommand (reports and calibration files name them).
#pragma once
#include <string>

namespace dmuon::bench {

// "2026-11-23 11:02:05 UTC".
std::string utc_now();
// "dmuon-bench <argv[0]> <argv[1]> ...": argv[0] is the subcommand's name.
std::string command_line(int argc, char** argv);
// `git rev-parse --short HEAD` of the working directory; "" when git or a repository is missing
// (the GPU machine gets a copy of the tree without .git: pass the commit there).
std::string git_commit();
// The device profile (core/device_profile.hpp) of a GPU by its CUDA name: "NVIDIA H100 80GB
// HBM3" -> "h100-sxm". Throws dmuon::Error asking for --profile when none matches.
std::string profile_for_gpu(const std::string& gpu_name);

}  // namespace dmuon::bench
