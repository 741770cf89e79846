#include "jobs/plan_job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/field_rules.h"
#include "model/field_rules_gen.h"
#include "model/hardware.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/status_macros.h"
#include "model/step.h"
#include "model/uncertainty.h"

namespace scalecast {
namespace {

constexpr int kMaxCandidates = 16;
constexpr int kMaxGpuCountsPerCandidate = 64;
// Layouts held for one GPU count (all batch sizes together): beyond it, fix some layout fields.
constexpr size_t kMaxLayoutsPerCount = 2'000'000;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The model-parallel part of a layout: what its compute-only time per micro-batch depends on.
struct PartKey {
  int tp, pp, vpp, cp, mb, recompute, recompute_layers, ep, etp, first, last;
  unsigned modules;
  bool sp, emb, loss;
  bool operator==(const PartKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const PartKey& k) {
    return H::combine(std::move(h), k.tp, k.pp, k.vpp, k.cp, k.mb, k.recompute, k.recompute_layers,
                      k.ep, k.etp, k.first, k.last, k.modules, k.sp, k.emb, k.loss);
  }
};
PartKey PartOf(const Parallelism& p) {
  return PartKey{p.tp,
                 p.pp,
                 std::max(1, p.vpp),
                 p.cp,
                 p.micro_batch,
                 static_cast<int>(p.recompute),
                 p.recompute_layers,
                 p.ep,
                 p.etp,
                 p.first_stage_layers,
                 p.last_stage_layers,
                 p.recompute_modules,
                 p.sequence_parallel.value_or(false) && p.tp > 1,
                 p.embedding_in_split,
                 p.loss_in_split};
}

// A part's time per micro-batch on its slowest stage, from a prediction of any layout with that
// part: forward, backward and recompute, and the tensor-, context- and expert-parallel
// communication that sticks out of them (StepModel's t_mb). None of it depends on dp, the
// sharding, the batch or the GPU count; the step repeats it once per micro-batch and once more
// per bubble slot.
double ComputePerMicroBatch(const Prediction& pred, const Scenario& s) {
  const Parallelism& p = pred.layout;
  const double mbs =
      static_cast<double>(s.workload.global_batch / (static_cast<int64_t>(p.dp) * p.micro_batch));
  double t = pred.time.compute_s + pred.time.recompute_s;
  using field_rules::CommKind, field_rules::CommKindName;
  for (const CommTime& c : pred.time.comm) {
    if (c.kind == CommKindName(CommKind::kTp) || c.kind == CommKindName(CommKind::kCp) ||
        c.kind == CommKindName(CommKind::kEpAlltoall)) {
      t += c.exposed_s;
    }
  }
  return t / mbs;
}

// Tokens/s per GPU a layout cannot exceed: step >= (micro-batches + (pp - 1) / vpp) x t_mb
// (StepModel::Evaluate: step = micro-batches x t_mb + bubble + exposed pipeline and data-parallel
// communication + optimizer, bubble = (pp - 1) / vpp x (t_mb + p2p)).
double Bound(double per_mb, const Parallelism& p, const Scenario& s) {
  if (!(per_mb > 0)) return kInf;
  const int g = s.cluster.num_gpus;
  const int dp = g / (p.tp * p.pp * p.cp);
  const double mbs =
      static_cast<double>(s.workload.global_batch / (static_cast<int64_t>(dp) * p.micro_batch));
  const double slots = mbs + (p.pp > 1 ? (p.pp - 1.0) / std::max(1, p.vpp) : 0.0);
  return static_cast<double>(s.workload.global_batch) * s.workload.seq_len / g / (per_mb * slots) *
         (1 + kBoundSlack);
}

// A row: one candidate at one GPU count.
struct Row {
  int candidate = 0;
  int gpus = 0;
  Goodput goodput;
  double tps_bound = kInf;  // tokens/s of the whole cluster, upper bound
  bool has_layout = true;   // some layout fits (known after phase 1 or the search)
  bool evaluated = false;
  bool found = false;
  PlanJobOption option;
  std::string why_none;  // no option: why
};

struct CandidateState {
  std::string path;         // "candidates[1]": its cluster fields
  std::string layout_path;  // "candidates[1].layout"
  const Accelerator* acc = nullptr;
  const System* system = nullptr;  // the system the candidate's name stands for, if any
  std::shared_ptr<const Accelerator> described;  // what acc points to for a described part
  absl::flat_hash_map<PartKey, double> bounds;   // compute s per micro-batch
};

bool RowBetter(const Prediction& a, int64_t batch_a, const Prediction& b, int64_t batch_b) {
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  if (batch_a != batch_b) return batch_a > batch_b;
  return Better(a, b, Objective::kThroughput);
}

// Where the plan request puts a candidate's scenario: the workload, framework and stack at the
// request's top, the cluster's fields in the candidate, the layout in its layout. The plan checks
// the cluster fields held elsewhere itself: hbm_headroom (at the top) and num_gpus (gpu_counts).
ScenarioPaths CandidatePaths(const CandidateState& st) {
  return {.top = "",
          .workload = {"workload", ""},
          .model = {"workload", ".model"},
          .cluster = {st.path, ""},
          .parallelism = {st.layout_path, ""}};
}

class Planner {
 public:
  Planner(const PlanJobRequest& req, const Catalog& catalog, const Profile& profile,
          const JobControl& control)
      : req_(req), catalog_(catalog), profile_(profile), control_(control) {}

