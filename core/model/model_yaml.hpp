// Reads a ModelSpec from YAML: generated towers and/or an explicit parameter list.
//
//   name: qwen2.5-vl-3b
//   dtype: bf16                # default for every parameter
//   transformer: {...}         # shorthand for one tower named "language"
//   towers:                    # or several towers
//     - name: visual
//       transformer: {prefix: visual, hidden: 1280, ...}
//       params: [{name: visual.patch_embed.weight, shape: [1280, 1176]}]
//   params: [{name: ..., shape: [...], dtype: fp32, role: norm, layer: 3}]
#pragma once
#include <string>

#include "core/model/model_spec.hpp"
#include "core/io/yaml_reader.hpp"

namespace dmuon {

ModelSpec parse_model(const YamlValue& value);
ModelSpec load_model_file(const std::string& path);

}  // namespace dmuon
