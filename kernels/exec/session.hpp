// One Plan on one rank with host-side data in and out, for verification (no CUDA header):
// parameters and gradients uploaded as doubles (rounded as the GPU stores them), steps run
// exactly as the CPU interpreter runs them (forward ops, gradients, backward and optimizer ops),
// and the fp32 master weights this rank updated downloaded.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "kernels/exec/launch.hpp"

namespace dmuon::exec {

class RankExecutor;

struct SessionOptions {
  double timeout_seconds = 120;
  std::string ns_impl = "standard";  // a fixed implementation: runs on 1 and N GPUs comparable bit for bit
};

struct UpdatedRegion {
  Region region;
  std::vector<double> master;  // fp32 values, as doubles
};

class PlanSession {
 public:
  // Collective over the job's ranks.
  PlanSession(RankHandle& rank, const Plan& plan, const ModelSpec& model, const Routing& routing,
              const OptimizerConfig& config, const SessionOptions& options);
  ~PlanSession();

  // Every element this rank holds of each parameter's master and bf16 copy, from `params`
  // (flat, full size, one per parameter); optimizer state stays zero.
  void set_params(const std::vector<std::vector<double>>& params);
  // One step with this rank's local gradients (flat, full size, one per parameter).
  void step(const std::vector<std::vector<double>>& local_grads);
  // The master weights of every region this rank's muon_update and adamw ops write.
  std::vector<UpdatedRegion> updated_masters() const;

 private:
  const Plan& plan_;
  int rank_;
  long steps_ = 0;
  std::unique_ptr<RankExecutor> executor_;
};

}  // namespace dmuon::exec
