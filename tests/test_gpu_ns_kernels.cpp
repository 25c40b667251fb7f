// The Newton-Schulz normalisation (plain and transposed), identity and mirror kernels take 16-byte vector
// accesses where a buffer's batch entries are whole vectors (kernels/cuda/ns_kernels_vector.cu)
// and the element-by-element kernels otherwise. Both paths must give the same numbers: the same input
// is run from an aligned buffer (vector path) and from one offset by one element (element path),
// and the results compared bit for bit (the squares' double sum, added in another order, to
// 1e-12). Skips (tests/gpu_skip.hpp) without a GPU.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/ns_kernels.hpp"

using namespace dmuon;

namespace {

// `count` elements of `dtype` at element `offset` of a fresh buffer, filled with the same values
// whatever the offset (seeded normal values written at offset 0, then moved).
struct Placed {
  cuda::DeviceBuffer buffer;
  void* at = nullptr;
  Placed(DType dtype, long count, long offset, std::uint64_t seed, float scale) {
    const auto e = static_cast<std::size_t>(bytes_per_element(dtype));
    buffer = cuda::DeviceBuffer((static_cast<std::size_t>(count + offset)) * e, "test input");
    cuda::DeviceBuffer staging(static_cast<std::size_t>(count) * e, "test staging");
    cuda::launch_fill_normal(staging.get(), dtype, count, seed, scale, nullptr);
    at = static_cast<char*>(buffer.get()) + offset * e;
    DMUON_CUDA_CHECK(cudaMemcpy(at, staging.get(), static_cast<std::size_t>(count) * e, cudaMemcpyDeviceToDevice));
  }
};

std::vector<std::uint8_t> bytes_of(const void* device, std::size_t bytes) {
  std::vector<std::uint8_t> host(bytes);
  DMUON_CUDA_CHECK(cudaDeviceSynchronize());
  cuda::copy_to_host(host.data(), device, bytes);
  return host;
}

// Sums of squares, divisors and normalised X of `batch` entries of `elems` from `in`.
struct Normalised {
  std::vector<double> sums;
  std::vector<std::uint8_t> x;
};

Normalised normalise(const void* in, DType in_dtype, const NsConfig& ns, long elems, int batch, long out_offset) {
  cuda::DeviceBuffer sums(sizeof(double) * batch, "sums"), divisor(sizeof(float) * batch, "divisor"),
      status(sizeof(int) * batch, "status");
  const auto e = static_cast<std::size_t>(bytes_per_element(ns.compute_dtype));
  cuda::DeviceBuffer x(static_cast<std::size_t>(elems * batch + out_offset) * e, "X");
  void* out = static_cast<char*>(x.get()) + out_offset * e;
  cuda::launch_sum_squares(in, in_dtype, ns.normalize_dtype, elems, batch, sums.as<double>(), nullptr);
  cuda::launch_norm_scale(sums.as<double>(), batch, ns, divisor.as<float>(), status.as<int>(), nullptr);
  cuda::launch_normalize(in, in_dtype, ns, elems, batch, divisor.as<float>(), status.as<int>(), out, nullptr);
  Normalised r;
  r.sums.resize(static_cast<std::size_t>(batch));
  const auto s = bytes_of(sums.get(), sizeof(double) * batch);
  std::memcpy(r.sums.data(), s.data(), s.size());
  r.x = bytes_of(out, static_cast<std::size_t>(elems * batch) * e);
  return r;
}

}  // namespace

TEST_CASE("GPU NS normalisation: the vector path equals the element path", "[gpu]") {
  if (skip_without_gpu()) return;
  struct Case {
    DType in, norm, compute;
  };
  for (const Case c : {Case{DType::bf16, DType::bf16, DType::bf16}, Case{DType::bf16, DType::fp32, DType::fp16},
                       Case{DType::fp32, DType::fp32, DType::fp16}, Case{DType::fp16, DType::fp16, DType::bf16}}) {
    for (const long elems : {8L, 4096L * 56, 1000L * 1000}) {
      const int batch = 3;
      INFO("in " << to_string(c.in) << " norm " << to_string(c.norm) << " compute " << to_string(c.compute)
                 << " elems " << elems);
      NsConfig ns;
      ns.normalize_dtype = c.norm;
      ns.compute_dtype = c.compute;
      const Placed aligned(c.in, elems * batch, 0, 11, 0.02f), shifted(c.in, elems * batch, 1, 11, 0.02f);
      const Normalised vec = normalise(aligned.at, c.in, ns, elems, batch, 0);
      const Normalised el = normalise(shifted.at, c.in, ns, elems, batch, 1);
      for (int b = 0; b < batch; ++b) {
        CHECK(vec.sums[b] > 0);
        CHECK(std::abs(vec.sums[b] - el.sums[b]) <= 1e-12 * el.sums[b]);
      }
      CHECK(vec.x == el.x);
    }
  }
}

TEST_CASE("GPU NS identity add: the vector path equals the element path, in place too", "[gpu]") {
  if (skip_without_gpu()) return;
  for (const DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (const long m : {4L, 100L, 1024L}) {  // m * m a multiple of 8; m = 4: a vector spans rows
      const int batch = 2;
      INFO(to_string(dtype) << " m " << m);
      const long n = m * m * batch;
      const auto e = static_cast<std::size_t>(bytes_per_element(dtype));
      const Placed z(dtype, n, 0, 5, 1.0f), z_shifted(dtype, n, 1, 5, 1.0f);
      cuda::DeviceBuffer q(static_cast<std::size_t>(n) * e, "Q"), q_shifted(static_cast<std::size_t>(n + 1) * e, "Q");
      void* q_at = static_cast<char*>(q_shifted.get()) + e;
      cuda::launch_add_identity(z.at, q.get(), m, batch, 0.75f, dtype, nullptr);
      cuda::launch_add_identity(z_shifted.at, q_at, m, batch, 0.75f, dtype, nullptr);
      const auto vec = bytes_of(q.get(), static_cast<std::size_t>(n) * e);
      CHECK(vec == bytes_of(q_at, static_cast<std::size_t>(n) * e));
      CHECK(vec != bytes_of(z.at, static_cast<std::size_t>(n) * e));  // the diagonal moved
      cuda::launch_add_identity(z.at, z.at, m, batch, 0.75f, dtype, nullptr);  // in place
      CHECK(vec == bytes_of(z.at, static_cast<std::size_t>(n) * e));
    }
  }
}

