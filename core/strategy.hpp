// The five distributed optimizer strategies of DESIGN.md.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dmuon {

enum class Strategy { adamw, ddp_redundant, fsdp_gather, zero1_a2a, dedicated };

std::string_view to_string(Strategy s);
Strategy parse_strategy(std::string_view name, const std::string& what);
std::vector<Strategy> all_strategies();

}  // namespace dmuon
