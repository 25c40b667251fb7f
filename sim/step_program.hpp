// One training step as each GPU runs it: the Plan's ops plus the forward and backward compute
// around them, on three in-order streams per GPU (compute; a gather stream for all-gathers and
// broadcasts, as FSDP2's all_gather_stream and DMuon's broadcast_stream; a reduce stream for
// reduce-scatters, reduces and all-reduces, as their reduce streams). SimGrid-free: the
// simulator (simulator.cpp) only executes it.
//
// What this adds to the Plan, and why:
// - forward/backward compute per layer ("unit": a transformer block of a tower; a tower's
//   parameters outside blocks form a unit before (embeddings) or after (norm, head) them), as
//   core/cost/forward_backward_cost.hpp prices it (measured layers, interpolated building blocks,
//   or FLOPs at training.mfu; training.fwd_bwd_seconds split by FLOPs);
// - one NCCL launch per (layer, collective kind, group): FSDP2 all-gathers and reduce-scatters
//   a whole block's flat buffer at once and DMuon coalesces a block's broadcasts and reduces,
//   while a Plan lists one collective per parameter (or per owner);
// - forward collectives of unit i wait for the forward compute of unit i-1-prefetch_layers
//   (FSDP2 prefetches one block ahead), except those the Plan lets run ahead (Op::run_ahead:
//   no prefetch gate, on their own stream); backward reductions of a unit wait for its
//   backward;
// - steady state by simulating steps back to back (ProgramOptions::steps, the last reported):
//   step t+1's forward collectives wait for step t's update of their parameters on their rank
//   (SimOp::producer), so a run-ahead broadcast of step t+1 is step t's post-step broadcast,
//   starting when its owner has updated that matrix and overlapping step t+1's forward, and an
//   FSDP all-gather waits for its shard's update. One step (--validate: the benchmark's runs
//   are separate) starts every collective with the step;
// - with reshard_after_forward (Z3) the forward all-gathers/broadcasts run again before each
//   backward unit.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"
#include "sim/collective_schedule.hpp"

