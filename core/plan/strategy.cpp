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
  StrategyTraits t;
  switch (s) {
    case Strategy::adamw: break;
    case Strategy::ddp_redundant:
    case Strategy::fsdp_gather: t.ns_ranks = NsRanks::every_rank; break;
    case Strategy::zero1_a2a: t.ns_ranks = NsRanks::owner_per_replica; break;
    case Strategy::dedicated:
      t.ns_ranks = NsRanks::owner;
      t.owner_keeps_matrix = true;
      break;
    case Strategy::owner_striped:
      t.ns_ranks = NsRanks::owner;
      t.owner_keeps_matrix = true;
      t.rail_striped = true;
      break;
  }
  return t;
}

}  // namespace dmuon
