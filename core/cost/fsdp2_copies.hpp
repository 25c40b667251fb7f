// Memory traffic PyTorch FSDP2 adds around its collectives (fully_shard with
// MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over fp32 sharded parameters, as
// harness/tools/fsdp2_step.py runs it and DMuon trains), per collective of N elements over W
// ranks (S = N / W, this rank's shard):
//   all-gather: copy-in casts the fp32 shard into the bf16 send buffer (read 4 S, write 2 S);
//               copy-out splits the gathered flat buffer into the parameters (read and write 2 N);
//   reduce-scatter: copy-in casts the bf16 gradients into the fp32 flat buffer (read 2 N, write
//               4 N); the reduced fp32 shard is then written into the sharded gradient (read and
//               write 4 S).
// Measured on 2 x H200 (reports/sim-validation.md, "Where it goes"): FSDP2's copy/cast kernels
// took 18 ms (qwen2.5-1.5b) and 85 ms (llama3-8b) per step more than the same model without
// FSDP2; these byte counts priced at the measured copy rate give about 70% of that (the rest:
// many small tensors below the rate's size). The simulator adds them only where
// `training.fsdp2_copies` says the step runs under FSDP2 (dmuon's own executor keeps bf16
// parameters and gradients and casts nothing).
#pragma once

namespace dmuon {

double fsdp2_all_gather_copy_bytes(double elements, int ranks);
double fsdp2_reduce_scatter_copy_bytes(double elements, int ranks);

}  // namespace dmuon
