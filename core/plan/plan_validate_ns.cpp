// Plan::validate's checks of sharded Newton-Schulz ops (Op::ns_column_begin).
#include <map>
#include <string>

#include "core/error.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"

namespace dmuon {
namespace {

[[noreturn]] void fail_ns(int rank, const Op& op, const std::string& what) {
  throw Error("plan: rank " + std::to_string(rank) + " sharded Newton-Schulz '" + op.label + "' (collective " +
              std::to_string(op.collective) + "): " + what);
}

// What one member contributes, by collective id, in the order the members are listed.
struct Member {
  int rank = 0;
  const Op* op = nullptr;
};

// A split call's product columns are exactly ns_product_columns' block for the member's place
// (the executors' all-gathers move equal blocks in group order), on every member or none.
void check_product_columns(int r, const Op& op, const Op& first, const MuonMatrix& mm, const CommGroup& group,
                           int position) {
  if (splits_ns_products(op) != splits_ns_products(first)) {
    fail_ns(r, op, std::string("splits its m x m products ") + (splits_ns_products(op) ? "" : "not ") +
                       "while the group's first member does" + (splits_ns_products(first) ? "" : " not"));
  }
  if (!splits_ns_products(op)) {
    if (op.ns_product_begin != 0 || op.ns_product_end != 0) fail_ns(r, op, "product columns must be [0, 0) or a block");
    return;
  }
  const std::int64_t m = ns_wide_rows(mm);
  const int k = static_cast<int>(group.ranks.size());
  if (!ns_shardable(m, k)) {
    fail_ns(r, op, "splits the m x m products of matrix '" + mm.name + "' (" + std::to_string(m) + " columns) over " +
                       std::to_string(k) + " members: one would have no column");
  }
  if (!holds_product_block(op, m, k, position)) {
    const auto [begin, end] = ns_product_columns(m, k, position);
    fail_ns(r, op, "product columns [" + std::to_string(op.ns_product_begin) + ", " + std::to_string(op.ns_product_end) +
                       ") are not member " + std::to_string(position) + "'s block [" + std::to_string(begin) + ", " +
                       std::to_string(end) + ") of " + std::to_string(m));
  }
}

// The members' column ranges, in group order, tile [0, n) with no gap, overlap or empty range.
void check_columns(const Plan& plan, const Routing& routing, const std::vector<Member>& members) {
  const Op& first = *members.front().op;
  const CommGroup& group = plan.groups[static_cast<std::size_t>(first.group)];
  if (first.matrices.size() != 1) fail_ns(members.front().rank, first, "names " + std::to_string(first.matrices.size()) + " matrices, not one");
  const std::size_t m = first.matrices.front();
  if (m >= routing.muon_matrices.size()) fail_ns(members.front().rank, first, "unknown Muon matrix " + std::to_string(m));
  const MuonMatrix& mm = routing.muon_matrices[m];
  if (group.ranks.size() < 2) fail_ns(members.front().rank, first, "group '" + group.name + "' has fewer than 2 ranks");
  if (members.size() != group.ranks.size()) return;  // the collective matching names the missing rank
  std::map<int, const Op*> by_rank;
  for (const Member& mb : members) by_rank[mb.rank] = mb.op;
  std::int64_t next = 0;
  int position = 0;
  for (int r : group.ranks) {
    const Op& op = *by_rank.at(r);
    if (plan.mesh.replica_of(r) != plan.mesh.replica_of(group.ranks.front())) {
      fail_ns(r, op, "group '" + group.name + "' spans more than one node");
    }
    check_product_columns(r, op, first, mm, group, position++);
    if (op.ns_column_begin != next || op.ns_column_end <= op.ns_column_begin) {
      fail_ns(r, op, "columns [" + std::to_string(op.ns_column_begin) + ", " + std::to_string(op.ns_column_end) +
                         ") do not continue the group's previous member at column " + std::to_string(next));
    }
    next = op.ns_column_end;
  }
  if (next != ns_wide_columns(mm)) {
    fail_ns(group.ranks.back(), *by_rank.at(group.ranks.back()),
            "the members' columns end at " + std::to_string(next) + ", matrix '" + mm.name + "' has " +
                std::to_string(ns_wide_columns(mm)));
  }
  if (!plan.matrix_owner.empty() && plan.matrix_owner.at(m) != group.ranks.front()) {
    fail_ns(group.ranks.front(), first, "the group is not led by the matrix's owner, rank " + std::to_string(plan.matrix_owner[m]));
  }
}

}  // namespace

void check_sharded_ns(const Plan& plan, const Routing& routing) {
  std::map<std::int64_t, std::vector<Member>> calls;
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    for (const Op& op : plan.ranks[static_cast<std::size_t>(r)]) {
      if (is_sharded_ns(op)) calls[op.collective].push_back({r, &op});
    }
  }
  for (const auto& [id, members] : calls) check_columns(plan, routing, members);
}

}  // namespace dmuon
