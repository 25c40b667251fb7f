// What one GPU can do, in the few numbers the roofline cost model needs, plus built-in profiles.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/io/yaml_reader.hpp"

namespace dmuon {

struct DeviceProfile {
  std::string name;
  double gemm_tflops = 0;         // dense 16-bit GEMM rate a large square product reaches
  double hbm_GBps = 0;            // device memory bandwidth, bytes read + written per second / 1e9
  double launch_overhead_us = 0;  // fixed cost of one kernel launch seen from the stream
  double memory_GiB = 0;          // device memory the program can use
  // GEMM efficiency (fraction of gemm_tflops) versus the smallest GEMM dimension m, as points
  // (m, efficiency) with m strictly increasing; linear in log2(m) between points and clamped
  // outside them. Small GEMMs fill too few tiles to occupy every multiprocessor.
  std::vector<std::pair<double, double>> small_shape_efficiency;

  double gemm_efficiency(double m) const;
  // Throws dmuon::Error naming `what` (e.g. "gpu") and the first bad field.
  void validate(const std::string& what) const;
};

// The curve used when a profile gives none. An assumption, not a measurement: a cuBLAS bf16
// GEMM with one dimension m <= 64 runs a handful of tiles (~5% of peak), m = 256 fills about a
// third of 132 SMs, m >= 4096 is near the large-GEMM rate. The GNS blog's H100 NS timings imply
// ~472 TFLOP/s for 1024x8192 vs ~633 for 8192^2 (kernel-anchors.md 3.2), i.e. ~0.75 at m = 1024
// relative to the large shape; the curve sits just below that. Replace with a calibration table.
std::vector<std::pair<double, double>> default_small_shape_efficiency();

// Built-in profiles: h100-sxm, h200, a800-sxm4-80gb.
std::vector<std::string> device_profile_names();
// Throws dmuon::Error naming `what` for an unknown name, listing the known ones.
DeviceProfile device_profile(const std::string& name, const std::string& what = "gpu");
// The built-in profile of a GPU by its CUDA name: "NVIDIA H100 80GB HBM3" -> "h100-sxm". Throws
// dmuon::Error asking for --profile when none matches.
std::string profile_for_gpu(const std::string& gpu_name);

// A `gpu:` entry: either a built-in name (`gpu: h100-sxm`), or a mapping with keys name,
// gemm_tflops, hbm_GBps, launch_overhead_us, memory_GiB, small_shape_efficiency
// ([[m, eff], ...]). A mapping whose name is built-in starts from that profile and overrides
// the keys it gives; any other name must give gemm_tflops, hbm_GBps and memory_GiB. Unknown or
// repeated keys and out-of-range numbers fail with file:line: key.
DeviceProfile parse_device_profile(const YamlValue& value);

// yaml-cpp keeps the first of two equal keys without a word; the files dmuon reads reject them.
// Fails with file:line: path: repeated key 'k'. Does nothing for a non-mapping.
void require_unique_keys(const YamlValue& mapping);

}  // namespace dmuon
