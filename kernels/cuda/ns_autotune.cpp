// The autotuner: times each candidate implementation of a Newton-Schulz call on this GPU,
// rejects any that fails the accuracy gate against the plain standard implementation, and
// caches the winner per (shape, batch, config) in memory and in a JSON file keyed by GPU name.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include <unistd.h>


#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/file_read.hpp"
#include "core/median.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/ns_engine_state.hpp"
#include "kernels/cuda/ns_kernels.hpp"

namespace dmuon::cuda {
namespace {

constexpr const char* kCacheFormat = "dmuon-ns-tune-1";

nlohmann::json read_cache_file(const std::string& path) {
  // No cache yet is the normal first run; anything else that cannot be read is an error.
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return nlohmann::json{{"format", kCacheFormat}, {"gpus", nlohmann::json::object()}};
  const std::string text = read_regular_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not a tuning cache (" + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", "") != kCacheFormat || !j.contains("gpus") || !j["gpus"].is_object()) {
    throw Error(path + ": not a tuning cache (expected format " + std::string(kCacheFormat) + " with gpus)");
  }
  return j;
}

// Restores a flag on scope exit: timing must not include the per-call host synchronisation.
struct ScopedFlag {
  bool& flag;
  bool saved;
  ScopedFlag(bool& f, bool value) : flag(f), saved(f) { flag = value; }
  ~ScopedFlag() { flag = saved; }
};

}  // namespace

void NsEngine::State::load_cache() {
  if (options.tune_cache_file.empty()) return;
  const nlohmann::json j = read_cache_file(options.tune_cache_file);
  if (!j["gpus"].contains(gpu)) return;
  for (const auto& [key, entry] : j["gpus"][gpu].items()) {
    winners[key] = parse_ns_impl(entry.at("impl").get<std::string>(), options.tune_cache_file + ": " + key);
  }
}

// Several engines share one cache file: the ranks of a threads-launched job (one process) and
// of an MPI job (several). A plain rewrite let a rank read the file half written (seen on
// 2 x H200: "not a tuning cache ... parse error"), so the new text goes to a file of its own
// and is renamed over the cache, which readers then see whole, old or new. The process-wide
// mutex keeps threads from losing each other's winners; across processes the last writer's
// winners win and a lost one is only tuned again.
void NsEngine::State::save_cache() const {
  if (options.tune_cache_file.empty()) return;
  static std::mutex cache_mutex;
  const std::lock_guard<std::mutex> lock(cache_mutex);
  nlohmann::json j = read_cache_file(options.tune_cache_file);
  nlohmann::json& mine = j["gpus"][gpu];
  for (const auto& [key, impl] : winners) mine[key]["impl"] = std::string(to_string(impl));
  const std::string temporary = options.tune_cache_file + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(temporary);
    out << j.dump(1) << "\n";
    if (!out.flush()) throw Error(temporary + ": cannot write the tuning cache");
  }
  std::error_code error;
  std::filesystem::rename(temporary, options.tune_cache_file, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw Error(options.tune_cache_file + ": cannot replace the tuning cache (" + error.message() + ")");
  }
}

std::vector<NsTuneResult> NsEngine::tune(long rows, long cols, int batch, const NsConfig& ns) {
  State& st = *state_;
  const long elems = rows * cols * static_cast<long>(batch);
  const std::size_t bytes = static_cast<std::size_t>(elems * bytes_per_element(ns.compute_dtype));
  const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " batch " + std::to_string(batch);
  DeviceBuffer input(bytes, "autotune input " + what);
  DeviceBuffer reference(bytes, "autotune reference output " + what);
  DeviceBuffer output(bytes, "autotune candidate output " + what);
  DeviceBuffer diff(3 * sizeof(double), "autotune difference norms");
  launch_fill_normal(input.get(), ns.compute_dtype, elems, 0x5eed0000ull + rows * 131 + cols, 1.0f, st.stream);

  NsCall call;
  call.rows = rows;
  call.cols = cols;
  call.batch = batch;
  call.in_dtype = ns.compute_dtype;
  call.in = input.get();
  call.out = reference.get();
  run(call, ns, NsImpl::standard);

  std::vector<NsTuneResult> results;
  const NsGeometry g = geometry_of(rows, cols, batch);
  for (NsImpl impl : candidate_impls(ns, rows, cols)) {
    NsTuneResult r;
    r.impl = impl;
    const NsBuffers buf = st.buffers(g, ns.compute_dtype);
    if (!ns_impl_supported(st.gemm, impl, g, buf, ns.compute_dtype)) {
      r.available = false;
      r.note = impl == NsImpl::symmetric_sm90 || impl == NsImpl::gram_sm90 ? "no sm_90a kernel for this geometry or GPU"
                                              : "cuBLASLt offers no algorithm";
      results.push_back(r);
      continue;
    }
    call.out = output.get();
    run(call, ns, impl);
    launch_diff_norms(output.get(), reference.get(), ns.compute_dtype, elems, diff.as<double>(), st.stream);
    double norms[3] = {0, 0, 0};
    DMUON_CUDA_CHECK(cudaMemcpyAsync(norms, diff.get(), sizeof(norms), cudaMemcpyDeviceToHost, st.stream));
    DMUON_CUDA_CHECK(cudaStreamSynchronize(st.stream));
    r.rel_diff = norms[1] > 0 ? std::sqrt(norms[0] / norms[1]) : std::sqrt(norms[0]);
    r.passed_gate = norms[2] == 0 && std::isfinite(r.rel_diff) && r.rel_diff <= accuracy_gate(ns);
    if (!r.passed_gate) r.note = "failed the accuracy gate (" + std::to_string(r.rel_diff) + ")";
    {
      ScopedFlag no_sync(st.options.check_finite, false);
      r.median_seconds = median(time_on_stream(st.stream, 2, std::max(1, st.options.tune_repeats),
                                               [&] { run(call, ns, impl); }));
    }
    results.push_back(r);
  }
  const NsTuneResult* best = nullptr;
  for (const auto& r : results) {
    if (r.available && r.passed_gate && (!best || r.median_seconds < best->median_seconds)) best = &r;
  }
  // standard always passes against itself unless its own output is non-finite.
  if (!best) throw Error("autotune " + what + ": no implementation passed the accuracy gate");
  st.winners[tune_key(rows, cols, batch, ns)] = best->impl;
  st.save_cache();
  return results;
}

NsImpl NsEngine::chosen(long rows, long cols, int batch, const NsConfig& ns) {
  const std::string key = tune_key(rows, cols, batch, ns);
  auto it = state_->winners.find(key);
  if (it != state_->winners.end()) return it->second;
  tune(rows, cols, batch, ns);
  return state_->winners.at(key);
}

}  // namespace dmuon::cuda
