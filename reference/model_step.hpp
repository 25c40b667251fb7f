// The single-device optimizer step of a whole model, on flat row-major parameter buffers: what
// every distributed Plan must reproduce. Gradients of the ranks are averaged (summed in rank
// order, then divided, as a ring or a rooted reduce of NCCL does on one device), then Muon per
// matrix (each expert of a stack on its own) and AdamW per remaining parameter.
#pragma once
#include <string>
#include <vector>

#include <Eigen/Core>

#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/model/routing.hpp"
#include "reference/adamw_step.hpp"
#include "reference/muon_step.hpp"

namespace dmuon::ref {

using FlatParams = std::vector<Eigen::VectorXd>;  // one flat row-major buffer per parameter

class ModelStep {
 public:
  // all_adamw: every parameter through AdamW (the `adamw` strategy's semantics).
  ModelStep(const ModelSpec& model, const Routing& routing, const OptimizerConfig& config, bool all_adamw,
            FlatParams initial, Rounding rounding);

  // One step with the ranks' local gradients, [rank][param]. Throws dmuon::Error on a gradient
  // of the wrong count or size. A parameter whose mean gradient is not finite follows its
  // policy as the plan interpreter does: error names it, skip leaves it (and its state) as is.
  void step(const std::vector<FlatParams>& rank_grads);

  const FlatParams& params() const { return params_; }

 private:
  FlatParams params_;
  std::vector<std::string> names_;
  const Routing& routing_;
  OptimizerConfig config_;
  bool all_adamw_;
  Rounding rounding_;
  std::vector<MuonState> muon_;
  std::vector<AdamWState> adamw_;
};

}  // namespace dmuon::ref
