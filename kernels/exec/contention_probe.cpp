#include "kernels/exec/contention_probe.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/error.hpp"
#include "core/median.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_events.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/ns_kernels.hpp"
#include "kernels/cuda/owned_stream.hpp"
#include "kernels/exec/nccl_wait.hpp"

namespace dmuon::exec {
namespace {

constexpr long kN = 4096;                                 // ~0.2 ms a GEMM on an H100/H200
constexpr int kGemms = 100;                               // ~20 ms a loop
constexpr std::size_t kAllGatherBytes = std::size_t{64} << 20;  // a large layer's parameters
constexpr int kRepetitions = 3;
constexpr int kLeadIn = 2;  // all-gathers completed before the GEMMs start
constexpr int kGemmLeadIn = 2;  // GEMMs completed before the all-gathers start (the other way round)

double max_over_ranks(RankHandle& h, double x) {
  for (double y : h.all_gather({x})) x = std::max(x, y);
  return x;
}

double mean_over_ranks(RankHandle& h, double x) {
  double sum = 0;
  for (double y : h.all_gather({x})) sum += y;
  return sum / h.world();
}

// Every rank learns whether every rank's loop covered the other one, so that all stop together;
// `failure` says what went wrong, after "on this rank" or "on another rank".
void require_covered_everywhere(RankHandle& h, bool covered, const std::string& who, const std::string& failure) {
  for (double ok : h.all_gather({covered ? 1.0 : 0.0})) {
    if (ok == 0) throw Error(who + ": on " + (covered ? "another rank" : "this rank") + " " + failure);
  }
}

}  // namespace

ContentionProbe measure_compute_beside_nccl(RankHandle& h, double timeout_seconds) {
  const int world = h.world(), rank = h.rank();
  if (world < 2) throw Error("compute beside NCCL: needs at least 2 GPUs, this run has " + std::to_string(world));
  const std::string who = "rank " + std::to_string(rank) + ": compute beside NCCL";
  const ncclComm_t comm = h.comms().world_comm();
  cuda::OwnedStream compute, nccl;
  const std::size_t gemm_bytes = static_cast<std::size_t>(kN) * kN * 2;
  cuda::DeviceBuffer a(gemm_bytes, "contention probe GEMM A"), b(gemm_bytes, "contention probe GEMM B"),
      d(gemm_bytes, "contention probe GEMM D");
  // Random data: zeros run measurably faster on Hopper (METHOD.md).
  cuda::launch_fill_normal(a.get(), DType::bf16, kN * kN, 21, 1.0f, compute.get());
  cuda::launch_fill_normal(b.get(), DType::bf16, kN * kN, 22, 1.0f, compute.get());
  const std::size_t part = kAllGatherBytes / static_cast<std::size_t>(world) / 2 * 2;
  cuda::DeviceBuffer gathered(part * static_cast<std::size_t>(world), "contention probe all-gather");
  DMUON_CUDA_CHECK(cudaMemsetAsync(gathered.get(), 0, gathered.bytes(), nccl.get()));
  cuda::LtGemm gemm;
  cuda::GemmOp op;
  op.a = {a.get(), kN, kN, kN, 0};
  op.b = {b.get(), kN, kN, kN, 0};
  op.d = {d.get(), kN, kN, kN, 0};
  op.trans_a = true;
  const auto gemm_loop = [&] {
    for (int i = 0; i < kGemms; ++i) gemm.run(op, compute.get());
  };
  char* out = static_cast<char*>(gathered.get());
  const auto all_gather = [&] {
    DMUON_NCCL_CHECK(ncclAllGather(out + part * static_cast<std::size_t>(rank), out, part / 2, ncclBfloat16, comm, nccl.get()));
  };
  ContentionProbe p;
  try {
    cuda::EventChain e(4);
    p.gemm_n = kN, p.gemms = kGemms, p.all_gather_bytes = part * static_cast<std::size_t>(world), p.repetitions = kRepetitions;

    // Alone (one warm-up loop first): no NCCL work anywhere.
    p.alone_seconds = median(cuda::time_on_stream(compute.get(), 1, kRepetitions, gemm_loop));

    // One all-gather's time alone, to size the loop that must outlast the GEMMs; every rank takes
    // the largest count so that all issue the same calls.
    for (int i = 0; i < 3; ++i) all_gather();
    DMUON_CUDA_CHECK(cudaEventRecord(e[0], nccl.get()));
    for (int i = 0; i < 10; ++i) all_gather();
    DMUON_CUDA_CHECK(cudaEventRecord(e[1], nccl.get()));
    wait_for(e[1], h, comm, timeout_seconds, who + " (all-gather alone)");
    const double per_call = cuda::elapsed_seconds(e[0], e[1]) / 10;
    const double wanted = kLeadIn + 2 + std::ceil(2 * p.alone_seconds / std::max(per_call, 1e-6));
    p.all_gathers = static_cast<int>(max_over_ranks(h, wanted));

    std::vector<double> beside;
    for (int r = 0; r < kRepetitions; ++r) {
      for (int i = 0; i < kLeadIn; ++i) all_gather();
      DMUON_CUDA_CHECK(cudaEventRecord(e[2], nccl.get()));
      for (int i = kLeadIn; i < p.all_gathers; ++i) all_gather();
      DMUON_CUDA_CHECK(cudaEventRecord(e[3], nccl.get()));
      DMUON_CUDA_CHECK(cudaStreamWaitEvent(compute.get(), e[2], 0));
      DMUON_CUDA_CHECK(cudaEventRecord(e[0], compute.get()));
      gemm_loop();
      DMUON_CUDA_CHECK(cudaEventRecord(e[1], compute.get()));
      wait_for(e[3], h, comm, timeout_seconds, who + " (all-gathers beside the GEMMs)");
      DMUON_CUDA_CHECK(cudaEventSynchronize(e[1]));
      require_covered_everywhere(h, cuda::elapsed_seconds(e[1], e[3]) >= 0, who,
                                 "the " + std::to_string(p.all_gathers) +
                                     " all-gathers ended before the GEMM loop: the loop did not cover it");
      beside.push_back(cuda::elapsed_seconds(e[0], e[1]));
    }
    p.beside_seconds = median(beside);
    p.slowdown = mean_over_ranks(h, p.beside_seconds / p.alone_seconds - 1);

    // The all-gathers beside the GEMMs: a quarter of one GEMM loop's time in calls alone, inside
    // a loop twice as long, so that even 4 x slower they end first; they start once the first
    // GEMMs are running.
    p.collective_calls = static_cast<int>(
        max_over_ranks(h, std::max(10.0, std::ceil(0.25 * p.alone_seconds / std::max(per_call, 1e-6)))));
    const auto all_gathers = [&] {
      for (int i = 0; i < p.collective_calls; ++i) all_gather();
    };
    std::vector<double> alone, under;
    for (int r = 0; r < kRepetitions; ++r) {
      DMUON_CUDA_CHECK(cudaEventRecord(e[2], nccl.get()));
      all_gathers();
      DMUON_CUDA_CHECK(cudaEventRecord(e[3], nccl.get()));
      wait_for(e[3], h, comm, timeout_seconds, who + " (all-gathers alone)");
      alone.push_back(cuda::elapsed_seconds(e[2], e[3]));
    }
    for (int r = 0; r < kRepetitions; ++r) {
      for (int i = 0; i < kGemmLeadIn; ++i) gemm.run(op, compute.get());
      DMUON_CUDA_CHECK(cudaEventRecord(e[0], compute.get()));
      gemm_loop();
      gemm_loop();
      DMUON_CUDA_CHECK(cudaEventRecord(e[1], compute.get()));
      DMUON_CUDA_CHECK(cudaStreamWaitEvent(nccl.get(), e[0], 0));
      DMUON_CUDA_CHECK(cudaEventRecord(e[2], nccl.get()));
      all_gathers();
      DMUON_CUDA_CHECK(cudaEventRecord(e[3], nccl.get()));
      wait_for(e[3], h, comm, timeout_seconds, who + " (all-gathers beside GEMMs)");
      DMUON_CUDA_CHECK(cudaEventSynchronize(e[1]));
      require_covered_everywhere(h, cuda::elapsed_seconds(e[3], e[1]) >= 0, who,
                                 "the GEMM loop ended before the " + std::to_string(p.collective_calls) +
                                     " all-gathers beside it: the loop did not cover them");
      under.push_back(cuda::elapsed_seconds(e[2], e[3]));
    }
    p.collective_alone_seconds = median(alone);
    p.collective_beside_seconds = median(under);
    p.collective_slowdown = mean_over_ranks(h, p.collective_beside_seconds / p.collective_alone_seconds - 1);
  } catch (...) {
    // Before the buffers are freed: a free waits for the device, which an all-gather stuck on a
    // dead peer would never let finish.
    h.comms().abort_all();
    throw;
  }
  return p;
}

}  // namespace dmuon::exec
