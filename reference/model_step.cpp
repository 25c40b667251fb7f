#include "reference/model_step.hpp"

#include <string>

#include "core/error.hpp"
#include "core/plan/plan.hpp"
#include "reference/nonfinite.hpp"

namespace dmuon::ref {
namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

FlatParams mean_of(const std::vector<FlatParams>& rank_grads, const FlatParams& like) {
  if (rank_grads.empty()) throw Error("model step: no rank gradients");
  for (std::size_t r = 0; r < rank_grads.size(); ++r) {
    for (std::size_t p = 0; p < like.size(); ++p) {
      if (rank_grads[r].size() != like.size() || rank_grads[r][p].size() != like[p].size()) {
        throw Error("model step: rank " + std::to_string(r) + " gradient of parameter " + std::to_string(p) +
                    " does not match the parameter's size");
      }
    }
  }
  FlatParams mean;
  for (std::size_t p = 0; p < like.size(); ++p) {
    Eigen::VectorXd sum = rank_grads[0][p];
    for (std::size_t r = 1; r < rank_grads.size(); ++r) sum += rank_grads[r][p];
    mean.push_back(sum / static_cast<double>(rank_grads.size()));
  }
  return mean;
}

}  // namespace

ModelStep::ModelStep(const ModelSpec& model, const Routing& routing, const OptimizerConfig& config, bool all_adamw,
                     FlatParams initial, Rounding rounding)
    : params_(std::move(initial)), routing_(routing), config_(config), all_adamw_(all_adamw), rounding_(rounding),
      muon_(routing.muon_matrices.size()), adamw_(model.params.size()) {
  for (const ParamSpec& p : model.params) names_.push_back(p.name);
  if (params_.size() != model.params.size()) {
    throw Error("model step: " + std::to_string(params_.size()) + " parameters given, the model has " +
                std::to_string(model.params.size()));
  }
}

void ModelStep::step(const std::vector<FlatParams>& rank_grads) {
  const FlatParams mean = mean_of(rank_grads, params_);
  // Skipped as a whole parameter (every expert of a stack), the plan interpreter's unit.
  std::vector<char> skip(params_.size(), 0);
  for (std::size_t p = 0; p < params_.size(); ++p) {
    const bool muon = routing_.per_param[p] == Update::muon;
    const std::int64_t bad = first_nonfinite(mean[p].data(), mean[p].size());
    if (bad < 0) continue;
    if ((muon ? config_.muon.nonfinite : config_.adamw.nonfinite) == NonfinitePolicy::error) {
      throw Error(nonfinite_message("model step", "mean gradient", names_[p], mean[p][bad], bad));
    }
    skip[p] = 1;
  }
  for (std::size_t p = 0; p < params_.size(); ++p) {
    if (skip[p] || (!all_adamw_ && routing_.per_param[p] == Update::muon)) continue;
    Eigen::MatrixXd W = params_[p];
    adamw_step(W, Eigen::MatrixXd(mean[p]), adamw_[p], config_.adamw, rounding_, names_[p]);
    params_[p] = W;
  }
  if (all_adamw_) return;
  for (std::size_t m = 0; m < routing_.muon_matrices.size(); ++m) {
    const MuonMatrix& mm = routing_.muon_matrices[m];
    if (skip[mm.param]) continue;
    const Region region = matrix_region(routing_, m);
    Eigen::Map<RowMajor> w(params_[mm.param].data() + region.offset, mm.rows, mm.cols);
    Eigen::MatrixXd W = w;
    const Eigen::MatrixXd G = Eigen::Map<const RowMajor>(mean[mm.param].data() + region.offset, mm.rows, mm.cols);
    muon_step(W, G, muon_[m], config_.muon, rounding_, mm.name);
    w = W;
  }
}

}  // namespace dmuon::ref
