// Collective times against their closed forms (research/sim-anchors.md 3.2): with efficiency 1
// and no other traffic the simulator must reproduce the alpha-beta formulas of NCCL's
// algorithms to within 1%, in both modes.
#include <cmath>

#include "catch_compat.hpp"
#include "sim/collective_schedule.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;
using namespace dmuon::simtest;

namespace {

constexpr double kBase = 8e-6, kNvlAlpha = 2e-6, kNicAlpha = 10e-6, kNvlB = 100e9, kNicB = 25e9;

sim::CollectiveCall call(OpKind kind, std::vector<int> members, double bytes) {
  sim::CollectiveCall c;
  c.kind = kind;
  c.members = std::move(members);
  c.bytes = bytes;
  if (kind == OpKind::broadcast || kind == OpKind::reduce) c.rooted = {{c.members.front(), bytes}};
  return c;
}

void check_both_modes(const sim::CollectiveCall& c, const ClusterSpec& cl, double expected) {
  for (SimMode mode : {SimMode::fast, SimMode::flows}) {
    INFO("mode " << to_string(mode));
    CHECK(collective_seconds(c, cl, mode) == Approx(expected).epsilon(0.01));
  }
}

}  // namespace

TEST_CASE("ring all-reduce = base + 2(p-1) alpha + 2(p-1)/p S/B", "[sim][collectives]") {
  const double S = 512e6;
  SECTION("8 GPUs on NVLink") {
    const int p = 8;
    check_both_modes(call(OpKind::all_reduce, ranks(p), S), cluster(1, p),
                     kBase + 2 * (p - 1) * kNvlAlpha + 2.0 * (p - 1) / p * S / kNvlB);
  }
  SECTION("16 nodes, one GPU each (an HSDP replicate group) on the network") {
    const int p = 16;
    ClusterSpec cl = cluster(p, 1);
    cl.nccl.all_reduce = AllReduceAlgorithm::ring;
    check_both_modes(call(OpKind::all_reduce, ranks(p), S), cl, kBase + 2 * (p - 1) * kNicAlpha + 2.0 * (p - 1) / p * S / kNicB);
  }
  SECTION("256 nodes, one GPU each") {
    const int p = 256;
    ClusterSpec cl = cluster(p, 1);
    cl.nccl.all_reduce = AllReduceAlgorithm::ring;
    check_both_modes(call(OpKind::all_reduce, ranks(p), S), cl, kBase + 2 * (p - 1) * kNicAlpha + 2.0 * (p - 1) / p * S / kNicB);
  }
  SECTION("2,304 nodes, one GPU each: `fast` runs one task per pair past 2,048 hosts") {
    const int p = 2304;  // flows would send 2(p-1) steps of p flows: `fast` only
    ClusterSpec cl = cluster(p, 1);
    cl.nccl.all_reduce = AllReduceAlgorithm::ring;
    CHECK(collective_seconds(call(OpKind::all_reduce, ranks(p), S), cl, SimMode::fast) ==
          Approx(kBase + 2 * (p - 1) * kNicAlpha + 2.0 * (p - 1) / p * S / kNicB).epsilon(0.01));
  }
}

TEST_CASE("ring all-gather and reduce-scatter = base + (p-1) alpha + (p-1)/p S/B", "[sim][collectives]") {
  const int p = 8;
  const double S = 256e6;
  for (OpKind k : {OpKind::all_gather, OpKind::reduce_scatter}) {
    INFO(to_string(k));
    check_both_modes(call(k, ranks(p), S), cluster(1, p), kBase + (p - 1) * kNvlAlpha + double(p - 1) / p * S / kNvlB);
  }
}

TEST_CASE("pipelined broadcast and reduce = base + (p-2+k)(alpha + S/(k B))", "[sim][collectives]") {
  const int p = 8;
  const double S = 64e6;
  const ClusterSpec cl = cluster(1, p, 8);
  const double k = S / 8 / double(cl.nccl.chunk_bytes);  // chunks per channel (integral here)
  REQUIRE(k == Approx(7.62939453125));  // 64e6 / 8 / 2^20: ceil -> 8 chunks
  const double chunks = 8;
  for (OpKind kind : {OpKind::broadcast, OpKind::reduce}) {
    INFO(to_string(kind));
    check_both_modes(call(kind, ranks(p), S), cl, kBase + (p - 2 + chunks) * (kNvlAlpha + S / chunks / kNvlB));
  }
}

TEST_CASE("a group of one GPU per node pipelines over nccl.channels_one_gpu_per_node chains", "[sim][collectives]") {
  // 16 nodes, one GPU each: every channel leaves through the same NIC, so with C channels a
  // chunk of S/(C k) crosses it at B/C and the fill costs (p-2) such chunks.
  const int p = 16;
  const double S = 64e6;
  ClusterSpec cl = cluster(p, 1, 8);
  auto expected = [&](double channels) {
    const double k = std::ceil(S / channels / double(cl.nccl.chunk_bytes));
    return kBase + (p - 2 + k) * (kNicAlpha + S / k / kNicB);
  };
  for (OpKind kind : {OpKind::broadcast, OpKind::reduce}) {
    INFO(to_string(kind));
    SECTION("unset: nccl.channels (8) chains") { check_both_modes(call(kind, ranks(p), S), cl, expected(8)); }
    SECTION("set to 2 (NCCL's count for one NIC per GPU): 4x more, smaller chunks") {
      cl.nccl.channels_one_gpu_per_node = 2;
      check_both_modes(call(kind, ranks(p), S), cl, expected(2));
      CHECK(expected(2) < 0.8 * expected(8));
    }
  }
  SECTION("a group inside one node keeps nccl.channels") {
    ClusterSpec one_node = cluster(1, 8, 8);
    one_node.nccl.channels_one_gpu_per_node = 2;
    const double k = std::ceil(S / 8 / double(one_node.nccl.chunk_bytes));
    check_both_modes(call(OpKind::broadcast, ranks(8), S), one_node, kBase + (8 - 2 + k) * (kNvlAlpha + S / k / kNvlB));
  }
}

