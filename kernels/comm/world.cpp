#include "kernels/comm/world.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/comm/watchdog.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::comm {
namespace {

bool is_whole_world(const std::vector<int>& ranks, int world) {
  if (static_cast<int>(ranks.size()) != world) return false;
  for (int i = 0; i < world; ++i) {
    if (ranks[static_cast<std::size_t>(i)] != i) return false;
  }
  return true;
}

}  // namespace

RankComms::RankComms(int rank, int world, int device, const ncclUniqueId& id, double setup_timeout_seconds)
    : rank_(rank), world_(world), device_(device), setup_timeout_seconds_(setup_timeout_seconds) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw Error("comm: rank " + std::to_string(rank) + " outside a world of " + std::to_string(world));
  }
  DMUON_CUDA_CHECK(cudaSetDevice(device));
  const std::string what =
      "rank " + std::to_string(rank) + ": creating the world communicator of " + std::to_string(world) + " ranks";
  try {
    const SetupWatchdog watchdog(setup_timeout_seconds_, what);
    DMUON_NCCL_CHECK(ncclCommInitRank(&world_comm_, world, id, rank));
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

RankComms::~RankComms() {
  if (aborted_) return;
  for (auto& [members, c] : by_members_) {
    if (c != world_comm_) (void)ncclCommDestroy(c);
  }
  if (world_comm_) (void)ncclCommDestroy(world_comm_);
}

std::vector<int> communicator_groups(const Plan& plan) {
  std::set<int> used;
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (synchronizes(op)) used.insert(op.group);
    }
  }
  for (int g : used) {
    if (g < 0 || g >= static_cast<int>(plan.groups.size())) throw Error("comm: plan uses unknown group " + std::to_string(g));
  }
  return {used.begin(), used.end()};
}

void RankComms::prepare(const Plan& plan) {
  const std::vector<int> used = communicator_groups(plan);
  DMUON_CUDA_CHECK(cudaSetDevice(device_));
  for (int g : used) {  // every rank walks the same groups in the same order: the splits match
    const std::vector<int>& members = plan.groups[static_cast<std::size_t>(g)].ranks;
    if (by_members_.count(members)) continue;
    if (is_whole_world(members, world_)) {
      by_members_[members] = world_comm_;
      continue;
    }
    const auto it = std::find(members.begin(), members.end(), rank_);
    const bool member = it != members.end();
    ncclComm_t c = nullptr;
    const int key = member ? static_cast<int>(it - members.begin()) : 0;
    const std::string what =
        "rank " + std::to_string(rank_) + ": splitting group '" + plan.groups[static_cast<std::size_t>(g)].name + "'";
    try {
      const SetupWatchdog watchdog(setup_timeout_seconds_, what);
      DMUON_NCCL_CHECK(ncclCommSplit(world_comm_, member ? 0 : NCCL_SPLIT_NOCOLOR, key, &c, nullptr));
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
    if (member) by_members_[members] = c;
  }
}

ncclComm_t RankComms::comm(const Plan& plan, int group) const {
  const CommGroup& g = plan.groups.at(static_cast<std::size_t>(group));
  const auto it = by_members_.find(g.ranks);
  if (it == by_members_.end()) {
    throw Error("rank " + std::to_string(rank_) + ": no communicator for group '" + g.name +
                "' (not a member, or prepare() was not called for this plan)");
  }
  return it->second;
}

int RankComms::position(const Plan& plan, int group) const {
  const auto& ranks = plan.groups.at(static_cast<std::size_t>(group)).ranks;
  const auto it = std::find(ranks.begin(), ranks.end(), rank_);
  if (it == ranks.end()) throw Error("rank " + std::to_string(rank_) + " is not a member of group " + std::to_string(group));
  return static_cast<int>(it - ranks.begin());
}

std::string RankComms::async_error() const {
  if (aborted_) return "communicators aborted";
  std::vector<ncclComm_t> all{world_comm_};
  for (const auto& [members, c] : by_members_) all.push_back(c);
  for (ncclComm_t c : all) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(c, &state);
    if (r != ncclSuccess) return std::string("ncclCommGetAsyncError failed: ") + ncclGetErrorString(r);
    if (state != ncclSuccess && state != ncclInProgress) {
      const std::string detail = ncclGetLastError(c);
      return std::string(ncclGetErrorString(state)) + (detail.empty() ? "" : " (" + detail + ")");
    }
  }
  return "";
}

void RankComms::abort_all() {
  if (aborted_) return;
  aborted_ = true;
  for (auto& [members, c] : by_members_) {
    if (c != world_comm_) (void)ncclCommAbort(c);
  }
  if (world_comm_) (void)ncclCommAbort(world_comm_);
}

}  // namespace dmuon::comm
