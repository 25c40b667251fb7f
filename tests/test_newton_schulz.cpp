// reference/newton_schulz: exact iteration against the SVD prediction, Gram == standard in
// exact arithmetic, symmetry under transposition, closed forms, and the emulated roundings.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <Eigen/QR>

#include "catch_compat.hpp"
#include "core/optimizer/coefficients.hpp"
#include "reference/newton_schulz.hpp"
#include "reference/rounding.hpp"

using dmuon::DType;
using dmuon::NormMode;
using dmuon::NsConfig;
using dmuon::NsVariant;
using dmuon::ref::newton_schulz;
using dmuon::ref::Rounding;

namespace {

Eigen::MatrixXd gaussian(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m(i) = normal(rng);
  return m;
}

double relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).norm() / b.norm();
}

NsConfig config(const std::string& schedule, NsVariant variant = NsVariant::standard,
                std::vector<int> restarts = {}) {
  NsConfig ns;
  ns.schedule_name = schedule;
  ns.schedule = dmuon::named_schedule(schedule, "test");
  ns.steps = dmuon::default_steps(schedule);
  ns.variant = variant;
  ns.restarts = std::move(restarts);
  return ns;
}

// Keller's quintic written out by hand, five times: the scalar map on each singular value.
double keller5(double x) {
  for (int t = 0; t < 5; ++t) x = 3.4445 * x - 4.7750 * x * x * x + 2.0315 * std::pow(x, 5);
  return x;
}

double rd(double x, DType d) { return dmuon::ref::round_to(x, d); }

// The emulated normalisation of a diagonal input, as scalars: G, the norm, the divisor and
// the quotient in normalize_dtype, then the quotient in compute_dtype.
Eigen::VectorXd scalar_normalised(const Eigen::VectorXd& d, const NsConfig& ns) {
  const DType n = ns.normalize_dtype;
  const Eigen::VectorXd x = d.unaryExpr([n](double v) { return rd(v, n); });
  const double divisor = rd(std::max(rd(x.norm(), n) * ns.norm_scale, ns.eps), n);
  return x.unaryExpr([&](double v) { return rd(rd(v / divisor, n), ns.compute_dtype); });
}

// Emulated standard NS on one diagonal entry: one rounding per stored product or fused
// combination (products of diagonal matrices are exact per entry).
double scalar_standard(double x, const NsConfig& ns) {
  const DType c = ns.compute_dtype;
  for (int t = 0; t < ns.steps; ++t) {
    const auto k = ns.coefficient(t);
    const double A = rd(x * x, c);
    const double B = rd(k.b * A + k.c * (A * A), c);
    x = rd(k.a * x + B * x, c);
  }
  return x;
}

// Emulated Gram NS on one diagonal entry, with one restart before iteration `restart`.
double scalar_gram(double x, const NsConfig& ns, int restart) {
  const DType c = ns.compute_dtype;
  double R = rd(x * x, c), Q = 0;
  bool have_Q = false;
  for (int t = 0; t < ns.steps; ++t) {
    const auto k = ns.coefficient(t);
    if (t == restart) {
      x = rd(Q * x, c);
      R = rd(x * x, c);
      have_Q = false;
    }
    const double Z = rd(k.b * R + k.c * (R * R), c);
    // The first Q is Z + a*I with a*I a tensor of the compute dtype (DMuon's `Z + a * I`).
    Q = have_Q ? rd(Z * Q + k.a * Q, c) : rd(Z + rd(k.a, c), c);
    have_Q = true;
    if (t < ns.steps - 1 && t + 1 != restart) {
      const double RZ = rd(R * Z + k.a * R, c);
      R = rd(Z * RZ + k.a * RZ, c);
    }
  }
  return rd(Q * x, c);
}

const std::vector<std::pair<int, int>> kShapes = {{8, 8},  {16, 9}, {9, 16}, {1, 7}, {7, 1},
                                                   {13, 7}, {7, 13}, {11, 11}, {1, 1}};

}  // namespace

TEST_CASE("exact NS equals the SVD prediction for every shape and schedule", "[ns]") {
  unsigned seed = 1;
  for (const std::string& name : dmuon::schedule_names()) {
    for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
      for (auto [rows, cols] : kShapes) {
        NsConfig ns = config(name, variant, variant == NsVariant::gram ? std::vector<int>{2} : std::vector<int>{});
        ns.norm_mode = seed % 2 ? NormMode::clamp : NormMode::add;
        const Eigen::MatrixXd G = gaussian(rows, cols, seed++);
        const Eigen::MatrixXd out = newton_schulz(G, ns, Rounding::exact);
        REQUIRE(out.rows() == rows);
        REQUIRE(out.cols() == cols);
        INFO(name << " " << rows << "x" << cols << " gram=" << (variant == NsVariant::gram));
        CHECK(relative_difference(out, dmuon::ref::predicted_ns_output(G, ns)) < 1e-10);
      }
    }
  }
}

