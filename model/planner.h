// The planner: for a scenario with unset layout fields, enumerate every layout that divides
// evenly (heads by tp, layers by pp*vpp, GPUs by tp*pp*cp, global batch by dp*micro batch),
// keep those that fit in memory and rank them by tokens/s or joules per token.
#ifndef SCALECAST_MODEL_PLANNER_H_
#define SCALECAST_MODEL_PLANNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "model/step.h"
#include "model/types.h"

namespace scalecast {

enum class Objective { kThroughput = 0, kEnergy = 1 };

struct PlanOptions {
  int top_k = 5;  // predictions kept, best first
  Objective objective = Objective::kThroughput;
  int64_t max_layouts = 1'000'000;  // RESOURCE_EXHAUSTED above this
  // Called every `progress_every` evaluations with (evaluated, total); returning false cancels
  // the search (the result is then CANCELLED).
  std::function<bool(int64_t, int64_t)> progress;
  int64_t progress_every = 4096;
  // Layouts the memory model says do not fit are skipped; false keeps them (with the "does not
  // fit" warning): for runs that were measured, whose layout evidently fitted.
  bool require_fit = true;
};

struct PlanResult {
  std::vector<Prediction> top;  // best first, all fit in memory
  int64_t evaluated_count = 0;  // layouts considered (feasible or not)
  int64_t infeasible_count = 0;
  std::map<std::string, int64_t> infeasible_reasons;  // reason -> count
  std::string InfeasibleSummary() const;
};

// Every candidate layout for the scenario's unset fields (complete Parallelism values, dp set).
// Divisibility failures are counted into `rejected` (reason -> count) when it is non-null.
std::vector<Parallelism> EnumerateLayouts(const Scenario& resolved, const Catalog& catalog,
                                          std::map<std::string, int64_t>* rejected);

// Evaluates `layouts` against one model and merges them into `result`, keeping the top_k.
// Returns false if progress() asked to stop.
bool EvaluateLayouts(const StepModel& model, const std::vector<Parallelism>& layouts, size_t begin,
                     size_t end, const PlanOptions& options, PlanResult* result,
                     int64_t progress_offset = 0, int64_t progress_total = 0);

// Merges two partial results (for searches split over threads).
void MergeResults(const PlanOptions& options, PlanResult* into, PlanResult&& from);

// Whole search on one thread. `resolved` comes from ResolveScenario.
absl::StatusOr<PlanResult> Plan(const Scenario& resolved, const Catalog& catalog,
                                const Profile& profile, const PlanOptions& options);

// True when a is better than b under the objective.
bool Better(const Prediction& a, const Prediction& b, Objective objective);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_PLANNER_H_
