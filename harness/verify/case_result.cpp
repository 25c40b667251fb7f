#include "harness/verify/case_result.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/provenance.hpp"

namespace dmuon::verify {
namespace {

bool all_finite(const Eigen::MatrixXd& m) { return m.allFinite(); }

CaseResult shape_mismatch(const std::string& name, const Eigen::MatrixXd& got,
                          const Eigen::MatrixXd& expected) {
  CaseResult r;
  r.name = name;
  r.error = r.max_abs_error = INFINITY;
  r.detail = "shape " + std::to_string(got.rows()) + "x" + std::to_string(got.cols()) + " != expected " +
             std::to_string(expected.rows()) + "x" + std::to_string(expected.cols());
  return r;
}

}  // namespace

CaseResult compare_rel(const std::string& name, const Eigen::MatrixXd& got,
                       const Eigen::MatrixXd& expected, double tolerance) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols()) {
    return shape_mismatch(name, got, expected);
  }
  CaseResult r;
  r.name = name;
  r.tolerance = tolerance;
  const Eigen::MatrixXd diff = got - expected;
  r.max_abs_error = diff.size() ? diff.cwiseAbs().maxCoeff() : 0.0;
  const double ref = expected.norm();
  r.error = diff.norm() / (ref > 0 ? ref : 1.0);
  r.passed = all_finite(got) && r.error <= tolerance;
  if (!all_finite(got)) r.detail = "non-finite values in the result";
  return r;
}

CaseResult compare_scaled(const std::string& name, const Eigen::MatrixXd& got,
                          const Eigen::MatrixXd& expected, double scale, const std::string& metric,
                          double tolerance) {
  CaseResult r = compare_rel(name, got, expected, tolerance);
  if (got.rows() != expected.rows() || got.cols() != expected.cols()) return r;
  r.metric = metric;
  r.error = (got - expected).norm() / scale;
  r.passed = got.allFinite() && r.error <= tolerance;
  return r;
}

CaseResult compare_spectral(const std::string& name, const Eigen::MatrixXd& got,
                            const Eigen::MatrixXd& expected, double tolerance) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols()) {
    return shape_mismatch(name, got, expected);
  }
  CaseResult r;
  r.name = name;
  r.metric = "spectral";
  r.tolerance = tolerance;
  if (!all_finite(got)) {
    r.error = r.max_abs_error = INFINITY;
    r.detail = "non-finite values in the result";
    return r;
  }
  const Eigen::MatrixXd diff = got - expected;
  r.max_abs_error = diff.size() ? diff.cwiseAbs().maxCoeff() : 0.0;
  Eigen::BDCSVD<Eigen::MatrixXd> svd(diff);
  r.error = svd.singularValues().size() ? svd.singularValues()(0) : 0.0;
  r.passed = r.error <= tolerance;
  return r;
}

CaseResult compare_bitwise(const std::string& name, const Eigen::MatrixXd& got,
                           const Eigen::MatrixXd& expected) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols()) {
    return shape_mismatch(name, got, expected);
  }
  CaseResult r;
  r.name = name;
  r.metric = "bitwise";
  long differing = 0;
  for (Eigen::Index i = 0; i < got.size(); ++i) {
    const double a = got.data()[i], b = expected.data()[i];
    if (!(a == b)) ++differing;  // NaN != NaN: a NaN result never passes
    if (std::isfinite(a - b)) r.max_abs_error = std::max(r.max_abs_error, std::abs(a - b));
  }
  r.error = static_cast<double>(differing);
  r.passed = differing == 0;
  if (differing) r.detail = std::to_string(differing) + " elements differ";
  return r;
}

void print_result(std::ostream& out, const CaseResult& r) {
  char line[512];
  std::snprintf(line, sizeof line, "%s  %-58s max_abs %9.3e  %-8s %9.3e  tol %9.3e", r.passed ? "PASS" : "FAIL",
                r.name.c_str(), r.max_abs_error, r.metric.c_str(), r.error, r.tolerance);
  out << line;
  if (!r.detail.empty()) out << "  (" << r.detail << ")";
  out << "\n";
}

void print_summary(std::ostream& out, const std::vector<CaseResult>& results) {
  std::size_t failed = 0;
  for (const auto& r : results) failed += !r.passed;
  out << (results.size() - failed) << " passed, " << failed << " failed\n";
}

void write_json_report(const std::string& path, const std::string& backend, const std::string& command,
                       const std::vector<CaseResult>& results) {
  nlohmann::json cases = nlohmann::json::array();
  std::size_t failed = 0;
  // JSON has no infinity: a non-finite error is written as null.
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const auto& r : results) {
    failed += !r.passed;
    cases.push_back({{"name", r.name}, {"passed", r.passed}, {"metric", r.metric},
                     {"max_abs_error", number(r.max_abs_error)}, {"error", number(r.error)},
                     {"tolerance", r.tolerance}, {"detail", r.detail}});
  }
  nlohmann::json doc = {{"tool", "dmuon-verify"}, {"backend", backend},
                        {"passed", results.size() - failed}, {"failed", failed}, {"cases", cases}};
  doc.update(provenance_json(command, utc_now()));
  std::ofstream f(path);
  if (!f) throw Error(path + ": cannot write the JSON report");
  f << doc.dump(2) << "\n";
  if (!f) throw Error(path + ": write failed");
}

}  // namespace dmuon::verify
