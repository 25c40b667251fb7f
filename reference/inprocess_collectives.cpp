#include "reference/inprocess_collectives.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace dmuon::ref {
namespace {

constexpr int kBufferKinds = static_cast<int>(BufferKind::adam_v) + 1;

std::size_t idx(int i) { return static_cast<std::size_t>(i); }

bool is_member(const CommGroup& group, int rank) {
  return std::find(group.ranks.begin(), group.ranks.end(), rank) != group.ranks.end();
}

std::int64_t total(const std::vector<Region>& regions) {
  std::int64_t n = 0;
  for (const Region& r : regions) n += r.count;
  return n;
}

// The concatenation of `regions` of one rank's buffer, and writing such a concatenation back.
std::vector<double> read_regions(RankBuffers& b, int rank, BufferKind kind, const std::vector<Region>& regions) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(total(regions)));
  for (const Region& r : regions) {
    const double* p = b.at(rank, kind, r, "");
    out.insert(out.end(), p, p + r.count);
  }
  return out;
}

void write_regions(RankBuffers& b, int rank, BufferKind kind, const std::vector<Region>& regions,
                   const std::vector<double>& values) {
  auto it = values.begin();
  for (const Region& r : regions) {
    std::copy(it, it + r.count, b.at(rank, kind, r, ""));
    it += r.count;
  }
}

void divide(std::vector<double>& values, std::size_t n) {
  const double d = static_cast<double>(n);
  for (double& v : values) v /= d;  // a division, as NCCL's avg, not a multiplication by 1/n
}

void broadcast(const Op& op, const std::vector<int>& members, RankBuffers& b) {
  const std::vector<double> data = read_regions(b, op.root, op.buffer, op.regions);
  for (int m : members) {
    if (m != op.root) write_regions(b, m, op.buffer, op.regions, data);
  }
}

// Members summed in group order 0..n-1; only the root receives (NCCL leaves the others alone).
void reduce(const Op& op, const std::vector<int>& members, RankBuffers& b) {
  std::vector<double> acc = read_regions(b, members.front(), op.buffer, op.regions);
  for (std::size_t i = 1; i < members.size(); ++i) {
    const std::vector<double> x = read_regions(b, members[i], op.buffer, op.regions);
    for (std::size_t k = 0; k < acc.size(); ++k) acc[k] += x[k];
  }
  if (op.reduce_op == ReduceOp::avg) divide(acc, members.size());
  write_regions(b, op.root, op.buffer, op.regions, acc);
}

// NCCL's ring: the data is cut into n contiguous chunks; chunk c starts at member (c+1) mod n
// and travels the ring, each member adding its own values, until it ends at member c.
double ring_sum(const std::vector<std::vector<double>>& xs, std::size_t chunk, std::size_t k) {
  const std::size_t n = xs.size();
  double acc = xs[(chunk + 1) % n][k];
  for (std::size_t step = 2; step <= n; ++step) acc += xs[(chunk + step) % n][k];
  return acc;
}

void all_reduce(const Op& op, const std::vector<int>& members, RankBuffers& b) {
  std::vector<std::vector<double>> xs;
  for (int m : members) xs.push_back(read_regions(b, m, op.buffer, op.regions));
  const std::size_t n = members.size(), size = xs.front().size();
  const std::size_t chunk_size = (size + n - 1) / n;
  std::vector<double> result(size);
  for (std::size_t k = 0; k < size; ++k) result[k] = ring_sum(xs, k / chunk_size, k);
  if (op.reduce_op == ReduceOp::avg) divide(result, n);
  for (int m : members) write_regions(b, m, op.buffer, op.regions, result);
}

// Part i is the ring's chunk i: it ends, reduced, at member i.
void reduce_scatter(const Op& op, const std::vector<int>& members, RankBuffers& b) {
  const std::size_t n = members.size();
  std::vector<std::vector<double>> results;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::vector<double>> xs;
    for (int m : members) xs.push_back(read_regions(b, m, op.buffer, {op.parts[i]}));
    std::vector<double> part(xs.front().size());
    for (std::size_t k = 0; k < part.size(); ++k) part[k] = ring_sum(xs, i, k);
    if (op.reduce_op == ReduceOp::avg) divide(part, n);
    results.push_back(std::move(part));
  }
  for (std::size_t i = 0; i < n; ++i) write_regions(b, members[i], op.buffer, {op.parts[i]}, results[i]);
}

