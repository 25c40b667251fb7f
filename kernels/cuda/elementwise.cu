// Fused elementwise kernels of the optimizer step: Muon momentum, Muon update, multi-tensor AdamW.
// Each is one pass over memory with fp32 arithmetic (formulas: reference/elementwise_steps.cpp).
#include "kernels/cuda/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_element.cuh"

namespace dmuon::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxTensorsPerLaunch = 40;  // 40 * 56 bytes of addresses stay inside the 4 KiB argument limit

__device__ __forceinline__ float load(const void* p, int dtype, long i) { return load_element(p, dtype, i); }
__device__ __forceinline__ void store(void* p, int dtype, long i, float v) { store_element(p, dtype, i, v); }

// What a launch covers: `count` lines of `width` elements, `pitch` apart (a Pitch's block), or
// one line of n (contiguous). Grid x strides over a line's elements and grid y over the lines,
// so no element pays a division. Either form ran the momentum of a 4096 x 7168 block of a
// 4096 x 14336 matrix at 150-168 us against 125 us for a contiguous block of the same size
// (2 x H200, reports/sharded-ns-wide.md): the gap is the strided rows, not the indexing.
struct Lines {
  long width, pitch, count;
};

struct MomentumParams {
  float mu, one_minus_mu;
  int ema, nesterov, grad_dtype, out_dtype;
};

// Non-finite gradient elements, counted and not applied: a select keeps the old values and one
// count per thread goes out after the loop. Every load is issued before the finiteness test:
// with a branch around the update (loads behind it, an atomic inside the loop), AdamW lost 11%
// of its bandwidth on H200, waiting for the gradient before asking for the other three values;
// a form that kept five pointers in registers needed 44 registers, 5 blocks per SM, and lost 23%
// (reports/nonfinite-executor-2xh200.md). This form: 32 registers, no spill (ptxas -v, sm_90);
// 29 with the loop over lines (nvcc 13.0), and contiguous launches as fast as before (on 2 x
// H200, 14336 x 4096 momentum / update: 253 / 219 us before Pitch, 239 / 225 us with this form;
// a member's contiguous half 122 / 110 before, 125 / 111 after; reports/sharded-ns-wide.md).
__global__ void momentum_kernel(const void* grad, float* momentum, void* out, MomentumParams p, unsigned* nonfinite,
                                Lines lines) {
  unsigned bad = 0;
  for (long line = blockIdx.y; line < lines.count; line += gridDim.y) {
  for (long i = line * lines.pitch + blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x,
            end = line * lines.pitch + lines.width; i < end; i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float g = load(grad, p.grad_dtype, i);
    const float M0 = momentum[i];
    float M, u;
    if (p.ema) {
      M = fmaf(p.one_minus_mu, g - M0, M0);  // lerp(M, g, 1-mu)
      u = p.nesterov ? fmaf(p.mu, M - g, g) : M;  // lerp(g, M, mu)
    } else {
      M = fmaf(p.mu, M0, g);
      u = p.nesterov ? fmaf(p.mu, M, g) : M;
    }
    const bool ok = isfinite(g);
    bad += ok ? 0u : 1u;
    momentum[i] = ok ? M : M0;
    store(out, p.out_dtype, i, ok ? u : M0);
  }
  }
  if (bad && nonfinite) atomicAdd(nonfinite, bad);
}

__global__ void muon_update_kernel(float* master, const void* update, int update_dtype, float decay, float lr_adj,
                                   __nv_bfloat16* copy_out, Lines lines) {
  for (long line = blockIdx.y; line < lines.count; line += gridDim.y) {
  for (long i = line * lines.pitch + blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x,
            end = line * lines.pitch + lines.width; i < end; i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float decayed = master[i] * decay;
    const float w = decayed - lr_adj * load(update, update_dtype, i);
    master[i] = w;
    if (copy_out) copy_out[i] = __float2bfloat16_rn(w);
  }
  }
}

struct AdamWBatch {
  AdamWTensor t[kMaxTensorsPerLaunch];
  int count;
};

struct AdamWParams {
  float decay, one_minus_b1, b2, one_minus_b2, step_size, inv_sqrt_bc2, eps;
  int grad_dtype;
};

__global__ void adamw_kernel(const __grid_constant__ AdamWBatch batch, AdamWParams p) {
  const AdamWTensor& t = batch.t[blockIdx.y];
  unsigned bad = 0;
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < t.numel;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float g = load(t.grad, p.grad_dtype, i);
    const float w0 = t.master[i], m0 = t.exp_avg[i], v0 = t.exp_avg_sq[i];
    const bool ok = isfinite(g);
    bad += ok ? 0u : 1u;
    const float m = ok ? fmaf(p.one_minus_b1, g - m0, m0) : m0;
    const float v = ok ? fmaf(p.b2, v0, p.one_minus_b2 * (g * g)) : v0;
    const float decayed = w0 * p.decay;
    const float denom = sqrtf(v) * p.inv_sqrt_bc2 + p.eps;
    const float w = ok ? decayed - p.step_size * (m / denom) : w0;
    t.exp_avg[i] = m;
    t.exp_avg_sq[i] = v;
    t.master[i] = w;
    // The copy the forward pass reads is bf16(master): a kept element writes what is there.
    if (t.param_bf16) static_cast<__nv_bfloat16*>(t.param_bf16)[i] = __float2bfloat16_rn(w);
  }
  if (bad && t.nonfinite) atomicAdd(t.nonfinite, bad);
}

int grid_for(long n) {
  static int sms = 0;
  if (sms == 0) {
    int device = 0;
    DMUON_CUDA_CHECK(cudaGetDevice(&device));
    DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  }
  const long wanted = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<long>(1, std::min<long>(wanted, static_cast<long>(sms) * 8)));
}

