#include "jobs/sweep_job.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/uncertainty.h"

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

absl::StatusOr<LayoutSpace> SweepLayouts(const SweepCount& count, const SweepPlan& plan,
                                         const SweepBounds& bounds, const Catalog& catalog,
                                         std::map<std::string, int64_t>* rejected, size_t held) {
  LayoutSpace layouts =
      EnumerateLayouts(count.resolved.scenario, &count.resolved.stack, catalog, rejected);
  const int64_t bytes = static_cast<int64_t>(held + layouts.bytes());
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

std::vector<std::pair<size_t, size_t>> SweepChunks(size_t n, size_t workers) {
  const size_t chunks = std::max<size_t>(1, std::min<size_t>(workers, n / 64 + 1));
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t k = 0; k < chunks; ++k) out.emplace_back(n * k / chunks, n * (k + 1) / chunks);
  return out;
}

CountSearch StartCountSearch(const SweepCount& count, const Profile& profile,
                             const std::map<std::string, int64_t>& rejected) {
  const ResolvedScenario& r = count.resolved;
  CountSearch out;
  out.model =
      std::make_shared<const StepModel>(r.scenario, *r.accelerator, *r.framework, r.stack, profile);
  for (const auto& [reason, n] : rejected) {
    out.seed.infeasible_reasons[reason] += n;
    out.seed.infeasible_count += n;
    out.seed.evaluated_count += n;
  }
  return out;
}

PlanResult EvaluateChunk(const StepModel& model, const LayoutSpace& layouts, size_t begin,
                         size_t end, PlanOptions options,
                         const std::function<bool(int64_t, bool)>& progress) {
  int64_t reported = 0;
  options.progress_every = 256;
  options.progress = [&](int64_t done, int64_t) {
    const int64_t delta = done - reported;
    reported = done;
    return progress(delta, false);
  };
  PlanResult part;
  EvaluateLayouts(model, layouts, begin, end, options, &part);
  progress(part.evaluated_count - reported, true);
  return part;
}

void FinishCountSearch(const SweepCount& count, const StepModel& model, const Profile& profile,
                       PlanResult* result) {
  for (Prediction& p : result->top) {
    AttachUncertainty(count.resolved.scenario, model.accelerator(), profile, &p);
  }
}

}  // namespace scalecast
