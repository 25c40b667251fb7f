// A scenario: model + optimizer + routing + strategies + cluster, loaded from one YAML file.
//
//   name: qwen2.5-3b-2xh200
//   model: models/qwen2.5-3b.yaml     # a path relative to this file, or an inline model mapping
//   optimizer: {preset: dmuon}
//   routing: {muon: [...], adamw: ["*.router.*"]}
//   strategies: [adamw, ddp-redundant, dedicated]
//   cluster: {nodes: 1, gpus_per_node: 2, gpu: h200, gpu_memory_GiB: 141}
//
// The simulator also reads (every key optional except where marked; units in the key names):
//   cluster:
//     nvlink:  {bw_GBps: 200, latency_us: 3.4, efficiency: 0.8}           # per GPU, per direction
//     network: {nics_per_node: 8, nic_bw_Gbps: 200, latency_us: 14, efficiency: 0.96,
//               spine_latency_us: 1, spine_oversubscription: 1}            # rail-optimised fat-tree
//     nccl:    {base_latency_us: 8.4, channels: auto, chunk_bytes: 524288, all_reduce: auto}  # channels: derived unless a number
//     calibration: calibration/h200.yaml   # measured on this machine (core/cost/calibration.hpp),
//                                          # relative to this file; --calibration overrides it
//   training:  {seq_len: 4096, micro_batch: 1, mfu: 0.4, peak_tflops: 312, ...}
//   simulation: {mode: fast, steps: 2}
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/cost/nccl_channels.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/model/routing.hpp"
#include "core/plan/product_split.hpp"
#include "core/plan/strategy.hpp"

namespace dmuon {

// NVLink through an NVSwitch: what one GPU can send (and, separately, receive).
struct NvlinkSpec {
  double bw_GBps = 0;       // line rate per direction (required)
  double latency_us = 0;    // per hop: NCCL's per-step latency on NVLink
  double efficiency = 1.0;  // fraction of bw_GBps NCCL's protocol reaches, in (0, 1]
};

// Rail-optimised InfiniBand/RoCE: NIC i of every node on leaf (rail) i, rails joined by a spine.
struct InterNodeSpec {
  std::int64_t nics_per_node = 1;  // must divide gpus_per_node; GPU g uses NIC g / (gpus/nics)
  double nic_bw_Gbps = 0;          // line rate per direction (required; Gb/s, as NICs are sold)
  double latency_us = 0;           // per step through the network (NCCL's "NET" latency)
  double efficiency = 1.0;         // fraction of the line rate NCCL reaches, in (0, 1]
  double spine_latency_us = 0;     // extra latency of a cross-rail route
  double spine_oversubscription = 1.0;  // >= 1: rail uplink = nodes * nic bandwidth / this
};

enum class AllReduceAlgorithm { ring, tree, automatic };

struct NcclSpec {
  double base_latency_us = 8.4;        // per collective launch (NCCL tuning.cc, Ring/Simple)
  // Rings/chains the data is split over. 0: each communicator's count derived from the node's
  // links as NCCL does (core/cost/nccl_channels.hpp), from `links`. The scenario reader derives it
  // unless `channels` gives a number (`channels: auto` insists on deriving); where it cannot
  // (a GPU without built-in links) it keeps 8 and says so in `channels_source`.
  std::int64_t channels = 8;
  std::optional<NcclNodeLinks> links;  // set by the scenario reader when channels is 0
  std::string channels_source = "default";  // how `channels` was decided, for the reports
  // Channels of a communicator with one GPU on each of several nodes (an HSDP replicate group):
  // all its channels leave through that GPU's one NIC. 0 = `channels`. NCCL searches one
  // channel at the NIC's speed there and only doubles it (src/graph/search.cc, connect.cc).
  std::int64_t channels_one_gpu_per_node = 0;
  std::int64_t chunk_bytes = 512 << 10;  // pipeline chunk of broadcast/reduce/tree, per channel
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::automatic;
  // Calibration hook: fraction of the links' effective bandwidth a collective of a given size
  // (nccl-tests "size", bytes) reaches, as points (bytes, efficiency), bytes strictly
  // increasing, linear in log2(bytes) between points and clamped outside. Empty = 1 everywhere.
  // Fit it to nccl-tests busbw by size on the machine (SimAI's ratio tables do the same).
  std::vector<std::pair<double, double>> size_efficiency;

