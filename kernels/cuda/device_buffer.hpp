// Device memory for code outside kernels/ (no CUDA header here): an owning buffer whose
// allocation failure names what it was for, the bytes wanted and the bytes free.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/optimizer/dtype.hpp"
#include "kernels/cuda/ns_engine.hpp"  // Stream

namespace dmuon::cuda {

// cudaMalloc with a useful out-of-memory message:
// "out of GPU memory allocating <what>: wanted <n> bytes, <f> bytes free of <t>".
void* device_alloc(std::size_t bytes, const std::string& what);
void device_free(void* ptr) noexcept;

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, const std::string& what) : ptr_(device_alloc(bytes, what)), bytes_(bytes) {}
  ~DeviceBuffer() { device_free(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      device_free(ptr_);
      ptr_ = o.ptr_; bytes_ = o.bytes_;
      o.ptr_ = nullptr; o.bytes_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

  // Synchronous copies of `bytes` (<= this buffer's size; checked) from/to host memory.
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  // Sets every byte to zero, enqueued on `stream`.
  void zero(Stream stream);

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Standard normal values times `scale` in `dtype` (fp32, bf16, fp16), deterministic in
// (seed, index), enqueued on `stream`: random test and benchmark data without a host copy.
void fill_normal(void* device_ptr, DType dtype, long n, std::uint64_t seed, float scale, Stream stream);

// Synchronous copies between host memory and any device address (a buffer the caller does not
// own, e.g. the NS engine's partial product in a test's stand-in for an all-reduce).
void copy_to_host(void* host, const void* device, std::size_t bytes);
void copy_to_device(void* device, const void* host, std::size_t bytes);

// Synchronises the stream; throws dmuon::Error with CUDA's message on a failure.
void synchronize(Stream stream);

// Elapsed time of the work enqueued by `work` on `stream`, by CUDA events, in seconds.
// Runs `warmup` untimed calls first, then `repeats` timed ones; returns each timed call's time.
std::vector<double> time_on_stream(Stream stream, int warmup, int repeats, const std::function<void()>& work);

}  // namespace dmuon::cuda
