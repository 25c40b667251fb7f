// core/cost/forward_backward_grid and core/cost/forward_backward_cost: interpolation of measured GEMM and
// attention efficiencies against closed forms, measured layers first, and the FLOPs-at-MFU
// fallback equal to the formula the simulator always used.
#include <algorithm>
#include <cmath>
#include <string>

#include "catch_compat.hpp"
#include "core/cost/forward_backward_cost.hpp"
#include "core/cost/layer_timing.hpp"
#include "core/cost/forward_backward_grid.hpp"
#include "core/model/model_yaml.hpp"

using namespace dmuon;

namespace {

// Efficiencies linear in the logs: multilinear interpolation must reproduce them exactly.
double gemm_eff(double t, double i, double o) { return 1e12 * (100 + 10 * std::log2(t) + 5 * std::log2(i) + 3 * std::log2(o)); }
double gemm_bwd_eff(double t, double i, double o) { return 1e12 * (50 + 7 * std::log2(t) + 2 * std::log2(i) + std::log2(o)); }
double attn_eff(double s, double d) { return 1e12 * (40 + 20 * std::log2(s) + 30 * std::log2(d)); }

std::vector<GemmTiming> gemm_grid() {
  std::vector<GemmTiming> out;
  for (long t : {1024, 4096, 16384}) {
    for (long i : {512, 2048, 8192}) {
      for (long o : {512, 4096, 32768}) {
        const double flops = 2.0 * double(t) * double(i) * double(o);
        out.push_back({t, i, o, flops / gemm_eff(t, i, o), 2 * flops / gemm_bwd_eff(t, i, o)});
      }
    }
  }
  return out;
}

std::vector<AttentionTiming> attention_grid() {
  std::vector<AttentionTiming> out;
  for (long s : {512, 2048, 8192}) {
    for (long d : {64, 128}) {
      for (long heads : {16, 32}) {
        const long samples = 8192 / s;
        const double flops = AttentionGrid::forward_flops(double(samples), double(s), double(heads), double(d));
        out.push_back({samples, s, heads, 2, d, flops / attn_eff(s, d), flops / (0.5 * attn_eff(s, d))});
      }
    }
  }
  return out;
}

ModelSpec model(const std::string& file) { return load_model_file(std::string(DMUON_SOURCE_DIR) + "/scenarios/models/" + file); }

// Qwen2.5-3B's three parts at micro-batch 2 x 2048, in round numbers: a block 1 + 2 ms, the
// embedding 0.1 + 0.3 ms, the head 2 + 3 ms.
ForwardBackwardTable qwen_parts() {
  ForwardBackwardTable table;
  table.layers = {{"qwen2.5-3b", "block", 2, 2048, 0.001, 0.002},
                  {"qwen2.5-3b", "embedding", 2, 2048, 0.0001, 0.0003},
                  {"qwen2.5-3b", "head", 2, 2048, 0.002, 0.003}};
  return table;
}

}  // namespace

TEST_CASE("GEMM efficiency is interpolated linearly in the logs and clamped at the edge", "[fb][grid]") {
  const GemmGrid grid(gemm_grid());
  // Exact grid points answer exactly.
  auto x = grid.seconds(4096, 2048, 4096);
  CHECK(x.forward_s == Approx(2.0 * 4096 * 2048 * 4096 / gemm_eff(4096, 2048, 4096)).epsilon(1e-12));
  CHECK(x.backward_s == Approx(4.0 * 4096 * 2048 * 4096 / gemm_bwd_eff(4096, 2048, 4096)).epsilon(1e-12));
  // Between points: the closed form.
  for (double t : {1500.0, 3000.0, 12000.0}) {
    for (double i : {700.0, 1536.0, 5000.0}) {
      for (double o : {1000.0, 11008.0, 20000.0}) {
        const auto s = grid.seconds(t, i, o);
        CHECK(s.forward_s == Approx(2 * t * i * o / gemm_eff(t, i, o)).epsilon(1e-12));
        CHECK(s.backward_s == Approx(4 * t * i * o / gemm_bwd_eff(t, i, o)).epsilon(1e-12));
      }
    }
  }
  // Outside: the edge's efficiency (tokens below 1024 priced at 1024's rate).
  const auto small = grid.seconds(256, 2048, 4096);
  CHECK(small.forward_s == Approx(2.0 * 256 * 2048 * 4096 / gemm_eff(1024, 2048, 4096)).epsilon(1e-12));
  const auto big = grid.seconds(4096, 2048, 152064);
  CHECK(big.forward_s == Approx(2.0 * 4096 * 2048 * 152064 / gemm_eff(4096, 2048, 32768)).epsilon(1e-12));
}

