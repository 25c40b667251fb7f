// CUDA events for timing, shared by the measurement tools: a fixed set of events owned for one
// measurement (RAII) and the seconds between two recorded ones.
#pragma once
#include <cstddef>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::cuda {

// `n` events created together and destroyed together; recorded and waited on by the caller, with
// no host synchronisation of their own (a host sync inside a timed collective loop would let ranks
// drift apart).
class EventChain {
 public:
  explicit EventChain(std::size_t n) : events_(n, nullptr) {
    for (auto& e : events_) DMUON_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventChain() {
    for (auto e : events_) {
      if (e) (void)cudaEventDestroy(e);
    }
  }
  EventChain(const EventChain&) = delete;
  EventChain& operator=(const EventChain&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_.at(i); }

 private:
  std::vector<cudaEvent_t> events_;
};

// Seconds from `from` to `to`, both recorded and complete; throws dmuon::Error with CUDA's message.
inline double elapsed_seconds(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  DMUON_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms * 1e-3;
}

}  // namespace dmuon::cuda
