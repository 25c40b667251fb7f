#include "harness/bench/ns_timing.hpp"

#include <algorithm>
#include <limits>

#include "core/cost/ns_flops.hpp"
#include "core/error.hpp"
#include "core/median.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/elementwise.hpp"

namespace dmuon::bench {
namespace {

// Median seconds of `impl` over rotating input sets of one shape and batch.
double time_impl(cuda::NsEngine& engine, const std::vector<cuda::DeviceBuffer>& inputs, cuda::DeviceBuffer& out,
                 cuda::NsCall call, const NsConfig& ns, cuda::NsImpl impl, const TimingOptions& o) {
  std::size_t next = 0;
  auto once = [&] {
    call.in = inputs[next++ % inputs.size()].get();
    call.out = out.get();
    engine.run(call, ns, impl);
  };
  // Warm-up covers every input set once: each captures its graph outside the timed region.
  const int warmup = std::max<int>(o.warmup, static_cast<int>(inputs.size()));
  return median(cuda::time_on_stream(engine.stream(), warmup, std::max(1, o.repeats), once));
}

}  // namespace

NsBenchRow time_ns(cuda::NsEngine& engine, const BenchShape& shape, int batch, const std::string& preset,
                   const NsConfig& ns, const TimingOptions& options, bool all_variants) {
  NsBenchRow row;
  row.shape = shape;
  row.preset = preset;
  row.ns = ns;
  row.batch = batch;
  if (all_variants && !options.retune) throw Error("time_ns: every variant's time needs the autotuner (retune)");
  std::vector<cuda::NsTuneResult> tuned;
  if (options.retune) tuned = engine.tune(shape.rows, shape.cols, batch, ns);
  row.chosen = engine.chosen(shape.rows, shape.cols, batch, ns);
  if (!options.retune) {
    cuda::NsTuneResult known;
    known.impl = row.chosen;
    known.passed_gate = true;  // the tune that made it the winner gated it
    known.rel_diff = std::numeric_limits<double>::quiet_NaN();
    known.note = "the tune cache's winner, candidates not re-timed";
    tuned.push_back(known);
  }

  const long elems = shape.rows * shape.cols * static_cast<long>(batch);
  const std::size_t in_bytes = static_cast<std::size_t>(elems * bytes_per_element(options.in_dtype));
  const std::size_t sets = std::clamp<std::size_t>((options.rotate_bytes + in_bytes - 1) / in_bytes, 2, 8);
  std::vector<cuda::DeviceBuffer> inputs;
  for (std::size_t i = 0; i < sets; ++i) {
    inputs.emplace_back(in_bytes, "benchmark input " + shape.label());
    cuda::fill_normal(inputs.back().get(), options.in_dtype, elems, 1000 + i, 1.0f, engine.stream());
  }
  cuda::DeviceBuffer out(static_cast<std::size_t>(elems) * bytes_per_element(ns.compute_dtype),
                         "benchmark output " + shape.label());
  cuda::NsCall call;
  call.rows = shape.rows;
  call.cols = shape.cols;
  call.batch = batch;
  call.in_dtype = options.in_dtype;

  for (const auto& t : tuned) {
    VariantTime v;
    v.impl = t.impl;
    v.available = t.available;
    v.passed_gate = t.passed_gate;
    v.rel_diff = t.rel_diff;
    v.note = t.note;
    if (v.available && v.passed_gate && (all_variants || t.impl == row.chosen)) {
      v.median_seconds = time_impl(engine, inputs, out, call, ns, t.impl, options);
      v.timed = true;
    }
    row.variants.push_back(v);
  }
  // The chosen variant's time is the rotating-input figure, not the autotuner's single-input one.
  for (const auto& v : row.variants) {
    if (v.impl == row.chosen) row.chosen_seconds = v.median_seconds;
  }
  row.useful_tflops = batch * ns_useful_flops(shape.rows, shape.cols, ns.steps) / row.chosen_seconds / 1e12;
  return row;
}

ElementwiseRates time_elementwise(std::int64_t n, int repeats) {
  cuda::DeviceBuffer grad(n * 2, "elementwise grad"), state(n * 4, "elementwise momentum"),
      state2(n * 4, "elementwise exp_avg_sq"), master(n * 4, "elementwise master"), out16(n * 2, "elementwise bf16");
  cuda::Stream stream = nullptr;
  cuda::fill_normal(grad.get(), DType::bf16, n, 1, 1e-2f, stream);
  cuda::fill_normal(state.get(), DType::fp32, n, 2, 1e-2f, stream);
  cuda::fill_normal(state2.get(), DType::fp32, n, 3, 1e-2f, stream);
  state2.zero(stream);  // v must be >= 0
  cuda::fill_normal(master.get(), DType::fp32, n, 4, 1.0f, stream);
  const OptimizerConfig cfg = optimizer_preset("torch");
  ElementwiseRates rates;
  auto rate = [&](double bytes, const std::function<void()>& work) {
    return bytes / median(cuda::time_on_stream(stream, 2, repeats, work)) / 1e9;
  };
  rates.momentum_GBps = rate(CostModel::momentum_bytes(n), [&] {
    cuda::momentum_update(grad.get(), DType::bf16, state.as<float>(), out16.get(), DType::bf16, n, cfg.muon, stream);
  });
  rates.update_GBps = rate(CostModel::muon_update_bytes(n), [&] {
    cuda::muon_update(master.as<float>(), grad.get(), DType::bf16, n, 1e-3, 0.1, 1e-3, out16.get(), stream);
  });
  std::vector<cuda::AdamWTensor> tensors;
  const std::int64_t per = n / 64;
  for (int i = 0; i < 64; ++i) {
    const std::int64_t off = i * per;
    tensors.push_back({master.as<float>() + off, static_cast<const char*>(grad.get()) + off * 2,
                       state.as<float>() + off, state2.as<float>() + off, static_cast<char*>(out16.get()) + off * 2,
                       per});
  }
  rates.adamw_GBps = rate(CostModel::adamw_bytes(per * 64), [&] {
    cuda::adamw_multi_tensor(tensors, DType::bf16, 1, cfg.adamw, stream);
  });
  return rates;
}

}  // namespace dmuon::bench
