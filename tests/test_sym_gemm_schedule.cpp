// The sm_90a symmetric-product kernel's tile schedule (kernels/cuda/sym_gemm_schedule.hpp,
// host-and-device code run here on the CPU): every (item, k step) is computed exactly once, in
// both the item schedule and stream-K, and a split item's segments sit where the fixup
// (sym_gemm_stream_k.cuh) looks for them: its head (k step 0) is the last segment of the cluster
// cluster_of_step names, every other segment the first of one of the following clusters, so no
// segment that is waited on waits itself. And which launches are split.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "catch_compat.hpp"
#include "kernels/cuda/sym_gemm_schedule.hpp"

using namespace dmuon::cuda::sym;

namespace {

// Every cluster's segments in order, as the kernel's producer walks them.
std::vector<std::vector<Segment>> walk(long nc, long items, int k_iters, bool stream_k) {
  std::vector<std::vector<Segment>> per(nc);
  for (long c = 0; c < nc; ++c) {
    for (long idx = 0;; ++idx) {
      const Segment s = segment_of(c, nc, idx, items, k_iters, stream_k);
      if (s.item < 0) break;
      REQUIRE(idx < items + 1);
      per[c].push_back(s);
    }
  }
  return per;
}

}  // namespace

TEST_CASE("both schedules compute every item's k steps exactly once", "[sym_gemm]") {
  for (bool stream_k : {false, true}) {
    for (long nc : {1L, 3L, 7L, 66L}) {
      for (long items : {1L, 5L, 36L, 136L}) {
        for (int k_iters : {1, 3, 17, 64}) {
          INFO((stream_k ? "stream-K" : "items") << " nc " << nc << " items " << items << " k " << k_iters);
          std::vector<int> seen(static_cast<std::size_t>(items * k_iters), 0);
          for (const auto& segments : walk(nc, items, k_iters, stream_k)) {
            for (const Segment& s : segments) {
              REQUIRE(s.item < items);
              REQUIRE((0 <= s.k0 && s.k0 < s.k1 && s.k1 <= k_iters));
              if (!stream_k) CHECK((s.k0 == 0 && s.k1 == k_iters));
              for (int k = s.k0; k < s.k1; ++k) ++seen[static_cast<std::size_t>(s.item * k_iters + k)];
            }
          }
          for (int n : seen) REQUIRE(n == 1);
        }
      }
    }
  }
}

TEST_CASE("a split item's head is its first cluster's last segment, the rest first segments", "[sym_gemm]") {
  for (long nc : {2L, 7L, 66L}) {
    for (long items : {1L, 9L, 36L}) {
      for (int k_iters : {4, 17, 32}) {
        const long steps = items * k_iters;
        if (steps < nc) continue;  // stream_k_clusters never gives a cluster an empty range
        INFO("nc " << nc << " items " << items << " k " << k_iters);
        const auto per = walk(nc, items, k_iters, true);
        std::map<long, std::vector<std::pair<long, std::size_t>>> where;  // item -> (cluster, index)
        for (long c = 0; c < nc; ++c) {
          REQUIRE_FALSE(per[c].empty());
          for (std::size_t i = 0; i < per[c].size(); ++i) where[per[c][i].item].emplace_back(c, i);
        }
        for (const auto& [item, at] : where) {
          if (at.size() == 1) continue;  // whole in one cluster: no fixup
          const long head = cluster_of_step(item * k_iters, nc, steps);
          const long last = cluster_of_step(item * k_iters + k_iters - 1, nc, steps);
          REQUIRE(static_cast<long>(at.size()) == last - head + 1);
          for (std::size_t j = 0; j < at.size(); ++j) {
            const auto [c, i] = at[j];
            CHECK(c == head + static_cast<long>(j));  // consecutive clusters, the slots the head reads
            const Segment& s = per[c][i];
            if (j == 0) {
              CHECK(s.k0 == 0);
              CHECK(i + 1 == per[c].size());
            } else {
              CHECK(s.k0 > 0);
              CHECK(i == 0);
            }
          }
        }
      }
    }
  }
}

