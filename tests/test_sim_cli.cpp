// dmuon-sim's command line: the table, the JSON and CSV files, a sweep, --validate on a report
// in dmuon-bench step's format (times and the executor's memory), and one-line errors with
// exit code 2.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/executor_memory.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "run_command.hpp"
#include "test_temp_dir.hpp"

namespace {

using Outcome = CommandOutcome;

Outcome run(const std::string& args) { return run_command(std::string(DMUON_SIM_EXE), args); }

const std::string kDir = std::string(DMUON_SOURCE_DIR) + "/scenarios/";
// Every file the tests write: the process's own temporary directory.
const std::string kTmp = dmuon::test::temp_path("sim-cli-");

}  // namespace

TEST_CASE("dmuon-sim prints every strategy and writes JSON and CSV", "[sim][cli]") {
  const auto o = run("--scenario " + kDir + "qwen2.5-3b-2xh200.yaml --strategy adamw --strategy dedicated --json " + kTmp +
                     "a.json --csv " + kTmp + "a.csv");
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("adamw") != std::string::npos);
  CHECK(o.output.find("dedicated") != std::string::npos);
  CHECK(o.output.find("optimizer compute: roofline") != std::string::npos);
  std::ifstream j(kTmp + "a.json");
  const auto doc = nlohmann::json::parse(j);
  const auto& strategies = doc.at("runs").at(0).at("strategies");
  REQUIRE(strategies.size() == 2);
  for (const auto& s : strategies) {
    CHECK(s.at("step_seconds").get<double>() > 0);
    CHECK(s.at("step_seconds").get<double>() >= s.at("fwd_bwd_seconds").get<double>());
    CHECK(s.at("memory_GiB_per_gpu").at("total").get<double>() > 0);
  }
  std::ifstream csv(kTmp + "a.csv");
  std::string header;
  std::getline(csv, header);
  CHECK(header.find("algbw_GBps,busbw_GBps") != std::string::npos);
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  CHECK(rows > 10);
}

TEST_CASE("a sweep prints a scaling table", "[sim][cli]") {
  const auto o = run("--scenario " + kDir + "qwen2.5-3b-2xh200.yaml --strategy adamw --strategy dedicated --sweep training.mfu=0.3,0.6");
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("scaling over training.mfu") != std::string::npos);
  CHECK(o.output.find("training.mfu=0.6") != std::string::npos);
}

TEST_CASE("--validate compares with a dmuon-bench step report", "[sim][cli]") {
  const std::string measured = kTmp + "step-test.json";
  std::ofstream(measured) << R"({"machine": "test", "scenario": ")" << kDir
                          << R"(qwen2-0.5b-1xh100.yaml", "strategies": [
      {"strategy": "adamw", "optimizer_step_seconds_median": 0.005, "fwd_bwd_comm_seconds_median": 0.004},
      {"strategy": "dedicated", "optimizer_step_seconds_median": 0.02}]})";
  const auto o = run("--validate " + measured + " --json " + kTmp + "v.json");
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("max_abs_rel_error") != std::string::npos);
  std::ifstream j(kTmp + "v.json");
  const auto doc = nlohmann::json::parse(j);
  CHECK(doc.at("rows").size() == 3);
  CHECK(doc.at("max_abs_rel_error").get<double>() >= 0);
}

