// How far a Newton-Schulz run in a storage precision may land from exact arithmetic: a
// first-order rounding analysis of NsConfig's schedule (derivation in ns_rounding.cpp), used by
// dmuon-verify's checks and the GPU engine's accuracy gate.
#pragma once

#include "core/optimizer/optimizer_config.hpp"

namespace dmuon {

// Error allowed between an emulated-rounding run and the exact-arithmetic result, measured
// against ||polar factor||_F, for the storage precision of `ns` and an input of condition number
// `kappa` (sigma_max / sigma_min).
double ns_rounding_tolerance(const NsConfig& ns, double kappa);

}  // namespace dmuon
