#include "core/cost/forward_backward_grid.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace dmuon {
namespace {

// Interpolates along axis `axis` among `subset`, recursing into the points on each bracketing
// value of that axis; past the last axis, the mean of the points left.
double interpolate_axis(const std::vector<const GridPoint*>& subset, std::size_t axis, const std::vector<double>& q) {
  if (axis == q.size()) {
    double sum = 0;
    for (const GridPoint* p : subset) sum += p->value;
    return sum / double(subset.size());
  }
  std::vector<double> values;
  for (const GridPoint* p : subset) values.push_back(p->x[axis]);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const double x = std::clamp(q[axis], values.front(), values.back());
  auto hi = std::lower_bound(values.begin(), values.end(), x);
  auto lo = (*hi == x) ? hi : hi - 1;
  auto at = [&](double v) {
    std::vector<const GridPoint*> slice;
    for (const GridPoint* p : subset) {
      if (p->x[axis] == v) slice.push_back(p);
    }
    return interpolate_axis(slice, axis + 1, q);
  };
  if (lo == hi) return at(*lo);
  const double w = (x - *lo) / (*hi - *lo);
  return at(*lo) * (1 - w) + at(*hi) * w;
}

double log2_of(double v, const char* what) {
  if (!(v > 0) || !std::isfinite(v)) throw Error(std::string("forward_backward: ") + what + " must be > 0");
  return std::log2(v);
}

}  // namespace

double interpolate_grid(const std::vector<GridPoint>& points, const std::vector<double>& query) {
  if (points.empty()) throw Error("forward_backward: interpolation over an empty grid");
  std::vector<const GridPoint*> all;
  for (const auto& p : points) {
    if (p.x.size() != query.size()) throw Error("forward_backward: grid point with another number of axes");
    all.push_back(&p);
  }
  return interpolate_axis(all, 0, query);
}

GemmGrid::GemmGrid(const std::vector<GemmTiming>& timings) {
  for (const auto& g : timings) {
    const std::vector<double> x{log2_of(double(g.tokens), "gemm.tokens"), log2_of(double(g.in_features), "gemm.in"),
                                log2_of(double(g.out_features), "gemm.out")};
    const double flops = 2.0 * double(g.tokens) * double(g.in_features) * double(g.out_features);
    forward_.push_back({x, flops / g.forward_s});
    backward_.push_back({x, 2 * flops / g.backward_s});
  }
}

ForwardBackwardSeconds GemmGrid::seconds(double tokens, double in_features, double out_features) const {
  const std::vector<double> q{log2_of(tokens, "gemm tokens"), log2_of(in_features, "gemm in"),
                              log2_of(out_features, "gemm out")};
  const double flops = 2.0 * tokens * in_features * out_features;
  return {flops / interpolate_grid(forward_, q), 2 * flops / interpolate_grid(backward_, q)};
}

double AttentionGrid::forward_flops(double samples, double seq_len, double heads, double head_dim) {
  return 4.0 * seq_len * seq_len * head_dim * heads * samples / 2;
}

AttentionGrid::AttentionGrid(const std::vector<AttentionTiming>& timings) {
  for (const auto& a : timings) {
    const std::vector<double> x{log2_of(double(a.seq_len), "attention.seq_len"),
                                log2_of(double(a.head_dim), "attention.head_dim")};
    const double flops = forward_flops(double(a.samples), double(a.seq_len), double(a.heads), double(a.head_dim));
    forward_.push_back({x, flops / a.forward_s});
    backward_.push_back({x, flops / a.backward_s});
  }
}

ForwardBackwardSeconds AttentionGrid::seconds(double samples, double seq_len, double heads, double head_dim) const {
  const std::vector<double> q{log2_of(seq_len, "attention seq_len"), log2_of(head_dim, "attention head_dim")};
  const double flops = forward_flops(samples, seq_len, heads, head_dim);
  return {flops / interpolate_grid(forward_, q), flops / interpolate_grid(backward_, q)};
}

}  // namespace dmuon
