#include "core/plan/plan_fingerprint.hpp"

namespace dmuon {
namespace {

class Fnv1a {
 public:
  void add(std::int64_t value) {
    auto v = static_cast<std::uint64_t>(value);
    for (int i = 0; i < 8; ++i) {
      hash_ = (hash_ ^ (v & 0xff)) * 0x100000001b3ull;
      v >>= 8;
    }
  }
  void add(const Region& r) {
    add(static_cast<std::int64_t>(r.param));
    add(r.offset);
    add(r.count);
  }
  template <typename T>
  void add_all(const std::vector<T>& items) {
    add(static_cast<std::int64_t>(items.size()));
    for (const T& item : items) add(item);
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

void add_op(Fnv1a& h, const Op& op) {
  h.add(static_cast<std::int64_t>(op.kind));
  h.add(static_cast<std::int64_t>(op.stream));
  h.add(static_cast<std::int64_t>(op.phase));
  h.add_all(std::vector<std::int64_t>(op.deps.begin(), op.deps.end()));
  h.add_all(std::vector<std::int64_t>(op.matrices.begin(), op.matrices.end()));
  h.add_all(op.regions);
  h.add(op.group);
  h.add(op.root);
  h.add(static_cast<std::int64_t>(op.reduce_op));
  h.add(static_cast<std::int64_t>(op.buffer));
  h.add_all(op.parts);
  h.add(static_cast<std::int64_t>(op.transfers.size()));
  for (const Transfer& t : op.transfers) {
    h.add(t.src);
    h.add(t.dst);
    h.add(t.from);
    h.add(t.to);
  }
  h.add(op.collective);
  h.add(static_cast<std::int64_t>(op.bucket));
  h.add(static_cast<std::int64_t>(op.run_ahead));
  h.add(static_cast<std::int64_t>(op.via_all_reduce));
  h.add(op.ns_column_begin);
  h.add(op.ns_column_end);
  h.add(op.ns_product_begin);
  h.add(op.ns_product_end);
}

}  // namespace

std::uint64_t plan_fingerprint(const Plan& plan) {
  Fnv1a h;
  h.add(static_cast<std::int64_t>(plan.strategy));
  h.add(plan.mesh.replicate);
  h.add(plan.mesh.shard);
  h.add(plan.bytes_per_element);
  h.add(static_cast<std::int64_t>(plan.groups.size()));
  for (const CommGroup& g : plan.groups) h.add_all(std::vector<std::int64_t>(g.ranks.begin(), g.ranks.end()));
  h.add_all(std::vector<std::int64_t>(plan.matrix_owner.begin(), plan.matrix_owner.end()));
  h.add(static_cast<std::int64_t>(plan.ranks.size()));
  for (const auto& ops : plan.ranks) {
    h.add(static_cast<std::int64_t>(ops.size()));
    for (const Op& op : ops) add_op(h, op);
  }
  return h.value();
}

}  // namespace dmuon
