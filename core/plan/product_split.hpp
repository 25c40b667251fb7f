// When a sharded Newton-Schulz call also splits its m x m products over its members
// (Op::ns_product_begin, core/plan/ns_sharding.hpp): never, where the cost model finds a member
// faster that way (the planner's default), or always (wherever every member gets a product
// column: for verification and for timing the split on GPUs). A planner knob, read from a
// scenario's `planner.split_ns_products`.
#pragma once
#include <optional>
#include <string_view>

namespace dmuon {

enum class ProductSplit { never, cheaper, always };

std::string_view to_string(ProductSplit p);
// "never", "cheaper" or "always"; nothing otherwise.
std::optional<ProductSplit> parse_product_split(std::string_view name);

}  // namespace dmuon
