// The distributed optimizer strategies of DESIGN.md, and what each one is (its traits), held
// once: the planner, the Plan validator and the memory model ask the traits instead of
// switching on names, so adding a strategy means a builder and a row of traits in core/.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dmuon {

enum class Strategy { adamw, ddp_redundant, fsdp_gather, zero1_a2a, dedicated, owner_striped };

std::string_view to_string(Strategy s);
Strategy parse_strategy(std::string_view name, const std::string& what);
std::vector<Strategy> all_strategies();

// Which ranks run Newton-Schulz on a Muon matrix.
enum class NsRanks {
  none,               // adamw: no Muon
  every_rank,         // ddp-redundant, fsdp-gather: every rank, every matrix
  owner,              // dedicated, owner-striped: one global rank per matrix
  owner_per_replica,  // zero1-a2a: one shard position per matrix, in every replica
};

struct StrategyTraits {
  NsRanks ns_ranks = NsRanks::none;
  // The owner keeps the whole matrix (parameter, gradient, momentum) between steps, and its
  // owner units may pack a layer's small matrices (one coalesced broadcast per pack).
  bool owner_keeps_matrix = false;
  // The forward broadcast and backward reduce of a matrix are split over the node's GPUs and
  // cross the network on every rail (core/plan/striped_collectives.hpp), not on the owner's alone.
  bool rail_striped = false;
  // Host bytes per model parameter that one GPU's Plan and step program take when simulated
  // (sim/memory_estimate.hpp refuses a simulation that would not fit before planning it): for
  // one simulated step, and for each further step of simulation.steps (the step program is
  // repeated, the Plan is not). Measured: the slope of dmuon-sim's peak RSS between 512 and
  // 1,024 GPUs of 16node.yaml, plus 25% (one step: reports/sim-speed.md; two steps: 2026-11-23
  // 20:10-20:20 UTC, the same way). A new strategy measures its own.
  double sim_host_bytes_per_param = 3800;
  double sim_host_bytes_per_param_per_extra_step = 1000;
  // The same when the simulator folds the replicas (a replica-symmetric Plan and its program held
  // once, sim/replica_fold.hpp): what grows with the GPUs is then each rank's runner state and
  // each replica's copies of its collectives. Measured the same way (peak RSS at 512 and 1,024
  // GPUs of 16node.yaml, one and two steps, 2026-11-27 00:40 UTC, commit 70c67d4; each slope less
  // the platform's 3,722 B a GPU, over parameters + matrices / 4, plus 25%:
  // reports/sim-speed.md). 0: the strategy is never folded (owners differ by replica).
  double sim_host_bytes_per_param_folded = 0;
  double sim_host_bytes_per_param_per_extra_step_folded = 0;
  // The owner strategies whose replicas fold onto templates (Plan::replica_template: replicas
  // holding no owner's work share one): a template's GPUs cost sim_host_bytes_per_param[_per_extra_step],
  // a GPU of a replica that runs a template's lists this much per parameter and simulated step
  // (its collectives' copies in the step program and their runner state). Measured at 8,192 GPUs
  // of 16node.yaml (two steps): peak RSS less the base, the platform and the templates' GPUs at
  // the unfolded coefficients without their margin, over the other GPUs' parameters and the
  // steps, plus 25% (reports/sim-speed.md). 0: never folded onto templates.
  double sim_host_bytes_per_param_copied = 0;

  bool has_owners() const { return ns_ranks == NsRanks::owner || ns_ranks == NsRanks::owner_per_replica; }
};

StrategyTraits traits(Strategy s);

}  // namespace dmuon