TEST_CASE("a ragged grid brackets each axis among the points that exist", "[fb][grid]") {
  auto timings = gemm_grid();
  // A head-sized out only for in = 2048: queries at in = 2048 use it, others clamp at 32768.
  for (long t : {1024, 4096, 16384}) {
    const double flops = 2.0 * double(t) * 2048 * 131072;
    timings.push_back({t, 2048, 131072, flops / gemm_eff(t, 2048, 131072), 2 * flops / gemm_bwd_eff(t, 2048, 131072)});
  }
  const GemmGrid grid(timings);
  const auto s = grid.seconds(2048, 2048, 65536);
  CHECK(s.forward_s == Approx(2.0 * 2048 * 2048 * 65536 / gemm_eff(2048, 2048, 65536)).epsilon(1e-12));
  CHECK_THROWS(interpolate_grid({}, {1.0}));
}

TEST_CASE("attention efficiency is interpolated in log2 seq_len and head_dim", "[fb][grid]") {
  const AttentionGrid grid(attention_grid());
  const auto at = grid.seconds(4, 2048, 16, 128);
  CHECK(at.forward_s == Approx(AttentionGrid::forward_flops(4, 2048, 16, 128) / attn_eff(2048, 128)).epsilon(1e-12));
  for (double s : {700.0, 1024.0, 4096.0}) {
    for (double d : {80.0, 96.0}) {
      const auto x = grid.seconds(2, s, 12, d);
      const double flops = 4 * s * s * d * 12 * 2 / 2;
      CHECK(x.forward_s == Approx(flops / attn_eff(s, d)).epsilon(1e-12));
      CHECK(x.backward_s == Approx(2 * flops / attn_eff(s, d)).epsilon(1e-12));
    }
  }
}

TEST_CASE("without a table every unit is FLOPs at MFU, as the simulator always priced it", "[fb]") {
  const ModelSpec m = model("qwen2.5-3b.yaml");
  TrainingSpec t;
  t.seq_len = 2048, t.micro_batch = 2, t.mfu = 0.4;
  const auto c = forward_backward_cost(m, t, 989);
  // The old formula: 2 x weights x tokens per block (+ causal attention 2 s^2 q per sample),
  // the tied head 2 x vocab x hidden x tokens, embeddings and norms 0.
  const double tokens = 4096, hidden = 2048, q = 16 * 128, kv = 2 * 128, ffn = 11008, vocab = 151936;
  const double block = 2 * tokens * (hidden * q + 2 * hidden * kv + q * hidden + 3 * hidden * ffn) + 2.0 * 2048 * 2048 * q * 2;
  const double head = 2 * tokens * vocab * hidden;
  const double s_per_flop = 1 / (989e12 * 0.4);
  REQUIRE(c.units.size() == 1 + 36 + 1);
  CHECK(c.units.front().forward_flops == 0);
  CHECK(c.units[1].forward_flops == block);
  CHECK(c.units.back().forward_flops == head);
  CHECK(c.units[5].forward_s == block * s_per_flop);
  CHECK(c.units[5].backward_s == 2 * block * s_per_flop);
  CHECK(c.total_s == 3 * (36 * block + head) * s_per_flop);
  CHECK(c.units[5].source == "datasheet");
  CHECK(c.description == "FLOPs at mfu 0.4 of 989 TFLOP/s");
  CHECK(forward_flops_per_sample(m, t) == (36 * block + head) / 2);
  t.fwd_bwd_seconds = 0.5;
  const auto measured = forward_backward_cost(m, t, 989);
  CHECK(measured.total_s == Approx(0.5).epsilon(1e-12));
  CHECK(measured.units[3].source == "measured total");
}

