// Bad input ends in one dmuon::Error naming the file, line and key, never in a crash, a hang, an
// out-of-memory kill or a silent wrap-around. Each case here is an input the fuzzers
// (tests/fuzz) found, or one of the classes they run into; reports/reliability.md lists them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/cost/calibration.hpp"
#include "core/error.hpp"
#include "core/cost/mesh.hpp"
#include "core/model/model_yaml.hpp"
#include "core/io/npy.hpp"
#include "core/optimizer/optimizer_yaml.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"
#include "error_message.hpp"
#include "harness/verify/golden.hpp"

using namespace dmuon;
using dmuon::test::error_of;

namespace {

std::string scenario_error(const std::string& text) {
  return error_of([&] { parse_scenario(text, std::string(DMUON_SOURCE_DIR) + "/scenarios/test.yaml"); });
}

std::string model_error(const std::string& text) {
  return error_of([&] { route_parameters(parse_model(YamlValue::load_string(text, "m.yaml")), {}); });
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kTinyModel = "name: t\ntransformer: {hidden: 8, layers: 1, heads: 2, ffn: 16}\n";

}  // namespace

TEST_CASE("fuzz find: a model path too long for the file system is an error, not filesystem_error",
          "[reliability][fuzz]") {
  // fuzz_scenario crash: std::filesystem::exists threw filesystem_error (ENAMETOOLONG) through
  // the loader, which only catches dmuon::Error, so dmuon-sim would have aborted.
  const std::string text = "name: x\nmodel: " + std::string(5000, 'a') + ".yaml\n";
  CHECK_THAT(scenario_error(text), Catch::Contains("test.yaml:2: model: model file '"));
  CHECK_THAT(scenario_error(text), Catch::Contains("' does not exist"));
}

TEST_CASE("fuzz find: invalid UTF-8 is refused where it is read, so a saved file reads back the same",
          "[reliability][fuzz]") {
  // fuzz_calibration property failure: a `source:` with byte 0xCA loaded, and save_calibration
  // wrote U+FFFD for it (yaml-cpp's emitter), so the round trip changed the table.
  const std::string text = "gpu: h100-sxm\nsource: \"d\xCA\xCAmuon\"\ngemm_tflops: 1\nhbm_GBps: 1\nns: []\n";
  CHECK(error_of([&] { parse_calibration(YamlValue::load_string(text, "cal.yaml")); }) ==
        "cal.yaml:2: not valid YAML: invalid UTF-8 at byte 24");
  // Overlong, surrogate and out-of-range forms, and a truncated sequence at the end.
  for (const std::string bad : {"a: \xC0\xAF", "a: \xED\xA0\x80", "a: \xF4\x90\x80\x80", "a: \xE2\x82"}) {
    CHECK_THAT(error_of([&] { YamlValue::load_string(bad, "u.yaml"); }),
               Catch::Contains("u.yaml:1: not valid YAML: invalid UTF-8 at byte 3"));
  }
  // Well-formed multi-byte text is kept as is.
  CHECK(YamlMap(YamlValue::load_string("a: \"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"", "u.yaml")).get("a").as_string() ==
        "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST_CASE("a device, a fifo or a folder given as a file is refused instead of read forever", "[reliability]") {
  CHECK(error_of([] { load_model_file("/dev/zero"); }) == "/dev/zero: not a regular file");
  CHECK(error_of([] { load_calibration("/dev/zero"); }) == "/dev/zero: not a regular file");
  const std::string dir = std::string(DMUON_SOURCE_DIR) + "/scenarios";
  CHECK(error_of([&] { load_model_file(dir); }) == dir + ": not a regular file");
  CHECK_THAT(scenario_error("name: x\nmodel: /dev/zero\n"), Catch::Contains("/dev/zero: not a regular file"));
}

TEST_CASE("integers that do not fit their field are errors, not wrapped around", "[reliability]") {
  // restarts are ints: 4294967298 used to become 2 and pass validation.
  CHECK(error_of([] {
          parse_optimizer(YamlValue::load_string("ns: {variant: gram, restarts: [4294967298]}", "o.yaml"));
        }) == "o.yaml:1: ns.restarts[0]: integer out of range: '4294967298'");
  CHECK_THAT(error_of([] {
               parse_calibration(YamlValue::load_string(
                   "gpu: h200\nsource: s\ngemm_tflops: 1\nhbm_GBps: 1\nns:\n  - {rows: 2, cols: 2, kernel: gram, "
                   "dtype: fp16, steps: 5, restarts: [-4294967294], batch: 1, seconds: 1}\n",
                   "c.yaml"));
             }),
             Catch::Contains("c.yaml:6: ns[0].restarts[0]: integer out of range"));
  CHECK(model_error("name: m\nparams: [{name: w, shape: [2, 2], layer: 4294967296}]") ==
        "m.yaml:2: params[0].layer: integer out of range: '4294967296'");
  CHECK(model_error("name: m\nparams: [{name: w, shape: [2, 2], layer: -2}]") ==
        "m.yaml:2: params[0].layer: must be >= 0, or -1 outside the transformer blocks");
}

TEST_CASE("model sizes that would exhaust memory or overflow are refused with the field", "[reliability]") {
  CHECK(model_error("name: m\ntransformer: {hidden: 8, layers: 100000000, heads: 2, ffn: 16}") ==
        "m.yaml:2: transformer.layers: 100000000 is above the supported 4096");
  CHECK(model_error("name: m\ntransformer: {hidden: 8, layers: 1, heads: 2, ffn: 16, vocab: 2199023255552}") ==
        "m.yaml:2: transformer.vocab: 2199023255552 is above the supported 1073741824");
  // Each size within the limit, their products beyond int64: the element-count check names it.
  CHECK_THAT(model_error("name: m\ntransformer: {hidden: 1073741824, layers: 1, heads: 1073741824, "
                         "head_dim: 1073741824, ffn: 16}"),
             Catch::Contains("element count overflows 64 bits"));
  // An expert count that would make a billion Muon matrices.
  CHECK(model_error("name: m\nparams: [{name: e, shape: [1000000000, 2, 2]}]") ==
        "routing: parameter 'e' brings the Muon matrices to more than 1000000, the supported maximum");
  CHECK_NOTHROW(route_parameters(parse_model(YamlValue::load_string(kTinyModel, "m.yaml")), {}));
}

TEST_CASE("a mesh whose rank count does not fit an int is refused", "[reliability]") {
  CHECK(error_of([] { make_mesh(65536, 65536, "cluster"); }) ==
        "cluster: 65536x65536 ranks is more than 2147483647");
  CHECK(make_mesh(2, 8, "cluster").world() == 16);
}

TEST_CASE("every prefix of every shipped scenario, model and golden file loads or fails cleanly",
          "[reliability]") {
  // A deterministic slice of what the fuzzers do, run in every CI build: cut each seed file at
  // many points and load it with every loader that takes such a file (the fuzzers' seed folders).
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"/scenarios", "/tests/golden", "/tests/data"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(DMUON_SOURCE_DIR) + dir)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 5);
  const std::string scenario_name = std::string(DMUON_SOURCE_DIR) + "/scenarios/prefix.yaml";
  const std::string golden_dir = std::string(DMUON_SOURCE_DIR) + "/tests/golden/torch";
  long loads = 0;
  for (const auto& f : files) {
    INFO(f.string());
    const std::string text = read_file(f);
    const std::size_t step = std::max<std::size_t>(1, text.size() / 40);
    for (std::size_t cut = 0; cut <= text.size(); cut += step) {
      const std::string prefix = text.substr(0, cut);
      error_of([&] { parse_scenario(prefix, scenario_name); });
      error_of([&] { parse_model(YamlValue::load_string(prefix, "m.yaml")); });
      error_of([&] { parse_calibration(YamlValue::load_string(prefix, "c.yaml")); });
      error_of([&] { parse_npy(prefix, "p.npy"); });
      if (f.extension() == ".json") error_of([&] { verify::parse_golden_manifest(prefix, "m.json", golden_dir); });
      ++loads;
    }
  }
  CHECK(loads > 100);
}
