// The planner: for a scenario with unset layout fields, enumerate every layout that divides
// evenly (heads by tp, layers by pp*vpp, GPUs by tp*pp*cp, global batch by dp*micro batch),
// keep those that fit in memory and rank them by tokens/s or joules per token.
#ifndef SCALECAST_MODEL_PLANNER_H_
#define SCALECAST_MODEL_PLANNER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "model/catalog.h"
#include "model/field_rules_gen.h"
#include "model/layout.h"
#include "model/profile.h"
#include "model/step.h"
#include "model/types.h"

namespace scalecast {

enum class Objective { kThroughput = 0, kEnergy = 1 };

// Share of HBM the planner keeps free (Cluster.hbm_headroom's default): what training stacks hold
// beyond the memory model's estimate (which already counts ~2 GiB of runtime and 5 % allocator
// fragmentation, model/step.cc):
// - PyTorch's caching allocator: reserved minus allocated grows with varying tensor sizes
//   (PyTorch "CUDA semantics", Memory management and expandable_segments; torchtitan runs show
//   3-8 %, more under MoE's uneven token counts);
// - NCCL buffers: NCCL_BUFFSIZE, 4 MiB by default, per channel and per peer of each communicator
//   (NCCL documentation, Environment Variables), i.e. ~256 MiB for a ring of 32 channels, and one
//   communicator per parallel axis (tp, dp, pp, cp, ep) plus all-to-all peers;
// - CUDA graphs: captured graphs keep their own memory pool (PyTorch "CUDA Graphs" notes,
//   graph-private memory pools; Megatron-Core's CUDA graph option documents the extra memory).
// 5 % (4 GiB of 80, 9 of 180) covers these on the layouts measured; a request may set 0.
inline constexpr double kDefaultHbmHeadroom = 0.05;
// The most a request may keep free: Cluster.hbm_headroom's proto range.
inline constexpr double kMaxHbmHeadroom = field_rules::kClusterHbmHeadroom.max;

// The most the memory model overstates the need of a measured run whose layout the data gives
// in full: 1.5x the HBM. Of the 1,247 runs of the project's data it says 18 do not fit, which
// ran: MaxText's 64B on TPU v5p (data row 7708: 142.3 GiB of 95, 1.50x) the furthest, its other
// v5p and v5e configs 1.25-1.47x (XLA's rematerialisation and buffer reuse, which it does not
// model), and a NeMo Llama 3 70B on GB300 (5055) whose sharding and recompute the data leaves
// open (1.15x in the least of its layouts).
inline constexpr double kMemoryModelOverstatement = 1.5;

struct PlanOptions {
  int top_k = 5;  // predictions kept, best first
  Objective objective = Objective::kThroughput;
  int64_t max_layouts = 1'000'000;  // RESOURCE_EXHAUSTED above this
  // Called every `progress_every` evaluations with (evaluated, total); returning false cancels
  // the search (the result is then CANCELLED).
  std::function<bool(int64_t, int64_t)> progress;
  int64_t progress_every = 4096;
  // Layouts the memory model says do not fit are skipped; false keeps those that need no more
  // than `overstatement` times the HBM, with the "does not fit" warning: for runs that were
  // measured, whose layout evidently fitted, or that the caller laid out (PlanDespiteMemory).
  bool require_fit = true;
  double overstatement = kMemoryModelOverstatement;
  // Share of HBM kept free (with require_fit); unset = the scenario's cluster.hbm_headroom.
  std::optional<double> hbm_headroom;
};

// The reason counted for layouts that fit but leave less than `headroom` of HBM free.
std::string HeadroomReason(double headroom);

// Whether a layout fits in HBM with `headroom` of it kept free.
bool FitsWithHeadroom(const MemoryBreakdown& mem, double headroom);
// The slack a throughput bound is compared with, for rounding: the bound and the prediction it
// bounds add the same terms in different orders (the planner's no-recompute twin, the plan job's
// part bounds).
inline constexpr double kBoundSlack = 1e-9;
// A partial recompute (Parallelism::recompute_layers) or an offload the planner chose
// (cpu_offload_layers) the search need not evaluate: the same layout with the next lighter step
// the planner tries (fewer layers, or none) fits as well, and recomputing or offloading more
// costs time and nothing else.
bool PartialRecomputeDominated(const StepModel& model, const Parallelism& p, double headroom);

// The recompute ladder. Where the request leaves recompute open and the framework offers partial
// recompute (RecomputeLayerCandidates), the planner's full-recompute candidate stands for the
// steps between none and full: of them only the lightest that fits is worth a prediction (memory
// falls and time rises with each layer recomputed), and none of them when no recompute fits.
bool IsRecomputeLadder(const StepModel& model, const Parallelism& p);
// Climbs the ladder of `p` (IsRecomputeLadder): *p becomes the lightest step that fits with
// `headroom` (full on every layer when none does) and *mem its memory. Returns false when the
// layout need not be evaluated: no recompute fits as well.
bool ClimbRecomputeLadder(const StepModel& model, double headroom, Parallelism* p,
                          MemoryBreakdown* mem);
// The offload ladder: where the request leaves recompute and offloading open and the framework
// and accelerator can offload (OffloadLayerCandidates), the heaviest offload candidate stands
// for the steps below it; only the lightest that fits is worth a prediction (memory falls and
// exposed copies rise with each layer offloaded), and none when no offloading fits.
bool IsOffloadLadder(const StepModel& model, const Parallelism& p);
// Climbs the ladder of `p` (IsOffloadLadder) as ClimbRecomputeLadder does.
bool ClimbOffloadLadder(const StepModel& model, double headroom, Parallelism* p,
                        MemoryBreakdown* mem);

struct PlanResult {
  std::vector<Prediction> top;  // best first, all fit in memory
  int64_t evaluated_count = 0;  // layouts considered (feasible or not)
  int64_t infeasible_count = 0;
  std::map<std::string, int64_t> infeasible_reasons;  // reason -> count
  std::string InfeasibleSummary() const;
};

// One model-parallel shape's candidates on each of the other axes (model/layout.h).
struct ShapeAxes {
  Parallelism shape;
  std::vector<int> mbs;
  std::vector<std::pair<int, int>> experts;         // (ep, etp)
  std::vector<std::pair<Sharding, int>> shardings;  // (sharding, HSDP shard group)
  std::vector<RecomputeChoice> recomputes;
  bool sp = false;
  size_t count() const {
    return shardings.size() * mbs.size() * recomputes.size() * experts.size();
  }
};

// Every candidate layout of a search, listed lazily: each model-parallel shape's axes, crossed on
// demand. A search holds its axes, 130-170 KB for an open search of Llama 2 70B or DeepSeek-V3
// on 512-2,048 H100s, where the list of their 21-308 thousand layouts took 1.5-22 MB, faulted in
// page by page on every search. The i-th layout is found by a binary search over the shapes and
// four divisions; an iterator steps without either. Within a shape the order is sharding, micro
// batch, recompute, experts (the innermost), the order the planner's ties and the sweep's rows
// have always had.
class LayoutSpace {
 public:
  LayoutSpace() = default;
  LayoutSpace(std::vector<ShapeAxes> shapes, uint32_t recompute_modules,
              std::vector<uint32_t> module_ladder = {});

