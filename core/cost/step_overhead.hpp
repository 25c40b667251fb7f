// The in-step cost of a collective beyond its isolated curve (calibration key
// collective_step_overhead_us). The calibration's NCCL curves time one call of one size
// repeated back to back; in a step the executor runs each collective after a different one,
// behind an event wait on its stream, and a Plan of many small calls took 14% longer on
// 2 x H200 than the sum of its calls' curve times (reports/sim-validation.md). `dmuon-bench
// calibrate` measures the difference once, on the calibration scenario's adamw Plan, as GPU
// seconds per NCCL call; the simulator adds it to every collective it prices from a curve.
#pragma once
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

}  // namespace dmuon
