#include "harness/verify/cuda_checks.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include <Eigen/SVD>

#include "core/optimizer/ns_rounding.hpp"
#include "core/error.hpp"
#include "core/io/npy.hpp"
#include "core/optimizer/optimizer_yaml.hpp"
#include "core/io/yaml_reader.hpp"
#include "harness/verify/golden.hpp"
#include "harness/verify/gpu_ns.hpp"
#include "harness/verify/ns_checks.hpp"
#include "harness/verify/test_matrices.hpp"
#include "kernels/cuda/device_query.hpp"
#include "reference/newton_schulz.hpp"

namespace dmuon::verify {
namespace {

using cuda::NsImpl;
using ref::Rounding;

// One engine for the whole run: graphs and tuned winners are reused across cases.
cuda::NsEngine& engine() {
  static cuda::NsEngine e;
  return e;
}

void require_gpu() {
  const std::string reason = cuda::no_device_reason();
  if (!reason.empty()) throw Error("--backend cuda: " + reason);
}

NsConfig variant_of(NsConfig ns, NsImpl impl) {
  ns.variant = cuda::kernel_family(impl) == NsKernel::gram ? NsVariant::gram : NsVariant::standard;
  if (ns.variant == NsVariant::gram && ns.restarts.empty() && ns.steps > 2) ns.restarts = {2};
  return ns;
}

double condition_number(const Eigen::MatrixXd& g) {
  const Eigen::VectorXd s = Eigen::BDCSVD<Eigen::MatrixXd>(g).singularValues();
  const double smallest = s(s.size() - 1);
  return smallest > 0 ? s(0) / smallest : INFINITY;
}

struct Shape {
  std::string label;
  long rows, cols;
  bool ill_conditioned;
};

std::vector<Shape> suite_shapes(bool full) {
  std::vector<Shape> s = {{"square-64x64", 64, 64, false},        {"tall-96x48", 96, 48, false},
                          {"wide-48x96", 48, 96, false},          {"row-1x37", 1, 37, false},
                          {"column-29x1", 29, 1, false},          {"primes-37x53", 37, 53, false},
                          {"ill-conditioned-80x120", 80, 120, true}, {"mlp-class-512x1376", 512, 1376, false},
                          {"tall-1024x384", 1024, 384, false}};
  if (full) s.push_back({"mlp-2048x5504", 2048, 5504, false});
  return s;
}

// GPU NS of one input under one preset, for each implementation the engine offers: against the
// reference that rounds where the GPU stores (twice the rounding tolerance: both sides round,
// in different orders) and against exact double (one rounding tolerance, as the reference's own
// emulated result must meet).
std::vector<CaseResult> run_shape(const Shape& shape, const std::string& preset, std::uint64_t seed) {
  require_gpu();
  const Eigen::MatrixXd g = shape.ill_conditioned ? conditioned_matrix(shape.rows, shape.cols, 1e-4, seed)
                                                  : gaussian_matrix(shape.rows, shape.cols, seed);
  const double kappa = condition_number(g);
  const double scale = ref::polar_factor(g).norm();
  const NsConfig base = optimizer_preset(preset).muon.ns;
  std::vector<CaseResult> out;
  for (NsImpl impl : cuda::candidate_impls(base, shape.rows, shape.cols)) {
    const NsConfig ns = variant_of(base, impl);
    const std::string name = "cuda/ns/" + shape.label + "/" + preset + "/" + std::string(cuda::to_string(impl));
    std::vector<Eigen::MatrixXd> got;
    try {
      got = gpu_newton_schulz(engine(), {g}, ns, impl, DType::fp32);
    } catch (const Error& e) {
      if ((impl == NsImpl::symmetric_lt || impl == NsImpl::symmetric_sm90 || impl == NsImpl::gram_sm90) &&
          std::string(e.what()).find("not available") != std::string::npos) {
        continue;  // no fill-mode algorithm / no sm_90a kernel for this geometry: nothing to verify
      }
      throw;
    }
    const double tol = ns_rounding_tolerance(ns, kappa);
    auto emu = compare_scaled(name + "/vs-emulate", got[0], ref::newton_schulz(g, ns, Rounding::emulate), scale,
                              "rel_polar", 2 * tol);
    emu.detail = "2 x rounding tolerance; kappa " + std::to_string(kappa);
    out.push_back(emu);
    // The reference's own emulated result meets 1 x tol against exact double; the GPU rounds at
    // the same points but accumulates in fp32 instead of double: half a tolerance more.
    auto dbl = compare_scaled(name + "/vs-double", got[0], ref::newton_schulz(g, ns, Rounding::exact), scale,
                              "rel_polar", 1.5 * tol);
    dbl.detail = "1.5 x rounding tolerance";
    out.push_back(dbl);
  }
  return out;
}

// A batch of 3 equals three single calls, and the non-finite policies name or skip the bad one.
std::vector<CaseResult> run_batch_and_non_finite(std::uint64_t seed) {
  require_gpu();
  const NsConfig ns = optimizer_preset("torch").muon.ns;
  std::vector<Eigen::MatrixXd> mats;
  for (int i = 0; i < 3; ++i) mats.push_back(gaussian_matrix(256, 640, seed + i));
  const auto batched = gpu_newton_schulz(engine(), mats, ns, NsImpl::standard, DType::fp32);
  std::vector<CaseResult> out;
  for (int i = 0; i < 3; ++i) {
    const auto single = gpu_newton_schulz(engine(), {mats[i]}, ns, NsImpl::standard, DType::fp32);
    out.push_back(compare_rel("cuda/batch/256x640x3/matrix" + std::to_string(i), batched[i], single[0],
                              cuda::accuracy_gate(ns) / 4));
  }
  mats[1](7, 11) = NAN;
  CaseResult named;
  named.name = "cuda/non-finite/error-names-matrix";
  named.metric = "message";
  try {
    gpu_newton_schulz(engine(), mats, ns, NsImpl::standard, DType::fp32, {"w.0", "w.1", "w.2"});
    named.detail = "no error for a NaN input";
  } catch (const Error& e) {
    const std::string what = e.what();
    named.passed = what.find("w.1") != std::string::npos && what.find("w.0") == std::string::npos;
    named.detail = what;
  }
  out.push_back(named);
  cuda::NsEngineOptions skip_options;
  skip_options.non_finite = NonfinitePolicy::skip;
  cuda::NsEngine skipping(nullptr, skip_options);
  cuda::NsOutcome outcome;
  const auto skipped = gpu_newton_schulz(skipping, mats, ns, NsImpl::standard, DType::fp32, {}, &outcome);
  CaseResult skip;
  skip.name = "cuda/non-finite/skip-zeroes-only-that-matrix";
  skip.metric = "count";
  skip.passed = outcome.skipped == std::vector<int>{1} && skipped[1].cwiseAbs().maxCoeff() == 0.0 &&
                skipped[0].allFinite() && skipped[2].allFinite() && skipped[0].norm() > 1.0;
  skip.detail = "skipped " + std::to_string(outcome.skipped.size()) + " matrices";
  out.push_back(skip);
  return out;
}

Eigen::MatrixXd read_matrix(const std::filesystem::path& path) {
  const NpyArray a = read_npy(path.string());
  if (a.shape.size() != 2) throw Error(path.string() + ": expected a 2-D array");
  Eigen::MatrixXd m(a.shape[0], a.shape[1]);
  for (long r = 0; r < m.rows(); ++r) {
    for (long c = 0; c < m.cols(); ++c) m(r, c) = a.data[static_cast<std::size_t>(r * m.cols() + c)];
  }
  return m;
}

std::vector<CaseResult> run_golden_ns(const std::string& name, const std::filesystem::path& x_path,
                                      const std::filesystem::path& y_path, const NsConfig& ns, double rel,
                                      DType output_dtype) {
  require_gpu();
  const Eigen::MatrixXd x = read_matrix(x_path);
  const Eigen::MatrixXd y_torch = read_matrix(y_path);
  const Eigen::MatrixXd exact = ref::newton_schulz(x, ns, Rounding::exact);
  std::vector<CaseResult> out;
  const double torch_error = (y_torch - exact).norm() / exact.norm();
  // The peer's algorithm: Gram cases (DMuon) run the engine's Gram path only; standard NS (and
  // `automatic`, which picked it on every DMuon case on an H100, 2026-11-23) rounds elsewhere:
  // 1.6e-2 from DMuon's result on its 1x40 case.
  const std::vector<NsImpl> impls = ns.variant == NsVariant::gram ? std::vector<NsImpl>{NsImpl::gram}
                                                                   : std::vector<NsImpl>{NsImpl::standard, NsImpl::automatic};
  for (NsImpl impl : impls) {
    const std::string label = name + "/" + std::string(cuda::to_string(impl));
    auto got = gpu_newton_schulz(engine(), {x}, ns, impl, DType::fp32);
    ref::round_in_place(got[0], output_dtype);  // the peer's final cast (golden.cpp does the same)
    out.push_back(compare_rel(label + "/vs-torch", got[0], y_torch, rel));
    auto err = compare_rel(label + "/error-vs-double-not-above-torch", got[0], exact,
                           peer_error_margin(x.size()) * torch_error);
    err.detail = "torch's own error vs double " + std::to_string(torch_error) + ", ours " + std::to_string(err.error);
    out.push_back(err);
  }
  return out;
}

}  // namespace

std::vector<VerifyCase> cuda_builtin_cases(bool full, std::uint64_t seed) {
  require_gpu();
  std::vector<VerifyCase> cases;
  for (const auto& shape : suite_shapes(full)) {
    for (const auto& preset : preset_names()) {
      const std::uint64_t s = seed++;
      cases.push_back({"cuda/ns/" + shape.label + "/" + preset, [=] { return run_shape(shape, preset, s); }});
    }
  }
  const std::uint64_t s = seed++;
  cases.push_back({"cuda/batch-and-non-finite", [=] { return run_batch_and_non_finite(s); }});
  return cases;
}

std::vector<VerifyCase> cuda_golden_cases(const std::string& dir) {
  require_gpu();
  const std::filesystem::path root(dir);
  const std::string manifest = (root / "manifest.json").string();
  // Parsed with the strict YAML reader (JSON is YAML) for line-numbered errors, as golden.cpp does.
  const YamlValue doc = YamlValue::load_file(manifest);
  std::vector<VerifyCase> cases;
  for (const auto& item_value : YamlMap(doc).get("cases").items()) {
    const YamlMap item(item_value);
    if (item.get("kind").as_string() != "ns") continue;
    NsConfig ns = optimizer_preset("torch").muon.ns;
    parse_ns_config(item.get("ns"), ns);
    // The engine runs fused epilogues only; separate-op cases (DMuon's direct NS) are the CPU
    // reference's (golden.cpp).
    if (ns.products != NsProducts::fused) continue;
    const std::string name = "cuda/golden/" + item.get("name").as_string();
    const auto x = root / YamlMap(item.get("inputs")).get("X").as_string();
    const auto y = root / YamlMap(item.get("expected")).get("Y").as_string();
    const double rel = YamlMap(item.get("tolerance")).get("rel").as_double();
    DType output_dtype = DType::fp64;
    if (auto v = item.find("output_dtype")) output_dtype = parse_scalar(*v, parse_dtype);
    cases.push_back({name, [=] { return run_golden_ns(name, x, y, ns, rel, output_dtype); }});
  }
  if (cases.empty()) throw Error(manifest + ": no ns cases for --backend cuda");
  return cases;
}

}  // namespace dmuon::verify