  size_t size() const { return ends_.empty() ? 0 : ends_.back(); }
  bool empty() const { return size() == 0; }
  Parallelism operator[](size_t i) const { return *At(i); }
  // What the space holds, in bytes (a sweep's memory bound counts it).
  size_t bytes() const;
  // The module sets a search tries (RecomputeModuleLadder) where the request leaves recompute
  // open: the planner's selective candidates stand for them (IsModuleLadder), the plan job's
  // no-recompute layouts that do not fit climb them (jobs/plan_job.cc).
  const std::vector<uint32_t>& module_ladder() const { return module_ladder_; }

  // Walks the space in order, an odometer over the axes: stepping costs no division.
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Parallelism;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Parallelism;
    Parallelism operator*() const;
    Iterator& operator++();
    size_t index() const { return i_; }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    friend class LayoutSpace;
    Iterator(const LayoutSpace* space, size_t i);
    const LayoutSpace* space_;
    size_t i_;
    size_t shape_ = 0;
    size_t sharding_ = 0, mb_ = 0, recompute_ = 0, experts_ = 0;  // the digits, outermost first
  };
  // The iterator at the i-th layout (i == size(): the end).
  Iterator At(size_t i) const { return Iterator(this, i); }
  Iterator begin() const { return At(0); }
  Iterator end() const { return At(size()); }

 private:
  Parallelism Make(const ShapeAxes& a, const Iterator& digits) const;

