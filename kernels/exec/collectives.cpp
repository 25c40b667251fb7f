#include "kernels/exec/collectives.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "core/plan/region_runs.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/exec/fill.hpp"

namespace dmuon::exec {
namespace {

ncclDataType_t nccl_type(ElementType t) {
  switch (t) {
    case ElementType::bf16: return ncclBfloat16;
    case ElementType::fp16: return ncclFloat16;
    case ElementType::fp32: return ncclFloat32;
  }
  return ncclBfloat16;
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::avg ? ncclAvg : ncclSum; }

std::size_t sz(std::int64_t n) { return static_cast<std::size_t>(n); }

// Wraps NCCL calls in one group; ends the group on the way out of an exception too, so the
// communicator is never left inside a half-open group.
class Group {
 public:
  Group() { DMUON_NCCL_CHECK(ncclGroupStart()); }
  ~Group() noexcept(false) {
    if (std::uncaught_exceptions() > 0) {
      (void)ncclGroupEnd();
      return;
    }
    DMUON_NCCL_CHECK(ncclGroupEnd());
  }
};

// FSDP2's layout: part i starts where part i-1 ends and all have one size. Then the parts are
// exactly NCCL's all-gather / reduce-scatter chunks of the concatenated buffer.
bool equal_contiguous(const std::vector<Region>& parts) {
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].param != parts[0].param || parts[i].count != parts[0].count ||
        parts[i].offset != parts[i - 1].offset + parts[i - 1].count) {
      return false;
    }
  }
  return !parts.empty();
}

struct Context {
  const Op& op;
  const Plan& plan;
  int rank;
  ncclComm_t comm;
  int me;  // position in the group
  DeviceBuffers& buffers;
  cudaStream_t stream;
  const std::string& where;
  ncclDataType_t type;
  const PackStaging& staging;
  void* at(const Region& r) const { return buffers.at(op.buffer, r, where); }
  int position_of(int global) const {
    const auto& ranks = plan.groups[static_cast<std::size_t>(op.group)].ranks;
    const auto it = std::find(ranks.begin(), ranks.end(), global);
    if (it == ranks.end()) throw Error(where + ": rank " + std::to_string(global) + " is not in the op's group");
    return static_cast<int>(it - ranks.begin());
  }
};

// Op::via_all_reduce: every member but the root first writes -0.0 over its regions (in stream
// order, before the group's kernel), then one sum all-reduce leaves the root's bits everywhere.
void broadcast_via_all_reduce(const Context& c) {
  const int root = c.position_of(c.op.root);
  const ElementType element = c.buffers.type(static_cast<int>(c.op.buffer));
  if (c.me != root) {
    for (const Region& r : c.op.regions) {
      if (r.count == 0) continue;
      try {
        fill_negative_zero(c.at(r), element, r.count, c.stream);
      } catch (const std::runtime_error& e) {
        throw Error(c.where + ": " + e.what());
      }
    }
  }
  Group group;
  for (const Region& r : c.op.regions) {
    if (r.count == 0) continue;
    void* p = c.at(r);
    DMUON_NCCL_CHECK(ncclAllReduce(p, p, sz(r.count), c.type, ncclSum, c.comm, c.stream));
  }
}

// Regions with a strided run (core/plan/region_runs.hpp; every member names the same regions:
// Plan::validate): packed in order into the staging buffer, one 2-D copy per run, moved by one
// NCCL call, and unpacked where this member receives, all on the collective's stream. Packing
// keeps the regions' element order, so the members' staging buffers line up element for element.
void copy_runs(const Context& c, const std::vector<RegionRun>& runs, bool pack) {
  const std::size_t esize = element_bytes(c.buffers.type(static_cast<int>(c.op.buffer)));
  char* staged = static_cast<char*>(c.staging.data);
  for (const RegionRun& run : runs) {
    char* span = static_cast<char*>(c.at(run.span()));
    const std::size_t width = sz(run.width) * esize, pitch = sz(run.pitch) * esize;
    if (pack) {
      DMUON_CUDA_CHECK(cudaMemcpy2DAsync(staged, width, span, pitch, width, sz(run.lines), cudaMemcpyDeviceToDevice, c.stream));
    } else {
      DMUON_CUDA_CHECK(cudaMemcpy2DAsync(span, pitch, staged, width, width, sz(run.lines), cudaMemcpyDeviceToDevice, c.stream));
    }
    staged += sz(run.elements()) * esize;
  }
}

