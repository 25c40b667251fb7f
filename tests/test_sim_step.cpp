// Whole training steps on small clusters: the strategies' relative costs, the memory check,
// the two modes on a full step, the measured-benchmark shape of a Plan, and the trace.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "sim/strategy_run.hpp"
#include "test_temp_dir.hpp"

using namespace dmuon;

namespace {

// 16 blocks of 7 matrices: 112 Muon matrices over 8 GPUs.
std::string scenario_text(int nodes, int gpus, double memory_GiB, const std::string& extra = "") {
  return "name: step-test\n"
         "model:\n  name: small\n  transformer: {hidden: 512, layers: 16, heads: 8, kv_heads: 2, ffn: 1536, vocab: 4096}\n"
         "optimizer: {preset: dmuon}\n"
         "cluster:\n  nodes: " + std::to_string(nodes) + "\n  gpus_per_node: " + std::to_string(gpus) +
         "\n  gpu: h100-sxm\n  gpu_memory_GiB: " + std::to_string(memory_GiB) +
         "\n  nvlink: {bw_GBps: 450, latency_us: 3.4, efficiency: 0.82}\n"
         "  network: {nics_per_node: " + std::to_string(gpus) + ", nic_bw_Gbps: 400, latency_us: 14, efficiency: 0.96}\n"
         "training: {seq_len: 1024, micro_batch: 1, mfu: 0.4, peak_tflops: 989}\n" + extra;
}

sim::StrategyResult run(const Scenario& s, Strategy strategy, SimMode mode = SimMode::fast, const std::string& trace = "") {
  sim::RunOptions o;
  o.sim.mode = mode;
  o.sim.trace_file = trace;
  return sim::run_strategy(s, strategy, sim::scenario_cost_model(s), o);
}

}  // namespace

TEST_CASE("dedicated's optimizer phase beats ddp-redundant's on a model with many matrices", "[sim][step]") {
  const Scenario s = parse_scenario(scenario_text(1, 8, 80), "step.yaml");
  const auto ddp = run(s, Strategy::ddp_redundant);
  const auto ded = run(s, Strategy::dedicated);
  INFO("ddp optimizer " << ddp.optimizer_s << " s, dedicated " << ded.optimizer_s << " s");
  // Every GPU runs all 112 Newton-Schulz calls under DDP; an owner runs about 1/8 of them.
  CHECK(ded.optimizer_s < ddp.optimizer_s / 3);
  CHECK(ded.optimizer_s > 0);
  CHECK(ded.step_s > ded.fwd_bwd_s);
  CHECK(ddp.owner_imbalance == Approx(0).margin(1e-9));  // every GPU does the same work
}

TEST_CASE("a strategy that does not fit the GPU fails, naming it and the memory", "[sim][step][memory]") {
  // ~60M parameters: DDP keeps fp32 master, gradient and momentum of every one of them.
  const Scenario s = parse_scenario(scenario_text(1, 8, 0.5), "step.yaml");
  try {
    run(s, Strategy::ddp_redundant);
    FAIL("ddp-redundant should not fit 0.5 GiB");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("strategy ddp-redundant needs"));
    CHECK_THAT(e.what(), Catch::Contains("cluster.gpu_memory_GiB is 0.5"));
  }
  CHECK_NOTHROW(run(s, Strategy::dedicated));  // sharded over 8 GPUs, it fits
}

TEST_CASE("a whole step agrees between flows and fast within 2% on 2 nodes", "[sim][step][agreement]") {
  const Scenario s = parse_scenario(scenario_text(2, 4, 80), "step.yaml");
  for (Strategy st : {Strategy::adamw, Strategy::dedicated, Strategy::zero1_a2a}) {
    const auto fast = run(s, st, SimMode::fast);
    const auto flows = run(s, st, SimMode::flows);
    INFO(to_string(st) << ": fast " << fast.step_s << " s, flows " << flows.step_s << " s");
    CHECK(fast.step_s == Approx(flows.step_s).epsilon(0.02));
  }
}

TEST_CASE("a measured forward+backward replaces the MFU estimate", "[sim][step]") {
  const Scenario s = parse_scenario(scenario_text(1, 2, 80, "simulation: {mode: fast}\n") , "step.yaml");
  Scenario measured = s;
  measured.training.fwd_bwd_seconds = 0.25;
  const auto r = run(measured, Strategy::adamw);
  CHECK(r.fwd_bwd_compute_s == Approx(0.25));
  CHECK(r.fwd_bwd_s >= 0.25);
  CHECK_THAT(r.compute_source, Catch::Contains("measured"));
  // Twice the tokens, at least twice the compute (attention grows faster).
  Scenario longer = s;
  longer.training.seq_len *= 2;
  CHECK(run(longer, Strategy::adamw).fwd_bwd_compute_s >= 2 * run(s, Strategy::adamw).fwd_bwd_compute_s);
}