void all_gather(const Op& op, const std::vector<int>& members, RankBuffers& b) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::vector<double> part = read_regions(b, members[i], op.buffer, {op.parts[i]});
    for (int m : members) {
      if (m != members[i]) write_regions(b, m, op.buffer, {op.parts[i]}, part);
    }
  }
}

// Every send reads before any receive writes, as with NCCL's separate send and receive buffers.
void all_to_all(const Op& op, RankBuffers& b) {
  std::vector<std::vector<double>> sent;
  for (const Transfer& t : op.transfers) sent.push_back(read_regions(b, t.src, op.buffer, {t.from}));
  for (std::size_t i = 0; i < sent.size(); ++i) {
    write_regions(b, op.transfers[i].dst, op.buffer, {op.transfers[i].to}, sent[i]);
  }
}

std::string regions_summary(const std::vector<Region>& regions) {
  return std::to_string(regions.size()) + " region(s) of " + std::to_string(total(regions)) + " element(s)";
}

// What differs between two ops of one collective id, or "" when they agree.
std::string difference(const Op& a, const Op& b) {
  auto pair = [](auto x, auto y) { return std::string(x) + " vs " + std::string(y); };
  if (a.kind != b.kind) return "kind " + pair(to_string(a.kind), to_string(b.kind));
  if (a.group != b.group) return "group " + pair(std::to_string(a.group), std::to_string(b.group));
  if (a.root != b.root) return "root " + pair(std::to_string(a.root), std::to_string(b.root));
  if (a.buffer != b.buffer) return "buffer " + pair(to_string(a.buffer), to_string(b.buffer));
  if (a.reduce_op != b.reduce_op) return "reduce op differs";
  if (a.regions != b.regions) return "regions: " + pair(regions_summary(a.regions), regions_summary(b.regions));
  if (a.parts != b.parts) return "parts: " + pair(regions_summary(a.parts), regions_summary(b.parts));
  if (a.transfers != b.transfers) {
    return "transfers: " + pair(std::to_string(a.transfers.size()), std::to_string(b.transfers.size()));
  }
  return "";
}

}  // namespace

RankBuffers::RankBuffers(int world, std::vector<std::int64_t> numel) : world_(world), numel_(std::move(numel)) {
  storage_.reserve(idx(world) * numel_.size() * kBufferKinds);
  for (int r = 0; r < world; ++r) {
    for (std::int64_t n : numel_) {
      for (int k = 0; k < kBufferKinds; ++k) storage_.push_back(Eigen::VectorXd::Zero(n));
    }
  }
}

Eigen::VectorXd& RankBuffers::buffer(int rank, std::size_t param, BufferKind kind) {
  return storage_[(idx(rank) * numel_.size() + param) * kBufferKinds + static_cast<std::size_t>(kind)];
}

void RankBuffers::check(const Region& r, const std::string& where) const {
  if (r.param >= numel_.size()) {
    throw Error(where + ": region of unknown parameter " + std::to_string(r.param));
  }
  if (r.offset < 0 || r.count < 0 || r.offset + r.count > numel_[r.param]) {
    throw Error(where + ": region [" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.count) +
                ") outside parameter " + std::to_string(r.param) + " of " + std::to_string(numel_[r.param]) +
                " elements");
  }
}

double* RankBuffers::at(int rank, BufferKind kind, const Region& region, const std::string& where) {
  check(region, where);
  return buffer(rank, region.param, kind).data() + region.offset;
}

std::string describe_op(const Plan& plan, int rank, int index) {
  const Op& op = plan.ranks.at(idx(rank)).at(idx(index));
  std::ostringstream s;
  s << "rank " << rank << " op " << index << " (" << to_string(op.kind);
  if (!op.label.empty()) s << " '" << op.label << "'";
  if (is_collective(op.kind)) s << ", collective " << op.collective;
  s << ")";
  return s.str();
}