TEST_CASE("--validate compares the executor's allocation with the executor layout of the Plan", "[sim][cli][memory]") {
  // Qwen2-0.5B on 2 GPUs. adamw's and ddp-redundant's Plans do not depend on the cost model,
  // so the test can plan them itself; dedicated has no per-rank allocation: no memory row.
  const std::string fixture = std::string(DMUON_TEST_DATA) + "/fsdp2-fixture-2xh200.yaml";
  const std::string measured = kTmp + "step-memory.json";
  std::ofstream(measured) << R"({"machine": "test", "scenario": ")" << fixture << R"(", "strategies": [
      {"strategy": "adamw", "optimizer_step_seconds_median": 0.005, "fwd_bwd_comm_seconds_median": 0.004,
       "ranks": [{"rank": 0, "allocated_bytes": 1e9}, {"rank": 1, "allocated_bytes": 3e9}]},
      {"strategy": "dedicated", "optimizer_step_seconds_median": 0.02},
      {"strategy": "ddp-redundant", "optimizer_step_seconds_median": 0.03,
       "ranks": [{"rank": 0, "allocated_bytes": 8e9}, {"rank": 1, "allocated_bytes": 7e9}]}]})";
  const auto o = run("--validate " + measured + " --json " + kTmp + "vm.json");
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("executor allocated (no act)") != std::string::npos);
  CHECK(o.output.find("max_abs_rel_error_memory") != std::string::npos);
  std::ifstream j(kTmp + "vm.json");
  const auto doc = nlohmann::json::parse(j);
  const auto& rows = doc.at("rows");
  REQUIRE(rows.size() == 6);
  // The time rows first, in the report's order, then one memory row per strategy with ranks.
  const char* quantities[] = {"optimizer step", "fwd/bwd collectives", "optimizer step", "optimizer step",
                              "executor allocated (no act)", "executor allocated (no act)"};
  const char* strategies[] = {"adamw", "adamw", "dedicated", "ddp-redundant", "adamw", "ddp-redundant"};
  double time_error = 0, memory_error = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows.at(i).at("quantity") == quantities[i]);
    CHECK(rows.at(i).at("strategy") == strategies[i]);
    CHECK(rows.at(i).at("unit") == (i < 4 ? "s" : "bytes"));
    double& e = i < 4 ? time_error : memory_error;
    e = std::max(e, std::abs(rows.at(i).at("rel_error").get<double>()));
  }
  CHECK(doc.at("max_abs_rel_error").get<double>() == Approx(time_error));
  CHECK(doc.at("max_abs_rel_error_memory").get<double>() == Approx(memory_error));

  // Predicted: the executor layout of the same Plan, recomputed here; measured: the largest rank.
  const dmuon::Scenario sc = dmuon::load_scenario(fixture);
  const dmuon::Routing routing = dmuon::route_parameters(sc.model, sc.routing);
  const dmuon::CostModel cost(dmuon::device_profile(sc.cluster.gpu));
  const double total = double(routing.muon_numel + routing.adamw_numel);
  struct Expect {
    dmuon::Strategy strategy;
    std::size_t row;
    double measured, bytes_per_element;  // hand count: adamw 2+2+(4+8)/2, ddp-redundant 2+2+4+4+4
  };
  for (const Expect& e : {Expect{dmuon::Strategy::adamw, 4, 3e9, 10}, Expect{dmuon::Strategy::ddp_redundant, 5, 8e9, 16}}) {
    const dmuon::StepPlan sp = dmuon::plan_step(sc.model, routing, sc.optimizer, e.strategy, dmuon::mesh_for_cluster(sc.cluster), cost);
    const double predicted = dmuon::executor_memory_per_gpu(sp.plan, sc.model, routing).total_bytes();
    const auto& row = rows.at(e.row);
    CHECK(row.at("measured").get<double>() == e.measured);
    CHECK(row.at("predicted").get<double>() == Approx(predicted).epsilon(1e-12));
    CHECK(row.at("predicted_GiB").get<double>() == Approx(predicted / (1024.0 * 1024 * 1024)).epsilon(1e-12));
    // Padding to 256 bytes adds well under 0.1% on a 0.5B model.
    CHECK(predicted == Approx(e.bytes_per_element * total).epsilon(1e-3));
    CHECK(row.at("predicted_breakdown").get<std::string>().find("training layout without activations") != std::string::npos);
  }
}

