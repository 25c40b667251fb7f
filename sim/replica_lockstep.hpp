// When a folded program's replicas run in lockstep (issue 15): every GPU (rep, s) does
// everything at the dates of GPU (t, s) of its template replica t (replica 0 for the
// data-parallel strategies; sim/replica_fold.hpp), so simulating the templates' GPUs alone, with
// the collectives every replica shares run on all of their members' hosts, gives every GPU's dates.
//
// Why, by induction over the simulation's dates: rank (rep, s) runs rank (t, s)'s list moved
// (StepProgram::replicas). Its compute ops are waits (no shared resource). A collective it runs
// is either
// - shared: one execution for all of its members in every replica, started by the last to
//   arrive and ended for all at once; its members in replica rep arrive when those of replica t
//   do, so the templates' members' arrivals alone start it at the same date (every replica has
//   as many members as its template); or
// - replica rep's copy of a collective of its template. Its time depends only on the traffic on
//   its links. When every copied collective of several GPUs stays inside one node, it routes over
//   its members' NVLink ports only, which no other replica's copy uses; when no shared
//   collective routes over those ports either (a shared collective uses NVLink only between its
//   members on one node), the copy shares its links with replica rep's copies alone, started at
//   the template's dates: it ends when the original does.
// A template's own collectives (a replica of its own, no copies) run as they are.
// The per-GPU couplings (compute beside NCCL, NCCL beside compute, the host issue model) read
// one GPU's state: the same in every replica of a template.
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
