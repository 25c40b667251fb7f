// External golden cases: a JSON manifest plus .npy tensors, as dumped from PyTorch by
// harness/tools/dump_torch_cases.py or from DMuon by dump_dmuon_cases.py. Format: README.md
// "Golden cases".
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

// Two runs of the same low-precision algorithm that only round in different orders land at equal
// error against exact double up to sampling noise, which shrinks with the element count:
// 1.05 + 3/sqrt(elements) (1.52 for a 1x40 input, 1.07 for 128x128, 1.05 for 768x2048) without
// hiding a worse method. Our error may be at most this times the peer's (torch's, DMuon's).
double peer_error_margin(long elements);

}  // namespace dmuon::verify
