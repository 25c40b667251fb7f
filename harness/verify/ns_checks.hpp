// Newton-Schulz checks of the built-in suite: against the SVD polar factor within the band the
// scalar polynomial predicts, Gram against standard, transposition, determinism.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/optimizer/optimizer_config.hpp"
#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

enum class InputKind { gaussian, ill_conditioned };

struct NsShape {
  std::string label;  // e.g. "tall-96x48"
  long rows = 0, cols = 0;
  InputKind kind = InputKind::gaussian;
};

// All checks for one input shape under one optimizer preset (both variants, both modes).
std::vector<CaseResult> run_ns_group(const NsShape& shape, const std::string& preset, std::uint64_t seed);

}  // namespace dmuon::verify
