// The calibration file: strict reading (every error names file:line: key) and writing that
// reads back to the same table (numbers in their shortest round-trip text).
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <tuple>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "core/cost/calibration.hpp"
#include "core/cost/layer_timing.hpp"
#include "core/error.hpp"

namespace dmuon {
namespace {

int positive_int(const YamlValue& v) {
  const auto x = v.as_positive_int();
  if (x > 1'000'000'000) v.fail("too large: " + std::to_string(x));
  return static_cast<int>(x);
}

// Fails on the second of two entries that `same` says measure one thing.
template <typename T, typename Same>
void require_distinct(const std::vector<YamlValue>& items, const std::vector<T>& parsed, Same same) {
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (same(parsed[j], parsed[i])) {
        items[i].fail("measures the same call as " + items[j].path() + " (line " + std::to_string(items[j].line()) + ")");
      }
    }
  }
}

NsMeasurement parse_measurement(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  NsMeasurement e;
  e.rows = m.get("rows").as_positive_int();
  e.cols = m.get("cols").as_positive_int();
  e.kernel = parse_scalar(m.get("kernel"), parse_ns_kernel);
  const YamlValue dtype = m.get("dtype");
  e.dtype = parse_scalar(dtype, parse_dtype);
  if (e.dtype != DType::bf16 && e.dtype != DType::fp16) dtype.fail("expected bf16 or fp16");
  e.steps = positive_int(m.get("steps"));
  if (auto r = m.find("restarts")) {
    for (const auto& x : r->items()) e.restarts.push_back(x.as_int32());
    try {
      ns_gemm_count(e.kernel, e.steps, e.restarts);
    } catch (const Error& err) {
      r->fail(err.what());
    }
  }
  e.batch = positive_int(m.get("batch"));
  e.seconds = m.get("seconds").as_positive_double();
  m.finish();
  return e;
}

// Restarts only matter to Gram; a standard entry matches whatever restart list is asked.
bool same_measurement(const NsMeasurement& a, const NsMeasurement& b) {
  return std::min(a.rows, a.cols) == std::min(b.rows, b.cols) && std::max(a.rows, a.cols) == std::max(b.rows, b.cols) &&
         a.kernel == b.kernel && a.dtype == b.dtype && a.steps == b.steps && a.batch == b.batch &&
         (a.kernel != NsKernel::gram || a.restarts == b.restarts);
}

ElementwiseRates parse_elementwise(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  ElementwiseRates r;
  if (auto x = m.find("momentum_GBps")) r.momentum_GBps = x->as_positive_double();
  if (auto x = m.find("update_GBps")) r.update_GBps = x->as_positive_double();
  if (auto x = m.find("adamw_GBps")) r.adamw_GBps = x->as_positive_double();
  m.finish();
  return r;
}

// [[x, seconds], ...]: x > 0 and strictly increasing, seconds > 0 (or >= 0 where a point may add
// nothing: a grouped call's extra cost). `x_name` names x in the messages.
std::vector<std::pair<double, double>> parse_points(const YamlValue& v, const std::string& x_name, bool zero_seconds) {
  std::vector<std::pair<double, double>> points;
  const auto items = v.items();
  if (items.empty()) v.fail("needs at least one [" + x_name + ", seconds] point");
  for (const auto& item : items) {
    const auto point = item.as_double_list();
    if (point.size() != 2) item.fail("expected [" + x_name + ", seconds]");
    const double previous = points.empty() ? 0 : points.back().first;
    if (!(point[0] > previous) || !std::isfinite(point[0])) item.fail(x_name + " must be > 0 and strictly increasing");
    if (zero_seconds ? !(point[1] >= 0) || !std::isfinite(point[1]) : !(point[1] > 0)) {
      item.fail(zero_seconds ? "seconds must be finite and >= 0" : "seconds must be > 0");
    }
    points.emplace_back(point[0], point[1]);
  }
  return points;
}

SizeCurve parse_curve(const YamlValue& v) { return SizeCurve{parse_points(v, "x", false)}; }

ElementwiseCurves parse_elementwise_curves(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  ElementwiseCurves c;
  if (auto x = m.find("momentum")) c.momentum = parse_curve(*x);
  if (auto x = m.find("muon_update")) c.muon_update = parse_curve(*x);
  if (auto x = m.find("adamw")) c.adamw = parse_curve(*x);
  if (auto x = m.find("copy")) c.copy = parse_curve(*x);
  m.finish();
  return c;
}

OpKind parse_collective_kind(const std::string& text, const std::string& path) {
  for (OpKind k : {OpKind::broadcast, OpKind::reduce, OpKind::all_reduce, OpKind::all_gather, OpKind::reduce_scatter,
                   OpKind::all_to_all}) {
    if (to_string(k) == text) return k;
  }
  throw Error(path + ": unknown collective kind '" + text +
              "' (broadcast, reduce, all_reduce, all_gather, reduce_scatter, all_to_all)");
}

CollectiveCurve parse_collective(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  CollectiveCurve c;
  c.kind = parse_scalar(m.get("kind"), parse_collective_kind);
  c.ranks = positive_int(m.get("ranks"));
  const YamlValue nodes = m.get("nodes");
  c.nodes = positive_int(nodes);
  if (c.nodes > c.ranks) nodes.fail("a communicator of " + std::to_string(c.ranks) + " ranks spans at most that many nodes");
  c.curve = parse_curve(m.get("points"));
  m.finish();
  return c;
}

// local_grouped_calls entry: {kind, points: [[group bytes, seconds a call past the first], ...]}.
LocalGroupedCalls parse_grouped_calls(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  LocalGroupedCalls g;
  const YamlValue kind = m.get("kind");
  g.kind = parse_scalar(kind, parse_collective_kind);
  if (!issued_per_region(g.kind)) {
    kind.fail("only all_reduce, broadcast and reduce are issued as a group of calls (one a region)");
  }
  g.points = parse_points(m.get("points"), "group bytes", true);
  m.finish();
  return g;
}

GemmTiming parse_gemm(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  GemmTiming g;
  g.tokens = m.get("tokens").as_positive_int();
  g.in_features = m.get("in").as_positive_int();
  g.out_features = m.get("out").as_positive_int();
  g.forward_s = m.get("forward_s").as_positive_double();
  g.backward_s = m.get("backward_s").as_positive_double();
  m.finish();
  return g;
}

AttentionTiming parse_attention(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  AttentionTiming a;
  a.samples = m.get("samples").as_positive_int();
  a.seq_len = m.get("seq_len").as_positive_int();
  a.heads = m.get("heads").as_positive_int();
  const YamlValue kv = m.get("kv_heads");
  a.kv_heads = kv.as_positive_int();
  if (a.heads % a.kv_heads != 0) kv.fail("must divide heads (" + std::to_string(a.heads) + ")");
  a.head_dim = m.get("head_dim").as_positive_int();
  a.forward_s = m.get("forward_s").as_positive_double();
  a.backward_s = m.get("backward_s").as_positive_double();
  m.finish();
  return a;
}

template <typename T, typename Parse>
std::vector<T> parse_list(const YamlValue& v, Parse parse) {
  std::vector<T> out;
  for (const auto& item : v.items()) out.push_back(parse(item));
  return out;
}

ForwardBackwardTable parse_forward_backward_section(const YamlValue& v) {
  require_unique_keys(v);
  YamlMap m(v);
  ForwardBackwardTable t;
  t.source = m.get("source").as_nonempty_string();
  if (auto x = m.find("elementwise_GBps")) t.elementwise_GBps = x->as_positive_double();
  if (auto x = m.find("gemm")) {
    t.gemm = parse_list<GemmTiming>(*x, parse_gemm);
    require_distinct(x->items(), t.gemm, [](const auto& a, const auto& b) {
      return std::tie(a.tokens, a.in_features, a.out_features) == std::tie(b.tokens, b.in_features, b.out_features);
    });
  }
  if (auto x = m.find("attention")) {
    t.attention = parse_list<AttentionTiming>(*x, parse_attention);
    require_distinct(x->items(), t.attention, [](const auto& a, const auto& b) {
      return std::tie(a.samples, a.seq_len, a.heads, a.kv_heads, a.head_dim) ==
             std::tie(b.samples, b.seq_len, b.heads, b.kv_heads, b.head_dim);
    });
  }
  if (auto x = m.find("layers")) t.layers = parse_layer_timings(*x);
  if (auto x = m.find("host_floor")) t.host_floor = parse_host_floors(*x);
  m.finish();
  return t;
}


void emit_measurement(YAML::Emitter& out, const NsMeasurement& e) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "rows" << YAML::Value << e.rows;
  out << YAML::Key << "cols" << YAML::Value << e.cols;
  out << YAML::Key << "kernel" << YAML::Value << std::string(to_string(e.kernel));
  out << YAML::Key << "dtype" << YAML::Value << std::string(to_string(e.dtype));
  out << YAML::Key << "steps" << YAML::Value << e.steps;
  if (!e.restarts.empty()) out << YAML::Key << "restarts" << YAML::Value << YAML::Flow << e.restarts;
  out << YAML::Key << "batch" << YAML::Value << e.batch;
  out << YAML::Key << "seconds" << YAML::Value << number_text(e.seconds);
  out << YAML::EndMap;
}

