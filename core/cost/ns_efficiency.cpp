#include "core/cost/ns_efficiency.hpp"

#include <cmath>
#include <iterator>
#include <string>

#include "core/error.hpp"

namespace dmuon {
namespace {

// Linear in log2(key) between the entries around `key` of a sorted map, clamped outside.
template <typename Map, typename Value>
double log_linear(const Map& map, typename Map::key_type key, Value value_of) {
  const auto above = map.lower_bound(key);
  if (above == map.end()) return value_of(std::prev(above)->second);
  if (above->first == key || above == map.begin()) return value_of(above->second);
  const auto below = std::prev(above);
  const double f = (std::log2(double(key)) - std::log2(double(below->first))) /
                   (std::log2(double(above->first)) - std::log2(double(below->first)));
  const double lo = value_of(below->second), hi = value_of(above->second);
  return lo + f * (hi - lo);
}

}  // namespace

void NsEfficiencyGrid::add(long m, long n, int batch, double efficiency) {
  if (m <= 0 || n <= 0 || batch <= 0 || !(efficiency > 0) || !std::isfinite(efficiency)) {
    throw Error("Newton-Schulz efficiency grid: point " + std::to_string(m) + "x" + std::to_string(n) + " batch " +
                std::to_string(batch) + " needs positive sizes and a finite efficiency > 0");
  }
  if (!points_[m][n].emplace(batch, efficiency).second) {
    throw Error("Newton-Schulz efficiency grid: two points for " + std::to_string(m) + "x" + std::to_string(n) +
                " batch " + std::to_string(batch));
  }
}

double NsEfficiencyGrid::at(long m, long n, int batch) const {
  if (points_.empty()) throw Error("Newton-Schulz efficiency grid: no measured point");
  if (m <= 0 || n <= 0 || batch <= 0) {
    throw Error("Newton-Schulz efficiency grid: query " + std::to_string(m) + "x" + std::to_string(n) + " batch " +
                std::to_string(batch) + " needs positive sizes");
  }
  return log_linear(points_, m, [n, batch](const Row& row) {
    return log_linear(row, n, [batch](const Batches& batches) { return log_linear(batches, batch, [](double e) { return e; }); });
  });
}

}  // namespace dmuon
