// A 64-bit digest of everything in a Plan that ranks must agree on (strategy, mesh, groups,
// every rank's ops with their collectives, regions, roots and matrices). Executors compare it
// across ranks before the first collective: ranks started with different scenarios, strategies
// or owner assignments fail at once with the cause, instead of hanging in a mismatched NCCL call.
#pragma once
#include <cstdint>

#include "core/plan/plan.hpp"

namespace dmuon {

// FNV-1a over a canonical serialisation; labels and cost annotations are left out (they do not
// change what runs). Equal plans give equal fingerprints on every platform.
std::uint64_t plan_fingerprint(const Plan& plan);

}  // namespace dmuon
