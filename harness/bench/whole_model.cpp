#include "harness/bench/whole_model.hpp"

#include <algorithm>

namespace dmuon::bench {
namespace {

// The model's count of the shape (0 when the model does not have it).
int count_in(const BenchShape& s, const std::string& model) {
  for (std::size_t i = 0; i < s.models.size(); ++i) {
    if (s.models[i] == model) return i < s.counts.size() ? s.counts[i] : s.count;
  }
  return 0;
}

const ShapeTime* at_model_batch(const std::vector<ShapeTime>& times, const BenchShape& s, const std::string& preset,
                                int count) {
  const ShapeTime* best = nullptr;
  for (const auto& t : times) {
    if (t.rows != s.rows || t.cols != s.cols || t.preset != preset) continue;
    if (t.batch > count && t.batch != 1) continue;
    if (!best || t.batch > best->batch) best = &t;
  }
  return best;
}

}  // namespace

int executor_batch(long count, long rows, long cols, long max_elements, int max_batch) {
  const long fit = rows > 0 && cols > 0 ? max_elements / (rows * cols) : 0;
  return static_cast<int>(std::max(0L, std::min({count, fit, static_cast<long>(max_batch)})));
}

std::vector<WholeModelSpeedup> whole_model_speedups(const std::vector<BenchShape>& shapes,
                                                    const std::vector<ShapeTime>& times,
                                                    const std::map<std::pair<long, long>, double>& torch_seconds,
                                                    const std::map<std::pair<long, long>, double>& torch_best) {
  std::vector<std::string> models, presets;
  for (const auto& s : shapes) {
    for (const auto& m : s.models) {
      if (m != "list" && std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    }
  }
  for (const auto& t : times) {
    if (std::find(presets.begin(), presets.end(), t.preset) == presets.end()) presets.push_back(t.preset);
  }
  std::vector<WholeModelSpeedup> out;
  for (const auto& model : models) {
    for (const auto& preset : presets) {
      WholeModelSpeedup w;
      w.model = model;
      w.preset = preset;
      bool best_complete = !torch_best.empty();
      for (const auto& s : shapes) {
        const int count = count_in(s, model);
        if (count == 0) continue;
        const ShapeTime* t = at_model_batch(times, s, preset, count);
        auto torch = torch_seconds.find({s.rows, s.cols});
        if (!t || torch == torch_seconds.end()) {
          w.missing.push_back(s.label());
          continue;
        }
        ModelPart part{s.label(), count, t->batch, t->chosen, count * t->seconds_per_matrix, count * torch->second};
        auto best = torch_best.find({s.rows, s.cols});
        if (best == torch_best.end()) {
          best_complete = false;
        } else {
          part.torch_best_seconds = count * best->second;
        }
        w.matrices += count;
        w.seconds += part.seconds;
        w.torch_seconds += part.torch_seconds;
        w.torch_best_seconds += part.torch_best_seconds;
        w.parts.push_back(part);
      }
      if (!best_complete) w.torch_best_seconds = 0;
      out.push_back(w);
    }
  }
  return out;
}

}  // namespace dmuon::bench
