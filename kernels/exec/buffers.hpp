// Device memory of one rank of the NCCL executor, laid out as the Plan's data model
// (core/plan/plan.hpp): per (parameter, BufferKind) a flat buffer indexed by the parameter's element
// offsets. Only the range a rank's ops touch is allocated (the smallest [lo, hi) covering them),
// so a dedicated owner holds momentum only for the matrices it owns, yet every Region offset of
// the Plan addresses the buffer unchanged. Besides the Plan's kinds, the ranges a rank updates
// (muon_update, adamw) get an fp32 master copy: the Plan's `param` buffer is the bf16 copy the
// forward pass uses and the collectives carry.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_footprint.hpp"
#include "core/model/routing.hpp"
#include "kernels/exec/types.hpp"

namespace dmuon::exec {

std::string_view to_string(ElementType t);

// Storage of each kind: param and grad in the model's communication dtype (bf16), momentum and
// AdamW moments in the optimizer's master dtype (fp32), Newton-Schulz input and output in the NS
// compute dtype (what the NS engine reads and writes, and what zero1/fsdp-gather carry).
struct BufferTypes {
  ElementType param = ElementType::bf16, grad = ElementType::bf16;
  ElementType momentum = ElementType::fp32, ns_input = ElementType::bf16, ns_output = ElementType::bf16;
  ElementType adam_m = ElementType::fp32, adam_v = ElementType::fp32;
  ElementType of(BufferKind kind) const;
};
// Throws dmuon::Error naming the field for a configuration the GPU path does not store
// (fp64 master weights, an fp32/fp64 NS compute dtype).
BufferTypes buffer_types_for(const OptimizerConfig& config);

// What a rank's ops touch, per (parameter, kind): core/plan/plan_footprint, shared with the
// memory model of this allocation (core/cost/executor_memory).
using dmuon::kMasterKind;
constexpr int kKindCount = dmuon::kFootprintKinds;
using Range = dmuon::ElementRange;
using Footprint = dmuon::PlanFootprint;
using dmuon::plan_footprint;

class DeviceBuffers {
 public:
  // Allocates on the current CUDA device (one allocation per kind) and zero-fills everything.
  // Throws dmuon::Error naming the rank and the bytes wanted and free when memory runs out.
  DeviceBuffers(const Footprint& footprint, const BufferTypes& types, int rank);
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  ElementType type(int kind) const { return kind == kMasterKind ? ElementType::fp32 : types_.of(BufferKind(kind)); }
  // Device address of element `region.offset` of (region.param, kind); throws dmuon::Error
  // starting with `where` when the region is outside what this rank allocated.
  void* at(int kind, const Region& region, const std::string& where) const;
  void* at(BufferKind kind, const Region& region, const std::string& where) const {
    return at(static_cast<int>(kind), region, where);
  }
  bool covers(int kind, const Region& region) const;
  const Range& range(std::size_t param, int kind) const { return ranges_[param][static_cast<std::size_t>(kind)]; }
  std::size_t params() const { return ranges_.size(); }
  std::int64_t allocated_bytes() const { return allocated_bytes_; }

  // Host copies, converted from / to double (round-to-nearest-even into bf16/fp16/fp32).
  std::vector<double> download(int kind, const Region& region) const;
  void upload(int kind, const Region& region, const std::vector<double>& values);

 private:
  BufferTypes types_;
  int rank_;
  std::vector<std::vector<Range>> ranges_;          // [param][kind]
  std::vector<std::vector<std::size_t>> offsets_;   // [param][kind]: byte offset in the kind's arena
  std::vector<char*> arenas_;                       // [kind]
  std::int64_t allocated_bytes_ = 0;
};

}  // namespace dmuon::exec
