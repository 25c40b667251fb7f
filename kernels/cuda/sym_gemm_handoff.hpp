// Where the overlapped epilogue (sym_gemm_overlap.cuh) puts a piece's results: the consumer
// warpgroups' blocks of the 128 x 256 staging tile, the tile's 128 x 128 regions and the D tiles they
// go to, and the storer warps' 16-byte runs over them (the tile row by row, then its transpose).
// Host and device code, so that tests/test_sym_gemm_handoff.cpp can walk a whole launch's stores on
// the CPU; no CUDA runtime calls.
#pragma once

#include "kernels/cuda/sym_gemm_schedule.hpp"

namespace dmuon::cuda::sym {

// Whether a CTA's segment of this piece stores results: not a dummy, and (stream-K) the segment
// that holds k step 0, which adds the others' partials.
DMUON_HD bool piece_stores(const Piece& p, int k0) { return p.store && k0 == 0; }

// The staging block that consumer warpgroup `half` fills: a pair's or single's 64 rows of every
// column, or a double's whole diagonal tile in columns 128 half.. (two m64 fragments).
struct StagedBlock {
  int row0 = 0, col0 = 0, rows = 0, cols = 0;
};
DMUON_HD StagedBlock staged_block(const Piece& p, int half) {
  if (p.diag_row >= 0) return {0, kTile * half, kTile, kTile};
  return {64 * half, 0, 64, p.col1 >= 0 ? 2 * kTile : kTile};
}

// One 128 x 128 region of the staging tile (columns [128 g, 128 g + 128)): D's tile at rows
// row0.., columns col0.. of the m x m matrix at element offset `entry`.
struct Region {
  long entry = 0;
  int row0 = 0, col0 = 0;
};
struct Handoff {
  Region r[2];
  int regions = 1;
};

// A pair's two column blocks, a single's one, a double's two diagonal tiles (of their own batch
// entries), in the staging columns staged_block gives them.
DMUON_HD Handoff handoff_of(const Piece& p, int m) {
  const long mm = static_cast<long>(m) * m;
  Handoff h;
  h.r[0] = {p.batch * mm, p.row_block * kTile, p.col0 * kTile};
  if (p.diag_row >= 0) {
    h.r[1] = {p.diag_batch * mm, p.diag_row * kTile, p.diag_row * kTile};
    h.regions = 2;
  } else if (p.col1 >= 0) {
    h.r[1] = {p.batch * mm, p.row_block * kTile, p.col1 * kTile};
    h.regions = 2;
  }
  return h;
}

constexpr int kRegionVectors = kTile * kTile / 8;  // 16-byte runs of 8 elements a region

// One storer run: 8 elements of D from row d_row, columns d_col.. (those `keeps` accepts), read
// from the staging tile at (tile_row, tile_col) onwards, along its row (the tile) or down its
// column (the transpose).
struct StoreRun {
  int region = 0;
  int tile_row = 0, tile_col = 0;  // staging coordinates of the first element
  int d_row = 0, d_col = 0;        // D coordinates of the first element, in the region's matrix
  bool transposed = false;
};

// Run vi (0 <= vi < regions * kRegionVectors) of the tile pass: staging row vi / 16 of the region,
// columns 8 (vi % 16)..; and of the transpose pass: staging column vi % 128, rows 8 (vi / 128)...
DMUON_HD StoreRun tile_run(const Handoff& h, int vi) {
  const int g = vi / kRegionVectors, w = vi % kRegionVectors;
  const int r = w / 16, c = 8 * (w % 16);
  return {g, r, kTile * g + c, h.r[g].row0 + r, h.r[g].col0 + c, false};
}
DMUON_HD StoreRun mirror_run(const Handoff& h, int vi) {
  const int g = vi / kRegionVectors, w = vi % kRegionVectors;
  const int c = w % kTile, r = 8 * (w / kTile);
  return {g, r, kTile * g + c, h.r[g].col0 + c, h.r[g].row0 + r, true};
}

// Which of a run's elements are written: the tile its lower triangle (diagonal included), the
// transpose the strict upper one inside the matrix, so that every element of D is written once.
DMUON_HD bool run_keeps(const StoreRun& run, int col, int m) {
  return run.transposed ? col > run.d_row && col < m : col <= run.d_row;
}

}  // namespace dmuon::cuda::sym
