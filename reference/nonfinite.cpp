#include "reference/nonfinite.hpp"

#include <cmath>

#include "core/error.hpp"

namespace dmuon::ref {
namespace {

std::string show(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

std::string subject(std::string_view what, std::string_view name) {
  return std::string(what) + " of " + (name.empty() ? std::string("the matrix") : "'" + std::string(name) + "'");
}

}  // namespace

std::int64_t first_nonfinite(const double* data, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(data[i])) return i;
  }
  return -1;
}

std::string nonfinite_message(std::string_view who, std::string_view what, std::string_view name, double value,
                              std::int64_t index) {
  return std::string(who) + ": " + subject(what, name) + " has " + show(value) + " at element " +
         std::to_string(index);
}

void require_finite(const Eigen::MatrixXd& m, std::string_view who, std::string_view what, std::string_view name) {
  const std::int64_t bad = first_nonfinite(m.data(), m.size());
  if (bad < 0) return;
  // Eigen's default storage is column-major.
  const std::int64_t row = bad % m.rows(), col = bad / m.rows();
  throw Error(std::string(who) + ": " + subject(what, name) + " has " + show(m.data()[bad]) + " at [" +
              std::to_string(row) + ", " + std::to_string(col) + "]");
}

}  // namespace dmuon::ref
