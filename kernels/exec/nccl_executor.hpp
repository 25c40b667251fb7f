// The NCCL executor of a Plan, one object per rank (one process a GPU under MPI, or one thread
// a GPU in the single-process mode). Each rank has a compute and a communication stream; every
// op goes on the stream the Plan names, after cudaStreamWaitEvent on the ops it depends on that
// ran on the other stream (the Plan's read-after-write and write-after-write dependencies, plus
// the write-after-read ones the executor derives itself), so communication overlaps compute
// exactly as far as the Plan allows. The host enqueues a whole phase without synchronising,
// then waits by polling: CUDA events, NCCL asynchronous errors, a peer's failure (single-process
// mode) and a deadline. Any of those aborts the communicators and throws one dmuon::Error line
// naming the rank and the earliest op that did not complete.
//
// A sharded newton_schulz op (core/plan/ns_sharding.hpp) runs on the compute stream as this
// rank's share of the call: the NS engine's sharded program on its columns, with the squared
// norm and every X X^T summed by NCCL all-reduces on the communicator of the op's group between
// the GEMMs (kernels/exec/ns_shard_member.hpp, NsEngine::run_sharded).
//
// Non-finite gradients: only `nonfinite: error` is run (skipping a sharded parameter would need
// every rank to agree on it first). The fused optimizer kernels leave NaN/Inf gradient elements
// unapplied and count them; a run() that met any throws, after its ops completed, naming the
// parameters: the job ends with no NaN in any weight.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "core/plan/step_units.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/exec/buffers.hpp"
#include "kernels/exec/compute.hpp"
#include "kernels/exec/ns_shard_member.hpp"
#include "kernels/exec/timing.hpp"

namespace dmuon::exec {

struct ExecutorOptions {
  double timeout_seconds = 300;  // one run() (a phase) longer than this is a hang: abort
  ComputeOptions compute;
  bool fuse_adamw = true;        // consecutive adamw ops as one multi-tensor launch
};

enum PhaseMask : unsigned { kForward = 1, kBackward = 2, kOptimizer = 4, kAllPhases = 7 };

// The work a StepSchedule's compute items stand for (kernels/exec/compute_standin.hpp): the Plan has
// no forward/backward compute, so the caller supplies it.
class UnitCompute {
 public:
  virtual ~UnitCompute() = default;
  // Enqueues unit `unit`'s forward or backward compute on `stream`; throws dmuon::Error.
  virtual void enqueue(int unit, Phase phase, cudaStream_t stream) = 0;
};

class RankExecutor {
 public:
  // Allocates this rank's buffers (zeros) and creates the communicators of the Plan's groups
  // (collective: every rank constructs its executor for the same plan at the same time).
  RankExecutor(comm::RankComms& comms, const Plan& plan, const ModelSpec& model, const Routing& routing,
               const OptimizerConfig& config, ExecutorOptions options, const std::atomic<bool>* peer_failed = nullptr);
  ~RankExecutor();
  RankExecutor(const RankExecutor&) = delete;
  RankExecutor& operator=(const RankExecutor&) = delete;

  DeviceBuffers& buffers() { return *buffers_; }
  const Plan& plan() const { return plan_; }
  int rank() const { return comms_.rank(); }
  int staged_ns_calls() const { return compute_runner_->staged_calls(); }

  // Runs this rank's ops of the phases in `phases` in list order and waits for them. AdamW uses
  // step number `adam_step`. With time_ops, every op gets a start and end event.
  RunTiming run(unsigned phases, long adam_step, bool time_ops = false);
  // The whole step as one run: the forward and backward ops in `schedule`'s order
  // (core/plan/step_units.hpp: this rank's schedule for this Plan) with `compute`'s work for its
  // compute items on the compute stream, then the optimizer ops in list order. Timed compute
  // items appear in the spans with op -1 and their unit (OpSpan::standin_unit).
  RunTiming run_step(const StepSchedule& schedule, UnitCompute& compute, long adam_step, bool time_ops = false);

  // Describes op `index` as errors do: "rank 1 op 17 (reduce 'layer 3', collective 12)".
  std::string describe(int index) const;

 private:
  struct Events;
  struct Issued;
  RunTiming run_issuing(unsigned phases, bool time_ops, const std::function<void(Issued&)>& issue);
  void issue_in_order(unsigned phases, long adam_step, bool time_ops, Issued& issued);
  void issue_schedule(const StepSchedule& schedule, UnitCompute& compute, long adam_step, bool time_ops, Issued& issued);
  void enqueue(int index, unsigned phases, long adam_step, bool time_ops, int& fused);
  void wait(unsigned phases);
  [[noreturn]] void fail(const std::string& cause, unsigned phases);
  cudaStream_t stream_of(const Op& op) const;

  comm::RankComms& comms_;
  const Plan& plan_;
  const ModelSpec& model_;
  const Routing& routing_;
  OptimizerConfig config_;
  ExecutorOptions options_;
  const std::atomic<bool>* peer_failed_;
  std::vector<std::vector<int>> waits_;  // per op: ops on the other stream it must wait for
  std::vector<char> issued_;             // per op: enqueued in the current run
  // When the current run's last AdamW launch call returned (its list built, its kernels
  // enqueued), before the per-op event records after it; unset: no AdamW op in the run.
  std::optional<std::chrono::steady_clock::time_point> adamw_launched_;
  std::map<int, NsShardMember> shard_members_;  // by op: this rank's share of a sharded NS call
  std::unique_ptr<DeviceBuffers> buffers_;
  cudaStream_t compute_ = nullptr, comm_ = nullptr;
  std::unique_ptr<Events> events_;
  std::unique_ptr<ComputeRunner> compute_runner_;
  cuda::DeviceBuffer pack_buffers_[2];  // packed collectives' staging: compute stream, comm stream
};

}  // namespace dmuon::exec
