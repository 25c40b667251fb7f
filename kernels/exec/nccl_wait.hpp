// Waiting on the host for GPU work that contains NCCL calls, without hanging: the measurement
// tools' counterpart of the executor's wait (kernels/exec/nccl_executor.cpp).
#pragma once
#include <functional>
#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "kernels/exec/launch.hpp"

namespace dmuon::exec {

// Waits for `done` by polling, as the executor does: a CUDA or NCCL error on `comm` or any of
// the rank's communicators, a failed peer or the deadline throws dmuon::Error starting with
// `where` (the caller aborts its communicators as it unwinds).
void wait_for(cudaEvent_t done, RankHandle& h, ncclComm_t comm, double timeout_seconds, const std::string& where);

// Seconds per call of `launch`, issued `iterations` times back to back on `stream` after `warmup`
// untimed calls, between `start` and `end` recorded there; waited for with wait_for. Every
// dmuon::Error, `launch`'s included, comes out starting with `where`.
double loop_seconds_per_call(const std::function<void()>& launch, int warmup, int iterations, cudaStream_t stream,
                             cudaEvent_t start, cudaEvent_t end, RankHandle& h, ncclComm_t comm, double timeout_seconds,
                             const std::string& where);

}  // namespace dmuon::exec
