#include "harness/verify/ns_checks.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/optimizer/ns_rounding.hpp"
#include "harness/verify/test_matrices.hpp"
#include "reference/newton_schulz.hpp"

namespace dmuon::verify {
namespace {

using ref::Rounding;

NsConfig with_variant(NsConfig ns, NsVariant variant) {
  ns.variant = variant;
  // A preset without restarts (torch, moonlight) runs Gram with the one restart after
  // iteration 2 that gram-newton-schulz and DeepSpeed use for 5-step schedules.
  if (variant == NsVariant::gram && ns.restarts.empty() && ns.steps > 2) ns.restarts = {2};
  return ns;
}

// max_i |p(sigma_i / N) - 1|: how far exact NS lands from the polar factor, spectrally.
double polar_band(const Eigen::VectorXd& sigma, double frobenius, const NsConfig& ns) {
  const double n = ref::ns_normaliser(frobenius, ns);
  double band = 0;
  for (Eigen::Index i = 0; i < sigma.size(); ++i) {
    band = std::max(band, std::abs(ns.compose(sigma(i) / n) - 1.0));
  }
  return band;
}


class NsGroup {
 public:
  NsGroup(const NsShape& shape, const std::string& preset, std::uint64_t seed)
      : shape_(shape), preset_(preset), base_(optimizer_preset(preset).muon.ns) {
    g_ = shape.kind == InputKind::gaussian ? gaussian_matrix(shape.rows, shape.cols, seed)
                                           : conditioned_matrix(shape.rows, shape.cols, 1e-4, seed);
    polar_ = ref::polar_factor(g_);
    Eigen::BDCSVD<Eigen::MatrixXd> svd(g_);
    sigma_ = svd.singularValues();
    const double smallest = sigma_(sigma_.size() - 1);
    kappa_ = smallest > 0 ? sigma_(0) / smallest : INFINITY;
  }

  std::vector<CaseResult> run() {
    Eigen::MatrixXd exact[2], emulated[2];
    int i = 0;
    for (NsVariant v : {NsVariant::standard, NsVariant::gram}) {
      const NsConfig ns = with_variant(base_, v);
      exact[i] = check_exact(ns);
      emulated[i] = check_emulated(ns);
      ++i;
    }
    const NsConfig gram = with_variant(base_, NsVariant::gram);
    out_.push_back(compare_rel(name("gram-vs-standard", "exact", "rel"), exact[1], exact[0], 1e-9));
    const NsConfig standard = with_variant(base_, NsVariant::standard);
    auto r = compare_scaled(name("gram-vs-standard", "emulate", "rel"), emulated[1], emulated[0], polar_.norm(),
                            "rel_polar", ns_rounding_tolerance(gram, kappa_) + ns_rounding_tolerance(standard, kappa_));
    r.detail = "both sides carry rounding error: the sum of their tolerances";
    out_.push_back(r);
    return std::move(out_);
  }

 private:
  std::string name(const std::string& variant, const std::string& mode, const std::string& check) const {
    return "ns/" + shape_.label + "/" + preset_ + "/" + variant + "/" + mode + "/" + check;
  }

  Eigen::MatrixXd check_exact(const NsConfig& ns) {
    const std::string v(to_string(ns.variant));
    const Eigen::MatrixXd y = ref::newton_schulz(g_, ns, Rounding::exact);
    out_.push_back(compare_rel(name(v, "exact", "svd-prediction"), y, ref::predicted_ns_output(g_, ns), 1e-10));
    const double band = polar_band(sigma_, g_.norm(), ns);
    auto polar = compare_spectral(name(v, "exact", "polar-band"), y, polar_, band + 1e-9);
    polar.detail = "band max|p(s)-1| = " + std::to_string(band);
    out_.push_back(polar);
    if (g_.rows() != g_.cols()) {
      const Eigen::MatrixXd yt = ref::newton_schulz(g_.transpose(), ns, Rounding::exact);
      out_.push_back(compare_bitwise(name(v, "exact", "transpose"), yt.transpose(), y));
    }
    return y;
  }

  Eigen::MatrixXd check_emulated(const NsConfig& ns) {
    const std::string v(to_string(ns.variant));
    const std::string mode = "emulate-" + std::string(to_string(ns.compute_dtype));
    const Eigen::MatrixXd y = ref::newton_schulz(g_, ns, Rounding::emulate);
    const double tol = ns_rounding_tolerance(ns, kappa_);
    // Measured against the size of the ideal output, the polar factor (||P||_F = sqrt(rank)):
    // an ill-conditioned input has a small exact output, and relative to that the same
    // rounding noise would look large.
    out_.push_back(compare_scaled(name(v, mode, "svd-prediction"), y, ref::predicted_ns_output(g_, ns),
                                  polar_.norm(), "rel_polar", tol));
    const double band = polar_band(sigma_, g_.norm(), ns);
    // Rounding moves the result by at most ~tol relative in Frobenius norm; spectrally that
    // is at most tol * ||Y||_F.
    auto polar = compare_spectral(name(v, mode, "polar-band"), y, polar_, band + tol * y.norm());
    polar.detail = "band " + std::to_string(band) + " + rounding; kappa " + std::to_string(kappa_);
    out_.push_back(polar);
    out_.push_back(compare_bitwise(name(v, mode, "determinism"), ref::newton_schulz(g_, ns, Rounding::emulate), y));
    return y;
  }

  NsShape shape_;
  std::string preset_;
  NsConfig base_;
  Eigen::MatrixXd g_, polar_;
  Eigen::VectorXd sigma_;
  double kappa_ = 1;
  std::vector<CaseResult> out_;
};

}  // namespace

std::vector<CaseResult> run_ns_group(const NsShape& shape, const std::string& preset, std::uint64_t seed) {
  return NsGroup(shape, preset, seed).run();
}

}  // namespace dmuon::verify
