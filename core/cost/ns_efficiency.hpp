// Efficiency of measured Newton-Schulz calls, interpolated to shapes and batches nobody
// measured (CostModel::ns_time step 3). Efficiency = roofline FLOPs / (seconds x gemm_tflops).
#pragma once
#include <map>

namespace dmuon {

// Points (m = min dim, n = max dim, batch) -> efficiency, answered piecewise linearly in
// log2 m, log2 n and log2 batch, nested so that every measured shape uses its own batches:
//  - linear in log2 m between the two measured m around the query (clamped outside);
//  - in each of those m, linear in log2 n between its two measured n around it (clamped to
//    the m's first / last n);
//  - in each of those (m, n), linear in log2 batch between its two measured batches around it
//    (clamped to that shape's first / last batch).
// Why logs: GEMM efficiency grows per doubling of a dimension (tiles filling SMs) and the
// calibration grid is in powers of two (half octaves of m from 1024). Why batch innermost: a batch adds output tiles (m x m
// per matrix) while a longer n only lengthens the reduction, so they do not trade one for
// one, and a grid measures many batches for small shapes and few for large ones; a batch
// surface shared across m would price a large matrix's batch from small matrices (the first
// H100 calibration priced 3072^2 x 56 at 1.51 ms a matrix, slower than one alone, for that
// reason). On a full rectangular grid this is exactly trilinear interpolation in the logs, so a
// function linear in them is reproduced exactly. Clamping outside the measured range is a
// model choice: the nearest measured efficiency, never an extrapolated one.
class NsEfficiencyGrid {
 public:
  // Throws dmuon::Error for a repeated point or a non-positive argument.
  void add(long m, long n, int batch, double efficiency);
  bool empty() const { return points_.empty(); }
  // Throws dmuon::Error when empty or an argument is not positive.
  double at(long m, long n, int batch) const;

 private:
  using Batches = std::map<int, double>;  // batch -> efficiency
  using Row = std::map<long, Batches>;    // n -> batches
  std::map<long, Row> points_;            // m -> row
};

}  // namespace dmuon