TEST_CASE("exact Gram NS equals exact standard NS for any restarts", "[ns]") {
  for (const char* name : {"polar-express", "keller", "you"}) {
    for (auto [rows, cols] : std::vector<std::pair<int, int>>{{12, 20}, {20, 12}, {10, 10}}) {
      const Eigen::MatrixXd G = gaussian(rows, cols, 100 + rows);
      const Eigen::MatrixXd standard = newton_schulz(G, config(name), Rounding::exact);
      for (const std::vector<int>& restarts : {std::vector<int>{}, {2}, {1, 3}}) {
        const Eigen::MatrixXd gram = newton_schulz(G, config(name, NsVariant::gram, restarts), Rounding::exact);
        INFO(name << " " << rows << "x" << cols << " restarts " << restarts.size());
        CHECK(relative_difference(gram, standard) < 1e-9);
      }
    }
  }
}

TEST_CASE("NS of the transpose is the transpose of NS", "[ns]") {
  for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
    const NsConfig ns = config("polar-express", variant, {2});
    // Tall and wide inputs both iterate on the same wide matrix: identical bits, even emulated.
    const Eigen::MatrixXd tall = gaussian(15, 6, 3);
    for (Rounding r : {Rounding::exact, Rounding::emulate}) {
      const Eigen::MatrixXd a = newton_schulz(tall, ns, r);
      const Eigen::MatrixXd b = newton_schulz(tall.transpose(), ns, r);
      CHECK(a == Eigen::MatrixXd(b.transpose()));
    }
    // Square inputs are not transposed, so only equal up to double rounding.
    const Eigen::MatrixXd square = gaussian(9, 9, 4);
    const Eigen::MatrixXd a = newton_schulz(square, ns, Rounding::exact);
    const Eigen::MatrixXd b = newton_schulz(square.transpose(), ns, Rounding::exact);
    CHECK(relative_difference(Eigen::MatrixXd(b.transpose()), a) < 1e-12);
  }
}

TEST_CASE("diagonal input gives the scalar map of its normalised diagonal", "[ns]") {
  const Eigen::Vector3d d(2.0, -0.5, 0.25);
  Eigen::MatrixXd G = Eigen::MatrixXd::Zero(3, 5);
  G.diagonal() = d;
  for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
    const Eigen::MatrixXd out = newton_schulz(G, config("keller", variant, {3}), Rounding::exact);
    Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(3, 5);
    for (int i = 0; i < 3; ++i) expected(i, i) = keller5(d(i) / d.norm());
    CHECK((out - expected).cwiseAbs().maxCoeff() < 1e-13);
    // ... and tall (5x3) as well.
    const Eigen::MatrixXd out_t = newton_schulz(G.transpose(), config("keller", variant), Rounding::exact);
    CHECK((out_t - expected.transpose()).cwiseAbs().maxCoeff() < 1e-13);
  }
}

TEST_CASE("normalisation: clamp takes max(norm*scale, eps), add takes norm*scale + eps", "[ns]") {
  struct Case { double norm, scale, eps; NormMode mode; double divisor; };
  const std::vector<Case> cases = {
      {1e-3, 1.5, 1e-3, NormMode::clamp, 1.5e-3}, {1e-3, 1.5, 1e-3, NormMode::add, 2.5e-3},
      {1e-4, 1.0, 1e-3, NormMode::clamp, 1e-3},   {1e-4, 1.0, 1e-3, NormMode::add, 1.1e-3},
      {2.0, 1.02, 1e-7, NormMode::add, 2.04 + 1e-7}};
  for (const Case& c : cases) {
    NsConfig ns = config("keller");
    ns.norm_scale = c.scale;
    ns.eps = c.eps;
    ns.norm_mode = c.mode;
    const Eigen::Vector2d d = Eigen::Vector2d(0.6, 0.8) * c.norm;  // ||d|| = c.norm
    const Eigen::MatrixXd G = d.asDiagonal();
    const Eigen::MatrixXd out = newton_schulz(G, ns, Rounding::exact);
    CHECK(out(0, 0) == Approx(keller5(d(0) / c.divisor)).epsilon(1e-12));
    CHECK(out(1, 1) == Approx(keller5(d(1) / c.divisor)).epsilon(1e-12));
    CHECK(dmuon::ref::ns_normaliser(c.norm, ns) == Approx(c.divisor).epsilon(1e-14));
  }
}

