// S = X X^T for row-major X (m x n, bf16 or fp16, fp32 accumulation) on Hopper (sm_90a): a
// persistent wgmma + TMA kernel that computes only the lower-triangle 128 x 128 tiles and writes
// each off-diagonal tile twice (itself and its transpose), about half a GEMM's work.
// The output S (m x m per batch entry, stride m*m) is symmetric, so row- and column-major agree.
#pragma once
#include <string>

#include <cuda_runtime_api.h>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda {

// Empty when launch_sym_xxt_sm90 can run this problem on the current device; otherwise why not
// (not an sm_90 GPU, n not a multiple of 8 (TMA needs 16-byte row strides), X not 16-byte
// aligned, a dtype other than bf16/fp16).
std::string sym_xxt_sm90_unsupported(long m, long n, DType dtype, const void* X);

// Enqueues S[b] = X[b] X[b]^T for b < batch (X stride m*n, S stride m*m, both `dtype`).
// DMUON_SYM_GEMM_BK=32 in the environment selects the shallower-stage ring (measured slower;
// kept for measurement on other Hopper parts). Capturable into a CUDA graph (no allocation, no synchronisation). Throws dmuon::Error when
// unsupported or on a CUDA error.
void launch_sym_xxt_sm90(const void* X, long m, long n, int batch, DType dtype, void* S, cudaStream_t stream);

}  // namespace dmuon::cuda