TEST_CASE("measured layers come first, then building blocks, then the datasheet", "[fb]") {
  const ModelSpec m = model("qwen2.5-3b.yaml");
  TrainingSpec t;
  t.seq_len = 2048, t.micro_batch = 2;
  ForwardBackwardTable table;
  table.gemm = gemm_grid();
  table.attention = attention_grid();
  table.elementwise_GBps = 1e9;  // GB/s: elementwise traffic negligible, GEMMs and attention alone
  table.layers = {{"qwen2.5-3b", "block", 2, 2048, 0.004, 0.009},
                  {"qwen2.5-3b", "embedding", 2, 2048, 0.0001, 0.0003},
                  {"qwen2.5-3b", "head", 1, 2048, 0.5, 0.5},     // another micro-batch: not this run
                  {"other-model", "head", 2, 2048, 0.5, 0.5}};  // another model
  const auto c = forward_backward_cost(m, t, 989, &table);
  REQUIRE(c.units.size() == 38);
  CHECK(c.units[0].source == "measured");
  CHECK(c.units[0].forward_s == 0.0001);
  for (int u = 1; u <= 36; ++u) {
    CHECK(c.units[u].source == "measured");
    CHECK(c.units[u].backward_s == 0.009);
  }
  // The head is interpolated: the tied LM head GEMM at the grid's (clamped) rate.
  const double tokens = 4096, hidden = 2048, vocab = 151936;
  CHECK(c.units.back().source == "interpolated");
  CHECK(c.units.back().forward_s == Approx(2 * tokens * hidden * vocab / gemm_eff(tokens, hidden, 32768)).epsilon(1e-6));
  CHECK(c.total_s == Approx(0.0004 + 36 * 0.013 + c.units.back().forward_s + c.units.back().backward_s).epsilon(1e-12));
  CHECK_THAT(c.description, Catch::Contains("measured"));
  CHECK_THAT(c.description, Catch::Contains("interpolated"));

  // No measured block for this sequence: each block from its GEMMs and attention.
  t.seq_len = 1024;
  const auto i = forward_backward_cost(m, t, 989, &table);
  const double tk = 2048, q = 2048, kv = 256, ffn = 11008;
  double fwd = 0;
  for (auto [in, out] : {std::pair{hidden, q}, {hidden, kv}, {hidden, kv}, {q, hidden}, {hidden, ffn}, {hidden, ffn}, {ffn, hidden}}) {
    // Clamped at the grid edge: k, v (256 wide) at out 512, down_proj (in 11008) at in 8192.
    fwd += 2 * tk * in * out / gemm_eff(tk, std::min(in, 8192.0), std::max(out, 512.0));
  }
  fwd += AttentionGrid::forward_flops(2, 1024, 16, 128) / attn_eff(1024, 128);
  CHECK(i.units[7].source == "interpolated");
  CHECK(i.units[7].forward_s == Approx(fwd).epsilon(1e-6));

  // Without an attention grid a block cannot be built from parts: the datasheet prices it.
  table.attention.clear();
  const auto d = forward_backward_cost(m, t, 989, &table);
  CHECK(d.units[7].source == "datasheet");
  CHECK(d.units[0].source == "interpolated");  // the embedding has no attention
  CHECK_THAT(d.description, Catch::Contains("datasheet: FLOPs at mfu"));
}

