#include "core/cost/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.hpp"

namespace dmuon {
namespace {

// Restarts only matter to Gram; a standard entry matches whatever restart list is asked.
std::vector<int> key_restarts(NsKernel kernel, const std::vector<int>& restarts) {
  return kernel == NsKernel::gram ? restarts : std::vector<int>{};
}

}  // namespace

double SizeCurve::seconds_at(double x) const {
  if (points.empty()) throw Error("size curve: no points");
  if (!(x >= 0) || !std::isfinite(x)) throw Error("size curve: x must be finite and >= 0, got " + std::to_string(x));
  const auto above = std::lower_bound(points.begin(), points.end(), x,
                                      [](const auto& p, double v) { return p.first < v; });
  if (above == points.begin()) return points.front().second;  // at or below the first point: its floor
  if (above == points.end()) return points.back().second * (x / points.back().first);  // the last rate
  if (above->first == x) return above->second;
  // A power law through the two points around x: linear in log(x) vs log(seconds).
  const auto below = std::prev(above);
  const double f = std::log(x / below->first) / std::log(above->first / below->first);
  return below->second * std::pow(above->second / below->second, f);
}

std::string_view source_class(std::string_view source) {
  if (source == "measured" || source == "measured total" || source == "host floor") return "measured";
  if (source == "interpolated") return "interpolated";
  return "datasheet";
}

CostModel::CostModel(DeviceProfile device, std::optional<CalibrationTable> calibration)
    : device_(std::move(device)), calibration_(std::move(calibration)) {
  device_.validate("gpu");
  gemm_tflops_ = device_.gemm_tflops;
  hbm_GBps_ = device_.hbm_GBps;
  if (!calibration_) return;
  if (calibration_->gpu != device_.name) {
    throw Error("calibration table was measured on gpu '" + calibration_->gpu +
                "', but the device profile is '" + device_.name + "'");
  }
  gemm_tflops_ = calibration_->gemm_tflops;
  hbm_GBps_ = calibration_->hbm_GBps;
  for (const auto& e : calibration_->ns) {
    const long m = std::min(e.rows, e.cols), n = std::max(e.rows, e.cols);
    const auto restarts = key_restarts(e.kernel, e.restarts);
    if (!measured_[ShapeKey{m, n, e.kernel, e.dtype, e.steps, restarts}].emplace(e.batch, e.seconds).second) {
      throw Error("calibration: two entries for " + std::to_string(e.rows) + "x" + std::to_string(e.cols) +
                  " " + std::string(to_string(e.kernel)) + " batch " + std::to_string(e.batch));
    }
    const double flops = ns_flops(e.kernel, m, n, e.steps, restarts) * e.batch;
    efficiency_[FamilyKey{e.kernel, e.dtype, e.steps, restarts}].add(m, n, e.batch, flops / (e.seconds * gemm_tflops_ * 1e12));
  }
  // A table built in code skips the YAML reader's checks: the keys a price multiplies by.
  if (const auto& v = calibration_->adamw_fused_vs_curve; v && !(*v > 0 && std::isfinite(*v))) {
    throw Error("calibration: adamw_fused_vs_curve must be > 0, got " + std::to_string(*v));
  }
  if (const auto& v = calibration_->adamw_fused_issue_us; v && !(*v >= 0 && std::isfinite(*v))) {
    throw Error("calibration: adamw_fused_issue_us must be >= 0, got " + std::to_string(*v));
  }
  if (const auto& v = calibration_->compute_slowdown_beside_nccl; v && !(*v >= 0 && std::isfinite(*v))) {
    throw Error("calibration: compute_slowdown_beside_nccl must be >= 0, got " + std::to_string(*v));
  }
  if (const auto& v = calibration_->collective_slowdown_beside_compute; v && !(*v >= 0 && std::isfinite(*v))) {
    throw Error("calibration: collective_slowdown_beside_compute must be >= 0, got " + std::to_string(*v));
  }
  const auto& curves = calibration_->collectives;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const auto& c = curves[i];
    if (c.curve.empty()) throw Error("calibration: collective curve " + std::string(to_string(c.kind)) + " has no points");
    if (!collective_curves_.emplace(std::make_tuple(c.kind, c.ranks, c.nodes), i).second) {
      throw Error("calibration: two curves for " + std::string(to_string(c.kind)) + " on " + std::to_string(c.ranks) +
                  " ranks over " + std::to_string(c.nodes) + " node(s)");
    }
  }
}

std::optional<double> CostModel::calibrated_seconds(const ShapeKey& key, int batch) const {
  const auto shape = measured_.find(key);
  if (shape == measured_.end()) return std::nullopt;
  const auto& by_batch = shape->second;
  if (auto exact = by_batch.find(batch); exact != by_batch.end()) return exact->second;
  // Interpolate between the nearest measured batches on either side; never extrapolate.
  const auto above = by_batch.upper_bound(batch);
  if (above == by_batch.begin() || above == by_batch.end()) return std::nullopt;
  const auto below = std::prev(above);
  const double f = double(batch - below->first) / double(above->first - below->first);
  return below->second + f * (above->second - below->second);
}

NsTime CostModel::ns_time(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                          const std::vector<int>& restarts, int batch) const {
  if (batch < 1) throw Error("Newton-Schulz cost: batch must be >= 1, got " + std::to_string(batch));
  const long m = std::min(rows, cols), n = std::max(rows, cols);
  const auto restart_key = key_restarts(kernel, restarts);
  const ShapeKey key{m, n, kernel, dtype, steps, restart_key};
  if (auto shape = measured_.find(key); shape != measured_.end() && shape->second.count(batch)) {
    return {shape->second.at(batch), "measured"};
  }
  if (auto s = calibrated_seconds(key, batch)) return {*s, "interpolated"};
  if (auto grid = efficiency_.find(FamilyKey{kernel, dtype, steps, restart_key}); grid != efficiency_.end()) {
    const double flops = ns_flops(kernel, m, n, steps, restart_key) * batch;
    return {flops / (grid->second.at(m, n, batch) * gemm_tflops_ * 1e12), "interpolated"};
  }
  return {ns_roofline_seconds(rows, cols, kernel, dtype, steps, restarts, batch), "roofline"};
}

