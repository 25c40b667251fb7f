#include "harness/bench/kernel_shapes.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/model/model_yaml.hpp"
#include "core/model/routing.hpp"

namespace dmuon::bench {

double BenchShape::aspect() const {
  return static_cast<double>(std::max(rows, cols)) / static_cast<double>(std::min(rows, cols));
}

void merge_shapes(std::vector<BenchShape>& into, const std::vector<BenchShape>& more) {
  for (const auto& s : more) {
    auto it = std::find_if(into.begin(), into.end(),
                           [&](const BenchShape& t) { return t.rows == s.rows && t.cols == s.cols; });
    if (it == into.end()) {
      into.push_back(s);
      into.back().counts.resize(s.models.size(), s.count);  // a shape given without counts: its count each
      continue;
    }
    it->counts.resize(it->models.size(), it->count);
    it->count = std::max(it->count, s.count);
    for (std::size_t i = 0; i < s.models.size(); ++i) {
      const int c = i < s.counts.size() ? s.counts[i] : s.count;
      auto m = std::find(it->models.begin(), it->models.end(), s.models[i]);
      if (m == it->models.end()) {
        it->models.push_back(s.models[i]);
        it->counts.push_back(c);
      } else {
        int& mine = it->counts[static_cast<std::size_t>(m - it->models.begin())];
        mine = std::max(mine, c);
      }
    }
  }
}

std::vector<BenchShape> shapes_from_models(const std::vector<std::string>& model_files) {
  std::vector<BenchShape> out;
  for (const auto& file : model_files) {
    const ModelSpec model = load_model_file(file);
    const Routing routing = route_parameters(model, {});
    std::vector<BenchShape> mine;
    for (const auto& m : routing.muon_matrices) {
      auto it = std::find_if(mine.begin(), mine.end(),
                             [&](const BenchShape& t) { return t.rows == m.rows && t.cols == m.cols; });
      if (it == mine.end()) {
        mine.push_back({m.rows, m.cols, 1, {model.name}, {1}});
      } else {
        ++it->count;
        ++it->counts.front();
      }
    }
    merge_shapes(out, mine);
  }
  return out;
}

std::vector<BenchShape> parse_shape_list(const std::string& text) {
  std::vector<BenchShape> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    long r = 0, c = 0;
    int count = 1;
    char x = 0, colon = 0;
    std::stringstream is(item);
    is >> r >> x >> c;
    if (!is.fail() && !is.eof()) is >> colon >> count;
    if (is.fail() || x != 'x' || (colon != 0 && colon != ':') || r <= 0 || c <= 0 || count <= 0 || !is.eof()) {
      throw Error("--shapes: expected RxC or RxC:count, got '" + item + "'");
    }
    merge_shapes(out, {{r, c, count, {"list"}, {count}}});
  }
  if (out.empty()) throw Error("--shapes: no shape given");
  return out;
}

}  // namespace dmuon::bench
