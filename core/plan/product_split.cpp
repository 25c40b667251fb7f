#include "core/plan/product_split.hpp"

namespace dmuon {

std::string_view to_string(ProductSplit p) {
  switch (p) {
    case ProductSplit::never: return "never";
    case ProductSplit::cheaper: return "cheaper";
    case ProductSplit::always: return "always";
  }
  return "?";
}

std::optional<ProductSplit> parse_product_split(std::string_view name) {
  for (ProductSplit p : {ProductSplit::never, ProductSplit::cheaper, ProductSplit::always}) {
    if (name == to_string(p)) return p;
  }
  return std::nullopt;
}

}  // namespace dmuon
