// Plan::validate: structural checks that every executor relies on.
#include <algorithm>
#include <deque>
#include <sstream>

#include "core/error.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/replica_symmetry.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

// Each sharded Newton-Schulz call: one matrix, members on one node led by the matrix's owner,
// their column ranges tiling the wide orientation in group order (plan_validate_ns.cpp).
void check_sharded_ns(const Plan& plan, const Routing& routing);

namespace {

std::string describe(const Plan& plan, int rank, int index) {
  const Op& op = plan.ranks[static_cast<std::size_t>(rank)][static_cast<std::size_t>(index)];
  std::ostringstream s;
  s << "rank " << rank << " op " << index << " (" << to_string(op.kind);
  if (!op.label.empty()) s << " '" << op.label << "'";
  if (op.collective >= 0) s << ", collective " << op.collective;
  s << ")";
  return s.str();
}

[[noreturn]] void fail(const std::string& what) { throw Error("plan: " + what); }

void check_dependencies_and_groups(const Plan& plan) {
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      for (int d : ops[static_cast<std::size_t>(i)].deps) {
        if (d < 0 || d >= i) fail(describe(plan, r, i) + ": dependency " + std::to_string(d) + " is not an earlier op");
      }
      const Op& op = ops[static_cast<std::size_t>(i)];
      if (!synchronizes(op)) continue;
      if (op.group < 0 || op.group >= static_cast<int>(plan.groups.size())) {
        fail(describe(plan, r, i) + ": unknown group " + std::to_string(op.group));
      }
      const auto& members = plan.groups[static_cast<std::size_t>(op.group)].ranks;
      if (std::find(members.begin(), members.end(), r) == members.end()) {
        fail(describe(plan, r, i) + ": rank is not a member of group '" + plan.groups[static_cast<std::size_t>(op.group)].name + "'");
      }
    }
  }
}

bool same_collective(const Op& a, const Op& b) {
  return a.kind == b.kind && a.group == b.group && a.root == b.root && a.reduce_op == b.reduce_op &&
         a.buffer == b.buffer && a.regions == b.regions && a.parts == b.parts && a.transfers == b.transfers &&
         a.matrices == b.matrices;
}

// Every member of the group has exactly one op with the id, all describing the same collective,
// and every member issues the group's collectives in the same order. Flat tables rather than
// maps (a Plan at 1,024 GPUs holds millions of collective ops): uses by id in one array
// (counting sort, ranks ascending as before), and per group each member's ids in order.
void check_collectives_match(const Plan& plan) {
  std::int64_t max_id = -1;
  std::size_t uses_total = 0;
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[static_cast<std::size_t>(i)];
      if (!synchronizes(op)) continue;
      if (op.collective < 0) fail(describe(plan, r, i) + ": collective without id");
      max_id = std::max(max_id, op.collective);
      ++uses_total;
    }
  }
  // Ids are the builders' counters, dense from 0; sparse ones would only cost memory here.
  std::vector<std::size_t> first_use(static_cast<std::size_t>(max_id + 2), 0);
  std::vector<std::pair<int, int>> uses(uses_total);  // (rank, op index), grouped by id
  // order[g]: (rank, that rank's ids in the group, in issue order), ranks ascending.
  std::vector<std::vector<std::pair<int, std::vector<std::int64_t>>>> order(plan.groups.size());
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (synchronizes(op)) ++first_use[static_cast<std::size_t>(op.collective) + 1];
    }
  }
  for (std::size_t k = 1; k < first_use.size(); ++k) first_use[k] += first_use[k - 1];
  std::vector<std::size_t> fill(first_use.begin(), first_use.end() - 1);
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[static_cast<std::size_t>(i)];
      if (!synchronizes(op)) continue;
      uses[fill[static_cast<std::size_t>(op.collective)]++] = {r, i};
      auto& lists = order[static_cast<std::size_t>(op.group)];
      if (lists.empty() || lists.back().first != r) lists.push_back({r, {}});
      lists.back().second.push_back(op.collective);
    }
  }
  std::vector<int> seen;
  for (std::size_t id = 0; id + 1 < first_use.size(); ++id) {
    if (first_use[id] == first_use[id + 1]) continue;  // no op carries this id
    const auto [r0, i0] = uses[first_use[id]];
    const Op& first = plan.ranks[static_cast<std::size_t>(r0)][static_cast<std::size_t>(i0)];
    const auto& members = plan.groups[static_cast<std::size_t>(first.group)].ranks;
    seen.clear();
    for (std::size_t k = first_use[id]; k < first_use[id + 1]; ++k) {
      const auto [r, i] = uses[k];
      const Op& op = plan.ranks[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
      if (!same_collective(first, op)) {
        fail(describe(plan, r, i) + " does not match " + describe(plan, r0, i0) + " (kind, group, root, buffer or sizes differ)");
      }
      seen.push_back(r);
    }
    std::sort(seen.begin(), seen.end());
    for (int m : members) {
      if (!std::binary_search(seen.begin(), seen.end(), m)) {
        fail(describe(plan, r0, i0) + " has no matching op on rank " + std::to_string(m) + " of group '" +
             plan.groups[static_cast<std::size_t>(first.group)].name + "'");
      }
    }
    if (seen.size() != members.size()) fail(describe(plan, r0, i0) + " is issued more than once on a rank");
  }
  for (std::size_t g = 0; g < order.size(); ++g) {
    const auto& lists = order[g];
    for (std::size_t k = 1; k < lists.size(); ++k) {
      if (lists[k].second != lists.front().second) {
        fail("group '" + plan.groups[g].name + "': rank " + std::to_string(lists[k].first) +
             " issues its collectives in a different order than rank " + std::to_string(lists.front().first));
      }
    }
  }
}

