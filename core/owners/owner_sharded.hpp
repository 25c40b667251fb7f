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
// k = 1: the whole call on one GPU).
using ShardedCost = std::function<double(long rows, long cols, int k)>;

struct ShardedAssignment {
  Assignment assignment;  // owners (a sharded call's first member) and per-rank loads
  std::vector<int> shards;  // per matrix: GPUs sharing its call (1 = whole on its owner)
  std::vector<bool> split_products;  // per matrix: its call splits its m x m products (the step planner's)
};

// For a cap K on k: a matrix whose single-GPU call takes longer than the fair share (every
// matrix's single-GPU time over the ranks) is sharded over the smallest k in [2, K] whose
// member time is within the fair share, else over the k with the least member time, and only
// when that is below its single-GPU time. Sharded calls are placed first, largest total work
// first, each on the k consecutive GPUs of one node whose busiest member is least loaded; then
// every other matrix by `options` (assign_owners) on top of those loads. Every K in
// [2, mesh.shard] is tried and the least makespan kept; the caller compares it with the
// unsharded assignment. options.ranks must be mesh.world(); packing is not used.
// assignment.lower_bound_seconds counts sharding: max(every matrix's work at its best batched
// rate over the ranks, the largest of each matrix's least one-GPU time over the k it allows).
// On 16node.yaml's model from 8 nodes on, that is the 5120 x 5120 merger's call over 8 GPUs,
// which its redundant m x m part keeps at 9.24 ms: the makespan sits on it.
ShardedAssignment assign_owners_sharded(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                                        const ShardedCost& sharded, const AssignmentOptions& options, const Mesh& mesh);

}  // namespace dmuon
