#include "kernels/cuda/lt_gemm.hpp"

#include <string>

#include "kernels/cuda/cublas_check.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace dmuon::cuda {
namespace {

// cuBLAS recommends 32 MiB of workspace on Hopper for its best kernels.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

// Largest power of two (up to 256) dividing the address: the heuristic must not pick a kernel
// that assumes more alignment than a sub-block pointer has.
int alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  int a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

std::string describe(const GemmOp& op) {
  const long m = op.trans_a ? op.a.cols : op.a.rows;
  const long k = op.trans_a ? op.a.rows : op.a.cols;
  const long n = op.trans_b ? op.b.rows : op.b.cols;
  return "GEMM " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " batch " +
         std::to_string(op.batch) + (op.trans_a ? " A^T" : "") + (op.trans_b ? " B^T" : "") +
         (op.fill_lower ? " fill=lower" : "") + (op.fp32_out ? " fp32 out" : "");
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, const MatView& v, int batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  DMUON_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, v.rows, v.cols, v.ld));
  if (batch > 1) {
    std::int32_t count = batch;
    std::int64_t stride = v.batch_stride;
    DMUON_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                        sizeof(count)));
    DMUON_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                        &stride, sizeof(stride)));
  }
  return layout;
}

// Everything the descriptors and the algorithm choice depend on.
std::string problem_key(const GemmOp& op) {
  const MatView& c = op.c.ptr ? op.c : op.d;
  std::string key;
  for (const MatView* v : {&op.a, &op.b, &c, &op.d}) {
    key += std::to_string(v->rows) + "," + std::to_string(v->cols) + "," + std::to_string(v->ld) + "," +
           std::to_string(v->batch_stride) + "," + std::to_string(alignment_of(v->ptr)) + ";";
  }
  key += std::to_string(op.trans_a) + std::to_string(op.trans_b) + std::to_string(op.fill_lower) +
         std::to_string(op.fp32_out) + "," +
         std::to_string(op.batch) + "," + std::to_string(static_cast<int>(op.type));
  return key;
}

}  // namespace

struct LtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  bool found = false;
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

LtGemm::LtGemm() {
  DMUON_CUBLAS_CHECK(cublasLtCreate(&handle_));
  workspace_ = device_alloc(kWorkspaceBytes, "cuBLASLt workspace");
  workspace_bytes_ = kWorkspaceBytes;
}

LtGemm::~LtGemm() {
  plans_.clear();
  device_free(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

LtGemm::Plan* LtGemm::plan_for(const GemmOp& op) {
  const MatView& c = op.c.ptr ? op.c : op.d;
  const std::string key = problem_key(op);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();
  auto plan = std::make_unique<Plan>();
  DMUON_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = op.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = op.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  DMUON_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  DMUON_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (op.fill_lower) {
    const cublasFillMode_t fill = CUBLAS_FILL_MODE_LOWER;
    DMUON_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_FILL_MODE, &fill,
                                                      sizeof(fill)));
  }
  plan->a = make_layout(op.type, op.a, op.batch);
  plan->b = make_layout(op.type, op.b, op.batch);
  const cudaDataType_t out_type = op.fp32_out ? CUDA_R_32F : op.type;
  plan->c = make_layout(out_type, c, op.batch);
  plan->d = make_layout(out_type, op.d, op.batch);

  cublasLtMatmulPreference_t pref = nullptr;
  DMUON_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = workspace_bytes_;
  DMUON_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                          sizeof(ws)));
  const std::uint32_t align[4] = {static_cast<std::uint32_t>(alignment_of(op.a.ptr)),
                                  static_cast<std::uint32_t>(alignment_of(op.b.ptr)),
                                  static_cast<std::uint32_t>(alignment_of(c.ptr)),
                                  static_cast<std::uint32_t>(alignment_of(op.d.ptr))};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    DMUON_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &align[i], sizeof(align[i])));
  }
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->c,
                                                               plan->d, pref, 1, &plan->heuristic, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  // NOT_SUPPORTED is the library's "no algorithm for this problem" answer, not a failure.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) DMUON_CUBLAS_CHECK(status);
  plan->found = status == CUBLAS_STATUS_SUCCESS && returned > 0;
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

bool LtGemm::supported(const GemmOp& op) { return plan_for(op)->found; }

void LtGemm::run(const GemmOp& op, cudaStream_t stream) {
  Plan* plan = plan_for(op);
  if (!plan->found) throw Error("cuBLASLt offers no algorithm for " + describe(op));
  const void* c = op.c.ptr ? op.c.ptr : op.d.ptr;
  const cublasStatus_t status =
      cublasLtMatmul(handle_, plan->desc, &op.alpha, op.a.ptr, plan->a, op.b.ptr, plan->b, &op.beta, c, plan->c,
                     const_cast<void*>(op.d.ptr), plan->d, &plan->heuristic.algo, workspace_, workspace_bytes_,
                     stream);
  if (status != CUBLAS_STATUS_SUCCESS) check_cublas(status, ("cublasLtMatmul " + describe(op)).c_str(), __FILE__, __LINE__);
}

}  // namespace dmuon::cuda
