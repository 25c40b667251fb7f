// Collectives priced from the calibration's measured NCCL curves (issue 12: "inter-node links
// stay modelled; intra-node collectives follow the measured curves"), and how the simulator runs
// one so that alone it takes exactly its measured time while it still shares links with
// whatever else runs. SimGrid-free.
#pragma once
#include <optional>

#include "core/cost/calibration.hpp"
#include "core/io/scenario.hpp"
#include "sim/collective_schedule.hpp"
#include "sim/step_program.hpp"
#include "sim/topology.hpp"

namespace dmuon::sim {

// The nccl-tests "size" a curve is read at for this call: call.bytes (a merged launch or a
// coalesced broadcast/reduce of several roots (`rooted`) is priced as one call of its total
// bytes: NCCL runs the coalesced calls concurrently over the same links). all_to_all: the most
// bytes any member sends or receives, as the per-rank size of a balanced all-to-all that is as
// slow as the busiest member of this one.
double curve_bytes(const CollectiveCall& call);

// For every collective whose members all sit in one node (rank / gpus_per_node) and for whose
// (kind, ranks, nodes = 1) the calibration has a curve: one GPU -> local_seconds = the curve
// plus, per extra NCCL call of the op's group, CostModel::local_extra_call_seconds, plus the
// calibration's local_collective_step_overhead_us;
// several GPUs -> measured_seconds = the curve plus the calibration's
// collective_step_overhead_us per NCCL call. Sets each
// collective op's source: "measured" for those, else "datasheet" (modelled links; a one-GPU
// collective: the class of its elementwise copy). Leaves everything else as it was, so a
// program without a calibration is unchanged.
void apply_measured_collectives(StepProgram& program, const CostModel& cost, int gpus_per_node);

// A collective with a measured time as the simulator runs it: its schedule with every edge's
// bytes scaled so that alone it takes measured_s (in `fast` mode the parallel task's route
// latency + busiest link; in `flows` mode the step-by-step isolated time, whose latency part
// does not scale: one node, every route has the same latency), with no launch latency or
// schedule extra added (the curve includes them). When measured_s does not exceed that
// latency, no traffic and a wait of measured_s (`wait_s`, schedule without edges).
struct MeasuredRun {
  CollectiveSchedule schedule;
  FastSummary summary;  // fast mode
  double wait_s = 0;
};
MeasuredRun measured_run(const CollectiveSchedule& schedule, const Topology& topo, double measured_s, SimMode mode);

}  // namespace dmuon::sim
