#include "sim/memory_estimate.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Peak RSS = kBaseBytes + GPUs x (kBytesPerGpu + items x bytes per GPU and item) + GPUs^2 x
// kBytesPerRoute: the per-item term per strategy (how many Plan and step-program ops a rank
// holds per parameter), the last SimGrid's flat zone, one route per ordered pair of GPUs
// (sim/platform.cpp; 172 MB at 1,024 GPUs, sim-anchors.md 1.2).
constexpr double kBaseBytes = 64e6;
constexpr double kBytesPerGpu = 120e3;
constexpr double kBytesPerRoute = 164;

double bytes_per_gpu_item(Strategy s) {
  switch (s) {
    case Strategy::adamw: return 3.0e3;
    case Strategy::ddp_redundant: return 3.0e3;
    case Strategy::fsdp_gather: return 6.0e3;
    case Strategy::zero1_a2a: return 6.0e3;
    case Strategy::dedicated: return 3.0e3;
    default: return 6.0e3;
  }
}

}  // namespace

SimMemoryEstimate estimate_sim_memory(const Scenario& scenario, Strategy strategy, const Routing& routing) {
  SimMemoryEstimate e;
  e.gpus = scenario.cluster.world_size();
  e.items = static_cast<std::int64_t>(scenario.model.params.size() + routing.muon_matrices.size());
  e.bytes_per_gpu_item = bytes_per_gpu_item(strategy);
  e.bytes_per_gpu = kBytesPerGpu;
  const double gpus = double(e.gpus);
  e.bytes = kBaseBytes + gpus * (kBytesPerGpu + double(e.items) * e.bytes_per_gpu_item) + gpus * gpus * kBytesPerRoute;
  return e;
}

double host_memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

void check_sim_memory(const SimMemoryEstimate& e, Strategy strategy, double limit_bytes, const std::string& limit_source) {
  if (!(limit_bytes > 0) || e.bytes <= limit_bytes) return;
  char buf[600];
  std::snprintf(buf, sizeof buf,
                "strategy %s: simulating %lld GPUs needs an estimated %.1f GiB of host memory (%lld GPUs x (%lld "
                "parameters and Muon matrices x %.0f B + %.0f kB) + %lld^2 routes x %.0f B + %.0f MB), over the %.1f "
                "GiB %s; not started: use fewer nodes or a larger machine",
                std::string(to_string(strategy)).c_str(), static_cast<long long>(e.gpus), e.bytes / kGiB,
                static_cast<long long>(e.gpus), static_cast<long long>(e.items), e.bytes_per_gpu_item,
                e.bytes_per_gpu / 1e3, static_cast<long long>(e.gpus), kBytesPerRoute, kBaseBytes / 1e6,
                limit_bytes / kGiB, limit_source.c_str());
  throw Error(buf);
}

}  // namespace dmuon::sim
