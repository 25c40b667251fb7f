#include "harness/verify/golden.hpp"

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <memory>

#include "core/optimizer/dtype.hpp"
#include "core/error.hpp"
#include "core/io/npy.hpp"
#include "core/optimizer/optimizer_yaml.hpp"
#include "core/io/yaml_reader.hpp"
#include "reference/adamw_step.hpp"
#include "reference/muon_step.hpp"
#include "reference/newton_schulz.hpp"

namespace dmuon::verify {
namespace {

using ref::Rounding;

struct Tolerance {
  double rel = 0;
  double state_rel = 0;  // momentum / exp_avg / exp_avg_sq; defaults to rel
  // ns: also require our error against exact double NS to be at most peer_error_margin times the
  // expected output's own (the criterion for inputs on which the low-precision NS is chaotic).
  bool error_vs_double_not_above_expected = false;
};

// A 1-D array becomes an n x 1 column; 2-D keeps its shape (C order).
Eigen::MatrixXd to_matrix(const NpyArray& a, const YamlValue& where) {
  if (a.shape.size() > 2 || a.shape.empty()) {
    where.fail("expected a 1-D or 2-D array, found rank " + std::to_string(a.shape.size()));
  }
  const long rows = static_cast<long>(a.shape[0]);
  const long cols = a.shape.size() == 2 ? static_cast<long>(a.shape[1]) : 1;
  Eigen::MatrixXd m(rows, cols);
  for (long r = 0; r < rows; ++r) {
    for (long c = 0; c < cols; ++c) m(r, c) = a.data[static_cast<std::size_t>(r * cols + c)];
  }
  return m;
}

class CaseReader {
 public:
  CaseReader(std::string dir, const YamlValue& value) : dir_(std::move(dir)), map_(value) {}

  Eigen::MatrixXd tensor(const YamlValue& file_entry) const {
    const std::string path = (std::filesystem::path(dir_) / file_entry.as_string()).string();
    NpyArray array;
    try {
      array = read_npy(path);
    } catch (const Error& e) {
      file_entry.fail(e.what());  // the manifest entry, then the .npy problem
    }
    return to_matrix(array, file_entry);
  }
  std::vector<Eigen::MatrixXd> tensors(const YamlValue& list) const {
    std::vector<Eigen::MatrixXd> out;
    for (const auto& item : list.items()) out.push_back(tensor(item));
    if (out.empty()) list.fail("needs at least one file");
    return out;
  }
  Tolerance tolerance() const {
    YamlMap t(map_.get("tolerance"));
    Tolerance tol;
    tol.rel = t.get("rel").as_positive_double();
    tol.state_rel = tol.rel;
    if (auto v = t.find("state_rel")) tol.state_rel = v->as_positive_double();
    if (auto v = t.find("momentum_rel")) tol.state_rel = v->as_positive_double();
    if (auto v = t.find("error_vs_double_not_above_expected")) tol.error_vs_double_not_above_expected = v->as_bool();
    t.finish();
    return tol;
  }
  const YamlMap& map() const { return map_; }