void emit_curve(YAML::Emitter& out, const SizeCurve& c) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& [x, s] : c.points) out << YAML::Flow << YAML::BeginSeq << number_text(x) << number_text(s) << YAML::EndSeq;
  out << YAML::EndSeq;
}

// key: value pairs of one flow mapping; values already as text (numbers) or plain strings.
void emit_flow_map(YAML::Emitter& out, const std::vector<std::pair<const char*, std::string>>& pairs) {
  out << YAML::Flow << YAML::BeginMap;
  for (const auto& [k, v] : pairs) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
}

void emit_provenance_and_curves(YAML::Emitter& out, const CalibrationTable& t) {
  if (!t.commit.empty()) out << YAML::Key << "commit" << YAML::Value << YAML::DoubleQuoted << t.commit;
  if (!t.date.empty()) out << YAML::Key << "date" << YAML::Value << YAML::DoubleQuoted << t.date;
  if (!t.machine.empty()) out << YAML::Key << "machine" << YAML::Value << YAML::DoubleQuoted << t.machine;
  for (const auto& [key, value] : {std::pair<const char*, const std::optional<double>*>{"launch_overhead_us", &t.launch_overhead_us},
                                   {"executor_issue_us", &t.executor_issue_us},
                                   {"collective_step_overhead_us", &t.collective_step_overhead_us},
                                   {"local_collective_step_overhead_us", &t.local_collective_step_overhead_us},
                                   {"adamw_fused_issue_us", &t.adamw_fused_issue_us},
                                   {"adamw_fused_vs_curve", &t.adamw_fused_vs_curve},
                                   {"compute_slowdown_beside_nccl", &t.compute_slowdown_beside_nccl},
                                   {"collective_slowdown_beside_compute", &t.collective_slowdown_beside_compute}}) {
    if (*value) out << YAML::Key << key << YAML::Value << number_text(**value);
  }
  const auto& c = t.elementwise_curves;
  if (c != ElementwiseCurves{}) {
    out << YAML::Key << "elementwise_curves" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, curve] : {std::pair<const char*, const SizeCurve*>{"momentum", &c.momentum},
                                      {"muon_update", &c.muon_update}, {"adamw", &c.adamw}, {"copy", &c.copy}}) {
      if (curve->empty()) continue;
      out << YAML::Key << name << YAML::Value;
      emit_curve(out, *curve);
    }
    out << YAML::EndMap;
  }
  if (!t.local_grouped_calls.empty()) {
    out << YAML::Key << "local_grouped_calls" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : t.local_grouped_calls) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << std::string(to_string(g.kind));
      out << YAML::Key << "points" << YAML::Value;
      emit_curve(out, SizeCurve{g.points});
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (t.collectives.empty()) return;
  out << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
  for (const auto& k : t.collectives) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << std::string(to_string(k.kind));
    out << YAML::Key << "ranks" << YAML::Value << k.ranks << YAML::Key << "nodes" << YAML::Value << k.nodes;
    out << YAML::Key << "points" << YAML::Value;
    emit_curve(out, k.curve);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit_forward_backward(YAML::Emitter& out, const ForwardBackwardTable& t) {
  out << YAML::Key << "forward_backward" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << t.source;
  if (t.elementwise_GBps) out << YAML::Key << "elementwise_GBps" << YAML::Value << number_text(*t.elementwise_GBps);
  const auto n = [](long x) { return std::to_string(x); };
  if (!t.gemm.empty()) {
    out << YAML::Key << "gemm" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : t.gemm) {
      emit_flow_map(out, {{"tokens", n(g.tokens)}, {"in", n(g.in_features)}, {"out", n(g.out_features)},
                          {"forward_s", number_text(g.forward_s)}, {"backward_s", number_text(g.backward_s)}});
    }
    out << YAML::EndSeq;
  }
  if (!t.attention.empty()) {
    out << YAML::Key << "attention" << YAML::Value << YAML::BeginSeq;
    for (const auto& a : t.attention) {
      emit_flow_map(out, {{"samples", n(a.samples)}, {"seq_len", n(a.seq_len)}, {"heads", n(a.heads)},
                          {"kv_heads", n(a.kv_heads)}, {"head_dim", n(a.head_dim)},
                          {"forward_s", number_text(a.forward_s)}, {"backward_s", number_text(a.backward_s)}});
    }
    out << YAML::EndSeq;
  }
  emit_layer_timings(out, t.layers);
  emit_host_floors(out, t.host_floor);
  out << YAML::EndMap;
}

}  // namespace