TEST_CASE("the host paces the units; the framework picks the floor", "[fb][host_floor]") {
  const ModelSpec m = model("qwen2.5-3b.yaml");
  TrainingSpec t;
  t.seq_len = 2048, t.micro_batch = 2;
  ForwardBackwardTable table = qwen_parts();
  const auto gpu = forward_backward_cost(m, t, 989, &table);
  REQUIRE(gpu.units.size() == 38);

  // Host 0.005 + 36 x 0.0025 = 95 ms, 2.64 ms a block, below every block's 3 ms and never ahead of
  // the GPU: every figure as without it, bit for bit.
  table.host_floor = {{"qwen2.5-3b", HostFloorMode::eager, 1, 32, {2, 6}, {0.01, 0.02}, 0.0025, 0.005}};
  const auto low = forward_backward_cost(m, t, 989, &table);
  CHECK(low.total_s == gpu.total_s);
  CHECK(low.units[4].source == "measured");
  for (const auto& u : low.units) CHECK(u.forward_host_wait_s + u.backward_host_wait_s == 0);
  CHECK_THAT(low.description, Catch::Contains("paces 0 of 38 units"));

  // Host 0.005 + 36 x 0.0045 = 167 ms, 4.64 ms a block against the GPU's 3: the host sets the pace.
  // The head's 5 ms of GPU work costs the host nothing and is absorbed by its lead over the
  // backward blocks after it; the step ends when the host has issued everything plus the
  // embedding's backward (0.3 ms), the one unit after the last block.
  table.host_floor[0].per_layer_s = 0.0045;
  const auto eager = forward_backward_cost(m, t, 989, &table);
  CHECK(eager.total_s == Approx(0.005 + 36 * 0.0045 + 0.0003).epsilon(1e-12));
  CHECK(eager.units[0].forward_s == 0.0001);                  // before the host has issued anything
  CHECK(eager.units[1].forward_s == Approx(0.167 / 36 / 3 - 0.0001).epsilon(1e-12));  // waits for it
  CHECK(eager.units[1].source == "host floor");
  CHECK(eager.units[20].forward_s == Approx(0.167 / 36 / 3).epsilon(1e-12));
  CHECK(eager.units[20].backward_s == Approx(0.167 / 36 * 2 / 3).epsilon(1e-12));
  // What the GPU waited for the host, on top of its own time (FSDP2's copies run in it).
  CHECK(eager.units[20].forward_host_wait_s == Approx(eager.units[20].forward_s - gpu.units[20].forward_s).epsilon(1e-12));
  CHECK(eager.units[20].backward_host_wait_s == Approx(eager.units[20].backward_s - gpu.units[20].backward_s).epsilon(1e-12));
  CHECK(eager.units[20].forward_host_wait_s > 0);
  CHECK(eager.units.back().forward_host_wait_s == 0);
  CHECK(eager.units.back().forward_s == 0.002);                 // the head's GPU time in full ...
  CHECK(eager.units.back().backward_s == 0.003);
  CHECK(eager.units.back().source == "measured");
  CHECK(eager.units[36].backward_s == 0.002);                   // ... and the GPU's backlog after it
  CHECK(eager.units[0].backward_s == 0.0003);
  CHECK_THAT(eager.description, Catch::Contains("host floor 4.64 ms a layer at 36 layers (eager, measured on qwen2.5-3b, 1 GPU)"));

  // Under FSDP2 (the scenario prices FSDP2's copies): the FSDP2 floor where the file has one, else eager's.
  t.fsdp2_copies = true;
  CHECK(forward_backward_cost(m, t, 989, &table).total_s == eager.total_s);
  // A per-layer cost that grows with depth: 5.75 ms a layer at 18 layers, 6.25 at 36, intercept
  // -9 ms; this model has 36 blocks: 225 ms of host.
  table.host_floor.push_back({"qwen2.5-3b", HostFloorMode::fsdp2, 1, 32, {18, 36}, {0.1035, 0.225}, 0.00675, -0.018, 2});
  const auto fsdp2 = forward_backward_cost(m, t, 989, &table);
  CHECK(fsdp2.total_s == Approx(0.225 + 0.0003).epsilon(1e-12));
  CHECK(fsdp2.units[9].forward_s + fsdp2.units[9].backward_s == Approx(0.00625).epsilon(1e-12));
  CHECK_THAT(fsdp2.description, Catch::Contains("(fsdp2, measured on qwen2.5-3b, 2 GPUs)"));

  // A measured total is the whole step as measured: no floor on top.
  t.fwd_bwd_seconds = 0.1;
  CHECK(forward_backward_cost(m, t, 989, &table).total_s == Approx(0.1).epsilon(1e-12));
}

