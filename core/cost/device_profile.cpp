#include "core/cost/device_profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/error.hpp"

namespace dmuon {
namespace {

// Launch overhead of one kernel issued back to back on a stream (no CUDA graph): an assumption
// of ~5 us on Hopper/Ampere with current drivers; CUDA graphs cut it to ~1-2 us. Calibration
// tables measure whole NS calls and replace it.
constexpr double kAssumedLaunchOverhead_us = 5.0;

DeviceProfile h100_sxm() {
  // Datasheet: 989 TFLOP/s dense bf16, 3.35 TB/s HBM3, 80 GB. The roofline uses what the H100
  // lent here reached (/work/.library/device/KINDS.md, 2026-11-13): an 8192^3 bf16 product at
  // 798 TFLOP/s on random data and a device-to-device copy at ~3.0 TB/s (read + written);
  // nvidia-smi showed 81559 MiB = 79.6 GiB.
  return {"h100-sxm", 798.0, 3000.0, kAssumedLaunchOverhead_us, 79.6, default_small_shape_efficiency()};
}

DeviceProfile h200() {
  // Datasheet: the H100's ~989 TFLOP/s dense bf16, 4.8 TB/s HBM3e, 141 GB. Measured here
  // (KINDS.md, 2026-10-28): 8192^3 bf16 at 788 TFLOP/s on random data, copy ~4.3 TB/s; the
  // device README gives about 139 GiB usable.
  return {"h200", 788.0, 4300.0, kAssumedLaunchOverhead_us, 139.0, default_small_shape_efficiency()};
}

DeviceProfile a800_sxm4_80gb() {
  // A100-class (A800 is the A100 with a cut NVLink): datasheet 312 TFLOP/s dense bf16,
  // 2.039 TB/s HBM2e, 80 GB. Not measured here; datasheet peaks overstate what cuBLAS reaches.
  return {"a800-sxm4-80gb", 312.0, 2039.0, kAssumedLaunchOverhead_us, 80.0,
          default_small_shape_efficiency()};
}

void read_curve(const YamlValue& v, DeviceProfile& p) {
  p.small_shape_efficiency.clear();
  for (const auto& item : v.items()) {
    const auto point = item.as_double_list();
    if (point.size() != 2) item.fail("expected [m, efficiency], got " + std::to_string(point.size()) + " numbers");
    const double previous_m = p.small_shape_efficiency.empty() ? 0 : p.small_shape_efficiency.back().first;
    if (!(point[0] > previous_m)) item.fail("m must be > 0 and strictly increasing");
    if (!(point[1] > 0 && point[1] <= 1)) item.fail("efficiency must be in (0, 1]");
    p.small_shape_efficiency.emplace_back(point[0], point[1]);
  }
}

}  // namespace

std::vector<std::pair<double, double>> default_small_shape_efficiency() {
  return {{64, 0.05}, {256, 0.3}, {1024, 0.7}, {4096, 0.9}, {8192, 1.0}};
}

double DeviceProfile::gemm_efficiency(double m) const {
  const auto& c = small_shape_efficiency;
  if (c.empty()) return 1.0;
  if (m <= c.front().first) return c.front().second;
  if (m >= c.back().first) return c.back().second;
  const double x = std::log2(m);
  for (std::size_t i = 1; i < c.size(); ++i) {
    if (m > c[i].first) continue;
    const double x0 = std::log2(c[i - 1].first), x1 = std::log2(c[i].first);
    const double f = (x - x0) / (x1 - x0);
    return c[i - 1].second + f * (c[i].second - c[i - 1].second);
  }
  return c.back().second;
}

void DeviceProfile::validate(const std::string& what) const {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw Error(what + "." + field + ": " + why);
  };
  if (name.empty()) fail("name", "must not be empty");
  if (!(gemm_tflops > 0) || !std::isfinite(gemm_tflops)) fail("gemm_tflops", "must be > 0");
  if (!(hbm_GBps > 0) || !std::isfinite(hbm_GBps)) fail("hbm_GBps", "must be > 0");
  if (!(launch_overhead_us >= 0) || !std::isfinite(launch_overhead_us)) fail("launch_overhead_us", "must be >= 0");
  if (!(memory_GiB > 0) || !std::isfinite(memory_GiB)) fail("memory_GiB", "must be > 0");
  double previous_m = 0;
  for (const auto& [m, eff] : small_shape_efficiency) {
    if (!(m > previous_m) || !std::isfinite(m)) {
      fail("small_shape_efficiency", "m must be > 0 and strictly increasing, got " + std::to_string(m));
    }
    if (!(eff > 0 && eff <= 1)) {
      fail("small_shape_efficiency", "efficiency must be in (0, 1], got " + std::to_string(eff));
    }
    previous_m = m;
  }
}

