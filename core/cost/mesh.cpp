#include "core/cost/mesh.hpp"

#include <cstdint>
#include <limits>

#include "core/error.hpp"

namespace dmuon {

std::vector<int> Mesh::shard_group(int replica) const {
  std::vector<int> out;
  for (int s = 0; s < shard; ++s) out.push_back(rank(replica, s));
  return out;
}

std::vector<int> Mesh::replicate_group(int shard_index) const {
  std::vector<int> out;
  for (int r = 0; r < replicate; ++r) out.push_back(rank(r, shard_index));
  return out;
}

std::string Mesh::to_string() const {
  return replicate == 1 ? std::to_string(shard) : std::to_string(replicate) + "x" + std::to_string(shard);
}

Mesh make_mesh(int replicate, int shard, const std::string& what) {
  if (replicate < 1 || shard < 1) {
    throw Error(what + ": mesh sizes must be >= 1, got " + std::to_string(replicate) + "x" + std::to_string(shard));
  }
  // world() and every rank number are ints.
  if (std::int64_t{replicate} * shard > std::numeric_limits<int>::max()) {
    throw Error(what + ": " + std::to_string(replicate) + "x" + std::to_string(shard) + " ranks is more than " +
                std::to_string(std::numeric_limits<int>::max()));
  }
  return {replicate, shard};
}

}  // namespace dmuon
