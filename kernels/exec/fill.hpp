// Deterministic pseudo-random contents for the executor's buffers (benchmarks and tests): a
// counter-based hash of (seed, element index), so every rank and every run produces the same
// values for the same parameter elements whatever their layout.
#pragma once
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/exec/types.hpp"

namespace dmuon::exec {

class DeviceBuffers;

// Writes, on `stream`, value(i) = scale * u(seed, first_index + i) for i in [0, n), u uniform in
// [-1, 1) with 24 random bits, rounded to `type` (round to nearest even).
void fill_uniform(void* data, ElementType type, std::int64_t n, std::uint64_t seed, std::int64_t first_index, double scale,
                  cudaStream_t stream);

// Fills every allocated range of `kind` on this rank: element e of parameter p gets
// u(param_seed(seed, p), e), so ranks agree on the elements they share.
void fill_buffers(DeviceBuffers& buffers, int kind, std::uint64_t seed, double scale, cudaStream_t stream);
std::uint64_t param_seed(std::uint64_t seed, std::size_t param);

// Writes -0.0 in `type` to n elements on `stream`: a member's contribution to a broadcast run
// as a sum all-reduce (Op::via_all_reduce), since x + (-0) == x for every x, -0 included.
void fill_negative_zero(void* data, ElementType type, std::int64_t n, cudaStream_t stream);

}  // namespace dmuon::exec
