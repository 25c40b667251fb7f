// Which parameters Muon updates and which AdamW updates.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"

namespace dmuon {

// Name patterns (glob: * any run, ? one character) that override the role-based default.
struct RoutingRules {
  std::vector<std::string> muon;
  std::vector<std::string> adamw;
};

enum class Update { muon, adamw };

// One Newton-Schulz problem: a 2-D weight, one expert of a (E, out, in) stack, or an N-D
// weight flattened to (shape[0], rest) as DMuon does.
struct MuonMatrix {
  std::size_t param = 0;     // index into ModelSpec::params
  std::int64_t expert = -1;  // expert index inside a stack, -1 otherwise
  std::int64_t rows = 0, cols = 0;
  int layer = -1;
  std::string name;  // parameter name, with [e] for an expert
};

struct Routing {
  std::vector<Update> per_param;  // parallel to ModelSpec::params
  std::vector<MuonMatrix> muon_matrices;
  std::vector<std::size_t> adamw_params;
  std::int64_t muon_numel = 0, adamw_numel = 0;
};

bool glob_match(const std::string& pattern, const std::string& text);

// The block a matrix belongs to, as communication groups it: its tower and layer ("visual/7"),
// so layer i of two towers stays apart; a matrix outside any block is its own key.
std::string layer_key(const ModelSpec& model, const MuonMatrix& matrix);

// Default: roles matrix and expert_stack go to Muon, every other role to AdamW. A name that
// matches an `adamw` pattern goes to AdamW, one that matches a `muon` pattern to Muon. Throws
// dmuon::Error for a pattern that matches nothing, a name matched by both lists, or a `muon`
// pattern that matches a parameter of fewer than 2 dimensions.
Routing route_parameters(const ModelSpec& model, const RoutingRules& rules);

}  // namespace dmuon
