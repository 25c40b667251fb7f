// The five strategies of DESIGN.md as Plan builders, one function each (plan_builders.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "core/plan/plan.hpp"

namespace dmuon {

struct PlanOptions {
  std::int64_t ddp_bucket_bytes = 25LL << 20;  // DDP's default gradient bucket
  int zero1_chunk_matrices = 16;               // matrices per all-to-all chunk
  int zero1_max_in_flight = 2;                 // chunks gathered ahead of their Newton-Schulz
  int max_batch = 64;                          // same-shape matrices per batched NS call
  int bytes_per_element = 2;                   // bf16 parameters and gradients on the wire
  // owner-striped: consecutive blocks share one broadcast (reduce) launch per rail until the
  // bucket holds this many bytes per rail. A ring broadcast over R nodes pays ~R-1 pipeline
  // steps of one NCCL chunk (512 KiB) before data flows at link rate, ~0.8 ms at 16 nodes of
  // HDR; a small tower's block (4.9 MB per rail for a 1280-wide ViT block) spends more time
  // filling than moving. 0: one launch per block, as dedicated.
  std::int64_t striped_bucket_bytes_per_rail = 32LL << 20;
  // owner-striped: the forward broadcasts run ahead of the forward compute (Op::run_ahead).
  bool striped_run_ahead = true;
  // owner-striped: across nodes, a broadcast runs as an all-reduce (Op::via_all_reduce) and the
  // gradient's reduce as an all-reduce (avg), so NCCL can use its tree, from this many nodes
  // on (the ring's R - 1 pipeline steps grow with the nodes, the tree's with log2 of them).
  // 32: the crossover dmuon-sim finds on 16node.yaml (chain ahead at 4-16 nodes, the
  // all-reduce at 32 and 64; reports/sim-owner-striped.md), not a measured GPU figure.
  int striped_all_reduce_from_nodes = 32;
  // owner-striped: per Muon matrix, how many GPUs share its Newton-Schulz (core/plan/ns_sharding.hpp):
  // k > 1 runs it on ranks owner .. owner + k - 1 of the owner's node, each holding a block of
  // columns from the backward reduce to the forward broadcast. Empty: every matrix whole on its
  // owner. The step planner fills it (StepPlanOptions::sharded_ns).
  std::vector<int> ns_shards;
  // Per Muon matrix with ns_shards > 1: whether its call splits the m x m products over the
  // members too (Op::ns_split_products). Empty: none does.
  std::vector<bool> ns_split_products;
  // The data-parallel strategies on several replicas (Plan::replica_symmetric): build replica 0's
  // ranks and move their lists to the other replicas (PlanWriter's replica-0 mode) instead of
  // building every rank; the same Plan, R times less building. Off: every rank built (the
  // reference tests/test_plan_replica_fold.cpp compares it with).
  bool fold_replicas = true;
  // With fold_replicas: leave the Plan folded (Plan::folded), replica 0's lists only; the owner
  // strategies are then folded too, onto templates (Plan::replica_template), where at least a
  // quarter of the replicas hold no owner's work.
  bool keep_folded = false;
};

// `owner` per Muon matrix: for `dedicated` the owner's global rank; for `zero1-a2a` the owner's
// shard index (every replica's shard group runs its own copy, as HSDP replicas hold the same
// shards). Ignored by the other strategies. Throws dmuon::Error on an owner out of range.
Plan build_plan(Strategy strategy, const ModelSpec& model, const Routing& routing, const Mesh& mesh,
                const std::vector<int>& owner, const PlanOptions& options = {});

}  // namespace dmuon
