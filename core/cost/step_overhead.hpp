// The in-step cost of a collective beyond its isolated curve (calibration key
// collective_step_overhead_us). The calibration's NCCL curves time one call of one size
// repeated back to back; in a step the executor runs each collective after a different one,
// behind an event wait on its stream, and a Plan of many small calls took 14% longer on
// 2 x H200 than the sum of its calls' curve times (reports/sim-validation.md). `dmuon-bench
// calibrate` measures the difference once, on the calibration scenario's adamw Plan, as GPU
// seconds per NCCL call; the simulator adds it to every collective it prices from a curve.
#pragma once
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/plan/plan.hpp"

namespace dmuon {

// A rank's forward/backward collectives, each priced alone from the calibration's curves as
// the simulator prices one (kind, group size, one node, its payload bytes; a broadcast run as
// an all-reduce as the all-reduce).
struct CurvePricedCollectives {
  double seconds = 0;  // sum of the curve times
  int calls = 0;       // NCCL calls (a broadcast, reduce or all-reduce: one per region)
  int launches = 0;    // Plan collectives (each one launch of the executor)
  // Each Plan collective's price in the rank's order, as the simulator prices a one-GPU one
  // (sim/measured_collectives.cpp): its curve, plus CostModel::local_extra_call_seconds for each
  // call past the first where it has several and runs on one GPU.
  std::vector<double> launch_seconds;
};

// Throws dmuon::Error naming the rank and op when a collective has no curve (its kind or
// group size was not measured) or is an all-to-all (priced by its busiest member, not by a
// size); `rank` must be a rank of the Plan.
CurvePricedCollectives curve_priced_collectives(const Plan& plan, int rank, const CostModel& cost);

// (measured - priced.seconds) / priced.calls (`per_launch`: / priced.launches, the one-GPU
// key's unit): what each call or launch cost on top of its curve when the same collectives ran
// as a step's forward/backward phase in `measured_seconds`. May be negative (the phase ran
// faster than its curves). Throws dmuon::Error without calls or when measured_seconds is not a
// positive finite number.
double collective_step_overhead_seconds(double measured_seconds, const CurvePricedCollectives& priced,
                                        bool per_launch = false);

// One GPU's forward/backward phase as the simulator runs it under the host issue model
// (sim/op_list.cpp assign_issue_times, sim/runner_collectives.cpp): launch i is enqueued at
// issue_s x (i + 1), starts when enqueued and the one before it has ended, and takes its
// launch_seconds + overhead_s. Returns the last end. Throws dmuon::Error on negative inputs.
double host_paced_phase_seconds(const std::vector<double>& launch_seconds, double issue_s, double overhead_s);

// local_collective_step_overhead_us as the simulator applies it: the overhead o >= 0 a launch
// for which host_paced_phase_seconds(priced.launch_seconds, issue_s, o) is the measured phase
// (bisection; the phase grows with o). Spreading (measured - curves) over every launch instead,
// as collective_step_overhead_seconds(per_launch) does, charges the launches the host paces
// (in-place all-gathers: nothing on the GPU) a second time: the simulator already waits issue_s
// for each. 0 when the phase at o = 0 already takes the measured time or longer (host-bound, or
// faster than the curves). Throws dmuon::Error like collective_step_overhead_seconds, and for
// issue_s < 0.
double local_step_overhead_seconds(double measured_seconds, const CurvePricedCollectives& priced, double issue_s);

}  // namespace dmuon