TEST_CASE("the host's time at a model's depth follows the measured line", "[fb][host_floor]") {
  HostFloor f{"qwen2.5-3b", HostFloorMode::fsdp2, 1, 32, {18, 36}, {0.1035, 0.225}, 0.00675, -0.018, 2};
  CHECK(host_seconds_at_depth(f, 18) == Approx(0.1035).epsilon(1e-12));
  CHECK(host_seconds_at_depth(f, 28) == Approx(-0.018 + 28 * 0.00675).epsilon(1e-12));
  CHECK(host_seconds_at_depth(f, 48) == Approx(-0.018 + 48 * 0.00675).epsilon(1e-12));  // the line, extended
  // Below the shallowest depth the line would go negative: that depth's time, scaled.
  CHECK(host_seconds_at_depth(f, 2) == Approx(0.1035 * 2 / 18).epsilon(1e-12));
  CHECK_THROWS_WITH(host_seconds_at_depth(f, 0), Catch::Contains("at least one layer"));
  f.per_step_s = -1;
  CHECK_THROWS_WITH(host_seconds_at_depth(f, 20), Catch::Contains("per_step_s too negative"));
}

TEST_CASE("the calibration model's whole run over its parts scales every unit priced from parts", "[fb][whole]") {
  const ModelSpec m = model("qwen2.5-3b.yaml");
  TrainingSpec t;
  t.seq_len = 2048, t.micro_batch = 2;
  ForwardBackwardTable table = qwen_parts();
  const auto parts = forward_backward_cost(m, t, 989, &table);
  const double sum = 36 * 0.003 + 0.0004 + 0.005;
  REQUIRE(parts.total_s == Approx(sum).epsilon(1e-12));
  // The whole model ran 7% longer than its parts: the calibration model is priced at its whole
  // run, each unit 7% up.
  table.layers.push_back({"qwen2.5-3b", "whole", 2, 2048, 0.4 * sum * 1.07, 0.6 * sum * 1.07, 36});
  const auto whole = forward_backward_cost(m, t, 989, &table);
  CHECK(whole.total_s == Approx(sum * 1.07).epsilon(1e-12));
  CHECK(whole.units[5].backward_s == Approx(0.002 * 1.07).epsilon(1e-12));
  CHECK_THAT(whole.description, Catch::Contains("parts x 1.07 (qwen2.5-3b's whole run over its parts)"));
  const auto w = whole_over_parts(table.layers);
  REQUIRE(w.has_value());
  CHECK(w->ratio() == Approx(1.07).epsilon(1e-12));
  // Without one of its parts there is no ratio.
  table.layers.erase(table.layers.begin() + 1);
  CHECK_FALSE(whole_over_parts(table.layers).has_value());
  // Units priced from the datasheet are not from parts: an attention-less table leaves blocks to
  // it (no measured block at this shape, no grid), and they keep their FLOP price.
  table.layers.push_back({"qwen2.5-3b", "embedding", 2, 2048, 0.0001, 0.0003});
  t.seq_len = 1024;
  const auto other = forward_backward_cost(m, t, 989, &table);
  ForwardBackwardTable bare;
  const auto datasheet = forward_backward_cost(m, t, 989, &bare);
  CHECK(other.units[5].source == "datasheet");
  CHECK(other.units[5].forward_s == datasheet.units[5].forward_s);
  CHECK(other.description.find("parts x") == std::string::npos);
}
