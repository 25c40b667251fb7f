// A scenario: model + optimizer + routing + strategies + cluster, loaded from one YAML file.
//
//   name: qwen2.5-3b-2xh200
//   model: models/qwen2.5-3b.yaml     # a path relative to this file, or an inline model mapping
//   optimizer: {preset: dmuon}
//   routing: {muon: [...], adamw: ["*.router.*"]}
//   strategies: [adamw, ddp-redundant, dedicated]
//   cluster: {nodes: 1, gpus_per_node: 2, gpu: h200, gpu_memory_GiB: 141}
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/optimizer_config.hpp"
#include "core/routing.hpp"
#include "core/strategy.hpp"

namespace dmuon {

struct ClusterSpec {
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 1;
  std::string gpu = "unspecified";
  double gpu_memory_GiB = 80;

  std::int64_t world_size() const { return nodes * gpus_per_node; }
};

struct Scenario {
  std::string name;
  std::string file;
  ModelSpec model;
  OptimizerConfig optimizer;
  RoutingRules routing;
  std::vector<Strategy> strategies;
  ClusterSpec cluster;
};

// Strict: an unknown key, a wrong type, a zero or negative size is a dmuon::Error that names
// the file, the key path and the line.
Scenario load_scenario(const std::string& path);
Scenario parse_scenario(const std::string& text, const std::string& name);

}  // namespace dmuon
