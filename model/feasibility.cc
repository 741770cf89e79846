#include "model/feasibility.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/limits.h"
#include "model/predictor.h"

namespace scalecast {
namespace {

// Multiples of `m` just below and above `v`.
void AddMultiples(int64_t v, int64_t m, std::set<int64_t>* out) {
  if (m <= 0) return;
  const int64_t below = v / m * m;
  out->insert(below);
  out->insert(below + m);
  if (below > m) out->insert(below - m);
}

// The nearest feasible value below and the nearest above `value`, nearest first. Every value
// within `near_steps` is tried, nearest first (so what is found there is the nearest there is),
// then `extra` (round numbers further away); at most `max_predictions` tries a side.
std::vector<int64_t> Search(int64_t value, int64_t lo, int64_t hi, const std::set<int64_t>& extra,
                            const FeasibilityOptions& options,
                            const std::function<bool(int64_t)>& feasible) {
  std::vector<int64_t> out;
  for (int side : {-1, 1}) {
    std::vector<int64_t> candidates;
    for (int64_t d = 1; d <= options.near_steps; ++d) candidates.push_back(value + side * d);
    for (int64_t c : extra) {
      if (side * (c - value) > options.near_steps) candidates.push_back(c);
    }
    std::stable_sort(candidates.begin(), candidates.end(), [value](int64_t a, int64_t b) {
      return std::llabs(a - value) < std::llabs(b - value);
    });
    int budget = options.max_predictions;
    for (int64_t c : candidates) {
      if (c < lo || c > hi) continue;
      if (budget-- <= 0) break;
      if (feasible(c)) {
        out.push_back(c);
        break;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [value](int64_t a, int64_t b) {
    return std::llabs(a - value) < std::llabs(b - value);
  });
  return out;
}

template <typename T>
std::string OrList(const std::vector<T>& values) {
  return absl::StrJoin(values, " or ");
}

}  // namespace

bool IsFeasible(const Scenario& scenario, const Catalog& catalog, const Profile& profile) {
  absl::StatusOr<Prediction> p = Predict(scenario, catalog, profile);
  return p.ok() && p->memory.fits;
}

NearestFeasible FindNearestFeasible(const Scenario& scenario, const Catalog& catalog,
                                    const Profile& profile, const FeasibilityOptions& options) {
  NearestFeasible out;
  const Parallelism& p = scenario.parallelism;
  const int gpus = scenario.cluster.num_gpus;
  const int64_t batch = scenario.workload.global_batch;
  if (gpus < 1 || batch < 1 || scenario.workload.seq_len < 1) return out;
  const int64_t fixed = int64_t{std::max(p.tp, 1)} * std::max(p.pp, 1) * std::max(p.cp, 1);

  std::set<int64_t> gpu_extra;
  for (int64_t m : {int64_t{8}, int64_t{64}, int64_t{256}, fixed * std::max(p.dp, 1)}) {
    AddMultiples(gpus, m, &gpu_extra);
  }
  for (int64_t pow2 = 1; pow2 <= int64_t{4} * gpus; pow2 *= 2) {
    if (pow2 * 2 >= gpus) gpu_extra.insert(pow2);
  }
  // GPU counts: densely down to half and up to one and a half times the count, at most
  // kMaxGpuSteps either way (most counts fail on divisibility before the planner runs).
  constexpr int kMaxGpuSteps = 512;
  FeasibilityOptions gpu_options = options;
  gpu_options.near_steps = std::max(options.near_steps, std::min(gpus / 2, kMaxGpuSteps));
  gpu_options.max_predictions = std::max(options.max_predictions, gpu_options.near_steps + 16);
  for (int64_t g : Search(gpus, 1, kMaxGpus, gpu_extra, gpu_options, [&](int64_t g) {
         Scenario s = scenario;
         s.cluster.num_gpus = static_cast<int>(g);
         return IsFeasible(s, catalog, profile);
       })) {
    out.gpu_counts.push_back(static_cast<int>(g));
  }

  std::set<int64_t> batch_extra;
  for (int64_t m : {int64_t{8}, int64_t{64}, int64_t{128}, int64_t{256}, int64_t{512},
                    int64_t{1024}, int64_t{std::max(p.dp, 0)} * std::max(p.micro_batch, 1)}) {
    AddMultiples(batch, m, &batch_extra);
  }
  out.global_batches = Search(batch, 1, kMaxGlobalBatch, batch_extra, options, [&](int64_t b) {
    Scenario s = scenario;
    s.workload.global_batch = b;
    return IsFeasible(s, catalog, profile);
  });

  if (p.micro_batch > 0) {
    for (int64_t mb :
         Search(p.micro_batch, 1, std::min<int64_t>(batch, 1024), {}, options, [&](int64_t mb) {
           Scenario s = scenario;
           s.parallelism.micro_batch = static_cast<int>(mb);
           return IsFeasible(s, catalog, profile);
         })) {
      out.micro_batches.push_back(static_cast<int>(mb));
    }
  }
  return out;
}

std::string DescribeNearest(const NearestFeasible& nearest, const Scenario& scenario) {
  if (nearest.empty()) return "";
  std::vector<std::string> parts;
  if (!nearest.gpu_counts.empty()) {
    parts.push_back(absl::StrCat(OrList(nearest.gpu_counts), " GPUs (global batch ",
                                 scenario.workload.global_batch, ")"));
  }
  if (!nearest.global_batches.empty()) {
    parts.push_back(absl::StrCat("global batch ", OrList(nearest.global_batches), " (",
                                 scenario.cluster.num_gpus, " GPUs)"));
  }
  if (!nearest.micro_batches.empty()) {
    parts.push_back(absl::StrCat("micro batch ", OrList(nearest.micro_batches)));
  }
  return absl::StrCat("Nearest that work: ", absl::StrJoin(parts, "; "), ".");
}

std::optional<Scenario> AtNearestBatch(const Scenario& asked, const NearestFeasible& nearest,
                                       absl::string_view path) {
  const int64_t want = asked.workload.global_batch;
  // A batch outside its range is refused as asked, never moved into it; and where a micro batch
  // works at the asked batch, the asked micro batch is what to change, not the batch.
  if (nearest.global_batches.empty() || !nearest.micro_batches.empty() || want < 1 ||
      want > kMaxGlobalBatch) {
    return std::nullopt;
  }
  const int64_t got = nearest.global_batches.front();  // nearest first
  if (std::llabs(got - want) > kBatchRoundShare * want) return std::nullopt;
  Scenario s = asked;
  s.workload.global_batch = got;
  std::string also;
  if (nearest.global_batches.size() > 1) {
    also = absl::StrCat(" (", nearest.global_batches[1], " also does)");
  }
  s.input_warnings.push_back(absl::StrCat(
      path, ".workload.global_batch: ", want, " sequences split evenly over no layout of ",
      asked.cluster.num_gpus, " GPUs here; predicted for ", got,
      ", the nearest global batch that does", also, ": name it to be sure"));
  return s;
}

}  // namespace scalecast
