// Efficiency of measured Newton-Schulz calls, interpolated to shapes and batches nobody
// measured (CostModel::ns_time step 3). Efficiency = roofline FLOPs / (seconds x gemm_tflops).
#pragma once
#include <map>

namespace dmuon {

// Points (m = min dim, n = max dim, batch) -> efficiency, answered piecewise linearly in
// log2 m, log2 n and log2 batch:
//  - for each measured batch: along each measured m, linear in log2 n between the two
//    measured n around it (clamped to the row's first / last n outside); then linear in log2 m
//    between the two measured m around it (clamped to the first / last m outside);
//  - then linear in log2 batch between the two measured batches around it (clamped outside).
// Why logs: GEMM efficiency grows per doubling of a dimension (tiles filling SMs) and the
// calibration grid is in powers of two. Why batch last and separate from n: a batch adds
// output tiles (m x m per matrix) while a longer n only lengthens the reduction, so the two do
// not trade one for one; each batch gets its own (m, n) surface. On a full rectangular grid
// this is exactly trilinear interpolation in the logs, so a function linear in them is
// reproduced exactly; on a ragged grid (only m <= n exists) it is the same construction with
// each row clamped at its own ends. Clamping outside the measured range is a model choice:
// the nearest measured efficiency, never an extrapolated one.
class NsEfficiencyGrid {
 public:
  // Throws dmuon::Error for a repeated point or a non-positive argument.
  void add(long m, long n, int batch, double efficiency);
  bool empty() const { return points_.empty(); }
  // Throws dmuon::Error when empty or an argument is not positive.
  double at(long m, long n, int batch) const;

 private:
  using Row = std::map<long, double>;        // n -> efficiency
  using Surface = std::map<long, Row>;       // m -> row
  static double along_row(const Row& row, long n);
  static double on_surface(const Surface& surface, long m, long n);
  std::map<int, Surface> points_;            // batch -> surface
};

}  // namespace dmuon
