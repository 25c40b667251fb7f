// Forward and backward compute of one training step on one GPU, split into the units the
// simulator schedules (core prices, sim/step_program only places what it is handed):
//   a unit is (tower, part, layer): part 0 before a tower's blocks (embeddings), part 1 one
//   transformer block, part 2 after the blocks (final norm, output head, merger).
// A parameter belongs to the block of its `layer`; outside blocks, embeddings (role) come
// before and everything else after. A tower's structure (attention, activations, a tied head)
// comes from the transformer config it was generated from (ModelSpec::transformers), never
// from parameter names.
//
// Each unit is priced by the first of these that applies, and says which:
//  - "measured total": training.fwd_bwd_seconds, split over the units by forward FLOPs
//    (backward = 2 x forward);
//  - "measured": the calibration's forward_backward.layers holds this model (ModelSpec::name),
//    part ("embedding", "block", "head") at the training's micro_batch and seq_len. Only for a
//    model of one generated tower without extra parameters (what measure_layers.py builds) and
//    without dense MoE layers (the block measured is one of its kind);
//  - "interpolated": the unit's GEMMs from the calibration's GEMM grid, its attention from the
//    attention grid, its elementwise traffic at elementwise_GBps (forward_backward_grid.hpp);
//    needs a GEMM grid, elementwise_GBps and, for a unit with attention, an attention grid;
//  - "datasheet": forward FLOPs at training.mfu of peak_tflops, backward twice the forward (an
//    assumption: the number of FLOPs is exact, the rate is not).
// A unit priced "measured" or "interpolated" is then scaled by the calibration model's whole run
// over its parts where forward_backward.layers has a whole entry (layer_timing.hpp).
// Then, where the calibration has a host floor (host_floor.hpp; FSDP2's where
// training.fsdp2_copies says the step runs under FSDP2, else eager PyTorch's), the units are
// paced by the host (host_paced.hpp): each block costs the host the floor's time at this
// model's depth over its blocks, the embedding and head nothing of their own; a unit whose GPU
// waited for the host takes its effective time and says "host floor". Not under "measured total".
// The pacing sees compute alone: in the simulation a unit's effective time (its GPU idle waiting
// for the host included) then also waits for its collectives and slows beside NCCL
// (compute_slowdown_beside_nccl) as a whole; in a host-bound step both effects are small and
// counted once too many (reports/sim-validation.md: qwen2.5-1.5b FSDP2 +5.7% -> +8.4%).
// FLOPs (forward, whole micro-batch): 2 per multiply-add of each token with every weight matrix
// (an expert stack only for min(moe_top_k, experts) experts), a tied head as an untied one,
// causal attention 2 * s^2 * heads * head_dim per sample; lookups, norms and biases ~0.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/model/model_spec.hpp"
#include "core/io/scenario.hpp"

namespace dmuon {

// One weight GEMM shape of a unit's forward pass over the whole micro-batch: `count` products
// of (tokens x in) activations with an (in x out) weight. An expert stack is `count` = experts
// GEMMs of tokens * active / experts tokens each (balanced routing); its FLOPs are those of
// min(moe_top_k, experts) experts seeing every token.
struct UnitGemm {
  double tokens = 0, in = 0, out = 0, count = 1;
};

struct ComputeUnit {
  int tower = 0;  // order of first appearance in ModelSpec::params
  int part = 1;   // 0 before the blocks, 1 a block, 2 after
  int layer = 0;  // block index (0 outside blocks)
  double forward_flops = 0;  // whole micro-batch
  double forward_s = 0, backward_s = 0;
  // Of forward_s / backward_s, the seconds the GPU waited for the host (core/cost/host_paced.hpp);
  // 0 unless the host floor paced the unit. Other GPU work of the unit's turn (FSDP2's copies and
  // casts, sim/rank_builder.cpp) runs in that wait: the floor was measured with it.
  double forward_host_wait_s = 0, backward_host_wait_s = 0;
  std::string_view source;  // "measured total", "measured", "interpolated", "host floor", "datasheet"
  std::vector<UnitGemm> gemms;  // the forward weight GEMMs (attention's s^2 part is not one)
};

struct ForwardBackwardCost {
  std::vector<ComputeUnit> units;  // forward order
  std::vector<int> unit_of_param;  // per ModelSpec::params entry, an index into units
  double total_s = 0;              // forward + backward of every unit
  std::string description;         // how it was priced, with the share of each source
  std::vector<std::pair<std::string, double>> seconds_by_source;  // forward + backward seconds
};

// `table`: the calibration's forward_backward section, or nullptr. peak_tflops: the dense
// 16-bit peak the datasheet path uses (training.peak_tflops or the device profile's).
// Without a table every figure equals the FLOPs-at-MFU model bit for bit.
ForwardBackwardCost forward_backward_cost(const ModelSpec& model, const TrainingSpec& training, double peak_tflops,
                                          const ForwardBackwardTable* table = nullptr);

// Forward FLOPs of one sample's pass through the model (for reports), as counted above.
double forward_flops_per_sample(const ModelSpec& model, const TrainingSpec& training);

}  // namespace dmuon
