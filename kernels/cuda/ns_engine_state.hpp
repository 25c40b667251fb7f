// Internal state of NsEngine, shared by ns_engine.cpp (running, graphs) and ns_autotune.cpp.
#pragma once
#include <map>
#include <string>

#include <cuda_runtime_api.h>

#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/ns_engine.hpp"
#include "kernels/cuda/ns_program.hpp"

namespace dmuon::cuda {

struct NsEngine::State {
  NsEngineOptions options;
  cudaStream_t stream = nullptr;
  bool owns_stream = false;
  std::string gpu;
  LtGemm gemm;
  void* arena = nullptr;  // iteration buffers, grown to the largest call seen
  std::size_t arena_bytes = 0;
  int* status_host = nullptr;  // pinned, for the non-finite check
  int status_capacity = 0;
  std::map<std::string, cudaGraphExec_t> graphs;  // by graph_key()
  std::map<std::string, NsImpl> winners;          // by tune_key(), this GPU only

  ~State();
  // Buffers for this geometry; reallocating drops every graph (they hold the old addresses).
  // `sharded`: with the fp32 partial product of a sharded call.
  NsBuffers buffers(const NsGeometry& g, DType compute, bool sharded = false);
  // Reads the status launch_norm_scale wrote for `batch` matrices (synchronises the stream);
  // throws as run() documents, reports skipped inputs.
  NsOutcome checked(NsOutcome outcome, const NsBuffers& buf, const NsCall& call, const NsConfig& ns);
  void drop_graphs();
  void ensure_status_capacity(int batch);
  void load_cache();
  void save_cache() const;
};

// The autotuner's key: everything the winner may depend on except the data.
std::string tune_key(long rows, long cols, int batch, const NsConfig& ns);

}  // namespace dmuon::cuda
