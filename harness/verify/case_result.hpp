// One verification result, the error metrics every check uses, and the report writers.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace dmuon::verify {

struct CaseResult {
  std::string name;
  double max_abs_error = 0;  // max |got - expected| over elements
  double error = 0;          // the metric compared with the tolerance (see `metric`)
  double tolerance = 0;
  std::string metric = "rel_fro";  // rel_fro: ||got-exp||_F/||exp||_F; spectral: ||got-exp||_2; bitwise
  bool passed = false;
  std::string detail;  // why it failed, or what the tolerance is made of
};

// A named check that runs when asked: the suite lists cases cheaply and runs the selected ones.
// One case may produce several results (checks sharing one expensive computation).
struct VerifyCase {
  std::string name;
  std::function<std::vector<CaseResult>()> run;
};

// ||got - expected||_F / ||expected||_F (||got||_F when expected is zero), and max |diff|.
// Non-finite values in `got` fail the check.
CaseResult compare_rel(const std::string& name, const Eigen::MatrixXd& got,
                       const Eigen::MatrixXd& expected, double tolerance);
// ||got - expected||_F / scale, for errors measured against a known magnitude (metric name
// given), e.g. the Frobenius norm sqrt(rank) of an exact orthogonal factor.
CaseResult compare_scaled(const std::string& name, const Eigen::MatrixXd& got,
                          const Eigen::MatrixXd& expected, double scale, const std::string& metric,
                          double tolerance);
// Largest singular value of got - expected, compared with `tolerance`.
CaseResult compare_spectral(const std::string& name, const Eigen::MatrixXd& got,
                            const Eigen::MatrixXd& expected, double tolerance);
// Passes only when every element is identical (NaN never equal).
CaseResult compare_bitwise(const std::string& name, const Eigen::MatrixXd& got,
                           const Eigen::MatrixXd& expected);

void print_result(std::ostream& out, const CaseResult& r);
void print_summary(std::ostream& out, const std::vector<CaseResult>& results);
// JSON report: {"tool", "backend", "passed", "failed", "cases": [...], "command", "date"} (the
// provenance stamp of core/io/provenance); throws dmuon::Error naming the file when it cannot be
// written.
void write_json_report(const std::string& path, const std::string& backend, const std::string& command,
                       const std::vector<CaseResult>& results);

}  // namespace dmuon::verify
