// Golden directories: a correct one passes, a wrong expected tensor fails, and a malformed
// manifest or .npy file fails up front with one message naming the file, line and key.
#include <filesystem>
#include <fstream>
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/npy.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "harness/verify/golden.hpp"
#include "harness/verify/test_matrices.hpp"
#include "reference/muon_step.hpp"
#include "reference/newton_schulz.hpp"
#include "test_temp_dir.hpp"

using namespace dmuon;
namespace fs = std::filesystem;

namespace {

std::vector<double> c_order(const Eigen::MatrixXd& m) {
  std::vector<double> out;
  for (long r = 0; r < m.rows(); ++r)
    for (long c = 0; c < m.cols(); ++c) out.push_back(m(r, c));
  return out;
}

void save(const fs::path& p, const Eigen::MatrixXd& m) {
  write_npy(p.string(), {m.rows(), m.cols()}, c_order(m), /*as_float32=*/false);
}

// A directory with one ns case and one muon case whose expected values come from the
// reference itself (float64 files), optionally perturbing the ns output.
fs::path make_golden_dir(const std::string& tag, double perturb, const std::string& manifest_override = "") {
  const fs::path dir = dmuon::test::temp_dir() / ("golden_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const NsConfig ns = optimizer_preset("torch").muon.ns;
  const Eigen::MatrixXd x = verify::gaussian_matrix(12, 20, 5);
  Eigen::MatrixXd y = ref::newton_schulz(x, ns, ref::Rounding::emulate);
  y(0, 0) += perturb;
  save(dir / "x.npy", x);
  save(dir / "y.npy", y);
  MuonConfig mc = optimizer_preset("torch").muon;
  mc.lr = 0.02;
  Eigen::MatrixXd w = verify::gaussian_matrix(12, 20, 6);
  save(dir / "w0.npy", w);
  ref::MuonState st;
  for (int k = 1; k <= 2; ++k) {
    const Eigen::MatrixXd g = verify::gaussian_matrix(12, 20, 10 + k);
    save(dir / ("g" + std::to_string(k) + ".npy"), g);
    ref::muon_step(w, g, st, mc, ref::Rounding::emulate);
    save(dir / ("w" + std::to_string(k) + ".npy"), w);
  }
  save(dir / "m.npy", st.momentum);
  std::ofstream(dir / "manifest.json") << (manifest_override.empty() ? R"({
  "format": "dmuon-golden-1",
  "generator": "tests/test_golden.cpp",
  "cases": [
    {"name": "ns_small", "kind": "ns",
     "ns": {"coefficients": "keller", "steps": 5, "eps": 1e-7, "norm": "clamp", "dtype": "bf16", "normalize_dtype": "bf16"},
     "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1e-12}},
    {"name": "muon_small", "kind": "muon",
     "optimizer": {"preset": "torch", "lr": 0.02},
     "inputs": {"W0": "w0.npy", "grads": ["g1.npy", "g2.npy"]},
     "expected": {"weights": ["w1.npy", "w2.npy"], "momentum": "m.npy"},
     "tolerance": {"rel": 1e-12, "momentum_rel": 1e-12}}
  ]
})" : manifest_override);
  return dir;
}

std::size_t failures(const fs::path& dir) {
  std::size_t failed = 0;
  for (const auto& c : verify::load_golden_cases(dir.string())) {
    for (const auto& r : c.run()) failed += !r.passed;
  }
  return failed;
}

std::string load_error(const fs::path& dir) {
  try {
    verify::load_golden_cases(dir.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a golden directory that matches the reference passes", "[golden]") {
  const auto dir = make_golden_dir("good", 0.0);
  const auto cases = verify::load_golden_cases(dir.string());
  REQUIRE(cases.size() == 2);
  CHECK(failures(dir) == 0);
}

TEST_CASE("a wrong expected tensor fails its check", "[golden]") {
  CHECK(failures(make_golden_dir("perturbed", 1e-3)) == 1);
}

TEST_CASE("malformed manifests fail with file, line and key", "[golden]") {
  struct Case {
    std::string manifest;
    std::vector<std::string> expected;
  };
  const std::string head = R"({"format": "dmuon-golden-1", "cases": [
)";
  const std::vector<Case> cases = {
      {R"({"format": "dmuon-golden-9", "cases": []})", {"manifest.json:1:", "format", "dmuon-golden-9"}},
      {head + R"({"name": "a", "kind": "svd", "tolerance": {"rel": 1}}]})", {"manifest.json:2:", "cases[0].kind", "unknown kind 'svd'"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {"dtype": "bf16"}, "inputs": {"X": "missing.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].inputs.X", "missing.npy"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {"steps": 0}, "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].ns.steps", "[1, 99]"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {}, "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": -1}}]})",
       {"cases[0].tolerance.rel", "must be > 0"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {}, "inputs": {"X": "x.npy", "Z": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].inputs.Z", "unknown key"}},
      {head + R"({"name": "a", "kind": "muon", "optimizer": {"lr": -1}, "inputs": {"W0": "w0.npy", "grads": ["g1.npy"]}, "expected": {"weights": ["w1.npy"], "momentum": "m.npy"}, "tolerance": {"rel": 1}}]})",
       {"optimizer.lr", ">= 0"}},
      {head + R"({"name": "a", "kind": "muon", "optimizer": {}, "inputs": {"W0": "w0.npy", "grads": ["g1.npy", "g2.npy"]}, "expected": {"weights": ["w1.npy"], "momentum": "m.npy"}, "tolerance": {"rel": 1}}]})",
       {"expected.weights", "1 expected weights for 2 gradients"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {"products": "split"}, "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].ns.products", "fused or separate"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {"variant": "gram", "products": "separate"}, "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"optimizer.ns.products", "variant standard only"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {}, "output_dtype": "bf17", "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].output_dtype", "bf17"}},
      {"{\"format\": \"dmuon-golden-1\", \"cases\": [", {"manifest.json", "not valid YAML"}},
      // Found by fuzz_golden_manifest: a name that resolves to the golden folder itself made
      // libstdc++ throw std::ios_failure out of the reader, and /dev/zero would be read forever.
      {head + R"({"name": "a", "kind": "ns", "ns": {}, "inputs": {"X": "."}, "expected": {"Y": "y.npy"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].inputs.X", "not a regular file"}},
      {head + R"({"name": "a", "kind": "ns", "ns": {}, "inputs": {"X": "x.npy"}, "expected": {"Y": "/dev/zero"}, "tolerance": {"rel": 1}}]})",
       {"cases[0].expected.Y", "/dev/zero: not a regular file"}},
  };
  int i = 0;
  for (const auto& c : cases) {
    const auto dir = make_golden_dir("bad" + std::to_string(i++), 0.0, c.manifest);
    const std::string message = load_error(dir);
    INFO("manifest: " << c.manifest << "\nmessage: " << message);
    for (const auto& want : c.expected) CHECK(message.find(want) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("a corrupt .npy file is reported through the manifest entry", "[golden]") {
  const auto dir = make_golden_dir("corrupt", 0.0);
  std::ofstream(dir / "y.npy", std::ios::binary | std::ios::trunc) << "\x93NUMPY garbage";
  const std::string message = load_error(dir);
  CHECK(message.find("cases[0].expected.Y") != std::string::npos);
  CHECK(message.find("y.npy") != std::string::npos);
}

namespace {

// One ns case over x.npy with expected `y`; `extra` holds its ns section, tolerance and the rest.
fs::path one_ns_case(const std::string& tag, const Eigen::MatrixXd& y, const std::string& extra) {
  const auto dir = make_golden_dir(tag, 0.0);
  save(dir / "y.npy", y);
  std::ofstream(dir / "manifest.json", std::ios::trunc) << R"({"format": "dmuon-golden-1", "notes": "top-level notes are free text",
 "cases": [{"name": "ns", "kind": "ns",
  "inputs": {"X": "x.npy"}, "expected": {"Y": "y.npy"}, )" + extra + "}]}";
  return dir;
}

}  // namespace

TEST_CASE("output_dtype rounds the reference's result as the peer's final cast does", "[golden]") {
  NsConfig ns = optimizer_preset("torch").muon.ns;
  ns.compute_dtype = ns.normalize_dtype = DType::fp16;  // the case's section below says fp16
  const Eigen::MatrixXd x = verify::gaussian_matrix(12, 20, 5);
  Eigen::MatrixXd y = ref::newton_schulz(x, ns, ref::Rounding::emulate);
  ref::round_in_place(y, DType::bf16);  // an fp16 result returned as bf16, as DMuon does for bf16 input
  const std::string fp16_section = R"("ns": {"dtype": "fp16", "normalize_dtype": "fp16"}, )";
  CHECK(failures(one_ns_case("out_bf16", y, fp16_section + R"("output_dtype": "bf16", "tolerance": {"rel": 1e-15})")) == 0);
  CHECK(failures(one_ns_case("out_missing", y, fp16_section + R"("tolerance": {"rel": 1e-15})")) == 1);
}

TEST_CASE("error_vs_double_not_above_expected compares our error with the expected output's", "[golden]") {
  const NsConfig ns = optimizer_preset("torch").muon.ns;
  const Eigen::MatrixXd x = verify::gaussian_matrix(12, 20, 5);
  const std::string tol = R"("ns": {}, "tolerance": {"rel": 1, "error_vs_double_not_above_expected": true})";
  // A peer exactly as rounded as we are: equal errors pass.
  CHECK(failures(one_ns_case("peer_same", ref::newton_schulz(x, ns, ref::Rounding::emulate), tol)) == 0);
  // A peer that computed in exact double: ours (bf16) is worse, the check fails.
  const auto dir = one_ns_case("peer_exact", ref::newton_schulz(x, ns, ref::Rounding::exact), tol);
  std::vector<std::string> failed;
  for (const auto& c : verify::load_golden_cases(dir.string())) {
    for (const auto& r : c.run()) {
      if (!r.passed) failed.push_back(r.name);
    }
  }
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].find("error-vs-double-not-above-expected") != std::string::npos);
}
