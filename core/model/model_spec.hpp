// Parameters of a model: names, shapes, dtypes and the role that decides their optimizer.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/optimizer/dtype.hpp"
#include "core/model/transformer_config.hpp"

namespace dmuon {

// matrix: a hidden 2-D weight (Muon by default); expert_stack: (E, out, in), E matrices for Muon;
// embedding, output_head, norm, bias: AdamW by default.
enum class ParamRole { matrix, expert_stack, embedding, output_head, norm, bias };

std::string_view to_string(ParamRole role);
ParamRole parse_param_role(std::string_view name, const std::string& what);

struct ParamSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::bf16;
  ParamRole role = ParamRole::matrix;
  int layer = -1;     // transformer block index, -1 outside blocks (embeddings, final norm, ...)
  std::string tower;  // which tower generated it ("" for explicit parameters)

  std::int64_t numel() const;
  std::string shape_string() const;  // e.g. "2048x11008"
};

// A tower whose blocks were generated from a transformer config: the structure (widths, heads,
// MLP kind, MoE) the forward/backward cost model prices, which the parameter list alone does
// not carry (attention has no parameters; a tied head has none of its own).
struct TowerTransformer {
  std::string tower;
  TransformerConfig config;
  std::size_t generated_params = 0;  // parameters the generator made (explicit ones may follow)
};

struct ModelSpec {
  std::string name;
  std::vector<ParamSpec> params;
  std::vector<TowerTransformer> transformers;  // empty for a model given only as parameters

  std::int64_t total_params() const;
  // Throws dmuon::Error on a duplicate name, an empty shape or a non-positive dimension.
  void validate() const;
};

// The role a parameter gets from its name and rank when the model file does not say.
ParamRole infer_role(const std::string& name, std::size_t rank);

}  // namespace dmuon
