// Measured compute times (the calibration table) and the cost model that prices compute ops
// from them, falling back to a roofline of the device profile where nothing was measured.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/cost/device_profile.hpp"
#include "core/cost/grouped_calls.hpp"
#include "core/cost/host_floor.hpp"
#include "core/optimizer/dtype.hpp"
#include "core/cost/ns_efficiency.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/plan/plan.hpp"

namespace dmuon {

// One timed Newton-Schulz call: `batch` same-shape rows x cols matrices in one batched call.
struct NsMeasurement {
  long rows = 0, cols = 0;
  NsKernel kernel = NsKernel::standard;
  DType dtype = DType::bf16;
  int steps = 5;
  std::vector<int> restarts;  // Gram only
  int batch = 1;
  double seconds = 0;  // the whole batched call
  bool operator==(const NsMeasurement&) const = default;
};

// Bandwidth the fused elementwise kernels reached (bytes as counted by the CostModel helpers).
struct ElementwiseRates {
  std::optional<double> momentum_GBps, update_GBps, adamw_GBps;
  bool operator==(const ElementwiseRates&) const = default;
};

// A measured size curve: (x, seconds) points with x strictly increasing (bytes for collectives
// and elementwise kernels). Between points the time is interpolated as a power law (linear in
// log(x) vs log(seconds)); below the first point the first point's time (a launch/latency
// floor); above the last point the last point's rate (seconds proportional to x).
struct SizeCurve {
  std::vector<std::pair<double, double>> points;
  // Throws dmuon::Error for an empty curve or x < 0 / NaN; a point's own x answers its seconds
  // exactly.
  double seconds_at(double x) const;
  bool empty() const { return points.empty(); }
  bool operator==(const SizeCurve&) const = default;
};

// One elementwise kernel family timed against size by `dmuon-bench calibrate` (bytes as the
// CostModel helpers count them; copy: bytes read + written of a device-to-device copy).
struct ElementwiseCurves {
  SizeCurve momentum, muon_update, adamw, copy;
  bool operator==(const ElementwiseCurves&) const = default;
};

// One NCCL collective timed on one communicator shape, 4 KiB to 1 GiB: x = nccl-tests "size"
// (the payload_bytes convention of core/cost/plan_cost.hpp), seconds = one call's time.
struct CollectiveCurve {
  OpKind kind = OpKind::all_reduce;  // all_to_all = grouped send/recv, every pair
  int ranks = 1;                     // communicator size
  int nodes = 1;                     // nodes it spans (1: NVLink / local only)
  SizeCurve curve;
  bool operator==(const CollectiveCurve&) const = default;
};

// Forward/backward building blocks measured on the GPU (harness/tools/measure_layers.py, on
// PyTorch): enough to price a transformer block of a model never measured.
struct GemmTiming {    // a bf16 linear layer y = x W^T, x: tokens x in_features
  long tokens = 0, in_features = 0, out_features = 0;
  double forward_s = 0, backward_s = 0;  // backward: dgrad + wgrad
  bool operator==(const GemmTiming&) const = default;
};
struct AttentionTiming {  // causal scaled-dot-product attention (flash), bf16
  long samples = 0, seq_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  double forward_s = 0, backward_s = 0;
  bool operator==(const AttentionTiming&) const = default;
};
struct LayerTiming {  // one piece of a real model, on the model's own code (layer_timing.hpp)
  std::string model;  // model name (ModelSpec::name)
  std::string part;   // "block" (one decoder layer), "embedding", "head" (final norm + LM head + loss),
                      // "whole" (the model end to end)
  long micro_batch = 0, seq_len = 0;
  double forward_s = 0, backward_s = 0;
  long layers = 0;    // "whole" only: its decoder layers
  bool operator==(const LayerTiming&) const = default;
};
struct ForwardBackwardTable {
  std::string source;  // tool, framework versions, date
  std::vector<GemmTiming> gemm;
  std::vector<AttentionTiming> attention;
  std::vector<LayerTiming> layers;
  std::optional<double> elementwise_GBps;  // PyTorch's elementwise kernels (norms, activations)
  std::vector<HostFloor> host_floor;       // the host's floor per decoder layer (host_floor.hpp)
  bool operator==(const ForwardBackwardTable&) const = default;
};

// Calibration file (YAML), written by the GPU benchmark and read by the simulator:
//   gpu: h100-sxm                 # a device profile name (device_profile.hpp)
//   source: "dmuon-bench ... 2026-11-20"   # command and date that produced it
//   gemm_tflops: 781.5            # 8192^3 bf16 product, measured in the same run
//   hbm_GBps: 2990                # device-to-device copy, read + written, same run
//   ns:                           # one entry per (shape, kernel, dtype, steps, restarts, batch)
//     - {rows: 4096, cols: 14336, kernel: gram, dtype: fp16, steps: 5, restarts: [2],
//        batch: 1, seconds: 0.00412}
//   elementwise: {momentum_GBps: 2600, update_GBps: 2550, adamw_GBps: 2400}   # optional
// Keys `dmuon-bench calibrate` adds (each optional):
//   commit: 73d22eb   date: "2026-11-23 11:02 UTC"   machine: "2 x NVIDIA H200 (driver ...)"
//   launch_overhead_us: 2.1   executor_issue_us: 6.8   collective_step_overhead_us: 6.6
//   local_collective_step_overhead_us: 1.2   adamw_fused_issue_us: 1.1   adamw_fused_vs_curve: 1.04
//   compute_slowdown_beside_nccl: 0.12   collective_slowdown_beside_compute: 0.8
//   elementwise_curves: {momentum: [[bytes, seconds], ...], muon_update: [...], adamw: [...],
//                        copy: [...]}
//   collectives:                  # NCCL, one entry per (kind, ranks, nodes)
//     - {kind: all_gather, ranks: 2, nodes: 1, points: [[4096, 1.2e-05], ...]}
//   forward_backward:
//     source: "harness/tools/measure_layers.py ... torch 2.11 ... 2026-11-23"
//     elementwise_GBps: 2900
//     gemm: [{tokens: 4096, in: 2048, out: 11008, forward_s: ..., backward_s: ...}, ...]
//     attention: [{samples: 2, seq_len: 2048, heads: 16, kv_heads: 2, head_dim: 128,
//                  forward_s: ..., backward_s: ...}, ...]
//     layers: [{model: qwen2.5-3b, part: block, micro_batch: 2, seq_len: 2048,
//               forward_s: ..., backward_s: ...}, ...]
//     host_floor: [{model: qwen2.5-3b, mode: eager, ...}, ...]   # core/cost/host_floor.hpp
// `restarts` is optional (default none). Reading is strict: unknown or repeated keys,
// seconds <= 0 and two entries for the same measurement fail with file:line: key; so do a
// curve whose x is not > 0 and strictly increasing, an unknown collective kind, two curves
// for one (kind, ranks, nodes), nodes > ranks, and a layer part other than block, embedding,
// head. forward_backward needs `source`; its lists and elementwise_GBps are optional.
struct CalibrationTable {
  std::string gpu;
  std::string source;
  double gemm_tflops = 0;
  double hbm_GBps = 0;
  std::vector<NsMeasurement> ns;
  ElementwiseRates elementwise;
  // Written by `dmuon-bench calibrate` (all optional, older files have none of them):
  std::string commit, date, machine;      // git commit, UTC date, "2 x NVIDIA H200" and host facts
  std::optional<double> launch_overhead_us;  // one small kernel launch, back to back on a stream
  // Host seconds the NCCL executor spends enqueueing one launch (events, stream waits, the
  // NCCL or kernel call; measured on the calibration scenario's adamw Plan): a stream cannot
  // advance faster than its host issues work.
  std::optional<double> executor_issue_us;
  // GPU seconds a multi-GPU collective costs inside a step beyond its isolated curve, per NCCL
  // call: the calibration scenario's adamw Plan's forward/backward collectives, run back to
  // back as `dmuon-bench step` runs them, against the sum of their curve times
  // (core/cost/step_overhead.hpp). The curves time one size repeated; in a step each call
  // follows a different one through an event wait, which they do not see.
  std::optional<double> collective_step_overhead_us;
  // The same for a one-GPU collective (a local copy), per launch: measured on a one-GPU machine.
  // Per launch, not per call: one rank's grouped calls cost one launch (a multi-region
  // all-reduce priced per region overshot ddp-redundant's phase by 42% on 1 x H100).
  std::optional<double> local_collective_step_overhead_us;
  // One GPU: each NCCL call past the first of one op's group, against the group's bytes
  // (core/cost/grouped_calls.hpp); one entry a kind, all_reduce / broadcast / reduce.
  std::vector<LocalGroupedCalls> local_grouped_calls;
  // The executor's fused AdamW launch (every AdamW op of a rank's optimizer phase in one
  // multi-tensor launch), measured on the calibration scenario's adamw Plan as `dmuon-bench step`
  // runs it: the host microseconds per tensor until the run is enqueued (its list and launches;
  // core/cost/adamw_fused_cost.hpp says what older files hold), and
  // the GPU's remainder over the AdamW curve's at the same bytes (a real model's mix of tensor
  // sizes in one launch against one large tensor).
  std::optional<double> adamw_fused_issue_us;
  std::optional<double> adamw_fused_vs_curve;
  // Several GPUs: how much longer a GPU's compute takes while an NCCL collective's kernel is
  // resident beside it (its channels hold SMs and memory bandwidth), as a fraction: a bf16 GEMM
  // loop timed alone and under an all-gather loop on the world communicator, data moving
  // throughout (kernels/exec/contention_probe.hpp). 0.12: 12% longer.
  std::optional<double> compute_slowdown_beside_nccl;
  // The other direction, same probe: how much longer an all-gather loop on the world communicator
  // takes while a bf16 GEMM loop runs beside it. 0.8: 80% longer.
  std::optional<double> collective_slowdown_beside_compute;
  ElementwiseCurves elementwise_curves;       // key elementwise_curves
  std::vector<CollectiveCurve> collectives;   // key collectives
  std::optional<ForwardBackwardTable> forward_backward;  // key forward_backward
  bool operator==(const CalibrationTable&) const = default;
};

CalibrationTable parse_calibration(const YamlValue& root);
// A forward_backward section on its own (the format above; also what measure_layers.py writes).
ForwardBackwardTable parse_forward_backward(const YamlValue& section);
// Shortest text that reads back to the same double (std::to_chars), so save -> load is exact.
std::string number_text(double x);
CalibrationTable load_calibration(const std::string& file);
std::string calibration_to_yaml(const CalibrationTable& table);
// Throws dmuon::Error naming the file when it cannot be written.
void save_calibration(const CalibrationTable& table, const std::string& file);

// Which bandwidth an elementwise op runs at: a measured rate for the fused kernels when the
// calibration has one, the HBM copy bandwidth otherwise.
enum class ElementwiseKind { generic, momentum, muon_update, adamw };

// A time and where it came from. Newton-Schulz: "measured" (an entry for exactly this call),
// "interpolated" (from measured entries of the same kernel, dtype, steps and restarts) or
// "roofline" (device peak x the profile's small-shape efficiency: nothing measured for it).
// Elementwise: "measured" (a size curve of that kernel), "interpolated" (a GB/s rate measured
// at one size, applied at this one) or "datasheet" (the profile's HBM bandwidth).
struct NsTime {
  double seconds = 0;
  std::string_view source;
};
using ElementwiseTime = NsTime;

// The class a source string counts under in the simulator's shares of predicted time:
// "measured" (also "measured total": training.fwd_bwd_seconds), "interpolated", and
// "datasheet" for everything else (roofline, modelled links, MFU assumption).
std::string_view source_class(std::string_view source);

class CostModel {
 public:
  // With a calibration table, its gemm_tflops and hbm_GBps (measured together with its NS
  // timings) replace the profile's. Throws dmuon::Error when the table names another GPU.
  explicit CostModel(DeviceProfile device, std::optional<CalibrationTable> calibration = std::nullopt);

