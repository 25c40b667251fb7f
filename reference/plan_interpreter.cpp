#include "reference/plan_interpreter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "core/error.hpp"
#include "reference/elementwise_steps.hpp"
#include "core/plan/ns_sharding.hpp"
#include "reference/newton_schulz.hpp"
#include "reference/nonfinite.hpp"

namespace dmuon::ref {
namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

std::vector<std::int64_t> numels(const ModelSpec& model) {
  std::vector<std::int64_t> out;
  for (const ParamSpec& p : model.params) out.push_back(p.numel());
  return out;
}

// The lr multiplier of each Muon parameter. Every matrix of one parameter has one shape (an
// expert stack (E, out, in) gives E out x in matrices), so a region anywhere in the parameter
// (a shard across experts included) has one adjusted lr.
std::vector<double> adjusted_lrs(const ModelSpec& model, const Routing& routing, const MuonConfig& cfg) {
  std::vector<double> out(model.params.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<std::pair<std::int64_t, std::int64_t>> shape(model.params.size(), {0, 0});
  for (const MuonMatrix& m : routing.muon_matrices) {
    if (m.param >= model.params.size()) throw Error("interpreter: Muon matrix '" + m.name + "' of unknown parameter");
    auto& s = shape[m.param];
    if (s.first != 0 && s != std::pair{m.rows, m.cols}) {
      throw Error("interpreter: parameter '" + model.params[m.param].name + "' has Muon matrices of different shapes");
    }
    s = {m.rows, m.cols};
    out[m.param] = adjusted_lr(cfg, m.rows, m.cols);
  }
  return out;
}

}  // namespace

PlanInterpreter::PlanInterpreter(const Plan& plan, const ModelSpec& model, const Routing& routing,
                                 const OptimizerConfig& config, Rounding rounding,
                                 const std::vector<Eigen::VectorXd>& initial_params, InterpreterOptions options)
    : plan_(plan),
      routing_(routing),
      config_(config),
      rounding_(rounding),
      options_(options),
      buffers_(plan.mesh.world(), numels(model)),
      lr_adjusted_(adjusted_lrs(model, routing, config.muon)),
      param_steps_(model.params.size(), 0),
      skip_(model.params.size(), 0),
      rank_errors_(plan.ranks.size()) {
  config_.validate();
  if (static_cast<int>(plan.ranks.size()) != plan.mesh.world()) {
    throw Error("interpreter: " + std::to_string(plan.ranks.size()) + " rank lists for a mesh of " +
                std::to_string(plan.mesh.world()) + " ranks");
  }
  if (!(options.timeout_seconds > 0)) throw Error("interpreter: timeout_seconds must be > 0");
  if (initial_params.size() != model.params.size()) {
    throw Error("interpreter: " + std::to_string(initial_params.size()) + " initial parameters for a model of " +
                std::to_string(model.params.size()));
  }
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    param_names_.push_back(model.params[p].name);
    if (initial_params[p].size() != model.params[p].numel()) {
      throw Error("interpreter: initial parameter '" + model.params[p].name + "' has " +
                  std::to_string(initial_params[p].size()) + " elements, expected " +
                  std::to_string(model.params[p].numel()));
    }
    for (int r = 0; r < plan.mesh.world(); ++r) buffers_.buffer(r, p, BufferKind::param) = initial_params[p];
  }
}

std::chrono::steady_clock::time_point PlanInterpreter::deadline() const {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(options_.timeout_seconds));
}

