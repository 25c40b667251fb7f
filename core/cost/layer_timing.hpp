// forward_backward.layers of a calibration file: pieces of a real model timed on its own code
// (harness/tools/measure_layers.py), and the run of the whole model they add up to.
//   layers:
//     - {model: qwen2.5-3b, part: block, micro_batch: 2, seq_len: 2048, forward_s: .., backward_s: ..}
//     - {model: qwen2.5-3b, part: whole, layers: 36, micro_batch: 2, seq_len: 2048, forward_s: .., backward_s: ..}
// part: block (one decoder layer), embedding, head (final norm + LM head + loss), whole (the model
// end to end: `layers` decoder layers, the embedding and the head; `layers` only with it). Reading
// is strict (file:line: key): another part, `layers` missing on whole or present elsewhere, two
// entries of one (model, part, micro_batch, seq_len), two whole entries, or a whole entry without
// the block, embedding and head of its model and shape.
//
// Why the whole: on an H200 the calibration model's parts, timed alone behind a spin kernel, summed
// 5-7% under the same model run end to end (reports/sim-validation.md, the 1 x H200 compute rows; on
// an H100 about 3%): what runs between the parts (the loss's shift and casts, the rotary tables,
// allocator traffic) and how the GPU sustains a whole step are not in any part. The ratio of the
// whole to its parts, measured on the calibration model, scales every measured or interpolated
// unit (core/cost/forward_backward_cost.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/cost/calibration.hpp"

namespace YAML {
class Emitter;
}

namespace dmuon {

class YamlValue;

std::vector<LayerTiming> parse_layer_timings(const YamlValue& list);
void emit_layer_timings(YAML::Emitter& out, const std::vector<LayerTiming>& layers);

struct WholeOverParts {
  std::string model;
  double whole_s = 0, parts_s = 0;  // forward + backward
  double ratio() const { return whole_s / parts_s; }
};

// The whole entry over layers x block + embedding + head of the same model and shape; nullopt
// without a whole entry or (in a table built in code) when one of its parts is missing.
std::optional<WholeOverParts> whole_over_parts(const std::vector<LayerTiming>& layers);

}  // namespace dmuon