  // One batched call of `batch` same-shape matrices, m = min dim, n = max dim:
  //  1. "measured": an entry with the same (m, n, kernel, dtype, steps, restarts, batch);
  //  2. "interpolated": a batch between two measured batches of this shape: seconds linear in
  //     batch between them;
  //  3. "interpolated": other entries of this (kernel, dtype, steps, restarts): each has an
  //     efficiency e = ns_flops * batch / (seconds * gemm_tflops) (launches included, so an
  //     entry is reproduced exactly); e is interpolated piecewise linearly in log2 m, log2 n
  //     and log2 batch, and the time is ns_flops * batch / (e * gemm_tflops). See
  //     ns_efficiency.hpp for the order of the axes and the clamping outside the grid;
  //  4. "roofline": nothing measured for this (kernel, dtype, steps, restarts).
  NsTime ns_time(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                 const std::vector<int>& restarts, int batch) const;
  double ns_seconds(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                    const std::vector<int>& restarts, int batch) const {
    return ns_time(rows, cols, kernel, dtype, steps, restarts, batch).seconds;
  }
  // flops * batch / (gemm_tflops * efficiency(m)) + gemms_per_call * launch overhead. A batched
  // call launches each GEMM once for the whole batch, which is why batching small same-shape
  // matrices is cheaper. It ignores that a batch also fills more SMs than one small GEMM (the
  // efficiency stays that of m), so it overprices small batches; calibration captures that.
  double ns_roofline_seconds(long rows, long cols, NsKernel kernel, DType dtype, int steps,
                             const std::vector<int>& restarts, int batch) const;

