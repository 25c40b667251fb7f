// Symmetric products on Hopper (sm_90a): a persistent wgmma + TMA kernel that computes only the
// lower-triangle 128 x 128 tiles of D = alpha A B^T + beta C and writes each off-diagonal tile
// twice (itself and its transpose), about half a GEMM's work. A and B are row-major m x k, C and D
// m x m (bf16 or fp16, fp32 accumulation, one rounding of alpha acc + beta C, as a GEMM epilogue).
// D is symmetric by construction, so row- and column-major agree. Newton-Schulz uses it for
// X X^T (B = A), and for products of two symmetric m x m matrices: with B symmetric, A B^T = A B,
// whose exact value is symmetric when A and B commute (every m x m product of NS does).
#pragma once
#include <string>

#include <cuda_runtime_api.h>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda {

struct SymProduct {
  const void* a = nullptr;  // m x k row-major per batch entry (stride m k)
  const void* b = nullptr;  // the same shape; nullptr: b = a (D = alpha A A^T + beta C)
  long m = 0, k = 0;
  int batch = 1;
  DType dtype = DType::bf16;
  float alpha = 1.0f;
  const void* c = nullptr;  // m x m per entry (stride m m), read where i >= j; nullptr: beta 0
  float beta = 0.0f;
  void* d = nullptr;        // m x m per entry; must not overlap a, b or c (other CTAs still read them)

  // S = X X^T for X m x n.
  static SymProduct xxt(const void* X, long m, long n, int batch, DType dtype, void* S) {
    return {X, nullptr, m, n, batch, dtype, 1.0f, nullptr, 0.0f, S};
  }
  // D = alpha A B + beta C on m x m matrices with B symmetric (so A B = A B^T, what the kernel
  // computes); B == A is the one-operand case (A A^T).
  static SymProduct square(const void* A, const void* B, long m, int batch, DType dtype, float alpha, const void* C,
                           float beta, void* D) {
    return {A, B == A ? nullptr : B, m, m, batch, dtype, alpha, C, beta, D};
  }
};

// Empty when launch_sym_gemm_sm90 can run this product on the current device; otherwise why not
// (not an sm_90 GPU, k not a multiple of 8 (TMA needs 16-byte row strides), A or B not 16-byte
// aligned, a dtype other than bf16/fp16, D overlapping an input).
std::string sym_gemm_sm90_unsupported(const SymProduct& p);  // d may be nullptr: the operands only

// Enqueues D[b] = alpha A[b] B[b]^T + beta C[b] (lower triangle, mirrored) for b < batch.
// DMUON_SYM_GEMM_BK=32 in the environment selects the shallower-stage ring (measured slower;
// kept for measurement on other Hopper parts). Capturable into a CUDA graph (no allocation, no
// synchronisation). Throws dmuon::Error when unsupported or on a CUDA error.
void launch_sym_gemm_sm90(const SymProduct& p, cudaStream_t stream);

// The X X^T case (X m x n, S m x m): SymProduct{X, nullptr, m, n, batch, dtype, 1, nullptr, 0, S}.
std::string sym_xxt_sm90_unsupported(long m, long n, DType dtype, const void* X);
void launch_sym_xxt_sm90(const void* X, long m, long n, int batch, DType dtype, void* S, cudaStream_t stream);

}  // namespace dmuon::cuda
