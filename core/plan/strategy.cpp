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
    case Strategy::adamw:
      t.sim_host_bytes_per_param = 2300;
      t.sim_host_bytes_per_param_per_extra_step = 240;
      break;
    case Strategy::ddp_redundant:
      t.ns_ranks = NsRanks::every_rank;
      t.sim_host_bytes_per_param = 1500;
      t.sim_host_bytes_per_param_per_extra_step = 840;
      break;
    case Strategy::fsdp_gather:
      t.ns_ranks = NsRanks::every_rank;
      t.sim_host_bytes_per_param = 3800;
      t.sim_host_bytes_per_param_per_extra_step = 990;
      break;
    case Strategy::zero1_a2a:
      t.ns_ranks = NsRanks::owner_per_replica;
      t.sim_host_bytes_per_param = 3300;
      t.sim_host_bytes_per_param_per_extra_step = 310;
      break;
    case Strategy::dedicated:
      t.ns_ranks = NsRanks::owner;
      t.owner_keeps_matrix = true;
      t.sim_host_bytes_per_param = 1800;
      t.sim_host_bytes_per_param_per_extra_step = 200;
      break;
    case Strategy::owner_striped:
      t.ns_ranks = NsRanks::owner;
      t.owner_keeps_matrix = true;
      t.rail_striped = true;
      t.sim_host_bytes_per_param = 1900;
      t.sim_host_bytes_per_param_per_extra_step = 310;
      break;
  }
  return t;
}

}  // namespace dmuon
