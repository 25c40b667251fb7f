// Runs a StepProgram on the SimGrid platform of a cluster: one actor per GPU stream in use
// (compute, gather, reduce, broadcast streams; sim/runner.hpp) runs its ops in order, each op
// starting once its dependencies on the same GPU are done; a collective starts when every
// member's stream has reached it (as an NCCL kernel progresses only once all ranks launched it)
// and is executed by the last one to arrive, in `flows` mode step by step as point-to-point
// flows, in `fast` mode as one parallel task plus the latency and pipeline-fill terms of its
// schedule (collective_schedule.hpp).
// Compute ops are delays of the cost model's seconds: one compute stream per GPU, no slowdown
// of compute by concurrent NCCL kernels (a known gap: NVIDIA/nccl#701).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/io/scenario.hpp"
#include "sim/step_program.hpp"

namespace dmuon::sim {

struct CollectiveRecord {
  std::string kind, algorithm, group, label, phase;
  int ranks = 0;
  int merged = 1;
  double bytes = 0;
  double start_s = 0, end_s = 0;
  double seconds() const { return end_s - start_s; }
  double algbw_GBps() const { return seconds() > 0 ? bytes / seconds() / 1e9 : 0; }
  double busbw_GBps() const;
};

struct SimOutcome {
  double step_s = 0;          // last op of any GPU
  double grads_ready_s = 0;   // last forward/backward op (compute or collective) of any GPU
  double critical_compute_busy_s = 0;  // compute-stream busy time of the GPU that ends last
  std::vector<double> optimizer_compute_s;  // per GPU
  // The GPU that ends last: seconds of its ops (compute ops' seconds, collectives' execution
  // time) by SimOp::source class ("measured", "interpolated", "datasheet").
  std::map<std::string, double> critical_seconds_by_source;
  std::vector<CollectiveRecord> collectives;
  double wall_s = 0;          // host seconds the simulation took (platform included)
  int simulated_gpus = 0;     // GPUs that ran actors: the template replicas' when replicas run in lockstep
};

struct SimOptions {
  SimMode mode = SimMode::fast;
  std::string trace_file;     // Chrome trace (Perfetto) when not empty
  int trace_nodes = 2;        // nodes whose GPUs the trace shows (all when <= 0)
  // Wait on every dependency of an op and wake every waiting stream of a GPU at each op's end,
  // as the runner did before it reduced dependencies to one per stream (runner.hpp): the
  // reference the tests hold the default runner to. Same predictions, slower.
  bool reference_runner = false;
  // A folded program whose replicas run in lockstep (replica_lockstep.hpp) simulates replica 0's
  // GPUs only. Off: every GPU (the tests' reference). Same predictions.
  bool lockstep_replicas = true;
  // Let SimGrid mark the constraints each change can reach, which the fast model's solver never
  // reads (l07_selective_update.hpp). Off: skipped, quadratic in a collective's hosts. Same
  // predictions; the tests' reference.
  bool keep_marking_walk = false;
  // A collective's parallel task across more than one node runs over a few proxy hosts with the
  // same links, weights and latencies (proxy_task.hpp). Off: over its GPUs, an n x n byte matrix
  // (the tests' reference). Same predictions.
  bool proxy_tasks = true;
};

// Forks a child for the simulation (isolated_run.hpp). Throws dmuon::Error for a deadlock
// (naming the rank and op that never ran) or a trace file that cannot be written.
SimOutcome simulate(const StepProgram& program, const ClusterSpec& cluster, const SimOptions& options);
// The same in this process: only once per process (SimGrid's one Engine), e.g. in a child.
SimOutcome simulate_in_process(const StepProgram& program, const ClusterSpec& cluster, const SimOptions& options);

// Text form of an outcome, to cross a process boundary.
std::string outcome_to_json(const SimOutcome& o);
SimOutcome outcome_from_json(const std::string& text);

}  // namespace dmuon::sim
