// The overlapped epilogue's store mapping (kernels/cuda/sym_gemm_handoff.hpp, host-and-device code
// run here on the CPU), walked over whole launches: every storing segment of every cluster and rank,
// as the storer warps walk them (the item schedule and stream-K, with and without diagonal pairs,
// tails, batch entries). Each element of every batch entry's D must be written exactly once, from a
// staging cell that a consumer warpgroup filled (staged_block) with the product's lower-triangle
// element (max(i, j), min(i, j)) of the same batch entry: a region mapped to the wrong column block,
// batch entry or staging half, a wrong mask or a run past the tile would break one of these.
#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "kernels/cuda/sym_gemm_handoff.hpp"

using namespace dmuon::cuda::sym;

namespace {

// A product element: batch entry, row, column; batch -1: a staging cell no consumer filled.
struct Source {
  int batch = -1, row = 0, col = 0;
};

// What the kernel's k loop leaves in consumer `half`'s accumulators, at their staged place: a
// pair's or single's rows row_block*128 + 64 half.. against its column blocks (B's boxes back to
// back), a double's half computing the diagonal tile of its own box (sm.a: row_block of batch,
// sm.b: diag_row of diag_batch).
void stage_consumer(const Piece& p, int half, std::vector<Source>& staged) {
  const StagedBlock b = staged_block(p, half);
  for (int r = b.row0; r < b.row0 + b.rows; ++r) {
    for (int c = b.col0; c < b.col0 + b.cols; ++c) {
      Source s;
      if (p.diag_row >= 0) {
        const int r0 = (half == 0 ? p.row_block : p.diag_row) * kTile;
        s = {half == 0 ? p.batch : p.diag_batch, r0 + r, r0 + (c - kTile * half)};
      } else {
        s = {p.batch, p.row_block * kTile + r, (c < kTile ? p.col0 : p.col1) * kTile + c % kTile};
      }
      staged[static_cast<std::size_t>(r) * 2 * kTile + c] = s;
    }
  }
}

struct Launch {
  int m, batch;
  bool diag_pairs, stream_k;
  long clusters;
  int k_iters;
};

// Writes per element of D over the launch, and the writes from a wrong staging cell (the first
// one described in `first_bad`). Counted, not asserted one by one: ~10^7 element writes a launch.
struct Walk {
  std::vector<int> writes;
  long bad = 0;
  std::string first_bad;
};

Walk walk_stores(const Launch& l) {
  const long tiles = (l.m + kTile - 1) / kTile;
  const long items = cluster_items(tiles, l.batch, l.diag_pairs);
  const long mm = static_cast<long>(l.m) * l.m;
  Walk w;
  w.writes.assign(static_cast<std::size_t>(mm * l.batch), 0);
  std::vector<Source> staged(static_cast<std::size_t>(kTile) * 2 * kTile);
  for (long c = 0; c < l.clusters; ++c) {
    for (int rank = 0; rank < 2; ++rank) {
      for (long idx = 0;; ++idx) {
        const Segment seg = segment_of(c, l.clusters, idx, items, l.k_iters, l.stream_k);
        if (seg.item < 0) break;
        const Piece p = decode_piece(seg.item, rank, tiles, l.batch, l.diag_pairs);
        if (!piece_stores(p, seg.k0)) continue;
        std::fill(staged.begin(), staged.end(), Source{});
        stage_consumer(p, 0, staged);
        stage_consumer(p, 1, staged);
        const Handoff h = handoff_of(p, l.m);
        for (int vi = 0; vi < h.regions * kRegionVectors; ++vi) {
          for (const StoreRun& run : {tile_run(h, vi), mirror_run(h, vi)}) {
            if (run.d_row >= l.m) continue;
            const long entry = h.r[run.region].entry;
            const int batch = static_cast<int>(entry / mm);
            for (int e = 0; e < 8; ++e) {
              const int col = run.d_col + e;
              if (!run_keeps(run, col, l.m)) continue;
              const int sr = run.transposed ? run.tile_row + e : run.tile_row;
              const int sc = run.transposed ? run.tile_col : run.tile_col + e;
              const bool inside = entry % mm == 0 && batch < l.batch && col >= 0 && col < l.m && sr < kTile &&
                                  sc < 2 * kTile;
              const Source s = inside ? staged[static_cast<std::size_t>(sr) * 2 * kTile + sc] : Source{};
              if (!inside || s.batch != batch || s.row != std::max(run.d_row, col) || s.col != std::min(run.d_row, col)) {
                if (w.bad++ == 0) {
                  std::ostringstream why;
                  why << "D(" << run.d_row << ", " << col << ") of entry " << batch << " from staging (" << sr << ", "
                      << sc << ")" << (run.transposed ? ", transpose" : ", tile") << ", which holds entry " << s.batch
                      << " (" << s.row << ", " << s.col << ")";
                  w.first_bad = why.str();
                }
                continue;
              }
              ++w.writes[static_cast<std::size_t>(entry + static_cast<long>(run.d_row) * l.m + col)];
            }
          }
        }
      }
    }
  }
  return w;
}

}  // namespace

TEST_CASE("the overlapped epilogue writes every element of D once, from its lower-triangle value", "[sym_gemm]") {
  int launches = 0;
  for (int m : {1, 129, 300, 777, 1025}) {
    for (int batch : {1, 3}) {
      for (bool diag_pairs : {false, true}) {
        for (bool stream_k : {false, true}) {
          for (long clusters : {3L, 66L}) {
            const Launch l{m, batch, diag_pairs, stream_k, clusters, stream_k ? 17 : 4};
            INFO("m " << m << " batch " << batch << (diag_pairs ? " doubles" : " singles")
                      << (stream_k ? " stream-K" : " items") << " clusters " << clusters);
            const Walk w = walk_stores(l);
            INFO(w.first_bad);
            CHECK(w.bad == 0);
            CHECK(std::all_of(w.writes.begin(), w.writes.end(), [](int n) { return n == 1; }));
            ++launches;
          }
        }
      }
    }
  }
  CHECK(launches == 5 * 2 * 2 * 2 * 2);
}

TEST_CASE("the consumers' staging blocks tile the staging columns each handoff region stores", "[sym_gemm]") {
  Piece pair;
  pair.row_block = 5;
  pair.col0 = 2;
  pair.col1 = 3;
  Piece single;
  single.row_block = single.col0 = 4;
  Piece dbl = single;
  dbl.diag_row = 6;
  dbl.diag_batch = 1;
  for (const Piece& p : {pair, single, dbl}) {
    const Handoff h = handoff_of(p, 1024);
    const StagedBlock b0 = staged_block(p, 0), b1 = staged_block(p, 1);
    CHECK(b0.rows * b0.cols + b1.rows * b1.cols == h.regions * kTile * kTile);
    // No overlap between the halves, and nothing outside the regions' columns.
    const bool side_by_side = b0.col0 + b0.cols <= b1.col0, stacked = b0.row0 + b0.rows <= b1.row0;
    CHECK((side_by_side || stacked));
    CHECK(std::max(b0.col0 + b0.cols, b1.col0 + b1.cols) == h.regions * kTile);
  }
  CHECK(handoff_of(dbl, 1024).r[1].entry == 1024L * 1024);
  CHECK(handoff_of(pair, 1024).r[1].col0 == 3 * kTile);
}
