// Who runs Newton-Schulz for each Muon matrix: load balancing of owners across ranks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

// round_robin: Motif's baseline: units by FLOPs descending, dealt to ranks 0, 1, 2, ...
// lpt:         DMuon's baseline: units by cost descending, each to the least-loaded rank with
//              memory room (Graham: makespan <= (4/3 - 1/(3R)) * optimum without batching).
// refined:     ours: LPT, then local search (moves and swaps) until no move lowers the makespan
//              (then the sum of squared loads); exact branch-and-bound for small instances.
enum class OwnerAlgorithm { round_robin, lpt, refined };

std::string_view to_string(OwnerAlgorithm algorithm);
// Throws dmuon::Error naming `what` for an unknown name.
OwnerAlgorithm parse_owner_algorithm(std::string_view name, const std::string& what);

// Seconds one rank spends on one batched Newton-Schulz call of `batch` same-shape rows x cols
// matrices. Must be finite, >= 0, and should not decrease with batch.
using BatchCost = std::function<double(long rows, long cols, int batch)>;

// The cost of the NS call the config describes (its kernel, compute dtype, steps, restarts),
// priced by `model` (copied into the function).
BatchCost ns_batch_cost(const CostModel& model, const NsConfig& ns);
// The momentum and update passes an owner runs over `elements` of one matrix it holds (one
// launch each, as the owner pipeline emits them).
double owner_elementwise_seconds(const CostModel& model, double elements);
// ns_batch_cost plus each matrix's owner_elementwise_seconds: all an owner computes for a batch.
BatchCost owner_batch_cost(const CostModel& model, const NsConfig& ns);

struct AssignmentOptions {
  using Algorithm = OwnerAlgorithm;
  int ranks = 1;
  Algorithm algorithm = Algorithm::refined;
  // A rank runs its matrices of one shape as batched calls of up to max_batch matrices, so a
  // rank's load is sum over shapes of t(full batches) + t(remainder), not a sum per matrix.
  bool batch_same_shape = true;
  int max_batch = 64;
  // DMuon: the matrices of one layer smaller than this are packed into one unit with one owner
  // (one packed broadcast); 0 turns packing off. Matrices outside a layer are never packed.
  std::int64_t pack_numel_threshold = 5'000'000;
  // Bytes a rank may hold as owner, per rank; empty = unlimited.
  std::vector<double> memory_capacity_bytes;
  // A dedicated owner keeps the full matrix: bf16 param + fp32 momentum + fp32 master copy.
  double bytes_per_element_owned = 2 + 4 + 4;
  // refined: instances with at most this many units are solved exactly.
  int exact_max_units = 12;
  // Per rank: seconds of work placed before this assignment (sharded Newton-Schulz calls,
  // core/owners/owner_sharded.hpp), counted in every load; empty = none. The exact solver is not
  // used with it (its bounds assume empty ranks).
  std::vector<double> base_load_seconds;
  // Per rank: the part of base_load_seconds spent in the sharded calls' own collectives
  // (all-reduces, all-gathers), when the GPU waits on NVLink and computes nothing; empty = none.
  // The algorithms first lower the makespan (the rank that finishes last), then the compute
  // makespan (what the simulator's owner imbalance measures): under a makespan that one call's
  // collectives set, the other ranks still even out their compute.
  std::vector<double> base_collective_seconds;
};

// One batched NS call a plan builder emits: same-shape matrices (indices into the input list).
struct NsBatch {
  long rows = 0, cols = 0;
  std::vector<std::size_t> matrices;
};

struct Assignment {
  std::vector<int> owner_of_matrix;           // parallel to the input matrices
  std::vector<double> load_seconds;           // per rank: NS time of everything it owns
  std::vector<double> compute_seconds;        // per rank: load_seconds less base_collective_seconds
  std::vector<double> memory_bytes;           // per rank: bytes_per_element_owned * numel owned
  std::vector<std::vector<NsBatch>> batches;  // per rank: (shape, matrices), split at max_batch
  double makespan_seconds = 0;
  double mean_seconds = 0;
  double compute_makespan_seconds = 0, compute_mean_seconds = 0;  // of compute_seconds
  // max(total / ranks, largest unit), where total counts every matrix at its shape's cheapest
  // per-matrix rate (the best batch): no assignment can beat it.
  double lower_bound_seconds = 0;
  int units = 0;                // allocation units after packing
  bool proven_optimal = false;  // the exact solver finished: no assignment has a lower makespan

  // (max - mean) / mean of compute_seconds, as the simulator's "owner imbalance" measures a GPU's
  // optimizer compute (without the sharded calls' collectives, which load_seconds counts);
  // max >= mean, but the rounded sum can put the mean an ulp above it.
  double imbalance() const {
    const double mean = compute_mean_seconds;
    return mean > 0 ? std::max(0.0, (compute_makespan_seconds - mean) / mean) : 0;
  }
  double gap_to_lower_bound() const {
    return lower_bound_seconds > 0 ? makespan_seconds / lower_bound_seconds - 1 : 0;
  }
};

// Throws dmuon::Error (one line) for ranks < 1, max_batch < 1, a capacity list of the wrong
// length, a unit that fits no rank ("matrix 'name' needs N bytes; the largest free rank memory
// is M bytes"), or memory running out while assigning.
Assignment assign_owners(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                         const AssignmentOptions& options);

// Loads, memory, batches and bounds of a given owner list (any owners, packing not enforced).
Assignment evaluate_owners(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                           const AssignmentOptions& options, const std::vector<int>& owner_of_matrix);

}  // namespace dmuon
