#include "kernels/cuda/elementwise_timing.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "core/cost/calibration.hpp"
#include "core/error.hpp"
#include "core/median.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/owned_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/elementwise.hpp"

namespace dmuon::cuda {

cudaError_t launch_empty_kernels(int count, cudaStream_t stream);  // kernels/cuda/launch_probe.cu

namespace {

std::vector<std::size_t> payloads(std::size_t min_bytes, std::size_t max_bytes) {
  std::vector<std::size_t> out;
  for (std::size_t b = min_bytes; b <= max_bytes; b *= 4) out.push_back(b);
  return out;
}

// Large payloads are stable from a few calls and each costs milliseconds.
int repeats_at(std::size_t bytes, int repeats) { return bytes > (std::size_t{64} << 20) ? std::min(repeats, 7) : repeats; }

// One curve: for each payload, the elements it is (bytes / bytes per element, whole), then the
// point (bytes as counted for those elements, median seconds of `run(n)`).
std::vector<std::pair<double, double>> curve(const std::vector<std::size_t>& sizes, int repeats, cudaStream_t stream,
                                             const std::function<double(std::int64_t)>& bytes_of,
                                             const std::function<void(std::int64_t)>& run) {
  std::vector<std::pair<double, double>> out;
  const double per_element = bytes_of(1);
  for (std::size_t payload : sizes) {
    const auto n = static_cast<std::int64_t>(static_cast<double>(payload) / per_element);
    if (n < 1) continue;
    const double seconds = median(time_on_stream(stream, 3, repeats_at(payload, repeats), [&] { run(n); }));
    out.emplace_back(bytes_of(n), seconds);
  }
  return out;
}

}  // namespace

double measure_launch_overhead_seconds(int samples, int per_sample) {
  if (samples < 1 || per_sample < 1) throw Error("measure_launch_overhead_seconds: samples and per_sample must be >= 1");
  OwnedStream stream;
  // The first launches load the module and warm the driver's queues: not part of the rate.
  DMUON_CUDA_CHECK(launch_empty_kernels(per_sample, stream.get()));
  const auto seconds = time_on_stream(stream.get(), 1, samples, [&] {
    DMUON_CUDA_CHECK(launch_empty_kernels(per_sample, stream.get()));
  });
  return median(seconds) / per_sample;
}

ElementwiseSizeCurves measure_elementwise_curves(std::size_t min_bytes, std::size_t max_bytes, int repeats) {
  if (min_bytes < 64 || max_bytes < min_bytes || repeats < 1) {
    throw Error("measure_elementwise_curves: need 64 <= min_bytes <= max_bytes and repeats >= 1");
  }
  const std::vector<std::size_t> sizes = payloads(min_bytes, max_bytes);
  OwnedStream stream;
  const cudaStream_t s = stream.get();
  ElementwiseSizeCurves out;
  {  // copy: read + written = payload, so each side is half of it
    DeviceBuffer src(max_bytes / 2 + 16, "copy source"), dst(max_bytes / 2 + 16, "copy destination");
    DMUON_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, src.bytes(), s));
    out.copy = curve(sizes, repeats, s, [](std::int64_t n) { return 2.0 * static_cast<double>(n); }, [&](std::int64_t n) {
      DMUON_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, s));
    });
  }
  // Momentum and the Muon update move the most bytes per element of the three: size for them.
  const auto n_max = static_cast<std::int64_t>(static_cast<double>(max_bytes) / CostModel::momentum_bytes(1)) + 1;
  const auto nbytes = static_cast<std::size_t>(n_max);
  DeviceBuffer grad(nbytes * 2, "elementwise grad"), state(nbytes * 4, "elementwise momentum / exp_avg"),
      state2(nbytes * 4, "elementwise exp_avg_sq"), master(nbytes * 4, "elementwise master"),
      out16(nbytes * 2, "elementwise bf16 output"), param16(nbytes * 2, "elementwise bf16 param copy");
  fill_normal(grad.get(), DType::bf16, n_max, 1, 1e-2f, s);
  fill_normal(state.get(), DType::fp32, n_max, 2, 1e-2f, s);
  state2.zero(s);  // AdamW's v must be >= 0
  fill_normal(master.get(), DType::fp32, n_max, 4, 1.0f, s);
  const OptimizerConfig cfg = optimizer_preset("torch");
  out.momentum = curve(sizes, repeats, s, CostModel::momentum_bytes, [&](std::int64_t n) {
    momentum_update(grad.get(), DType::bf16, state.as<float>(), out16.get(), DType::bf16, n, cfg.muon, s);
  });
  out.muon_update = curve(sizes, repeats, s, CostModel::muon_update_bytes, [&](std::int64_t n) {
    muon_update(master.as<float>(), out16.get(), DType::bf16, n, 1e-3, 0.1, 1e-3, param16.get(), s);
  });
  out.adamw = curve(sizes, repeats, s, CostModel::adamw_bytes, [&](std::int64_t n) {
    // Up to 64 tensors of >= 64 Ki elements: a rank's AdamW parameters go to one launch.
    const std::int64_t tensors = std::clamp<std::int64_t>(n >> 16, 1, 64);
    std::vector<AdamWTensor> list;
    // Every tensor starts 256-element aligned, as the executor's buffers do: an odd offset
    // makes the kernel take its unvectorised path (2220 against ~2700 GB/s on the first H100 run).
    const std::int64_t per_tensor = (n / tensors) & ~std::int64_t{255};
    for (std::int64_t i = 0, off = 0; i < tensors; ++i) {
      const std::int64_t count = i + 1 < tensors ? per_tensor : n - off;
      list.push_back({master.as<float>() + off, grad.as<char>() + off * 2, state.as<float>() + off,
                      state2.as<float>() + off, out16.as<char>() + off * 2, count, nullptr});
      off += count;
    }
    adamw_multi_tensor(list, DType::bf16, 1, cfg.adamw, s);
  });
  synchronize(s);
  return out;
}

}  // namespace dmuon::cuda
