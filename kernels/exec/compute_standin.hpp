// The forward/backward compute of a training step, stood in by its weight GEMMs
// (core/plan/step_units.hpp standin_gemms): per unit, cuBLASLt bf16 products with fp32 accumulation
// on the stream the executor hands it (RankExecutor::run_step), over scratch buffers allocated
// once (the largest GEMM's operands) and filled with random bf16 (no zero shortcuts anywhere).
// It never reads or writes the Plan's buffers. Not in it: attention's s^2 products, norms,
// activations, the loss, so it runs less than the model's full forward/backward compute.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cost/forward_backward_cost.hpp"
#include "core/plan/step_units.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/exec/nccl_executor.hpp"

namespace dmuon::exec {

class ComputeStandin final : public UnitCompute {
 public:
  // Allocates and fills the scratch on the current device (synchronously); throws dmuon::Error
  // naming the bytes when memory runs out.
  ComputeStandin(const ForwardBackwardCost& cost, std::uint64_t seed);
  void enqueue(int unit, Phase phase, cudaStream_t stream) override;

  std::size_t scratch_bytes() const { return a_.bytes() + b_.bytes() + d_.bytes(); }
  // FLOPs one step's stand-in runs (every unit, forward and backward).
  double flops() const;

 private:
  std::vector<std::vector<StandinGemm>> forward_, backward_;  // per unit
  cuda::LtGemm lt_;
  cuda::DeviceBuffer a_, b_, d_;
};

}  // namespace dmuon::exec