 private:
  std::string dir_;
  YamlMap map_;
};

void check_same_count(const YamlValue& a, std::size_t na, std::size_t nb) {
  if (na != nb) a.fail(std::to_string(na) + " expected weights for " + std::to_string(nb) + " gradients");
}

VerifyCase ns_case(const std::string& name, const CaseReader& c) {
  NsConfig ns = optimizer_preset("torch").muon.ns;
  parse_ns_config(c.map().get("ns"), ns);
  OptimizerConfig whole = optimizer_preset("torch");
  whole.muon.ns = ns;
  try {
    whole.validate();
  } catch (const Error& e) {
    c.map().get("ns").fail_at(e.what());
  }
  YamlMap inputs(c.map().get("inputs")), expected(c.map().get("expected"));
  const auto x = c.tensor(inputs.get("X"));
  const auto y = c.tensor(expected.get("Y"));
  inputs.finish();
  expected.finish();
  const auto tol = c.tolerance();
  // The dtype the peer returned its result in (DMuon returns the input's, e.g. bf16): the
  // reference's compute-dtype result is rounded to it as the peer's final cast does.
  DType output_dtype = DType::fp64;
  if (auto v = c.map().find("output_dtype")) output_dtype = parse_scalar(*v, parse_dtype);
  return {name, [=] {
            Eigen::MatrixXd ours = ref::newton_schulz(x, ns, Rounding::emulate);
            ref::round_in_place(ours, output_dtype);
            std::vector<CaseResult> out{compare_rel(name, ours, y, tol.rel)};
            if (tol.error_vs_double_not_above_expected) {
              const Eigen::MatrixXd exact = ref::newton_schulz(x, ns, Rounding::exact);
              const double theirs = (y - exact).norm() / exact.norm();
              auto err = compare_rel(name + "/error-vs-double-not-above-expected", ours, exact,
                                     peer_error_margin(x.size()) * theirs);
              err.detail = "expected output's own error vs double " + std::to_string(theirs);
              out.push_back(err);
            }
            return out;
          }};
}

// What every optimizer-step case holds: the optimizer, W0, the gradients, the expected weights
// after each step, and the expected optimizer-state tensors named by `state_keys` (in order).
struct StepCase {
  OptimizerConfig opt;
  Eigen::MatrixXd w0;
  std::vector<Eigen::MatrixXd> grads, weights, state;
  std::vector<std::string> state_names;
  Tolerance tol;
};

StepCase read_step_case(const CaseReader& c, std::initializer_list<const char*> state_keys) {
  StepCase s;
  s.opt = parse_optimizer(c.map().get("optimizer"));
  YamlMap inputs(c.map().get("inputs")), expected(c.map().get("expected"));
  s.w0 = c.tensor(inputs.get("W0"));
  s.grads = c.tensors(inputs.get("grads"));
  s.weights = c.tensors(expected.get("weights"));
  check_same_count(expected.get("weights"), s.weights.size(), s.grads.size());
  for (const char* key : state_keys) {
    s.state.push_back(c.tensor(expected.get(key)));
    s.state_names.emplace_back(key);
  }
  inputs.finish();
  expected.finish();
  s.tol = c.tolerance();
  return s;
}

// Runs the case's steps from W0, comparing the weights after each, then the state tensors
// `state_of(state)` returns (in state_names order) against the expected ones.
template <typename State, typename Step, typename StateOf>
std::vector<CaseResult> run_steps(const std::string& name, const StepCase& s, Step step, StateOf state_of) {
  State state;
  Eigen::MatrixXd w = s.w0;
  std::vector<CaseResult> out;
  for (std::size_t k = 0; k < s.grads.size(); ++k) {
    step(w, s.grads[k], state);
    out.push_back(compare_rel(name + "/W" + std::to_string(k + 1), w, s.weights[k], s.tol.rel));
  }
  const std::vector<Eigen::MatrixXd> got = state_of(state);
  for (std::size_t i = 0; i < s.state.size(); ++i) {
    out.push_back(compare_rel(name + "/" + s.state_names[i], got[i], s.state[i], s.tol.state_rel));
  }
  return out;
}

VerifyCase muon_case(const std::string& name, const CaseReader& c) {
  const StepCase s = read_step_case(c, {"momentum"});
  return {name, [=] {
            return run_steps<ref::MuonState>(
                name, s,
                [&](Eigen::MatrixXd& w, const Eigen::MatrixXd& g, ref::MuonState& st) {
                  ref::muon_step(w, g, st, s.opt.muon, Rounding::emulate, name);
                },
                [](const ref::MuonState& st) { return std::vector<Eigen::MatrixXd>{st.momentum}; });
          }};
}

VerifyCase adamw_case(const std::string& name, const CaseReader& c) {
  const StepCase s = read_step_case(c, {"exp_avg", "exp_avg_sq"});
  return {name, [=] {
            return run_steps<ref::AdamWState>(
                name, s,
                [&](Eigen::MatrixXd& w, const Eigen::MatrixXd& g, ref::AdamWState& st) {
                  ref::adamw_step(w, g, st, s.opt.adamw, Rounding::emulate, name);
                },
                [](const ref::AdamWState& st) { return std::vector<Eigen::MatrixXd>{st.exp_avg, st.exp_avg_sq}; });
          }};
}

VerifyCase parse_case(const std::string& dir, const YamlValue& value) {
  CaseReader c(dir, value);
  const std::string name = "golden/" + c.map().get("name").as_string();
  const std::string kind = c.map().get("kind").as_string();
  c.map().find("notes");
  VerifyCase out;
  if (kind == "ns") out = ns_case(name, c);
  else if (kind == "muon") out = muon_case(name, c);
  else if (kind == "adamw") out = adamw_case(name, c);
  else c.map().get("kind").fail("unknown kind '" + kind + "' (expected ns, muon or adamw)");
  c.map().finish();
  return out;
}

std::vector<VerifyCase> parse_manifest(const YamlValue& root, const std::string& dir) {
  YamlMap m(root);
  const std::string format = m.get("format").as_string();
  if (format != "dmuon-golden-1") m.get("format").fail("unsupported format '" + format + "' (expected dmuon-golden-1)");
  // "created" is the date key of manifests written before the tools shared harness/tools/provenance.py.
  for (const char* info : {"generator", "torch_version", "device", "created", "command", "date", "seed", "notes"}) {
    m.find(info);
  }
  std::vector<VerifyCase> cases;
  for (const auto& item : m.get("cases").items()) cases.push_back(parse_case(dir, item));
  if (cases.empty()) m.get("cases").fail("no cases");
  m.finish();
  return cases;
}

}  // namespace

double peer_error_margin(long elements) { return 1.05 + 3.0 / std::sqrt(static_cast<double>(elements)); }

std::vector<VerifyCase> load_golden_cases(const std::string& dir) {
  const std::string manifest = (std::filesystem::path(dir) / "manifest.json").string();
  if (!std::filesystem::exists(manifest)) throw Error(manifest + ": golden manifest not found");
  return parse_manifest(YamlValue::load_file(manifest), dir);
}

std::vector<VerifyCase> parse_golden_manifest(const std::string& text, const std::string& manifest_name,
                                              const std::string& dir) {
  return parse_manifest(YamlValue::load_string(text, manifest_name), dir);
}

}  // namespace dmuon::verify
