// The two simulation modes must agree: `fast` (one parallel task per collective plus the
// schedule's latency and pipeline-fill terms) within 2% of `flows` (every pipeline step as
// point-to-point flows with max-min sharing), on 16 and on 128 GPUs, for every algorithm.
#include "catch_compat.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;
using namespace dmuon::simtest;

namespace {

sim::CollectiveCall make(OpKind kind, std::vector<int> members, double bytes) {
  sim::CollectiveCall c;
  c.kind = kind;
  c.members = std::move(members);
  c.bytes = bytes;
  if (kind == OpKind::broadcast || kind == OpKind::reduce) c.rooted = {{c.members[c.members.size() / 2], bytes}};
  if (kind == OpKind::all_to_all) {
    const double each = bytes / double(c.members.size() * c.members.size());
    for (int a : c.members) {
      for (int b : c.members) {
        if (a != b) c.transfers.emplace_back(a, b, each);
      }
    }
  }
  return c;
}

void agree(const sim::CollectiveCall& c, const ClusterSpec& cl) {
  const double fast = collective_seconds(c, cl, SimMode::fast);
  const double flows = collective_seconds(c, cl, SimMode::flows);
  INFO(to_string(c.kind) << " on " << c.members.size() << " ranks: fast " << fast << " s, flows " << flows << " s");
  CHECK(fast == Approx(flows).epsilon(0.02));
}

void all_kinds(int nodes) {
  ClusterSpec cl = cluster(nodes, 8);
  const int world = nodes * 8;
  for (OpKind k : {OpKind::all_gather, OpKind::reduce_scatter, OpKind::broadcast, OpKind::reduce}) {
    agree(make(k, ranks(world), 64e6), cl);
  }
  // 1 MiB per pair. A parallel task charges its slowest route's latency up front,
  // so on a latency-bound all-to-all (a few KiB per pair) `fast` can be late by up to the spine
  // latency (1 us here) where `flows` lets same-rail flows start first.
  agree(make(OpKind::all_to_all, ranks(world), 1048576.0 * world * world), cl);
  for (AllReduceAlgorithm a : {AllReduceAlgorithm::ring, AllReduceAlgorithm::tree}) {
    cl.nccl.all_reduce = a;
    INFO("all-reduce " << to_string(a));
    agree(make(OpKind::all_reduce, ranks(world), 64e6), cl);
    agree(make(OpKind::all_reduce, ranks(nodes, 8), 32e6), cl);  // one GPU per node: a replicate group
  }
}

}  // namespace

TEST_CASE("flows and fast agree within 2% on 16 GPUs", "[sim][agreement]") { all_kinds(2); }

TEST_CASE("flows and fast agree within 2% on 128 GPUs", "[sim][agreement]") { all_kinds(16); }