  std::vector<ShapeAxes> shapes_;
  std::vector<size_t> ends_;        // one past each shape's last layout
  uint32_t recompute_modules_ = 0;  // the request's modules, for the selective choices
  std::vector<uint32_t> module_ladder_;
};

// The module ladder. Where the request leaves recompute open and the framework's users pick
// selective recompute's modules (RecomputeModuleLadder), the planner's selective candidate
// stands for the framework's own selective recompute and for each module set of the ladder: of
// each chain only the lightest set that fits is worth a prediction, and none of them when no
// recompute fits (recompute costs time and saves only memory).
bool IsModuleLadder(const LayoutSpace& layouts, const Parallelism& p);
// The layouts of `p`'s module ladder worth a prediction, each with its memory; none_fits when
// no recompute fits as well. `own` is the memory of `p` (the framework's own selective), or
// where the model states alone do not fit the memory they need (StepModel::ModuleMemory::floor),
// for the caller's count of why where nothing fits.
struct ModuleRungs {
  bool none_fits = false;
  MemoryBreakdown own;
  std::vector<std::pair<Parallelism, MemoryBreakdown>> fitting;
};
// `none_fits` is whether the layout fits without recompute, where the caller knows it.
ModuleRungs ClimbModuleLadder(const StepModel& model, absl::Span<const uint32_t> ladder,
                              double headroom, const Parallelism& p,
                              std::optional<bool> none_fits = std::nullopt);

// Every candidate layout for the scenario's unset fields (complete Parallelism values, dp set).
// Divisibility failures are counted into `rejected` (reason -> count) when it is non-null.
// Partial recompute comes as the full-recompute candidate's ladder, which EvaluateLayouts climbs
// (kLadder), or as a layout per step (kEach) for callers that evaluate layouts themselves.
// `stack` is the resolved one: its release's capabilities (Stack::software_date) and its
// context-parallel exchange (Stack::cp_comm); null: today's release, the framework's defaults.
LayoutSpace EnumerateLayouts(const Scenario& resolved, const Stack* stack, const Catalog& catalog,
                             std::map<std::string, int64_t>* rejected,
                             PartialSteps steps = PartialSteps::kLadder);

// Evaluates `layouts` against one model and merges them into `result`, keeping the top_k.
// Returns false if progress() asked to stop.
bool EvaluateLayouts(const StepModel& model, const LayoutSpace& layouts, size_t begin, size_t end,
                     const PlanOptions& options, PlanResult* result, int64_t progress_offset = 0,
                     int64_t progress_total = 0);

// Merges two partial results (for searches split over threads).
void MergeResults(const PlanOptions& options, PlanResult* into, PlanResult&& from);

// The reason a layout the memory model says does not fit is counted under, and the reason one
// past what it can overstate is (PlanDespiteMemory).
inline constexpr absl::string_view kDoesNotFitReason = "does not fit in memory";
inline constexpr absl::string_view kFarPastMemoryReason =
    "needs more HBM than the memory model overstates";

// The search with the memory model's verdict set aside: the best layouts by the objective that
// need no more than options.overstatement times the HBM, each with its "does not fit" warning.
// For a run that was measured (overstatement infinite: it ran, in one of its layouts), or whose
// tensor and pipeline degrees the caller gave (kMemoryModelOverstatement: past that, the run
// does not fit), where no layout fits by the memory model. The fastest is kept, as for any run:
// the one a tuned recipe runs.
absl::StatusOr<PlanResult> PlanDespiteMemory(const StepModel& model, const Scenario& resolved,
                                             const Catalog& catalog, const Profile& profile,
                                             PlanOptions options);

// Whole search on one thread. `resolved` comes from ResolveScenario.
absl::StatusOr<PlanResult> Plan(const Scenario& resolved, const Catalog& catalog,
                                const Profile& profile, const PlanOptions& options);
// The same with the model already built from the resolved scenario (ResolvedScenario's parts:
// its stack keeps the notes the first resolution made, which resolving the completed scenario
// again would not).
absl::StatusOr<PlanResult> Plan(const StepModel& model, const Scenario& resolved,
                                const Catalog& catalog, const Profile& profile,
                                const PlanOptions& options);

// True when a is better than b under the objective.
bool Better(const Prediction& a, const Prediction& b, Objective objective);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_PLANNER_H_
