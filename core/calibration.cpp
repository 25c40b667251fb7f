#include "core/calibration.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace dmuon {
namespace {

int positive_int(const YamlValue& v) {
  const auto x = v.as_positive_int();
  if (x > 1'000'000'000) v.fail("too large: " + std::to_string(x));
  return static_cast<int>(x);
}

NsMeasurement parse_measurement(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  NsMeasurement e;
  e.rows = m.get("rows").as_positive_int();
  e.cols = m.get("cols").as_positive_int();
  e.kernel = parse_scalar(m.get("kernel"), parse_ns_kernel);
  const YamlValue dtype = m.get("dtype");
  e.dtype = parse_scalar(dtype, parse_dtype);
  if (e.dtype != DType::bf16 && e.dtype != DType::fp16) dtype.fail("expected bf16 or fp16");
  const YamlValue steps = m.get("steps");
  e.steps = positive_int(steps);
  if (auto r = m.find("restarts")) {
    for (const auto& x : r->items()) e.restarts.push_back(x.as_int32());
    try {
      ns_gemm_count(e.kernel, e.steps, e.restarts);
    } catch (const Error& err) {
      r->fail(err.what());
    }
  }
  e.batch = positive_int(m.get("batch"));
  e.seconds = m.get("seconds").as_positive_double();
  m.finish();
  return e;
}

ElementwiseRates parse_elementwise(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  ElementwiseRates r;
  if (auto x = m.find("momentum_GBps")) r.momentum_GBps = x->as_positive_double();
  if (auto x = m.find("update_GBps")) r.update_GBps = x->as_positive_double();
  if (auto x = m.find("adamw_GBps")) r.adamw_GBps = x->as_positive_double();
  m.finish();
  return r;
}

// Restarts only matter to Gram; a standard entry matches whatever restart list is asked.
std::vector<int> key_restarts(NsKernel kernel, const std::vector<int>& restarts) {
  return kernel == NsKernel::gram ? restarts : std::vector<int>{};
}

bool same_measurement(const NsMeasurement& a, const NsMeasurement& b) {
  return std::min(a.rows, a.cols) == std::min(b.rows, b.cols) &&
         std::max(a.rows, a.cols) == std::max(b.rows, b.cols) && a.kernel == b.kernel &&
         a.dtype == b.dtype && a.steps == b.steps && a.batch == b.batch &&
         key_restarts(a.kernel, a.restarts) == key_restarts(b.kernel, b.restarts);
}

// Shortest text that reads back to the same double, so save -> load is exact.
std::string number_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

void emit_measurement(YAML::Emitter& out, const NsMeasurement& e) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "rows" << YAML::Value << e.rows;
  out << YAML::Key << "cols" << YAML::Value << e.cols;
  out << YAML::Key << "kernel" << YAML::Value << std::string(to_string(e.kernel));
  out << YAML::Key << "dtype" << YAML::Value << std::string(to_string(e.dtype));
  out << YAML::Key << "steps" << YAML::Value << e.steps;
  if (!e.restarts.empty()) out << YAML::Key << "restarts" << YAML::Value << YAML::Flow << e.restarts;
  out << YAML::Key << "batch" << YAML::Value << e.batch;
  out << YAML::Key << "seconds" << YAML::Value << number_text(e.seconds);
  out << YAML::EndMap;
}

}  // namespace

CalibrationTable parse_calibration(const YamlValue& root) {
  require_unique_keys(root);
  YamlMap m(root);
  CalibrationTable t;
  const YamlValue gpu = m.get("gpu");
  t.gpu = gpu.as_string();
  if (t.gpu.empty()) gpu.fail("must not be empty");
  t.source = m.get("source").as_string();
  t.gemm_tflops = m.get("gemm_tflops").as_positive_double();
  t.hbm_GBps = m.get("hbm_GBps").as_positive_double();
  const auto entries = m.get("ns").items();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    NsMeasurement e = parse_measurement(entries[i]);
    for (std::size_t j = 0; j < i; ++j) {
      if (same_measurement(t.ns[j], e)) {
        entries[i].fail("measures the same call as " + entries[j].path() + " (line " +
                        std::to_string(entries[j].line()) + ")");
      }
    }
    t.ns.push_back(std::move(e));
  }
  if (auto v = m.find("elementwise")) t.elementwise = parse_elementwise(*v);
  m.finish();
  return t;
}

