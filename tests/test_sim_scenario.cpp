// The simulator's scenario sections are read strictly: a bad cluster or training value fails
// with one message naming the file, the line and the key; a cluster smaller than the Plan
// fails naming the cluster keys. Every shipped scenario loads and builds its topology.
#include <filesystem>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"
#include "sim/simulator.hpp"
#include "sim/topology.hpp"

using namespace dmuon;

namespace {

const std::string kHead = "name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 128, vocab: 100}}\n";

std::string error_of(const std::string& text) {
  try {
    const Scenario s = parse_scenario(text, "bad.yaml");
    sim::Topology topo(s.cluster);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("bad cluster and training values name the file, line and key", "[sim][scenario]") {
  struct Case {
    std::string yaml;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"cluster:\n  gpus_per_node: 8\n  nvlink: {bw_GBps: 0}\n", {"bad.yaml:5:", "cluster.nvlink.bw_GBps", "must be > 0"}},
      {"cluster:\n  gpus_per_node: 8\n  nvlink: {bw_GBps: -450}\n", {"cluster.nvlink.bw_GBps", "must be > 0"}},
      {"cluster:\n  nodes: 2\n  network: {nic_bw_Gbps: -400}\n", {"bad.yaml:5:", "cluster.network.nic_bw_Gbps", "must be > 0"}},
      {"cluster:\n  nodes: 2\n  network: {nic_bw_Gbps: 400, efficiency: 1.5}\n", {"cluster.network.efficiency", "(0, 1]"}},
      {"cluster:\n  nodes: 2\n  network: {nic_bw_Gbps: 400, latency_us: -1}\n", {"cluster.network.latency_us", ">= 0"}},
      {"cluster:\n  nodes: 2\n  gpus_per_node: 8\n  nvlink: {bw_GBps: 450}\n  network: {nic_bw_Gbps: 400, nics_per_node: 3}\n",
       {"bad.yaml:7:", "cluster.network", "nics_per_node (3) must divide gpus_per_node (8)"}},
      {"cluster:\n  nodes: 2\n  network: {nic_bw_Gbps: 400, spine_oversubscription: 0.5}\n",
       {"cluster.network.spine_oversubscription", ">= 1"}},
      {"cluster:\n  nodes: 2\n  network: {nic_bw_GBps: 50}\n", {"bad.yaml:5:", "cluster.network", "missing required key 'nic_bw_Gbps'"}},
      {"cluster:\n  nccl: {channels: 0}\n", {"cluster.nccl.channels", "must be > 0"}},
      {"cluster:\n  nccl: {size_efficiency: [[1e6, 0.5], [1e5, 0.9]]}\n", {"cluster.nccl.size_efficiency", "strictly increasing"}},
      {"cluster:\n  nccl: {size_efficiency: [[1e6, 1.5]]}\n", {"cluster.nccl.size_efficiency", "(0, 1]"}},
      {"cluster:\n  nccl: {all_reduce: butterfly}\n", {"bad.yaml:4:", "cluster.nccl.all_reduce", "butterfly"}},
      {"cluster:\n  gpus_per_node: 8\n", {"cluster.nvlink: missing"}},
      {"cluster:\n  nodes: 4\n", {"cluster.network: missing"}},
      {"cluster:\n  nodes: 0\n", {"bad.yaml:4:", "cluster.nodes", "must be > 0"}},
      {"cluster:\n  nodes: 131073\n  gpus_per_node: 8\n  nvlink: {bw_GBps: 450}\n  network: {nic_bw_Gbps: 400, nics_per_node: 8}\n",
       {"1048584 GPUs", "exceed the simulator's 1048576"}},
      {"training: {mfu: 0}\n", {"bad.yaml:3:", "training.mfu"}},
      {"training: {mfu: 1.2}\n", {"training.mfu", "(0, 1]"}},
      {"training: {seq_len: -4096}\n", {"training.seq_len", "must be > 0"}},
      {"training: {tower_tokens: {visual: 0}}\n", {"training.tower_tokens.visual", "must be > 0"}},
      {"training: {sequence: 4096}\n", {"training", "sequence"}},
      {"simulation: {mode: packets}\n", {"bad.yaml:3:", "simulation.mode", "packets"}},
  };
  for (const auto& c : cases) {
    INFO(c.yaml);
    const std::string e = error_of(kHead + c.yaml);
    for (const auto& part : c.expected) CHECK_THAT(e, Catch::Contains(part));
  }
}

TEST_CASE("a Plan with more ranks than the cluster has GPUs fails naming the cluster", "[sim][scenario]") {
  ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 2;
  c.nvlink = NvlinkSpec{450, 3.4, 0.82};
  sim::StepProgram p;
  p.ranks.resize(4);
  try {
    sim::simulate(p, c, {});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("4 ranks but the cluster has 2 GPUs"));
    CHECK_THAT(e.what(), Catch::Contains("cluster.nodes x cluster.gpus_per_node"));
  }
}

TEST_CASE("every shipped scenario loads and builds its cluster", "[sim][scenario]") {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DMUON_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    const Scenario s = load_scenario(entry.path().string());
    // verify-small.yaml is for the CPU interpreter: it describes no interconnect.
    if (s.cluster.gpus_per_node > 1 && !s.cluster.nvlink) continue;
    CHECK_NOTHROW(sim::Topology(s.cluster));
    ++n;
  }
  CHECK(n >= 2);
}

TEST_CASE("sweep overrides are validated like the file", "[sim][scenario]") {
  const std::string file = std::string(DMUON_SOURCE_DIR) + "/scenarios/16node.yaml";
  const Scenario s = load_scenario_with_overrides(file, {{"cluster.nodes", "2"}, {"training.mfu", "0.5"}});
  CHECK(s.cluster.nodes == 2);
  CHECK(s.training.mfu == 0.5);
  CHECK(s.model.params.size() == load_scenario(file).model.params.size());
  try {
    load_scenario_with_overrides(file, {{"cluster.nvlink.bw_GBps", "0"}});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cluster.nvlink.bw_GBps"));
    CHECK_THAT(e.what(), Catch::Contains("cluster.nvlink.bw_GBps=0"));
  }
}
