#include "core/owners/owner_problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.hpp"
#include "core/cost/ns_flops.hpp"

namespace dmuon::owner_detail {
namespace {

[[noreturn]] void fail(const std::string& why) { throw Error("owner assignment: " + why); }

void check_options(const AssignmentOptions& o) {
  if (o.ranks < 1) fail("ranks must be >= 1, got " + std::to_string(o.ranks));
  if (o.max_batch < 1) fail("max_batch must be >= 1, got " + std::to_string(o.max_batch));
  if (o.pack_numel_threshold < 0) fail("pack_numel_threshold must be >= 0");
  if (!(o.bytes_per_element_owned >= 0)) fail("bytes_per_element_owned must be >= 0");
  if (!o.memory_capacity_bytes.empty() && o.memory_capacity_bytes.size() != std::size_t(o.ranks)) {
    fail("memory_capacity_bytes has " + std::to_string(o.memory_capacity_bytes.size()) +
         " entries for " + std::to_string(o.ranks) + " ranks");
  }
  for (double c : o.memory_capacity_bytes) {
    if (!(c >= 0)) fail("memory capacity must be >= 0 bytes, got " + std::to_string(c));
  }
}

ShapeCost price_shape(long rows, long cols, const BatchCost& cost, int batch) {
  ShapeCost s{rows, cols, batch, {0.0}, std::numeric_limits<double>::infinity(), true};
  for (int b = 1; b <= batch; ++b) {
    const double t = cost(rows, cols, b);
    if (!std::isfinite(t) || t < 0) {
      fail("cost of a batch of " + std::to_string(b) + " " + std::to_string(rows) + "x" +
           std::to_string(cols) + " matrices is " + std::to_string(t) + " s; it must be finite and >= 0");
    }
    s.monotone = s.monotone && t >= s.batch_seconds.back();
    s.batch_seconds.push_back(t);
    s.best_seconds_per_matrix = std::min(s.best_seconds_per_matrix, t / b);
  }
  return s;
}

std::string pack_label(const std::vector<MuonMatrix>& matrices, const Unit& u) {
  const auto& first = matrices[u.matrices.front()];
  if (u.matrices.size() == 1) return "matrix '" + first.name + "'";
  return "pack of " + std::to_string(u.matrices.size()) + " matrices of layer " +
         std::to_string(first.layer) + " ('" + first.name + "', ...)";
}

// Groups matrices into units: one per matrix, except the small matrices of each layer.
std::vector<Unit> group_units(const std::vector<MuonMatrix>& matrices, std::int64_t pack_numel_threshold) {
  std::vector<Unit> units;
  std::map<int, std::size_t> pack_of_layer;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    const auto& m = matrices[i];
    const bool small = m.layer >= 0 && m.rows * m.cols < pack_numel_threshold;
    if (small) {
      auto [it, added] = pack_of_layer.emplace(m.layer, units.size());
      if (added) units.emplace_back();
      units[it->second].matrices.push_back(i);
    } else {
      units.emplace_back().matrices.push_back(i);
    }
  }
  return units;
}

}  // namespace

Problem build_problem(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                      const AssignmentOptions& options, bool pack) {
  check_options(options);
  Problem p;
  p.ranks = options.ranks;
  p.capacity_bytes = options.memory_capacity_bytes;
  if (p.capacity_bytes.empty()) p.capacity_bytes.assign(p.ranks, std::numeric_limits<double>::infinity());
  p.base_seconds = options.base_load_seconds;
  if (p.base_seconds.empty()) p.base_seconds.assign(p.ranks, 0.0);
  if (p.base_seconds.size() != std::size_t(p.ranks)) {
    fail("base_load_seconds has " + std::to_string(p.base_seconds.size()) + " entries for " + std::to_string(p.ranks) + " ranks");
  }
  p.base_collective_seconds = options.base_collective_seconds;
  if (p.base_collective_seconds.empty()) p.base_collective_seconds.assign(p.ranks, 0.0);
  if (p.base_collective_seconds.size() != std::size_t(p.ranks)) {
    fail("base_collective_seconds has " + std::to_string(p.base_collective_seconds.size()) + " entries for " +
         std::to_string(p.ranks) + " ranks");
  }
  const int batch = options.batch_same_shape ? options.max_batch : 1;
  std::map<std::pair<long, long>, int> shape_index;
  for (const auto& m : matrices) {
    if (m.rows < 1 || m.cols < 1) fail("matrix '" + m.name + "' has a non-positive dimension");
    auto [it, added] = shape_index.emplace(std::pair<long, long>(m.rows, m.cols), int(p.shapes.size()));
    if (added) p.shapes.push_back(price_shape(m.rows, m.cols, cost, batch));
    p.shape_of_matrix.push_back(it->second);
  }
  for (const auto& s : p.shapes) p.monotone = p.monotone && s.monotone;

  p.units = group_units(matrices, pack ? options.pack_numel_threshold : 0);
  std::map<std::pair<std::vector<std::pair<int, int>>, double>, int> type_of;
  for (auto& u : p.units) {
    std::map<int, int> counts;
    for (std::size_t i : u.matrices) {
      const auto& m = matrices[i];
      ++counts[p.shape_of_matrix[i]];
      u.bytes += double(m.rows) * double(m.cols) * options.bytes_per_element_owned;
      u.flops += ns_useful_flops(m.rows, m.cols, 1);
    }
    u.shape_counts.assign(counts.begin(), counts.end());
    for (const auto& [s, c] : u.shape_counts) u.seconds += p.shapes[s].seconds(c);
    u.label = pack_label(matrices, u);
    u.type = type_of.emplace(std::make_pair(u.shape_counts, u.bytes), int(type_of.size())).first->second;
  }
  p.types = int(type_of.size());
  return p;
}

