// The GEMMs of one Newton-Schulz call in the wide-problem algebra (X m x n, m <= n), mapped onto
// column-major cuBLASLt operands for either memory orientation (NsGeometry::x_column_major).
// Internal to kernels/cuda/ns_program.cpp, which enqueues the programs out of these products.
#pragma once
#include <string>

#include "core/error.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/ns_program.hpp"

namespace dmuon::cuda::ns_detail {

inline cudaDataType_t cuda_type(DType t) {
  if (t == DType::bf16) return CUDA_R_16BF;
  if (t == DType::fp16) return CUDA_R_16F;
  throw Error("Newton-Schulz compute dtype must be bf16 or fp16, got " + std::string(to_string(t)));
}

inline const void* offset(const void* p, long elements) { return static_cast<const char*>(p) + elements * 2; }

// The products of one call, in the wide-problem algebra, mapped onto column-major cuBLASLt
// operands for either memory orientation. Every 16-bit element is 2 bytes.
class Ops {
 public:
  Ops(LtGemm& gemm, cudaStream_t stream, const NsGeometry& g, DType dtype)
      : gemm_(gemm), stream_(stream), g_(g), dtype_(dtype), type_(cuda_type(dtype)) {}

  MatView x_view(const void* p) const {
    return g_.x_column_major ? MatView{p, g_.m, g_.n, g_.m, g_.x_elems()} : MatView{p, g_.n, g_.m, g_.n, g_.x_elems()};
  }
  MatView s_view(const void* p, long rows, long cols) const { return {p, rows, cols, g_.m, g_.s_elems()}; }

  // S[r0:r0+rows, 0:cols] = X[r0:r0+rows, :] X[0:cols, :]^T (whole S: r0 = 0, rows = cols = m).
  // fp32_out: S is fp32 (the accumulator unrounded; lt_gemm.hpp).
  GemmOp gram_op(const void* X, void* S, long r0, long rows, long cols, bool fill_lower, bool fp32_out = false) const {
    GemmOp op = base();
    op.fill_lower = fill_lower;
    op.fp32_out = fp32_out;
    if (g_.x_column_major) {  // X is m x n: A = X rows, B^T
      op.trans_b = true;
      op.a = {offset(X, r0), rows, g_.n, g_.m, g_.x_elems()};
      op.b = {X, cols, g_.n, g_.m, g_.x_elems()};
    } else {  // memory is Y = X^T (n x m): A^T = columns of Y
      op.trans_a = true;
      op.a = {offset(X, r0 * g_.n), g_.n, rows, g_.n, g_.x_elems()};
      op.b = {X, g_.n, cols, g_.n, g_.x_elems()};
    }
    op.d = s_view(offset(S, r0), rows, cols);
    return op;
  }
  void gram(const void* X, void* S, bool fill_lower = false) { run(gram_op(X, S, 0, g_.m, g_.m, fill_lower)); }

  // D[r0:r1, 0:cols] = alpha A[r0:r1, :] B[:, 0:cols] + beta C[r0:r1, 0:cols] on m x m matrices.
  GemmOp square_op(const void* A, const void* B, void* D, float alpha, const void* C, float beta, long r0,
                   long rows, long cols, bool fill_lower) const {
    GemmOp op = base();
    op.fill_lower = fill_lower;
    op.a = s_view(offset(A, r0), rows, g_.m);
    op.b = s_view(B, g_.m, cols);
    if (C) op.c = s_view(offset(C, r0), rows, cols);
    op.d = s_view(offset(D, r0), rows, cols);
    op.alpha = alpha;
    op.beta = beta;
    return op;
  }
  // D[:, c0:c0+cols] = alpha A B[:, c0:c0+cols] + beta C[:, c0:c0+cols] on m x m matrices: a
  // block of whole columns, contiguous in the column-major layout (a split product's block).
  void column_block(const void* A, const void* B, void* D, float alpha, const void* C, float beta, long c0, long cols) {
    GemmOp op = base();
    op.a = s_view(A, g_.m, g_.m);
    op.b = s_view(offset(B, c0 * g_.m), g_.m, cols);
    if (C) op.c = s_view(offset(C, c0 * g_.m), g_.m, cols);
    op.d = s_view(offset(D, c0 * g_.m), g_.m, cols);
    op.alpha = alpha;
    op.beta = beta;
    run(op);
  }

  void square(const void* A, const void* B, void* D, float alpha, const void* C, float beta,
              bool fill_lower = false) {
    run(square_op(A, B, D, alpha, C, beta, 0, g_.m, g_.m, fill_lower));
  }

  // D = S X + beta C (m x n). With memory Y = X^T this is D^T = Y S^T + beta C^T.
  void left(const void* S, const void* X, void* D, const void* C, float beta) {
    GemmOp op = base();
    if (g_.x_column_major) {
      op.a = s_view(S, g_.m, g_.m);
      op.b = x_view(X);
    } else {
      op.a = x_view(X);
      op.b = s_view(S, g_.m, g_.m);
      op.trans_b = true;
    }
    if (C) op.c = x_view(C);
    op.d = x_view(D);
    op.beta = beta;
    run(op);
  }

  // D = S X written column-major m x n (ld m, a tall input's layout) from X held wide (memory Y =
  // X^T column-major, x_column_major false): D = S (Y)^T, the layout change inside the GEMM.
  void left_column_major(const void* S, const void* X, void* D) {
    if (g_.x_column_major) return left(S, X, D, nullptr, 0.0f);
    GemmOp op = base();
    op.a = s_view(S, g_.m, g_.m);
    op.b = x_view(X);
    op.trans_b = true;
    op.d = {D, g_.m, g_.n, g_.m, g_.x_elems()};
    run(op);
  }

  void run(const GemmOp& op) { gemm_.run(op, stream_); }
  bool supported(const GemmOp& op) { return gemm_.supported(op); }
  DType dtype() const { return dtype_; }

 private:
  GemmOp base() const {
    GemmOp op;
    op.type = type_;
    op.batch = g_.batch;
    return op;
  }
  LtGemm& gemm_;
  cudaStream_t stream_;
  NsGeometry g_;
  DType dtype_;
  cudaDataType_t type_;
};

}  // namespace dmuon::cuda::ns_detail
