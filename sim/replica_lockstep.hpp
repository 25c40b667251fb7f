// When a folded program's replicas run in lockstep (issue 15): every GPU (rep, s) does
// everything at the dates of GPU (0, s), so simulating replica 0's GPUs alone, with the
// collectives every replica shares run on all of their members' hosts, gives every GPU's dates.
//
// Why, by induction over the simulation's dates: rank (rep, s) runs rank (0, s)'s list moved
// (StepProgram::replicas). Its compute ops are waits (no shared resource). A collective it runs
// is either
// - shared: one execution for all of its members in every replica, started by the last to
//   arrive and ended for all at once; its members in replica rep arrive when those of replica 0
//   do, so counting each replica-0 arrival as `replicas` arrivals starts it at the same date; or
// - replica rep's copy of a replica-0 collective. Its time depends only on the traffic on its
//   links. When every copied collective of several GPUs stays inside one node, it routes over
//   its members' NVLink ports only, which no other replica's copy uses; when no shared
//   collective routes over those ports either (a shared collective uses NVLink only between its
//   members on one node), the copy shares its links with replica rep's copies alone, started at
//   replica 0's dates: it ends when the original does.
// The per-GPU couplings (compute beside NCCL, NCCL beside compute, the host issue model) read
// one GPU's state: the same in every replica.
// Not in lockstep (a copied collective across nodes, over spine links every replica shares, or
// a shared collective on a copied collective's NVLink ports): every GPU is simulated.
#pragma once
#include <string>

#include "sim/step_program.hpp"
#include "sim/topology.hpp"

namespace dmuon::sim {

// Empty when the folded program's replicas run in lockstep on `topo`; otherwise why not (the
// collective and rule that break it). An unfolded program (replicas == 1) is not in lockstep.
std::string replica_lockstep_obstacle(const StepProgram& prog, const Topology& topo);

}  // namespace dmuon::sim
