// dmuon-verify --world N: every strategy's Plan, built by the step planner (balanced owners),
// run by the CPU plan interpreter for two steps, against the single-device reference.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/mesh.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/strategy.hpp"
#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

struct DistributedOptions {
  Mesh mesh;
  std::vector<Strategy> strategies = all_strategies();
  std::vector<std::string> presets = {"torch", "dmuon"};
  std::string model_file;  // empty: distributed_test_model()
  std::uint64_t seed = 20261122;
  int steps = 2;
};

// Two dense layers and an MoE layer of 6 experts, with biases and norms: every routing case
// (matrices, expert stacks, AdamW vectors) in a model small enough for double precision on
// 8 CPU ranks.
ModelSpec distributed_test_model();

// Per (strategy, preset): `<...>/ranks-agree` (every rank holds bitwise the same parameters
// after the steps), `<...>/muon-vs-single-device` and `<...>/adamw-vs-single-device` (bitwise
// for dedicated on a 1-D mesh, whose reductions sum in rank order as the reference does; within
// 1e-12 relative otherwise: FSDP reduce-scatters and 2-D meshes change the summation order).
std::vector<VerifyCase> distributed_cases(const DistributedOptions& options);

}  // namespace dmuon::verify
