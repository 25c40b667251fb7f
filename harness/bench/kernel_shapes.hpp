// The Newton-Schulz problems `dmuon-bench kernels` times: the distinct Muon matrix shapes of
// model files (routing applied, as the optimizer would see them) or an explicit list.
#pragma once
#include <string>
#include <vector>

namespace dmuon::bench {

struct BenchShape {
  long rows = 0, cols = 0;
  int count = 1;               // matrices of this shape in one step of the models that have it
  std::vector<std::string> models;  // which models have it ("list" for --shapes)
  std::vector<int> counts;          // parallel to models: each one's count of the shape
  std::string label() const { return std::to_string(rows) + "x" + std::to_string(cols); }
  double aspect() const;       // max(rows, cols) / min(rows, cols)
};

// Distinct (rows, cols) of every Muon matrix in each model file, in first-seen order; the count
// is the largest per-model count. Throws dmuon::Error naming the file on bad input.
std::vector<BenchShape> shapes_from_models(const std::vector<std::string>& model_files);
// "RxC[:count],..." (count default 1). Throws dmuon::Error naming the bad item.
std::vector<BenchShape> parse_shape_list(const std::string& text);
// Appends `more`, merging equal shapes (largest count, models joined).
void merge_shapes(std::vector<BenchShape>& into, const std::vector<BenchShape>& more);

}  // namespace dmuon::bench
