#include "core/cost/host_floor.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>

#include "core/cost/calibration.hpp"
#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/io/yaml_reader.hpp"

namespace dmuon {
namespace {

// The shallowest depth the floor was measured at (1 for a table built in code without depths):
// the line is priced from there up (host_seconds_at_depth).
long shallowest_depth(const HostFloor& f) {
  return f.layers.empty() ? 1 : *std::min_element(f.layers.begin(), f.layers.end());
}

HostFloor parse_one(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  HostFloor f;
  f.model = m.get("model").as_nonempty_string();
  const YamlValue mode = m.get("mode");
  const std::string mode_text = mode.as_string();
  if (mode_text == "eager") {
    f.mode = HostFloorMode::eager;
  } else if (mode_text == "fsdp2") {
    f.mode = HostFloorMode::fsdp2;
  } else {
    mode.fail("expected eager or fsdp2, got '" + mode_text + "'");
  }
  f.micro_batch = m.get("micro_batch").as_positive_int();
  f.seq_len = m.get("seq_len").as_positive_int();
  if (auto w = m.find("world")) f.world = w->as_positive_int();
  const YamlValue layers = m.get("layers");
  for (const auto& x : layers.as_int_list()) {
    if (x <= 0) layers.fail("depths must be > 0");
    f.layers.push_back(static_cast<long>(x));
  }
  const YamlValue times = m.get("fwd_bwd_s");
  f.fwd_bwd_s = times.as_double_list();
  if (f.fwd_bwd_s.size() != f.layers.size()) times.fail("needs one time per entry of layers");
  for (double t : f.fwd_bwd_s) {
    if (!(t > 0)) times.fail("times must be > 0");
  }
  f.per_layer_s = m.get("per_layer_s").as_positive_double();
  const YamlValue per_step = m.get("per_step_s");
  f.per_step_s = per_step.as_double();
  const long shallowest = shallowest_depth(f);
  if (!(f.per_step_s + f.per_layer_s * double(shallowest) > 0)) {
    per_step.fail("too negative: the line prices " + std::to_string(shallowest) + " layers at or below zero");
  }
  m.finish();
  return f;
}

}  // namespace

std::string_view to_string(HostFloorMode mode) { return mode == HostFloorMode::eager ? "eager" : "fsdp2"; }

std::vector<HostFloor> parse_host_floors(const YamlValue& list) {
  std::vector<HostFloor> out;
  const auto items = list.items();
  for (std::size_t i = 0; i < items.size(); ++i) {
    HostFloor f = parse_one(items[i]);
    if (host_floor_of(out, f.mode)) {
      items[i].fail("a second host floor for mode " + std::string(to_string(f.mode)));
    }
    out.push_back(std::move(f));
  }
  return out;
}

void emit_host_floors(YAML::Emitter& out, const std::vector<HostFloor>& floors) {
  if (floors.empty()) return;
  out << YAML::Key << "host_floor" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : floors) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "model" << YAML::Value << YAML::DoubleQuoted << f.model;
    out << YAML::Key << "mode" << YAML::Value << std::string(to_string(f.mode));
    out << YAML::Key << "micro_batch" << YAML::Value << f.micro_batch;
    out << YAML::Key << "seq_len" << YAML::Value << f.seq_len;
    if (f.world != 1) out << YAML::Key << "world" << YAML::Value << f.world;
    out << YAML::Key << "layers" << YAML::Value << YAML::Flow << f.layers;
    out << YAML::Key << "fwd_bwd_s" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double t : f.fwd_bwd_s) out << number_text(t);
    out << YAML::EndSeq;
    out << YAML::Key << "per_layer_s" << YAML::Value << number_text(f.per_layer_s);
    out << YAML::Key << "per_step_s" << YAML::Value << number_text(f.per_step_s);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

double host_seconds_at_depth(const HostFloor& floor, long layers) {
  if (layers < 1) throw Error("host floor: a step needs at least one layer, got " + std::to_string(layers));
  const auto line = [&](double depth) { return floor.per_step_s + floor.per_layer_s * depth; };
  const double shallowest = double(shallowest_depth(floor));
  const double depth = double(layers);
  const double seconds = depth >= shallowest ? line(depth) : line(shallowest) * depth / shallowest;
  if (!(seconds > 0)) {
    throw Error("host floor (" + std::string(to_string(floor.mode)) + ", " + floor.model + "): its line prices " +
                std::to_string(layers) + " layers at " + std::to_string(seconds) + " s (per_step_s too negative)");
  }
  return seconds;
}

const HostFloor* host_floor_of(const std::vector<HostFloor>& floors, HostFloorMode mode) {
  for (const auto& f : floors) {
    if (f.mode == mode) return &f;
  }
  return nullptr;
}

}  // namespace dmuon
