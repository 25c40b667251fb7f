// Rail-striped hierarchical broadcast and reduce of owners' matrices on a 2-D (replicate x
// shard) mesh: the owner-striped strategy's communication.
//
// dedicated (DMuon) moves an owner's matrix across nodes inside the owner's replicate group,
// i.e. over the one NIC (rail) of the owner's shard index, while the node's other NICs idle.
// Striped, every matrix is cut into `shard` element chunks and chunk s crosses the network on
// rail s, so a block's bytes use every rail wherever its owners sit:
//   forward  A. on the owner's node, the owner sends chunk s to GPU s (all-to-all, NVLink);
//            B. GPU s of the owner's node broadcasts chunk s to GPU s of every node (rail s);
//            C. every node all-gathers the chunks (NVLink).
//   backward A. every node reduce-scatters (avg) the gradient: GPU s holds its node's chunk s;
//            B. GPU s of every node reduces (avg) chunk s to GPU s of the owner's node (rail s);
// With `via_all_reduce`, stage B is an all-reduce in both directions (a broadcast as
// Op::via_all_reduce; the reduce as an all-reduce avg of every owner's chunks, whose result
// the non-owner nodes simply do not use), so NCCL's tree can carry it across many nodes.
//            C. on the owner's node, GPU s sends chunk s to the owner (all-to-all).
// Semantics: the gradient is the same two-level average as dedicated's (inside each node, then
// across nodes: sum over a node's GPUs / shard, then sum over nodes / replicate), only cut into
// chunks, so the owner receives the same value up to the summation order an executor uses.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/plan/ns_sharding.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_writer.hpp"

namespace dmuon {

// Chunk s of `shards` of a region: ceil(count / shards) elements each, the last ones possibly
// short or empty.
Region stripe_chunk(const Region& region, int shards, int s);

// Matrices whose Newton-Schulz is sharded (core/plan/ns_sharding.hpp), by their region's (param,
// offset): stage C of the backward sends each chunk's columns to the member holding them, and
// stage A of the forward takes them from there, instead of gathering on (scattering from) the
// owner alone: the matrix never sits whole on one GPU.
using ShardHoldings = std::map<std::pair<std::size_t, std::int64_t>, std::vector<NsShardHolding>>;

// The striped broadcast (forward) or reduce-avg (backward) of one bucket of blocks, `owners`
// mapping each owner (global rank) to its regions; every op carries `bucket` (Op::bucket) and
// the forward ones `run_ahead` (Op::run_ahead). Needs replicate > 1 and shard > 1.
void striped_block_collectives(PlanWriter& w, const std::map<int, std::vector<Region>>& owners, bool forward,
                               const std::string& label, int bucket, bool run_ahead, bool via_all_reduce,
                               const ShardHoldings* holdings = nullptr);

}  // namespace dmuon