namespace dmuon::sim {

// kBroadcastStream: forward collectives that run ahead of the compute (Op::run_ahead, the
// owners' post-step broadcasts, DMuon's broadcast_stream), kept off the gather stream where
// FSDP's prefetch-gated all-gathers would hold them back; kLocalBroadcastStream: those of them
// inside one node (owner-striped's scatter and all-gather), so that one bucket's all-gather on
// NVLink overlaps the next bucket's broadcast on the NICs, as two NCCL communicators on two
// streams do.
enum SimStream {
  kComputeStream = 0,
  kGatherStream = 1,
  kReduceStream = 2,
  kBroadcastStream = 3,
  kLocalBroadcastStream = 4,
  kStreams = 5
};

struct SimOp {
  int stream = kComputeStream;
  Phase phase = Phase::optimizer;
  std::string category;   // forward, backward, momentum, newton_schulz, ..., or the collective kind
  std::string label;
  double seconds = 0;     // compute ops
  int collective = -1;    // StepProgram::collectives index
  std::vector<int> deps;  // earlier ops of the same rank
  // Where `seconds` (or the collective's time) came from, as core's source_class():
  // "measured", "interpolated" or "datasheet" (roofline, modelled links, MFU assumption).
  std::string source = "datasheet";
  // The host issue model (StepProgram::issue_s_per_launch set; otherwise the clock and times
  // below stay zero and nothing reads `launches`). The NCCL executor enqueues a rank's ops from
  // one host thread, ~5-8 us a launch, without waiting for the GPU inside a phase: when ops are
  // short the stream runs at the host's pace.
  int launches = 0;         // executor launches this op stands for (assign_issue_times)
  double host_s = 0;        // host seconds spent on it before its first launch beyond the launch
                            // cost (a fused AdamW head: building its tensor list)
  int issue_clock = 0;      // 0: counted from the step's start; 1: from the barrier after the
                            // forward/backward ops (plan_as_is: the benchmark's second run)
  double issued_s = 0;      // its first launch is enqueued this long after its clock's origin
  double issued_end_s = 0;  // and it cannot end earlier than this (its later launches)
  // Forward collectives: the op of this rank's list whose instance in the PREVIOUS step must
  // end first (the last optimizer op that touches its parameters); -1: none.
  int producer = -1;
  // Compute ops: of `seconds`, the GPU's wait for the host (a unit the host floor paces,
  // ComputeUnit::forward_host_wait_s, less what FSDP2's copies used); the rest is GPU work, the
  // only part that NCCL beside it slows or that slows NCCL.
  double host_wait_s = 0;
};

struct SimCollective {
  CollectiveCall call;
  Phase phase = Phase::optimizer;
  int stream = kGatherStream;
  bool run_ahead = false;  // Op::run_ahead: no prefetch gate
  std::string label;
  std::string group;  // the Plan's group name
  int merged = 1;     // Plan collectives in this launch
  int calls = 0;      // NCCL calls (a multi-region broadcast/reduce/all-reduce is one per region)
  // Copies around a packed call (strided regions, core/cost/plan_cost.hpp packed_copy_elements):
  // added to the collective's time on its stream.
  double pack_seconds = 0;
  // A one-member collective's time. Without a calibration curve: a launch per call and a read and
  // write of the payload (a local copy). With one: the curve, each extra call of the op's group
  // at what the calibration measured it adds (CostModel::local_extra_call_seconds;
  // sim/measured_collectives.hpp).
  double local_seconds = 0;
  // Several GPUs of one node with a calibration curve for this kind and communicator: one
  // launch alone takes this long (sim/measured_collectives.hpp); unset: modelled links.
  std::optional<double> measured_seconds;
};

struct StepProgram {
  std::vector<std::vector<SimOp>> ranks;
  std::vector<SimCollective> collectives;
  // Folded (ProgramOptions::keep_folded, a replica-symmetric Plan): `ranks` holds the template
  // replicas' lists (sim/replica_fold.hpp; replica 0's alone for the data-parallel strategies),
  // `shard` each, in replica order; rank r of the world() runs list replica_list[r / shard] +
  // r % shard, its collectives moved to replica r / shard by collective(r, c): for a replica that
  // is no template (copy_position >= 0), replica_copies[c][copy_position] is collective c's copy
  // in it (empty: c is shared by every replica), for the first step's collectives (step k's are
  // those + k x collectives_per_step). Unfolded: replicas == 1 and rank r runs ranks[r] as is.
  int replicas = 1;
  std::size_t shard = 0;
  std::vector<int> replica_list;   // per replica: the index in `ranks` of its template's first list
  std::vector<int> copy_position;  // per replica: its place among its template's copies; -1: a template
  std::vector<std::vector<int>> replica_copies;
  // Replicas built although the Plan gives them a template (sim/replica_fold.hpp: their launches
  // would not keep the template's order); they run lists of their own.
  std::size_t promoted_replicas = 0;
  std::size_t collectives_per_step = 0;
  std::size_t world() const { return replicas == 1 ? ranks.size() : shard * static_cast<std::size_t>(replicas); }
  // The list rank `rank` runs.
  std::size_t list(std::size_t rank) const {
    return replicas == 1 ? rank : static_cast<std::size_t>(replica_list[rank / shard]) + rank % shard;
  }
  // Whether the rank runs its list as built (unfolded, or in a template replica).
  bool runs_as_built(std::size_t rank) const { return replicas == 1 || copy_position[rank / shard] < 0; }
  const std::vector<SimOp>& ops(std::size_t rank) const { return ranks[list(rank)]; }
  int collective(std::size_t rank, int c) const {
    if (c < 0 || runs_as_built(rank)) return c;
    const std::size_t k = static_cast<std::size_t>(c) / collectives_per_step, first = static_cast<std::size_t>(c) % collectives_per_step;
    const auto& copies = replica_copies[first];
    return copies.empty() ? c : copies[static_cast<std::size_t>(copy_position[rank / shard])] + static_cast<int>(k * collectives_per_step);
  }
  // Per collective of every step: the template's collective it is a copy of (itself when none).
  std::vector<int> originals() const;
  std::size_t step_begin(std::size_t rank) const {  // last_step_begin of the rank's list (0: none)
    const std::size_t l = list(rank);
    return l < last_step_begin.size() ? last_step_begin[l] : 0;
  }
  // Steps simulated back to back: ranks[r] holds `steps` copies of one step's list, the last
  // reported; last_step_begin[r] is the index of its first op in ranks[r], and collectives
  // from last_step_collectives on are its launches.
  int steps = 1;
  std::vector<std::size_t> last_step_begin;
  std::size_t last_step_collectives = 0;
  double fwd_bwd_compute_s = 0;  // per GPU (every GPU runs the same layers)
  std::string compute_source;    // how fwd/bwd was priced
  std::vector<std::pair<std::string, double>> compute_seconds_by_source;  // "measured", ... -> seconds
  std::string optimizer_source;  // "roofline" without a calibration, else each source's share
  std::string launches_note;     // set when a layer's launches could not be merged
  // Ranks whose lists were built from the Plan; the others are their templates' moved
  // (ProgramOptions::fold_replicas).
  std::size_t built_ranks = 0;
  // Host seconds per executor launch (the calibration's executor_issue_us); unset: no host
  // model, ops start when their stream and dependencies allow.
  std::optional<double> issue_s_per_launch;
  // Compute beside NCCL (the calibration's compute_slowdown_beside_nccl): while a collective of
  // several GPUs is in flight on a rank (from the moment its stream reaches it, peers' wait
  // included: NCCL's kernel is resident from its launch; the probe measured it with data moving,
  // so the same slowdown while a kernel waits is assumed), that rank's compute runs 1 + this
  // times slower. Unset or 0: compute ignores collectives.
  std::optional<double> compute_slowdown_beside_nccl;
  // NCCL beside compute (the calibration's collective_slowdown_beside_compute): a collective of
  // several GPUs takes this many extra seconds for every second of its transfer during which one
  // of its members ran compute (NCCL's kernels share SMs and memory bandwidth with it). Unset or
  // 0: collectives ignore compute.
  std::optional<double> collective_slowdown_beside_compute;
};

struct ProgramOptions {
  // The Plan exactly as the NCCL executor's benchmark runs it: one launch per Plan collective,
  // every collective on one communication stream, no forward/backward compute. For --validate.
  bool plan_as_is = false;
  // Steps back to back, the last reported (Scenario::sim_steps); plan_as_is runs one.
  int steps = 1;
  // A replica-symmetric Plan's program built from its template replicas' ranks (replica 0's for
  // the data-parallel strategies) and moved to the others (sim/replica_fold.hpp): the same
  // program, built once per template instead of once per replica. Off: every rank is built
  // (the tests' reference; run_strategy then builds every rank's Plan too).
  bool fold_replicas = true;
  // With fold_replicas: keep the program folded (StepProgram::replicas), every replica sharing
  // the templates' lists, instead of copying them to every rank. The simulator runs either; tests
  // that read ranks[r] directly want them copied.
  bool keep_folded = false;
};

// Host issue times of one rank's ops (before merge_compute_runs), from their `launches` in list
// order, which is the order the executor enqueues them: op k's first launch is enqueued at
// seconds_per_launch x (launches of ops 0..k-1 on its clock + 1) after its clock's origin, so
// an op of N launches on an idle GPU ends no earlier than N launches in; an op without launches
// (a fused AdamW tail, forward/backward compute) is enqueued when the op before it was. An op's
// host_s delays its own first launch and every later one on its clock.
// Compute ops: issued_end_s = issued_s + seconds; collectives: the issue of their last launch.
// With `optimizer_restarts` (plan_as_is: the benchmark runs the optimizer ops as a second run
// after a barrier), optimizer-phase ops count on clock 1 from 0 again; they must then follow
// every forward/backward op of the rank in the list (throws dmuon::Error otherwise).
void assign_issue_times(std::vector<SimOp>& ops, double seconds_per_launch, bool optimizer_restarts);

// Throws dmuon::Error when the Plan's ops cannot be ordered (an internal inconsistency).
StepProgram build_step_program(const Plan& plan, const ModelSpec& model, const Routing& routing,
                               const OptimizerConfig& optimizer, const CostModel& cost,
                               const TrainingSpec& training, const ProgramOptions& options = {});

}  // namespace dmuon::sim
