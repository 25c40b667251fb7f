// dmuon-verify --backend nccl: every strategy's Plan run by the NCCL executor on 2 GPUs (single-
// process mode), two steps, against the single-device reference in storage-rounding mode, within
// the NS engine's accuracy gate (the [C] tolerance); and `dedicated` on 2 GPUs bitwise equal to
// the same kernels on 1 GPU; and per strategy, a NaN and an Inf gradient on one rank end the
// job with the parameters named and no NaN in any weight; and owner-striped with sharded
// Newton-Schulz (a small model whose dominant matrix the planner shards over the GPUs,
// harness/verify/sharded_ns_case.hpp) against the reference within the same gate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/strategy.hpp"
#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

struct NcclVerifyOptions {
  int world = 2;
  std::vector<Strategy> strategies = all_strategies();
  std::vector<std::string> presets = {"torch", "dmuon"};
  std::string model_file;  // empty: distributed_test_model() (the sharded case has its own model)
  std::uint64_t seed = 20261122;
  int steps = 2;
};

// Throws dmuon::Error when fewer than options.world GPUs are visible or a job fails to start;
// a failed rank during a case is a failed result naming the rank and op.
std::vector<CaseResult> run_nccl_cases(const NcclVerifyOptions& options);

// The whole run as one case for dmuon-verify's case list (its results are named nccl/...).
std::vector<VerifyCase> nccl_cases(int world, const std::string& model_file, std::uint64_t seed);

}  // namespace dmuon::verify
