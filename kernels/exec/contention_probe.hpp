// How much longer a GPU's compute takes while an NCCL collective runs beside it, and how much
// longer the collective takes beside the compute, for `dmuon-bench calibrate` on several GPUs
// (calibration keys compute_slowdown_beside_nccl and collective_slowdown_beside_compute,
// core/cost/calibration.hpp; the simulator slows a rank's compute by the first while a collective
// of several GPUs is in flight there, and a collective by the second while its members compute,
// sim/runner.cpp).
//
// Why: NCCL's kernels hold SMs (one a channel) and memory bandwidth for as long as they are
// resident (measured here with data moving; the simulator assumes the same while one waits for a
// peer). On 2 x H200 zero1-a2a's Newton-Schulz took 11% longer
// than dedicated's with its all-to-alls beside it, and FSDP2's GEMMs 13% longer than alone
// (reports/sim-validation.md).
//
// Every rank runs a loop of bf16 GEMMs (n x n x n, cuBLASLt, random data) alone, then again
// while an all-gather loop on the world communicator runs on another stream: the GEMMs start
// after the first all-gathers have completed and the loop is long enough to outlast them (checked
// with events: a loop that ended first is an error, not a number). Then the other way round: a
// fixed number of all-gathers alone, then the same calls started once a GEMM loop (twice the
// first one) is running and checked to end before it. No CUDA or NCCL header.
#pragma once
#include <cstddef>

#include "kernels/exec/launch.hpp"

namespace dmuon::exec {

struct ContentionProbe {
  long gemm_n = 0;                   // the GEMM is n x n x n
  int gemms = 0;                     // in one timed loop
  std::size_t all_gather_bytes = 0;  // one all-gather's output (nccl-tests "size")
  int all_gathers = 0;               // in the loop beside the GEMMs
  int repetitions = 0;
  double alone_seconds = 0, beside_seconds = 0;  // this rank's GEMM loop, medians
  double slowdown = 0;  // the mean over ranks of beside / alone - 1 (the same on every rank)
  // The other direction: `collective_calls` all-gathers back to back, alone and while a GEMM loop
  // that outlasts them runs beside (this rank's medians), and the mean over ranks of beside /
  // alone - 1: NCCL's kernels share SMs and memory bandwidth with the GEMMs, so a collective under
  // compute is in flight longer than its curve says (FSDP2's NCCL kernels were resident 206.7 ms
  // of a llama3-8b step whose collectives take 77 ms alone, reports/sim-validation.md).
  int collective_calls = 0;
  double collective_alone_seconds = 0, collective_beside_seconds = 0;
  double collective_slowdown = 0;
};

// Collective over the world (every rank calls it); needs world >= 2. Throws dmuon::Error naming
// the rank and stage on a CUDA/NCCL failure, a timeout, an all-gather loop that ended before
// the GEMMs or a GEMM loop that ended before the all-gathers it should cover.
ContentionProbe measure_compute_beside_nccl(RankHandle& h, double timeout_seconds);

}  // namespace dmuon::exec
