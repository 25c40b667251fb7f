#include "kernels/exec/nccl_wait.hpp"

#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_events.hpp"

namespace dmuon::exec {

void wait_for(cudaEvent_t done, RankHandle& h, ncclComm_t comm, double timeout_seconds, const std::string& where) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string cause;
  while (cause.empty()) {
    const cudaError_t s = cudaEventQuery(done);
    if (s == cudaSuccess) return;
    ncclResult_t async = ncclSuccess;
    if (s != cudaErrorNotReady) cause = std::string("CUDA error: ") + cudaGetErrorString(s);
    else if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || (async != ncclSuccess && async != ncclInProgress))
      cause = std::string("NCCL error: ") + ncclGetErrorString(async) + " (" + ncclGetLastError(comm) + ")";
    else if (const std::string e = h.comms().async_error(); !e.empty()) cause = "NCCL error: " + e;
    else if (h.peer_failed() && *h.peer_failed()) cause = "a peer rank failed";
    else if (std::chrono::steady_clock::now() > deadline) cause = "timeout after " + std::to_string(timeout_seconds) + " s";
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  throw Error(where + ": did not complete: " + cause);
}

double loop_seconds_per_call(const std::function<void()>& launch, int warmup, int iterations, cudaStream_t stream,
                             cudaEvent_t start, cudaEvent_t end, RankHandle& h, ncclComm_t comm, double timeout_seconds,
                             const std::string& where) {
  try {
    for (int i = 0; i < warmup; ++i) launch();
    DMUON_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < iterations; ++i) launch();
    DMUON_CUDA_CHECK(cudaEventRecord(end, stream));
    wait_for(end, h, comm, timeout_seconds, where);
    return cuda::elapsed_seconds(start, end) / iterations;
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(where, 0) == 0) throw;
    throw Error(where + ": " + what);
  }
}

}  // namespace dmuon::exec
