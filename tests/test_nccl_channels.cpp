// core/cost/nccl_channels: NCCL's channel count per communicator from the node's links, against the
// counts NCCL itself logs and against its rules one by one.
#include <string>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/cost/nccl_channels.hpp"
#include "core/io/scenario.hpp"

using dmuon::nccl_gpu_links;
using dmuon::nccl_ring_channels;
using dmuon::NcclNodeLinks;

namespace {

NcclNodeLinks node(const std::string& gpu, double nvlink_GBps, double nic_Gbps = 0, int nics = 0) {
  NcclNodeLinks l = *nccl_gpu_links(gpu);
  l.nvlink_GBps = nvlink_GBps;
  l.nic_GBps = nic_Gbps / 8.0;
  l.nics_per_node = nics;
  return l;
}

}  // namespace

TEST_CASE("nccl channels: the counts NCCL logs on real machines", "[nccl]") {
  // "24 coll channels" in NCCL INFO logs of one 8-GPU H100 node (p5.48xlarge) and of one
  // 8 x A100-SXM4 node (12 NVLinks); A100 and A800 share sm80, the A800 has 8 NVLinks.
  const NcclNodeLinks a100 = node("a800-sxm4-80gb", 300);
  CHECK(nccl_ring_channels(a100, 8, 1).channels == 24);
  CHECK(nccl_ring_channels(node("h100-sxm", 450), 8, 1).channels == 24);
  // "16 coll channels" logged on one node of 8 x A800-SXM4-80GB (NCCL 2.27.5).
  CHECK(nccl_ring_channels(node("a800-sxm4-80gb", 200), 8, 1).channels == 16);
  // nccl-tests#108: one A100 per node, one HDR NIC, "Channel 00/02".
  CHECK(nccl_ring_channels(node("a800-sxm4-80gb", 200, 200, 8), 1, 2).channels == 2);
}

TEST_CASE("nccl channels: each rule of the search", "[nccl]") {
  SECTION("A800 node: 4 channels at 40 GB/s fill its 160 (8 links x 20), doubled twice") {
    const auto r = nccl_ring_channels(node("a800-sxm4-80gb", 200), 8, 1);
    CHECK(r.searched == 4);
    CHECK(r.speed_GBps == 40);
  }
  SECTION("8 A800s x 8 HDR NICs across nodes: PCIe Gen4 (24) caps a channel, NVLink caps 24 x 6; 20 carries 8") {
    const auto r = nccl_ring_channels(node("a800-sxm4-80gb", 200, 200, 8), 8, 16);
    CHECK(r.searched == 8);
    CHECK(r.speed_GBps == 20);
    CHECK(r.channels == 16);  // below 25 GB/s: no ncclTopoDupChannels; ncclTopoPostset doubles
  }
  SECTION("sm90 keeps 8 channels at 45 GB/s undoubled (below 50, more than 4), postset doubles") {
    const auto r = nccl_ring_channels(node("h100-sxm", 450, 400, 8), 8, 4);
    CHECK(r.searched == 8);
    CHECK(r.speed_GBps == 45);
    CHECK(r.channels == 16);
  }
  SECTION("one H100 a node on one NDR NIC: 1 channel at 48, duplicated (only 1 <= 4), postset doubles") {
    CHECK(nccl_ring_channels(node("h100-sxm", 450, 400, 8), 1, 2).channels == 4);
  }
  SECTION("two NICs for eight GPUs carry two channels at the NIC path's speed") {
    const auto r = nccl_ring_channels(node("a800-sxm4-80gb", 200, 200, 2), 8, 2);
    CHECK(r.searched <= 4);
    CHECK(r.channels >= 2);
  }
  SECTION("a lone GPU moves nothing: one channel") { CHECK(nccl_ring_channels(node("h200", 450), 1, 1).channels == 1); }
}

TEST_CASE("nccl channels: missing links are errors, never a guess", "[nccl]") {
  CHECK_FALSE(nccl_gpu_links("b200").has_value());
  CHECK_THROWS_AS(nccl_ring_channels(node("h100-sxm", 0), 8, 1), dmuon::Error);
  CHECK_THROWS_AS(nccl_ring_channels(node("h100-sxm", 450), 8, 2), dmuon::Error);  // no network
}

TEST_CASE("scenario: channels are derived unless given; auto without built-in links is refused with the key", "[nccl]") {
  const std::string head =
      "name: t\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 128, vocab: 1000}}\n";
  const auto load = [&](const std::string& cluster) { return dmuon::parse_scenario(head + cluster, "s.yaml"); };
  const auto s = load("cluster: {nodes: 2, gpus_per_node: 8, gpu: h100-sxm, nvlink: {bw_GBps: 450},\n"
                      "          network: {nics_per_node: 8, nic_bw_Gbps: 400}, nccl: {channels: auto}}\n");
  REQUIRE(s.cluster.nccl.links.has_value());
  CHECK(s.cluster.nccl.channels == 0);
  CHECK(s.cluster.nccl.links->nic_GBps == 50);
  CHECK(s.cluster.nccl.links->compute_capability == 90);
  // Absent: derived where the links are known, NCCL's 8 assumed (and said) where they are not;
  // a number is kept as given.
  const auto absent = load("cluster: {nodes: 1, gpus_per_node: 8, gpu: a800-sxm4-80gb, nvlink: {bw_GBps: 200}}\n");
  CHECK(absent.cluster.nccl.channels == 0);
  CHECK(dmuon::nccl_channels_summary(absent.cluster).find("derived") != std::string::npos);
  CHECK(dmuon::nccl_channels_summary(absent.cluster).find("16 in a node") != std::string::npos);
  const auto custom = load("cluster: {nodes: 1, gpus_per_node: 8, gpu: b200, nvlink: {bw_GBps: 900}}\n");
  CHECK(custom.cluster.nccl.channels == 8);
  CHECK(custom.cluster.nccl.channels_source.find("assumed 8") != std::string::npos);
  const auto given = load("cluster: {nodes: 2, gpus_per_node: 8, gpu: h100-sxm, nvlink: {bw_GBps: 450},\n"
                          "          network: {nics_per_node: 8, nic_bw_Gbps: 400}, nccl: {channels: 4}}\n");
  CHECK(given.cluster.nccl.channels == 4);
  CHECK_FALSE(given.cluster.nccl.links.has_value());
  CHECK(dmuon::nccl_channels_summary(given.cluster).find("set by the scenario: 4 in a node, 4 across nodes") !=
        std::string::npos);
  try {
    load("cluster: {nodes: 1, gpus_per_node: 8, gpu: b200, nvlink: {bw_GBps: 900}, nccl: {channels: auto}}\n");
    FAIL("expected an error");
  } catch (const dmuon::Error& e) {
    CHECK(std::string(e.what()).find("cluster.nccl.channels: auto needs a built-in gpu") != std::string::npos);
  }
}
