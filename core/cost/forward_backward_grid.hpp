// Interpolation of the forward/backward building blocks measured on the GPU (the calibration's
// forward_backward section: bf16 GEMMs and causal flash attention, timed on PyTorch by
// harness/tools/measure_layers.py), so that a layer of a model never measured is priced from
// measured rates instead of one flat MFU.
//
// What is interpolated is the efficiency (FLOPs / second), not the time: efficiency varies
// slowly and nearly linearly in the log of each dimension (a GEMM fills the GPU better as it
// grows), while time spans orders of magnitude. Between grid points it is linear in the log2 of
// each axis, one axis after the other (multilinear on a full grid, so a function linear in the
// logs is reproduced exactly); outside the grid it is clamped at the edge, which overprices the
// efficiency of shapes smaller than the smallest measured one (e.g. MoE experts' few tokens).
#pragma once
#include <vector>

#include "core/cost/calibration.hpp"

namespace dmuon {

// A value at a point of an N-axis grid. The grid may be ragged (an axis value present only
// for some values of the earlier axes): each axis is bracketed among the points that match the
// axes before it. Several points at one coordinate are averaged.
struct GridPoint {
  std::vector<double> x;
  double value = 0;
};
// Throws dmuon::Error when `points` is empty or a point has another number of axes.
double interpolate_grid(const std::vector<GridPoint>& points, const std::vector<double>& query);

struct ForwardBackwardSeconds {
  double forward_s = 0, backward_s = 0;
};

// y = x W^T in bf16, x: tokens x in. Forward FLOPs 2 * tokens * in * out; backward (dgrad +
// wgrad) twice that. Axes: log2 tokens, log2 in, log2 out.
class GemmGrid {
 public:
  explicit GemmGrid(const std::vector<GemmTiming>& timings);
  bool empty() const { return forward_.empty(); }
  ForwardBackwardSeconds seconds(double tokens, double in_features, double out_features) const;

 private:
  std::vector<GridPoint> forward_, backward_;  // efficiency, FLOP/s
};

// Causal scaled-dot-product attention (flash) in bf16. Forward FLOPs 4 * s^2 * head_dim * heads
// * samples / 2 (two s x s x d products, half masked); the backward's efficiency is taken
// against the same count (it only needs to be consistent with the grid). Axes: log2 seq_len,
// log2 head_dim; entries with other heads, kv_heads or samples at the same (seq_len, head_dim)
// are averaged (flash attention's rate depends little on them once the GPU is full).
class AttentionGrid {
 public:
  explicit AttentionGrid(const std::vector<AttentionTiming>& timings);
  bool empty() const { return forward_.empty(); }
  ForwardBackwardSeconds seconds(double samples, double seq_len, double heads, double head_dim) const;
  static double forward_flops(double samples, double seq_len, double heads, double head_dim);

 private:
  std::vector<GridPoint> forward_, backward_;
};

}  // namespace dmuon
