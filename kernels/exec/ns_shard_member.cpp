#include "kernels/exec/ns_shard_member.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "core/plan/ns_sharding.hpp"

namespace dmuon::exec {

std::vector<Region> NsShardMember::regions() const {
  std::vector<Region> out;
  for (std::int64_t i = 0; i < lines; ++i) out.push_back({block.param, block.offset + i * pitch_elements, line_elements});
  return out;
}

NsShardMember ns_shard_member(const Op& op, const Plan& plan, int rank, const Routing& routing, const std::string& where) {
  if (!is_sharded_ns(op)) throw Error(where + ": not a sharded Newton-Schulz op");
  if (op.matrices.size() != 1 || op.matrices.front() >= routing.muon_matrices.size()) {
    throw Error(where + ": a sharded Newton-Schulz op names one known Muon matrix, this one " +
                std::to_string(op.matrices.size()));
  }
  if (op.group < 0 || op.group >= static_cast<int>(plan.groups.size())) {
    throw Error(where + ": unknown group " + std::to_string(op.group));
  }
  const std::vector<int>& ranks = plan.groups[static_cast<std::size_t>(op.group)].ranks;
  const auto it = std::find(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end()) {
    throw Error(where + ": rank " + std::to_string(rank) + " is not a member of group '" +
                plan.groups[static_cast<std::size_t>(op.group)].name + "'");
  }
  NsShardMember s;
  s.matrix = op.matrices.front();
  s.position = static_cast<int>(it - ranks.begin());
  s.members = static_cast<int>(ranks.size());
  const MuonMatrix& mm = routing.muon_matrices[s.matrix];
  const std::int64_t n = ns_wide_columns(mm);
  if (op.ns_column_begin < 0 || op.ns_column_end > n || op.ns_column_begin >= op.ns_column_end) {
    throw Error(where + ": columns [" + std::to_string(op.ns_column_begin) + ", " + std::to_string(op.ns_column_end) +
                ") of matrix '" + mm.name + "' (" + std::to_string(n) + " columns in its wide orientation)");
  }
  if (splits_ns_products(op)) {
    const std::int64_t m = ns_wide_rows(mm);
    if (!holds_product_block(op, m, s.members, s.position)) {
      throw Error(where + ": product columns [" + std::to_string(op.ns_product_begin) + ", " +
                  std::to_string(op.ns_product_end) + ") are not member " + std::to_string(s.position) + "'s block of " +
                  std::to_string(m) + " over " + std::to_string(s.members));
    }
    s.split_products = true;
  }
  s.column_begin = op.ns_column_begin;
  s.column_end = op.ns_column_end;
  s.m = static_cast<long>(ns_wide_rows(mm));
  s.columns = static_cast<long>(s.column_end - s.column_begin);
  s.column_major = ns_shard_by_stored_rows(mm);
  const Region whole = matrix_region(routing, s.matrix);
  if (s.column_major) {  // rows [begin, end) of the stored matrix, back to back
    s.lines = 1;
    s.line_elements = s.pitch_elements = s.columns * mm.cols;
    s.block = {whole.param, whole.offset + s.column_begin * mm.cols, s.line_elements};
  } else {  // columns [begin, end) of every row
    s.lines = mm.rows;
    s.line_elements = s.columns;
    s.pitch_elements = mm.cols;
    s.block = {whole.param, whole.offset + s.column_begin, (s.lines - 1) * s.pitch_elements + s.line_elements};
  }
  return s;
}

std::map<int, NsShardMember> checked_ns_shard_members(const Plan& plan, int rank, const Routing& routing) {
  std::map<int, NsShardMember> mine;
  std::map<std::int64_t, bool> splits_call;  // by collective id: the first member's choice
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[static_cast<std::size_t>(i)];
      if (!is_sharded_ns(op)) continue;
      const std::string where = "rank " + std::to_string(r) + " op " + std::to_string(i) + " (newton_schulz '" + op.label +
                                "', collective " + std::to_string(op.collective) + ")";
      NsShardMember member = ns_shard_member(op, plan, r, routing, where);
      const auto [first, added] = splits_call.emplace(op.collective, member.split_products);
      if (!added && first->second != member.split_products) {
        throw Error(where + ": " + (member.split_products ? "splits" : "does not split") +
                    " its m x m products while another member of the call does" + (first->second ? "" : " not"));
      }
      if (r == rank) mine.emplace(i, std::move(member));
    }
  }
  return mine;
}

}  // namespace dmuon::exec
