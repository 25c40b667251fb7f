// The wide input of a sharded Newton-Schulz call cut into its k members' column blocks, as
// core/plan/ns_sharding's ns_shard_columns cuts it (CPU and GPU sharded-NS tests).
#pragma once
#include <vector>

#include <Eigen/Dense>

#include "core/plan/ns_sharding.hpp"

namespace dmuon::test {

inline std::vector<Eigen::MatrixXd> column_blocks(const Eigen::MatrixXd& wide, int k) {
  std::vector<Eigen::MatrixXd> out;
  for (int j = 0; j < k; ++j) {
    const auto [begin, end] = ns_shard_columns(wide.cols(), k, j);
    out.push_back(wide.middleCols(begin, end - begin));
  }
  return out;
}

}  // namespace dmuon::test
