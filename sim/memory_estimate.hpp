// Host memory one strategy's simulation needs, estimated before anything is built, so that a
// scenario too large for this machine is refused with the figure instead of being killed by
// the OS half-way (the Plan, the step program and SimGrid's actors all grow with GPUs x
// parameters). SimGrid-free.
#pragma once
#include <string>

#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"

namespace dmuon::sim {

struct SimMemoryEstimate {
  double bytes = 0;            // peak resident bytes of the simulation process
  std::int64_t gpus = 0;       // cluster.nodes x cluster.gpus_per_node
  std::int64_t params = 0;     // what a rank's op list grows with: its parameters (FSDP pieces,
  std::int64_t matrices = 0;   // AdamW) and, under Muon, its matrices (an MoE stack holds many)
  double bytes_per_param = 0;  // per GPU
  double bytes_per_matrix = 0;
  bool folded = false;         // priced with the strategy's folded coefficients
  // The owner strategies folded onto templates: the templates counted (an upper bound), and
  // per parameter what a GPU of another replica costs (all steps).
  std::int64_t templates = 0;
  double bytes_per_param_copied = 0;
};

// A linear fit of measured peak RSS (reports/sim-speed.md: 128 to 1,024 GPUs of
// scenarios/16node.yaml, every strategy, and qwen3-30b-a3b-16node's 18,624 expert matrices),
// with a margin; the model's sizes do not matter (a Plan holds regions, not data).
// `folded`: the simulation folds the replicas (ProgramOptions::fold_replicas, the default; off
// with dmuon-sim --per-rank), which a replica-symmetric strategy on several nodes then does.
SimMemoryEstimate estimate_sim_memory(const Scenario& scenario, Strategy strategy, const Routing& routing,
                                      bool folded = true);

// MemAvailable of /proc/meminfo in bytes; 0 when it cannot be read.
double host_memory_available_bytes();

// Throws dmuon::Error naming the strategy, the GPU count, the estimate and the limit when the
// estimate exceeds `limit_bytes` (> 0); `limit_source` says where the limit came from.
void check_sim_memory(const SimMemoryEstimate& estimate, Strategy strategy, double limit_bytes,
                      const std::string& limit_source);

}  // namespace dmuon::sim