void PlanInterpreter::step(const std::vector<std::vector<Eigen::VectorXd>>& local_grads) {
  const int world = buffers_.world();
  if (static_cast<int>(local_grads.size()) != world) {
    throw Error("interpreter: gradients for " + std::to_string(local_grads.size()) + " ranks, the plan has " +
                std::to_string(world));
  }
  for (int r = 0; r < world; ++r) {
    const auto& grads = local_grads[at(r)];
    if (grads.size() != buffers_.params()) {
      throw Error("interpreter: rank " + std::to_string(r) + " has " + std::to_string(grads.size()) +
                  " gradients, the model has " + std::to_string(buffers_.params()) + " parameters");
    }
    for (std::size_t p = 0; p < grads.size(); ++p) {
      if (grads[p].size() != buffers_.numel(p)) {
        throw Error("interpreter: rank " + std::to_string(r) + " gradient of '" + param_names_[p] + "' has " +
                    std::to_string(grads[p].size()) + " elements, expected " + std::to_string(buffers_.numel(p)));
      }
    }
  }
  mark_nonfinite_gradients(local_grads);
  const auto until = deadline();
  // Every rank takes the step, an AdamW shard of zero elements included: the bias-correction
  // step t counts steps taken, not adamw ops run (nor steps a non-finite gradient skipped).
  ++steps_;
  for (std::size_t p = 0; p < param_steps_.size(); ++p) param_steps_[p] += skip_[p] ? 0 : 1;
  run(Run::forward, until);
  for (int r = 0; r < world; ++r) {
    for (std::size_t p = 0; p < buffers_.params(); ++p) buffers_.buffer(r, p, BufferKind::grad) = local_grads[at(r)][p];
  }
  run(Run::backward_and_optimizer, until);
}

void PlanInterpreter::mark_nonfinite_gradients(const std::vector<std::vector<Eigen::VectorXd>>& local_grads) {
  for (std::size_t p = 0; p < skip_.size(); ++p) {
    skip_[p] = 0;
    const bool muon = p < routing_.per_param.size() && routing_.per_param[p] == Update::muon;
    const NonfinitePolicy policy = muon ? config_.muon.nonfinite : config_.adamw.nonfinite;
    for (std::size_t r = 0; r < local_grads.size(); ++r) {
      const Eigen::VectorXd& g = local_grads[r][p];
      const std::int64_t bad = first_nonfinite(g.data(), g.size());
      if (bad < 0) continue;
      if (policy == NonfinitePolicy::error) {
        throw Error(nonfinite_message("interpreter: rank " + std::to_string(r), "gradient", param_names_[p],
                                      g[bad], bad));
      }
      skip_[p] = 1;
    }
  }
}

void PlanInterpreter::require_finite(const double* data, std::int64_t n, const std::string& where,
                                     const char* what, std::size_t param) const {
  const std::int64_t bad = first_nonfinite(data, n);
  if (bad >= 0) throw Error(nonfinite_message(where, what, param_names_[param], data[bad], bad));
}

std::vector<std::vector<Eigen::VectorXd>> PlanInterpreter::params_after_forward() {
  run(Run::forward, deadline());
  std::vector<std::vector<Eigen::VectorXd>> out(at(buffers_.world()));
  for (int r = 0; r < buffers_.world(); ++r) {
    for (std::size_t p = 0; p < buffers_.params(); ++p) out[at(r)].push_back(buffers_.buffer(r, p, BufferKind::param));
  }
  return out;
}

// One thread a rank; the run's first error (its cause, not the echoes) is rethrown once all
// threads have stopped, which the rendezvous guarantees happens.
void PlanInterpreter::run(Run which, std::chrono::steady_clock::time_point until) {
  Rendezvous rendezvous(plan_, buffers_, until, options_.timeout_seconds,
                        [this](const std::vector<std::pair<int, int>>& members) { sharded_newton_schulz(members); });
  for (auto& e : rank_errors_) e.clear();
  std::vector<std::thread> threads;
  threads.reserve(plan_.ranks.size());
  for (int r = 0; r < static_cast<int>(plan_.ranks.size()); ++r) {
    threads.emplace_back([this, r, which, &rendezvous] { run_rank(r, which, rendezvous); });
  }
  for (auto& t : threads) t.join();
  if (const std::string error = rendezvous.first_error(); !error.empty()) throw Error(error);
}

void PlanInterpreter::run_rank(int rank, Run which, Rendezvous& rendezvous) {
  try {
    const auto& ops = plan_.ranks[at(rank)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const bool forward = ops[at(i)].phase == Phase::forward;
      if (forward != (which == Run::forward)) continue;
      rendezvous.throw_if_aborted();
      if (synchronizes(ops[at(i)])) {
        rendezvous.arrive(rank, i);
      } else {
        compute(rank, i);
      }
    }
    rendezvous.finish(rank);
  } catch (const std::exception& e) {
    rank_errors_[at(rank)] = e.what();  // each thread writes its own element
    rendezvous.fail(rank, e.what());
  }
}

