// Finding NaN and infinity in optimizer buffers, for the non-finite gradient policy
// (core/optimizer/optimizer_config.hpp NonfinitePolicy) and the overflow checks of the reference steps.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <Eigen/Core>

namespace dmuon::ref {

// Index of the first NaN or infinity of data[0..n), or -1 when every value is finite.
std::int64_t first_nonfinite(const double* data, std::int64_t n);

// Throws dmuon::Error "<who>: <what> of '<name>' has <nan|inf|-inf> at [row, col]" when `m` has a
// non-finite value (rows and columns of the matrix as given); `name` may be empty ("the matrix").
void require_finite(const Eigen::MatrixXd& m, std::string_view who, std::string_view what, std::string_view name);

// "<who>: <what> of '<name>' has <value> at element <index>", for flat buffers.
std::string nonfinite_message(std::string_view who, std::string_view what, std::string_view name, double value,
                              std::int64_t index);

}  // namespace dmuon::ref
