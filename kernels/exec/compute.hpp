// The Plan's compute ops on one rank's compute stream, through the kernels of issue [C]: the
// fused momentum and Muon-update kernels per region, the batched NS engine per newton_schulz op
// (in place when the batch's matrices lie back to back, which the buffer layout arranges; through
// a staging copy otherwise), multi-tensor AdamW over one or several adamw ops; a rank's share of
// a sharded newton_schulz op through the engine's sharded call (kernels/exec/ns_shard_member.hpp).
#pragma once
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "kernels/exec/buffers.hpp"
#include "kernels/exec/ns_shard_member.hpp"
#include "kernels/cuda/ns_engine.hpp"

namespace dmuon::exec {

struct ComputeOptions {
  // automatic: the engine's autotuned winner; a fixed impl makes runs on different GPU counts
  // bitwise comparable (dmuon-verify --backend nccl).
  cuda::NsImpl ns_impl = cuda::NsImpl::automatic;
  cuda::NsEngineOptions engine;
};

class ComputeRunner {
 public:
  ComputeRunner(const ModelSpec& model, const Routing& routing, const OptimizerConfig& config, cudaStream_t stream,
                ComputeOptions options);
  ~ComputeRunner();

  // Enqueues one compute op. `adam_step` is the AdamW step number t (1 on the first step).
  // Throws dmuon::Error starting with `where`.
  void launch(const Op& op, DeviceBuffers& buffers, long adam_step, const std::string& where);
  // Several adamw ops as one multi-tensor launch (same numbers as one launch per op).
  void launch_adamw(const std::vector<const Op*>& ops, DeviceBuffers& buffers, long adam_step, const std::string& where);
  // This rank's share of a sharded newton_schulz op: ns_input's columns of `member` to
  // ns_output's, the sums over the group by `reduce` (on this runner's stream). A wide matrix's
  // strided column block goes through the staging area. Throws dmuon::Error starting with `where`.
  void launch_sharded_ns(const NsShardMember& member, const cuda::NsShardReduce& reduce, DeviceBuffers& buffers,
                         const std::string& where);

  // The gradients with NaN or infinite elements this runner has met, as
  // "'name' (N elements), ..." ("" when none). The fused kernels count those elements per
  // parameter and leave them unapplied; this reads the counts (synchronising the compute
  // stream), so call it after a step, not inside one.
  std::string nonfinite_gradients();

  // Staging bytes held for batches whose matrices are not back to back (0 when none were).
  std::size_t staging_bytes() const { return staging_bytes_; }
  int staged_calls() const { return staged_calls_; }

 private:
  void newton_schulz(const Op& op, DeviceBuffers& buffers, const std::string& where);
  void* staging(std::size_t bytes);

  const Routing& routing_;
  OptimizerConfig config_;
  cudaStream_t stream_;
  ComputeOptions options_;
  cuda::NsEngine engine_;
  std::vector<double> lr_adjusted_;  // per parameter, the Muon lr multiplier (NaN: not Muon)
  std::vector<std::string> names_;
  unsigned* nonfinite_ = nullptr;  // device, one counter per parameter; never reset (any count is fatal)
  void* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
  int staged_calls_ = 0;
};

}  // namespace dmuon::exec
