// External golden cases: a JSON manifest plus .npy tensors, as dumped from PyTorch by
// harness/tools/dump_torch_cases.py. Format: README.md "Golden cases".
#pragma once
#include <string>
#include <vector>

#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

// Reads DIR/manifest.json and checks every referenced file exists and parses as .npy now, so
// that a malformed directory fails up front with one message naming the file, line and key.
std::vector<VerifyCase> load_golden_cases(const std::string& dir);

// The same from the manifest's text (`manifest_name` labels errors); the .npy paths it names are
// read relative to `dir`. The fuzzing entry point.
std::vector<VerifyCase> parse_golden_manifest(const std::string& text, const std::string& manifest_name,
                                              const std::string& dir);

}  // namespace dmuon::verify
