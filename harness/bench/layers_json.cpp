#include "harness/bench/layers_json.hpp"

#include "core/error.hpp"
#include "core/yaml_reader.hpp"

namespace dmuon::bench {
namespace {

// JSON is YAML: the project's one strict reader (core/yaml_reader) reads this file too, so its
// errors name the file, line and key path the same way as every scenario's and calibration's.
long count(const YamlMap& m, const std::string& key) { return static_cast<long>(m.get(key).as_positive_int()); }
double seconds(const YamlMap& m, const std::string& key) { return m.get(key).as_positive_double(); }

std::string text(const YamlMap& m, const std::string& key) {
  const YamlValue v = m.get(key);
  std::string s = v.as_string();
  if (s.empty()) v.fail("expected a non-empty string");
  return s;
}

GemmTiming gemm_of(const YamlValue& v) {
  YamlMap m(v);
  GemmTiming g;
  g.tokens = count(m, "tokens");
  g.in_features = count(m, "in");
  g.out_features = count(m, "out");
  g.forward_s = seconds(m, "forward_s");
  g.backward_s = seconds(m, "backward_s");
  m.finish();
  return g;
}

AttentionTiming attention_of(const YamlValue& v) {
  YamlMap m(v);
  AttentionTiming a;
  a.samples = count(m, "samples");
  a.seq_len = count(m, "seq_len");
  a.heads = count(m, "heads");
  a.kv_heads = count(m, "kv_heads");
  a.head_dim = count(m, "head_dim");
  a.forward_s = seconds(m, "forward_s");
  a.backward_s = seconds(m, "backward_s");
  m.finish();
  return a;
}

LayerTiming layer_of(const YamlValue& v) {
  YamlMap m(v);
  LayerTiming l;
  l.model = text(m, "model");
  l.part = text(m, "part");
  if (l.part != "block" && l.part != "embedding" && l.part != "head") {
    m.get("part").fail("expected block, embedding or head, got '" + l.part + "'");
  }
  l.micro_batch = count(m, "micro_batch");
  l.seq_len = count(m, "seq_len");
  l.forward_s = seconds(m, "forward_s");
  l.backward_s = seconds(m, "backward_s");
  m.finish();
  return l;
}

}  // namespace

ForwardBackwardTable load_layers_json(const std::string& file) {
  YamlValue root = [&] {
    try {
      return YamlValue::load_file(file);  // read_regular_file inside: no folder, no /dev/zero
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (the forward/backward measurements of --layers-json)");
    }
  }();
  YamlMap m(root);
  ForwardBackwardTable t;
  t.source = text(m, "source");
  t.elementwise_GBps = m.get("elementwise_GBps").as_positive_double();
  for (const auto& v : m.get("gemm").items()) t.gemm.push_back(gemm_of(v));
  for (const auto& v : m.get("attention").items()) t.attention.push_back(attention_of(v));
  for (const auto& v : m.get("layers").items()) t.layers.push_back(layer_of(v));
  m.finish();
  return t;
}

}  // namespace dmuon::bench
