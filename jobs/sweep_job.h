// A sweep below gRPC: the request's checks (GPU counts, top_k, limits), each GPU count's scenario
// resolved once, and the memory policy for its layouts. The server's reactor adapts it to a
// stream (the cache, progress messages, the writes); a tool or a test calls it directly.
#ifndef SCALECAST_JOBS_SWEEP_JOB_H_
#define SCALECAST_JOBS_SWEEP_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/catalog.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/step.h"

namespace scalecast {

// What a caller asks of a sweep, as it asked it (unchecked).
struct SweepAsk {
  Scenario base;                // its num_gpus is the count when gpu_counts is empty
  std::vector<int> gpu_counts;  // each in [1, kMaxGpus], none repeated
  int top_k = 0;                // 0 = 5
  int64_t max_layouts = 0;      // per GPU count; 0 = the server's bound, else at most it
  int max_gpu_counts = 0;       // 0 = the server's bound, else at most it
  Objective objective = Objective::kThroughput;
};

// The server's bounds (ServerOptions' sweep_* fields, where their defaults are).
struct SweepBounds {
  int max_gpu_counts = 0;
  int max_top_k = 0;
  int64_t max_layouts = 0;  // per GPU count
  int64_t max_bytes = 0;    // the layouts one GPU count may hold
};

struct SweepCount {
  int gpus = 0;
  ResolvedScenario resolved;  // base with this GPU count, resolved once
};

struct SweepPlan {
  std::vector<SweepCount> counts;  // in the ask's order
  PlanOptions options;             // objective, top_k, max_layouts
};

// The ask checked against `bounds` and resolved per count. INVALID_ARGUMENT naming the field
// ("gpu_counts[2]: 0 is out of range [1, 1048576]", "base.parallelism.tp: ..."),
// RESOURCE_EXHAUSTED for more GPU counts than the bounds allow.
absl::StatusOr<SweepPlan> PlanSweep(const SweepAsk& ask, const SweepBounds& bounds,
                                    const Catalog& catalog);

// One count's layouts (listed lazily: model/planner.h LayoutSpace), refused (RESOURCE_EXHAUSTED,
// saying what to fix) when with the `held` bytes of the counts before it they would hold over
// bounds.max_bytes, or when they number over plan.options.max_layouts. `rejected` gets the
// reasons of the layouts the enumeration dropped.
absl::StatusOr<LayoutSpace> SweepLayouts(const SweepCount& count, const SweepPlan& plan,
                                         const SweepBounds& bounds, const Catalog& catalog,
                                         std::map<std::string, int64_t>* rejected, size_t held = 0);

// One count's search split for `workers` threads: [begin, end) ranges of its n layouts, about 64
// layouts a chunk at least, one chunk when n is small.
std::vector<std::pair<size_t, size_t>> SweepChunks(size_t n, size_t workers);

// A count's search before any layout is evaluated: the step model of its resolved scenario, and
// its result so far holding the layouts the enumeration rejected (counted as evaluated).
struct CountSearch {
  std::shared_ptr<const StepModel> model;
  PlanResult seed;
};
CountSearch StartCountSearch(const SweepCount& count, const Profile& profile,
                             const std::map<std::string, int64_t>& rejected);

// Evaluates layouts [begin, end) of one count. `progress(delta, last)` is called every 256
// layouts with those evaluated since its last call, and once more at the end with the rest and
// `last` true; false from it (not last) stops the chunk.
PlanResult EvaluateChunk(const StepModel& model, const LayoutSpace& layouts, size_t begin,
                         size_t end, PlanOptions options,
                         const std::function<bool(int64_t, bool)>& progress);

// The count's result once every chunk is merged: the band on each kept prediction.
void FinishCountSearch(const SweepCount& count, const StepModel& model, const Profile& profile,
                       PlanResult* result);

}  // namespace scalecast

#endif  // SCALECAST_JOBS_SWEEP_JOB_H_
