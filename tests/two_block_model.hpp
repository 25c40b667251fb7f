// A model small enough to count its memory by hand, for the memory-model tests: an embedding
// and a head of vocab x hidden (AdamW, outside any block) and two blocks of a norm (hidden,
// AdamW), wq hidden x hidden and w1 2 hidden x hidden (Muon).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"

namespace dmuon::test {

inline ParamSpec param(const std::string& name, std::vector<std::int64_t> shape, ParamRole role, int layer) {
  ParamSpec p;
  p.name = name;
  p.shape = std::move(shape);
  p.role = role;
  p.layer = layer;
  return p;
}

inline ModelSpec two_block_model(const std::string& name, std::int64_t vocab, std::int64_t hidden) {
  ModelSpec m;
  m.name = name;
  m.params.push_back(param("embed", {vocab, hidden}, ParamRole::embedding, -1));
  for (int l = 0; l < 2; ++l) {
    const std::string b = "layers." + std::to_string(l) + ".";
    m.params.push_back(param(b + "norm", {hidden}, ParamRole::norm, l));
    m.params.push_back(param(b + "wq", {hidden, hidden}, ParamRole::matrix, l));
    m.params.push_back(param(b + "w1", {2 * hidden, hidden}, ParamRole::matrix, l));
  }
  m.params.push_back(param("head", {vocab, hidden}, ParamRole::output_head, -1));
  return m;
}

}  // namespace dmuon::test
