#include "harness/bench/grouped_calls.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace dmuon::bench {

exec::GroupedCallOptions grouped_call_options(std::size_t max_bytes, int warmup, int iterations, int passes,
                                              double timeout_seconds) {
  exec::GroupedCallOptions o;
  std::vector<std::size_t> sizes;
  for (std::size_t b : o.group_bytes) {
    if (b <= max_bytes) sizes.push_back(b);
  }
  o.group_bytes = sizes.empty() ? std::vector<std::size_t>{max_bytes} : sizes;
  o.warmup = warmup;
  o.iterations = iterations;
  o.passes = passes;
  o.timeout_seconds = timeout_seconds;
  return o;
}

std::vector<LocalGroupedCalls> fit_grouped_calls(const std::vector<exec::GroupedCallPoint>& points) {
  std::vector<LocalGroupedCalls> out;
  for (const auto& p : points) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.kind == p.kind; });
    if (it == out.end()) it = out.insert(out.end(), LocalGroupedCalls{p.kind, {}});
    it->points.emplace_back(p.group_bytes, std::max(0.0, seconds_per_extra_call(p.seconds_by_calls)));
  }
  return out;
}

void print_grouped_calls(const std::vector<exec::GroupedCallPoint>& points) {
  if (points.empty()) return;
  std::printf("# grouped calls on one GPU: in place, bfloat16, one ncclGroupStart/End a group, the group's bytes\n"
              "# split evenly over its calls; us a group, and the least-squares us each call past the first adds\n");
  std::printf("#%13s %15s", "kind", "group(B)");
  for (const auto& [calls, seconds] : points.front().seconds_by_calls) std::printf(" %7d", calls);
  std::printf(" %12s\n", "us/extra");
  for (const auto& p : points) {
    std::printf("%14s %15.0f", std::string(to_string(p.kind)).c_str(), p.group_bytes);
    for (const auto& [calls, seconds] : p.seconds_by_calls) std::printf(" %7.2f", seconds * 1e6);
    const double slope = seconds_per_extra_call(p.seconds_by_calls);
    std::printf(" %12.3f%s\n", std::max(0.0, slope) * 1e6, slope < 0 ? " (below 0: recorded as 0)" : "");
  }
  std::fflush(stdout);
}

}  // namespace dmuon::bench
