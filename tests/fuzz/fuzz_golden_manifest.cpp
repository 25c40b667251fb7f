// libFuzzer target: the golden manifest reader (harness/verify/golden.hpp). The .npy files an
// input names are read from a scratch folder that LLVMFuzzerInitialize fills with a small array
// for every name tests/golden/torch/manifest.json uses (plus a vector, a scalar and a rank-3
// array), so mutations reach the per-case readers at thousands of runs a second instead of
// parsing the real 1 MB of golden data on every run.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/io/npy.hpp"
#include "fuzz_common.hpp"
#include "harness/verify/golden.hpp"

namespace {

std::string g_dir;

void collect_npy_names(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s.size() > 4 && s.ends_with(".npy")) out.push_back(s);
  }
  if (j.is_structured()) {
    for (const auto& item : j) collect_npy_names(item, out);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_dir = (std::filesystem::temp_directory_path() / ("dmuon-fuzz-golden-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(g_dir);
  std::ifstream in(DMUON_SOURCE_DIR "/tests/golden/torch/manifest.json");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> names;
  collect_npy_names(nlohmann::json::parse(text.str()), names);
  for (const auto& name : names) dmuon::write_npy(g_dir + "/" + name, {2, 3}, {1, -2, 3, -4, 5, -6}, true);
  dmuon::write_npy(g_dir + "/vec.npy", {3}, {1, 2, 3}, false);
  dmuon::write_npy(g_dir + "/scalar.npy", {}, {1}, false);
  dmuon::write_npy(g_dir + "/rank3.npy", {2, 1, 2}, {1, 2, 3, 4}, false);
  dmuon::write_npy(g_dir + "/empty.npy", {0, 3}, {}, false);
  std::atexit([] { std::filesystem::remove_all(g_dir); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = dmuon::fuzz::as_text(data, size);
  dmuon::fuzz::expect_only_errors([&] {
    const auto cases = dmuon::verify::parse_golden_manifest(text, "fuzz-manifest.json", g_dir);
    dmuon::fuzz::require(!cases.empty(), "an accepted manifest has cases");
  });
  return 0;
}
