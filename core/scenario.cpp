#include "core/scenario.hpp"

#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "core/model_yaml.hpp"
#include "core/optimizer_yaml.hpp"
#include "core/yaml_reader.hpp"

namespace dmuon {
namespace {

ModelSpec parse_model_entry(const YamlValue& v) {
  if (!v.is_scalar()) return parse_model(v);
  // A path, relative to the scenario file's folder.
  const std::filesystem::path base = std::filesystem::path(v.file()).parent_path();
  const std::string path = (base / v.as_string()).string();
  if (!std::filesystem::exists(path)) v.fail("model file '" + path + "' does not exist");
  return load_model_file(path);
}

ClusterSpec parse_cluster(const YamlValue& value) {
  YamlMap m(value);
  ClusterSpec c;
  if (auto v = m.find("nodes")) c.nodes = v->as_positive_int();
  if (auto v = m.find("gpus_per_node")) c.gpus_per_node = v->as_positive_int();
  if (auto v = m.find("gpu")) c.gpu = v->as_string();
  if (auto v = m.find("gpu_memory_GiB")) c.gpu_memory_GiB = v->as_positive_double();
  m.finish();
  return c;
}

RoutingRules parse_routing(const YamlValue& value) {
  YamlMap m(value);
  RoutingRules r;
  if (auto v = m.find("muon")) r.muon = v->as_string_list();
  if (auto v = m.find("adamw")) r.adamw = v->as_string_list();
  m.finish();
  return r;
}

std::vector<Strategy> parse_strategies(const YamlValue& value) {
  std::vector<Strategy> out;
  std::set<Strategy> seen;
  for (const auto& item : value.items()) {
    const Strategy s = parse_scalar(item, parse_strategy);
    if (!seen.insert(s).second) item.fail("strategy listed twice");
    out.push_back(s);
  }
  if (out.empty()) value.fail("needs at least one strategy");
  return out;
}

Scenario parse_root(const YamlValue& root) {
  YamlMap m(root);
  Scenario s;
  s.file = root.file();
  s.name = m.get("name").as_string();
  s.model = parse_model_entry(m.get("model"));
  s.optimizer = m.has("optimizer") ? parse_optimizer(m.get("optimizer")) : optimizer_preset("torch");
  if (auto v = m.find("routing")) {
    s.routing = parse_routing(*v);
    try {
      route_parameters(s.model, s.routing);  // patterns that match nothing fail here, with the file
    } catch (const Error& e) {
      v->fail_at(e.what());
    }
  }
  s.strategies = m.has("strategies") ? parse_strategies(m.get("strategies")) : all_strategies();
  if (auto v = m.find("cluster")) s.cluster = parse_cluster(*v);
  m.find("description");
  m.finish();
  return s;
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& name) {
  return parse_root(YamlValue::load_string(text, name));
}

Scenario load_scenario(const std::string& path) { return parse_root(YamlValue::load_file(path)); }

}  // namespace dmuon
