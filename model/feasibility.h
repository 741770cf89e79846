// When a scenario has no layout that works, the nearest ones that do: GPU counts, global batches
// and (when the caller fixed one) micro batches for which the model itself finds a layout that
// divides evenly and fits in memory. Built only on the public model API (ResolveScenario and
// Predict), so every suggestion is one the predictor would accept.
#ifndef SCALECAST_MODEL_FEASIBILITY_H_
#define SCALECAST_MODEL_FEASIBILITY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "model/types.h"

namespace scalecast {

struct FeasibilityOptions {
  // Every value within this distance is tried, nearest first, so a suggestion found there is the
  // nearest there is; beyond it only round numbers (multiples of 8, 64, 256, dp, powers of two).
  // GPU counts are searched densely over half the count either way (up to 512).
  int near_steps = 128;
  int max_predictions = 160;  // Predict calls per side of each dimension: bounds the cost
};

// At most one value below and one above the scenario's, nearest first; empty when none was found
// within the search (or the dimension cannot help).
struct NearestFeasible {
  std::vector<int> gpu_counts;          // with the scenario's global batch
  std::vector<int64_t> global_batches;  // on the scenario's GPU count
  std::vector<int> micro_batches;       // only when the scenario fixed micro_batch
  bool empty() const {
    return gpu_counts.empty() && global_batches.empty() && micro_batches.empty();
  }
};

// True when Predict answers the scenario with a layout that fits in memory.
bool IsFeasible(const Scenario& scenario, const Catalog& catalog, const Profile& profile);

// Searches around an infeasible scenario (as the caller gave it; it need not resolve).
NearestFeasible FindNearestFeasible(const Scenario& scenario, const Catalog& catalog,
                                    const Profile& profile, const FeasibilityOptions& options = {});

// "Nearest that work: 496 or 512 GPUs; global batch 1000 or 1500 on 500 GPUs; micro batch 2."
// "" when `nearest` is empty.
std::string DescribeNearest(const NearestFeasible& nearest, const Scenario& scenario);

// How far a prediction may move the asked global batch, as a share of it, when no layout of the
// asked GPUs splits it evenly: "2M tokens" on OPT-175B's 992 GPUs is 992 or 1,116 sequences of
// 2,048, not 1,024; GPT-NeoX-20B's "1,538" are 1,536 on 12 replicas. A batch within a tenth moves
// the micro-batches per replica (the bubble, the last micro-batch's exposed reduction) by at
// most a tenth, inside the 80 % band's half-width; a batch further off is another question.
inline constexpr double kBatchRoundShare = 0.10;

// The scenario at the nearest global batch of `nearest` (on the asked GPU count) when it is
// within kBatchRoundShare of the asked batch, with a warning in its input_warnings naming
// `path`.workload.global_batch, the asked batch and the other neighbour; nullopt otherwise, and
// when a micro batch works at the asked batch (the request's micro batch is then what to change).
std::optional<Scenario> AtNearestBatch(const Scenario& asked, const NearestFeasible& nearest,
                                       absl::string_view path);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_FEASIBILITY_H_
