#include "harness/verify/gpu_ns.hpp"

#include <cstring>

#include "core/error.hpp"
#include "reference/rounding.hpp"

namespace dmuon::verify {

std::vector<std::uint8_t> to_device_bytes(const std::vector<Eigen::MatrixXd>& matrices, DType dtype) {
  if (dtype != DType::fp32 && dtype != DType::bf16 && dtype != DType::fp16) {
    throw Error("to_device_bytes: dtype must be fp32, bf16 or fp16");
  }
  const std::size_t e = static_cast<std::size_t>(bytes_per_element(dtype));
  std::size_t total = 0;
  for (const auto& m : matrices) total += static_cast<std::size_t>(m.size());
  std::vector<std::uint8_t> out(total * e);
  std::size_t k = 0;
  for (const auto& m : matrices) {
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      for (Eigen::Index c = 0; c < m.cols(); ++c, ++k) {
        const float f = static_cast<float>(m(r, c));
        if (dtype == DType::fp32) {
          std::memcpy(&out[k * 4], &f, 4);
        } else {
          const std::uint16_t bits = dtype == DType::bf16 ? ref::bf16_bits(f) : ref::fp16_bits(f);
          std::memcpy(&out[k * 2], &bits, 2);
        }
      }
    }
  }
  return out;
}

std::vector<Eigen::MatrixXd> from_device_bytes(const std::vector<std::uint8_t>& bytes, DType dtype, long rows,
                                               long cols, int count) {
  const std::size_t e = static_cast<std::size_t>(bytes_per_element(dtype));
  if (bytes.size() != e * rows * cols * count) throw Error("from_device_bytes: size mismatch");
  std::vector<Eigen::MatrixXd> out;
  std::size_t k = 0;
  for (int i = 0; i < count; ++i) {
    Eigen::MatrixXd m(rows, cols);
    for (long r = 0; r < rows; ++r) {
      for (long c = 0; c < cols; ++c, ++k) {
        if (dtype == DType::fp32) {
          float f = 0;
          std::memcpy(&f, &bytes[k * 4], 4);
          m(r, c) = f;
        } else {
          std::uint16_t bits = 0;
          std::memcpy(&bits, &bytes[k * 2], 2);
          m(r, c) = dtype == DType::bf16 ? ref::bf16_value(bits) : ref::fp16_value(bits);
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Eigen::MatrixXd> gpu_newton_schulz(cuda::NsEngine& engine, const std::vector<Eigen::MatrixXd>& batch,
                                               const NsConfig& ns, cuda::NsImpl impl, DType in_dtype,
                                               const std::vector<std::string>& names, cuda::NsOutcome* outcome) {
  if (batch.empty()) throw Error("gpu_newton_schulz: empty batch");
  const long rows = batch[0].rows(), cols = batch[0].cols();
  const auto in_bytes = to_device_bytes(batch, in_dtype);
  cuda::DeviceBuffer in(in_bytes.size(), "NS input");
  in.upload(in_bytes.data(), in_bytes.size());
  const std::size_t out_size =
      static_cast<std::size_t>(bytes_per_element(ns.compute_dtype)) * rows * cols * batch.size();
  cuda::DeviceBuffer out(out_size, "NS output");
  cuda::NsCall call;
  call.rows = rows;
  call.cols = cols;
  call.batch = static_cast<int>(batch.size());
  call.in_dtype = in_dtype;
  call.in = in.get();
  call.out = out.get();
  call.names = names;
  const cuda::NsOutcome o = engine.run(call, ns, impl);
  if (outcome) *outcome = o;
  cuda::synchronize(engine.stream());
  std::vector<std::uint8_t> host(out_size);
  out.download(host.data(), host.size());
  return from_device_bytes(host, ns.compute_dtype, rows, cols, call.batch);
}

}  // namespace dmuon::verify