void packed(const Context& c) {
  const std::vector<RegionRun> runs = region_runs(c.op.regions);  // once for the pack and the unpack
  const std::int64_t n = region_elements(c.op.regions);
  const std::size_t bytes = packed_collective_bytes(c.op, c.buffers);
  if (bytes > c.staging.bytes) {
    throw Error(c.where + ": packing " + std::to_string(bytes) + " bytes of strided regions needs a staging buffer of that size, this stream has " +
                std::to_string(c.staging.bytes));
  }
  const bool rooted_kind = c.op.kind == OpKind::broadcast || c.op.kind == OpKind::reduce;
  const int root = rooted_kind ? c.position_of(c.op.root) : -1;
  const bool zeros = c.op.kind == OpKind::broadcast && c.op.via_all_reduce && c.me != root;
  if (zeros) {
    try {
      fill_negative_zero(c.staging.data, c.buffers.type(static_cast<int>(c.op.buffer)), n, c.stream);
    } catch (const std::runtime_error& e) {
      throw Error(c.where + ": " + e.what());
    }
  } else if (!(c.op.kind == OpKind::broadcast && c.me != root)) {
    copy_runs(c, runs, true);
  }
  void* s = c.staging.data;
  if (c.op.kind == OpKind::all_reduce || (c.op.kind == OpKind::broadcast && c.op.via_all_reduce)) {
    const ncclRedOp_t op = c.op.kind == OpKind::all_reduce ? nccl_op(c.op.reduce_op) : ncclSum;
    DMUON_NCCL_CHECK(ncclAllReduce(s, s, sz(n), c.type, op, c.comm, c.stream));
  } else if (c.op.kind == OpKind::broadcast) {
    DMUON_NCCL_CHECK(ncclBroadcast(s, s, sz(n), c.type, root, c.comm, c.stream));
  } else {
    DMUON_NCCL_CHECK(ncclReduce(s, s, sz(n), c.type, nccl_op(c.op.reduce_op), root, c.comm, c.stream));
  }
  const bool receives = c.op.kind == OpKind::all_reduce || (c.op.kind == OpKind::broadcast ? c.me != root : c.me == root);
  if (receives) copy_runs(c, runs, false);
}

void rooted(const Context& c) {
  if (packs_regions(c.op)) {
    packed(c);
    return;
  }
  if (c.op.kind == OpKind::broadcast && c.op.via_all_reduce) {
    broadcast_via_all_reduce(c);
    return;
  }
  const int root = c.position_of(c.op.root);
  Group group;
  for (const Region& r : c.op.regions) {
    if (r.count == 0) continue;
    void* p = c.at(r);
    if (c.op.kind == OpKind::broadcast) {
      DMUON_NCCL_CHECK(ncclBroadcast(p, p, sz(r.count), c.type, root, c.comm, c.stream));
    } else {
      DMUON_NCCL_CHECK(ncclReduce(p, p, sz(r.count), c.type, nccl_op(c.op.reduce_op), root, c.comm, c.stream));
    }
  }
}

void all_reduce(const Context& c) {
  if (packs_regions(c.op)) {
    packed(c);
    return;
  }
  Group group;
  for (const Region& r : c.op.regions) {
    if (r.count == 0) continue;
    void* p = c.at(r);
    DMUON_NCCL_CHECK(ncclAllReduce(p, p, sz(r.count), c.type, nccl_op(c.op.reduce_op), c.comm, c.stream));
  }
}

// In place: member i's part is at its own offset of the full buffer (NCCL's in-place layout).
void gather_or_scatter(const Context& c) {
  const auto& parts = c.op.parts;
  const bool gather = c.op.kind == OpKind::all_gather;
  if (equal_contiguous(parts)) {
    if (parts[0].count == 0) return;
    const Region whole{parts[0].param, parts[0].offset, parts[0].count * static_cast<std::int64_t>(parts.size())};
    char* base = static_cast<char*>(c.at(whole));
    char* mine = static_cast<char*>(c.at(parts[static_cast<std::size_t>(c.me)]));
    if (gather) {
      DMUON_NCCL_CHECK(ncclAllGather(mine, base, sz(parts[0].count), c.type, c.comm, c.stream));
    } else {
      DMUON_NCCL_CHECK(ncclReduceScatter(base, mine, sz(parts[0].count), c.type, nccl_op(c.op.reduce_op), c.comm, c.stream));
    }
    return;
  }
  // Uneven shards (rows not divisible by the group size): part i is broadcast from, or reduced
  // to, member i; one group so NCCL runs them together.
  Group group;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].count == 0) continue;
    if (gather) {
      // Every member writes part i only into its own buffer; non-roots need the whole part.
      void* p = c.at(parts[i]);
      DMUON_NCCL_CHECK(ncclBroadcast(p, p, sz(parts[i].count), c.type, static_cast<int>(i), c.comm, c.stream));
    } else {
      void* p = c.at(parts[i]);
      DMUON_NCCL_CHECK(ncclReduce(p, p, sz(parts[i].count), c.type, nccl_op(c.op.reduce_op), static_cast<int>(i), c.comm, c.stream));
    }
  }
}

