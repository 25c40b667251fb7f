#include "core/cost/grouped_calls.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/error.hpp"

namespace dmuon {

bool issued_per_region(OpKind kind) {
  return kind == OpKind::all_reduce || kind == OpKind::broadcast || kind == OpKind::reduce;
}

double extra_call_seconds_at(const LocalGroupedCalls& calls, double group_bytes) {
  const auto& p = calls.points;
  if (p.empty()) throw Error("local grouped calls of " + std::string(to_string(calls.kind)) + ": no points");
  if (!(group_bytes >= 0) || !std::isfinite(group_bytes)) {
    throw Error("local grouped calls: group bytes must be finite and >= 0, got " + std::to_string(group_bytes));
  }
  const auto above = std::lower_bound(p.begin(), p.end(), group_bytes, [](const auto& q, double v) { return q.first < v; });
  if (above == p.begin()) return p.front().second;
  if (above == p.end()) return p.back().second;
  const auto below = std::prev(above);
  const double f = std::log(group_bytes / below->first) / std::log(above->first / below->first);
  return below->second + f * (above->second - below->second);
}

double seconds_per_extra_call(const std::vector<std::pair<int, double>>& seconds_by_calls) {
  std::set<int> counts;
  double mean_x = 0, mean_y = 0;
  for (const auto& [calls, seconds] : seconds_by_calls) {
    counts.insert(calls);
    mean_x += calls;
    mean_y += seconds;
  }
  if (counts.size() < 2) throw Error("grouped calls: a slope needs groups of at least two different call counts");
  const double n = static_cast<double>(seconds_by_calls.size());
  mean_x /= n;
  mean_y /= n;
  double sxy = 0, sxx = 0;
  for (const auto& [calls, seconds] : seconds_by_calls) {
    sxy += (calls - mean_x) * (seconds - mean_y);
    sxx += (calls - mean_x) * (calls - mean_x);
  }
  return sxy / sxx;
}

}  // namespace dmuon
