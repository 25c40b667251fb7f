// Reads an OptimizerConfig from YAML: a preset plus overrides of any knob.
//
//   optimizer:
//     preset: dmuon               # torch | moonlight | dmuon (default torch)
//     lr: 0.02
//     momentum: 0.95
//     momentum_form: sum          # ema | sum
//     nesterov: true
//     weight_decay: 0.0
//     adjust_lr: match_rms_adamw  # original | match_rms_adamw | none
//     master_dtype: fp32
//     nonfinite: error            # error | skip: a NaN/Inf gradient (optimizer_config.hpp)
//     ns: {variant: gram, coefficients: polar-express, steps: 5, restarts: [2], dtype: fp16,
//          normalize_dtype: fp32, norm: add, norm_scale: 1.0, eps: 1.0e-7}
//     adamw: {lr: 1.0e-3, betas: [0.9, 0.999], eps: 1.0e-8, weight_decay: 0.01, nonfinite: error}
// `coefficients` is a schedule name or a list of [a, b, c].
#pragma once
#include "core/optimizer/optimizer_config.hpp"
#include "core/io/yaml_reader.hpp"

namespace dmuon {

// The result is validated; errors name the file, line and key.
OptimizerConfig parse_optimizer(const YamlValue& value);
// Applies an `ns:` mapping on top of `ns` (not validated alone: validate the whole config).
void parse_ns_config(const YamlValue& value, NsConfig& ns);

}  // namespace dmuon
