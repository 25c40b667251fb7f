// Which element ranges of which (parameter, buffer) one rank's Plan ops read or write: the one
// op -> buffer table that both the NCCL executor's allocation (kernels/exec/buffers) and the
// memory model of that allocation (core/cost/executor_memory) follow, so that what the executor
// holds and what the simulator predicts it holds cannot drift apart.
//
// Besides the Plan's BufferKinds, the ranges a rank updates (muon_update, adamw) have an fp32
// master copy (kMasterKind): the Plan's `param` buffer is the bf16 copy the forward pass uses and
// the collectives carry. A member of a sharded Newton-Schulz call (core/plan/ns_sharding.hpp)
// touches its own columns' NS input and output only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/model/routing.hpp"
#include "core/plan/plan.hpp"

namespace dmuon {

// The master copy is addressed like a BufferKind; it is not one of the Plan's kinds.
inline constexpr int kMasterKind = static_cast<int>(BufferKind::adam_v) + 1;
inline constexpr int kFootprintKinds = kMasterKind + 1;

struct ElementRange {
  std::int64_t lo = 0, hi = 0;  // [lo, hi) element offsets; empty when lo >= hi
  bool empty() const { return hi <= lo; }
};

struct PlanFootprint {
  // [param][kind]: the smallest range covering every region the rank's ops touch.
  std::vector<std::vector<ElementRange>> ranges;
  // Parameters in the order the rank's (unsharded) Newton-Schulz ops first read them: an
  // executor lays the NS input and output out in this order, so the same-shape matrices of one
  // batched call lie back to back and the NS engine reads them in place.
  std::vector<std::size_t> ns_order;
  void touch(std::size_t param, int kind, std::int64_t offset, std::int64_t count);
};

// `rank` indexes plan.ranks.
PlanFootprint plan_footprint(const Plan& plan, int rank, const ModelSpec& model, const Routing& routing);

}  // namespace dmuon
