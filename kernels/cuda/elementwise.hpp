// Fused elementwise kernels of the optimizer step: Muon momentum, Muon update, multi-tensor
// AdamW. One pass over memory each; fp32 arithmetic; master weights and optimizer state fp32.
//
// No CUDA header here (harness/ code uses it). Every function enqueues on `stream` and returns
// without synchronising; pointers are device pointers; n counts elements. Formulas are those of
// reference/elementwise_steps.hpp, which defines the numbers these must reproduce.
#pragma once
#include <cstdint>
#include <vector>

#include "core/optimizer/dtype.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "kernels/cuda/ns_engine.hpp"  // Stream

namespace dmuon::cuda {

// Where element i of a launch lives in every pointer it is given: at i (contiguous, the default),
// or with pitch > width at (i / width) * pitch + i % width: a block of lines of `width` elements,
// `pitch` apart (a column block of a row-major matrix, core/plan/region_runs.hpp), so one launch
// covers what would be one launch per line. n still counts the elements updated.
struct Pitch {
  std::int64_t width = 0, pitch = 0;
  bool strided() const { return width > 0 && pitch > width; }
};

// Non-finite gradients: an element whose gradient is NaN or infinite is not applied (its
// momentum, moments and weight stay as they were; the NS input gets the old momentum) and is
// counted in `*nonfinite` when that counter is given. The caller reads the counters after the
// step and reports the parameter (kernels/exec/compute.hpp): never a NaN in the weights.
//
// ema: M = lerp(M, g, 1-mu), u = nesterov ? lerp(g, M, mu) : M
// sum: M = mu M + g,         u = nesterov ? g + mu M      : M
// grad: grad_dtype (fp32, bf16, fp16); momentum: fp32, updated in place; ns_input: u written
// in ns_input_dtype (fp32, bf16, fp16), the Newton-Schulz input. cfg.master_dtype must be fp32.
void momentum_update(const void* grad, DType grad_dtype, float* momentum, void* ns_input,
                     DType ns_input_dtype, std::int64_t n, const MuonConfig& cfg, Stream stream,
                     unsigned* nonfinite = nullptr, Pitch pitch = {});

// W *= 1 - lr*wd (base lr, decoupled), then W -= lr_adj * O, on the fp32 master `master`.
// ns_output: ns_output_dtype (bf16, fp16 or fp32), the NS result (its layout = master's).
// param_bf16: when not null, the updated W is also written there as bf16 (the copy the
// forward pass reads). lr_adj comes from dmuon::adjusted_lr(cfg, rows, cols) * cfg.lr.
void muon_update(float* master, const void* ns_output, DType ns_output_dtype, std::int64_t n,
                 double lr, double weight_decay, double lr_adj, void* param_bf16, Stream stream,
                 Pitch pitch = {});

// One tensor of a multi-tensor AdamW launch. grad dtype is given per launch.
struct AdamWTensor {
  float* master = nullptr;      // fp32 weights, updated in place
  const void* grad = nullptr;   // grad_dtype
  float* exp_avg = nullptr;     // fp32 m
  float* exp_avg_sq = nullptr;  // fp32 v
  void* param_bf16 = nullptr;   // optional bf16 copy-out of the updated weights
  std::int64_t numel = 0;
  unsigned* nonfinite = nullptr;  // optional device counter of non-finite gradient elements
};

// torch.optim.AdamW at step number `step` (1 on the first step) for every tensor, in as few
// launches as the kernel-argument size allows (tensor addresses travel in the arguments, so the
// call is CUDA-graph capturable):
//   W *= 1 - lr*wd; m = lerp(m, g, 1-b1); v = b2 v + (1-b2) g^2;
//   W -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
// cfg.master_dtype must be fp32. Throws dmuon::Error for a bad argument or a launch failure.
void adamw_multi_tensor(const std::vector<AdamWTensor>& tensors, DType grad_dtype, long step,
                        const AdamWConfig& cfg, Stream stream);

// Bytes each pass moves per element (for bandwidth figures; CostModel counts the same for bf16
// grads and bf16 copy-outs): sizes of what the kernel reads and writes.
double momentum_bytes_per_element(DType grad_dtype, DType ns_input_dtype);
double muon_update_bytes_per_element(DType ns_output_dtype, bool bf16_copy_out);
double adamw_bytes_per_element(DType grad_dtype, bool bf16_copy_out);

}  // namespace dmuon::cuda
