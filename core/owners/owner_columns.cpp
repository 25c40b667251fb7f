#include "core/owners/owner_columns.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/error.hpp"

namespace dmuon {
namespace {

double matrix_bytes(const MuonMatrix& m) { return 2.0 * double(m.rows) * double(m.cols); }

// Shard column of each matrix: per layer, bytes spread over the columns; NS work as tie-break.
std::vector<int> columns_for(const ModelSpec& model, const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                             int columns) {
  std::vector<std::size_t> order(matrices.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return matrix_bytes(matrices[a]) > matrix_bytes(matrices[b]); });
  std::map<std::string, std::vector<double>> layer_bytes;
  std::vector<double> column_seconds(static_cast<std::size_t>(columns), 0.0);
  std::vector<int> column(matrices.size(), 0);
  for (std::size_t m : order) {
    auto& bytes = layer_bytes.try_emplace(layer_key(model, matrices[m]), std::size_t(columns), 0.0).first->second;
    int best = 0;
    for (int c = 1; c < columns; ++c) {
      const auto i = static_cast<std::size_t>(c), b = static_cast<std::size_t>(best);
      if (bytes[i] < bytes[b] || (bytes[i] == bytes[b] && column_seconds[i] < column_seconds[b])) best = c;
    }
    column[m] = best;
    bytes[static_cast<std::size_t>(best)] += matrix_bytes(matrices[m]);
    column_seconds[static_cast<std::size_t>(best)] += cost(matrices[m].rows, matrices[m].cols, 1);
  }
  return column;
}

}  // namespace

Assignment assign_owners_by_column(const ModelSpec& model, const std::vector<MuonMatrix>& matrices,
                                   const BatchCost& cost, const AssignmentOptions& options, const Mesh& mesh) {
  if (options.ranks != mesh.world()) {
    throw Error("owner assignment: " + std::to_string(options.ranks) + " ranks for a " + mesh.to_string() + " mesh");
  }
  const std::vector<int> column = columns_for(model, matrices, cost, mesh.shard);
  std::vector<int> owner(matrices.size(), -1);
  for (int c = 0; c < mesh.shard; ++c) {
    std::vector<std::size_t> index;
    std::vector<MuonMatrix> mine;
    for (std::size_t m = 0; m < matrices.size(); ++m) {
      if (column[m] != c) continue;
      index.push_back(m);
      mine.push_back(matrices[m]);
    }
    if (mine.empty()) continue;
    AssignmentOptions local = options;
    local.ranks = mesh.replicate;
    local.pack_numel_threshold = 0;
    local.memory_capacity_bytes.clear();
    for (int rep = 0; rep < mesh.replicate && !options.memory_capacity_bytes.empty(); ++rep) {
      local.memory_capacity_bytes.push_back(options.memory_capacity_bytes.at(static_cast<std::size_t>(mesh.rank(rep, c))));
    }
    const Assignment a = assign_owners(mine, cost, local);
    for (std::size_t k = 0; k < index.size(); ++k) owner[index[k]] = mesh.rank(a.owner_of_matrix[k], c);
  }
  AssignmentOptions whole = options;
  whole.pack_numel_threshold = 0;
  return evaluate_owners(matrices, cost, whole, owner);
}

double busiest_column_bytes(const ModelSpec& model, const std::vector<MuonMatrix>& matrices,
                            const std::vector<int>& owner_of_matrix, const Mesh& mesh) {
  std::map<std::string, std::vector<double>> layer_bytes;
  for (std::size_t m = 0; m < matrices.size(); ++m) {
    auto& bytes = layer_bytes.try_emplace(layer_key(model, matrices[m]), std::size_t(mesh.shard), 0.0).first->second;
    bytes[static_cast<std::size_t>(mesh.shard_index_of(owner_of_matrix.at(m)))] += matrix_bytes(matrices[m]);
  }
  double sum = 0;
  for (const auto& [key, bytes] : layer_bytes) sum += *std::max_element(bytes.begin(), bytes.end());
  return sum;
}

}  // namespace dmuon
