#include "core/owners/owner_assignment.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "core/owners/owner_problem.hpp"

namespace dmuon {
namespace od = owner_detail;

std::string_view to_string(OwnerAlgorithm algorithm) {
  switch (algorithm) {
    case OwnerAlgorithm::round_robin: return "round_robin";
    case OwnerAlgorithm::lpt: return "lpt";
    case OwnerAlgorithm::refined: return "refined";
  }
  return "?";
}

OwnerAlgorithm parse_owner_algorithm(std::string_view name, const std::string& what) {
  if (name == "round_robin") return OwnerAlgorithm::round_robin;
  if (name == "lpt") return OwnerAlgorithm::lpt;
  if (name == "refined") return OwnerAlgorithm::refined;
  throw Error(what + ": unknown owner algorithm '" + std::string(name) +
              "' (expected round_robin, lpt or refined)");
}

BatchCost ns_batch_cost(const CostModel& model, const NsConfig& ns) {
  const NsKernel kernel = ns_kernel_of(ns);
  return [model, kernel, dtype = ns.compute_dtype, steps = ns.steps, restarts = ns.restarts](
             long rows, long cols, int batch) {
    return model.ns_seconds(rows, cols, kernel, dtype, steps, restarts, batch);
  };
}

double owner_elementwise_seconds(const CostModel& model, double elements) {
  const auto n = static_cast<std::int64_t>(elements);
  return model.elementwise_time(CostModel::momentum_bytes(n), ElementwiseKind::momentum).seconds +
         model.elementwise_time(CostModel::muon_update_bytes(n), ElementwiseKind::muon_update).seconds;
}

BatchCost owner_batch_cost(const CostModel& model, const NsConfig& ns) {
  return [ns_cost = ns_batch_cost(model, ns), model](long rows, long cols, int batch) {
    return ns_cost(rows, cols, batch) + batch * owner_elementwise_seconds(model, double(rows) * double(cols));
  };
}

namespace owner_detail {

void summarize_loads(Assignment& a) {
  const auto ranks = static_cast<double>(a.load_seconds.size());
  a.makespan_seconds = *std::max_element(a.load_seconds.begin(), a.load_seconds.end());
  a.mean_seconds = std::accumulate(a.load_seconds.begin(), a.load_seconds.end(), 0.0) / ranks;
  a.compute_makespan_seconds = *std::max_element(a.compute_seconds.begin(), a.compute_seconds.end());
  a.compute_mean_seconds = std::accumulate(a.compute_seconds.begin(), a.compute_seconds.end(), 0.0) / ranks;
}

std::vector<int> owners_round_robin(const Problem& p) {
  std::vector<std::size_t> order(p.units.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p.units[a].flops > p.units[b].flops; });
  RankLoads loads(p);
  std::vector<int> owner(p.units.size(), -1);
  int next = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Unit& u = p.units[order[k]];
    // The baseline ignores memory; a rank without room passes its turn to the next one.
    int tries = 0;
    while (tries < p.ranks && !loads.fits(next, nullptr, &u)) {
      next = (next + 1) % p.ranks;
      ++tries;
    }
    if (tries == p.ranks) fail_no_room(p, loads, u, k);
    owner[order[k]] = next;
    loads.add(next, u);
    next = (next + 1) % p.ranks;
  }
  return owner;
}

std::vector<int> owners_lpt(const Problem& p) {
  std::vector<std::size_t> order(p.units.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Unit &x = p.units[a], &y = p.units[b];
    if (x.seconds != y.seconds) return x.seconds > y.seconds;
    return x.bytes > y.bytes;
  });
  RankLoads loads(p);
  std::vector<int> owner(p.units.size(), -1);
  double makespan = 0;
  for (int r = 0; r < p.ranks; ++r) makespan = std::max(makespan, loads.load(r));
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Unit& u = p.units[order[k]];
    // The least loaded rank; but any rank the unit leaves within the makespan so far does as
    // well for the makespan, so among those the one that computes the least (the two differ
    // where a base load holds sharded calls' collectives, which compute does not count).
    int best = -1;
    double best_over = 0;
    for (int r = 0; r < p.ranks; ++r) {
      if (!loads.fits(r, nullptr, &u)) continue;
      const double over = std::max(makespan, loads.load(r) + u.seconds);
      if (best < 0 || over < best_over || (over == best_over && loads.compute(r) < loads.compute(best))) best = r, best_over = over;
    }
    if (best < 0) fail_no_room(p, loads, u, k);
    owner[order[k]] = best;
    loads.add(best, u);
    makespan = std::max(makespan, loads.load(best));
  }
  return owner;
}

}  // namespace owner_detail