// Runs every rank's list in order, a collective completing when all members reached it.
void check_no_deadlock(const Plan& plan) {
  const int world = static_cast<int>(plan.ranks.size());
  std::vector<std::size_t> next(static_cast<std::size_t>(world), 0);
  std::int64_t max_id = -1;  // ids are dense from 0 (check_collectives_match ran first)
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) max_id = std::max(max_id, op.collective);
  }
  std::vector<int> arrived(static_cast<std::size_t>(max_id + 1), 0);
  std::deque<int> ready;
  for (int r = 0; r < world; ++r) ready.push_back(r);
  while (!ready.empty()) {
    const int r = ready.front();
    ready.pop_front();
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    auto& i = next[static_cast<std::size_t>(r)];
    while (i < ops.size() && !synchronizes(ops[i])) ++i;
    if (i == ops.size()) continue;
    const Op& op = ops[i];
    const auto& members = plan.groups[static_cast<std::size_t>(op.group)].ranks;
    if (++arrived[static_cast<std::size_t>(op.collective)] < static_cast<int>(members.size())) continue;
    for (int m : members) {
      ++next[static_cast<std::size_t>(m)];
      ready.push_back(m);
    }
  }
  for (int r = 0; r < world; ++r) {
    const auto i = next[static_cast<std::size_t>(r)];
    if (i < plan.ranks[static_cast<std::size_t>(r)].size()) {
      fail("deadlock: " + describe(plan, r, static_cast<int>(i)) + " waits forever for its group");
    }
  }
}

struct Interval {
  std::int64_t begin, end;
  int rank;
};

// Each element updated at most once per rank, by the optimizer its routing says, and by some rank.
void check_updates(const Plan& plan, const ModelSpec& model, const Routing& routing) {
  std::vector<std::vector<Interval>> updates(model.params.size());
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[static_cast<std::size_t>(i)];
      if (op.kind != OpKind::muon_update && op.kind != OpKind::adamw) continue;
      for (const Region& reg : op.regions) {
        if (reg.param >= model.params.size() || reg.offset < 0 || reg.count < 0 ||
            reg.offset + reg.count > model.params[reg.param].numel()) {
          fail(describe(plan, r, i) + ": region outside its parameter");
        }
        const bool muon = routing.per_param[reg.param] == Update::muon && plan.strategy != Strategy::adamw;
        if (muon != (op.kind == OpKind::muon_update)) {
          fail(describe(plan, r, i) + ": parameter '" + model.params[reg.param].name + "' is routed to " +
               (muon ? "Muon" : "AdamW"));
        }
        if (reg.count > 0) updates[reg.param].push_back({reg.offset, reg.offset + reg.count, r});
      }
    }
  }
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    auto& v = updates[p];
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.begin < b.begin;
    });
    std::int64_t covered = 0;  // union over ranks, by sweeping begin-sorted intervals
    for (std::size_t k = 1; k < v.size(); ++k) {
      if (v[k].rank == v[k - 1].rank && v[k].begin < v[k - 1].end) {
        fail("parameter '" + model.params[p].name + "' is updated twice on rank " + std::to_string(v[k].rank));
      }
    }
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    for (const auto& iv : v) {
      if (iv.begin > covered) break;
      covered = std::max(covered, iv.end);
    }
    if (covered < model.params[p].numel()) {
      fail("parameter '" + model.params[p].name + "': elements from " + std::to_string(covered) + " are updated by no rank");
    }
  }
}

