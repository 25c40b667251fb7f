// Builds one rank's op list of the step program from its Plan ops: a layer's collectives
// merged into launches (launch_order.hpp), forward/backward compute around them, the optimizer
// ops after. Internal to sim/ (build_step_program drives it over every rank, twice).
#pragma once
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "core/cost/forward_backward_cost.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/cost/plan_cost.hpp"
#include "sim/launch_order.hpp"
#include "sim/replica_fold.hpp"
#include "sim/step_program.hpp"

namespace dmuon::sim {

// Builds one rank's op list; collectives are created in `prog` on first sight.
class RankBuilder {
 public:
  RankBuilder(StepProgram& prog, const Plan& plan, const Routing& routing, const ForwardBackwardCost& units,
              const TrainingSpec& t, bool as_is, bool merge, bool phase_runs)
      : prog_(prog), plan_(plan), routing_(routing), units_(units), t_(t), as_is_(as_is), merge_(merge && !as_is),
        phase_runs_(phase_runs && as_is) {}

  // First pass (collecting): only gathers the ordering constraints into `edges`. Second pass:
  // builds the rank's ops with every unit's launches in `positions` order.
  std::vector<SimOp> build(int rank, const std::vector<NsTime>& compute);
  // Second pass, a folded program (sim/replica_fold.hpp): rank `rank` built as `template_rank`'s
  // Plan list moved to its replica (collectives mapped by `fold`), sorted by its own positions:
  // what build() gives for the rank when its Plan list is the template's moved. Needs the
  // template rank classified in the first pass and keep_classified.
  std::vector<SimOp> build_moved(int rank, int template_rank, const ReplicaFold& fold, const std::vector<NsTime>& compute);
  // Second pass: keep each rank's first-pass classification after building it (build_moved
  // reads the template's), instead of moving it into the build.
  bool keep_classified = false;
  bool collecting = true;
  std::set<std::pair<int, int>> edges;
  std::vector<int> positions;
  const NsConfig* ns = nullptr;  // the Newton-Schulz config: a sharded call's all-reduces
  const CostModel* cost = nullptr;  // prices FSDP2's copies (TrainingSpec::fsdp2_copies)
  // Second pass: each unit's neighbouring launches (first, second) in the order built, appended
  // when set (sim/replica_fold.hpp checks that other replicas would order them alike).
  std::vector<std::pair<int, int>>* neighbours = nullptr;

 private:
  int merged_index(int rank, const Op& op, int unit);
  std::vector<SimOp> emit_rank(const std::vector<NsTime>& compute);
  int moved(int c) const;  // collective c as the rank being built sees it (build_moved)
  // Loads rank r's first-pass classification into fwd_, bwd_, optimizer_ops_ and real_: a copy
  // with keep_classified, else moved out.
  void take_classified(std::size_t r);
  void classify(int rank);  // fills fwd_, bwd_ (per unit), optimizer_ops_ and real_
  void add_plan_deps(SimOp& s, const std::vector<int>& members, int self);
  int collective_op(int c, const std::vector<int>& members, std::vector<int> extra);
  int sharded_ns(int i, const NsTime& priced);
  void emit_forward_backward();
  void set_producers();  // SimOp::producer of the rank's forward collectives
  // FSDP2's copy-in/out around a unit's all-gathers (or reduce-scatters) on the compute stream,
  // after `deps`; -1 when there is nothing to copy (or fsdp2_copies is off).
  // `host_wait`: seconds of the unit's turn the GPU waits for the host (ComputeUnit); the copies
  // run in them first, and what they use is taken off.
  int fsdp2_copy(const Entries& entries, OpKind kind, Phase phase, int unit, std::vector<int> deps, double& host_wait);
  int emit(SimOp op) {
    ops_.push_back(std::move(op));
    return static_cast<int>(ops_.size()) - 1;
  }

  StepProgram& prog_;
  const Plan& plan_;
  const Routing& routing_;
  const ForwardBackwardCost& units_;  // forward/backward compute per unit, priced by core
  const TrainingSpec& t_;
  bool as_is_;
  bool merge_;
  // The executor benchmark's two runs (host issue model, plan_as_is): every forward/backward op
  // of the rank before its optimizer ops, as the host enqueues them.
  bool phase_runs_;
  std::vector<SimOp> ops_;
  // The rank being built: its collectives per unit, optimizer-phase ops, plan op -> sim op.
  int rank_ = 0;
  int list_rank_ = 0;  // whose Plan list it runs: rank_, or its template rank (build_moved)
  const ReplicaFold* move_fold_ = nullptr;  // build_moved: the fold and the rank's replica
  int move_replica_ = 0;
  std::vector<Entries> fwd_, bwd_;
  std::vector<int> optimizer_ops_;
  RealDeps real_;  // which of the rank's Plan dependencies are real (launch_order.hpp)
  std::vector<int> sim_of_;
  std::vector<int> last_writer_;  // set_producers' scratch: per parameter, a sim op index
  std::vector<std::pair<int, int>> op_unit_;  // classify's scratch: per plan op, unit_of and its latest_backward
  // What classify found for each rank in the collecting pass, moved back in the second: the
  // same result (merged_index only creates collectives on first sight), computed once.
  struct Classified {
    std::vector<Entries> fwd, bwd;
    std::vector<int> optimizer_ops;
    RealDeps real;
  };
  std::vector<Classified> classified_;

 public:
  // Shared across ranks: merge key -> collective index; plan collective id -> merged index;
  // forward collective index -> its Z3 backward copy.
  std::map<std::tuple<int, int, int, int, int, bool>, int> by_key;
  std::vector<int> by_id;  // indexed by the Plan's collective id, -1 = not seen yet
  std::map<int, int> regather;
};

}  // namespace dmuon::sim