TEST_CASE("all-to-all = base + alpha + (p-1)/p S/B per GPU", "[sim][collectives]") {
  const int p = 8;
  const double S = 128e6;  // bytes each GPU sends in total, S/p to each peer (and itself)
  sim::CollectiveCall c;
  c.kind = OpKind::all_to_all;
  c.members = ranks(p);
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      if (a != b) c.transfers.emplace_back(a, b, S / p);
    }
  }
  c.bytes = S * (p - 1) / p * p;
  check_both_modes(c, cluster(1, p), kBase + kNvlAlpha + double(p - 1) / p * S / kNvlB);
}

TEST_CASE("busbw factors are nccl-tests'", "[sim][collectives]") {
  CHECK(sim::bus_factor(OpKind::all_reduce, 8) == Approx(1.75));
  CHECK(sim::bus_factor(OpKind::all_gather, 8) == Approx(0.875));
  CHECK(sim::bus_factor(OpKind::reduce_scatter, 4) == Approx(0.75));
  CHECK(sim::bus_factor(OpKind::broadcast, 8) == 1);
  CHECK(sim::bus_factor(OpKind::all_to_all, 2) == Approx(0.5));
}

TEST_CASE("tree all-reduce wins for small messages across many nodes, ring for large", "[sim][collectives]") {
  const ClusterSpec cl = cluster(16, 1);
  const sim::Topology topo(cl);
  auto pick = [&](double bytes) { return sim::make_schedule(call(OpKind::all_reduce, ranks(16), bytes), topo, cl.nccl).algorithm; };
  CHECK(pick(64e3) == "tree");
  CHECK(pick(1e9) == "ring");
}

TEST_CASE("the size calibration scales the bandwidth term by 1/efficiency", "[sim][collectives]") {
  const int p = 8;
  const double S = 64e6;
  ClusterSpec cl = cluster(1, p);
  cl.nccl.size_efficiency = {{1e6, 0.25}, {1e9, 1.0}};
  const double e = cl.nccl.efficiency_at(S);
  CHECK(e == Approx(0.25 + 0.75 * std::log2(64.0) / std::log2(1000.0)));
  CHECK(cl.nccl.efficiency_at(1e3) == 0.25);  // clamped outside the points
  check_both_modes(call(OpKind::all_reduce, ranks(p), S), cl,
                   kBase + 2 * (p - 1) * kNvlAlpha + 2.0 * (p - 1) / p * S / (e * kNvlB));
}

TEST_CASE("a one-member collective has no network schedule", "[sim][collectives]") {
  CHECK(collective_seconds(call(OpKind::all_reduce, {0}, 1e9), cluster(1, 2), SimMode::fast) == 0);
}

TEST_CASE("a collective inside another node runs on that node's links, planned as its node-0 copy", "[sim][collectives]") {
  // The runner plans a collective whose members share node k as its copy on node 0 and runs it
  // moved back (Runner::one_node_offset). Two all-gathers start together, on nodes 0 and 2: each
  // takes the closed form alone; run on node 0's GPUs instead, node 2's would share their NVLink
  // ports with node 0's and both would take about twice the bandwidth term.
  const int p = 4;
  const double S = 256e6;
  const ClusterSpec cl = cluster(3, p);
  sim::StepProgram prog;
  prog.ranks.resize(3 * p);
  for (const std::vector<int>& members : {std::vector<int>{0, 1, 2, 3}, std::vector<int>{8, 9, 10, 11}}) {
    sim::SimCollective c;
    c.call = call(OpKind::all_gather, members, S);
    c.group = "node";
    prog.collectives.push_back(c);
    for (int r : members) {
      sim::SimOp op;
      op.stream = sim::kGatherStream;
      op.category = "collective";
      op.collective = static_cast<int>(prog.collectives.size()) - 1;
      prog.ranks[static_cast<std::size_t>(r)].push_back(op);
    }
  }
  const double alone = kBase + (p - 1) * kNvlAlpha + double(p - 1) / p * S / kNvlB;
  for (SimMode mode : {SimMode::fast, SimMode::flows}) {
    INFO("mode " << to_string(mode));
    sim::SimOptions o;
    o.mode = mode;
    const auto out = sim::simulate(prog, cl, o);
    REQUIRE(out.collectives.size() == 2);
    CHECK(out.collectives[0].seconds() == Approx(alone).epsilon(0.01));
    CHECK(out.collectives[1].seconds() == Approx(alone).epsilon(0.01));
    CHECK(out.collectives[1].seconds() == out.collectives[0].seconds());
  }
}
