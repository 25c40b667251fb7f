// FLOPs and GEMM launches of one Newton-Schulz call, per kernel family (standard, symmetric, Gram).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/optimizer/optimizer_config.hpp"

namespace dmuon {

// How a Newton-Schulz call is computed on a GPU (kernel-anchors.md 1.2, 1.3, 3.1):
// standard:  every GEMM general (X X^T, A^2, B X): what torch.optim.Muon runs.
// symmetric: standard NS with X X^T and A^2 computed as one triangle (SYRK-like), half their flops.
// gram:      Gram Newton-Schulz (Dao-AILab) iterating on R = X X^T, with restarts.
enum class NsKernel { standard, symmetric, gram };

std::string_view to_string(NsKernel kernel);
// Throws dmuon::Error naming `what` for a name other than standard, symmetric, gram.
NsKernel parse_ns_kernel(std::string_view name, const std::string& what);
// The kernel a config asks for: gram for NsVariant::gram, standard otherwise (symmetric is an
// implementation choice of the executor, not a semantic knob).
NsKernel ns_kernel_of(const NsConfig& ns);

// FLOPs of one call on a rows x cols matrix (either orientation: the call transposes to wide,
// m = min, n = max). A multiply-add counts 2 flops; a symmetric product (one triangle) counts
// half of its general GEMM, as the Gram-NS blog does. `restarts` (0-based iterations with a
// restart before them, strictly increasing in [1, steps-1]) only changes the Gram count; the
// other kernels ignore it. Throws dmuon::Error for non-positive sizes or steps, or bad restarts.
//   standard:  steps * (4 m^2 n + 2 m^3)
//   symmetric: steps * (3 m^2 n + m^3)
//   gram:      see ns_flops.cpp; T = 5 gives (17 + 3 alpha) m^3 with no restart and
//              (14 + 6 alpha) m^3 with a restart at 2, where alpha = n / m.
double ns_flops(NsKernel kernel, long rows, long cols, int steps, const std::vector<int>& restarts);

// The flops benchmarks divide by ("useful" flops): the standard all-general count, whatever
// kernel ran, so that a faster algorithm shows as a higher rate rather than a lower count.
double ns_useful_flops(long rows, long cols, int steps);

// The GEMMs of one call by kind: m x m products (inner size m: standard's A^2; Gram's Z, Q
// unless free, the R update's two), X X^T products (m x m from m x n: standard every step, Gram
// at the start and after each restart) and m x n products (B X; Q X after each restart and for
// the result). A sharded call's member runs each as a full GEMM (2 m^2 w flops for w columns of
// the product), symmetric or not: its share of a call is counted so (core/plan/ns_sharding.hpp).
struct NsProductCounts {
  int square = 0, gram = 0, rect = 0;
};
NsProductCounts ns_product_counts(NsKernel kernel, int steps, const std::vector<int>& restarts);

// GEMM launches of one call (a batched call launches each once for the whole batch).
// standard and symmetric: 3 per step. gram: 1 (R) + per step Z, Q unless free, 2 for the R
// update when it runs, 2 per restart, 1 final Q X; 19 for T = 5 with no restart.
int ns_gemm_count(NsKernel kernel, int steps, const std::vector<int>& restarts);

}  // namespace dmuon
