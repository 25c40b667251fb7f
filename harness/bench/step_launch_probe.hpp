// What a step's launches cost beyond the isolated measurements, for `dmuon-bench calibrate`:
// the calibration scenario's adamw Plan over this host's GPUs (a parameter at a time
// all-gathered and reduce-scattered), run as `dmuon-bench step` runs it. Two figures come of
// it: the executor's host issue cost per launch (calibration key executor_issue_us) and the
// forward/backward phase's GPU time, from which, with the collective curves measured just
// before, the in-step overhead per NCCL call follows (collective_step_overhead_us,
// core/cost/step_overhead.hpp); and the optimizer phase, the executor's fused AdamW run, whose
// host and GPU sides give adamw_fused_issue_us and adamw_fused_vs_curve.
#pragma once
#include <vector>

#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "kernels/exec/launch.hpp"

namespace dmuon::bench {

// The probe's Plan: the scenario's model, routing and optimizer, strategy adamw, one node of
// `world` GPUs, planned with the scenario GPU's datasheet profile. Deterministic: the
// calibrate command plans it again to price what the ranks ran.
StepPlan step_probe_plan(const Scenario& scenario, int world);

struct StepLaunchProbe {
  // Host seconds per launch over the first launches of the forward/backward run (before the
  // launch queue can fill), the median over iterations, the slowest rank's.
  double issue_seconds = 0;
  // The forward/backward phase's GPU seconds, per iteration the slowest rank's, then the median.
  double comm_phase_seconds = 0;
  // The optimizer phase (the fused AdamW launch: its tensor list, one kernel a 40 tensors, then
  // an event record a Plan op) of the rank whose median phase is the longest: that median, and
  // the median host seconds of the same rank's loop until the launch was enqueued
  // (RunTiming::host_adamw_launched_seconds; the event records after it overlap the kernels).
  int optimizer_rank = 0;
  double optimizer_phase_seconds = 0;
  double optimizer_host_seconds = 0;
  int iterations = 0;
};

// Collective: every rank of `rank` calls it. Throws dmuon::Error naming the scenario when the
// Plan has too few launches to sample the issue cost.
StepLaunchProbe measure_step_launches(exec::RankHandle& rank, const Scenario& scenario, double timeout_seconds);

}  // namespace dmuon::bench
