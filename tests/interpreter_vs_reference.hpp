// Shared by the sharded Newton-Schulz tests: random inputs, and a Plan run by the CPU interpreter for two steps of
// random gradients, each rank's parameters afterwards within 1e-12 (relative, fp64) of the
// single-device reference, and every parameter moved (a step that changed nothing cannot pass).
#pragma once
#include <random>
#include <vector>

#include <Eigen/Dense>

#include "catch_compat.hpp"
#include "core/model/routing.hpp"
#include "core/plan/plan.hpp"
#include "reference/model_step.hpp"
#include "reference/plan_interpreter.hpp"

namespace dmuon::test {

// Standard normal entries from a seeded generator.
inline Eigen::MatrixXd random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

inline std::vector<Eigen::VectorXd> random_params(const ModelSpec& model, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Eigen::VectorXd> out;
  for (const auto& p : model.params) {
    Eigen::VectorXd v(p.numel());
    for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = normal(rng);
    out.push_back(v);
  }
  return out;
}

inline void check_interpreter_matches_reference(const Plan& plan, const ModelSpec& model, const Routing& routing,
                                                const OptimizerConfig& config, int world) {
  const auto initial = random_params(model, 7);
  ref::PlanInterpreter interpreter(plan, model, routing, config, ref::Rounding::exact, initial);
  ref::ModelStep reference(model, routing, config, false, initial, ref::Rounding::exact);
  for (unsigned step = 1; step <= 2; ++step) {
    std::vector<std::vector<Eigen::VectorXd>> grads;
    for (int r = 0; r < world; ++r) grads.push_back(random_params(model, step * 1000 + static_cast<unsigned>(r)));
    interpreter.step(grads);
    reference.step(grads);
  }
  const auto got = interpreter.params_after_forward();
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    INFO("parameter " << model.params[p].name);
    const Eigen::VectorXd& want = reference.params()[p];
    REQUIRE((want - initial[p]).norm() > 1e-6 * initial[p].norm());
    for (const auto& rank : got) CHECK((rank[p] - want).norm() <= 1e-12 * want.norm());
  }
}

}  // namespace dmuon::test
