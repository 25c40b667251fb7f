#include "core/io/provenance.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

namespace dmuon {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);  // not std::gmtime: the rank threads may ask at once
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return buf;
}

std::string command_line(int argc, char** argv, const std::string& program) {
  std::string c = program;
  for (int i = 0; i < argc; ++i) c += (i == 0 && program.empty() ? "" : " ") + std::string(argv[i]);
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

std::string host_description() {
  std::array<char, 256> name{};
  const std::string host = gethostname(name.data(), name.size() - 1) == 0 ? name.data() : "unknown host";
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    const auto colon = line.find(':');
    if (line.rfind("model name", 0) == 0 && colon != std::string::npos && colon + 2 <= line.size()) {
      cpu = line.substr(colon + 2);
      break;
    }
  }
  return host + ", " + cpu + ", " + std::to_string(std::thread::hardware_concurrency()) + " logical CPUs";
}

nlohmann::json provenance_json(const std::string& command, const std::string& date) {
  return {{"command", command}, {"date", date}, {"host", host_description()}};
}

}  // namespace dmuon
