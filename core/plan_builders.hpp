// The five strategies of DESIGN.md as Plan builders, one function each (plan_builders.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "core/plan.hpp"

namespace dmuon {

struct PlanOptions {
  std::int64_t ddp_bucket_bytes = 25LL << 20;  // DDP's default gradient bucket
  int zero1_chunk_matrices = 16;               // matrices per all-to-all chunk
  int zero1_max_in_flight = 2;                 // chunks gathered ahead of their Newton-Schulz
  int max_batch = 64;                          // same-shape matrices per batched NS call
  int bytes_per_element = 2;                   // bf16 parameters and gradients on the wire
};

// `owner` per Muon matrix: for `dedicated` the owner's global rank; for `zero1-a2a` the owner's
// shard index (every replica's shard group runs its own copy, as HSDP replicas hold the same
// shards). Ignored by the other strategies. Throws dmuon::Error on an owner out of range.
Plan build_plan(Strategy strategy, const ModelSpec& model, const Routing& routing, const Mesh& mesh,
                const std::vector<int>& owner, const PlanOptions& options = {});

}  // namespace dmuon