  // The calibration's size curve of that kernel (generic: the copy curve) when it has one;
  // else bytes / bandwidth + one launch (a fused elementwise kernel is bandwidth-bound), at the
  // calibration's measured GB/s of that kernel, else its (or the profile's) hbm_GBps.
  ElementwiseTime elementwise_time(double bytes, ElementwiseKind kind = ElementwiseKind::generic) const;
  double elementwise_seconds(double bytes, ElementwiseKind kind = ElementwiseKind::generic) const {
    return elementwise_time(bytes, kind).seconds;
  }

  // One NCCL call of `kind` on a communicator of `ranks` GPUs over `nodes` nodes moving `bytes`
  // (nccl-tests "size"), from the calibration's curve for exactly that (kind, ranks, nodes);
  // nullopt when it has none.
  std::optional<double> collective_seconds(OpKind kind, int ranks, int nodes, double bytes) const;
  // The cheapest call of `kind` the calibration measured on that shape (the smallest time on its
  // curve): what one more NCCL call costs when it adds no bytes worth timing. nullopt without a
  // curve.
  std::optional<double> collective_cheapest_call_seconds(OpKind kind, int ranks, int nodes) const;
  // One GPU: what each NCCL call past the first adds to a group of `kind` calls moving
  // `group_bytes` in all: the calibration's local_grouped_calls for the kind when it has them,
  // else (older files) the cheapest call of its one-rank curve; nullopt with neither.
  std::optional<double> local_extra_call_seconds(OpKind kind, double group_bytes) const;

