#include "core/cost/layer_timing.hpp"

#include <yaml-cpp/yaml.h>

#include <tuple>

#include "core/io/yaml_reader.hpp"

namespace dmuon {
namespace {

LayerTiming parse_one(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  LayerTiming l;
  l.model = m.get("model").as_nonempty_string();
  const YamlValue part = m.get("part");
  l.part = part.as_string();
  if (l.part != "block" && l.part != "embedding" && l.part != "head" && l.part != "whole") {
    part.fail("expected block, embedding, head or whole");
  }
  if (l.part == "whole") {
    l.layers = m.get("layers").as_positive_int();
  } else if (auto x = m.find("layers")) {
    x->fail("only a whole entry has layers");
  }
  l.micro_batch = m.get("micro_batch").as_positive_int();
  l.seq_len = m.get("seq_len").as_positive_int();
  l.forward_s = m.get("forward_s").as_positive_double();
  l.backward_s = m.get("backward_s").as_positive_double();
  m.finish();
  return l;
}

const LayerTiming* find(const std::vector<LayerTiming>& layers, const LayerTiming& like, const char* part) {
  for (const auto& l : layers) {
    if (l.part == part && l.model == like.model && l.micro_batch == like.micro_batch && l.seq_len == like.seq_len) return &l;
  }
  return nullptr;
}

}  // namespace

std::vector<LayerTiming> parse_layer_timings(const YamlValue& list) {
  std::vector<LayerTiming> out;
  const auto items = list.items();
  for (std::size_t i = 0; i < items.size(); ++i) {
    LayerTiming l = parse_one(items[i]);
    for (const auto& o : out) {
      if (std::tie(o.model, o.part, o.micro_batch, o.seq_len) == std::tie(l.model, l.part, l.micro_batch, l.seq_len)) {
        items[i].fail("a second entry for " + l.model + " " + l.part + " at this micro_batch and seq_len");
      }
      if (o.part == "whole" && l.part == "whole") items[i].fail("a second whole entry (one calibration model)");
    }
    out.push_back(std::move(l));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].part != "whole") continue;
    for (const char* part : {"block", "embedding", "head"}) {
      if (!find(out, out[i], part)) {
        items[i].fail("a whole entry needs the " + std::string(part) + " of " + out[i].model + " at its micro_batch and seq_len");
      }
    }
  }
  return out;
}

void emit_layer_timings(YAML::Emitter& out, const std::vector<LayerTiming>& layers) {
  if (layers.empty()) return;
  out << YAML::Key << "layers" << YAML::Value << YAML::BeginSeq;
  for (const auto& l : layers) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "model" << YAML::Value << YAML::DoubleQuoted << l.model;
    out << YAML::Key << "part" << YAML::Value << l.part;
    if (l.part == "whole") out << YAML::Key << "layers" << YAML::Value << l.layers;
    out << YAML::Key << "micro_batch" << YAML::Value << l.micro_batch;
    out << YAML::Key << "seq_len" << YAML::Value << l.seq_len << YAML::Key << "forward_s" << YAML::Value
        << number_text(l.forward_s) << YAML::Key << "backward_s" << YAML::Value << number_text(l.backward_s);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

std::optional<WholeOverParts> whole_over_parts(const std::vector<LayerTiming>& layers) {
  for (const auto& w : layers) {
    if (w.part != "whole") continue;
    const LayerTiming* block = find(layers, w, "block");
    const LayerTiming* embedding = find(layers, w, "embedding");
    const LayerTiming* head = find(layers, w, "head");
    if (!block || !embedding || !head) return std::nullopt;
    const auto total = [](const LayerTiming& l) { return l.forward_s + l.backward_s; };
    return WholeOverParts{w.model, total(w), double(w.layers) * total(*block) + total(*embedding) + total(*head)};
  }
  return std::nullopt;
}

}  // namespace dmuon