std::string number_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

ForwardBackwardTable parse_forward_backward(const YamlValue& section) { return parse_forward_backward_section(section); }

CalibrationTable parse_calibration(const YamlValue& root) {
  require_unique_keys(root);
  YamlMap m(root);
  CalibrationTable t;
  t.gpu = m.get("gpu").as_nonempty_string();
  t.source = m.get("source").as_string();
  t.gemm_tflops = m.get("gemm_tflops").as_positive_double();
  t.hbm_GBps = m.get("hbm_GBps").as_positive_double();
  const YamlValue ns = m.get("ns");
  t.ns = parse_list<NsMeasurement>(ns, parse_measurement);
  require_distinct(ns.items(), t.ns, same_measurement);
  if (auto v = m.find("elementwise")) t.elementwise = parse_elementwise(*v);
  if (auto v = m.find("commit")) t.commit = v->as_nonempty_string();
  if (auto v = m.find("date")) t.date = v->as_nonempty_string();
  if (auto v = m.find("machine")) t.machine = v->as_nonempty_string();
  if (auto v = m.find("launch_overhead_us")) t.launch_overhead_us = v->as_positive_double();
  if (auto v = m.find("executor_issue_us")) t.executor_issue_us = v->as_positive_double();
  if (auto v = m.find("collective_step_overhead_us")) t.collective_step_overhead_us = v->as_nonnegative_double();
  if (auto v = m.find("local_collective_step_overhead_us")) {
    t.local_collective_step_overhead_us = v->as_nonnegative_double();
  }
  if (auto v = m.find("local_grouped_calls")) {
    t.local_grouped_calls = parse_list<LocalGroupedCalls>(*v, parse_grouped_calls);
    require_distinct(v->items(), t.local_grouped_calls, [](const auto& a, const auto& b) { return a.kind == b.kind; });
  }
  if (auto v = m.find("adamw_fused_issue_us")) t.adamw_fused_issue_us = v->as_nonnegative_double();
  if (auto v = m.find("adamw_fused_vs_curve")) t.adamw_fused_vs_curve = v->as_positive_double();
  if (auto v = m.find("compute_slowdown_beside_nccl")) t.compute_slowdown_beside_nccl = v->as_nonnegative_double();
  if (auto v = m.find("collective_slowdown_beside_compute")) {
    t.collective_slowdown_beside_compute = v->as_nonnegative_double();
  }
  if (auto v = m.find("elementwise_curves")) t.elementwise_curves = parse_elementwise_curves(*v);
  if (auto v = m.find("collectives")) {
    t.collectives = parse_list<CollectiveCurve>(*v, parse_collective);
    require_distinct(v->items(), t.collectives, [](const auto& a, const auto& b) {
      return std::tie(a.kind, a.ranks, a.nodes) == std::tie(b.kind, b.ranks, b.nodes);
    });
  }
  if (auto v = m.find("forward_backward")) t.forward_backward = parse_forward_backward_section(*v);
  m.finish();
  return t;
}