TEST_CASE("--validate compares with an fsdp2_step.py report (fwd+bwd and peak memory)", "[sim][cli]") {
  const std::string data = std::string(DMUON_TEST_DATA) + "/";
  const std::string scenario = " --scenario " + data + "fsdp2-fixture-2xh200.yaml";
  auto o = run("--validate " + data + "fsdp2-step-fixture.json" + scenario + " --json " + kTmp + "fsdp2-v.json");
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("fwd+bwd (FSDP2 + AdamW)") != std::string::npos);
  CHECK(o.output.find("peak allocated (with act.)") != std::string::npos);
  CHECK(o.output.find("GiB") != std::string::npos);
  std::ifstream j(kTmp + "fsdp2-v.json");
  const auto doc = nlohmann::json::parse(j);
  REQUIRE(doc.at("rows").size() == 2);
  CHECK(doc.at("rows").at(0).at("unit") == "s");
  CHECK(doc.at("rows").at(0).at("predicted").get<double>() > 0);
  CHECK(doc.at("rows").at(1).at("unit") == "bytes");
  CHECK(doc.at("rows").at(1).at("measured").get<double>() == 2e10);
  CHECK(doc.at("rows").at(1).at("measured_GiB").get<double>() == Approx(2e10 / (1024.0 * 1024 * 1024)));
  // max_abs_rel_error is the time rows' alone; the memory row has its own.
  CHECK(doc.at("max_abs_rel_error").get<double>() == Approx(std::abs(doc.at("rows").at(0).at("rel_error").get<double>())));
  CHECK(doc.at("max_abs_rel_error_memory").get<double>() == Approx(std::abs(doc.at("rows").at(1).at("rel_error").get<double>())));

  auto report = [&](const std::string& name, const std::string& fields) {
    std::ofstream(kTmp + name) << R"({"tool": "fsdp2_step.py", "world": 2, "micro_batch": 2, "seq_len": 2048, )" << fields << "}";
    return kTmp + name;
  };
  o = run("--validate " + report("fsdp2-compute.json", R"("mode": "compute-only", "model": "qwen2-0.5b", "fwd_bwd_seconds_median": 0.05)") + scenario);
  REQUIRE(o.exit_code == 0);
  CHECK(o.output.find("fwd+bwd compute (no FSDP)") != std::string::npos);
  o = run("--validate " + report("fsdp2-bad1.json", R"("mode": "fsdp2", "model": "qwen2-0.5b", "peak_allocated_bytes": 1e9)") + scenario);
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("fsdp2-bad1.json.fwd_bwd_seconds_median: missing") != std::string::npos);
  o = run("--validate " + report("fsdp2-bad2.json", R"("mode": "fsdp2", "model": "llama3-8b", "fwd_bwd_seconds_median": 0.1, "peak_allocated_bytes": 1e9)") + scenario);
  CHECK(o.exit_code == 2);
  CHECK(o.output.find(".model: 'llama3-8b' but scenario") != std::string::npos);
  o = run("--validate " + report("fsdp2-bad3.json", R"("mode": "eager", "model": "qwen2-0.5b")") + scenario);
  CHECK(o.exit_code == 2);
  CHECK(o.output.find(".mode: expected fsdp2 or compute-only") != std::string::npos);
  // A host-floor probe of a cut-down model (fsdp2_step.py --num-layers) is refused; its own depth passes.
  o = run("--validate " + report("fsdp2-bad4.json", R"("mode": "fsdp2", "model": "qwen2-0.5b", "num_layers": 12, "fwd_bwd_seconds_median": 0.1, "peak_allocated_bytes": 1e9)") + scenario);
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("fsdp2-bad4.json.num_layers: 12 decoder layers but scenario") != std::string::npos);
  o = run("--validate " + report("fsdp2-full.json", R"("mode": "fsdp2", "model": "qwen2-0.5b", "num_layers": 24, "fwd_bwd_seconds_median": 0.1, "peak_allocated_bytes": 1e9)") + scenario);
  CHECK(o.exit_code == 0);
  o = run("--validate " + data + "fsdp2-step-fixture.json");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--scenario: required with an fsdp2_step.py report") != std::string::npos);
}

TEST_CASE("bad arguments and input exit 2 with one clear line", "[sim][cli]") {
  auto o = run("--scenario " + kDir + "16node.yaml --mode packets");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--mode: 'packets'") != std::string::npos);
  o = run("--scenario /nonexistent.yaml");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("/nonexistent.yaml: cannot open file") != std::string::npos);
  o = run("--scenario " + kDir + "16node.yaml --sweep nodes");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--sweep: expected key=v1,v2") != std::string::npos);
  o = run("--scenario " + kDir + "16node.yaml --sweep cluster.nodes=0");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("cluster.nodes") != std::string::npos);
  o = run("--scenario " + kDir + "16node.yaml --strategy sgd");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--strategy") != std::string::npos);
  o = run("--validate /nonexistent.json");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--validate: /nonexistent.json: cannot open file") != std::string::npos);
  o = run("");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--scenario: required") != std::string::npos);
}

TEST_CASE("a strategy that cannot be simulated fails the run with exit 1 and says why", "[sim][cli]") {
  // Every parameter routed to AdamW: the Muon strategies have nothing to do, an input error.
  const std::string scenario = kTmp + "no-muon.yaml";
  std::ofstream(scenario) << "name: no-muon\nmodel: " << kDir << "models/qwen2-0.5b.yaml\n"
                          << "routing: {adamw: ['*']}\nstrategies: [adamw, dedicated]\n"
                          << "cluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, gpu_memory_GiB: 80,\n"
                          << "          nvlink: {bw_GBps: 450, latency_us: 3}}\n"
                          << "training: {seq_len: 128, micro_batch: 1, mfu: 0.4}\n";
  const auto o = run("--scenario " + scenario);
  CHECK(o.exit_code == 1);
  CHECK(o.output.find("not simulated: strategies: 'dedicated' runs Muon") != std::string::npos);
  CHECK(o.output.find("1 of 2 strategy runs not simulated") != std::string::npos);
}
