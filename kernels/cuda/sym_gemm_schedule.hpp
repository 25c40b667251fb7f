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
// Diagonal pairs (one-operand products, A A^T, where a diagonal tile (a, a) reads only row block a;
// the launcher uses them only without C, sym_gemm_sm90.cu says why):
// two singles make one "double" piece, each consumer warpgroup computing one whole diagonal tile
// from one box, so the double costs a pair's tensor time and fewer loads. Without them the
// singles' items cost more than the half of a pair's their tile count says (half the tensor work,
// the same k loop's waits, two unshared boxes, an epilogue each): on 4096 x 14336 the busiest SM
// stayed active 11% longer than the average (ncu, 2026-11-27), and pairing took 10% off the kernel.
// Items go to clusters in a boustrophedon (round k forward, round k+1 backward), so the last
// rounds' cheap singles land on the clusters that took fewer pairs: for m = 4096 (T = 32) that is
// 120 shared + 8 leftover-pair + 8 single items = exactly 4 tile-units on each of 66 clusters, or
// with diagonal pairs 120 + 8 + 4 double items: two items of a pair's cost on every cluster.
// Stream-K (stream_k_clusters below): where those items leave clusters idle (m <= 2048: 36 items
// of a 2048 x 2048 product for 66 clusters), the clusters instead split the items' k steps evenly,
// each taking one contiguous range of the (item, k step) sequence. An item whose steps fall in
// several ranges is "split": each range's segment accumulates its part, and the segment holding
// k step 0 (the last segment of its cluster's range, so the others, each the first of theirs,
// are done or nearly) adds their fp32 partials in segment order and runs the epilogue.
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
  // A double (diagonal pairs): consumer half 0 computes the diagonal tile (row_block, row_block)
  // of `batch`, half 1 the tile (diag_row, diag_row) of diag_batch; -1: not a double.
  int diag_row = -1;
  int diag_batch = 0;
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
// Pieces made of the batch's singles: two a double with diag_pairs (an odd one left alone).
DMUON_HD long single_pieces(long t, long batch, bool diag_pairs) {
  const long s = batch * singles(t);
  return diag_pairs ? (s + 1) / 2 : s;
}
DMUON_HD long independent_items(long t, long batch, bool diag_pairs) {
  return (batch * leftover_pairs(t) + single_pieces(t, batch, diag_pairs) + 1) / 2;
}
DMUON_HD long cluster_items(long t, long batch, bool diag_pairs) {
  return batch * shared_items(t) + independent_items(t, batch, diag_pairs);
}

// The k-th item (k = 0, 1, ...) of cluster c among nc, or -1 when it has no more.
DMUON_HD long cluster_item(long c, long nc, long k, long total) {
  const long item = k * nc + (k % 2 == 0 ? c : nc - 1 - c);
  return item < total ? item : -1;
}

// Batch and row block of the batch's i-th single (the diagonal tile of an even row block).
DMUON_HD void single_tile(long i, long t, int& batch, int& row) {
  batch = static_cast<int>(i / singles(t));
  row = static_cast<int>(2 * (i % singles(t)));
}

// Entry e of the independent list: all batches' leftover pairs first (2 units), then the singles,
// two to a double with diag_pairs (2 units; an odd last one alone), else one a piece (1 unit).
DMUON_HD Piece independent_piece(long e, long t, long batch, bool diag_pairs) {
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
  if (e >= single_pieces(t, batch, diag_pairs)) {  // dummy: a valid single whose result is dropped
    p.store = false;
    return p;
  }
  const long first = diag_pairs ? 2 * e : e;
  single_tile(first, t, p.batch, p.row_block);
  p.col0 = p.row_block;
  if (diag_pairs && first + 1 < batch * singles(t)) single_tile(first + 1, t, p.diag_batch, p.diag_row);
  return p;
}

