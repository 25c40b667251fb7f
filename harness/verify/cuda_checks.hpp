// dmuon-verify --backend cuda: the GPU Newton-Schulz engine against the Eigen reference (in the
// matching rounding mode and in exact double), and against PyTorch's own bf16 error on golden
// inputs. Built only with dmuon_kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

// Every suite shape x preset x implementation the engine offers there, a batched call, and
// the non-finite policies.
std::vector<VerifyCase> cuda_builtin_cases(bool full, std::uint64_t seed);

// The `ns` cases of a golden directory (manifest.json, dmuon-golden-1): the GPU result (the
// engine's Gram path for Gram cases; standard, then automatic, otherwise) within the manifest's
// tolerance of the peer's output, and its error against exact double NS at most
// peer_error_margin(elements) (golden.hpp) times the peer's own. Cases with `products: separate`
// and other kinds are CPU-only. Both case lists throw dmuon::Error when no GPU is visible.
std::vector<VerifyCase> cuda_golden_cases(const std::string& dir);

}  // namespace dmuon::verify
