#include "core/cost/fsdp2_copies.hpp"

#include <string>

#include "core/error.hpp"

namespace dmuon {
namespace {

double shard(double elements, int ranks) {
  if (ranks < 1) throw Error("fsdp2 copies: a collective of " + std::to_string(ranks) + " ranks");
  return elements / ranks;
}

}  // namespace

double fsdp2_all_gather_copy_bytes(double elements, int ranks) {
  return (4 + 2) * shard(elements, ranks) + (2 + 2) * elements;
}

double fsdp2_reduce_scatter_copy_bytes(double elements, int ranks) {
  return (2 + 4) * elements + (4 + 4) * shard(elements, ranks);
}

}  // namespace dmuon