void PlanInterpreter::compute(int rank, int index) {
  const Op& op = plan_.ranks[at(rank)][at(index)];
  const std::string where = describe_op(plan_, rank, index);
  switch (op.kind) {
    case OpKind::momentum: momentum(rank, op, where); return;
    case OpKind::newton_schulz: newton_schulz(rank, op, where); return;
    case OpKind::muon_update: muon_update(rank, op, where); return;
    case OpKind::adamw: adamw(rank, op, where); return;
    default: throw Error(where + ": not a compute op");
  }
}

// Region offsets in the "element" of messages are relative to the region's start.
void PlanInterpreter::momentum(int rank, const Op& op, const std::string& where) {
  for (const Region& r : op.regions) {
    buffers_.check(r, where);
    if (skip_[r.param]) continue;
    const double* grad = buffers_.at(rank, BufferKind::grad, r, where);
    require_finite(grad, r.count, where, "reduced gradient", r.param);
    double* momentum = buffers_.at(rank, BufferKind::momentum, r, where);
    double* ns_input = buffers_.at(rank, BufferKind::ns_input, r, where);
    momentum_elementwise(grad, momentum, ns_input, r.count, config_.muon, rounding_);
    require_finite(momentum, r.count, where, "momentum", r.param);
    require_finite(ns_input, r.count, where, "Newton-Schulz input", r.param);
  }
}

// Each matrix of the op on its own, exactly as the single-matrix reference runs it: the region
// read as a row-major rows x cols matrix.
void PlanInterpreter::newton_schulz(int rank, const Op& op, const std::string& where) {
  for (std::size_t m : op.matrices) {
    if (m >= routing_.muon_matrices.size()) {
      throw Error(where + ": unknown Muon matrix " + std::to_string(m) + " (the routing has " +
                  std::to_string(routing_.muon_matrices.size()) + ")");
    }
    const MuonMatrix& mm = routing_.muon_matrices[m];
    if (skip_[mm.param]) continue;
    const Region region = matrix_region(routing_, m);
    const Eigen::MatrixXd input =
        Eigen::Map<const RowMajor>(buffers_.at(rank, BufferKind::ns_input, region, where), mm.rows, mm.cols);
    const Eigen::MatrixXd output = ref::newton_schulz(input, config_.muon.ns, rounding_);
    Eigen::Map<RowMajor>(buffers_.at(rank, BufferKind::ns_output, region, where), mm.rows, mm.cols) = output;
    require_finite(output.data(), output.size(), where, "Newton-Schulz output", mm.param);
  }
}

