// owner-striped's owners when Newton-Schulz may be sharded (core/plan/ns_sharding.hpp): which
// matrices share their call among GPUs of one node, over how many, and who owns the rest.
//
// Cross-node bytes per rail: owner-striped cuts every matrix into one chunk per rail whoever
// owns it (core/plan/striped_collectives.hpp), so each rail carries 1/shard of every matrix for any
// owner choice; the per-rail bytes are the same for every assignment and only the NS time is
// left to balance (unlike dedicated, whose owners pick the rail: core/owners/owner_columns.hpp).
#pragma once
#include <functional>
#include <vector>

#include "core/cost/mesh.hpp"
#include "core/owners/owner_assignment.hpp"

namespace dmuon {

// Seconds one member of a sharded call over k GPUs spends (compute share plus its all-reduces;
// k = 1: the whole call on one GPU), and of them its compute (the rest it waits on collectives).
struct MemberSeconds {
  double seconds = 0;
  double compute_seconds = 0;
};
using ShardedCost = std::function<MemberSeconds(long rows, long cols, int k)>;

struct ShardedAssignment {
  Assignment assignment;  // owners (a sharded call's first member) and per-rank loads
  std::vector<int> shards;  // per matrix: GPUs sharing its call (1 = whole on its owner)
  std::vector<bool> split_products;  // per matrix: its call splits its m x m products (the step planner's)
};

// Two rules choose each matrix's k under a cap K: by time, a matrix whose single-GPU call takes
// longer than the fair share (every matrix's single-GPU time over the ranks) is sharded over the
// smallest k in [2, K] whose member time is within the fair share; by compute, one whose call
// takes longer than half the fair share, over the smallest k whose member computes within half
// of it (small pieces pack evenly: at 32 nodes of 16node.yaml the time rule's halves of MLP
// matrices, 0.91 ms of compute each against a mean of 1.50 ms a GPU, left the busiest GPU 21%
// over the mean; the compute rule's thirds, 6%). Either way, else the k with the least member
// figure, only when below the single-GPU one; and a matrix whose call would then take longer
// than the floor (the longest of every matrix's least call time, which no assignment beats)
// takes the least k within it, so that the cap that keeps small matrices from oversplitting
// does not hold back the largest (each cap is also tried without that exception).
// Sharded calls are placed first, largest total work first, each on the k consecutive GPUs of
// one node it leaves least loaded (within the makespan so far, the least compute); then every
// other matrix by `options` (assign_owners) on top of those loads, which holds the calls'
// collectives as base_collective_seconds. Every rule and K in [2, mesh.shard] is tried and the
// least (makespan, compute makespan, sum of squared compute) kept; the caller compares it with
// the unsharded assignment. options.ranks must be mesh.world(); packing is not used.
// assignment.lower_bound_seconds counts sharding: max(every matrix's work at its best batched
// rate over the ranks, the largest of each matrix's least one-GPU time over the k it allows).
// On 16node.yaml's model from 8 nodes on, that is the 5120 x 5120 merger's call over 8 GPUs
// (6.76 ms, 5.5 of them its all-reduces and all-gathers): the makespan sits on it, and from 64
// nodes on its members' 1.21 ms of compute are the largest compute load too.
ShardedAssignment assign_owners_sharded(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                                        const ShardedCost& sharded, const AssignmentOptions& options, const Mesh& mesh);

}  // namespace dmuon
