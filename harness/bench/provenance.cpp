#include "harness/bench/provenance.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "core/error.hpp"

namespace dmuon::bench {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);  // not std::gmtime: the rank threads may ask at once
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return buf;
}

std::string command_line(int argc, char** argv) {
  std::string c = "dmuon-bench";
  for (int i = 0; i < argc; ++i) c += std::string(" ") + argv[i];
  return c;
}

std::string git_commit() {
  FILE* pipe = popen("git rev-parse --short HEAD 2>/dev/null", "r");
  if (!pipe) return "";
  std::array<char, 64> buf{};
  std::string out;
  while (fgets(buf.data(), buf.size(), pipe)) out += buf.data();
  if (pclose(pipe) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string profile_for_gpu(const std::string& gpu_name) {
  std::string upper = gpu_name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper.find("H100") != std::string::npos) return "h100-sxm";
  if (upper.find("H200") != std::string::npos) return "h200";
  if (upper.find("A800") != std::string::npos) return "a800-sxm4-80gb";
  throw Error("no device profile for GPU '" + gpu_name + "': pass --profile NAME");
}

}  // namespace dmuon::bench