// A sharded call (Op::ns_column_begin): each member's columns of the wide orientation read from
// its own ns_input, the call run on the blocks in group order (sums over blocks as its
// all-reduces take them), each block written to its member's ns_output.
void PlanInterpreter::sharded_newton_schulz(const std::vector<std::pair<int, int>>& members) {
  std::vector<std::pair<int, int>> ordered = members;
  const Op& first = plan_.ranks[at(ordered.front().first)][at(ordered.front().second)];
  const auto& group = plan_.groups.at(at(first.group)).ranks;
  std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    return std::find(group.begin(), group.end(), a.first) < std::find(group.begin(), group.end(), b.first);
  });
  const std::string where = describe_op(plan_, ordered.front().first, ordered.front().second);
  if (first.matrices.size() != 1 || first.matrices.front() >= routing_.muon_matrices.size()) {
    throw Error(where + ": a sharded Newton-Schulz names one known Muon matrix");
  }
  const std::size_t m = first.matrices.front();
  const MuonMatrix& mm = routing_.muon_matrices[m];
  if (skip_[mm.param]) return;
  const Region whole = matrix_region(routing_, m);
  // X = G^T for tall and square matrices (ns_shard_by_stored_rows: members hold rows of G).
  const bool transposed = ns_shard_by_stored_rows(mm);
  const Eigen::Index wide_rows = std::min(mm.rows, mm.cols);
  using Strided = Eigen::Map<RowMajor, 0, Eigen::OuterStride<>>;
  auto block = [&](int rank, BufferKind kind, const Op& op) {  // this member's columns, in place
    const std::int64_t begin = op.ns_column_begin, count = op.ns_column_end - op.ns_column_begin;
    if (begin < 0 || count < 1 || begin + count > std::max(mm.rows, mm.cols)) {
      throw Error(where + ": rank " + std::to_string(rank) + " sharded Newton-Schulz columns outside matrix '" + mm.name + "'");
    }
    double* base = buffers_.at(rank, kind, whole, where);
    // Tall: the wide orientation's columns are rows of the stored matrix; wide: a strided block.
    return transposed ? Strided(base + begin * mm.cols, count, mm.cols, Eigen::OuterStride<>(mm.cols))
                      : Strided(base + begin, wide_rows, count, Eigen::OuterStride<>(mm.cols));
  };
  // Every member agrees with the first on splitting the m x m products, each with its own block
  // (Plan::validate's rule; the interpreter may be handed an unvalidated Plan).
  const int k = static_cast<int>(ordered.size());
  const Op& lead = plan_.ranks[at(ordered[0].first)][at(ordered[0].second)];  // the group's first member
  for (int j = 0; j < k; ++j) {
    const Op& op = plan_.ranks[at(ordered[j].first)][at(ordered[j].second)];
    const bool agrees = splits_ns_products(op) == splits_ns_products(lead);
    const bool own_block = !splits_ns_products(op) || holds_product_block(op, wide_rows, k, j);
    if (!agrees || !own_block) {
      throw Error(where + ": rank " + std::to_string(ordered[j].first) + " product columns [" +
                  std::to_string(op.ns_product_begin) + ", " + std::to_string(op.ns_product_end) + ") are not member " +
                  std::to_string(j) + "'s split of the call");
    }
  }
  std::vector<Eigen::MatrixXd> shards;
  for (const auto& [rank, index] : ordered) {
    const Strided in = block(rank, BufferKind::ns_input, plan_.ranks[at(rank)][at(index)]);
    shards.push_back(transposed ? Eigen::MatrixXd(in.transpose()) : Eigen::MatrixXd(in));
  }
  shards = ref::sharded_newton_schulz(std::move(shards), config_.muon.ns, rounding_, splits_ns_products(first));
  for (std::size_t j = 0; j < ordered.size(); ++j) {
    const auto [rank, index] = ordered[j];
    Strided out = block(rank, BufferKind::ns_output, plan_.ranks[at(rank)][at(index)]);
    if (transposed) {
      out = shards[j].transpose();
    } else {
      out = shards[j];
    }
    require_finite(shards[j].data(), shards[j].size(), where, "Newton-Schulz output", mm.param);
  }
}

void PlanInterpreter::muon_update(int rank, const Op& op, const std::string& where) {
  for (const Region& r : op.regions) {
    buffers_.check(r, where);
    if (skip_[r.param]) continue;
    const double lr_adj = lr_adjusted_[r.param];
    if (std::isnan(lr_adj)) throw Error(where + ": parameter '" + param_names_[r.param] + "' has no Muon matrix");
    double* param = buffers_.at(rank, BufferKind::param, r, where);
    muon_update_elementwise(param, buffers_.at(rank, BufferKind::ns_output, r, where), r.count, lr_adj, config_.muon,
                            rounding_);
    require_finite(param, r.count, where, "updated weight", r.param);
  }
}

void PlanInterpreter::adamw(int rank, const Op& op, const std::string& where) {
  for (const Region& r : op.regions) {
    buffers_.check(r, where);
    if (skip_[r.param]) continue;
    double* param = buffers_.at(rank, BufferKind::param, r, where);
    const double* grad = buffers_.at(rank, BufferKind::grad, r, where);
    double* m = buffers_.at(rank, BufferKind::adam_m, r, where);
    double* v = buffers_.at(rank, BufferKind::adam_v, r, where);
    require_finite(grad, r.count, where, "reduced gradient", r.param);
    adamw_elementwise(param, grad, m, v, r.count, param_steps_[r.param], config_.adamw, rounding_);
    require_finite(v, r.count, where, "exp_avg_sq", r.param);
    require_finite(m, r.count, where, "exp_avg", r.param);
    require_finite(param, r.count, where, "updated weight", r.param);
  }
}

}  // namespace dmuon::ref