  absl::StatusOr<PlanJobResult> Run() {
    if (absl::Status s = Prepare(); !s.ok()) return s;
    const bool prune_rows = req_.top_k > 0 && !req_.exhaustive;
    if (prune_rows) {
      for (size_t i = 0; i < rows_.size(); ++i) {
        if (absl::Status s = BoundRow(&rows_[i]); !s.ok()) return s;
      }
    }
    // Visit order: the best possible rank first, so that the k-th, the front and the smallest
    // cluster settle early.
    std::vector<size_t> order(rows_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (prune_rows) {
      std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
        return LowerKey(rows_[a]) < LowerKey(rows_[b]);
      });
    }
    int64_t done = 0;
    for (size_t i : order) {
      if (control_.Cancelled()) return absl::CancelledError("the plan was cancelled");
      Row& row = rows_[i];
      if (!row.has_layout) {
        row.evaluated = true;  // enumerated in phase 1: nothing fits
      } else if (!prune_rows || !Skippable(row)) {
        if (absl::Status s = SearchRow(&row); !s.ok()) return s;
        row.evaluated = true;
        ++result_.gpu_counts_evaluated;
        if (row.found) Finish(&row);
      }
      control_.Progress(++done, static_cast<int64_t>(rows_.size()));
    }
    Summarise();
    return std::move(result_);
  }

 private:
  absl::Status Prepare() {
    RETURN_IF_ERROR(CheckRequest());
    pue_ = req_.pue > 0 ? req_.pue : kPlanDefaultPue;
    RETURN_IF_ERROR(ChooseBatches());
    ranked_by_cost_ = true;
    for (size_t i = 0; i < req_.candidates.size(); ++i) {
      RETURN_IF_ERROR(AddCandidate(static_cast<int>(i)));
    }
    result_.gpu_counts_total = static_cast<int64_t>(rows_.size());
    result_.ranked_by_cost = ranked_by_cost_;
    AddDefaultsWarnings();
    return absl::OkStatus();
  }

  // The request's own fields: the proto's ranges (PlanRequest's options), then what one interval
  // cannot say, and hbm_headroom (Cluster's, at the request's top).
  absl::Status CheckRequest() const {
    RETURN_IF_ERROR(
        CheckFieldRanges([this](auto&& f) { field_rules::VisitPlanRequest(req_, f); }, "", ""));
    if (req_.candidates.empty()) {
      return absl::InvalidArgumentError("candidates: at least one accelerator is needed");
    }
    if (req_.candidates.size() > kMaxCandidates) {
      return absl::InvalidArgumentError(absl::StrCat("candidates: ", req_.candidates.size(),
                                                     " is over the limit of ", kMaxCandidates));
    }
    const PlanConstraintsSpec& c = req_.constraints;
    if (c.max_gpus > kMaxGpus) {
      return absl::InvalidArgumentError(absl::StrCat("constraints.max_gpus: ", c.max_gpus,
                                                     " is out of range [0, ", kMaxGpus, "]"));
    }
    if (req_.pue != 0 && req_.pue < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("pue: ", req_.pue, " is out of range [1, 3] (0 = the default)"));
    }
    return CheckFieldRange(field_rules::kClusterHbmHeadroom, req_.base.cluster.hbm_headroom, "");
  }