// The piece of cluster item `item` that the CTA of cluster rank `rank` (0 or 1) computes.
DMUON_HD Piece decode_piece(long item, int rank, long t, long batch, bool diag_pairs) {
  const long per_batch = shared_items(t);
  if (item >= batch * per_batch) {
    return independent_piece(2 * (item - batch * per_batch) + rank, t, batch, diag_pairs);
  }
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

// One cluster's contiguous run of k steps [k0, k1) of one item; item -1: the cluster is done.
struct Segment {
  long item = -1;
  int k0 = 0, k1 = 0;
};

// Cluster c of nc takes steps [range_begin(c), range_begin(c + 1)) of steps = items * k_iters.
DMUON_HD long range_begin(long c, long nc, long steps) { return c * steps / nc; }
// The cluster whose range holds step s: the largest c with range_begin(c) <= s.
DMUON_HD long cluster_of_step(long s, long nc, long steps) { return ((s + 1) * nc - 1) / steps; }

// The idx-th segment (idx = 0, 1, ...) of cluster c: with stream_k, its range cut at item
// boundaries; otherwise the whole k range of its idx-th item of the boustrophedon.
DMUON_HD Segment segment_of(long c, long nc, long idx, long items, int k_iters, bool stream_k) {
  Segment s;
  if (!stream_k) {
    s.item = cluster_item(c, nc, idx, items);
    s.k1 = s.item < 0 ? 0 : k_iters;
    return s;
  }
  const long steps = items * k_iters, begin = range_begin(c, nc, steps), end = range_begin(c + 1, nc, steps);
  const long item = begin / k_iters + idx;
  const long start = idx == 0 ? begin : item * k_iters;
  if (start >= end) return s;
  const long stop = end < (item + 1) * k_iters ? end : (item + 1) * k_iters;
  s.item = item;
  s.k0 = static_cast<int>(start - item * k_iters);
  s.k1 = static_cast<int>(stop - item * k_iters);
  return s;
}

constexpr int kMinSegmentSteps = 4;  // a cluster's range is at least this many k steps
constexpr int kFixupSteps = 4;       // a split item's partial write, wait and read, in k steps

// The plain schedule's busiest cluster, in 128 x 128 tile k steps: every item costs its larger
// piece (a pair or a double 2, a single or dummy 1) and the boustrophedon spreads the total nearly
// evenly.
DMUON_HD long plain_load(long t, long batch, int k_iters, long nc, bool diag_pairs) {
  const long two_unit = batch * leftover_pairs(t) + (diag_pairs ? batch * singles(t) / 2 : 0);
  const long pair_items = batch * shared_items(t) + (two_unit + 1) / 2;
  const long single_items = independent_items(t, batch, diag_pairs) - (two_unit + 1) / 2;
  const long units = 2 * pair_items + single_items;
  long per_cluster = (units + nc - 1) / nc;
  if (pair_items > 0 && per_cluster < 2) per_cluster = 2;
  return per_cluster * k_iters;
}

// Clusters (<= nc) a stream-K launch should use, or 0 where the plain schedule is as fast: it
// must save 15% of the plain load, each step priced as a pair's, plus the fixup. Only where the
// operands (operand_bytes) fit in L2 (l2_bytes): the item schedule's clusters move through k in
// step, so the ones on the same rows or columns share their loads in L2, while stream-K's sit at
// unrelated k of unrelated items; past L2 every load then comes from HBM (H100, 2048 x 11008 X X^T:
// batch 1, 45 MB, 0.13 -> 0.11 ms; batch 2, 90 MB, 0.20 -> 0.25 ms, the HBM time of its loads).
DMUON_HD long stream_k_clusters(long t, long batch, int k_iters, long nc, double operand_bytes, double l2_bytes,
                               bool diag_pairs) {
  if (operand_bytes > l2_bytes) return 0;
  const long steps = cluster_items(t, batch, diag_pairs) * k_iters;
  long use = steps / kMinSegmentSteps;
  if (use > nc) use = nc;
  if (use < 1) return 0;
  const long load = 2 * ((steps + use - 1) / use + kFixupSteps);
  return 100 * load < 85 * plain_load(t, batch, k_iters, nc, diag_pairs) ? use : 0;
}

}  // namespace dmuon::cuda::sym
