#include "core/io/scenario.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/model/model_yaml.hpp"
#include "core/optimizer/optimizer_yaml.hpp"
#include "core/io/yaml_reader.hpp"

namespace dmuon {
namespace {

ModelSpec parse_model_entry(const YamlValue& v) {
  if (!v.is_scalar()) return parse_model(v);
  // A path, relative to the scenario file's folder.
  const std::filesystem::path base = std::filesystem::path(v.file()).parent_path();
  const std::string path = (base / v.as_string()).string();
  // The error_code form: exists() throws std::filesystem_error on a name that is too long.
  std::error_code error;
  if (!std::filesystem::exists(path, error)) v.fail("model file '" + path + "' does not exist");
  return load_model_file(path);
}

// A fraction in (0, 1].
double as_fraction(const YamlValue& v) {
  const double x = v.as_positive_double();
  if (x > 1) v.fail("must be in (0, 1], got " + v.as_string());
  return x;
}

NvlinkSpec parse_nvlink(const YamlValue& value) {
  require_unique_keys(value);
  YamlMap m(value);
  NvlinkSpec n;
  n.bw_GBps = m.get("bw_GBps").as_positive_double();
  if (auto v = m.find("latency_us")) n.latency_us = v->as_nonnegative_double();
  if (auto v = m.find("efficiency")) n.efficiency = as_fraction(*v);
  m.finish();
  return n;
}

InterNodeSpec parse_network(const YamlValue& value) {
  require_unique_keys(value);
  YamlMap m(value);
  InterNodeSpec n;
  if (auto v = m.find("nics_per_node")) n.nics_per_node = v->as_positive_int();
  n.nic_bw_Gbps = m.get("nic_bw_Gbps").as_positive_double();
  if (auto v = m.find("latency_us")) n.latency_us = v->as_nonnegative_double();
  if (auto v = m.find("efficiency")) n.efficiency = as_fraction(*v);
  if (auto v = m.find("spine_latency_us")) n.spine_latency_us = v->as_nonnegative_double();
  if (auto v = m.find("spine_oversubscription")) {
    n.spine_oversubscription = v->as_positive_double();
    if (n.spine_oversubscription < 1) v->fail("must be >= 1 (1 = non-blocking), got " + v->as_string());
  }
  m.finish();
  return n;
}

AllReduceAlgorithm parse_all_reduce(const std::string& text, const std::string& what) {
  if (text == "ring") return AllReduceAlgorithm::ring;
  if (text == "tree") return AllReduceAlgorithm::tree;
  if (text == "auto") return AllReduceAlgorithm::automatic;
  throw Error(what + ": unknown all-reduce algorithm '" + text + "' (ring, tree, auto)");
}

NcclSpec parse_nccl(const YamlValue& value) {
  require_unique_keys(value);
  YamlMap m(value);
  NcclSpec n;
  if (auto v = m.find("base_latency_us")) n.base_latency_us = v->as_nonnegative_double();
  if (auto v = m.find("channels")) n.channels = v->is_scalar() && v->as_string() == "auto" ? 0 : v->as_positive_int();
  if (auto v = m.find("channels_one_gpu_per_node")) n.channels_one_gpu_per_node = v->as_positive_int();
  if (auto v = m.find("chunk_bytes")) n.chunk_bytes = v->as_positive_int();
  if (auto v = m.find("all_reduce")) n.all_reduce = parse_scalar(*v, parse_all_reduce);
  if (auto v = m.find("size_efficiency")) {
    for (const auto& item : v->items()) {
      const auto point = item.as_double_list();
      if (point.size() != 2) item.fail("expected [bytes, efficiency]");
      const double previous = n.size_efficiency.empty() ? 0 : n.size_efficiency.back().first;
      if (!(point[0] > previous)) item.fail("bytes must be > 0 and strictly increasing");
      if (!(point[1] > 0 && point[1] <= 1)) item.fail("efficiency must be in (0, 1]");
      n.size_efficiency.emplace_back(point[0], point[1]);
    }
  }
  m.finish();
  return n;
}

// What the channel counts are derived from: the GPU's architecture and PCIe link (built-in
// GPUs only), its NVLink, and the node's NICs. Sets `why` and returns nullopt when they are not
// all known.
std::optional<NcclNodeLinks> channel_inputs(const ClusterSpec& c, std::string& why) {
  auto links = nccl_gpu_links(c.gpu);
  if (!links) why = "needs a built-in gpu (a800-sxm4-80gb, h100-sxm, h200), got '" + c.gpu + "'";
  else if (c.gpus_per_node > 1 && !c.nvlink) why = "needs cluster.nvlink when gpus_per_node > 1";
  else if (c.nodes > 1 && !c.network) why = "needs cluster.network when nodes > 1";
  if (!why.empty()) return std::nullopt;
  if (c.nvlink) links->nvlink_GBps = c.nvlink->bw_GBps;
  if (c.network) {
    links->nic_GBps = c.network->nic_bw_Gbps / 8.0;
    links->nics_per_node = static_cast<int>(c.network->nics_per_node);
  }
  return links;
}

// Channels as the scenario asks: a number as given; `auto` derived (an error when it cannot
// be); absent derived where it can be, else NCCL's assumed 8, said in channels_source.
void resolve_channels(ClusterSpec& c, const std::optional<YamlValue>& nccl) {
  std::optional<YamlValue> key;
  if (nccl) key = YamlMap(*nccl).find("channels");
  if (key && c.nccl.channels > 0) {
    c.nccl.channels_source = "set by the scenario";
    return;
  }
  std::string why;
  c.nccl.links = channel_inputs(c, why);
  if (c.nccl.links) {
    c.nccl.channels = 0;
    c.nccl.channels_source = "derived from the links (core/cost/nccl_channels)";
  } else if (key) {
    key->fail("auto " + why + ": give a number");
  } else {
    c.nccl.channels = 8;
    c.nccl.channels_source = "assumed 8: cannot be derived (" + why + "); set cluster.nccl.channels";
  }
}

// A calibration file named relative to the scenario file; it must exist.
std::string calibration_path(const YamlValue& v) {
  const std::filesystem::path base = std::filesystem::path(v.file()).parent_path();
  std::string file = (base / v.as_string()).string();
  if (!std::filesystem::exists(file)) v.fail("calibration file '" + file + "' does not exist");
  return file;
}

ClusterSpec parse_cluster(const YamlValue& value) {
  require_unique_keys(value);
  YamlMap m(value);
  ClusterSpec c;
  if (auto v = m.find("nodes")) c.nodes = v->as_positive_int();
  if (auto v = m.find("gpus_per_node")) c.gpus_per_node = v->as_positive_int();
  if (auto v = m.find("gpu")) c.gpu = v->as_string();
  if (auto v = m.find("gpu_memory_GiB")) c.gpu_memory_GiB = v->as_positive_double();
  if (auto v = m.find("nvlink")) c.nvlink = parse_nvlink(*v);
  if (auto v = m.find("network")) {
    c.network = parse_network(*v);
    if (c.gpus_per_node % c.network->nics_per_node != 0) {
      v->fail("nics_per_node (" + std::to_string(c.network->nics_per_node) + ") must divide gpus_per_node (" +
              std::to_string(c.gpus_per_node) + ")");
    }
  }
  const auto nccl = m.find("nccl");
  if (nccl) c.nccl = parse_nccl(*nccl);
  resolve_channels(c, nccl);
  if (auto v = m.find("calibration")) c.calibration_file = calibration_path(*v);
  m.finish();
  return c;
}

TrainingSpec parse_training(const YamlValue& value) {
  require_unique_keys(value);
  YamlMap m(value);
  TrainingSpec t;
  if (auto v = m.find("seq_len")) t.seq_len = v->as_positive_int();
  if (auto v = m.find("micro_batch")) t.micro_batch = v->as_positive_int();
  if (auto v = m.find("mfu")) t.mfu = as_fraction(*v);
  if (auto v = m.find("peak_tflops")) t.peak_tflops = v->as_positive_double();
  if (auto v = m.find("fwd_bwd_seconds")) t.fwd_bwd_seconds = v->as_positive_double();
  if (auto v = m.find("tower_tokens")) {
    require_unique_keys(*v);
    if (!v->is_map()) v->fail("expected a mapping of tower name to tokens per sample");
    for (auto it = v->node().begin(); it != v->node().end(); ++it) {
      const std::string key = it->first.Scalar();
      t.tower_tokens[key] = YamlValue(it->second, v->file_ptr(), v->path() + "." + key).as_positive_int();
    }
  }
  if (auto v = m.find("reshard_after_forward")) t.reshard_after_forward = v->as_bool();
  if (auto v = m.find("prefetch_layers")) t.prefetch_layers = v->as_positive_int();
  if (auto v = m.find("fsdp2_copies")) t.fsdp2_copies = v->as_bool();
  if (auto v = m.find("activation_checkpointing")) t.activation_checkpointing = v->as_bool();
  if (auto v = m.find("moe_top_k")) t.moe_top_k = v->as_positive_int();
  if (auto v = m.find("activation_bytes_per_token_hidden")) {
    t.activation_bytes_per_token_hidden = v->as_nonnegative_double();
  }
  m.finish();
  return t;
}

SimMode parse_sim_mode(const std::string& text, const std::string& what) {
  if (text == "fast") return SimMode::fast;
  if (text == "flows") return SimMode::flows;
  throw Error(what + ": unknown simulation mode '" + text + "' (fast, flows)");
}

void parse_simulation(const YamlValue& value, Scenario& s) {
  YamlMap m(value);
  if (auto v = m.find("mode")) s.sim_mode = parse_scalar(*v, parse_sim_mode);
  if (auto v = m.find("steps")) {
    const std::int64_t steps = v->as_positive_int();
    if (steps > 8) throw Error("simulation.steps: " + std::to_string(steps) + " steps simulated back to back; at most 8");
    s.sim_steps = static_cast<int>(steps);
  }
  m.finish();
}

PlannerSpec parse_planner(const YamlValue& value) {
  YamlMap m(value);
  PlannerSpec p;
  if (auto v = m.find("striped_bucket_MiB_per_rail")) {
    p.striped_bucket_bytes_per_rail = static_cast<std::int64_t>(v->as_nonnegative_double() * (1 << 20));
  }
  if (auto v = m.find("striped_run_ahead")) p.striped_run_ahead = v->as_bool();
  if (auto v = m.find("sharded_ns")) p.sharded_ns = v->as_bool();
  if (auto v = m.find("split_ns_products")) {
    const std::string name = v->as_string();
    p.split_ns_products = parse_product_split(name);
    if (!p.split_ns_products) v->fail("must be never, cheaper or always, got '" + name + "'");
  }
  if (auto v = m.find("striped_all_reduce_from_nodes")) {
    const std::int64_t nodes = v->as_positive_int();
    if (nodes > std::numeric_limits<int>::max()) v->fail("must be at most " + std::to_string(std::numeric_limits<int>::max()));
    p.striped_all_reduce_from_nodes = static_cast<int>(nodes);
  }
  m.finish();
  return p;
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
  if (auto v = m.find("training")) s.training = parse_training(*v);
  if (auto v = m.find("simulation")) parse_simulation(*v, s);
  if (auto v = m.find("planner")) s.planner = parse_planner(*v);
  s.calibration_file = s.cluster.calibration_file;
  if (auto v = m.find("calibration")) {  // the older spelling, before cluster.calibration
    if (!s.calibration_file.empty()) v->fail("the calibration is given twice: keep cluster.calibration");
    s.calibration_file = calibration_path(*v);
  }
  m.find("description");
  m.finish();
  return s;
}

// Sets a dotted key path in a YAML tree, creating mappings on the way.
void set_path(YAML::Node node, const std::string& key, const std::string& value, const std::string& file) {
  const auto dot = key.find('.');
  const std::string head = key.substr(0, dot);
  if (head.empty()) throw Error(file + ": override '" + key + "': empty key");
  if (node[head] && !node[head].IsMap() && dot != std::string::npos) {
    throw Error(file + ": override '" + key + "': '" + head + "' is not a mapping");
  }
  if (dot == std::string::npos) {
    node[head] = YAML::Load(value);
    return;
  }
  YAML::Node child = node[head];
  set_path(child, key.substr(dot + 1), value, file);
  node[head] = child;
}

}  // namespace

int channels_for_group(const NcclSpec& n, int gpus_per_node, int nodes) {
  if (gpus_per_node == 1 && nodes > 1 && n.channels_one_gpu_per_node > 0) return static_cast<int>(n.channels_one_gpu_per_node);
  if (n.channels > 0) return static_cast<int>(n.channels);
  if (!n.links) throw Error("cluster.nccl.channels: to be derived, but no links are known to derive them from");
  return nccl_ring_channels(*n.links, gpus_per_node, nodes).channels;
}

std::string nccl_channels_summary(const ClusterSpec& c) {
  const NcclSpec& n = c.nccl;
  std::ostringstream out;
  out << "NCCL channels " << n.channels_source << ": ";
  const int g = static_cast<int>(c.gpus_per_node);
  auto count = [&](int per_node, int nodes) { return channels_for_group(n, per_node, nodes); };
  std::vector<std::string> parts;
  if (g > 1) parts.push_back(std::to_string(count(g, 1)) + " in a node");
  if (c.nodes > 1) {
    parts.push_back(std::to_string(count(g, 2)) + " across nodes");
    if (g > 1) parts.push_back(std::to_string(count(1, 2)) + " with one GPU a node");
  }
  if (parts.empty()) return out.str() + "none needed (one GPU)";
  for (std::size_t i = 0; i < parts.size(); ++i) out << (i ? ", " : "") << parts[i];
  return out.str();
}

std::string_view to_string(AllReduceAlgorithm a) {
  switch (a) {
    case AllReduceAlgorithm::ring: return "ring";
    case AllReduceAlgorithm::tree: return "tree";
    case AllReduceAlgorithm::automatic: return "auto";
  }
  return "?";
}

double NcclSpec::efficiency_at(double bytes) const {
  const auto& c = size_efficiency;
  if (c.empty()) return 1;
  if (bytes <= c.front().first) return c.front().second;
  if (bytes >= c.back().first) return c.back().second;
  for (std::size_t i = 1; i < c.size(); ++i) {
    if (bytes > c[i].first) continue;
    const double f = (std::log2(bytes) - std::log2(c[i - 1].first)) / (std::log2(c[i].first) - std::log2(c[i - 1].first));
    return c[i - 1].second + f * (c[i].second - c[i - 1].second);
  }
  return c.back().second;
}

std::string_view to_string(SimMode m) { return m == SimMode::fast ? "fast" : "flows"; }

Scenario load_scenario_with_overrides(const std::string& path,
                                      const std::vector<std::pair<std::string, std::string>>& overrides) {
  if (overrides.empty()) return load_scenario(path);
  YamlValue root = YamlValue::load_file(path);
  YAML::Node tree = YAML::Clone(root.node());
  for (const auto& [key, value] : overrides) set_path(tree, key, value, path);
  YAML::Emitter out;
  out << tree;
  // The file keeps its own name (relative model paths resolve against it); errors say which
  // overrides were applied.
  std::string applied = " (with";
  for (const auto& [key, value] : overrides) applied += " " + key + "=" + value;
  try {
    return parse_root(YamlValue::load_string(out.c_str(), path));
  } catch (const Error& e) {
    throw Error(e.what() + applied + ")");
  }
}

Scenario parse_scenario(const std::string& text, const std::string& name) {
  return parse_root(YamlValue::load_string(text, name));
}

Scenario load_scenario(const std::string& path) { return parse_root(YamlValue::load_file(path)); }

}  // namespace dmuon
