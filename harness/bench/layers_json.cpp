#include "harness/bench/layers_json.hpp"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_read.hpp"

namespace dmuon::bench {
namespace {

using nlohmann::json;

// One JSON object being read: each field is taken once, and what is left over is an error.
class Fields {
 public:
  Fields(const json& object, std::string file, std::string path)
      : object_(object), file_(std::move(file)), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_.empty() ? "top level" : path_, "expected an object");
  }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(file_ + ": " + field + ": " + what);
  }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const json& get(const std::string& key) {
    const auto it = object_.find(key);
    if (it == object_.end()) fail(name(key), "missing");
    taken_.insert(key);
    return *it;
  }
  std::string text(const std::string& key) {
    const json& v = get(key);
    if (!v.is_string() || v.get<std::string>().empty()) fail(name(key), "expected a non-empty string");
    return v.get<std::string>();
  }
  double positive(const std::string& key) {
    const json& v = get(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0)) fail(name(key), "expected a number > 0");
    return v.get<double>();
  }
  long count(const std::string& key) {
    const json& v = get(key);
    if (!v.is_number_integer() || v.get<long long>() <= 0) fail(name(key), "expected an integer > 0");
    return static_cast<long>(v.get<long long>());
  }
  const json& list(const std::string& key) {
    const json& v = get(key);
    if (!v.is_array()) fail(name(key), "expected a list");
    return v;
  }
  // Call last: a key nobody read is a typo or a format this reader does not know.
  void no_others() const {
    for (const auto& [key, value] : object_.items()) {
      if (!taken_.count(key)) fail(name(key), "unknown key");
    }
  }
  const std::string& file() const { return file_; }

 private:
  const json& object_;
  std::string file_, path_;
  std::set<std::string> taken_;
};

std::string at(const std::string& list, std::size_t i) { return list + "[" + std::to_string(i) + "]"; }

GemmTiming gemm_of(const json& v, const std::string& file, const std::string& path) {
  Fields f(v, file, path);
  GemmTiming g;
  g.tokens = f.count("tokens");
  g.in_features = f.count("in");
  g.out_features = f.count("out");
  g.forward_s = f.positive("forward_s");
  g.backward_s = f.positive("backward_s");
  f.no_others();
  return g;
}

AttentionTiming attention_of(const json& v, const std::string& file, const std::string& path) {
  Fields f(v, file, path);
  AttentionTiming a;
  a.samples = f.count("samples");
  a.seq_len = f.count("seq_len");
  a.heads = f.count("heads");
  a.kv_heads = f.count("kv_heads");
  a.head_dim = f.count("head_dim");
  a.forward_s = f.positive("forward_s");
  a.backward_s = f.positive("backward_s");
  f.no_others();
  return a;
}

LayerTiming layer_of(const json& v, const std::string& file, const std::string& path) {
  Fields f(v, file, path);
  LayerTiming l;
  l.model = f.text("model");
  l.part = f.text("part");
  if (l.part != "block" && l.part != "embedding" && l.part != "head") {
    f.fail(f.name("part"), "expected block, embedding or head, got '" + l.part + "'");
  }
  l.micro_batch = f.count("micro_batch");
  l.seq_len = f.count("seq_len");
  l.forward_s = f.positive("forward_s");
  l.backward_s = f.positive("backward_s");
  f.no_others();
  return l;
}

}  // namespace

ForwardBackwardTable load_layers_json(const std::string& file) {
  std::string text;
  try {
    text = read_regular_file(file);  // the project's one reader of user files: no folder, no /dev/zero
  } catch (const Error& e) {
    throw Error(file + ": cannot read the forward/backward measurements (--layers-json): " + e.what());
  }
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(file + ": not valid JSON: " + e.what());
  }
  Fields f(root, file, "");
  ForwardBackwardTable t;
  t.source = f.text("source");
  t.elementwise_GBps = f.positive("elementwise_GBps");
  const json& gemm = f.list("gemm");
  for (std::size_t i = 0; i < gemm.size(); ++i) t.gemm.push_back(gemm_of(gemm[i], file, at("gemm", i)));
  const json& attention = f.list("attention");
  for (std::size_t i = 0; i < attention.size(); ++i) {
    t.attention.push_back(attention_of(attention[i], file, at("attention", i)));
  }
  const json& layers = f.list("layers");
  for (std::size_t i = 0; i < layers.size(); ++i) t.layers.push_back(layer_of(layers[i], file, at("layers", i)));
  f.no_others();
  return t;
}

}  // namespace dmuon::bench