std::vector<std::string> device_profile_names() { return {"h100-sxm", "h200", "a800-sxm4-80gb"}; }

std::string profile_for_gpu(const std::string& gpu_name) {
  std::string upper = gpu_name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper.find("H100") != std::string::npos) return "h100-sxm";
  if (upper.find("H200") != std::string::npos) return "h200";
  if (upper.find("A800") != std::string::npos) return "a800-sxm4-80gb";
  throw Error("no device profile for GPU '" + gpu_name + "': pass --profile NAME");
}

DeviceProfile device_profile(const std::string& name, const std::string& what) {
  if (name == "h100-sxm") return h100_sxm();
  if (name == "h200") return h200();
  if (name == "a800-sxm4-80gb") return a800_sxm4_80gb();
  std::string known;
  for (const auto& n : device_profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(what + ": unknown GPU profile '" + name + "' (built in: " + known +
              "; or give a mapping with gemm_tflops, hbm_GBps, memory_GiB)");
}

DeviceProfile parse_device_profile(const YamlValue& value) {
  if (value.is_scalar()) {
    return parse_scalar(value, [](const std::string& s, const std::string& what) { return device_profile(s, what); });
  }
  require_unique_keys(value);
  YamlMap m(value);
  const YamlValue name = m.get("name");
  const std::string name_text = name.as_string();
  const auto builtin = device_profile_names();
  const bool known = std::find(builtin.begin(), builtin.end(), name_text) != builtin.end();
  DeviceProfile p = known ? device_profile(name_text) : DeviceProfile{name_text, 0, 0, kAssumedLaunchOverhead_us, 0,
                                                                       default_small_shape_efficiency()};
  auto number = [&](const char* key, double& field, bool positive) {
    const auto v = known ? m.find(key) : std::optional<YamlValue>(m.get(key));
    if (v) field = positive ? v->as_positive_double() : v->as_nonnegative_double();
  };
  number("gemm_tflops", p.gemm_tflops, true);
  number("hbm_GBps", p.hbm_GBps, true);
  number("memory_GiB", p.memory_GiB, true);
  if (auto v = m.find("launch_overhead_us")) p.launch_overhead_us = v->as_nonnegative_double();
  if (auto v = m.find("small_shape_efficiency")) read_curve(*v, p);
  m.finish();
  try {
    p.validate(value.path().empty() ? "gpu" : value.path());
  } catch (const Error& e) {
    value.fail_at(e.what());
  }
  return p;
}

void require_unique_keys(const YamlValue& mapping) {
  if (!mapping.is_map()) return;
  std::set<std::string> seen;
  for (auto it = mapping.node().begin(); it != mapping.node().end(); ++it) {
    const std::string key = it->first.Scalar();
    if (!seen.insert(key).second) {
      const std::string path = mapping.path().empty() ? key : mapping.path() + "." + key;
      YamlValue(it->first, mapping.file_ptr(), path).fail("repeated key '" + key + "'");
    }
  }
}

}  // namespace dmuon
