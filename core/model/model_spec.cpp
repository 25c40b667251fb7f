#include "core/model/model_spec.hpp"

#include <limits>
#include <set>

#include "core/error.hpp"

namespace dmuon {

std::string_view to_string(ParamRole role) {
  switch (role) {
    case ParamRole::matrix: return "matrix";
    case ParamRole::expert_stack: return "expert_stack";
    case ParamRole::embedding: return "embedding";
    case ParamRole::output_head: return "output_head";
    case ParamRole::norm: return "norm";
    case ParamRole::bias: return "bias";
  }
  return "?";
}

ParamRole parse_param_role(std::string_view name, const std::string& what) {
  for (ParamRole r : {ParamRole::matrix, ParamRole::expert_stack, ParamRole::embedding,
                      ParamRole::output_head, ParamRole::norm, ParamRole::bias}) {
    if (to_string(r) == name) return r;
  }
  throw Error(what + ": unknown role '" + std::string(name) +
              "' (expected matrix, expert_stack, embedding, output_head, norm or bias)");
}

std::int64_t ParamSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string ParamSpec::shape_string() const {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s.append(i ? "x" : "").append(std::to_string(shape[i]));
  return s;
}

std::int64_t ModelSpec::total_params() const {
  std::int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  return total;
}

void ModelSpec::validate() const {
  std::set<std::string> seen;
  if (params.empty()) throw Error("model '" + name + "': has no parameters");
  for (const auto& p : params) {
    if (p.name.empty()) throw Error("model '" + name + "': a parameter has an empty name");
    if (!seen.insert(p.name).second) {
      throw Error("model '" + name + "': duplicate parameter name '" + p.name + "'");
    }
    if (p.shape.empty()) throw Error("parameter '" + p.name + "': empty shape");
    std::int64_t n = 1;
    for (auto d : p.shape) {
      if (d <= 0) throw Error("parameter '" + p.name + "': dimension " + std::to_string(d) + " <= 0");
      if (n > std::numeric_limits<std::int64_t>::max() / d) {
        throw Error("parameter '" + p.name + "': element count overflows 64 bits");
      }
      n *= d;
    }
    if (p.role == ParamRole::expert_stack && p.shape.size() != 3) {
      throw Error("parameter '" + p.name + "': role expert_stack needs shape (experts, out, in)");
    }
    if (p.role == ParamRole::matrix && p.shape.size() < 2) {
      throw Error("parameter '" + p.name + "': role matrix needs at least 2 dimensions");
    }
  }
}

ParamRole infer_role(const std::string& name, std::size_t rank) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (rank <= 1) return has("bias") ? ParamRole::bias : ParamRole::norm;
  if (has("embed") || has("wte") || has("wpe")) return ParamRole::embedding;
  if (has("lm_head") || has("output.weight")) return ParamRole::output_head;
  if (rank == 3) return ParamRole::expert_stack;
  return ParamRole::matrix;
}

}  // namespace dmuon