TEST_CASE("GPU NS transposed normalisation: the vector path equals the element path", "[gpu]") {
  if (skip_without_gpu()) return;
  for (const DType in : {DType::bf16, DType::fp32}) {
    // Multiples of 8 in both directions (the vector path), partial 64 x 64 tiles at the edges.
    for (const auto& [rows, cols] : {std::pair<long, long>{72, 40}, {1000, 64}, {136, 200}}) {
      const int batch = 2;
      NsConfig ns;
      ns.normalize_dtype = DType::fp32;
      ns.compute_dtype = DType::fp16;
      INFO(to_string(in) << " " << rows << " x " << cols);
      const long n = rows * cols * batch;
      const Placed aligned(in, n, 0, 17, 0.05f), shifted(in, n, 1, 17, 0.05f);
      const auto e = static_cast<std::size_t>(bytes_per_element(ns.compute_dtype));
      cuda::DeviceBuffer sums(sizeof(double) * batch, "sums"), divisor(sizeof(float) * batch, "divisor"),
          status(sizeof(int) * batch, "status");
      cuda::DeviceBuffer x(static_cast<std::size_t>(n) * e, "X"), x_shifted(static_cast<std::size_t>(n + 1) * e, "X");
      void* x_at = static_cast<char*>(x_shifted.get()) + e;
      cuda::launch_sum_squares(aligned.at, in, ns.normalize_dtype, rows * cols, batch, sums.as<double>(), nullptr);
      cuda::launch_norm_scale(sums.as<double>(), batch, ns, divisor.as<float>(), status.as<int>(), nullptr);
      cuda::launch_normalize_transposed(aligned.at, in, ns, rows, cols, batch, divisor.as<float>(), status.as<int>(),
                                        x.get(), nullptr);
      cuda::launch_normalize_transposed(shifted.at, in, ns, rows, cols, batch, divisor.as<float>(), status.as<int>(),
                                        x_at, nullptr);
      const auto vec = bytes_of(x.get(), static_cast<std::size_t>(n) * e);
      CHECK(vec == bytes_of(x_at, static_cast<std::size_t>(n) * e));
      // And it is the transpose of the plain normalisation.
      cuda::DeviceBuffer plain(static_cast<std::size_t>(n) * e, "X plain");
      cuda::launch_normalize(aligned.at, in, ns, rows * cols, batch, divisor.as<float>(), status.as<int>(), plain.get(),
                             nullptr);
      const auto p = bytes_of(plain.get(), static_cast<std::size_t>(n) * e);
      bool transposed = true;
      for (long b = 0; b < batch && transposed; ++b) {
        for (long r = 0; r < rows && transposed; ++r) {
          for (long c = 0; c < cols; ++c) {
            const std::size_t from = static_cast<std::size_t>((b * rows * cols + r * cols + c)) * e;
            const std::size_t to = static_cast<std::size_t>((b * rows * cols + c * rows + r)) * e;
            if (std::memcmp(&p[from], &vec[to], e) != 0) {
              transposed = false;
              break;
            }
          }
        }
      }
      CHECK(transposed);
    }
  }
}

TEST_CASE("GPU NS mirror: the vector path equals the element path", "[gpu]") {
  if (skip_without_gpu()) return;
  for (const DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (const long m : {8L, 72L, 136L, 512L}) {  // multiples of 8; partial 64 x 64 tiles at the edge
      const int batch = 2;
      INFO(to_string(dtype) << " m " << m);
      const long n = m * m * batch;
      const auto e = static_cast<std::size_t>(bytes_per_element(dtype));
      const Placed aligned(dtype, n, 0, 23, 1.0f), shifted(dtype, n, 1, 23, 1.0f);
      const auto before = bytes_of(aligned.at, static_cast<std::size_t>(n) * e);
      cuda::launch_mirror_lower(aligned.at, m, batch, dtype, nullptr);
      cuda::launch_mirror_lower(shifted.at, m, batch, dtype, nullptr);
      const auto vec = bytes_of(aligned.at, static_cast<std::size_t>(n) * e);
      CHECK(vec == bytes_of(shifted.at, static_cast<std::size_t>(n) * e));
      CHECK(vec != before);
      // Column-major: (r, c) at r + c m. Lower triangle and diagonal kept, upper = lower mirrored.
      bool right = true;
      for (long b = 0; b < batch && right; ++b) {
        for (long c = 0; c < m && right; ++c) {
          for (long r = 0; r < m; ++r) {
            const std::size_t at = static_cast<std::size_t>(b * m * m + r + c * m) * e;
            const std::size_t mirror = static_cast<std::size_t>(b * m * m + c + r * m) * e;
            const bool ok = r >= c ? std::memcmp(&vec[at], &before[at], e) == 0 : std::memcmp(&vec[at], &before[mirror], e) == 0;
            if (!ok) {
              right = false;
              break;
            }
          }
        }
      }
      CHECK(right);
    }
  }
}
