// The built-in verification suite of dmuon-verify.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

struct SuiteOptions {
  bool full = false;  // adds the real 4096x11008 shape, dmuon preset (tens of minutes on 2 cores)
  std::uint64_t seed = 20261122;
};

// Shapes: square, tall, wide, 1xn, nx1, odd primes, an ill-conditioned input and a
// 4096x11008-class aspect ratio; every preset, both variants, exact and emulated rounding;
// Muon and AdamW closed forms.
std::vector<VerifyCase> builtin_cases(const SuiteOptions& options);

}  // namespace dmuon::verify
