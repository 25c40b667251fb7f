// cuBLASLt matrix products with fp32 accumulation and a fused beta*C epilogue, strided-batched,
// with the descriptors and the heuristic's algorithm cached per problem.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace dmuon::cuda {

// A column-major matrix as stored (before any transpose): rows x cols with leading dimension
// ld, and the distance between consecutive matrices of a batch (elements).
struct MatView {
  const void* ptr = nullptr;
  long rows = 0, cols = 0, ld = 0;
  long long batch_stride = 0;
};

// D = alpha * op(A) op(B) + beta * C, every matrix of one dtype (bf16 or fp16), fp32 compute.
// C may be null (beta must then be 0). fill_lower asks cuBLASLt for the lower triangle only
// (CUBLASLT_MATMUL_DESC_FILL_MODE), for symmetric results. fp32_out: C and D in fp32 (A and B
// stay `type`), the accumulator unrounded: a sharded Newton-Schulz member's partial X_j X_j^T,
// which the group sums before the one rounding a single GEMM over all columns would do.
struct GemmOp {
  bool trans_a = false, trans_b = false;
  MatView a, b, c;
  MatView d;  // d.ptr is written
  int batch = 1;
  float alpha = 1, beta = 0;
  cudaDataType_t type = CUDA_R_16BF;
  bool fill_lower = false;
  bool fp32_out = false;
};

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // False when the heuristic offers no algorithm (e.g. an unsupported fill mode).
  bool supported(const GemmOp& op);
  // Throws dmuon::Error naming the shape when no algorithm exists or the call fails.
  void run(const GemmOp& op, cudaStream_t stream);
  std::size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  struct Plan;
  Plan* plan_for(const GemmOp& op);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::map<std::string, std::unique_ptr<Plan>> plans_;  // by problem_key()
};

}  // namespace dmuon::cuda