// How many ranks run Newton-Schulz on each Muon matrix, and where.
void check_newton_schulz(const Plan& plan, const Routing& routing) {
  std::vector<std::vector<int>> runs(routing.muon_matrices.size());
  std::vector<int> shard_group(routing.muon_matrices.size(), -1);  // a sharded call's group
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    for (const Op& op : plan.ranks[static_cast<std::size_t>(r)]) {
      if (op.kind != OpKind::newton_schulz) continue;
      for (std::size_t m : op.matrices) {
        if (m >= runs.size()) fail("rank " + std::to_string(r) + ": Newton-Schulz of unknown matrix " + std::to_string(m));
        runs[m].push_back(r);
        if (is_sharded_ns(op)) shard_group[m] = op.group;
      }
    }
  }
  const Mesh& mesh = plan.mesh;
  for (std::size_t m = 0; m < runs.size(); ++m) {
    const std::string name = "Muon matrix '" + routing.muon_matrices[m].name + "'";
    std::vector<int> expected;
    switch (traits(plan.strategy).ns_ranks) {
      case NsRanks::none: break;
      case NsRanks::every_rank:
        for (int r = 0; r < mesh.world(); ++r) expected.push_back(r);
        break;
      case NsRanks::owner:
        if (shard_group[m] >= 0) {  // its shard group (check_sharded_ns: led by the owner)
          expected = plan.groups[static_cast<std::size_t>(shard_group[m])].ranks;
        } else {
          expected.push_back(plan.matrix_owner.at(m));
        }
        break;
      case NsRanks::owner_per_replica:
        for (int rep = 0; rep < mesh.replicate; ++rep) {
          expected.push_back(mesh.rank(rep, mesh.shard_index_of(plan.matrix_owner.at(m))));
        }
        break;
    }
    auto got = runs[m];
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    if (got != expected) {
      if (got.empty()) fail(name + " has no Newton-Schulz (no owner)");
      fail(name + " runs Newton-Schulz on " + std::to_string(got.size()) + " rank(s) (first: rank " +
           std::to_string(got.front()) + "), expected " + std::to_string(expected.size()) +
           (expected.empty() ? "" : " (first: rank " + std::to_string(expected.front()) + ")"));
    }
  }
}

// A template with several replicas runs each of its lists on every one of them: an owner's work
// there (Newton-Schulz, momentum or update of a Muon matrix, which has one owner) would run once
// per replica, which the template replicas' Plan alone cannot see.
void check_shared_templates_hold_no_owner(const Plan& plan) {
  if (!traits(plan.strategy).has_owners() || plan.replica_template.empty()) return;
  const ReplicaMove move(plan);
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const int rep = plan.mesh.replica_of(r);
    if (move.template_of(rep) != rep || move.copies_of(rep) < 2) continue;
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const OpKind k = ops[static_cast<std::size_t>(i)].kind;
      if (k == OpKind::newton_schulz || k == OpKind::momentum || k == OpKind::muon_update) {
        fail(describe(plan, r, i) + ": an owner's work in template replica " + std::to_string(rep) + ", whose lists " +
             std::to_string(move.copies_of(rep)) + " replicas run");
      }
    }
  }
}

}  // namespace

void Plan::validate(const ModelSpec& model, const Routing& routing) const {
  if (static_cast<int>(ranks.size()) != mesh.world()) {
    fail(std::to_string(ranks.size()) + " rank lists for a mesh of " + std::to_string(mesh.world()) + " ranks");
  }
  if (folded && !replica_symmetric) fail("folded but not replica-symmetric");
  if (!replica_template.empty() && static_cast<int>(replica_template.size()) != mesh.replicate) {
    fail(std::to_string(replica_template.size()) + " replica templates for " + std::to_string(mesh.replicate) + " replicas");
  }
  if (folded) {
    for (int r = 0; r < mesh.world(); ++r) {
      if (template_rank(r) != r && !ranks[static_cast<std::size_t>(r)].empty()) {
        fail("folded, but rank " + std::to_string(r) + " outside the template replicas holds ops");
      }
    }
  }
  if (traits(strategy).has_owners()) {
    if (matrix_owner.size() != routing.muon_matrices.size()) fail("matrix_owner does not cover every Muon matrix");
  }
  if (replica_symmetric && mesh.replicate > 1) {
    // The template replicas stand for the others once they are their lists moved
    // (template_replicas says why); a folded Plan holds nothing else.
    if (!folded) check_replica_symmetric(*this);
    check_shared_templates_hold_no_owner(*this);
    template_replicas(*this).validate(model, routing);
    return;
  }
  check_dependencies_and_groups(*this);
  check_collectives_match(*this);
  check_no_deadlock(*this);
  check_sharded_ns(*this, routing);
  check_newton_schulz(*this, routing);
  check_updates(*this, model, routing);
}

}  // namespace dmuon
