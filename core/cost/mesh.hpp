// Device mesh of a data-parallel job: `replicate` x `shard` ranks (HSDP); a 1-D mesh has
// replicate = 1. Global rank = replica * shard + shard_index.
#pragma once
#include <string>
#include <vector>

namespace dmuon {

struct Mesh {
  int replicate = 1;
  int shard = 1;

  int world() const { return replicate * shard; }
  int rank(int replica, int shard_index) const { return replica * shard + shard_index; }
  int replica_of(int rank) const { return rank / shard; }
  int shard_index_of(int rank) const { return rank % shard; }
  // Ranks of one shard group (same replica) and of one replicate group (same shard index).
  std::vector<int> shard_group(int replica) const;
  std::vector<int> replicate_group(int shard_index) const;
  std::string to_string() const;  // "8" or "2x4"
};

// Throws dmuon::Error naming `what` for a non-positive size.
Mesh make_mesh(int replicate, int shard, const std::string& what);

}  // namespace dmuon