void check_collective(const Op& op, const CommGroup& group, const RankBuffers& buffers, const std::string& where) {
  auto require_member = [&](int rank, const char* role) {
    if (!is_member(group, rank)) {
      throw Error(where + ": " + role + " rank " + std::to_string(rank) + " is not a member of group '" + group.name +
                  "'");
    }
  };
  for (const Region& r : op.regions) buffers.check(r, where);
  for (const Region& r : op.parts) buffers.check(r, where);
  if (op.kind == OpKind::broadcast || op.kind == OpKind::reduce) require_member(op.root, "root");
  if ((op.kind == OpKind::all_gather || op.kind == OpKind::reduce_scatter) && op.parts.size() != group.ranks.size()) {
    throw Error(where + ": " + std::to_string(op.parts.size()) + " parts for a group of " +
                std::to_string(group.ranks.size()) + " ranks");
  }
  for (const Transfer& t : op.transfers) {
    require_member(t.src, "transfer source");
    require_member(t.dst, "transfer destination");
    buffers.check(t.from, where);
    buffers.check(t.to, where);
    if (t.from.count != t.to.count) throw Error(where + ": a transfer sends " + std::to_string(t.from.count) +
                                                " elements into " + std::to_string(t.to.count));
  }
}

void move_collective_data(const Op& op, const CommGroup& group, RankBuffers& buffers) {
  switch (op.kind) {
    case OpKind::broadcast: broadcast(op, group.ranks, buffers); return;
    case OpKind::reduce: reduce(op, group.ranks, buffers); return;
    case OpKind::all_reduce: all_reduce(op, group.ranks, buffers); return;
    case OpKind::all_gather: all_gather(op, group.ranks, buffers); return;
    case OpKind::reduce_scatter: reduce_scatter(op, group.ranks, buffers); return;
    case OpKind::all_to_all: all_to_all(op, buffers); return;
    default: throw Error("move_collective_data: " + std::string(to_string(op.kind)) + " is not a collective");
  }
}

// ---------------------------------------------------------------------------------------------

Rendezvous::Rendezvous(const Plan& plan, RankBuffers& buffers, std::chrono::steady_clock::time_point deadline,
                       double timeout_seconds, JointCompute joint_compute)
    : plan_(plan),
      buffers_(buffers),
      deadline_(deadline),
      timeout_seconds_(timeout_seconds),
      joint_compute_(std::move(joint_compute)),
      state_(plan.ranks.size(), State::running),
      waiting_at_(plan.ranks.size(), -1) {}

const Op& Rendezvous::op_of(const Arrival& a) const { return plan_.ranks[idx(a.first)][idx(a.second)]; }

const CommGroup& Rendezvous::group_of(int rank, int index) const {
  const Op& op = plan_.ranks[idx(rank)][idx(index)];
  const std::string where = describe_op(plan_, rank, index);
  if (op.collective < 0) throw Error(where + ": collective without id");
  if (op.group < 0 || op.group >= static_cast<int>(plan_.groups.size())) {
    throw Error(where + ": unknown group " + std::to_string(op.group));
  }
  const CommGroup& group = plan_.groups[idx(op.group)];
  if (!is_member(group, rank)) throw Error(where + ": rank is not a member of group '" + group.name + "'");
  for (int m : group.ranks) {
    if (m < 0 || m >= static_cast<int>(plan_.ranks.size())) {
      throw Error(where + ": group '" + group.name + "' names rank " + std::to_string(m) + " outside the world");
    }
  }
  return group;
}

void Rendezvous::check_matches(const Arrival& first, const Arrival& next) const {
  const std::string diff = difference(op_of(first), op_of(next));
  if (!diff.empty()) {
    throw Error(describe_op(plan_, next.first, next.second) + " does not match " +
                describe_op(plan_, first.first, first.second) + " of the same collective: " + diff);
  }
}

void Rendezvous::arrive(int rank, int index) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) throw Error(echo_);
  const CommGroup& group = group_of(rank, index);
  const Op& op = plan_.ranks[idx(rank)][idx(index)];
  if (completed_.count(op.collective)) {
    throw Error(describe_op(plan_, rank, index) + ": collective " + std::to_string(op.collective) +
                " already completed without this rank (issued twice on another rank?)");
  }
  auto& arrived = pending_[op.collective];
  if (!arrived.empty()) check_matches(arrived.front(), {rank, index});
  arrived.push_back({rank, index});
  if (arrived.size() == group.ranks.size()) {
    complete(lock, op.collective);
    return;
  }
  wait_for(lock, rank, index);
}

