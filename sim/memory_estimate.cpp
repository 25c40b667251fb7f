#include "sim/memory_estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/plan/step_planner.hpp"
#include "core/plan/strategy.hpp"

namespace dmuon::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Peak RSS = kBaseBytes + GPUs x (params x a + matrices x b + kPlatformBytesPerGpu). a per
// strategy (how many Plan and step-program ops a rank holds per parameter, growing with the
// simulated steps): its traits sim_host_bytes_per_param[_per_extra_step] (core/plan/strategy.hpp),
// fitted to the slope of peak RSS between 512 and 1,024 GPUs of 16node.yaml (991 parameters,
// 540 matrices) less the flat zone's routes (then charged at 164 B each), plus 25%; b = a / 4 from
// dedicated on qwen3-30b-a3b (579 parameters, 18,624 matrices: one
// owner's broadcast per matrix, coalesced per layer). With the replicas folded (a replica-symmetric
// strategy on several nodes) a is the traits' *_folded, fitted the same way with the replicas in
// lockstep (sim/replica_lockstep.hpp: replica 0's GPUs simulated), as they are on every layout
// mesh_for_cluster gives (one replica a node; tests/test_sim_replica_lockstep.cpp), from 512 and
// 1,024 GPUs (reports/measured/sim-speed-2026-11-27-lockstep/rss-steps.txt). The last term is the SimGrid platform
// (sim/platform.cpp): a host and about 4 links per GPU, routes computed on demand. Building it
// alone (an Engine, a Topology of 8 GPUs and 8 NICs a node, build_platform; VmRSS after minus
// before, 2026-11-26) took 3,722 B per GPU from 1,024 to 16,384 GPUs (30 MB at 8,192), plus 25%;
// the flat zone it replaced took 119 B per ordered GPU pair (127 MB at 1,024, 8 GB at 8,192).
constexpr double kBaseBytes = 64e6;
constexpr double kPlatformBytesPerGpu = 4700;

}  // namespace

SimMemoryEstimate estimate_sim_memory(const Scenario& scenario, Strategy strategy, const Routing& routing, bool folded) {
  SimMemoryEstimate e;
  e.gpus = scenario.cluster.world_size();
  e.params = static_cast<std::int64_t>(scenario.model.params.size());
  const StrategyTraits t = traits(strategy);
  e.matrices = t.ns_ranks == NsRanks::none ? 0 : static_cast<std::int64_t>(routing.muon_matrices.size());
  const Mesh mesh = mesh_for_cluster(scenario.cluster);
  // The fold needs several replicas, as the planner lays the cluster out.
  e.folded = folded && t.sim_host_bytes_per_param_folded > 0 && mesh.replicate > 1;
  e.bytes_per_param = e.folded ? t.sim_host_bytes_per_param_folded +
                                     (scenario.sim_steps - 1) * t.sim_host_bytes_per_param_per_extra_step_folded
                               : t.sim_host_bytes_per_param + (scenario.sim_steps - 1) * t.sim_host_bytes_per_param_per_extra_step;
  e.bytes_per_matrix = e.bytes_per_param / 4;
  const double gpus = double(e.gpus);
  const double per_gpu = double(e.params) * e.bytes_per_param + double(e.matrices) * e.bytes_per_matrix;
  e.bytes = kBaseBytes + gpus * (per_gpu + kPlatformBytesPerGpu);
  // The owner strategies, folded onto templates when at least a quarter of the replicas would
  // run another's lists (core/plan/plan_builders.cpp, owner_templates): the templates' GPUs as
  // above, the others' copies at sim_host_bytes_per_param_copied. How many templates there are
  // is known only once the owners are assigned: at most one replica per Muon matrix, the
  // owner-free template and the replicas promoted for their launch order (sim/replica_fold.hpp;
  // one at 2,048 to 8,192 GPUs of 16node.yaml), counted here as two.
  const std::int64_t template_bound = std::min<std::int64_t>(mesh.replicate, e.matrices + 3);
  if (folded && t.sim_host_bytes_per_param_copied > 0 && mesh.replicate > 1 &&
      4 * (mesh.replicate - template_bound) >= mesh.replicate) {
    e.templates = template_bound;
    const double built = double(template_bound) * mesh.shard;
    e.bytes_per_param_copied = t.sim_host_bytes_per_param_copied * scenario.sim_steps;
    e.bytes = kBaseBytes + built * per_gpu + (gpus - built) * double(e.params) * e.bytes_per_param_copied +
              gpus * kPlatformBytesPerGpu;
  }
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
  char what[400];
  if (e.templates > 0) {
    std::snprintf(what, sizeof what,
                  "up to %lld template replicas' GPUs x (%lld parameters x %.0f B + %lld Muon matrices x %.0f B), the "
                  "other GPUs x %lld parameters x %.0f B of copies, %lld GPUs x %.0f B platform",
                  static_cast<long long>(e.templates), static_cast<long long>(e.params), e.bytes_per_param,
                  static_cast<long long>(e.matrices), e.bytes_per_matrix, static_cast<long long>(e.params),
                  e.bytes_per_param_copied, static_cast<long long>(e.gpus), kPlatformBytesPerGpu);
  } else {
    std::snprintf(what, sizeof what, "%lld GPUs x (%lld parameters x %.0f B + %lld Muon matrices x %.0f B + %.0f B platform)",
                  static_cast<long long>(e.gpus), static_cast<long long>(e.params), e.bytes_per_param,
                  static_cast<long long>(e.matrices), e.bytes_per_matrix, kPlatformBytesPerGpu);
  }
  char buf[800];
  std::snprintf(buf, sizeof buf,
                "strategy %s: simulating %lld GPUs needs an estimated %.1f GiB of host memory (%s + %.0f MB), over "
                "the %.1f GiB %s; not started: use fewer nodes or a larger machine",
                std::string(to_string(strategy)).c_str(), static_cast<long long>(e.gpus), e.bytes / kGiB, what,
                kBaseBytes / 1e6, limit_bytes / kGiB, limit_source.c_str());
  throw Error(buf);
}

}  // namespace dmuon::sim