  double efficiency_at(double bytes) const;
};

struct ClusterSpec {
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 1;
  std::string gpu = "unspecified";
  double gpu_memory_GiB = 80;
  std::optional<NvlinkSpec> nvlink;      // needed by the simulator when gpus_per_node > 1
  std::optional<InterNodeSpec> network;  // needed by the simulator when nodes > 1
  NcclSpec nccl;
  std::string calibration_file;  // cluster.calibration, resolved against the scenario file

  std::int64_t world_size() const { return nodes * gpus_per_node; }
};

// The training step around the optimizer, as the simulator prices it.
struct TrainingSpec {
  std::int64_t seq_len = 2048;      // tokens per sample
  std::int64_t micro_batch = 1;     // samples per GPU per step
  double mfu = 0.4;                 // forward+backward FLOP rate as a fraction of peak_tflops
  std::optional<double> peak_tflops;        // datasheet dense 16-bit peak; default: the profile's
  std::optional<double> fwd_bwd_seconds;    // measured forward+backward per step; replaces mfu
  std::map<std::string, std::int64_t> tower_tokens;  // tokens per sample for a tower ("visual")
  bool reshard_after_forward = false;  // FSDP2 Z3: all-gather again before each backward layer
  std::int64_t prefetch_layers = 1;    // FSDP2/DMuon forward prefetch depth
  bool activation_checkpointing = false;
  // The forward/backward runs under PyTorch FSDP2 (bf16 params, fp32 reduce): price its
  // copy-in/copy-out and casts around all-gathers and reduce-scatters (core/cost/fsdp2_copies),
  // and its gradient reduce-scatters in fp32 (sim/rank_builder.cpp).
  bool fsdp2_copies = false;
  std::optional<std::int64_t> moe_top_k;  // experts each token visits; default: every expert
  double activation_bytes_per_token_hidden = 34;  // Korthikanti et al. 2022, bf16, no recompute
};

enum class SimMode { fast, flows };

// Planner knobs a scenario may set (`planner:`); unset keeps core's defaults (PlanOptions).
struct PlannerSpec {
  // owner-striped: bytes per rail that consecutive blocks fill into one bucket (0: none).
  std::optional<std::int64_t> striped_bucket_bytes_per_rail;
  std::optional<bool> striped_run_ahead;                // Op::run_ahead on its broadcasts
  std::optional<int> striped_all_reduce_from_nodes;     // Op::via_all_reduce from R nodes
  std::optional<bool> sharded_ns;                       // StepPlanOptions::sharded_ns
  std::optional<ProductSplit> split_ns_products;        // StepPlanOptions::split_ns_products
};

struct Scenario {
  std::string name;
  std::string file;
  ModelSpec model;
  OptimizerConfig optimizer;
  RoutingRules routing;
  std::vector<Strategy> strategies;
  ClusterSpec cluster;
  TrainingSpec training;
  SimMode sim_mode = SimMode::fast;
  // Steps simulated back to back (`simulation.steps`), the last one reported: step t's
  // post-step broadcasts then overlap step t+1's forward as they do in steady state, each
  // waiting for its own matrix's update in step t.
  int sim_steps = 2;
  PlannerSpec planner;
  // The calibration the cost model reads: cluster.calibration, or the older top-level
  // `calibration:` (not both); empty = none.
  std::string calibration_file;
};

// Channels of a communicator with `gpus_per_node` of its GPUs on each of `nodes` nodes, as the
// scenario decided them: channels_one_gpu_per_node for one GPU a node on several nodes when
// given, else `channels` when a number, else derived from `links` (core/cost/nccl_channels).
// Throws dmuon::Error when channels are to be derived and no links are known.
int channels_for_group(const NcclSpec& nccl, int gpus_per_node, int nodes);

// "derived from the links (core/cost/nccl_channels): 16 inside a node, 16 across nodes, 2 with one
// GPU per node" or how the scenario set or assumed them: the line the simulator's reports print.
std::string nccl_channels_summary(const ClusterSpec& cluster);

std::string_view to_string(AllReduceAlgorithm a);
std::string_view to_string(SimMode m);

// Strict: an unknown key, a wrong type, a zero or negative size is a dmuon::Error that names
// the file, the key path and the line.
Scenario load_scenario(const std::string& path);
Scenario parse_scenario(const std::string& text, const std::string& name);
// Applies `key=value` (a dotted key path such as cluster.nodes or training.mfu) to a loaded
// scenario's YAML and reloads it, so a sweep value is validated exactly as the file's would be.
Scenario load_scenario_with_overrides(const std::string& path,
                                      const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace dmuon
