// The persistent tile order of the symmetric product S = X X^T: only the lower triangle of the
// T x T grid of 128 x 128 output tiles is computed. A row block a holds a + 1 tiles (columns
// 0..a); they are taken two at a time (columns 2j, 2j+1: one 128 x 256 work item that reads the
// row block once for both), and even rows leave their diagonal tile as a single. Pairs come
// first and singles (half the work) last, so a greedy atomic scheduler finishes evenly: for
// m = 4096 (T = 32) that is 256 pairs + 16 singles = 528 tile-equivalents, exactly 4 per SM of 132.
// Host and device code; no CUDA runtime calls.
#pragma once
#include <cmath>

#ifdef __CUDACC__
#define DMUON_HD __host__ __device__ __forceinline__
#else
#define DMUON_HD inline
#endif

namespace dmuon::cuda::sym {

constexpr int kTile = 128;  // output tile edge, rows of X per TMA box

struct TriTile {
  int batch = 0;
  int row_block = 0;
  int col0 = 0;
  int col1 = -1;  // -1: a single (diagonal) tile
};

DMUON_HD long tri_pairs(long t) { return t * t / 4; }  // sum over rows a < t of (a + 1) / 2
DMUON_HD long tri_singles(long t) { return (t + 1) / 2; }
DMUON_HD long tri_items(long t, long batch) { return batch * (tri_pairs(t) + tri_singles(t)); }

DMUON_HD TriTile tri_decode(long item, long t, long batch) {
  TriTile tile;
  const long pairs = tri_pairs(t);
  if (item < batch * pairs) {
    tile.batch = static_cast<int>(item / pairs);
    const long p = item % pairs;
    // Row a holds pairs [a^2/4, (a+1)^2/4); a is about 2 sqrt(p), corrected by at most a step.
    long a = static_cast<long>(2.0 * sqrt(static_cast<double>(p)));
    while (a > 0 && a * a / 4 > p) --a;
    while ((a + 1) * (a + 1) / 4 <= p) ++a;
    const long j = p - a * a / 4;
    tile.row_block = static_cast<int>(a);
    tile.col0 = static_cast<int>(2 * j);
    tile.col1 = static_cast<int>(2 * j + 1);
    return tile;
  }
  const long s = item - batch * pairs;
  const long singles = tri_singles(t);
  tile.batch = static_cast<int>(s / singles);
  tile.row_block = tile.col0 = static_cast<int>(2 * (s % singles));
  return tile;
}

}  // namespace dmuon::cuda::sym
