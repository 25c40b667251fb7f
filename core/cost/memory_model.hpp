// Device memory one GPU needs for a Plan's step, and the error when it does not fit.
// Mixed precision as FSDP2 and DDP run it: fp32 master parameters (4 B per element held),
// fp32 gradients (4 B, the reduce dtype), Muon momentum (4 B), AdamW moments (8 B), bf16 copies
// of unsharded blocks while they are in use (2 B), and activations: each block's saved tensors
// from its structure and the loss's logits (core/cost/activation_memory.hpp; a block of a model
// given only as parameters: training.activation_bytes_per_token_hidden x its hidden size); with
// checkpointing only each block's input, 2 bytes, plus one block, and the loss.
// The peak: where gradients are sharded (FSDP2, owners) they are freed after each step
// (zero_grad sets them to None) and built up only as the backward frees activations, so the
// peak holds the larger of the two (at the end of the forward: activations, no gradients; after
// the backward: gradients); with DDP's persistent gradient buckets, both.
//
// Derived from what the Plan does and the strategy's traits, never from its name: which
// parameters it updates with Muon, whether its forward all-gathers parameter shards (FSDP2) or
// finds them on every rank (DDP), whether owners keep whole matrices (traits) and which rank
// owns each (Plan::matrix_owner), and whether run-ahead broadcasts leave every GPU a replica.
// This is the training layout; what the NCCL executor allocates for the same Plan (whole bf16
// param and grad buffers, persistent NS buffers, no activations) is core/cost/executor_memory.hpp.
#pragma once
#include <algorithm>
#include <string>

#include "core/model/model_spec.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"

namespace dmuon {

inline constexpr double kGiB = 1024.0 * 1024 * 1024;

struct MemoryBreakdown {
  double master_bytes = 0;     // fp32 parameters this GPU keeps (shards, replicas or owned)
  double grad_bytes = 0;       // fp32 gradients it keeps
  double state_bytes = 0;      // Muon momentum + AdamW moments
  double transient_bytes = 0;  // unsharded bf16 blocks, broadcast/gather buffers, NS workspace
  double activation_bytes = 0;
  // Gradients and activations are not held at once: the peak takes the larger (see above).
  bool grads_apart_from_activations = false;
  double total_bytes() const {
    const double grads_and_activations = grads_apart_from_activations ? std::max(grad_bytes, activation_bytes)
                                                                      : grad_bytes + activation_bytes;
    return master_bytes + state_bytes + transient_bytes + grads_and_activations;
  }
  double total_GiB() const { return total_bytes() / kGiB; }
  bool fits(double gpu_memory_GiB) const { return total_GiB() <= gpu_memory_GiB; }
};

// The busiest GPU's memory for the Plan's step.
MemoryBreakdown memory_per_gpu(const Plan& plan, const ModelSpec& model, const Routing& routing,
                               const TrainingSpec& training);

// Activations one GPU keeps for its micro-batch (the training section's model above).
double activation_bytes(const ModelSpec& model, const TrainingSpec& training);

// Throws dmuon::Error "strategy S needs X GiB per GPU (master ..., ...) but cluster.gpu_memory_GiB
// is Y" when the breakdown exceeds the GPU.
void check_fits(Strategy strategy, const MemoryBreakdown& m, double gpu_memory_GiB);

std::string describe(const MemoryBreakdown& m);  // "master 1.2 + grads ... GiB"

}  // namespace dmuon
