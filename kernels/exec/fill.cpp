#include "kernels/exec/fill.hpp"

#include <stdexcept>

#include "core/error.hpp"
#include "kernels/exec/buffers.hpp"

namespace dmuon::exec {

std::uint64_t param_seed(std::uint64_t seed, std::size_t param) {
  std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (param + 1));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill_buffers(DeviceBuffers& buffers, int kind, std::uint64_t seed, double scale, cudaStream_t stream) {
  for (std::size_t p = 0; p < buffers.params(); ++p) {
    const Range& r = buffers.range(p, kind);
    if (r.empty()) continue;
    const Region region{p, r.lo, r.hi - r.lo};
    try {
      fill_uniform(buffers.at(kind, region, "fill"), buffers.type(kind), region.count, param_seed(seed, p), r.lo, scale, stream);
    } catch (const std::runtime_error& e) {
      throw Error("filling parameter " + std::to_string(p) + ": " + e.what());
    }
  }
}

}  // namespace dmuon::exec
