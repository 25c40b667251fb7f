#include "core/plan/strategy.hpp"

#include "core/error.hpp"

namespace dmuon {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::adamw: return "adamw";
    case Strategy::ddp_redundant: return "ddp-redundant";
    case Strategy::fsdp_gather: return "fsdp-gather";
    case Strategy::zero1_a2a: return "zero1-a2a";
    case Strategy::dedicated: return "dedicated";
    case Strategy::owner_striped: return "owner-striped";
  }
  return "?";
}

std::vector<Strategy> all_strategies() {
  return {Strategy::adamw, Strategy::ddp_redundant, Strategy::fsdp_gather, Strategy::zero1_a2a,
          Strategy::dedicated, Strategy::owner_striped};
}

Strategy parse_strategy(std::string_view name, const std::string& what) {
  std::string names;
  for (Strategy s : all_strategies()) {
    if (to_string(s) == name) return s;
    names += (names.empty() ? "" : ", ") + std::string(to_string(s));
  }
  throw Error(what + ": unknown strategy '" + std::string(name) + "' (expected one of " + names + ")");
}

StrategyTraits traits(Strategy s) {
  // One row per strategy: who runs NS, owner keeps the matrix, rail-striped, simulator host
  // bytes per parameter (one step, each further step; the same with the replicas folded; per
  // step, a GPU of a replica folded onto an owner strategy's template).
  switch (s) {
    case Strategy::adamw: return {NsRanks::none, false, false, 2300, 240, 39, 61};
    case Strategy::ddp_redundant: return {NsRanks::every_rank, false, false, 1500, 840, 56, 3};
    case Strategy::fsdp_gather: return {NsRanks::every_rank, false, false, 3800, 990, 182, 51};
    case Strategy::zero1_a2a: return {NsRanks::owner_per_replica, false, false, 3300, 310, 54, 55};
    case Strategy::dedicated: return {NsRanks::owner, true, false, 1800, 200, 0, 0, 85};
    case Strategy::owner_striped: return {NsRanks::owner, true, true, 1900, 310, 0, 0, 250};
  }
  throw Error("traits: unknown strategy");
}

}  // namespace dmuon
