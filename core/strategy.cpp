#include "core/strategy.hpp"

#include "core/error.hpp"

namespace dmuon {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::adamw: return "adamw";
    case Strategy::ddp_redundant: return "ddp-redundant";
    case Strategy::fsdp_gather: return "fsdp-gather";
    case Strategy::zero1_a2a: return "zero1-a2a";
    case Strategy::dedicated: return "dedicated";
  }
  return "?";
}

std::vector<Strategy> all_strategies() {
  return {Strategy::adamw, Strategy::ddp_redundant, Strategy::fsdp_gather, Strategy::zero1_a2a,
          Strategy::dedicated};
}

Strategy parse_strategy(std::string_view name, const std::string& what) {
  for (Strategy s : all_strategies()) {
    if (to_string(s) == name) return s;
  }
  throw Error(what + ": unknown strategy '" + std::string(name) +
              "' (expected adamw, ddp-redundant, fsdp-gather, zero1-a2a or dedicated)");
}

}  // namespace dmuon
