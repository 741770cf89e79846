#include "jobs/sweep_job.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace scalecast {

absl::StatusOr<SweepPlan> PlanSweep(const SweepAsk& ask, const SweepBounds& bounds,
                                    const Catalog& catalog) {
  std::vector<int> counts = ask.gpu_counts;
  if (counts.empty()) counts.push_back(ask.base.cluster.num_gpus);
  const int max_counts = ask.max_gpu_counts > 0
                             ? std::min(ask.max_gpu_counts, bounds.max_gpu_counts)
                             : bounds.max_gpu_counts;
  if (static_cast<int>(counts.size()) > max_counts) {
    return absl::ResourceExhaustedError(
        absl::StrCat("gpu_counts: ", counts.size(), " GPU counts, over the limit of ", max_counts));
  }
  std::set<int> seen;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 1 || counts[i] > kMaxGpus) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu_counts[", i, "]: ", counts[i], " is out of range [1, ", kMaxGpus, "]"));
    }
    if (!seen.insert(counts[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu_counts[", i, "]: ", counts[i], " is repeated"));
    }
  }
  if (ask.top_k < 0 || ask.top_k > bounds.max_top_k) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k: ", ask.top_k, " is out of range [0, ", bounds.max_top_k, "]"));
  }
  if (ask.max_layouts < 0 || ask.max_gpu_counts < 0) {
    return absl::InvalidArgumentError("limits: must be >= 0");
  }
  SweepPlan plan;
  plan.options.objective = ask.objective;
  plan.options.top_k = ask.top_k > 0 ? ask.top_k : 5;
  plan.options.max_layouts =
      ask.max_layouts > 0 ? std::min(ask.max_layouts, bounds.max_layouts) : bounds.max_layouts;
  for (int g : counts) {
    Scenario s = ask.base;
    s.cluster.num_gpus = g;
    absl::StatusOr<ResolvedScenario> resolved = Resolve(s, catalog, "base");
    if (!resolved.ok()) return resolved.status();
    plan.counts.push_back(SweepCount{g, *std::move(resolved)});
  }
  return plan;
}

absl::StatusOr<std::vector<Parallelism>> SweepLayouts(const SweepCount& count,
                                                      const SweepPlan& plan,
                                                      const SweepBounds& bounds,
                                                      const Catalog& catalog,
                                                      std::map<std::string, int64_t>* rejected) {
  std::vector<Parallelism> layouts = EnumerateLayouts(count.resolved.scenario, catalog, rejected);
  const int64_t bytes = static_cast<int64_t>(layouts.capacity() * sizeof(Parallelism));
  if (bytes > bounds.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the search for ", count.gpus,
                                                     " GPUs holds over ", bounds.max_bytes,
                                                     " bytes of layouts: fix some layout fields"));
  }
  if (static_cast<int64_t>(layouts.size()) > plan.options.max_layouts) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the search for ", count.gpus, " GPUs has ", layouts.size(), " layouts, over the limit of ",
        plan.options.max_layouts, ": fix some layout fields or raise limits.max_layouts"));
  }
  return layouts;
}

}  // namespace scalecast
