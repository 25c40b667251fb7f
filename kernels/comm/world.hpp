// The NCCL communicators of one rank: the world communicator (from a unique id that some
// bootstrap handed to every rank) and one communicator per Plan group the rank belongs to,
// split from the world so a 2-D mesh gets its shard and replicate groups. A member's NCCL rank
// in a group communicator is its position in CommGroup::ranks, so part i of an all-gather or
// reduce-scatter is member i's.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nccl.h>

#include "core/plan/plan.hpp"

namespace dmuon::comm {

// The Plan groups some op meets on (synchronizes(): the collectives and the sharded
// Newton-Schulz calls, whose all-reduces run inside the op), ascending: the groups prepare()
// makes communicators for. Throws dmuon::Error for an op naming an unknown group.
std::vector<int> communicator_groups(const Plan& plan);

class RankComms {
 public:
  // Collective over the world: every rank calls it with the same id. Sets the CUDA device.
  // `setup_timeout_seconds` bounds this and every prepare(): a peer that never joins ends the
  // process with exit status 1 and a message (kernels/comm/watchdog.hpp); <= 0: no bound.
  RankComms(int rank, int world, int device, const ncclUniqueId& id, double setup_timeout_seconds);
  ~RankComms();
  RankComms(const RankComms&) = delete;
  RankComms& operator=(const RankComms&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  int device() const { return device_; }
  ncclComm_t world_comm() const { return world_comm_; }

  // Creates the communicators of communicator_groups(plan) (collective over the world:
  // every rank must call it with the same plan groups). Groups equal to the whole world in rank
  // order reuse the world communicator; groups seen before (same ranks) reuse theirs.
  void prepare(const Plan& plan);
  // The communicator of plan group `group` and this rank's position in it; throws dmuon::Error
  // when the rank is not a member or prepare() did not create it.
  ncclComm_t comm(const Plan& plan, int group) const;
  int position(const Plan& plan, int group) const;

  // The first asynchronous error any of this rank's communicators reports ("" when none).
  std::string async_error() const;
  // Aborts every communicator (unblocks kernels waiting for a dead peer); the object is unusable
  // afterwards. Safe to call more than once.
  void abort_all();
  bool aborted() const { return aborted_; }

 private:
  int rank_, world_, device_;
  double setup_timeout_seconds_;
  ncclComm_t world_comm_ = nullptr;
  std::map<std::vector<int>, ncclComm_t> by_members_;  // group ranks -> communicator (members only)
  bool aborted_ = false;
};

}  // namespace dmuon::comm