bool overlaps(const Region& a, const Region& b) {
  return a.param == b.param && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

void all_to_all(const Context& c) {
  // NCCL reads a send buffer while peers write receive buffers: a rank that sends elements it
  // also receives into in the same op would race, where the reference reads all sends first.
  for (const Transfer& s : c.op.transfers) {
    if (s.src != c.rank) continue;
    for (const Transfer& r : c.op.transfers) {
      if (r.dst == c.rank && overlaps(s.from, r.to)) {
        throw Error(c.where + ": rank " + std::to_string(c.rank) + " sends and receives overlapping elements of parameter " +
                    std::to_string(s.from.param) + " in one all-to-all");
      }
    }
  }
  Group group;
  for (const Transfer& t : c.op.transfers) {
    if (t.from.count == 0) continue;
    if (t.src == c.rank && t.dst == c.rank) {
      const std::size_t bytes = sz(t.from.count) * element_bytes(c.buffers.type(static_cast<int>(c.op.buffer)));
      DMUON_CUDA_CHECK(cudaMemcpyAsync(c.at(t.to), c.at(t.from), bytes, cudaMemcpyDeviceToDevice, c.stream));
      continue;
    }
    if (t.src == c.rank) DMUON_NCCL_CHECK(ncclSend(c.at(t.from), sz(t.from.count), c.type, c.position_of(t.dst), c.comm, c.stream));
    if (t.dst == c.rank) DMUON_NCCL_CHECK(ncclRecv(c.at(t.to), sz(t.to.count), c.type, c.position_of(t.src), c.comm, c.stream));
  }
}

}  // namespace

cuda::NsShardReduce sharded_ns_reduce(ncclComm_t comm, const std::string& where) {
  // Each member enqueues the same all-reduces in the same order (the engine's program is the
  // same on every member), so they match on the group's communicator as a collective op's do.
  auto checked = [where](ncclResult_t status, const char* what) {
    try {
      comm::check(status, what, __FILE__, __LINE__);
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
  };
  cuda::NsShardReduce r;
  r.norm = [comm, checked](double* squares, cuda::Stream stream) {
    checked(ncclAllReduce(squares, squares, 1, ncclFloat64, ncclSum, comm, stream), "ncclAllReduce (squared norm)");
  };
  r.gram = [comm, checked](float* gram, long elements, cuda::Stream stream) {
    checked(ncclAllReduce(gram, gram, sz(elements), ncclFloat32, ncclSum, comm, stream), "ncclAllReduce (X X^T)");
  };
  // In place: this member's block already sits at its place in the buffer (NsShardReduce::gather).
  r.gather = [comm, checked](void* blocks, long each, cuda::Stream stream) {
    int position = 0;
    checked(ncclCommUserRank(comm, &position), "ncclCommUserRank");
    const std::size_t bytes = 2 * sz(each);  // 16-bit elements, moved as bytes
    char* base = static_cast<char*>(blocks);
    checked(ncclAllGather(base + position * bytes, base, bytes, ncclUint8, comm, stream), "ncclAllGather (m x m product)");
  };
  return r;
}

std::size_t packed_collective_bytes(const Op& op, const DeviceBuffers& buffers) {
  if (!packs_regions(op)) return 0;
  return sz(region_elements(op.regions)) * element_bytes(buffers.type(static_cast<int>(op.buffer)));
}

void launch_collective(const Op& op, const Plan& plan, int rank, comm::RankComms& comms, DeviceBuffers& buffers,
                       cudaStream_t stream, const PackStaging& staging, const std::string& where) {
  const Context c{op, plan, rank, comms.comm(plan, op.group), comms.position(plan, op.group), buffers, stream, where,
                  nccl_type(buffers.type(static_cast<int>(op.buffer))), staging};
  try {
    switch (op.kind) {
      case OpKind::broadcast:
      case OpKind::reduce: rooted(c); return;
      case OpKind::all_reduce: all_reduce(c); return;
      case OpKind::all_gather:
      case OpKind::reduce_scatter: gather_or_scatter(c); return;
      case OpKind::all_to_all: all_to_all(c); return;
      default: throw Error(where + ": not a collective");
    }
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(where, 0) == 0) throw;
    throw Error(where + ": " + what);
  }
}

}  // namespace dmuon::exec