CalibrationTable load_calibration(const std::string& file) {
  return parse_calibration(YamlValue::load_file(file));
}

std::string calibration_to_yaml(const CalibrationTable& t) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "gpu" << YAML::Value << t.gpu;
  out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << t.source;
  out << YAML::Key << "gemm_tflops" << YAML::Value << number_text(t.gemm_tflops);
  out << YAML::Key << "hbm_GBps" << YAML::Value << number_text(t.hbm_GBps);
  out << YAML::Key << "ns" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : t.ns) emit_measurement(out, e);
  out << YAML::EndSeq;
  const auto& r = t.elementwise;
  if (r.momentum_GBps || r.update_GBps || r.adamw_GBps) {
    out << YAML::Key << "elementwise" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (r.momentum_GBps) out << YAML::Key << "momentum_GBps" << YAML::Value << number_text(*r.momentum_GBps);
    if (r.update_GBps) out << YAML::Key << "update_GBps" << YAML::Value << number_text(*r.update_GBps);
    if (r.adamw_GBps) out << YAML::Key << "adamw_GBps" << YAML::Value << number_text(*r.adamw_GBps);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void save_calibration(const CalibrationTable& table, const std::string& file) {
  const std::string text = calibration_to_yaml(table);
  std::ofstream f(file, std::ios::binary);
  if (!f) throw Error(file + ": cannot open for writing");
  f << text;
  if (!f.flush()) throw Error(file + ": write failed");
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
    const ShapeKey key{std::min(e.rows, e.cols), std::max(e.rows, e.cols), e.kernel, e.dtype, e.steps,
                       key_restarts(e.kernel, e.restarts)};
    if (!measured_[key].emplace(e.batch, e.seconds).second) {
      throw Error("calibration: two entries for " + std::to_string(e.rows) + "x" + std::to_string(e.cols) +
                  " " + std::string(to_string(e.kernel)) + " batch " + std::to_string(e.batch));
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
  const ShapeKey key{std::min(rows, cols), std::max(rows, cols), kernel, dtype, steps, key_restarts(kernel, restarts)};
  if (auto s = calibrated_seconds(key, batch)) return {*s, "calibration"};
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
  const double launches_seconds = ns_gemm_count(kernel, steps, restarts) * device_.launch_overhead_us * 1e-6;
  return flops / rate_flops_per_second + launches_seconds;
}

double CostModel::elementwise_seconds(double bytes, ElementwiseKind kind) const {
  if (!(bytes >= 0)) throw Error("elementwise cost: bytes must be >= 0, got " + std::to_string(bytes));
  double bw_GBps = hbm_GBps_;
  if (calibration_) {
    const auto& r = calibration_->elementwise;
    const std::optional<double> measured = kind == ElementwiseKind::momentum      ? r.momentum_GBps
                                           : kind == ElementwiseKind::muon_update ? r.update_GBps
                                           : kind == ElementwiseKind::adamw       ? r.adamw_GBps
                                                                                  : std::nullopt;
    if (measured) bw_GBps = *measured;
  }
  return bytes / (bw_GBps * 1e9) + device_.launch_overhead_us * 1e-6;
}

double CostModel::momentum_bytes(std::int64_t numel) { return 12.0 * double(numel); }
double CostModel::muon_update_bytes(std::int64_t numel) { return 12.0 * double(numel); }
double CostModel::adamw_bytes(std::int64_t numel) { return 28.0 * double(numel); }

}  // namespace dmuon
