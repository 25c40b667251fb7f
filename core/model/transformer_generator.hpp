// Generates the parameter list of a decoder/encoder transformer tower from its config (the
// HF layout: nn.Linear weights are [out_features, in_features]).
#pragma once
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/model/transformer_config.hpp"

namespace dmuon {

// Throws dmuon::Error naming the field (as `<what>.field`) for an inconsistent config.
void validate(const TransformerConfig& config, const std::string& what);
std::vector<ParamSpec> generate_transformer(const TransformerConfig& config, const std::string& tower);

}  // namespace dmuon
