// The median of timing samples, one definition for every benchmark and probe (each had its own,
// and they disagreed on an even count). Header-only: kernels/ and harness/ use it without linking
// anything of core's.
#pragma once
#include <algorithm>
#include <vector>

namespace dmuon {

// The middle sample of an odd count, the mean of the two middle ones of an even count; 0 for no
// samples (a report of a run that timed nothing shows 0, never a made-up time).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace dmuon
