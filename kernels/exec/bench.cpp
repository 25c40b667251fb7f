#include "kernels/exec/bench.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "core/error.hpp"
#include "kernels/exec/compute_standin.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/exec/fill.hpp"
#include "kernels/exec/nccl_executor.hpp"

namespace dmuon::exec {

double busy_seconds(const std::vector<OpSpan>& spans, const StreamKind* stream) {
  std::vector<std::pair<double, double>> v;
  for (const OpSpan& s : spans) {
    if (!stream || s.stream == *stream) v.push_back({s.start_seconds, s.end_seconds});
  }
  std::sort(v.begin(), v.end());
  double total = 0, start = 0, end = -1;
  for (const auto& [a, b] : v) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > start) total += end - start;
  return total;
}

namespace {

// Weights ~ U(-0.02, 0.02) (fp32 master and its bf16 copy agree on the elements both hold),
// gradients ~ U(-1e-2, 1e-2) with a different stream of numbers on each rank.
void fill_random(DeviceBuffers& b, int rank, std::uint64_t seed) {
  const cudaStream_t s = nullptr;
  fill_buffers(b, kMasterKind, seed, 0.02, s);
  fill_buffers(b, static_cast<int>(BufferKind::param), seed, 0.02, s);
  fill_buffers(b, static_cast<int>(BufferKind::grad), seed + 1000003ull * static_cast<std::uint64_t>(rank + 1), 1e-2, s);
  DMUON_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace

void validate(const BenchOptions& options) {
  if (!(options.timeout_seconds > 0) || !std::isfinite(options.timeout_seconds)) {
    std::ostringstream got;
    got << options.timeout_seconds;
    throw Error("--timeout: must be a positive number of seconds, got " + got.str());
  }
  if (options.warmup < 0) throw Error("--warmup: must be >= 0, got " + std::to_string(options.warmup));
  if (options.iterations < 1) throw Error("--iterations: must be >= 1, got " + std::to_string(options.iterations));
}

RankMeasurement measure_plan(RankHandle& rank, const Plan& plan, const ModelSpec& model, const Routing& routing,
                             const OptimizerConfig& config, const BenchOptions& options, const StandinInputs* standin) {
  validate(options);
  ExecutorOptions eo;
  eo.timeout_seconds = options.timeout_seconds;
  eo.compute.ns_impl = cuda::parse_ns_impl(options.ns_impl, "--ns-impl");
  eo.compute.engine.check_finite = false;  // a host sync per NS call would serialise the step
  eo.compute.engine.tune_cache_file = options.tune_cache_file;
  RankExecutor ex(rank.comms(), plan, model, routing, config, eo, rank.peer_failed());
  fill_random(ex.buffers(), rank.rank(), options.seed);
  RankMeasurement out;
  out.allocated_bytes = static_cast<double>(ex.buffers().allocated_bytes());
  std::unique_ptr<ComputeStandin> compute;
  if (standin) {
    if (!standin->cost) throw Error("rank " + std::to_string(rank.rank()) + ": compute stand-in without its units");
    compute = std::make_unique<ComputeStandin>(*standin->cost, options.seed + 7919u * static_cast<std::uint64_t>(rank.rank()));
    out.standin = true;
    out.standin_flops = compute->flops();
  }
  long step = 0;
  for (int i = 0; i < options.warmup + options.iterations; ++i) {
    const bool timed = i >= options.warmup;
    ++step;
    rank.all_gather({0.0});  // barrier: every rank starts the phase together
    IterationSample s;
    if (compute) {
      s.whole_step = ex.run_step(standin->schedule, *compute, step, timed);
    } else {
      s.comm_phase = ex.run(kForward | kBackward, step, timed);
      rank.all_gather({0.0});
      s.optimizer = ex.run(kOptimizer, step, timed);
    }
    if (timed) out.samples.push_back(std::move(s));
  }
  out.staged_ns_calls = ex.staged_ns_calls();
  return out;
}

}  // namespace dmuon::exec
