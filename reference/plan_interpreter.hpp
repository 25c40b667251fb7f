// The CPU executor of a Plan: ranks as threads, in-process collectives with NCCL's semantics
// (inprocess_collectives.hpp), compute ops through the Eigen reference. It runs any Plan on
// real tensors, so a plan's numbers can be compared with the single-device reference, and a
// broken plan ends in a dmuon::Error rather than a hang.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "reference/inprocess_collectives.hpp"
#include "reference/rounding.hpp"

namespace dmuon::ref {

struct InterpreterOptions {
  // Last resort for a wait that nothing else ends; mismatches and deadlocks are found at once.
  double timeout_seconds = 60;
};

class PlanInterpreter {
 public:
  // Every rank gets a full-size flat buffer per (parameter, BufferKind): parameters from
  // `initial_params` (flat, row-major, one per parameter), everything else zeros. The plan is
  // not validated here (Plan::validate does that statically); it is checked as it runs.
  // Throws dmuon::Error on parameters of the wrong count or size, or an invalid config.
  PlanInterpreter(const Plan& plan, const ModelSpec& model, const Routing& routing, const OptimizerConfig& config,
                  Rounding rounding, const std::vector<Eigen::VectorXd>& initial_params,
                  InterpreterOptions options = {});

  // One training step: the forward-phase ops, then each rank's local gradient (full size,
  // [rank][param]) copied into its gradient buffers, then the backward- and optimizer-phase ops.
  // Each rank is one thread running its ops in list order. Throws the first error of the step
  // as one dmuon::Error line; the interpreter's state is then undefined.
  // Non-finite local gradients are found before any op runs, so every rank takes the same
  // decision: the parameter's policy (config muon.nonfinite for Muon-routed parameters,
  // adamw.nonfinite for the others) throws naming the rank and parameter, or skips it (no op
  // touches its weights or state this step; its AdamW step count stays). A non-finite value
  // that appears later (a reduction, momentum, moment or weight overflowing) is an error.
  void step(const std::vector<std::vector<Eigen::VectorXd>>& local_grads);

  // Runs the forward-phase ops (gathering and broadcasting parameters, so every rank holds
  // full parameters again) and returns each rank's parameter buffers, [rank][param].
  std::vector<std::vector<Eigen::VectorXd>> params_after_forward();

  // Per rank, what it failed with in the last failing run ("" for a rank that did not fail);
  // the other ranks' view of the first error (e.g. "rank 1 failed: ...").
  const std::vector<std::string>& rank_errors() const { return rank_errors_; }
  long steps_taken() const { return steps_; }

 private:
  enum class Run { forward, backward_and_optimizer };
  void run(Run which, std::chrono::steady_clock::time_point deadline);
  void run_rank(int rank, Run which, Rendezvous& rendezvous);
  std::chrono::steady_clock::time_point deadline() const;
  void compute(int rank, int index);
  void momentum(int rank, const Op& op, const std::string& where);
  void newton_schulz(int rank, const Op& op, const std::string& where);
  void sharded_newton_schulz(const std::vector<std::pair<int, int>>& members);
  void muon_update(int rank, const Op& op, const std::string& where);
  void adamw(int rank, const Op& op, const std::string& where);
  void mark_nonfinite_gradients(const std::vector<std::vector<Eigen::VectorXd>>& local_grads);
  void require_finite(const double* data, std::int64_t n, const std::string& where, const char* what,
                      std::size_t param) const;

  Plan plan_;
  std::vector<std::string> param_names_;
  Routing routing_;
  OptimizerConfig config_;
  Rounding rounding_;
  InterpreterOptions options_;
  RankBuffers buffers_;
  std::vector<double> lr_adjusted_;  // per parameter; NaN where the parameter has no Muon matrix
  long steps_ = 0;
  std::vector<long> param_steps_;  // steps each parameter took (AdamW's t), skips excluded
  std::vector<char> skip_;          // per parameter: skipped this step (non-finite gradient)
  std::vector<std::string> rank_errors_;
};

}  // namespace dmuon::ref