double CostModel::ns_roofline_seconds(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                                      const std::vector<int>& restarts, int batch) const {
  if (batch < 1) throw Error("Newton-Schulz cost: batch must be >= 1, got " + std::to_string(batch));
  if (dtype != DType::bf16 && dtype != DType::fp16) {
    throw Error("Newton-Schulz cost: no roofline for " + std::string(to_string(dtype)) +
                " (gpu.gemm_tflops is a 16-bit tensor-core rate); calibrate it instead");
  }
  const double flops = ns_flops(kernel, rows, cols, steps, restarts) * batch;
  const double rate_flops_per_second = gemm_tflops_ * 1e12 * device_.gemm_efficiency(double(std::min(rows, cols)));
  return flops / rate_flops_per_second + ns_gemm_count(kernel, steps, restarts) * launch_overhead_s();
}

double CostModel::launch_overhead_s() const {
  if (calibration_ && calibration_->launch_overhead_us) return *calibration_->launch_overhead_us * 1e-6;
  return device_.launch_overhead_us * 1e-6;
}

std::optional<double> CostModel::executor_issue_seconds() const {
  if (!calibration_ || !calibration_->executor_issue_us) return std::nullopt;
  return *calibration_->executor_issue_us * 1e-6;
}

double CostModel::collective_step_overhead_s() const {
  if (!calibration_ || !calibration_->collective_step_overhead_us) return 0;
  return *calibration_->collective_step_overhead_us * 1e-6;
}

double CostModel::local_collective_step_overhead_s() const {
  if (!calibration_ || !calibration_->local_collective_step_overhead_us) return 0;
  return *calibration_->local_collective_step_overhead_us * 1e-6;
}

double CostModel::adamw_fused_issue_s() const {
  return calibration_ && calibration_->adamw_fused_issue_us ? *calibration_->adamw_fused_issue_us * 1e-6 : 0;
}

std::optional<double> CostModel::compute_slowdown_beside_nccl() const {
  if (!calibration_) return std::nullopt;
  return calibration_->compute_slowdown_beside_nccl;
}

std::optional<double> CostModel::collective_slowdown_beside_compute() const {
  if (!calibration_) return std::nullopt;
  return calibration_->collective_slowdown_beside_compute;
}

double CostModel::adamw_fused_vs_curve() const {
  return calibration_ && calibration_->adamw_fused_vs_curve ? *calibration_->adamw_fused_vs_curve : 1;
}

ElementwiseTime CostModel::elementwise_time(double bytes, ElementwiseKind kind) const {
  if (!(bytes >= 0) || !std::isfinite(bytes)) throw Error("elementwise cost: bytes must be >= 0, got " + std::to_string(bytes));
  if (!calibration_) return {bytes / (hbm_GBps_ * 1e9) + launch_overhead_s(), "datasheet"};
  const auto& c = calibration_->elementwise_curves;
  const SizeCurve& curve = kind == ElementwiseKind::momentum      ? c.momentum
                           : kind == ElementwiseKind::muon_update ? c.muon_update
                           : kind == ElementwiseKind::adamw       ? c.adamw
                                                                  : c.copy;
  if (!curve.empty()) return {curve.seconds_at(bytes), "measured"};
  // A rate measured at one (large) size stands for every size: interpolated, not measured.
  const auto& r = calibration_->elementwise;
  const std::optional<double> rate = kind == ElementwiseKind::momentum      ? r.momentum_GBps
                                     : kind == ElementwiseKind::muon_update ? r.update_GBps
                                     : kind == ElementwiseKind::adamw       ? r.adamw_GBps
                                                                            : std::nullopt;
  return {bytes / (rate.value_or(hbm_GBps_) * 1e9) + launch_overhead_s(), "interpolated"};
}

std::optional<double> CostModel::collective_seconds(OpKind kind, int ranks, int nodes, double bytes) const {
  const auto it = collective_curves_.find(std::make_tuple(kind, ranks, nodes));
  if (it == collective_curves_.end()) return std::nullopt;
  return calibration_->collectives[it->second].curve.seconds_at(bytes);
}

std::optional<double> CostModel::collective_cheapest_call_seconds(OpKind kind, int ranks, int nodes) const {
  const auto it = collective_curves_.find(std::make_tuple(kind, ranks, nodes));
  if (it == collective_curves_.end()) return std::nullopt;
  const auto& points = calibration_->collectives[it->second].curve.points;
  return std::min_element(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
      ->second;
}

std::optional<double> CostModel::local_extra_call_seconds(OpKind kind, double group_bytes) const {
  if (!calibration_) return std::nullopt;
  for (const auto& g : calibration_->local_grouped_calls) {
    if (g.kind == kind) return extra_call_seconds_at(g, group_bytes);
  }
  return collective_cheapest_call_seconds(kind, 1, 1);
}

double CostModel::momentum_bytes(std::int64_t numel) { return 12.0 * double(numel); }
double CostModel::muon_update_bytes(std::int64_t numel) { return 12.0 * double(numel); }
double CostModel::adamw_bytes(std::int64_t numel) { return 28.0 * double(numel); }

}  // namespace dmuon
