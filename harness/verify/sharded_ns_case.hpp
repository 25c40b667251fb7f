// dmuon-verify --backend nccl's sharded Newton-Schulz case (issue 13): a small model with one
// dominant Muon matrix, and the cost settings under which the planner shards it over 2 GPUs.
// Here (no CUDA) so that tests/test_nccl_sharded_ns.cpp checks the planner's decision and the
// CPU interpreter on the very Plans the GPU case runs.
#pragma once
#include <string>

#include "core/cost/calibration.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/step_planner.hpp"

namespace dmuon::verify {

// An AdamW embedding and norm, a small 32 x 32 Muon matrix and a dominant one, "wide" (96 x 1999),
// "tall" (1999 x 96) or "square" (161 x 161). 1999 columns split raggedly over 2 GPUs (1000 + 999);
// the executor reads a tall matrix's block of rows in place and a wide one's column block as one
// strided run per row (pitched launches, packed collectives: core/plan/region_runs.hpp), so both
// orientations are worth running; a square one's call works on its transpose, members holding rows
// of it (ns_shard_by_stored_rows; 81 + 80 columns). Throws dmuon::Error for another name. No bool
// overload: a string literal converts to bool before std::string and would pick it.
ModelSpec sharded_ns_test_model(const std::string& orientation);

// The built-in h200 profile with launches priced as free: a call costs its flops (at the
// profile's efficiency for its m), so the dominant matrix's call exceeds a GPU's fair share
// whatever the launch overheads of the small ones would be.
CostModel flops_only_cost();

// owner-striped planner options with the node's link priced as free (no latency, unbounded
// bandwidth): a member's time is its flops share, so sharding pays wherever the planner's rule
// (core/owners/owner_sharded.hpp: calls above the fair share) asks for it. The planner decides.
// `split`: whether the calls split their m x m products (never: the column-only calls).
StepPlanOptions free_link_plan_options(ProductSplit split = ProductSplit::never);

}  // namespace dmuon::verify
