// Forward and backward compute as one host thread paces it.
//
// Eager PyTorch, and FSDP2 on top of it, issue a layer's kernels from one host thread without
// waiting for the GPU: a kernel runs once the host has issued it and the kernels before it on
// the stream are done. Over a step's units in the order they run (forward in order, backward in
// reverse), with GPU time g_k and host time h_k each:
//   I_k = h_0 + ... + h_{k-1}                  the host starts issuing unit k
//   C_k = max(C_{k-1} + g_k, I_k + h_k)        unit k's GPU work ends
// (its GPU work follows the unit before it and ends no earlier than the host has issued its last
// kernel; C_{k-1} >= I_k always, so a unit never waits for the host to start it). A unit's
// effective time is C_k - C_{k-1} >= g_k.
//
// Why not max(g_k, h_k) per unit: where the host leads, a GPU-heavy unit that costs the host
// little (the output head: a few kernels, milliseconds of GEMMs) is absorbed by the host's lead
// over the host-bound blocks after it; per unit, it would be added on top of them. On 2 x H200
// that put FSDP2 steps of host-bound models 16-25% above the measurement
// (reports/sim-validation.md, section 0).
#pragma once
#include <vector>

namespace dmuon {

struct PacedUnit {
  double gpu_s = 0;   // GPU time alone
  double host_s = 0;  // host time issuing it
};

struct PacedTime {
  double seconds = 0;   // effective time: C_k - C_{k-1}
  bool waited = false;  // the GPU waited for the host (seconds > gpu_s); else seconds == gpu_s exactly
};

// One entry per unit, in run order. Throws dmuon::Error on a negative or non-finite time.
std::vector<PacedTime> host_paced(const std::vector<PacedUnit>& units);

}  // namespace dmuon
