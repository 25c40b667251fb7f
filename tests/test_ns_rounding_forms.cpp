// Where the emulated reference rounds, pinned to DMuon's operations (X-Square-Robot/dmuon
// dmuon/optim/newton_schulz.py): Gram NS's Q update is Z Q + a Q and its first Q adds a*I with a
// stored in the compute dtype; direct NS with `products: separate` rounds after every op.
#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "harness/verify/test_matrices.hpp"
#include "reference/newton_schulz.hpp"
#include "reference/rounding.hpp"

using namespace dmuon;
using ref::Rounding;
using verify::gaussian_matrix;

namespace {

Eigen::MatrixXd fp16(Eigen::MatrixXd m) {
  ref::round_in_place(m, DType::fp16);
  return m;
}

// The normalised input exactly as the reference (and DMuon: fp32 norm and quotient) makes it.
Eigen::MatrixXd normalised(const Eigen::MatrixXd& g, const NsConfig& ns) {
  Eigen::MatrixXd x = g.unaryExpr([](double v) { return ref::round_to(v, DType::fp32); });
  const double norm = ref::round_to(ref::round_to(x.norm(), DType::fp32) + ns.eps, DType::fp32);
  x = (x / norm).unaryExpr([](double v) { return ref::round_to(v, DType::fp32); });
  return fp16(x);
}

NsConfig dmuon_ns(int steps) {
  NsConfig ns = optimizer_preset("dmuon").muon.ns;
  ns.steps = steps;
  ns.restarts.clear();
  return ns;
}

// Two Gram steps spelled out; `z_first` picks DMuon's Z Q (true) or the other order Q Z.
Eigen::MatrixXd two_gram_steps(const Eigen::MatrixXd& g, const NsConfig& ns, bool z_first) {
  const Eigen::MatrixXd x = normalised(g, ns);
  const auto k0 = ns.coefficient(0), k1 = ns.coefficient(1);
  const Eigen::Index m = x.rows();
  Eigen::MatrixXd r = fp16(x * x.transpose());
  Eigen::MatrixXd z = fp16(k0.b * r + k0.c * (r * r));
  Eigen::MatrixXd q = fp16(z + ref::round_to(k0.a, DType::fp16) * Eigen::MatrixXd::Identity(m, m));
  const Eigen::MatrixXd rz = fp16(r * z + k0.a * r);
  r = fp16(z * rz + k0.a * rz);
  z = fp16(k1.b * r + k1.c * (r * r));
  q = fp16((z_first ? Eigen::MatrixXd(z * q) : Eigen::MatrixXd(q * z)) + k1.a * q);
  return fp16(q * x);
}

}  // namespace

TEST_CASE("Gram NS rounds as DMuon's addmm path: Z Q + a Q, and a*I in fp16", "[ns][emulate][dmuon]") {
  const NsConfig ns = dmuon_ns(2);
  const Eigen::MatrixXd g = gaussian_matrix(24, 40, 3);
  const Eigen::MatrixXd dmuon_order = two_gram_steps(g, ns, true);
  const Eigen::MatrixXd other_order = two_gram_steps(g, ns, false);
  REQUIRE((dmuon_order - other_order).norm() > 0);  // the test can tell the two orders apart
  CHECK(ref::newton_schulz(g, ns, Rounding::emulate) == dmuon_order);
}

TEST_CASE("Gram NS's first Q adds a rounded to the compute dtype (one row: a scalar chain)", "[ns][emulate][dmuon]") {
  const NsConfig ns = dmuon_ns(1);
  const Eigen::MatrixXd g = gaussian_matrix(1, 16, 4);
  const Eigen::MatrixXd x = normalised(g, ns);
  const auto k = ns.coefficient(0);
  const double r = ref::round_to(x.squaredNorm(), DType::fp16);
  const double z = ref::round_to(k.b * r + k.c * r * r, DType::fp16);
  const double a16 = ref::round_to(k.a, DType::fp16);
  REQUIRE(a16 != k.a);  // Polar Express's 8.287/1.05 is not an fp16 value
  const Eigen::MatrixXd want = fp16(ref::round_to(z + a16, DType::fp16) * x);
  CHECK(ref::newton_schulz(g, ns, Rounding::emulate) == want);
}

TEST_CASE("products: separate rounds after each op of b*A + c*A@A and a*X + B@X", "[ns][emulate][dmuon]") {
  NsConfig ns = dmuon_ns(1);
  ns.variant = NsVariant::standard;
  ns.products = NsProducts::separate;
  const Eigen::MatrixXd g = gaussian_matrix(12, 20, 5);
  const Eigen::MatrixXd x = normalised(g, ns);
  const auto k = ns.coefficient(0);
  const Eigen::MatrixXd a = fp16(x * x.transpose());
  const Eigen::MatrixXd b = fp16(fp16(k.b * a) + fp16(fp16(k.c * a) * a));
  const Eigen::MatrixXd want = fp16(fp16(k.a * x) + fp16(b * x));
  CHECK(ref::newton_schulz(g, ns, Rounding::emulate) == want);
  NsConfig fused = ns;
  fused.products = NsProducts::fused;
  CHECK(ref::newton_schulz(g, fused, Rounding::emulate) != want);
  // Exact arithmetic does not care where rounding would happen.
  CHECK((ref::newton_schulz(g, fused, Rounding::exact) - ref::newton_schulz(g, ns, Rounding::exact)).norm() < 1e-12);
}

TEST_CASE("products: separate is refused for Gram NS, naming the field", "[ns][config]") {
  OptimizerConfig c = optimizer_preset("dmuon");
  c.muon.ns.products = NsProducts::separate;
  try {
    c.validate();
    FAIL("validate accepted products: separate with variant gram");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("optimizer.ns.products") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_ns_products("split", "ns.products"), Error);
}
