// owner-striped: the rail-striped hierarchical broadcast/reduce (core/plan/striped_collectives.hpp),
// its buckets and run-ahead broadcasts, from the Plan to the simulator's step program.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "catch_compat.hpp"
#include "core/cost/memory_model.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/striped_collectives.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/step_program.hpp"
#include "sim/strategy_run.hpp"

// One default-constructed RunOptions passed by reference: a `{}` temporary there makes GCC 12
// warn of an uninitialized std::string inside it (-Wmaybe-uninitialized, a false positive).
static const dmuon::sim::RunOptions kRunDefaults;

using namespace dmuon;

namespace {

ModelSpec small_model(int layers) {
  return parse_scenario("name: striped-test\nmodel:\n  name: small\n  transformer: {hidden: 256, layers: " +
                            std::to_string(layers) + ", heads: 4, kv_heads: 2, ffn: 704, vocab: 1000}\n",
                        "model.yaml")
      .model;
}

std::vector<int> round_robin(const Routing& routing, int ranks) {
  std::vector<int> owner(routing.muon_matrices.size());
  for (std::size_t m = 0; m < owner.size(); ++m) owner[m] = static_cast<int>((7 * m) % static_cast<std::size_t>(ranks));
  return owner;
}

// Elements each replicate group (rail) carries in one phase's broadcasts or reduces.
std::map<std::string, std::int64_t> rail_elements(const Plan& plan, OpKind kind) {
  std::map<std::string, std::int64_t> out;
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    for (const Op& op : plan.ranks[r]) {
      if (op.kind != kind) continue;
      const CommGroup& g = plan.groups[static_cast<std::size_t>(op.group)];
      if (g.name.rfind("replicate", 0) != 0 || g.ranks.front() != static_cast<int>(r)) continue;  // count once
      out[g.name] += region_elements(op.regions);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("adding -0.0 returns every value bit for bit: a sum all-reduce with -0 from non-roots is a broadcast", "[striped]") {
  // Op::via_all_reduce relies on x + (-0) == x in IEEE round-to-nearest for every x: +-0,
  // subnormals, normals, the largest finite values and infinities (in any order of additions,
  // since every partial sum stays x). Checked on every 16-bit pattern as fp32 widened from
  // bf16 (bf16 sums are fp32 sums rounded back, and x needs no rounding) and on fp32 extremes.
  auto bits = [](float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
  };
  const float minus_zero = -0.0f;
  for (std::uint32_t pattern = 0; pattern <= 0xFFFFu; ++pattern) {
    float x;
    const std::uint32_t widened = pattern << 16;
    std::memcpy(&x, &widened, sizeof x);
    if (std::isnan(x)) continue;  // NaN stays NaN (its payload is the hardware's business)
    volatile float sum = x + minus_zero;
    volatile float twice = (minus_zero + x) + minus_zero;
    INFO("bf16 pattern " << pattern);
    CHECK(bits(sum) == widened);
    CHECK(bits(twice) == widened);
  }
  for (float x : {std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), 1.0f + 1e-7f}) {
    volatile float sum = x + minus_zero;
    CHECK(bits(sum) == bits(x));
  }
}

TEST_CASE("stripe_chunk cuts a region into contiguous chunks that cover it exactly", "[plan][striped]") {
  for (std::int64_t count : {0, 1, 7, 8, 9, 1000}) {
    for (int shards : {1, 2, 3, 8}) {
      const Region whole{3, 100, count};
      std::int64_t next = whole.offset;
      for (int s = 0; s < shards; ++s) {
        const Region c = stripe_chunk(whole, shards, s);
        CHECK(c.param == 3);
        CHECK(c.offset == next);
        CHECK(c.count >= 0);
        CHECK(c.count <= (count + shards - 1) / shards);
        next += c.count;
      }
      CHECK(next == whole.offset + count);
    }
  }
}

TEST_CASE("owner-striped sends every matrix across nodes on every rail; dedicated on its owner's only", "[plan][striped]") {
  const ModelSpec model = small_model(4);
  const Routing routing = route_parameters(model, {});
  const Mesh mesh{3, 4};
  std::int64_t muon = 0;
  for (const auto& m : routing.muon_matrices) muon += m.rows * m.cols;
  PlanOptions o;
  o.striped_bucket_bytes_per_rail = 0;  // one bucket per block
  const Plan striped = build_plan(Strategy::owner_striped, model, routing, mesh, round_robin(routing, mesh.world()), o);
  striped.validate(model, routing);
  for (OpKind kind : {OpKind::broadcast, OpKind::reduce}) {
    const auto rails = rail_elements(striped, kind);
    REQUIRE(rails.size() == 4);
    std::int64_t total = 0;
    for (const auto& [rail, n] : rails) {
      total += n;
      // Each rail carries a quarter of every matrix, up to one element of rounding per matrix.
      CHECK(n <= muon / 4 + static_cast<std::int64_t>(routing.muon_matrices.size()));
      CHECK(n >= muon / 4 - 3 * static_cast<std::int64_t>(routing.muon_matrices.size()));
    }
    CHECK(total == muon);
  }
  // dedicated moves each matrix whole on its owner's rail: the same total, unevenly spread.
  const Plan dedicated = build_plan(Strategy::dedicated, model, routing, mesh, round_robin(routing, mesh.world()), o);
  std::int64_t total = 0;
  for (const auto& [rail, n] : rail_elements(dedicated, OpKind::broadcast)) total += n;
  CHECK(total == muon);
  // Forward ops run ahead and carry a bucket; backward ones carry a bucket and wait.
  int forward = 0;
  for (const Op& op : striped.ranks[5]) {
    if (!is_collective(op.kind) || op.label.rfind("block", 0) != 0) continue;
    CHECK(op.bucket >= 0);
    CHECK(op.run_ahead == (op.phase == Phase::forward));
    forward += op.phase == Phase::forward;
  }
  CHECK(forward > 0);
  for (const Op& op : dedicated.ranks[5]) CHECK((op.bucket == -1 && !op.run_ahead));
}

TEST_CASE("from striped_all_reduce_from_nodes on, the rails carry all-reduces", "[plan][striped]") {
  const ModelSpec model = small_model(3);
  const Routing routing = route_parameters(model, {});
  for (int replicate : {3, 4}) {
    const Mesh mesh{replicate, 2};
    PlanOptions o;
    o.striped_all_reduce_from_nodes = 4;
    o.striped_bucket_bytes_per_rail = 0;  // a bucket per block: rank 1 (rail 1) sees 3 of them
    const Plan plan = build_plan(Strategy::owner_striped, model, routing, mesh, round_robin(routing, mesh.world()), o);
    plan.validate(model, routing);
    int broadcasts = 0, via = 0, reduces = 0, rail_all_reduces = 0;
    for (const Op& op : plan.ranks[1]) {
      const std::string& group = plan.groups[static_cast<std::size_t>(std::max(0, op.group))].name;
      if (!is_collective(op.kind) || group.rfind("replicate", 0) != 0 || op.label.rfind("block", 0) != 0) continue;
      broadcasts += op.kind == OpKind::broadcast;
      via += op.kind == OpKind::broadcast && op.via_all_reduce;
      reduces += op.kind == OpKind::reduce;
      rail_all_reduces += op.kind == OpKind::all_reduce;
    }
    INFO("replicate " << replicate);
    CHECK(broadcasts > 0);
    if (replicate >= 4) {
      CHECK(via == broadcasts);  // every rail broadcast runs as an all-reduce
      CHECK(reduces == 0);  // and the gradient's reduces are all-reduces, one per bucket and rail
      CHECK(rail_all_reduces == 3);
    } else {
      CHECK(via == 0);
      CHECK(reduces > 0);
      CHECK(rail_all_reduces == 0);
    }
  }
}

TEST_CASE("owner-striped buckets fill to the byte target per rail", "[plan][striped]") {
  const ModelSpec model = small_model(6);
  const Routing routing = route_parameters(model, {});
  const Mesh mesh{2, 2};
  std::map<int, std::int64_t> buckets_at;  // target bytes -> forward buckets
  for (std::int64_t target : {std::int64_t{0}, std::int64_t{1} << 20, std::int64_t{1} << 40}) {
    PlanOptions o;
    o.striped_bucket_bytes_per_rail = target;
    const Plan plan = build_plan(Strategy::owner_striped, model, routing, mesh, round_robin(routing, mesh.world()), o);
    plan.validate(model, routing);
    std::set<int> forward;
    for (const Op& op : plan.ranks[0]) {
      if (op.bucket >= 0 && op.phase == Phase::forward) forward.insert(op.bucket);
    }
    buckets_at[target == 0 ? 0 : target == (std::int64_t{1} << 20) ? 1 : 2] = static_cast<std::int64_t>(forward.size());
  }
  CHECK(buckets_at[0] == 6);  // one per block
  CHECK(buckets_at[1] < 6);   // a block is ~0.45 MB per rail: 1 MiB joins three
  CHECK(buckets_at[1] > 1);
  CHECK(buckets_at[2] == 1);  // everything in one
}

TEST_CASE("run-ahead broadcasts start with the step on their own stream; one launch per bucket and group", "[sim][striped]") {
  const Scenario s = parse_scenario(
      "name: striped\n"
      "model:\n  name: small\n  transformer: {hidden: 512, layers: 8, heads: 8, kv_heads: 2, ffn: 1536, vocab: 4096}\n"
      "optimizer: {preset: dmuon}\n"
      "cluster:\n  nodes: 4\n  gpus_per_node: 4\n  gpu: h100-sxm\n  gpu_memory_GiB: 80\n"
      "  nvlink: {bw_GBps: 450, latency_us: 3.4, efficiency: 0.82}\n"
      "  network: {nics_per_node: 4, nic_bw_Gbps: 400, latency_us: 14, efficiency: 0.96}\n"
      "training: {seq_len: 1024, micro_batch: 1, mfu: 0.4, peak_tflops: 989}\n",
      "striped.yaml");
  const auto striped = sim::run_strategy(s, Strategy::owner_striped, sim::scenario_cost_model(s), kRunDefaults);
  const auto dedicated = sim::run_strategy(s, Strategy::dedicated, sim::scenario_cost_model(s), kRunDefaults);
  const auto adamw = sim::run_strategy(s, Strategy::adamw, sim::scenario_cost_model(s), kRunDefaults);
  // Same NS work and bytes; striped crosses the network on 4 rails instead of one and its
  // broadcasts do not wait for the forward: it must end sooner.
  CHECK(striped.step_s < dedicated.step_s);
  CHECK(striped.step_s > adamw.step_s * 0.9);  // and it is still a real step, not free
  // The program: every run-ahead collective sits on the broadcast stream with no dependency
  // on compute, and a bucket's broadcasts across one rail are one launch.
  const Routing routing = route_parameters(s.model, s.routing);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::owner_striped, mesh_for_cluster(s.cluster),
                                sim::scenario_cost_model(s), [&] {
                                  StepPlanOptions o;
                                  return o;
                                }());
  const sim::StepProgram prog =
      sim::build_step_program(sp.plan, s.model, routing, s.optimizer, sim::scenario_cost_model(s), s.training);
  int run_ahead = 0;
  std::set<int> streams;
  for (const auto& ops : prog.ranks) {
    for (const auto& op : ops) {
      if (op.collective < 0 || !prog.collectives[static_cast<std::size_t>(op.collective)].run_ahead) continue;
      ++run_ahead;
      // Across nodes on the broadcast stream, inside a node on the local one.
      const bool one_node = prog.collectives[static_cast<std::size_t>(op.collective)].group.rfind("shard", 0) == 0;
      CHECK(op.stream == (one_node ? sim::kLocalBroadcastStream : sim::kBroadcastStream));
      streams.insert(op.stream);
      for (int d : op.deps) CHECK(ops[static_cast<std::size_t>(d)].collective >= 0);
    }
  }
  CHECK(run_ahead > 0);
  CHECK(streams.size() == 2);
  std::set<int> buckets;
  for (const Op& op : sp.plan.ranks[0]) {
    if (op.bucket >= 0 && op.phase == Phase::forward) buckets.insert(op.bucket);
  }
  int rail0_broadcasts = 0;
  for (const auto& c : prog.collectives) {
    rail0_broadcasts += c.call.kind == OpKind::broadcast && c.group == "replicate[0]";
  }
  CHECK(rail0_broadcasts == static_cast<int>(buckets.size()));
}

TEST_CASE("a scenario's planner section sets owner-striped's knobs, strictly", "[scenario][striped]") {
  const std::string head = "name: p\nmodel:\n  name: small\n  transformer: {hidden: 256, layers: 2, heads: 4, ffn: 704, vocab: 1000}\n";
  const Scenario s = parse_scenario(
      head + "planner: {striped_bucket_MiB_per_rail: 4.5, striped_run_ahead: false, striped_all_reduce_from_nodes: 2}\n", "p.yaml");
  REQUIRE(s.planner.striped_bucket_bytes_per_rail.has_value());
  CHECK(*s.planner.striped_bucket_bytes_per_rail == 4718592);  // 4.5 MiB
  CHECK(s.planner.striped_run_ahead == std::optional<bool>(false));
  CHECK(s.planner.striped_all_reduce_from_nodes == std::optional<int>(2));
  CHECK_FALSE(parse_scenario(head, "p.yaml").planner.striped_run_ahead.has_value());
  CHECK_THROWS_WITH(parse_scenario(head + "planner: {striped_bucket: 4}\n", "p.yaml"), Catch::Contains("striped_bucket"));
  CHECK_THROWS_WITH(parse_scenario(head + "planner: {striped_bucket_MiB_per_rail: -1}\n", "p.yaml"),
                    Catch::Contains("striped_bucket_MiB_per_rail"));
  for (const char* bad : {"0", "4294967296"}) {
    CHECK_THROWS_WITH(parse_scenario(head + "planner: {striped_all_reduce_from_nodes: " + bad + "}\n", "p.yaml"),
                      Catch::Contains("striped_all_reduce_from_nodes"));
  }
}

TEST_CASE("the planner turns run-ahead off when its replica does not fit, and says so", "[sim][striped]") {
  const std::string text =
      "name: tight\n"
      "model:\n  name: small\n  transformer: {hidden: 1024, layers: 8, heads: 8, kv_heads: 2, ffn: 4096, vocab: 4096}\n"
      "optimizer: {preset: dmuon}\n"
      "cluster:\n  nodes: 2\n  gpus_per_node: 4\n  gpu: h100-sxm\n  gpu_memory_GiB: MEM\n"
      "  nvlink: {bw_GBps: 450, latency_us: 3.4, efficiency: 0.82}\n"
      "  network: {nics_per_node: 4, nic_bw_Gbps: 400, latency_us: 14, efficiency: 0.96}\n"
      "training: {seq_len: 1024, micro_batch: 1, mfu: 0.4, peak_tflops: 989}\n";
  auto with_memory = [&](double GiB) {
    std::string t = text;
    t.replace(t.find("MEM"), 3, std::to_string(GiB));
    return parse_scenario(t, "tight.yaml");
  };
  const Scenario roomy = with_memory(80);
  const Routing routing = route_parameters(roomy.model, roomy.routing);
  const Mesh mesh = mesh_for_cluster(roomy.cluster);
  const CostModel cost = sim::scenario_cost_model(roomy);
  auto gib = [&](bool run_ahead) {
    StepPlanOptions o;
    o.plan.striped_run_ahead = run_ahead;
    const StepPlan sp = plan_step(roomy.model, routing, roomy.optimizer, Strategy::owner_striped, mesh, cost, o);
    return memory_per_gpu(sp.plan, roomy.model, routing, roomy.training).total_bytes() / double(1 << 30);
  };
  const double with = gib(true), without = gib(false);
  REQUIRE(with > without);
  // Roomy: run-ahead stays, no note.
  const auto a = sim::run_strategy(roomy, Strategy::owner_striped, cost, kRunDefaults);
  CHECK(a.plan_note.empty());
  CHECK(a.memory.total_bytes() / double(1 << 30) == Approx(with));
  // Between the two: planned without run-ahead, simulated, and the note names the field.
  const Scenario tight = with_memory((with + without) / 2);
  const auto b = sim::run_strategy(tight, Strategy::owner_striped, cost, kRunDefaults);
  CHECK(b.plan_note.find("run-ahead off") != std::string::npos);
  CHECK(b.plan_note.find("cluster.gpu_memory_GiB") != std::string::npos);
  CHECK(b.memory.total_bytes() / double(1 << 30) == Approx(without));
  // Below both: still refused with the usual message.
  CHECK_THROWS_WITH(sim::run_strategy(with_memory(without / 2), Strategy::owner_striped, cost, kRunDefaults),
                    Catch::Contains("cluster.gpu_memory_GiB"));
}
