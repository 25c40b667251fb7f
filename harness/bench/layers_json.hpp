// Reading the forward/backward measurements harness/tools/measure_layers.py writes (JSON) into
// the calibration's ForwardBackwardTable, for `dmuon-bench calibrate --layers-json FILE`.
#pragma once
#include <string>

#include "core/cost/calibration.hpp"

namespace dmuon::bench {

// Format (every key required, no other key; lists may be empty):
//   {"source": str, "elementwise_GBps": number > 0,
//    "gemm": [{"tokens", "in", "out": int > 0, "forward_s", "backward_s": number > 0}],
//    "attention": [{"samples", "seq_len", "heads", "kv_heads", "head_dim": int > 0, "forward_s", "backward_s"}],
//    "layers": [{"model": str, "part": "block" | "embedding" | "head", "micro_batch", "seq_len": int > 0,
//                "forward_s", "backward_s"}]}
// Read by core/cost/calibration's forward_backward reader (JSON is YAML), so two entries for one
// measurement are refused as in a calibration file. Throws dmuon::Error "<file>:<line>: <field>:
// <what is wrong>" (e.g. "fb.json:3: gemm[2].forward_s: must be > 0, got -1") for an unreadable
// file, bad JSON, a missing, unknown, repeated or malformed field.
ForwardBackwardTable load_layers_json(const std::string& file);

}  // namespace dmuon::bench