namespace {

// Units are checked up front so that a matrix too large for any rank is named as such, not
// reported as memory running out halfway.
void check_units_fit(const od::Problem& p) {
  const double largest = *std::max_element(p.capacity_bytes.begin(), p.capacity_bytes.end());
  for (const auto& u : p.units) {
    if (u.bytes > largest) {
      throw Error("owner assignment: " + u.label + " needs " + std::to_string(std::int64_t(u.bytes)) +
                  " bytes; the largest free rank memory is " + std::to_string(std::int64_t(largest)) + " bytes");
    }
  }
}

std::vector<NsBatch> rank_batches(const od::Problem& p, const std::vector<std::size_t>& owned) {
  std::vector<NsBatch> out;
  for (std::size_t s = 0; s < p.shapes.size(); ++s) {
    const auto& shape = p.shapes[s];
    std::vector<std::size_t> same;
    for (std::size_t i : owned) {
      if (p.shape_of_matrix[i] == int(s)) same.push_back(i);
    }
    for (std::size_t first = 0; first < same.size(); first += shape.batch) {
      const std::size_t last = std::min(same.size(), first + shape.batch);
      out.push_back({shape.rows, shape.cols, {same.begin() + first, same.begin() + last}});
    }
  }
  return out;
}

Assignment summarize(const od::Problem& p, const std::vector<MuonMatrix>& matrices, std::vector<int> owner_of_matrix,
                     const AssignmentOptions& options) {
  Assignment a;
  a.owner_of_matrix = std::move(owner_of_matrix);
  a.units = int(p.units.size());
  std::vector<std::vector<std::size_t>> owned(p.ranks);
  for (std::size_t i = 0; i < matrices.size(); ++i) owned[a.owner_of_matrix[i]].push_back(i);
  std::vector<std::vector<std::int64_t>> counts(p.ranks, std::vector<std::int64_t>(p.shapes.size(), 0));
  a.load_seconds.assign(p.ranks, 0.0);
  a.compute_seconds.assign(p.ranks, 0.0);
  a.memory_bytes.assign(p.ranks, 0.0);
  double volume_seconds = 0;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    const int r = a.owner_of_matrix[i];
    ++counts[r][p.shape_of_matrix[i]];
    a.memory_bytes[r] += double(matrices[i].rows) * double(matrices[i].cols) * options.bytes_per_element_owned;
    volume_seconds += p.shapes[p.shape_of_matrix[i]].best_seconds_per_matrix;
  }
  for (int r = 0; r < p.ranks; ++r) {
    a.load_seconds[r] = p.base_seconds[r];
    for (std::size_t s = 0; s < p.shapes.size(); ++s) {
      if (counts[r][s] > 0) a.load_seconds[r] += p.shapes[s].seconds(counts[r][s]);
    }
    a.compute_seconds[r] = a.load_seconds[r] - p.base_collective_seconds[r];
    a.batches.push_back(rank_batches(p, owned[r]));
  }
  od::summarize_loads(a);
  a.lower_bound_seconds = volume_seconds / p.ranks;
  // A unit's own time bounds its owner's load only when adding matrices never lowers a load.
  if (p.monotone) {
    for (const auto& u : p.units) a.lower_bound_seconds = std::max(a.lower_bound_seconds, u.seconds);
  }
  return a;
}

}  // namespace

Assignment assign_owners(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                         const AssignmentOptions& options) {
  const od::Problem p = od::build_problem(matrices, cost, options, true);
  check_units_fit(p);
  std::vector<int> unit_owner;
  bool optimal = false;
  switch (options.algorithm) {
    case OwnerAlgorithm::round_robin: unit_owner = od::owners_round_robin(p); break;
    case OwnerAlgorithm::lpt: unit_owner = od::owners_lpt(p); break;
    case OwnerAlgorithm::refined:
      unit_owner = od::owners_lpt(p);
      od::refine_owners(p, unit_owner);
      if (int(p.units.size()) <= options.exact_max_units && options.base_load_seconds.empty()) optimal = od::solve_owners_exact(p, unit_owner);
      break;
  }
  std::vector<int> owner_of_matrix(matrices.size(), -1);
  for (std::size_t u = 0; u < p.units.size(); ++u) {
    for (std::size_t i : p.units[u].matrices) owner_of_matrix[i] = unit_owner[u];
  }
  Assignment a = summarize(p, matrices, std::move(owner_of_matrix), options);
  a.proven_optimal = optimal;
  return a;
}

Assignment evaluate_owners(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                           const AssignmentOptions& options, const std::vector<int>& owner_of_matrix) {
  const od::Problem p = od::build_problem(matrices, cost, options, false);
  if (owner_of_matrix.size() != matrices.size()) {
    throw Error("owner assignment: " + std::to_string(owner_of_matrix.size()) + " owners for " +
                std::to_string(matrices.size()) + " matrices");
  }
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    if (owner_of_matrix[i] < 0 || owner_of_matrix[i] >= p.ranks) {
      throw Error("owner assignment: matrix '" + matrices[i].name + "' has owner " +
                  std::to_string(owner_of_matrix[i]) + ", outside [0, " + std::to_string(p.ranks) + ")");
    }
  }
  return summarize(p, matrices, owner_of_matrix, options);
}

}  // namespace dmuon