TEST_CASE("zero input gives zero output", "[ns]") {
  for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
    for (NormMode mode : {NormMode::clamp, NormMode::add}) {
      for (Rounding r : {Rounding::exact, Rounding::emulate}) {
        NsConfig ns = config("polar-express", variant, {2});
        ns.norm_mode = mode;
        ns.compute_dtype = DType::fp16;
        for (auto [rows, cols] : std::vector<std::pair<int, int>>{{4, 6}, {6, 4}, {5, 5}}) {
          const Eigen::MatrixXd out = newton_schulz(Eigen::MatrixXd::Zero(rows, cols), ns, r);
          REQUIRE(out.rows() == rows);
          REQUIRE(out.cols() == cols);
          CHECK(out.allFinite());
          CHECK(out.isZero(0.0));
        }
      }
    }
  }
}

TEST_CASE("emulated bf16 and fp16 differ from exact by a plausible amount", "[ns][emulate]") {
  const Eigen::MatrixXd G = gaussian(24, 40, 9);
  for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
    NsConfig ns = config(variant == NsVariant::gram ? "polar-express" : "keller", variant, {2});
    const Eigen::MatrixXd exact = newton_schulz(G, ns, Rounding::exact);
    ns.compute_dtype = ns.normalize_dtype = DType::bf16;
    const double bf16_error = relative_difference(newton_schulz(G, ns, Rounding::emulate), exact);
    ns.compute_dtype = DType::fp16;
    ns.normalize_dtype = DType::fp32;
    const double fp16_error = relative_difference(newton_schulz(G, ns, Rounding::emulate), exact);
    ns.compute_dtype = DType::fp32;
    const double fp32_error = relative_difference(newton_schulz(G, ns, Rounding::emulate), exact);
    INFO("gram=" << (variant == NsVariant::gram) << " bf16 " << bf16_error << " fp16 "
                 << fp16_error << " fp32 " << fp32_error);
    CHECK(bf16_error > 1e-4);
    // Gram accumulates Q and evolves R in the narrow dtype, so bf16 hurts it more (why DMuon
    // runs Gram in fp16); measured ~0.018 standard/keller, ~0.041 Gram/polar-express.
    CHECK(bf16_error < (variant == NsVariant::gram ? 0.1 : 5e-2));
    CHECK(fp16_error < bf16_error);
    CHECK(fp16_error > 1e-5);  // fp16 keeps 11 bits: its error cannot vanish
    CHECK(fp32_error < fp16_error);
    CHECK(fp32_error > 0.0);
    CHECK(fp32_error < 1e-5);
  }
}

// On a diagonal input every matrix stays diagonal, so the emulated iteration is a scalar
// recursion per entry that can be written out: this pins down each rounding's place.
TEST_CASE("emulate rounds exactly where the GPU stores (diagonal closed form)", "[ns][emulate]") {
  Eigen::VectorXd eight(8);
  eight << 0.3, -2.5, 7.0, 1.1, 0.05, -0.9, 3.3, 0.6;
  for (const Eigen::VectorXd& d : {Eigen::VectorXd(Eigen::VectorXd::Constant(1, -0.3)), eight}) {
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(d.size(), d.size() + 2);
    G.diagonal() = d;
    for (DType compute : {DType::bf16, DType::fp16}) {
      NsConfig standard = config("keller");
      standard.compute_dtype = compute;
      standard.normalize_dtype = DType::bf16;
      standard.norm_scale = 1.3;  // keeps the normalised 1x1 value away from a round 1
      NsConfig gram = config("polar-express", NsVariant::gram, {2});
      gram.compute_dtype = compute;
      gram.normalize_dtype = DType::fp32;
      gram.norm_scale = 1.3;
      const Eigen::MatrixXd s = newton_schulz(G, standard, Rounding::emulate);
      const Eigen::MatrixXd q = newton_schulz(G, gram, Rounding::emulate);
      const Eigen::VectorXd xs = scalar_normalised(d, standard), xq = scalar_normalised(d, gram);
      for (Eigen::Index i = 0; i < d.size(); ++i) {
        INFO("entry " << i << " of " << d.size() << ", compute " << dmuon::to_string(compute));
        CHECK(s(i, i) == scalar_standard(xs(i), standard));
        CHECK(q(i, i) == scalar_gram(xq(i), gram, 2));
      }
      Eigen::MatrixXd off_diagonal = q;
      off_diagonal.diagonal().setZero();
      CHECK(off_diagonal.isZero(0.0));
      CHECK(s != newton_schulz(G, standard, Rounding::exact));
      CHECK(q != newton_schulz(G, gram, Rounding::exact));
    }
  }
}

