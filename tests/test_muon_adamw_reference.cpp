// reference/muon_step and adamw_step against closed forms worked out by hand.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/optimizer/coefficients.hpp"
#include "core/error.hpp"
#include "reference/adamw_step.hpp"
#include "reference/muon_step.hpp"

using dmuon::AdjustLr;
using dmuon::DType;
using dmuon::MomentumForm;
using dmuon::MuonConfig;
using dmuon::ref::Rounding;

namespace {

Eigen::MatrixXd gaussian(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m(i) = normal(rng);
  return m;
}

// Keller's quintic, five times, written out: NS maps each normalised singular value by it.
double keller5(double x) {
  for (int t = 0; t < 5; ++t) x = 3.4445 * x - 4.7750 * x * x * x + 2.0315 * std::pow(x, 5);
  return x;
}

MuonConfig keller_muon() {
  MuonConfig cfg;  // torch defaults: keller schedule, 5 steps, clamp, eps 1e-7
  cfg.ns.schedule = dmuon::named_schedule("keller", "test");
  cfg.ns.steps = 5;
  return cfg;
}

// Expects `call` to throw dmuon::Error whose message contains every one of `parts`.
template <class F>
void require_error_naming(F call, const std::vector<std::string>& parts) {
  try {
    call();
    FAIL("no dmuon::Error thrown");
  } catch (const dmuon::Error& e) {
    const std::string what = e.what();
    for (const auto& p : parts) {
      INFO(what);
      CHECK(what.find(p) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("Muon momentum and update over two steps, each form, nesterov on and off", "[muon]") {
  // W is 2x3, G1 = 2 e11, G2 = 3 e22, mu = 0.9. The two diagonals make u's direction (and so
  // the NS output) depend on the momentum rule.
  struct Case {
    MomentumForm form; bool nesterov;
    double m1, m2a, m2b;  // M after step 1 (only entry 11), after step 2 (entries 11, 22)
    double u2a, u2b;      // Newton-Schulz input at step 2
  };
  const std::vector<Case> cases = {
      // sum: M1 = G1; M2 = 0.9 M1 + G2; nesterov u = G + 0.9 M
      {MomentumForm::sum, false, 2.0, 1.8, 3.0, 1.8, 3.0},
      {MomentumForm::sum, true, 2.0, 1.8, 3.0, 1.62, 5.7},
      // ema: M1 = 0.1 G1; M2 = M1 + 0.1 (G2 - M1); nesterov u = G + 0.9 (M - G)
      {MomentumForm::ema, false, 0.2, 0.18, 0.3, 0.18, 0.3},
      {MomentumForm::ema, true, 0.2, 0.18, 0.3, 0.162, 0.57},
  };
  for (const Case& c : cases) {
    MuonConfig cfg = keller_muon();
    cfg.momentum = 0.9;
    cfg.momentum_form = c.form;
    cfg.nesterov = c.nesterov;
    cfg.lr = 0.1;
    cfg.weight_decay = 0.5;
    cfg.adjust_lr = AdjustLr::none;
    Eigen::MatrixXd G1 = Eigen::MatrixXd::Zero(2, 3), G2 = Eigen::MatrixXd::Zero(2, 3);
    G1(0, 0) = 2.0;
    G2(1, 1) = 3.0;
    const Eigen::MatrixXd W0 = gaussian(2, 3, 1);
    Eigen::MatrixXd W = W0;
    dmuon::ref::MuonState state;
    dmuon::ref::muon_step(W, G1, state, cfg, Rounding::exact);
    INFO("form " << (c.form == MomentumForm::sum ? "sum" : "ema") << " nesterov " << c.nesterov);
    CHECK(state.step == 1);
    CHECK(state.momentum(0, 0) == Approx(c.m1).epsilon(1e-14));
    CHECK(state.momentum.cwiseAbs().sum() == Approx(std::fabs(c.m1)).epsilon(1e-14));
    // Step 1: u is a multiple of e11, normalised to 1.
    Eigen::MatrixXd W1 = W0 * (1 - 0.1 * 0.5);
    W1(0, 0) -= 0.1 * keller5(1.0);
    CHECK((W - W1).cwiseAbs().maxCoeff() < 1e-13);

    dmuon::ref::muon_step(W, G2, state, cfg, Rounding::exact);
    CHECK(state.step == 2);
    CHECK(state.momentum(0, 0) == Approx(c.m2a).epsilon(1e-13));
    CHECK(state.momentum(1, 1) == Approx(c.m2b).epsilon(1e-13));
    const double u_norm = std::hypot(c.u2a, c.u2b);
    Eigen::MatrixXd W2 = W1 * (1 - 0.1 * 0.5);
    W2(0, 0) -= 0.1 * keller5(c.u2a / u_norm);
    W2(1, 1) -= 0.1 * keller5(c.u2b / u_norm);
    CHECK((W - W2).cwiseAbs().maxCoeff() < 1e-13);
  }
}

TEST_CASE("Muon lr adjustment per shape, weight decay first with the base lr", "[muon]") {
  struct Case { AdjustLr adjust; long rows, cols; double lr_multiplier; };
  const std::vector<Case> cases = {
      {AdjustLr::original, 5, 3, std::sqrt(5.0 / 3.0)}, {AdjustLr::original, 3, 5, 1.0},
      {AdjustLr::match_rms_adamw, 5, 3, 0.2 * std::sqrt(5.0)},
      {AdjustLr::match_rms_adamw, 3, 5, 0.2 * std::sqrt(5.0)},
      {AdjustLr::none, 5, 3, 1.0}, {AdjustLr::none, 3, 5, 1.0}};
  for (const Case& c : cases) {
    MuonConfig cfg = keller_muon();
    cfg.adjust_lr = c.adjust;
    cfg.lr = 0.1;
    cfg.weight_decay = 0.5;
    // Rank one: G = 4 x y^T with unit x, y has one singular value, normalised to 1.
    const Eigen::VectorXd x = gaussian(c.rows, 1, 2).normalized();
    const Eigen::VectorXd y = gaussian(c.cols, 1, 3).normalized();
    const Eigen::MatrixXd G = 4.0 * x * y.transpose();
    const Eigen::MatrixXd W0 = gaussian(c.rows, c.cols, 4);
    Eigen::MatrixXd W = W0;
    dmuon::ref::MuonState state;
    dmuon::ref::muon_step(W, G, state, cfg, Rounding::exact);
    const Eigen::MatrixXd O = keller5(1.0) * x * y.transpose();
    const Eigen::MatrixXd expected = W0 * (1 - 0.1 * 0.5) - 0.1 * c.lr_multiplier * O;
    INFO("adjust " << dmuon::to_string(c.adjust) << " " << c.rows << "x" << c.cols);
    CHECK((W - expected).cwiseAbs().maxCoeff() < 1e-12);
    // The two orders/lrs it must not be: decay after the update, or decay with the adjusted lr.
    const Eigen::MatrixXd decay_after = (W0 - 0.1 * c.lr_multiplier * O) * (1 - 0.1 * 0.5);
    CHECK((W - decay_after).cwiseAbs().maxCoeff() > 1e-4);
  }
}

TEST_CASE("Muon emulate stores weights and momentum in the master dtype", "[muon][emulate]") {
  MuonConfig cfg = keller_muon();
  cfg.master_dtype = DType::fp32;
  cfg.ns.compute_dtype = DType::bf16;
  const Eigen::MatrixXd W0 = gaussian(6, 9, 5);
  Eigen::MatrixXd W_emulated = W0, W_exact = W0;
  dmuon::ref::MuonState emulated, exact;
  for (unsigned step = 0; step < 2; ++step) {
    const Eigen::MatrixXd G = gaussian(6, 9, 10 + step);
    dmuon::ref::muon_step(W_emulated, G, emulated, cfg, Rounding::emulate);
    dmuon::ref::muon_step(W_exact, G, exact, cfg, Rounding::exact);
  }
  for (Eigen::Index i = 0; i < W0.size(); ++i) {
    REQUIRE(dmuon::ref::round_to(W_emulated(i), DType::fp32) == W_emulated(i));
    REQUIRE(dmuon::ref::round_to(emulated.momentum(i), DType::fp32) == emulated.momentum(i));
  }
  // The update is lr * O with |O| ~ 1 per entry; bf16 NS changes it by about 1%.
  const double update_difference = (W_emulated - W_exact).cwiseAbs().maxCoeff();
  CHECK(update_difference > 1e-7);
  CHECK(update_difference < 2 * cfg.lr * 0.05);
  CHECK((emulated.momentum - exact.momentum).cwiseAbs().maxCoeff() < 1e-6);
}

TEST_CASE("Muon emulate rounds M, u and W exactly where they are stored", "[muon][emulate]") {
  // fp64 Newton-Schulz storage isolates the master-dtype roundings of muon_step itself.
  for (MomentumForm form : {MomentumForm::sum, MomentumForm::ema}) {
    MuonConfig cfg = keller_muon();
    cfg.momentum_form = form;
    cfg.lr = 0.5;  // large steps, so that a missing rounding shows in the fp32 weights
    cfg.weight_decay = 0.3;
    cfg.master_dtype = DType::fp32;
    cfg.ns.compute_dtype = cfg.ns.normalize_dtype = DType::fp64;
    const auto rd = [](Eigen::MatrixXd m) {
      dmuon::ref::round_in_place(m, DType::fp32);
      return m;
    };
    const double mu = cfg.momentum;
    Eigen::MatrixXd W = gaussian(6, 9, 40), W_hand = W, M_hand = Eigen::MatrixXd::Zero(6, 9);
    dmuon::ref::MuonState state;
    for (unsigned s = 0; s < 2; ++s) {
      const Eigen::MatrixXd G = gaussian(6, 9, 41 + s);
      dmuon::ref::muon_step(W, G, state, cfg, Rounding::emulate);
      Eigen::MatrixXd u;
      if (form == MomentumForm::sum) {
        M_hand = rd(mu * M_hand + G);
        u = rd(G + mu * M_hand);
      } else {
        M_hand = rd(M_hand + (1 - mu) * (G - M_hand));
        u = rd(G + mu * (M_hand - G));
      }
      const Eigen::MatrixXd O = dmuon::ref::newton_schulz(u, cfg.ns, Rounding::exact);
      W_hand = rd(W_hand * (1 - 0.5 * 0.3));
      W_hand = rd(W_hand - 0.5 * O);  // original: sqrt(max(1, 6/9)) = 1
    }
    INFO("form " << (form == MomentumForm::sum ? "sum" : "ema"));
    CHECK(state.momentum == M_hand);
    CHECK(W == W_hand);
  }
}

TEST_CASE("Muon rejects mismatched shapes naming both", "[muon]") {
  MuonConfig cfg = keller_muon();
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(3, 4);
  dmuon::ref::MuonState state;
  require_error_naming([&] { dmuon::ref::muon_step(W, Eigen::MatrixXd::Ones(4, 3), state, cfg, Rounding::exact); },
                       {"4x3", "3x4", "gradient"});
  state.momentum = Eigen::MatrixXd::Zero(2, 4);
  require_error_naming([&] { dmuon::ref::muon_step(W, Eigen::MatrixXd::Ones(3, 4), state, cfg, Rounding::exact); },
                       {"2x4", "3x4", "momentum"});
}

namespace {

// torch.optim.AdamW on one scalar, written out.
struct ScalarAdamW {
  double lr, b1, b2, eps, wd;
  double w, m = 0, v = 0;
  int t = 0;
  void step(double g) {
    ++t;
    w *= 1 - lr * wd;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    w -= lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + eps);
  }
};

}  // namespace

TEST_CASE("AdamW first and second steps on scalars", "[adamw]") {
  dmuon::AdamWConfig cfg;
  cfg.lr = 0.01;
  cfg.beta1 = 0.9;
  cfg.beta2 = 0.999;
  cfg.eps = 1e-8;
  cfg.weight_decay = 0.1;
  Eigen::MatrixXd W(1, 1);
  W << 0.5;
  dmuon::ref::AdamWState state;
  dmuon::ref::adamw_step(W, Eigen::MatrixXd::Constant(1, 1, 0.2), state, cfg, Rounding::exact);
  // Step 1: m/bc1 = g and sqrt(v/bc2) = |g|: W = 0.5 * 0.999 - 0.01 * 0.2 / (0.2 + 1e-8).
  CHECK(W(0, 0) == Approx(0.4895000005).epsilon(1e-12));
  CHECK(state.exp_avg(0, 0) == Approx(0.02).epsilon(1e-14));
  CHECK(state.exp_avg_sq(0, 0) == Approx(4e-5).epsilon(1e-12));
  CHECK(state.step == 1);
  dmuon::ref::adamw_step(W, Eigen::MatrixXd::Constant(1, 1, -0.1), state, cfg, Rounding::exact);
  // Step 2 by hand: m = 0.018 - 0.01 = 0.008; v = 3.996e-5 + 1e-5 = 4.996e-5;
  // bc1 = 0.19, bc2 = 0.001999.
  const double m2 = 0.008, v2 = 4.996e-5;
  const double w2 = 0.4895000005 * 0.999 - 0.01 / 0.19 * m2 / (std::sqrt(v2 / 0.001999) + 1e-8);
  CHECK(state.exp_avg(0, 0) == Approx(m2).epsilon(1e-12));
  CHECK(state.exp_avg_sq(0, 0) == Approx(v2).epsilon(1e-12));
  CHECK(W(0, 0) == Approx(w2).epsilon(1e-12));
  CHECK(state.step == 2);
}

TEST_CASE("AdamW is elementwise: a matrix follows the scalar formula per entry", "[adamw]") {
  dmuon::AdamWConfig cfg;
  cfg.lr = 3e-3;
  cfg.beta2 = 0.95;
  cfg.weight_decay = 0.2;
  const Eigen::MatrixXd W0 = gaussian(2, 3, 7);
  Eigen::MatrixXd W = W0;
  dmuon::ref::AdamWState state;
  std::vector<ScalarAdamW> scalars;
  for (Eigen::Index i = 0; i < W0.size(); ++i)
    scalars.push_back({cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, W0(i)});
  for (unsigned s = 0; s < 3; ++s) {
    const Eigen::MatrixXd G = gaussian(2, 3, 20 + s);
    dmuon::ref::adamw_step(W, G, state, cfg, Rounding::exact);
    for (Eigen::Index i = 0; i < W0.size(); ++i) scalars[i].step(G(i));
  }
  for (Eigen::Index i = 0; i < W0.size(); ++i) {
    CHECK(W(i) == Approx(scalars[i].w).epsilon(1e-13));
    CHECK(state.exp_avg(i) == Approx(scalars[i].m).epsilon(1e-13));
    CHECK(state.exp_avg_sq(i) == Approx(scalars[i].v).epsilon(1e-13));
  }
}

TEST_CASE("AdamW emulate stores m, v and W in the master dtype", "[adamw][emulate]") {
  dmuon::AdamWConfig cfg;
  cfg.master_dtype = DType::fp32;
  Eigen::MatrixXd W_emulated = gaussian(4, 5, 8), W_exact = W_emulated;
  dmuon::ref::AdamWState emulated, exact;
  for (unsigned s = 0; s < 2; ++s) {
    const Eigen::MatrixXd G = gaussian(4, 5, 30 + s);
    dmuon::ref::adamw_step(W_emulated, G, emulated, cfg, Rounding::emulate);
    dmuon::ref::adamw_step(W_exact, G, exact, cfg, Rounding::exact);
  }
  bool any_rounded = false;
  for (Eigen::Index i = 0; i < W_exact.size(); ++i) {
    for (double x : {W_emulated(i), emulated.exp_avg(i), emulated.exp_avg_sq(i)}) {
      REQUIRE(dmuon::ref::round_to(x, DType::fp32) == x);
    }
    any_rounded = any_rounded || W_emulated(i) != W_exact(i);
  }
  CHECK(any_rounded);
  CHECK((W_emulated - W_exact).cwiseAbs().maxCoeff() < 1e-6);
}

TEST_CASE("AdamW emulate rounds m, v and W exactly where they are stored", "[adamw][emulate]") {
  dmuon::AdamWConfig cfg;
  cfg.lr = 0.05;
  cfg.weight_decay = 0.5;
  cfg.master_dtype = DType::fp32;
  const auto rd = [](double x) { return dmuon::ref::round_to(x, DType::fp32); };
  Eigen::MatrixXd W = gaussian(5, 7, 50);
  const Eigen::MatrixXd W0 = W;
  dmuon::ref::AdamWState state;
  std::vector<Eigen::MatrixXd> grads = {gaussian(5, 7, 51), gaussian(5, 7, 52)};
  for (const auto& G : grads) dmuon::ref::adamw_step(W, G, state, cfg, Rounding::emulate);
  for (Eigen::Index i = 0; i < W.size(); ++i) {
    double w = W0(i), m = 0, v = 0;
    for (int t = 1; t <= 2; ++t) {
      const double g = grads[t - 1](i);
      w = rd(w * (1 - cfg.lr * cfg.weight_decay));
      m = rd(m + (1 - cfg.beta1) * (g - m));
      v = rd(cfg.beta2 * v + (1 - cfg.beta2) * (g * g));
      const double bc1 = 1 - std::pow(cfg.beta1, t), bc2 = 1 - std::pow(cfg.beta2, t);
      const double denom = std::sqrt(v) / std::sqrt(bc2) + cfg.eps;
      w = rd(w - cfg.lr / bc1 * (m / denom));
    }
    REQUIRE(W(i) == w);
    REQUIRE(state.exp_avg(i) == m);
    REQUIRE(state.exp_avg_sq(i) == v);
  }
}

TEST_CASE("AdamW rejects mismatched shapes naming both", "[adamw]") {
  dmuon::AdamWConfig cfg;
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(2, 5);
  dmuon::ref::AdamWState state;
  require_error_naming([&] { dmuon::ref::adamw_step(W, Eigen::MatrixXd::Ones(5, 2), state, cfg, Rounding::exact); },
                       {"5x2", "2x5", "gradient"});
  state.exp_avg = Eigen::MatrixXd::Zero(2, 5);
  state.exp_avg_sq = Eigen::MatrixXd::Zero(1, 5);
  require_error_naming([&] { dmuon::ref::adamw_step(W, Eigen::MatrixXd::Ones(2, 5), state, cfg, Rounding::exact); },
                       {"1x5", "2x5", "exp_avg_sq"});
}