  // Candidate i: its fields checked, its part resolved, its GPU counts (given or searched) as
  // rows. Its scenario must resolve at some count: a bad model or layout is an error up front
  // (the first count's), not a plan with no options.
  absl::Status AddCandidate(int i) {
    const PlanCandidateSpec& spec = req_.candidates[i];
    CandidateState st;
    st.path = absl::StrCat("candidates[", i, "]");
    st.layout_path = st.path + ".layout";
    RETURN_IF_ERROR(CheckCandidateFields(spec, st.path));
    if (spec.price_per_gpu_hour <= 0) ranked_by_cost_ = false;
    RETURN_IF_ERROR(ResolvePart(spec, &st));
    ASSIGN_OR_RETURN(const std::vector<int> counts, GpuCounts(spec, st));
    states_.push_back(std::move(st));  // the part Resolve names (an error drops the planner)
    absl::Status first = absl::OkStatus();
    for (int g : counts) {
      absl::StatusOr<Scenario> s = Resolve(i, g, batches_.front());
      if (s.ok()) {
        first = absl::OkStatus();
        break;
      }
      if (first.ok()) first = s.status();
    }
    RETURN_IF_ERROR(first);
    for (int g : counts) {
      Row r;
      r.candidate = i;
      r.gpus = g;
      r.goodput = ComputeGoodput(g, checkpoint_bytes_, req_.reliability);
      rows_.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

  // A candidate's own fields (PlanCandidate's options) and gpus_per_node, which the count search
  // reads before any scenario resolves: the proto's ranges, named under the candidate. Its other
  // cluster fields are Cluster's, which Resolve checks under the same path (CandidatePaths).
  static absl::Status CheckCandidateFields(const PlanCandidateSpec& spec, const std::string& path) {
    RETURN_IF_ERROR(CheckFieldRanges(
        [&spec](auto&& f) { field_rules::VisitPlanCandidate(spec, f); }, path, ""));
    return CheckFieldRange(field_rules::kClusterGpusPerNode, spec.gpus_per_node, path);
  }

  // The catalog part a candidate names (a shared name's usual part, said in the warnings), or
  // the part it describes: the one each scenario's resolution builds (model/predictor.cc), built
  // here once for the GPU counts its NVLink domain gives.
  absl::Status ResolvePart(const PlanCandidateSpec& spec, CandidateState* st) {
    if (spec.accelerator_spec.empty()) {
      const std::string field = st->path + ".accelerator";
      ASSIGN_OR_RETURN(NamedPart named, catalog_.ResolveAccelerator(spec.accelerator, field));
      if (!named.note.empty()) result_.warnings.push_back(absl::StrCat(field, ": ", named.note));
      st->acc = named.accelerator;
      st->system = named.system;
      return absl::OkStatus();
    }
    const std::string spec_path = st->path + ".accelerator_spec";
    std::string nearest;
    ASSIGN_OR_RETURN(const Accelerator* base, SpecBase(catalog_, spec.accelerator,
                                                       spec.accelerator_spec, spec_path, &nearest));
    ASSIGN_OR_RETURN(Accelerator a, DescribeAccelerator(*base, spec.accelerator_spec, spec_path));
    st->described = std::make_shared<const Accelerator>(std::move(a));
    st->acc = st->described.get();
    return absl::OkStatus();
  }

  // A candidate's node size: its own, else its system's (0: the part's usual node).
  static int NodeSize(const PlanCandidateSpec& spec, const CandidateState& st) {
    if (spec.gpus_per_node != 0 || st.system == nullptr) return spec.gpus_per_node;
    return st.system->gpus_per_node;
  }

  // The counts a candidate gives (each in range, none repeated), or the searched ones up to
  // max_gpus; ascending.
  absl::StatusOr<std::vector<int>> GpuCounts(const PlanCandidateSpec& spec,
                                             const CandidateState& st) const {
    std::vector<int> counts = spec.gpu_counts;
    if (counts.size() > kMaxGpuCountsPerCandidate) {
      return absl::InvalidArgumentError(absl::StrCat(st.path, ".gpu_counts: ", counts.size(),
                                                     " counts, over the limit of ",
                                                     kMaxGpuCountsPerCandidate));
    }
    std::set<int> seen;
    for (size_t j = 0; j < counts.size(); ++j) {
      const std::string field = absl::StrCat(st.path, ".gpu_counts[", j, "]: ", counts[j]);
      if (counts[j] < 1 || counts[j] > kMaxGpus) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, " is out of range [1, ", kMaxGpus, "]"));
      }
      if (!seen.insert(counts[j]).second) {
        return absl::InvalidArgumentError(absl::StrCat(field, " is repeated"));
      }
    }
    if (counts.empty()) {
      const int most = req_.constraints.max_gpus;
      counts =
          SearchedGpuCounts(*st.acc, NodeSize(spec, st), most > 0 ? most : kPlanMaxSearchedGpus);
    }
    std::sort(counts.begin(), counts.end());
    return counts;
  }

  // The defaults the plan used where the request gave nothing, named with their sources.
  void AddDefaultsWarnings() {
    for (std::string& w : DescribeReliabilityDefaults(req_.reliability)) {
      result_.warnings.push_back(std::move(w));
    }
    if (!req_.hbm_headroom_given) {
      result_.warnings.push_back(absl::StrFormat(
          "hbm_headroom: %g (every layout leaves this share of HBM free for what frameworks hold "
          "beyond the memory model: allocator fragmentation, NCCL buffers, CUDA graphs; "
          "model/planner.h)",
          req_.base.cluster.hbm_headroom.value_or(kDefaultHbmHeadroom)));
    }
    if (req_.pue <= 0) {
      result_.warnings.push_back(absl::StrFormat(
          "pue: %.2f (Google's published fleet PUE, Q2 2021; the Uptime Institute's 2021 "
          "average is 1.57); energy is the GPUs' modelled draw x PUE, hosts and network not "
          "modelled",
          kPlanDefaultPue));
    }
    if (!ranked_by_cost_) {
      result_.warnings.push_back(
          "some candidate has no price_per_gpu_hour: options are ranked by GPU-hours, and "
          "cost is GPU-hours x price where a price is given (energy cost added when "
          "electricity_price_per_kwh is set)");
    }
  }

  absl::Status ChooseBatches() {
    const Workload& w = req_.base.workload;
    if (w.seq_len <= 0 || w.seq_len > kMaxSeqLen) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload.seq_len: ", w.seq_len, " is out of range [1, ", kMaxSeqLen, "]"));
    }
    const int64_t max_tokens = req_.constraints.max_global_batch_tokens;
    if (w.global_batch > 0) {
      if (max_tokens > 0 && w.global_batch * w.seq_len > max_tokens) {
        return absl::InvalidArgumentError(
            absl::StrCat("workload.global_batch: ", w.global_batch, " sequences of ", w.seq_len,
                         " tokens exceed constraints.max_global_batch_tokens ", max_tokens));
      }
      batches_ = {w.global_batch};
      return absl::OkStatus();
    }
    if (w.global_batch < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload.global_batch: ", w.global_batch, " must be >= 0"));
    }
    const int64_t limit = max_tokens > 0 ? max_tokens : kPlanDefaultMaxBatchTokens;
    const int64_t most = std::min<int64_t>(limit / w.seq_len, kMaxGlobalBatch);
    if (most < 1) {
      return absl::InvalidArgumentError(absl::StrCat("constraints.max_global_batch_tokens: ", limit,
                                                     " is less than one sequence of ", w.seq_len,
                                                     " tokens"));
    }
    batches_ = {most};
    int64_t p = 1;
    while (p * 2 < most) p *= 2;  // the largest power of two below `most`
    for (; p >= 1 && p * (int64_t{1} << kPlanBatchHalvings) >= most; p /= 2) {
      if (p != most) batches_.push_back(p);
    }
    if (max_tokens <= 0) {
      result_.warnings.push_back(absl::StrFormat(
          "constraints.max_global_batch_tokens: %d (Llama 2's 4M-token batch, arXiv 2307.09288); "
          "the batch is chosen among %s sequences",
          limit, absl::StrJoin(batches_, ", ")));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Scenario> Resolve(int candidate, int gpus, int64_t batch) {
    ASSIGN_OR_RETURN(ResolvedScenario r, ResolveCandidate(candidate, gpus, batch));
    return std::move(r.scenario);
  }

  // The candidate's scenario at that size and batch, resolved with its parts (the stack as the
  // request's framework and version were read, notes included).
  absl::StatusOr<ResolvedScenario> ResolveCandidate(int candidate, int gpus, int64_t batch) {
    const PlanCandidateSpec& spec = req_.candidates[candidate];
    const CandidateState& st = states_[candidate];
    ResolvedScenario r;
    Scenario& s = r.scenario;
    s = req_.base;
    s.workload.global_batch = batch;
    // The part the candidate's name was resolved to (a shared name's usual part, said once in
    // the result's warnings), or the described part's name.
    s.cluster.accelerator = spec.accelerator_spec.empty() ? st.acc->id : spec.accelerator;
    s.cluster.accelerator_spec = spec.accelerator_spec;
    s.cluster.described.reset();
    s.cluster.num_gpus = gpus;
    s.cluster.gpus_per_node = spec.gpus_per_node;
    s.cluster.inter_node_gbps_per_gpu = spec.inter_node_gbps_per_gpu;
    if (st.system != nullptr) ApplySystem(*st.system, &s.cluster);
    s.cluster.inter_node_latency_us = spec.inter_node_latency_us;
    s.parallelism = spec.layout;
    RETURN_IF_ERROR(ResolveInPlace(catalog_, CandidatePaths(st), &r));
    if (checkpoint_bytes_ == 0) checkpoint_bytes_ = CheckpointBytes(s.workload.model);
    return r;
  }

  // A row's layouts grouped by batch and model-parallel part: a bucket's layouts share the bound
  // (they differ in sharding only, dp being fixed by the row and the part).
  struct Bucket {
    double bound = kInf;  // tokens/s per GPU; +inf while the part is not bounded yet
    int batch = 0;        // index into the space's models
    size_t size = 0;      // layouts in it
    std::vector<int> layouts;
  };
  struct RowSpace {
    std::vector<Scenario> scenarios;
    std::vector<std::unique_ptr<StepModel>> models;
    std::vector<LayoutSpace> layouts;
    std::vector<LayerCache> caches;
    std::vector<Bucket> buckets;
    std::vector<int> heap;  // bucket indices, a max-heap on bound
    std::map<std::string, int64_t> reasons;
  };
  static auto HeapLess(const RowSpace& space) {
    return [&space](int a, int b) {
      const Bucket &x = space.buckets[a], &y = space.buckets[b];
      if (x.bound != y.bound) return x.bound < y.bound;
      if (x.batch != y.batch) return x.batch > y.batch;  // larger batch first
      return a > b;
    };
  }

  // Enumerates a row's layouts into buckets (no memory check yet: that happens on the visit).
  absl::Status Space(const Row& row, RowSpace* space) {
    const CandidateState& st = states_[row.candidate];
    size_t held = 0;
    for (size_t b = 0; b < batches_.size(); ++b) {
      absl::StatusOr<ResolvedScenario> r = ResolveCandidate(row.candidate, row.gpus, batches_[b]);
      if (!r.ok()) {
        ++space->reasons[std::string(r.status().message())];
        continue;
      }
      Scenario* s = &r->scenario;
      auto model =
          std::make_unique<StepModel>(*s, *r->accelerator, *r->framework, r->stack, profile_);
      if (!model->status().ok()) return model->status();
      LayoutSpace layouts =
          EnumerateLayouts(*s, &r->stack, catalog_, &space->reasons, PartialSteps::kEach);
      held += layouts.size();
      if (held > kMaxLayoutsPerCount) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "candidates[", row.candidate, "]: ", held, " layouts at ", row.gpus,
            " GPUs, over the limit of ", kMaxLayoutsPerCount, ": fix some layout fields"));
      }
      result_.layouts_total += static_cast<int64_t>(layouts.size());
      const int bi = static_cast<int>(space->models.size());
      // Bucket ids by counting sort: one hash lookup per layout, no per-bucket allocation churn.
      absl::flat_hash_map<PartKey, int> index;
      index.reserve(layouts.size() / 4 + 16);
      std::vector<int> id(layouts.size());
      const size_t first = space->buckets.size();
      auto listed = layouts.begin();
      for (size_t j = 0; j < layouts.size(); ++j, ++listed) {
        const Parallelism layout = *listed;
        const PartKey key = PartOf(layout);
        auto [it, inserted] = index.try_emplace(key, static_cast<int>(space->buckets.size()));
        if (inserted) {
          Bucket bucket;
          bucket.batch = bi;
          auto known = st.bounds.find(key);
          if (known != st.bounds.end()) bucket.bound = Bound(known->second, layout, *s);
          space->buckets.push_back(std::move(bucket));
        }
        id[j] = it->second;
        ++space->buckets[it->second].size;
      }
      for (size_t k = first; k < space->buckets.size(); ++k) {
        space->buckets[k].layouts.reserve(space->buckets[k].size);
      }
      for (size_t j = 0; j < layouts.size(); ++j) {
        space->buckets[id[j]].layouts.push_back(static_cast<int>(j));
      }
      space->scenarios.push_back(std::move(*s));
      space->models.push_back(std::move(model));
      space->layouts.push_back(std::move(layouts));
      if (control_.Cancelled()) return absl::CancelledError("the plan was cancelled");
    }
    space->caches.resize(space->models.size());
    space->heap.resize(space->buckets.size());
    for (size_t i = 0; i < space->heap.size(); ++i) space->heap[i] = static_cast<int>(i);
    std::make_heap(space->heap.begin(), space->heap.end(), HeapLess(*space));
    return absl::OkStatus();
  }

  // A layout worth a prediction, with its memory.
  struct Form {
    Parallelism layout;
    MemoryBreakdown mem;
    bool rung = false;  // a module set of the ladder: a part of its own, bounded by the layout's
  };
  // The forms of layout `p` worth a prediction: `p` itself where it fits (and is not a partial
  // recompute a lighter step makes pointless); for a no-recompute layout that does not fit, the
  // module sets of the ladder that do, the lightest of each chain (ClimbModuleLadder). Recompute
  // only adds time, so the no-recompute part's bound bounds them too. The framework's own
  // selective recompute is a layout of its own part.
  static std::vector<Form> Fitting(const StepModel& model, const LayoutSpace& layouts,
                                   const Parallelism& p, const Scenario& s, RowSpace* space) {
    std::vector<Form> out;
    MemoryBreakdown mem = model.Memory(p);
    if (Fits(mem, s, space)) {
      if (!Dominated(model, p, s)) out.push_back({p, std::move(mem)});
      return out;
    }
    if (layouts.module_ladder().empty() || p.recompute != Recompute::kNone ||
        p.cpu_offload_layers > 0) {
      return out;
    }
    Parallelism selective = p;
    selective.recompute = Recompute::kSelective;
    selective.recompute_modules = 0;
    ModuleRungs rungs =
        ClimbModuleLadder(model, layouts.module_ladder(), Headroom(s), selective, false);
    for (auto& [q, m] : rungs.fitting) {
      if (q.recompute_modules != 0) out.push_back({q, std::move(m), true});
    }
    return out;
  }

  // Predicts and visits forms of a layout in `bucket` (without predictions where `evaluate` is
  // false: the first form's visit stands for the layout); false: the visit asked to stop. A
  // module set's own part is bounded once one of its layouts was predicted, and skipped where
  // that bound cannot matter.
  template <typename Visit, typename Stop>
  bool Offer(CandidateState& st, RowSpace* space, const Bucket& bucket, std::vector<Form>& forms,
             bool evaluate, Visit& visit, Stop& stop) {
    const Scenario& s = space->scenarios[bucket.batch];
    for (Form& f : forms) {
      if (!evaluate) return visit(bucket, static_cast<const Prediction*>(nullptr));
      auto known = f.rung ? st.bounds.find(PartOf(f.layout)) : st.bounds.end();
      if (known != st.bounds.end() && stop(Bound(known->second, f.layout, s))) continue;
      Prediction pred =
          space->models[bucket.batch]->Evaluate(f.layout, &f.mem, &space->caches[bucket.batch]);
      ++result_.layouts_evaluated;
      if (f.rung && known == st.bounds.end()) {
        st.bounds.emplace(PartOf(f.layout), ComputePerMicroBatch(pred, s));
      }
      if (pred.tokens_per_s_per_gpu > bucket.bound) ++result_.bound_violations;
      if (!visit(bucket, &pred)) return false;
    }
    return true;
  }

  // Bounds a bucket's part, kept for every later row, by the prediction of its first layout with
  // a fitting form (without recompute, fitting or not), and drops the layouts before it. Where
  // `evaluate`, its forms are visited and it is dropped too; else it stays, for its bounded visit
  // to count it as fitting. The bound stays infinite where nothing fits. False: stop.
  template <typename Visit, typename Stop>
  bool BoundPart(CandidateState& st, RowSpace* space, Bucket& bucket, bool evaluate, Visit& visit,
                 Stop& stop) {
    const Scenario& s = space->scenarios[bucket.batch];
    const StepModel& model = *space->models[bucket.batch];
    const LayoutSpace& layouts = space->layouts[bucket.batch];
    size_t k = 0;
    for (; k < bucket.layouts.size(); ++k) {
      const Parallelism p = layouts[bucket.layouts[k]];
      std::vector<Form> forms = Fitting(model, layouts, p, s, space);
      if (forms.empty()) continue;
      const bool own = forms.front().layout == p;
      Prediction pred =
          model.Evaluate(p, own ? &forms.front().mem : nullptr, &space->caches[bucket.batch]);
      ++result_.layouts_evaluated;
      const double per_mb = ComputePerMicroBatch(pred, s);
      st.bounds.emplace(PartOf(p), per_mb);
      bucket.bound = Bound(per_mb, p, s);
      if (pred.tokens_per_s_per_gpu > bucket.bound) ++result_.bound_violations;
      if (!evaluate) break;
      ++k;
      if (own) {
        if (!visit(bucket, &pred)) return false;
        forms.erase(forms.begin());
      }
      if (!Offer(st, space, bucket, forms, evaluate, visit, stop)) return false;
      break;
    }
    bucket.layouts.erase(bucket.layouts.begin(), bucket.layouts.begin() + k);
    return true;
  }

  // Visits a row's layouts best bound first. A bucket whose part is not bounded yet is bounded
  // first (BoundPart) and goes back to the heap. `visit` gets each fitting form's bucket and,
  // when `evaluate` asks, its prediction; it returns false to stop. `stop(bound)` ends the walk
  // when no layout left can matter.
  template <typename Visit, typename Stop>
  absl::Status Walk(const Row& row, RowSpace* space, bool evaluate, Visit visit, Stop stop) {
    CandidateState& st = states_[row.candidate];
    const auto less = HeapLess(*space);
    int64_t n = 0;
    while (!space->heap.empty()) {
      if (++n % 256 == 0 && control_.Cancelled()) {
        return absl::CancelledError("the plan was cancelled");
      }
      std::pop_heap(space->heap.begin(), space->heap.end(), less);
      const int bi = space->heap.back();
      space->heap.pop_back();
      Bucket& bucket = space->buckets[bi];
      const Scenario& s = space->scenarios[bucket.batch];
      const LayoutSpace& layouts = space->layouts[bucket.batch];
      if (std::isinf(bucket.bound)) {
        const Parallelism first = layouts[bucket.layouts.front()];
        auto known = st.bounds.find(PartOf(first));
        if (known != st.bounds.end()) {
          bucket.bound = Bound(known->second, first, s);
        } else if (!BoundPart(st, space, bucket, evaluate, visit, stop)) {
          return absl::OkStatus();
        }
        // Back with its bound (none fits: the bucket is done).
        if (std::isfinite(bucket.bound) && !bucket.layouts.empty()) {
          space->heap.push_back(bi);
          std::push_heap(space->heap.begin(), space->heap.end(), less);
        }
        continue;
      }
      if (stop(bucket.bound)) break;
      for (int j : bucket.layouts) {
        std::vector<Form> forms =
            Fitting(*space->models[bucket.batch], layouts, layouts[j], s, space);
        if (!Offer(st, space, bucket, forms, evaluate, visit, stop)) return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

  // The share of HBM every layout leaves free.
  static double Headroom(const Scenario& s) {
    return s.cluster.hbm_headroom.value_or(kDefaultHbmHeadroom);
  }
  // Whether a partial recompute is pointless: a lighter step fits (as the planner's).
  static bool Dominated(const StepModel& model, const Parallelism& p, const Scenario& s) {
    return PartialRecomputeDominated(model, p, Headroom(s));
  }
  // Whether a layout fits and leaves the scenario's HBM headroom free (as the planner's,
  // model/planner.cc); why not is counted in the space's reasons.
  static bool Fits(const MemoryBreakdown& mem, const Scenario& s, RowSpace* space) {
    if (!mem.fits) {
      ++space->reasons[std::string(kDoesNotFitReason)];
      return false;
    }
    const double headroom = Headroom(s);
    if (!FitsWithHeadroom(mem, headroom)) {
      ++space->reasons[HeadroomReason(headroom)];
      return false;
    }
    return true;
  }

  static std::string WhyNone(const RowSpace& space) {
    std::vector<std::string> parts;
    for (const auto& [why, n] : space.reasons) parts.push_back(absl::StrCat(n, " ", why));
    return parts.empty() ? "no layout" : absl::StrJoin(parts, "; ");
  }

  // Phase 1 (top_k > 0): the row's bound alone: the best bound of a layout that fits.
  absl::Status BoundRow(Row* row) {
    RowSpace space;
    if (absl::Status s = Space(*row, &space); !s.ok()) return s;
    double bound = 0;
    if (absl::Status s = Walk(
            *row, &space, false,
            [&](const Bucket& b, const Prediction*) {
              bound = b.bound;
              return false;  // the first fitting layout of a bounded bucket: the best bound
            },
            [](double) { return false; });
        !s.ok()) {
      return s;
    }
    row->has_layout = bound > 0;
    row->tps_bound = bound * row->gpus;
    if (!row->has_layout) row->why_none = WhyNone(space);
    return absl::OkStatus();
  }

  absl::Status SearchRow(Row* row) {
    RowSpace space;
    if (absl::Status s = Space(*row, &space); !s.ok()) return s;
    Prediction best;
    int best_model = -1;
    int64_t best_batch = 0;
    const bool exhaustive = req_.exhaustive;
    if (absl::Status s = Walk(
            *row, &space, true,
            [&](const Bucket& b, const Prediction* pred) {
              const int64_t batch = space.scenarios[b.batch].workload.global_batch;
              if (best_model < 0 || RowBetter(*pred, batch, best, best_batch)) {
                best = *pred;
                best_model = b.batch;
                best_batch = batch;
              }
              return true;
            },
            [&](double bound) {
              return !exhaustive && best_model >= 0 && bound * row->gpus < best.tokens_per_s;
            });
        !s.ok()) {
      return s;
    }
    if (best_model < 0) {
      row->why_none = WhyNone(space);
      return absl::OkStatus();
    }
    const Scenario& s = space.scenarios[best_model];
    AttachUncertainty(s, space.models[best_model]->accelerator(), profile_, &best);
    row->found = true;
    row->option.candidate = row->candidate;
    row->option.accelerator = s.cluster.accelerator;
    row->option.num_gpus = row->gpus;
    row->option.scenario = s;
    row->option.prediction = std::move(best);
    return absl::OkStatus();
  }

  // Days, GPU-hours, energy, cost and the constraints of a row's best.
  void Finish(Row* row) {
    PlanJobOption& o = row->option;
    const PlanCandidateSpec& spec = req_.candidates[row->candidate];
    const PlanConstraintsSpec& c = req_.constraints;
    o.goodput = row->goodput;
    const double useful_s = req_.tokens / o.prediction.tokens_per_s;
    o.days = row->goodput.goodput > 0 ? useful_s / row->goodput.goodput / 86400.0 : kInf;
    o.gpu_hours = o.days * 24.0 * row->gpus;
    o.facility_kw = o.prediction.power.cluster_kw * pue_;
    o.energy_mwh = o.facility_kw * o.days * 24.0 / 1000.0;
    o.cost = o.gpu_hours * spec.price_per_gpu_hour +
             o.energy_mwh * 1000.0 * req_.electricity_price_per_kwh;
    if (row->goodput.goodput <= 0) {
      o.violations.push_back(absl::StrFormat(
          "interrupted every %.0f s on average, faster than a restart and a checkpoint interval",
          row->goodput.mtbf_s));
    }
    if (c.deadline_days > 0 && o.days > c.deadline_days) {
      o.violations.push_back(
          absl::StrFormat("%.1f days is past the deadline of %g", o.days, c.deadline_days));
    }
    if (c.budget > 0 && o.cost > c.budget) {
      o.violations.push_back(
          absl::StrFormat("cost %.4g is over the budget of %g", o.cost, c.budget));
    }
    if (c.max_gpus > 0 && row->gpus > c.max_gpus) {
      o.violations.push_back(absl::StrCat(row->gpus, " GPUs is over max_gpus ", c.max_gpus));
    }
    if (c.max_power_kw > 0 && o.facility_kw > c.max_power_kw) {
      o.violations.push_back(
          absl::StrFormat("%.0f kW is over max_power_kw %g", o.facility_kw, c.max_power_kw));
    }
    o.meets_constraints = o.violations.empty();
  }

  double Metric(const PlanJobOption& o) const { return ranked_by_cost_ ? o.cost : o.gpu_hours; }

  using Key = std::tuple<int, double, double, int, int>;
  Key KeyOf(const Row& r) const {
    return {r.option.meets_constraints ? 0 : 1, Metric(r.option), r.option.days, r.gpus,
            r.candidate};
  }

  // Lower bounds of a row's days and metric (cost or GPU-hours): energy cost >= 0.
  std::pair<double, double> Lower(const Row& r) const {
    if (!r.has_layout || r.goodput.goodput <= 0 || !(r.tps_bound > 0)) return {kInf, kInf};
    const double days = req_.tokens / r.tps_bound / r.goodput.goodput / 86400.0;
    const double gpu_hours = days * 24.0 * r.gpus;
    return {days, ranked_by_cost_ ? gpu_hours * req_.candidates[r.candidate].price_per_gpu_hour
                                  : gpu_hours};
  }
  bool CouldMeet(const Row& r) const {
    const PlanConstraintsSpec& c = req_.constraints;
    const auto [days, metric] = Lower(r);
    if (!std::isfinite(days)) return false;
    if (c.max_gpus > 0 && r.gpus > c.max_gpus) return false;
    if (c.deadline_days > 0 && days > c.deadline_days) return false;
    const double cost_lb = days * 24.0 * r.gpus * req_.candidates[r.candidate].price_per_gpu_hour;
    if (c.budget > 0 && cost_lb > c.budget) return false;
    return true;
  }
  std::tuple<int, double, double> LowerKey(const Row& r) const {
    const auto [days, metric] = Lower(r);
    return {CouldMeet(r) ? 0 : 1, metric, days};
  }

  // True when the row provably cannot enter the top k, cannot be on the Pareto front and cannot
  // be its candidate's smallest cluster meeting the constraints.
  bool Skippable(const Row& r) const {
    if (!r.has_layout) return true;  // nothing fits: no option to find
    const auto [days_lb, metric_lb] = Lower(r);
    const bool could_meet = CouldMeet(r);
    // The smallest meeting cluster of its candidate: kept unless a smaller one already meets.
    if (could_meet) {
      bool smaller_meets = false;
      for (const Row& q : rows_) {
        smaller_meets = smaller_meets || (q.found && q.candidate == r.candidate &&
                                          q.gpus < r.gpus && q.option.meets_constraints);
      }
      if (!smaller_meets) return false;
    }
    // The top k.
    std::vector<Key> keys;
    for (const Row& q : rows_) {
      if (q.found) keys.push_back(KeyOf(q));
    }
    if (static_cast<int>(keys.size()) < req_.top_k) return false;
    std::nth_element(keys.begin(), keys.begin() + (req_.top_k - 1), keys.end());
    const Key& kth = keys[req_.top_k - 1];
    const int flag = could_meet ? 0 : 1;
    const bool out_of_top =
        flag > std::get<0>(kth) || (flag == std::get<0>(kth) && metric_lb > std::get<1>(kth));
    if (!out_of_top) return false;
    // The Pareto front: dominated by an option already found.
    for (const Row& q : rows_) {
      if (!q.found || !std::isfinite(q.option.days)) continue;
      const double qm = Metric(q.option);
      if (q.option.days <= days_lb && qm <= metric_lb &&
          (q.option.days < days_lb || qm < metric_lb)) {
        return true;
      }
    }
    return false;
  }

  void Summarise() {
    std::vector<Row*> found;
    for (Row& r : rows_) {
      if (r.found) found.push_back(&r);
    }
    std::sort(found.begin(), found.end(),
              [this](const Row* a, const Row* b) { return KeyOf(*a) < KeyOf(*b); });
    // Pareto front of days against the metric (strictly dominated options are off it).
    for (Row* r : found) {
      if (!std::isfinite(r->option.days)) continue;
      bool dominated = false;
      for (const Row* q : found) {
        if (q == r || !std::isfinite(q->option.days)) continue;
        const double qm = Metric(q->option), rm = Metric(r->option);
        if (q->option.days <= r->option.days && qm <= rm &&
            (q->option.days < r->option.days || qm < rm)) {
          dominated = true;
          break;
        }
      }
      r->option.pareto = !dominated;
    }
    // Smallest meeting cluster per candidate.
    std::map<int, Row*> smallest;
    for (Row* r : found) {
      if (!r->option.meets_constraints) continue;
      auto [it, inserted] = smallest.emplace(r->candidate, r);
      if (!inserted && r->gpus < it->second->gpus) it->second = r;
    }
    for (auto& [c, r] : smallest) r->option.smallest = true;
    for (size_t i = 0; i < found.size(); ++i) {
      found[i]->option.top = req_.top_k == 0 || static_cast<int>(i) < req_.top_k;
    }
    // Doublings per candidate, between counts both found.
    std::map<std::pair<int, int>, const Row*> by_count;
    for (const Row* r : found) by_count[{r->candidate, r->gpus}] = r;
    for (const auto& [key, r] : by_count) {
      auto it = by_count.find({key.first, key.second * 2});
      if (it == by_count.end()) continue;
      const PlanJobOption &a = r->option, &b = it->second->option;
      PlanDoubling d;
      d.candidate = key.first;
      d.accelerator = a.accelerator;
      d.from_gpus = a.num_gpus;
      d.to_gpus = b.num_gpus;
      d.speedup = a.days / b.days;
      d.extra_cost = Metric(b) - Metric(a);
      d.cost_per_day_saved = a.days > b.days ? d.extra_cost / (a.days - b.days) : kInf;
      result_.doublings.push_back(d);
    }
    // Counts with no option: said once per candidate.
    std::map<int, std::vector<std::string>> none;
    for (const Row& r : rows_) {
      if (r.evaluated && !r.found) {
        none[r.candidate].push_back(absl::StrCat(r.gpus, " GPUs (", r.why_none, ")"));
      }
    }
    for (const auto& [c, list] : none) {
      result_.warnings.push_back(absl::StrCat("candidates[", c, "] ",
                                              req_.candidates[c].accelerator, ": no layout at ",
                                              absl::StrJoin(list, ", ")));
    }
    for (Row* r : found) {
      if (r->option.top || r->option.pareto || r->option.smallest) {
        result_.options.push_back(std::move(r->option));
      }
    }
  }

  const PlanJobRequest& req_;
  const Catalog& catalog_;
  const Profile& profile_;
  const JobControl& control_;
  std::vector<int64_t> batches_;
  std::vector<CandidateState> states_;
  std::vector<Row> rows_;
  double checkpoint_bytes_ = 0;
  double pue_ = kPlanDefaultPue;
  bool ranked_by_cost_ = true;
  PlanJobResult result_;
};

}  // namespace

std::vector<int> SearchedGpuCounts(const Accelerator& acc, int gpus_per_node, int max_gpus) {
  std::set<int> counts;
  const int limit = std::min(max_gpus, kMaxGpus);
  for (int g = kPlanMinSearchedGpus; g <= limit; g *= 2) counts.insert(g);
  const int domain = DomainSize(acc, gpus_per_node);
  if (domain > 0 && (domain & (domain - 1)) != 0) {
    for (int64_t g = domain; g <= limit; g *= 2) counts.insert(static_cast<int>(g));
  }
  if (counts.empty() && limit >= 1) counts.insert(limit);
  return {counts.begin(), counts.end()};
}

absl::StatusOr<PlanJobResult> RunPlan(const PlanJobRequest& request, const Catalog& catalog,
                                      const Profile& profile, const JobControl& control) {
  return Planner(request, catalog, profile, control).Run();
}

}  // namespace scalecast
