// Collectives between rank threads of one process, with NCCL's semantics: the buffers every
// rank holds, the data movement of each collective kind, and the rendezvous where members meet.
// The rendezvous turns every way a plan can go wrong at run time (members disagreeing about a
// collective, a deadlock, a rank that threw) into a dmuon::Error instead of a hang.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "core/plan/plan.hpp"

namespace dmuon::ref {

// Every rank's full-size flat buffer of each BufferKind for each parameter, all zeros at first.
class RankBuffers {
 public:
  RankBuffers(int world, std::vector<std::int64_t> numel);

  int world() const { return world_; }
  std::size_t params() const { return numel_.size(); }
  std::int64_t numel(std::size_t param) const { return numel_.at(param); }
  Eigen::VectorXd& buffer(int rank, std::size_t param, BufferKind kind);
  // Throws dmuon::Error starting with `where` when `region` is not inside its parameter.
  void check(const Region& region, const std::string& where) const;
  // First element of `region` in `rank`'s buffer of `kind` (checked).
  double* at(int rank, BufferKind kind, const Region& region, const std::string& where);

 private:
  int world_;
  std::vector<std::int64_t> numel_;
  std::vector<Eigen::VectorXd> storage_;  // [(rank * params + param) * kinds + kind]
};

// "rank 2 op 17 (reduce 'layer 0', collective 12)": how errors name an op.
std::string describe_op(const Plan& plan, int rank, int index);

// Checks that a collective whose members all arrived can run (root and transfer ends are
// members, one part per member, regions inside their parameters), then moves its data.
// Reductions follow NCCL: reduce sums members in group order; all_reduce and reduce_scatter
// sum each chunk around the ring, so their rounding depends on the chunk's position.
void check_collective(const Op& op, const CommGroup& group, const RankBuffers& buffers, const std::string& where);
void move_collective_data(const Op& op, const CommGroup& group, RankBuffers& buffers);

// Where rank threads meet at collectives during one run of a plan's ops. The last member to
// arrive moves the data while the others wait. Every wait ends: in the data having moved, or
// in a dmuon::Error for a mismatch, a deadlock, another rank's failure or the deadline.
class Rendezvous {
 public:
  // Runs a sharded Newton-Schulz call once all its members arrived: (rank, op index) of each,
  // in arrival order. The rendezvous only meets them; the math is the interpreter's.
  using JointCompute = std::function<void(const std::vector<std::pair<int, int>>& members)>;
  Rendezvous(const Plan& plan, RankBuffers& buffers, std::chrono::steady_clock::time_point deadline,
             double timeout_seconds, JointCompute joint_compute = {});

  // Rank `rank` reached its op `index`, a collective or sharded Newton-Schulz (synchronizes());
  // returns once it is done.
  void arrive(int rank, int index);
  // The rank ran the last op of this run: collectives it did not issue can no longer complete.
  void finish(int rank);
  // The rank threw `message`; everyone waiting is woken and fails with "rank R failed: ...".
  void fail(int rank, const std::string& message);
  // Throws the abort message once any rank failed (ranks call it between compute ops).
  void throw_if_aborted();
  // The first error of the run (the cause, not its echoes on other ranks); empty when none.
  std::string first_error();

 private:
  enum class State { running, waiting, finished, failed };
  using Arrival = std::pair<int, int>;  // (rank, op index)

  const Op& op_of(const Arrival& a) const;
  const CommGroup& group_of(int rank, int index) const;
  void check_matches(const Arrival& first, const Arrival& next) const;
  void complete(std::unique_lock<std::mutex>& lock, std::int64_t id);
  void wait_for(std::unique_lock<std::mutex>& lock, int rank, int index);
  std::string find_deadlock() const;
  std::string waiting_list() const;
  void abort(const std::string& error, const std::string& echo);

  const Plan& plan_;
  RankBuffers& buffers_;
  std::chrono::steady_clock::time_point deadline_;
  double timeout_seconds_;
  JointCompute joint_compute_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<State> state_;
  std::vector<int> waiting_at_;                      // op index while State::waiting
  std::map<std::int64_t, std::vector<Arrival>> pending_;  // collective id -> members arrived
  std::set<std::int64_t> completed_;
  std::string error_;  // the first error of the run
  std::string echo_;   // what waiting ranks fail with once the run is aborted
  std::atomic<bool> aborted_{false};
};

}  // namespace dmuon::ref