TEST_CASE("the Plan as the benchmark runs it: collectives only around the optimizer", "[sim][step]") {
  const Scenario s = parse_scenario(scenario_text(1, 4, 80), "step.yaml");
  sim::RunOptions o;
  o.program.plan_as_is = true;
  const auto r = sim::run_strategy(s, Strategy::adamw, sim::scenario_cost_model(s), o);
  CHECK(r.fwd_bwd_compute_s == 0);
  CHECK(r.fwd_bwd_s > 0);  // the all-gathers and reduce-scatters still run
  // One launch per Plan collective: one all-gather and one reduce-scatter per parameter.
  CHECK(r.outcome.collectives.size() == 2 * s.model.params.size());
}

TEST_CASE("the Chrome trace has one process per node and one thread per GPU stream", "[sim][step][trace]") {
  const Scenario s = parse_scenario(scenario_text(2, 2, 80), "step.yaml");
  const std::string file = dmuon::test::temp_path("trace.json");
  run(s, Strategy::dedicated, SimMode::fast, file);
  std::ifstream in(file);
  REQUIRE(in);
  const auto j = nlohmann::json::parse(in);
  std::remove(file.c_str());
  std::set<int> pids;
  std::set<std::pair<int, int>> threads;
  int events = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++events;
    pids.insert(e.at("pid").get<int>());
    threads.insert({e.at("pid").get<int>(), e.at("tid").get<int>()});
    CHECK(e.at("dur").get<double>() >= 0);
  }
  CHECK(events > 0);
  CHECK(pids == std::set<int>{0, 1});
  CHECK(threads.size() >= 4 * 2);  // 4 GPUs, at least their compute and one comm stream
}

TEST_CASE("memory per GPU follows the mixed-precision byte counts", "[sim][step][memory]") {
  const Scenario s = parse_scenario(scenario_text(1, 8, 80), "step.yaml");
  const double n = double(s.model.total_params());
  const auto adamw = run(s, Strategy::adamw);
  CHECK(adamw.memory.master_bytes == Approx(4 * n / 8));  // fp32 master shard
  CHECK(adamw.memory.grad_bytes == Approx(4 * n / 8));    // fp32 gradient shard
  CHECK(adamw.memory.state_bytes == Approx(8 * n / 8));   // AdamW m and v
  // Saved tensors (core/cost/activation_memory.hpp), 16 blocks of hidden 512, q 512, kv 128,
  // SwiGLU 1536, 1024 tokens: attention 2 (2 x 512 + 512 + 2 x 128 + 512) + 4 x 8 heads, MLP
  // 2 x 2 x 512 + 8 x 1536; the loss 10 bytes per token per entry of the 4096 vocabulary.
  CHECK(adamw.memory.activation_bytes == Approx((4640.0 + 14336.0) * 1024 * 16 + 10.0 * 4096 * 1024));
  const auto ddp = run(s, Strategy::ddp_redundant);
  CHECK(ddp.memory.master_bytes == Approx(4 * n));  // every GPU keeps everything
  const auto ded = run(s, Strategy::dedicated);
  CHECK(ded.memory.master_bytes < ddp.memory.master_bytes / 4);  // owners hold ~1/8 of the matrices
}

TEST_CASE("HSDP meshes of every shape run the two-stage DMuon collectives without deadlock", "[sim][step]") {
  // Two towers (their layer i share DMuon's per-layer launches) over several replicate x shard
  // meshes: every rank must order the merged launches the same way.
  const std::string model =
      "model:\n  name: two-towers\n  towers:\n"
      "    - {name: visual, transformer: {prefix: visual, hidden: 256, layers: 6, heads: 4, ffn: 512, final_norm: false}}\n"
      "    - {name: language, transformer: {hidden: 384, layers: 8, heads: 6, kv_heads: 2, ffn: 1024, vocab: 2048}}\n";
  for (const auto& [nodes, gpus] : std::vector<std::pair<int, int>>{{2, 2}, {4, 2}, {4, 4}, {3, 4}, {8, 2}}) {
    INFO(nodes << " x " << gpus);
    std::string text = scenario_text(nodes, gpus, 80);
    const auto a = text.find("model:"), b = text.find("optimizer:");
    text.replace(a, b - a, model);
    const Scenario s = parse_scenario(text, "mesh.yaml");
    CHECK_NOTHROW(run(s, Strategy::dedicated));
    CHECK_NOTHROW(run(s, Strategy::zero1_a2a));
  }
}
