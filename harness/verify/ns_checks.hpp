// Newton-Schulz checks of the built-in suite: against the SVD polar factor within the band the
// scalar polynomial predicts, Gram against standard, transposition, determinism.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/optimizer_config.hpp"
#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

enum class InputKind { gaussian, ill_conditioned };

struct NsShape {
  std::string label;  // e.g. "tall-96x48"
  long rows = 0, cols = 0;
  InputKind kind = InputKind::gaussian;
};

// Error allowed between an emulated-rounding run and the exact-arithmetic prediction, measured
// against ||polar factor||_F, for the storage precision of `ns` and an input of condition number
// `kappa` (sigma_max / sigma_min).
double rounding_tolerance(const NsConfig& ns, double kappa);

// All checks for one input shape under one optimizer preset (both variants, both modes).
std::vector<CaseResult> run_ns_group(const NsShape& shape, const std::string& preset, std::uint64_t seed);

}  // namespace dmuon::verify
