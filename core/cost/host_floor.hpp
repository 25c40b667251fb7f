// The host's floor under one decoder layer (harness/tools/measure_host_floor.py): forward +
// backward of a layer when the GPU has almost nothing to do, for the framework that runs it.
//
// Why it prices anything: eager PyTorch dispatches a layer's ~100 kernels from Python and the
// autograd engine, and FSDP2 adds its per-layer hooks, casts and copies; when a layer's GPU
// work takes less than that, the GPU waits for the host. The simulator paces the step's units
// by the host, each block costing it its share of the floor (core/cost/host_paced.hpp). The floor is
// measured on the calibration model and taken to hold for any decoder layer of the same
// framework: within 3.0-3.7 ms for five models from 0.5B to 8B parameters on one H200 lease
// (reports/sim-validation.md), while hosts of different leases differ by more than that.
//
// In the calibration file, inside forward_backward:
//   host_floor: [{model: qwen2.5-3b, mode: eager, micro_batch: 1, seq_len: 32,
//                 layers: [2, 6], fwd_bwd_s: [t2, t6], per_layer_s: ..., per_step_s: ...}, ...]
// per_layer_s is the slope over the depths, per_step_s the intercept. One entry per mode at most.
// host_seconds_at_depth gives a model's host time from that line (its per-layer share then paces
// the blocks, core/cost/host_paced.hpp). `world`
// (optional, default 1): the GPUs it ran on. The committed calibrations take FSDP2's floor on one
// GPU on machines of several too (harness/tools/one_rank_floor.py: it predicted the 2-GPU FSDP2
// steps of seven leases better than the same model's 32-token floor on all GPUs,
// harness/tools/world_host_floor.py, whose rows carry world: N).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Emitter;
}

namespace dmuon {

class YamlValue;

enum class HostFloorMode { eager, fsdp2 };

struct HostFloor {
  std::string model;  // the model it was measured on (ModelSpec::name)
  HostFloorMode mode = HostFloorMode::eager;
  long micro_batch = 0, seq_len = 0;
  std::vector<long> layers;      // the two depths timed
  std::vector<double> fwd_bwd_s; // their forward + backward, seconds
  double per_layer_s = 0;        // > 0
  double per_step_s = 0;         // may be <= 0 within noise
  long world = 1;                // GPUs (ranks) it ran on
  bool operator==(const HostFloor&) const = default;
};

std::string_view to_string(HostFloorMode mode);

// Strict: unknown or missing keys, a mode other than eager/fsdp2, two entries of one mode,
// per_layer_s <= 0, lists whose lengths differ fail naming file:line: key.
std::vector<HostFloor> parse_host_floors(const YamlValue& list);
void emit_host_floors(YAML::Emitter& out, const std::vector<HostFloor>& floors);

// The host's forward + backward time of a step of `layers` decoder layers: the measured line,
// per_step_s + per_layer_s x layers, from the shallowest depth measured on up (a fixed cost and a
// cost per layer; beyond the deepest depth the line is extended); below the shallowest depth
// the line's value there scaled by layers / depth, because a negative intercept (FSDP2's per-layer
// cost grows with depth: 5.7 ms a layer at 18 layers, 6.2 at 36 on 2 x H200) would otherwise
// price a shallow model's host at or below zero. Throws dmuon::Error for layers < 1.
double host_seconds_at_depth(const HostFloor& floor, long layers);

// The entry of `mode`, or nullptr.
const HostFloor* host_floor_of(const std::vector<HostFloor>& floors, HostFloorMode mode);

}  // namespace dmuon