// As many blocks as a contiguous launch of the same elements: x over a line, y over the lines.
dim3 grid_for(Lines l) {
  const long x = grid_for(l.width);
  const long y = std::max<long>(1, std::min<long>({l.count, grid_for(l.width * l.count) / x, 65535}));
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

void require_16bit_or_fp32(DType d, const char* what) {
  require(d == DType::fp32 || d == DType::bf16 || d == DType::fp16,
          std::string(what) + " must be fp32, bf16 or fp16, got " + std::string(to_string(d)));
}

double size_of(DType d) { return static_cast<double>(bytes_per_element(d)); }

Lines lines_of(Pitch p, std::int64_t n, const char* what) {
  if (!p.strided()) return {static_cast<long>(n), static_cast<long>(n), 1};
  require(n % p.width == 0, std::string(what) + ": " + std::to_string(n) + " elements are not whole lines of " +
                                std::to_string(p.width));
  return {static_cast<long>(p.width), static_cast<long>(p.pitch), static_cast<long>(n / p.width)};
}

}  // namespace

void momentum_update(const void* grad, DType grad_dtype, float* momentum, void* ns_input, DType ns_input_dtype,
                     std::int64_t n, const MuonConfig& cfg, Stream stream, unsigned* nonfinite, Pitch pitch) {
  require(cfg.master_dtype == DType::fp32, "momentum_update: master_dtype must be fp32 on the GPU");
  require_16bit_or_fp32(grad_dtype, "momentum_update: grad dtype");
  require_16bit_or_fp32(ns_input_dtype, "momentum_update: ns_input dtype");
  if (n == 0) return;
  require(grad && momentum && ns_input, "momentum_update: null pointer");
  const MomentumParams p{static_cast<float>(cfg.momentum), static_cast<float>(1.0 - cfg.momentum),
                         cfg.momentum_form == MomentumForm::ema, cfg.nesterov, static_cast<int>(grad_dtype),
                         static_cast<int>(ns_input_dtype)};
  const Lines lines = lines_of(pitch, n, "momentum_update");
  momentum_kernel<<<grid_for(lines), kThreads, 0, stream>>>(grad, momentum, ns_input, p, nonfinite, lines);
  DMUON_CUDA_CHECK(cudaGetLastError());
}

void muon_update(float* master, const void* ns_output, DType ns_output_dtype, std::int64_t n, double lr,
                 double weight_decay, double lr_adj, void* param_bf16, Stream stream, Pitch pitch) {
  require_16bit_or_fp32(ns_output_dtype, "muon_update: ns_output dtype");
  if (n == 0) return;
  require(master && ns_output, "muon_update: null pointer");
  const Lines lines = lines_of(pitch, n, "muon_update");
  muon_update_kernel<<<grid_for(lines), kThreads, 0, stream>>>(
      master, ns_output, static_cast<int>(ns_output_dtype), static_cast<float>(1.0 - lr * weight_decay),
      static_cast<float>(lr_adj), static_cast<__nv_bfloat16*>(param_bf16), lines);
  DMUON_CUDA_CHECK(cudaGetLastError());
}

void adamw_multi_tensor(const std::vector<AdamWTensor>& tensors, DType grad_dtype, long step,
                        const AdamWConfig& cfg, Stream stream) {
  require(cfg.master_dtype == DType::fp32, "adamw_multi_tensor: master_dtype must be fp32 on the GPU");
  require_16bit_or_fp32(grad_dtype, "adamw_multi_tensor: grad dtype");
  require(step >= 1, "adamw_multi_tensor: step must be >= 1, got " + std::to_string(step));
  const double t = static_cast<double>(step);
  AdamWParams p{};
  p.decay = static_cast<float>(1.0 - cfg.lr * cfg.weight_decay);
  p.one_minus_b1 = static_cast<float>(1.0 - cfg.beta1);
  p.b2 = static_cast<float>(cfg.beta2);
  p.one_minus_b2 = static_cast<float>(1.0 - cfg.beta2);
  p.step_size = static_cast<float>(cfg.lr / (1.0 - std::pow(cfg.beta1, t)));
  p.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(cfg.beta2, t)));
  p.eps = static_cast<float>(cfg.eps);
  p.grad_dtype = static_cast<int>(grad_dtype);
  for (std::size_t first = 0; first < tensors.size(); first += kMaxTensorsPerLaunch) {
    AdamWBatch batch{};
    long largest = 0;
    for (std::size_t i = first; i < tensors.size() && batch.count < kMaxTensorsPerLaunch; ++i) {
      const AdamWTensor& x = tensors[i];
      require(x.numel == 0 || (x.master && x.grad && x.exp_avg && x.exp_avg_sq),
              "adamw_multi_tensor: null pointer in tensor " + std::to_string(i));
      batch.t[batch.count++] = x;
      largest = std::max<long>(largest, x.numel);
    }
    if (largest == 0) continue;
    const dim3 grid(grid_for(largest), batch.count);
    adamw_kernel<<<grid, kThreads, 0, stream>>>(batch, p);
    DMUON_CUDA_CHECK(cudaGetLastError());
  }
}

double momentum_bytes_per_element(DType grad_dtype, DType ns_input_dtype) {
  return size_of(grad_dtype) + 8 + size_of(ns_input_dtype);
}

double muon_update_bytes_per_element(DType ns_output_dtype, bool bf16_copy_out) {
  return size_of(ns_output_dtype) + 8 + (bf16_copy_out ? 2 : 0);
}

double adamw_bytes_per_element(DType grad_dtype, bool bf16_copy_out) {
  return size_of(grad_dtype) + 24 + (bf16_copy_out ? 2 : 0);
}

}  // namespace dmuon::cuda
