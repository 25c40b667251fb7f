// The persistent tile order of the symmetric product S = X X^T over the lower triangle of the
// T x T grid of 128 x 128 output tiles, for clusters of two CTAs.
//
// Work comes in 128 x 256 pieces: one row block a against the column pair (2j, 2j+1), present
// when a >= 2j + 1; even rows also hold their diagonal tile (a, a) as a 128 x 128 single.
// A cluster item gives each of its two CTAs one piece:
//   shared:      rows (a, a + 1) against the same column pair j: each CTA loads half of the pair
//                and multicasts it to both, so the column pair crosses L2 once for two pieces
//                (the L2-to-SM traffic per CTA falls from 48 to 32 KiB a k step);
//   independent: two unrelated pieces (row T-1's pairs left over when T is even, then the
//                diagonal singles), each CTA loading its own; a missing second one is a dummy
//                that computes and stores nothing real.
// Items go to clusters in a boustrophedon (round k forward, round k+1 backward), so the last
// rounds' cheap singles land on the clusters that took fewer pairs: for m = 4096 (T = 32) that is
// 120 shared + 8 leftover-pair + 8 single items = exactly 4 tile-units on each of 66 clusters.
// Host and device code; no CUDA runtime calls.
#pragma once

#ifdef __CUDACC__
#define DMUON_HD __host__ __device__ __forceinline__
#else
#define DMUON_HD inline
#endif

namespace dmuon::cuda::sym {

constexpr int kTile = 128;  // output tile edge, rows of X per TMA box

struct Piece {
  int batch = 0;
  int row_block = 0;
  int col0 = 0;
  int col1 = -1;          // -1: a single (diagonal) tile
  bool multicast = false; // shared item: this CTA loads column block col0 + rank for both
  bool store = true;      // false: a dummy
};

// Per batch entry: column pairs, shared items, leftover pairs (row T-1, T even), singles.
DMUON_HD long col_pairs(long t) { return t / 2; }
DMUON_HD long shared_items(long t) {  // sum over j of floor((t - 1 - 2j) / 2)
  long n = 0;
  for (long j = 0; j < col_pairs(t); ++j) n += (t - 1 - 2 * j) / 2;
  return n;
}
DMUON_HD long leftover_pairs(long t) { return t % 2 == 0 ? col_pairs(t) : 0; }
DMUON_HD long singles(long t) { return (t + 1) / 2; }
DMUON_HD long independent_items(long t, long batch) {
  return (batch * (leftover_pairs(t) + singles(t)) + 1) / 2;
}
DMUON_HD long cluster_items(long t, long batch) { return batch * shared_items(t) + independent_items(t, batch); }

// The k-th item (k = 0, 1, ...) of cluster c among nc, or -1 when it has no more.
DMUON_HD long cluster_item(long c, long nc, long k, long total) {
  const long item = k * nc + (k % 2 == 0 ? c : nc - 1 - c);
  return item < total ? item : -1;
}

// Entry e of the independent list: all batches' leftover pairs first (2 units), then singles.
DMUON_HD Piece independent_piece(long e, long t, long batch) {
  Piece p;
  const long left = batch * leftover_pairs(t);
  if (e < left) {
    p.batch = static_cast<int>(e / leftover_pairs(t));
    const long j = e % leftover_pairs(t);
    p.row_block = static_cast<int>(t - 1);
    p.col0 = static_cast<int>(2 * j);
    p.col1 = static_cast<int>(2 * j + 1);
    return p;
  }
  e -= left;
  if (e >= batch * singles(t)) {  // dummy: a valid single whose result is dropped
    p.store = false;
    return p;
  }
  p.batch = static_cast<int>(e / singles(t));
  p.row_block = p.col0 = static_cast<int>(2 * (e % singles(t)));
  return p;
}

// The piece of cluster item `item` that the CTA of cluster rank `rank` (0 or 1) computes.
DMUON_HD Piece decode_piece(long item, int rank, long t, long batch) {
  const long per_batch = shared_items(t);
  if (item >= batch * per_batch) return independent_piece(2 * (item - batch * per_batch) + rank, t, batch);
  Piece p;
  p.batch = static_cast<int>(item / per_batch);
  long i = item % per_batch;
  long j = 0;
  while (i >= (t - 1 - 2 * j) / 2) {
    i -= (t - 1 - 2 * j) / 2;
    ++j;
  }
  p.row_block = static_cast<int>(2 * j + 1 + 2 * i + rank);
  p.col0 = static_cast<int>(2 * j);
  p.col1 = static_cast<int>(2 * j + 1);
  p.multicast = true;
  return p;
}

}  // namespace dmuon::cuda::sym