CalibrationTable load_calibration(const std::string& file) {
  return parse_calibration(YamlValue::load_file(file));
}

std::string calibration_to_yaml(const CalibrationTable& t) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "gpu" << YAML::Value << t.gpu;
  out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << t.source;
  out << YAML::Key << "gemm_tflops" << YAML::Value << number_text(t.gemm_tflops);
  out << YAML::Key << "hbm_GBps" << YAML::Value << number_text(t.hbm_GBps);
  out << YAML::Key << "ns" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : t.ns) emit_measurement(out, e);
  out << YAML::EndSeq;
  const auto& r = t.elementwise;
  if (r.momentum_GBps || r.update_GBps || r.adamw_GBps) {
    out << YAML::Key << "elementwise" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (r.momentum_GBps) out << YAML::Key << "momentum_GBps" << YAML::Value << number_text(*r.momentum_GBps);
    if (r.update_GBps) out << YAML::Key << "update_GBps" << YAML::Value << number_text(*r.update_GBps);
    if (r.adamw_GBps) out << YAML::Key << "adamw_GBps" << YAML::Value << number_text(*r.adamw_GBps);
    out << YAML::EndMap;
  }
  emit_provenance_and_curves(out, t);
  if (t.forward_backward) emit_forward_backward(out, *t.forward_backward);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void save_calibration(const CalibrationTable& table, const std::string& file) {
  const std::string text = calibration_to_yaml(table);
  std::ofstream f(file, std::ios::binary);
  if (!f) throw Error(file + ": cannot open for writing");
  f << text;
  if (!f.flush()) throw Error(file + ": write failed");
}

}  // namespace dmuon
