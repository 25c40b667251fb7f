// Measured compute times (the calibration table) and the cost model that prices compute ops
// from them, falling back to a roofline of the device profile where nothing was measured.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/device_profile.hpp"
#include "core/dtype.hpp"
#include "core/ns_flops.hpp"

namespace dmuon {

// One timed Newton-Schulz call: `batch` same-shape rows x cols matrices in one batched call.
struct NsMeasurement {
  long rows = 0, cols = 0;
  NsKernel kernel = NsKernel::standard;
  DType dtype = DType::bf16;
  int steps = 5;
  std::vector<int> restarts;  // Gram only
  int batch = 1;
  double seconds = 0;  // the whole batched call
};

// Bandwidth the fused elementwise kernels reached (bytes as counted by the CostModel helpers).
struct ElementwiseRates {
  std::optional<double> momentum_GBps, update_GBps, adamw_GBps;
};

// Calibration file (YAML), written by the GPU benchmark and read by the simulator:
//   gpu: h100-sxm                 # a device profile name (device_profile.hpp)
//   source: "dmuon-bench ... 2026-11-20"   # command and date that produced it
//   gemm_tflops: 781.5            # 8192^3 bf16 product, measured in the same run
//   hbm_GBps: 2990                # device-to-device copy, read + written, same run
//   ns:                           # one entry per (shape, kernel, dtype, steps, restarts, batch)
//     - {rows: 4096, cols: 14336, kernel: gram, dtype: fp16, steps: 5, restarts: [2],
//        batch: 1, seconds: 0.00412}
//   elementwise: {momentum_GBps: 2600, update_GBps: 2550, adamw_GBps: 2400}   # optional
// `restarts` is optional (default none). Reading is strict: unknown or repeated keys,
// seconds <= 0 and two entries for the same measurement fail with file:line: key.
struct CalibrationTable {
  std::string gpu;
  std::string source;
  double gemm_tflops = 0;
  double hbm_GBps = 0;
  std::vector<NsMeasurement> ns;
  ElementwiseRates elementwise;
};

CalibrationTable parse_calibration(const YamlValue& root);
CalibrationTable load_calibration(const std::string& file);
std::string calibration_to_yaml(const CalibrationTable& table);
// Throws dmuon::Error naming the file when it cannot be written.
void save_calibration(const CalibrationTable& table, const std::string& file);

// Which bandwidth an elementwise op runs at: a measured rate for the fused kernels when the
// calibration has one, the HBM copy bandwidth otherwise.
enum class ElementwiseKind { generic, momentum, muon_update, adamw };

// A time and where it came from: "calibration" (a measured entry or an interpolation between
// two) or "roofline" (the device profile).
struct NsTime {
  double seconds = 0;
  std::string_view source;
};

class CostModel {
 public:
  // With a calibration table, its gemm_tflops and hbm_GBps (measured together with its NS
  // timings) replace the profile's. Throws dmuon::Error when the table names another GPU.
  explicit CostModel(DeviceProfile device, std::optional<CalibrationTable> calibration = std::nullopt);

  // One batched call of `batch` same-shape matrices. A measured entry with the same (min dim,
  // max dim, kernel, dtype, steps, restarts, batch) answers directly; a batch between two
  // measured batches of that shape is interpolated linearly; anything else is the roofline.
  NsTime ns_time(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                 const std::vector<int>& restarts, int batch) const;
  double ns_seconds(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                    const std::vector<int>& restarts, int batch) const {
    return ns_time(rows, cols, kernel, dtype, steps, restarts, batch).seconds;
  }
  // flops * batch / (gemm_tflops * efficiency(m)) + gemms_per_call * launch overhead. A batched
  // call launches each GEMM once for the whole batch, which is why batching small same-shape
  // matrices is cheaper. It ignores that a batch also fills more SMs than one small GEMM (the
  // efficiency stays that of m), so it overprices small batches; calibration captures that.
  double ns_roofline_seconds(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                             const std::vector<int>& restarts, int batch) const;

  // bytes / bandwidth + one launch: a fused elementwise kernel is bandwidth-bound.
  double elementwise_seconds(double bytes, ElementwiseKind kind = ElementwiseKind::generic) const;

  // Bytes one fused elementwise pass moves per step over `numel` elements, for a bf16 model
  // with fp32 master weights and fp32 optimizer state (DESIGN.md "Exact semantics").
  // momentum: read bf16 grad (2), read + write fp32 momentum (8), write the bf16 NS input (2).
  static double momentum_bytes(std::int64_t numel);
  // Muon update: read the bf16 NS output (2), read + write the fp32 master (8), write the bf16
  // param copy the forward uses (2); weight decay rides in the same pass.
  static double muon_update_bytes(std::int64_t numel);
  // AdamW: read bf16 grad (2), read + write fp32 m, v and master (24), write bf16 param (2).
  static double adamw_bytes(std::int64_t numel);

  const DeviceProfile& device() const { return device_; }
  double gemm_tflops() const { return gemm_tflops_; }
  double hbm_GBps() const { return hbm_GBps_; }
  bool calibrated() const { return calibration_.has_value(); }

 private:
  // (min dim, max dim, kernel, dtype, steps, restarts) -> batch -> seconds
  using ShapeKey = std::tuple<long, long, NsKernel, DType, int, std::vector<int>>;
  std::optional<double> calibrated_seconds(const ShapeKey& key, int batch) const;

  DeviceProfile device_;
  std::optional<CalibrationTable> calibration_;
  double gemm_tflops_ = 0, hbm_GBps_ = 0;
  std::map<ShapeKey, std::map<int, double>> measured_;
};

}  // namespace dmuon