// The last member moves the data outside the lock: every member is blocked here and a rank
// takes part in one collective at a time, so no other thread touches these buffers meanwhile.
void Rendezvous::complete(std::unique_lock<std::mutex>& lock, std::int64_t id) {
  const Arrival first = pending_[id].front();
  const Op& op = op_of(first);
  const CommGroup& group = plan_.groups[idx(op.group)];
  if (is_sharded_ns(op)) {
    if (!joint_compute_) throw Error(describe_op(plan_, first.first, first.second) + ": no runner for sharded Newton-Schulz");
    const std::vector<Arrival> members = pending_[id];
    lock.unlock();
    joint_compute_(members);
    lock.lock();
  } else {
    check_collective(op, group, buffers_, describe_op(plan_, first.first, first.second));
    lock.unlock();
    move_collective_data(op, group, buffers_);
    lock.lock();
  }
  pending_.erase(id);
  completed_.insert(id);
  for (int m : group.ranks) {
    if (state_[idx(m)] == State::waiting) state_[idx(m)] = State::running;
  }
  cv_.notify_all();
}

void Rendezvous::wait_for(std::unique_lock<std::mutex>& lock, int rank, int index) {
  const std::int64_t id = plan_.ranks[idx(rank)][idx(index)].collective;
  state_[idx(rank)] = State::waiting;
  waiting_at_[idx(rank)] = index;
  if (const std::string deadlock = find_deadlock(); !deadlock.empty()) abort(deadlock, deadlock);
  const bool done = cv_.wait_until(lock, deadline_, [&] { return completed_.count(id) > 0 || aborted_; });
  if (completed_.count(id)) return;  // the mover already set this rank running again
  if (!done && !aborted_) {
    std::ostringstream s;
    s << "timeout after " << timeout_seconds_ << " s: " << waiting_list();
    abort(s.str(), s.str());
  }
  state_[idx(rank)] = State::running;  // until its thread reports the failure
  throw Error(echo_);
}

void Rendezvous::finish(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_[idx(rank)] = State::finished;
  if (const std::string deadlock = find_deadlock(); !deadlock.empty()) abort(deadlock, deadlock);
}

void Rendezvous::fail(int rank, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_[idx(rank)] = State::failed;
  abort(message, "rank " + std::to_string(rank) + " failed: " + message);
}

void Rendezvous::throw_if_aborted() {
  if (!aborted_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  throw Error(echo_);
}

std::string Rendezvous::first_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

// Only the first cause is kept: the errors it provokes on other ranks are echoes of it.
void Rendezvous::abort(const std::string& error, const std::string& echo) {
  if (aborted_) return;
  error_ = error;
  echo_ = echo;
  aborted_ = true;
  cv_.notify_all();
}

std::string Rendezvous::waiting_list() const {
  std::string out;
  for (std::size_t r = 0; r < state_.size(); ++r) {
    if (!out.empty()) out += "; ";
    const int rank = static_cast<int>(r);
    switch (state_[r]) {
      case State::waiting: out += describe_op(plan_, rank, waiting_at_[r]) + " waits"; break;
      case State::running: out += "rank " + std::to_string(rank) + " is running"; break;
      case State::finished: out += "rank " + std::to_string(rank) + " finished its ops"; break;
      case State::failed: out += "rank " + std::to_string(rank) + " failed"; break;
    }
  }
  return out;
}

// A deadlock: a collective one of whose members already finished without issuing it, or no
// rank left running while some wait (only a running rank can complete a collective).
std::string Rendezvous::find_deadlock() const {
  for (const auto& [id, arrived] : pending_) {
    for (int m : plan_.groups[idx(op_of(arrived.front()).group)].ranks) {
      if (state_[idx(m)] != State::finished) continue;
      std::string who;
      for (const Arrival& a : arrived) {
        who += (who.empty() ? "" : "; ") + describe_op(plan_, a.first, a.second) + " waits";
      }
      return "deadlock: " + who + ", but rank " + std::to_string(m) + " finished its ops without issuing collective " +
             std::to_string(id);
    }
  }
  const bool running = std::count(state_.begin(), state_.end(), State::running) > 0;
  const bool waiting = std::count(state_.begin(), state_.end(), State::waiting) > 0;
  if (running || !waiting) return "";
  return "deadlock: no rank can proceed: " + waiting_list();
}

}  // namespace dmuon::ref
