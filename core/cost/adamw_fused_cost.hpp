// The executor's fused AdamW launch as measured on a step (calibration keys
// adamw_fused_issue_us and adamw_fused_vs_curve). The NCCL executor runs a rank's consecutive
// AdamW ops as one multi-tensor launch (kernels/exec/compute.cpp launch_adamw): the host first
// builds the launch's tensor list, the GPU waiting, then the kernels run over a real model's mix of
// tensor sizes. The AdamW curve times one large tensor and the host issue model one launch, so on
// 1 x H100 every model's AdamW step ran 5-11% above its curve price and on 2 x H200 about 1 ms
// above it whatever the model (reports/sim-validation.md). `dmuon-bench calibrate` runs the
// calibration scenario's adamw Plan's optimizer phase as `dmuon-bench step` does and splits it:
// host seconds per tensor, and the GPU's remainder over the curve's price of the same bytes.
// What the host share holds: the executor's loop until the fused launch is enqueued (the tensor
// list, one kernel launch per 40 tensors; RunTiming::host_adamw_launched_seconds), not the event
// record per AdamW op that follows, which overlaps the kernels. Calibrations of 2026-11-25 (the
// first with these keys) took the whole loop, records included: their host share is high and their
// GPU ratio low by the same seconds, exact for the phase's total on an idle GPU.
#pragma once
#include "core/cost/calibration.hpp"
#include "core/model/routing.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"

namespace dmuon {

// One rank's optimizer phase when it is AdamW ops only: their tensors (non-empty regions) and
// their price from the calibration's AdamW curve as the simulator prices a fused launch
// (rank_compute_times, without adamw_fused_vs_curve).
struct FusedAdamw {
  int tensors = 0;
  double curve_seconds = 0;
};

// Throws dmuon::Error naming the rank and op when the rank's optimizer phase holds anything but
// AdamW ops, or none; `rank` must be a rank of the Plan.
FusedAdamw fused_adamw(const Plan& plan, int rank, const Routing& routing, const OptimizerConfig& optimizer,
                       const CostModel& cost);

struct FusedAdamwCost {
  double issue_us_per_tensor = 0;  // host_seconds / tensors, in microseconds
  double vs_curve = 0;             // (phase_seconds - host_seconds) / curve_seconds
};

// From a measured optimizer phase (run start to its last kernel's end) and its enqueue loop's
// host seconds: the GPU waits for the host's list, so the GPU's share is the phase less the host's.
// Throws dmuon::Error when a time is not positive and finite, the host took longer than the
// phase, or `fused` has no tensors.
FusedAdamwCost fused_adamw_cost(double phase_seconds, double host_seconds, const FusedAdamw& fused);

}  // namespace dmuon
