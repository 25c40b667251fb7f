// Symmetric products on Hopper (sm_90a): a persistent wgmma + TMA kernel that computes only the
// lower-triangle 128 x 128 tiles of D = alpha A B^T + beta C and writes each off-diagonal tile
// twice (itself and its transpose), about half a GEMM's work. A and B are row-major m x k, C and D
// m x m (bf16 or fp16, fp32 accumulation, one rounding of alpha acc + beta C, as a GEMM epilogue).
// D is symmetric by construction, so row- and column-major agree. Newton-Schulz uses it for
// X X^T (B = A), and for products of two symmetric m x m matrices: with B symmetric, A B^T = A B,
// whose exact value is symmetric when A and B commute (every m x m product of NS does).
// Where its 128 x 256 pieces are too few for the GPU (m <= 2048, batch 1 or 2), a launch given a
// workspace splits their k steps over all SMs (stream-K) and adds the fp32 partials in a fixed
// order before the one rounding: the same result every run on a GPU of the same SM count, equal
// to the unsplit sum up to fp32 reassociation.
#pragma once
#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda {

// Stream-K workspace (sym_gemm_sm90_workspace_bytes): zero-filled before its first launch, each
// launch leaves it as it found it; one stream's launches at a time. ptr nullptr: never split.
struct SymWorkspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

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
  SymWorkspace workspace;

  // S = X X^T for X m x n.
  static SymProduct xxt(const void* X, long m, long n, int batch, DType dtype, void* S) {
    return {X, nullptr, m, n, batch, dtype, 1.0f, nullptr, 0.0f, S, {}};
  }
  // D = alpha A B + beta C on m x m matrices with B symmetric (so A B = A B^T, what the kernel
  // computes); B == A is the one-operand case (A A^T).
  static SymProduct square(const void* A, const void* B, long m, int batch, DType dtype, float alpha, const void* C,
                           float beta, void* D) {
    return {A, B == A ? nullptr : B, m, m, batch, dtype, alpha, C, beta, D, {}};
  }
  SymProduct with_workspace(SymWorkspace w) const {
    SymProduct p = *this;
    p.workspace = w;
    return p;
  }
};

// Bytes of a stream-K workspace for any launch on the current device; 0 where the kernel does
// not run (not an sm_90 GPU, no device).
std::size_t sym_gemm_sm90_workspace_bytes();

// True when an m x m product's 128 x 256 pieces (batch entries together) are fewer than the
// current device's clusters of two SMs: there the kernel's fixed costs (launch, pipeline fill,
// epilogue) outweigh its halved work even with stream-K, and a full cuBLAS GEMM is faster
// (H100: 2048 x 2048, 36 pieces for 66 clusters, 0.045-0.050 ms against 0.038-0.042; 3072 x 3072,
// 78 pieces, 0.089 against 0.097).
bool sym_gemm_sm90_underfills(long m, int batch);

// Empty when launch_sym_gemm_sm90 can run this product on the current device; otherwise why not
// (not an sm_90 GPU, k not a multiple of 8 (TMA needs 16-byte row strides), A or B not 16-byte
// aligned, a dtype other than bf16/fp16, D overlapping an input).
std::string sym_gemm_sm90_unsupported(const SymProduct& p);  // d may be nullptr: the operands only

// Enqueues D[b] = alpha A[b] B[b]^T + beta C[b] (lower triangle, mirrored) for b < batch.
// DMUON_SYM_STREAM_K=off never splits, =force splits every launch given a workspace (the A/B of
// stream-K; an unknown value throws). Capturable into a CUDA graph (no allocation, no
// synchronisation). Throws dmuon::Error when unsupported, when p.workspace is too small for the
// split it would run, or on a CUDA error; sym_gemm_sm90_unsupported also refuses a workspace
// overlapping A, B, C or D.
void launch_sym_gemm_sm90(const SymProduct& p, cudaStream_t stream);

// The X X^T case (X m x n, S m x m): SymProduct{X, nullptr, m, n, batch, dtype, 1, nullptr, 0, S}.
std::string sym_xxt_sm90_unsupported(long m, long n, DType dtype, const void* X);
void launch_sym_xxt_sm90(const void* X, long m, long n, int batch, DType dtype, void* S, cudaStream_t stream,
                         SymWorkspace workspace = {});

}  // namespace dmuon::cuda