TEST_CASE("emulate with fp64 storage is exact arithmetic", "[ns][emulate]") {
  for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
    NsConfig ns = config("you", variant, {1, 3});
    ns.compute_dtype = ns.normalize_dtype = DType::fp64;
    const Eigen::MatrixXd G = gaussian(6, 10, 21);
    CHECK(newton_schulz(G, ns, Rounding::emulate) == newton_schulz(G, ns, Rounding::exact));
  }
}

TEST_CASE("emulated outputs are values of the compute dtype", "[ns][emulate]") {
  const Eigen::MatrixXd G = gaussian(10, 17, 5);
  for (DType compute : {DType::bf16, DType::fp16, DType::fp32}) {
    for (NsVariant variant : {NsVariant::standard, NsVariant::gram}) {
      NsConfig ns = config("polar-express", variant, {2});
      ns.compute_dtype = compute;
      ns.normalize_dtype = DType::fp32;
      const Eigen::MatrixXd out = newton_schulz(G, ns, Rounding::emulate);
      for (Eigen::Index i = 0; i < out.size(); ++i) {
        REQUIRE(dmuon::ref::round_to(out(i), compute) == out(i));
      }
      // The check has teeth: the exact output is not made of compute-dtype values.
      const Eigen::MatrixXd exact = newton_schulz(G, ns, Rounding::exact);
      Eigen::MatrixXd rounded = exact;
      dmuon::ref::round_in_place(rounded, compute);
      CHECK(rounded != exact);
    }
  }
}

TEST_CASE("emulate reads the input in normalize_dtype", "[ns][emulate]") {
  NsConfig ns = config("keller");
  ns.normalize_dtype = ns.compute_dtype = DType::bf16;
  const Eigen::MatrixXd G = gaussian(8, 12, 13);
  Eigen::MatrixXd G_bf16 = G;
  dmuon::ref::round_in_place(G_bf16, DType::bf16);
  CHECK(newton_schulz(G, ns, Rounding::emulate) == newton_schulz(G_bf16, ns, Rounding::emulate));
  CHECK(newton_schulz(G, ns, Rounding::exact) != newton_schulz(G_bf16, ns, Rounding::exact));
}

TEST_CASE("Gram on a square matrix is run as Gram, and restarts change its roundings", "[ns][emulate]") {
  NsConfig ns = config("polar-express", NsVariant::gram, {2});
  ns.compute_dtype = DType::fp16;
  ns.normalize_dtype = DType::fp32;
  const Eigen::MatrixXd G = gaussian(16, 16, 17);
  const Eigen::MatrixXd gram = newton_schulz(G, ns, Rounding::emulate);
  NsConfig std16 = config("polar-express");
  std16.compute_dtype = DType::fp16;
  std16.normalize_dtype = DType::fp32;
  CHECK(gram != newton_schulz(G, std16, Rounding::emulate));
  ns.restarts = {};
  CHECK(gram != newton_schulz(G, ns, Rounding::emulate));
}

TEST_CASE("polar_factor is U V^T and NS approaches it", "[ns]") {
  // G = U diag(s) V^T with known orthonormal U (6x6), V (10x6).
  const Eigen::MatrixXd U = Eigen::HouseholderQR<Eigen::MatrixXd>(gaussian(6, 6, 31)).householderQ();
  const Eigen::MatrixXd V_full = Eigen::HouseholderQR<Eigen::MatrixXd>(gaussian(10, 10, 32)).householderQ();
  const Eigen::MatrixXd V = V_full.leftCols(6);
  Eigen::VectorXd s(6);
  s << 3.0, 2.0, 1.0, 0.5, 0.3, 0.2;
  const Eigen::MatrixXd G = U * s.asDiagonal() * V.transpose();
  const Eigen::MatrixXd polar = U * V.transpose();
  CHECK(relative_difference(dmuon::ref::polar_factor(G), polar) < 1e-12);
  CHECK(relative_difference(dmuon::ref::polar_factor(Eigen::MatrixXd(G.transpose())),
                            Eigen::MatrixXd(polar.transpose())) < 1e-12);
  // Polar Express (8 steps) drives singular values >= 0.2/||s|| to 1: the polar factor.
  const Eigen::MatrixXd out = newton_schulz(G, config("polar-express-1.01"), Rounding::exact);
  CHECK(relative_difference(out, polar) < 1e-3);
  // Keller's non-convergent map leaves them in a band around 1, visibly away from it.
  const double keller_gap = relative_difference(newton_schulz(G, config("keller"), Rounding::exact), polar);
  CHECK(keller_gap > 1e-2);
  CHECK(keller_gap < 0.5);
}
