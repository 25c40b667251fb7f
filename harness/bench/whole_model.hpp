// Issue 16's whole-model figure: the Newton-Schulz time of all of a model's Muon matrices, each
// shape at the model's batch, against torch's per-matrix time for the same shapes. A geomean over
// shapes weighs a 256x2048 projection like a 14336x4096 MLP matrix; this sum weighs each by what
// it costs in the model's step, which is what the optimizer step sees.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/bench/kernel_shapes.hpp"

namespace dmuon::bench {

// One timed call: `seconds_per_matrix` is the call's time divided by its batch; `chosen` names the
// implementation that time is of (may be empty).
struct ShapeTime {
  long rows = 0, cols = 0;
  std::string preset;
  int batch = 1;
  double seconds_per_matrix = 0;
  std::string chosen;
};

// One shape's share of a model's sum: `count` matrices at `batch`, ours and torch's seconds for all
// of them. Where the remaining time is, so that the next kernel work goes where the model spends it.
struct ModelPart {
  std::string shape;  // rows x cols
  int count = 0, batch = 1;
  std::string chosen;
  double seconds = 0, torch_seconds = 0;
  double torch_best_seconds = 0;  // 0 where the baseline has no best time for the shape
};

struct WholeModelSpeedup {
  std::string model, preset;
  int matrices = 0;             // Muon matrices of the model counted
  double seconds = 0;           // ours: sum over shapes of count x per-matrix seconds
  double torch_seconds = 0;     // torch: sum over shapes of count x torch's per-matrix seconds (median)
  // The same sum over torch's fastest sample of each shape; 0 where the baseline has none for
  // every shape. Torch's eager calls wait on the host, whose pace moves within one call (a
  // 4096 x 4096 median 1.7x its minimum on 2026-11-27): against its best time no such
  // disturbance can make a speedup.
  double torch_best_seconds = 0;
  std::vector<std::string> missing;  // shapes of the model without a timing or a torch time
  std::vector<ModelPart> parts;      // the priced shapes, in the order of `shapes`; they sum to the above
  bool complete() const { return missing.empty() && matrices > 0; }
  double speedup() const { return seconds > 0 ? torch_seconds / seconds : 0; }
  double speedup_vs_best() const { return seconds > 0 ? torch_best_seconds / seconds : 0; }
  // What a target is judged on: the lower of the two (the median's where there is no best).
  double conservative_speedup() const {
    return torch_best_seconds > 0 ? std::min(speedup(), speedup_vs_best()) : speedup();
  }
};

// The batch a shape is timed at besides batch 1, as the executor would run it: a rank's matrices of
// one shape go in batched calls of up to `max_batch` (PlanOptions::max_batch), so the smaller of
// the shape's count and max_batch, then at most `max_elements` elements in the call (a memory
// guard; 0: none). At most 1 means no batched timing.
int executor_batch(long count, long rows, long cols, long max_elements, int max_batch);

// Per model (the shapes' `models`, "list" excluded) and preset present in `times`: each shape
// of the model priced at the largest batch timed that does not exceed the model's own count of
// the shape (batch 1 at least). A model with a shape lacking a timing or torch's time is
// reported with that shape in `missing` and no speedup claimed. `torch_best` (may be empty): torch's
// fastest per-matrix seconds per shape, summed the same way into torch_best_seconds where it has
// every shape of the model.
std::vector<WholeModelSpeedup> whole_model_speedups(const std::vector<BenchShape>& shapes,
                                                    const std::vector<ShapeTime>& times,
                                                    const std::map<std::pair<long, long>, double>& torch_seconds,
                                                    const std::map<std::pair<long, long>, double>& torch_best = {});

}  // namespace dmuon::bench