// Every tile of the lower triangle of every batch entry in exactly one stored piece; a double's two
// tiles both diagonal; with diagonal pairs at most one diagonal tile left a single.
TEST_CASE("the pieces cover the lower triangle once, with and without diagonal pairs", "[sym_gemm]") {
  for (bool pairs : {false, true}) {
    for (long t : {1L, 2L, 3L, 4L, 5L, 8L, 16L, 17L, 32L, 33L}) {
      for (long batch : {1L, 2L, 3L}) {
        INFO((pairs ? "pairs" : "singles") << " t " << t << " batch " << batch);
        std::map<std::tuple<int, int, int>, int> seen;  // (batch, row block, column block) -> pieces
        long doubles = 0, lone_singles = 0;
        for (long item = 0; item < cluster_items(t, batch, pairs); ++item) {
          for (int rank : {0, 1}) {
            const Piece p = decode_piece(item, rank, t, batch, pairs);
            if (!p.store) continue;
            REQUIRE((0 <= p.batch && p.batch < batch && 0 <= p.row_block && p.row_block < t));
            if (p.diag_row >= 0) {
              REQUIRE(pairs);
              REQUIRE((p.col0 == p.row_block && p.col1 < 0 && !p.multicast));
              REQUIRE((0 <= p.diag_batch && p.diag_batch < batch && p.diag_row < t));
              ++doubles;
              ++seen[{p.batch, p.row_block, p.row_block}];
              ++seen[{p.diag_batch, p.diag_row, p.diag_row}];
              continue;
            }
            if (p.col1 < 0 && p.col0 == p.row_block) ++lone_singles;
            for (int col : {p.col0, p.col1}) {
              if (col < 0) continue;
              REQUIRE(col <= p.row_block);
              ++seen[{p.batch, p.row_block, col}];
            }
          }
        }
        for (int b = 0; b < batch; ++b) {
          for (int i = 0; i < t; ++i) {
            for (int j = 0; j <= i; ++j) CHECK(seen[{b, i, j}] == 1);
          }
        }
        CHECK(static_cast<long>(seen.size()) == batch * t * (t + 1) / 2);
        CHECK(doubles == (pairs ? batch * singles(t) / 2 : 0));
        CHECK(lone_singles == (pairs ? batch * singles(t) % 2 : batch * singles(t)));
      }
    }
  }
  // 4096 x 4096 with pairs: 120 shared + 8 leftover-pair + 4 double items, two on each of 66 clusters.
  CHECK(cluster_items(32, 1, true) == 132);
  CHECK(cluster_items(32, 1, false) == 136);
}

TEST_CASE("stream-K is chosen where the items leave clusters idle, not where they fill them", "[sym_gemm]") {
  const long nc = 66;  // an H100's 132 SMs in clusters of two
  const double kL2 = 50.0 * (1 << 20);
  auto tiles = [](long m) { return (m + 127) / 128; };
  // The same decisions with diagonal pairs (4096: 132 items, two of a pair's cost on every cluster).
  for (bool pairs : {false, true}) {
    INFO((pairs ? "pairs" : "singles"));
    // Balanced item schedules stay: 4096 x 4096 (136 items, 4 tile units on every cluster).
    CHECK(stream_k_clusters(tiles(4096), 1, 64, nc, 0, kL2, pairs) == 0);
    CHECK(stream_k_clusters(tiles(4096), 4, 64, nc, 0, kL2, pairs) == 0);
    CHECK(stream_k_clusters(tiles(8192), 1, 448, nc, 0, kL2, pairs) == 0);
    CHECK(stream_k_clusters(tiles(2048), 16, 32, nc, 0, kL2, pairs) == 0);
    // 36 items for 66 clusters (2048), 10 (1024), one (256): split over every cluster, or fewer
    // where a range would be shorter than kMinSegmentSteps.
    CHECK(stream_k_clusters(tiles(2048), 1, 32, nc, 0, kL2, pairs) == nc);
    CHECK(stream_k_clusters(tiles(2048), 1, 172, nc, 0, kL2, pairs) == nc);
    CHECK(stream_k_clusters(tiles(1024), 1, 64, nc, 0, kL2, pairs) == nc);
    CHECK(stream_k_clusters(tiles(256), 1, 32, nc, 0, kL2, pairs) == 32 / kMinSegmentSteps);
    // X X^T of 2048 x 11008 splits in batch 1 (45 MB of X), not in batch 2 (90 MB, past L2).
    CHECK(stream_k_clusters(tiles(2048), 1, 172, nc, 2.0 * 2048 * 11008, kL2, pairs) == nc);
    CHECK(stream_k_clusters(tiles(2048), 2, 172, nc, 2.0 * 2 * 2048 * 11008, kL2, pairs) == 0);
    // Too little work to split at all.
    CHECK(stream_k_clusters(tiles(128), 1, 2, nc, 0, kL2, pairs) == 0);
    // The plain load counts a single's item as one tile unit and a pair's as two.
    CHECK(plain_load(tiles(4096), 1, 64, nc, pairs) == 4 * 64);
    CHECK(plain_load(tiles(2048), 1, 32, nc, pairs) == 2 * 32);
  }
  // 384 x 384 on one cluster: a shared item (2 units) and the two diagonal singles' item (1 unit),
  // or with pairs the double's item (2 units: a pair's tensor time).
  CHECK(plain_load(3, 1, 10, 1, false) == 30);
  CHECK(plain_load(3, 1, 10, 1, true) == 40);
}
