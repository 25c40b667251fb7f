#include "core/plan/plan_printer.hpp"

#include <cstdio>

#include "core/model/model_spec.hpp"
#include "core/cost/plan_cost.hpp"
#include "core/model/routing.hpp"

namespace dmuon {
namespace {

std::string human_bytes(double bytes) {
  char s[32];
  if (bytes >= 1e9) std::snprintf(s, sizeof s, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(s, sizeof s, "%.2f MB", bytes / 1e6);
  else if (bytes >= 1e3) std::snprintf(s, sizeof s, "%.1f kB", bytes / 1e3);
  else std::snprintf(s, sizeof s, "%.0f B", bytes);
  return s;
}

std::string deps_string(const std::vector<int>& deps) {
  std::string s;
  for (int d : deps) s.append(s.empty() ? "" : ",").append(std::to_string(d));
  return "[" + s + "]";
}

}  // namespace

void print_plan(std::ostream& out, const Plan& plan, const ModelSpec& model, const Routing& routing,
                int max_ops_per_rank) {
  out << "plan " << to_string(plan.strategy) << " on mesh " << plan.mesh.to_string() << " ("
      << plan.op_count() << " ops, " << model.params.size() << " parameters, "
      << routing.muon_matrices.size() << " Muon matrices)\n";
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    out << "  group " << g << " " << plan.groups[g].name << ": " << plan.groups[g].ranks.size() << " ranks\n";
  }
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const auto& ops = plan.ranks[static_cast<std::size_t>(r)];
    out << "rank " << r << ": " << ops.size() << " ops\n";
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (max_ops_per_rank >= 0 && i >= max_ops_per_rank) {
        out << "  ... " << ops.size() - static_cast<std::size_t>(i) << " more\n";
        break;
      }
      const Op& op = ops[static_cast<std::size_t>(i)];
      char head[160];
      std::snprintf(head, sizeof head, "  %4d %-7s %-9s %-14s", i, std::string(to_string(op.stream)).c_str(),
                    std::string(to_string(op.phase)).c_str(), std::string(to_string(op.kind)).c_str());
      out << head;
      if (is_collective(op.kind)) {
        out << " " << to_string(op.buffer) << " " << plan.groups[static_cast<std::size_t>(op.group)].name;
        if (op.root >= 0) out << " root=" << op.root;
        if (op.kind == OpKind::reduce || op.kind == OpKind::all_reduce || op.kind == OpKind::reduce_scatter) {
          out << (op.reduce_op == ReduceOp::avg ? " avg" : " sum");
        }
        out << " " << human_bytes(collective_payload_bytes(op, r, plan.bytes_per_element));
      } else if (op.kind == OpKind::newton_schulz) {
        const auto& m = routing.muon_matrices[op.matrices.front()];
        out << " batch=" << op.matrices.size() << " " << m.rows << "x" << m.cols;
      } else {
        out << " " << region_elements(op.regions) << " elements";
      }
      out << " '" << op.label << "' deps " << deps_string(op.deps) << "\n";
    }
  }
}

}  // namespace dmuon