  // One kernel launch: the calibration's launch_overhead_us when it has one, else the profile's.
  double launch_overhead_s() const;
  // Host seconds the NCCL executor spends enqueueing one launch: the calibration's
  // executor_issue_us; nullopt without one (no datasheet value: the simulator then prices GPU
  // time only, as before the key existed).
  std::optional<double> executor_issue_seconds() const;
  // The calibration's collective_step_overhead_us in seconds; 0 without one.
  double collective_step_overhead_s() const;
  // The calibration's local_collective_step_overhead_us in seconds; 0 without one.
  double local_collective_step_overhead_s() const;
  // Host seconds per tensor of a fused AdamW launch (adamw_fused_issue_us); 0 without one.
  double adamw_fused_issue_s() const;
  // A fused AdamW launch's GPU time over the AdamW curve's (adamw_fused_vs_curve); 1 without one.
  double adamw_fused_vs_curve() const;
  // compute_slowdown_beside_nccl; nullopt without one (compute then ignores collectives).
  std::optional<double> compute_slowdown_beside_nccl() const;
  // collective_slowdown_beside_compute; nullopt without one (collectives then ignore compute).
  std::optional<double> collective_slowdown_beside_compute() const;

  // Bytes one fused elementwise pass moves per step over `numel` elements, for a bf16 model
  // with fp32 master weights and fp32 optimizer state (DESIGN.md "Exact semantics").
  // momentum: read bf16 grad (2), read + write fp32 momentum (8), write the bf16 NS input (2).
  static double momentum_bytes(std::int64_t numel);
  // Muon update: read the bf16 NS output (2), read + write the fp32 master (8), write the bf16
  // param copy the forward uses (2); weight decay rides in the same pass.
  static double muon_update_bytes(std::int64_t numel);
  // AdamW: read bf16 grad (2), read + write fp32 m, v and master (24), write bf16 param (2).
  static double adamw_bytes(std::int64_t numel);

  const DeviceProfile& device() const { return device_; }
  double gemm_tflops() const { return gemm_tflops_; }
  double hbm_GBps() const { return hbm_GBps_; }
  bool calibrated() const { return calibration_.has_value(); }
  const CalibrationTable* calibration() const { return calibration_ ? &*calibration_ : nullptr; }

 private:
  // (min dim, max dim, kernel, dtype, steps, restarts) -> batch -> seconds
  using ShapeKey = std::tuple<long, long, NsKernel, DType, int, std::vector<int>>;
  std::optional<double> calibrated_seconds(const ShapeKey& key, int batch) const;
  // (kernel, dtype, steps, restarts) -> measured entries as efficiency points
  using FamilyKey = std::tuple<NsKernel, DType, int, std::vector<int>>;

  DeviceProfile device_;
  std::optional<CalibrationTable> calibration_;
  double gemm_tflops_ = 0, hbm_GBps_ = 0;
  std::map<ShapeKey, std::map<int, double>> measured_;
  std::map<FamilyKey, NsEfficiencyGrid> efficiency_;
  std::map<std::tuple<OpKind, int, int>, std::size_t> collective_curves_;  // -> calibration_->collectives
};

}  // namespace dmuon