RankLoads::RankLoads(const Problem& problem)
    : problem_(&problem),
      count_(problem.ranks, std::vector<std::int64_t>(problem.shapes.size(), 0)),
      load_(problem.base_seconds),
      memory_(problem.ranks, 0.0),
      units_(problem.ranks, 0) {}

double RankLoads::load_with(int rank, const Unit* out, const Unit* in) const {
  const auto& counts = count_[rank];
  auto count_in = [](const Unit* u, int shape) {
    if (!u) return 0;
    for (const auto& [s, c] : u->shape_counts) if (s == shape) return c;
    return 0;
  };
  double load = load_[rank];
  // Re-price each shape either unit touches once, with both changes applied together.
  auto reprice = [&](int shape, bool skip_if_in_out) {
    if (skip_if_in_out && count_in(out, shape) > 0) return;
    const auto& sc = problem_->shapes[shape];
    const std::int64_t n = counts[shape];
    load += sc.seconds(n - count_in(out, shape) + count_in(in, shape)) - sc.seconds(n);
  };
  if (out) for (const auto& sc : out->shape_counts) reprice(sc.first, false);
  if (in) for (const auto& sc : in->shape_counts) reprice(sc.first, true);
  return load;
}

bool RankLoads::fits(int rank, const Unit* out, const Unit* in) const {
  const double bytes = memory_[rank] - (out ? out->bytes : 0) + (in ? in->bytes : 0);
  return bytes <= problem_->capacity_bytes[rank];
}

// From the counts, not by adding deltas: a load that thousands of moves touched carries no
// accumulated rounding, so equal assignments always compare equal.
void RankLoads::reprice_rank(int rank) {
  double load = problem_->base_seconds[rank];
  for (std::size_t s = 0; s < count_[rank].size(); ++s) {
    if (count_[rank][s] > 0) load += problem_->shapes[s].seconds(count_[rank][s]);
  }
  load_[rank] = load;
}

void RankLoads::add(int rank, const Unit& unit) {
  for (const auto& [s, c] : unit.shape_counts) count_[rank][s] += c;
  reprice_rank(rank);
  memory_[rank] += unit.bytes;
  ++units_[rank];
}

void RankLoads::remove(int rank, const Unit& unit) {
  for (const auto& [s, c] : unit.shape_counts) count_[rank][s] -= c;
  reprice_rank(rank);
  memory_[rank] -= unit.bytes;
  --units_[rank];
}

void fail_no_room(const Problem& problem, const RankLoads& loads, const Unit& unit, std::size_t placed) {
  double largest_free = 0;
  for (int r = 0; r < problem.ranks; ++r) {
    largest_free = std::max(largest_free, problem.capacity_bytes[r] - loads.memory(r));
  }
  fail("no rank has room for " + unit.label + " (" + std::to_string(std::int64_t(unit.bytes)) +
       " bytes) after placing " + std::to_string(placed) + " of " + std::to_string(problem.units.size()) +
       " units; the largest free rank memory is " + std::to_string(std::int64_t(largest_free)) + " bytes");
}

}  // namespace dmuon::owner_detail
