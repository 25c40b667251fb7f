#include "kernels/exec/buffers.hpp"

#include <algorithm>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::exec {
namespace {

constexpr std::size_t kAlignBytes = 256;  // cudaMalloc's own alignment, kept for every sub-buffer

std::size_t idx(int i) { return static_cast<std::size_t>(i); }

ElementType storage_of(DType d, const std::string& what) {
  switch (d) {
    case DType::bf16: return ElementType::bf16;
    case DType::fp16: return ElementType::fp16;
    case DType::fp32: return ElementType::fp32;
    case DType::fp64: break;
  }
  throw Error(what + ": fp64 is not stored by the GPU executor (use fp32, bf16 or fp16)");
}

}  // namespace

std::string_view to_string(ElementType t) {
  switch (t) {
    case ElementType::bf16: return "bf16";
    case ElementType::fp16: return "fp16";
    case ElementType::fp32: return "fp32";
  }
  return "?";
}

ElementType BufferTypes::of(BufferKind kind) const {
  switch (kind) {
    case BufferKind::param: return param;
    case BufferKind::grad: return grad;
    case BufferKind::momentum: return momentum;
    case BufferKind::ns_input: return ns_input;
    case BufferKind::ns_output: return ns_output;
    case BufferKind::adam_m: return adam_m;
    case BufferKind::adam_v: return adam_v;
  }
  return param;
}

BufferTypes buffer_types_for(const OptimizerConfig& config) {
  BufferTypes t;
  if (config.muon.master_dtype != DType::fp32) {
    throw Error("optimizer.muon.master_dtype: the GPU executor keeps fp32 master weights and momentum, got " +
                std::string(to_string(config.muon.master_dtype)));
  }
  if (config.adamw.master_dtype != DType::fp32) {
    throw Error("optimizer.adamw.master_dtype: the GPU executor keeps fp32 AdamW state, got " +
                std::string(to_string(config.adamw.master_dtype)));
  }
  const ElementType ns = storage_of(config.muon.ns.compute_dtype, "optimizer.muon.ns.compute_dtype");
  if (ns == ElementType::fp32) throw Error("optimizer.muon.ns.compute_dtype: the NS engine runs bf16 or fp16, got fp32");
  t.ns_input = t.ns_output = ns;
  return t;
}

DeviceBuffers::DeviceBuffers(const Footprint& footprint, const BufferTypes& types, int rank)
    : types_(types), rank_(rank), ranges_(footprint.ranges), arenas_(idx(kKindCount), nullptr) {
  offsets_.assign(ranges_.size(), std::vector<std::size_t>(idx(kKindCount), 0));
  std::vector<std::size_t> ns_order = footprint.ns_order;
  for (std::size_t p = 0; p < ranges_.size(); ++p) {
    if (std::find(ns_order.begin(), ns_order.end(), p) == ns_order.end()) ns_order.push_back(p);
  }
  std::vector<std::size_t> plain(ranges_.size());
  for (std::size_t p = 0; p < plain.size(); ++p) plain[p] = p;
  for (int k = 0; k < kKindCount; ++k) {
    const bool ns = k == static_cast<int>(BufferKind::ns_input) || k == static_cast<int>(BufferKind::ns_output);
    std::size_t bytes = 0;
    for (std::size_t p : ns ? ns_order : plain) {
      const Range& r = ranges_[p][idx(k)];
      if (r.empty()) continue;
      offsets_[p][idx(k)] = bytes;
      bytes += (static_cast<std::size_t>(r.hi - r.lo) * element_bytes(type(k)) + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
    }
    if (bytes == 0) continue;
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      std::size_t free_bytes = 0, total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      for (char* a : arenas_) (void)cudaFree(a);
      throw Error("rank " + std::to_string(rank) + ": out of device memory allocating the " +
                  (k == kMasterKind ? std::string("master") : std::string(to_string(BufferKind(k)))) + " buffers: wanted " +
                  std::to_string(bytes) + " bytes, " + std::to_string(free_bytes) + " free of " +
                  std::to_string(total_bytes) + " (" + std::to_string(allocated_bytes_) + " already allocated)");
    }
    arenas_[idx(k)] = static_cast<char*>(ptr);
    allocated_bytes_ += static_cast<std::int64_t>(bytes);
    DMUON_CUDA_CHECK(cudaMemset(ptr, 0, bytes));
  }
}

DeviceBuffers::~DeviceBuffers() {
  for (char* a : arenas_) (void)cudaFree(a);
}

bool DeviceBuffers::covers(int kind, const Region& region) const {
  if (region.param >= ranges_.size()) return false;
  const Range& r = ranges_[region.param][idx(kind)];
  return region.count == 0 || (!r.empty() && region.offset >= r.lo && region.offset + region.count <= r.hi);
}

void* DeviceBuffers::at(int kind, const Region& region, const std::string& where) const {
  if (!covers(kind, region)) {
    throw Error(where + ": rank " + std::to_string(rank_) + " holds no " +
                (kind == kMasterKind ? std::string("master") : std::string(to_string(BufferKind(kind)))) +
                " buffer for elements [" + std::to_string(region.offset) + ", " +
                std::to_string(region.offset + region.count) + ") of parameter " + std::to_string(region.param));
  }
  const Range& r = ranges_[region.param][idx(kind)];
  if (r.empty()) return arenas_[idx(kind)];  // a zero-element region: any valid address
  return arenas_[idx(kind)] + offsets_[region.param][idx(kind)] +
         static_cast<std::size_t>(region.offset - r.lo) * element_bytes(type(kind));
}

std::vector<double> DeviceBuffers::download(int kind, const Region& region) const {
  const std::size_t n = static_cast<std::size_t>(region.count);
  const ElementType t = type(kind);
  std::vector<char> raw(n * element_bytes(t));
  if (n > 0) DMUON_CUDA_CHECK(cudaMemcpy(raw.data(), at(kind, region, "download"), raw.size(), cudaMemcpyDeviceToHost));
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = raw.data() + i * element_bytes(t);
    if (t == ElementType::fp32) {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else if (t == ElementType::bf16) {
      __nv_bfloat16 h;
      std::memcpy(&h, p, 2);
      out[i] = __bfloat162float(h);
    } else {
      __half h;
      std::memcpy(&h, p, 2);
      out[i] = __half2float(h);
    }
  }
  return out;
}

void DeviceBuffers::upload(int kind, const Region& region, const std::vector<double>& values) {
  if (static_cast<std::int64_t>(values.size()) != region.count) {
    throw Error("upload: " + std::to_string(values.size()) + " values for a region of " + std::to_string(region.count));
  }
  const ElementType t = type(kind);
  std::vector<char> raw(values.size() * element_bytes(t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    char* p = raw.data() + i * element_bytes(t);
    const float f = static_cast<float>(values[i]);  // a GPU rounds its fp32 value, never a double
    if (t == ElementType::fp32) {
      std::memcpy(p, &f, 4);
    } else if (t == ElementType::bf16) {
      const __nv_bfloat16 h = __float2bfloat16_rn(f);
      std::memcpy(p, &h, 2);
    } else {
      const __half h = __float2half_rn(f);
      std::memcpy(p, &h, 2);
    }
  }
  if (!raw.empty()) DMUON_CUDA_CHECK(cudaMemcpy(at(kind, region, "upload"), raw.data(), raw.size(), cudaMemcpyHostToDevice));
}

}  // namespace dmuon::exec
