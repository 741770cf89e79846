// Plan: the planning question end to end. For each candidate accelerator and GPU count (given,
// or searched), the best layout and global batch (the planner's, model/planner.h), the wall clock
// once failures and checkpoints are paid for (model/goodput.h), GPU-hours, energy and cost, and
// whether it meets the constraints; then the options ranked, the Pareto front of days against
// cost, the smallest cluster that meets the constraints and the marginal cost of each doubling.
//
// The search is exact and pruned by bounds. A layout's compute-only time (its slowest stage's
// forward, backward and recompute per micro-batch, no communication, no bubble) bounds its
// tokens/s per GPU from above, and that bound depends only on the model-parallel part of the
// layout (tp, pp, vpp, cp, micro batch, recompute, ep, etp), not on dp, sharding, the batch or
// the GPU count; it is computed once per part and accelerator. Within a GPU count, layouts are
// visited best bound first and the visit stops when the bound cannot beat the best found. With
// top_k > 0 a GPU count whose bound cannot enter the top k, cannot be on the Pareto front and
// cannot be the smallest cluster meeting the constraints is skipped whole.
#ifndef SCALECAST_JOBS_PLAN_JOB_H_
#define SCALECAST_JOBS_PLAN_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jobs/job.h"
#include "model/catalog.h"
#include "model/goodput.h"
#include "model/profile.h"
#include "model/types.h"

namespace scalecast {

// GPU counts searched when a candidate gives none: powers of two from 8, and multiples of the
// accelerator's NVLink domain where it is not a power of two (GB200 NVL72: 72, 144, ...), up to
// max_gpus or this.
inline constexpr int kPlanMaxSearchedGpus = 16384;
inline constexpr int kPlanMinSearchedGpus = 8;
// Batch sizes tried when the request leaves global_batch 0: the largest number of sequences
// within max_global_batch_tokens, then the powers of two below it down to a quarter of it.
inline constexpr int kPlanBatchHalvings = 2;
// Llama 2 trained with "a global batch-size of 4M tokens" (arXiv 2307.09288 Sec 2.2): the limit
// when the request sets neither a batch nor max_global_batch_tokens.
inline constexpr int64_t kPlanDefaultMaxBatchTokens = int64_t{4} << 20;
// Power usage effectiveness when the request leaves pue 0: 1.1, Google's published fleet PUE
// ("The most current PUE that Google published was 1.1, for the second quarter of 2021", CNBC,
// 2022-04-13); the Uptime Institute's 2021 survey average of large data centers is 1.57.
inline constexpr double kPlanDefaultPue = 1.1;

struct PlanCandidateSpec {
  std::string accelerator;  // a catalog or registered id (in `catalog`), or a new part's name
  AcceleratorSpec accelerator_spec;  // set fields override `accelerator`'s (model/catalog.h)
  double price_per_gpu_hour = 0;     // 0 = cost not computed for it
  std::vector<int> gpu_counts;       // empty = searched
  Parallelism layout;                // fields set are fixed
  int gpus_per_node = 0;
  double inter_node_gbps_per_gpu = 0;
  double inter_node_latency_us = 0;  // 0 = InfiniBand's (Cluster::inter_node_latency_us)
};

struct PlanConstraintsSpec {
  double deadline_days = 0;  // 0 = none, as each below
  double budget = 0;
  int max_gpus = 0;
  double max_power_kw = 0;  // facility power: the GPUs' draw x PUE
  int64_t max_global_batch_tokens = 0;
};

struct PlanJobRequest {
  Scenario base;  // workload (global_batch 0 = chosen), framework, stack, calibration, label
  double tokens = 0;
  std::vector<PlanCandidateSpec> candidates;
  PlanConstraintsSpec constraints;
  ReliabilityOptions reliability;
  double electricity_price_per_kwh = 0;
  double pue = 0;           // 0 = kPlanDefaultPue
  int top_k = 0;            // 0 = every GPU count's option
  bool exhaustive = false;  // no pruning (for tests and benchmarks: the same answer, slower)
  // Whether the caller chose base.cluster.hbm_headroom (else the default used is named in the
  // warnings). Every layout leaves that share of HBM free (model/planner.h, kDefaultHbmHeadroom).
  bool hbm_headroom_given = false;
};

struct PlanJobOption {
  int candidate = 0;  // index into the request's candidates
  std::string accelerator;
  int num_gpus = 0;
  Scenario scenario;  // resolved, with the chosen batch; the layout is the prediction's
  Prediction prediction;
  Goodput goodput;
  double days = 0;  // wall clock: tokens / tokens_per_s / goodput
  double gpu_hours = 0;
  double energy_mwh = 0;
  double cost = 0;  // GPU-hours x price + energy x electricity price
  double facility_kw = 0;
  bool meets_constraints = false;
  std::vector<std::string> violations;  // why not, in words
  bool pareto = false;
  bool top = false;       // among the top k (every option when top_k = 0)
  bool smallest = false;  // the smallest cluster of its candidate meeting the constraints
};

// Going from `from_gpus` to twice as many on one candidate.
struct PlanDoubling {
  int candidate = 0;
  std::string accelerator;
  int from_gpus = 0, to_gpus = 0;
  double speedup = 0;     // days(from) / days(to); 2 = perfect
  double extra_cost = 0;  // cost(to) - cost(from) (GPU-hours when unpriced)
  double cost_per_day_saved = 0;
};

struct PlanJobResult {
  std::vector<PlanJobOption> options;  // ranked: meeting the constraints first, then cost, days
  std::vector<PlanDoubling> doublings;
  bool ranked_by_cost = false;        // false: some candidate has no price, GPU-hours rank instead
  std::vector<std::string> warnings;  // defaults used (reliability, PUE, batch), with sources
  // Search statistics.
  int64_t gpu_counts_total = 0, gpu_counts_evaluated = 0;
  int64_t layouts_total = 0, layouts_evaluated = 0;
  int64_t bound_violations = 0;  // evaluations above their bound: 0 unless the bound is wrong
};

// The work of the Plan call. Errors name the request's field path ("candidates[1].accelerator:
// ..."). Cancelled through `control` (CANCELLED); progress is (GPU counts done, total).
absl::StatusOr<PlanJobResult> RunPlan(const PlanJobRequest& request, const Catalog& catalog,
                                      const Profile& profile, const JobControl& control);

// The GPU counts searched for an accelerator up to `max_gpus`.
std::vector<int> SearchedGpuCounts(const Accelerator& acc, int gpus_per_node, int max_gpus);

}  // namespace scalecast

#endif  // SCALECAST_JOBS_PLAN_JOB_H_
