#include "model/planner.h"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/hardware.h"
#include "model/layout.h"
#include "model/uncertainty.h"

namespace scalecast {
namespace {

std::tuple<int, int, int> LayoutRank(const Parallelism& p) {
  // Tie-break toward simpler layouts: fewer model-parallel ranks, less recompute, fewer modules.
  return {p.tp * p.pp * p.vpp * p.cp, static_cast<int>(p.recompute),
          std::popcount(p.recompute_modules)};
}

void KeepTop(const Objective objective, int top_k, std::vector<Prediction>* top) {
  std::sort(top->begin(), top->end(), [objective](const Prediction& a, const Prediction& b) {
    return Better(a, b, objective);
  });
  if (static_cast<int>(top->size()) > top_k) top->resize(top_k);
}

}  // namespace

bool Better(const Prediction& a, const Prediction& b, Objective objective) {
  const double va = objective == Objective::kEnergy ? -a.power.joules_per_token : a.tokens_per_s;
  const double vb = objective == Objective::kEnergy ? -b.power.joules_per_token : b.tokens_per_s;
  if (va != vb) return va > vb;
  return LayoutRank(a.layout) < LayoutRank(b.layout);
}

std::string PlanResult::InfeasibleSummary() const {
  std::string s;
  for (const auto& [reason, count] : infeasible_reasons) {
    absl::StrAppend(&s, s.empty() ? "" : "; ", count, " ", reason);
  }
  return s;
}

namespace {

// Counts each reason a candidate was dropped for (PlanResult::infeasible_reasons), when asked.
struct Rejections {
  std::map<std::string, int64_t>* counts;
  void operator()(const std::string& why) const {
    if (counts != nullptr) ++(*counts)[why];
  }
};

// The model-parallel part of each layout: tp, the pipeline (pp, vpp and the stage split), cp,
// and the dp the GPU count leaves, kept where the GPUs and the global batch divide.
std::vector<Parallelism> ModelParallelShapes(const LayoutContext& ctx, const Parallelism& req,
                                             int gpus, const Rejections& reject) {
  // A fixed field is its own only candidate, already checked by ResolveScenario.
  const std::vector<int> tps = req.tp > 0 ? std::vector<int>{req.tp} : TpCandidates(ctx);
  const std::vector<int> cps = req.cp > 0 ? std::vector<int>{req.cp} : CpCandidates(ctx);
  std::vector<Parallelism> out;
  const std::vector<Parallelism> pipelines = PipelineCandidates(ctx, req);  // the same for any tp
  for (int tp : tps) {
    if (pipelines.empty()) reject("the layers do not split into the pipeline stages asked for");
    for (const Parallelism& pipe : pipelines) {
      if ((gpus / tp) % pipe.pp != 0) {
        reject("the GPU count is not a multiple of tp*pp");
        continue;
      }
      for (int cp : cps) {
        if ((gpus / tp / pipe.pp) % cp != 0) {
          reject("the GPU count is not a multiple of tp*pp*cp");
          continue;
        }
        if (!CheckCpHeads(ctx, tp, cp).empty()) {
          reject("cp does not divide the heads of a TP rank (all-to-all context parallelism)");
          continue;
        }
        if (!CheckCpA2a(ctx, req.cp_a2a, tp, cp).empty()) {
          reject("the all-to-all group asked for (cp_a2a) does not divide cp or a TP rank's heads");
          continue;
        }
        const int dp = gpus / (tp * pipe.pp * cp);
        if (req.dp > 0 && req.dp != dp) {
          reject("dp would differ from the dp asked for");
          continue;
        }
        if (!CheckDp(ctx, dp).empty()) {
          reject("the global batch does not split evenly over the data-parallel replicas");
          continue;
        }
        Parallelism shape = pipe;
        shape.tp = tp;
        shape.cp = cp;
        shape.cp_a2a = req.cp_a2a;
        shape.dp = dp;
        out.push_back(shape);
      }
    }
  }
  return out;
}

// The micro batches a replica of `dp` can run; nullopt when the one asked for does not divide
// its batch.
std::optional<std::vector<int>> MicroBatches(const LayoutContext& ctx, const Parallelism& req,
                                             int dp, const Rejections& reject) {
  if (req.micro_batch <= 0) return MicroBatchCandidates(ctx, dp);
  if (!CheckMicroBatch(ctx, dp, req.micro_batch).empty()) {
    reject("the micro batch does not divide the batch per replica");
    return std::nullopt;
  }
  return std::vector<int>{req.micro_batch};
}

// The expert axes (ep, etp) of a shape; a dense model has the single candidate ep = etp = 1.
std::vector<std::pair<int, int>> ExpertAxes(const LayoutContext& ctx, const Parallelism& req,
                                            const Parallelism& shape, const Rejections& reject) {
  const int stage_ranks = shape.tp * shape.dp * shape.cp;
  std::vector<std::pair<int, int>> out;
  for (int etp : req.etp > 0 ? std::vector<int>{req.etp} : EtpCandidates(ctx, shape.tp)) {
    if (!CheckEtp(ctx, etp, shape.tp).empty()) {
      reject("etp does not divide tp");
      continue;
    }
    for (int ep : req.ep > 0 ? std::vector<int>{req.ep} : EpCandidates(ctx, etp, stage_ranks)) {
      if (!CheckEp(ctx, ep, etp, stage_ranks).empty()) {
        reject("ep*etp does not divide the ranks of a pipeline stage");
        continue;
      }
      out.emplace_back(ep, etp);
    }
  }
  return out;
}

// The sharding axes (sharding, HSDP shard group; 0 for the others) of a shape.
std::vector<std::pair<Sharding, int>> ShardingAxes(const LayoutContext& ctx, const Parallelism& req,
                                                   const Parallelism& shape,
                                                   const Rejections& reject) {
  const int n_dp = shape.dp * shape.cp;
  const std::vector<Sharding> shardings = ShardingCandidates(ctx, shape.tp, shape.pp, req.sharding);
  if (shardings.empty()) reject("the framework does not combine the sharding with this tp or pp");
  std::vector<std::pair<Sharding, int>> out;
  for (Sharding sh : shardings) {
    if (!CheckShardGroup(sh, req.shard_group).empty()) {
      reject("a shard group is asked for, which only hsdp has");
      continue;
    }
    if (sh != Sharding::kHsdp) {
      out.emplace_back(sh, 0);
      continue;
    }
    // No group candidates: HSDP would equal FSDP or DDP here.
    for (int sg : req.shard_group > 0 ? std::vector<int>{req.shard_group}
                                      : ShardGroupCandidates(ctx, shape.tp, n_dp)) {
      if (n_dp % sg != 0) {
        reject("the HSDP shard group does not divide dp*cp");
        continue;
      }
      out.emplace_back(sh, sg);
    }
  }
  return out;
}

// The axes of every model-parallel shape that has a micro batch.
std::vector<ShapeAxes> FindAxes(const LayoutContext& ctx, const Scenario& s,
                                const Rejections& reject, PartialSteps steps) {
  const Parallelism& req = s.parallelism;
  std::vector<ShapeAxes> out;
  for (const Parallelism& shape : ModelParallelShapes(ctx, req, s.cluster.num_gpus, reject)) {
    std::optional<std::vector<int>> mbs = MicroBatches(ctx, req, shape.dp, reject);
    if (!mbs) continue;
    ShapeAxes& a = out.emplace_back();
    a.shape = shape;
    a.mbs = *std::move(mbs);
    a.experts = ExpertAxes(ctx, req, shape, reject);
    a.shardings = ShardingAxes(ctx, req, shape, reject);
    a.recomputes = RecomputeCandidates(ctx, req, shape.pp, steps);
    a.sp = SequenceParallel(ctx, req, shape.tp);
    if (a.count() == 0) out.pop_back();
  }
  return out;
}

}  // namespace

LayoutSpace::LayoutSpace(std::vector<ShapeAxes> shapes, uint32_t recompute_modules,
                         std::vector<uint32_t> module_ladder)
    : shapes_(std::move(shapes)),
      recompute_modules_(recompute_modules),
      module_ladder_(std::move(module_ladder)) {
  ends_.reserve(shapes_.size());
  size_t n = 0;
  for (const ShapeAxes& a : shapes_) ends_.push_back(n += a.count());
}

LayoutSpace::Iterator::Iterator(const LayoutSpace* space, size_t i) : space_(space), i_(i) {
  if (i >= space->size()) return;
  shape_ = std::upper_bound(space->ends_.begin(), space->ends_.end(), i) - space->ends_.begin();
  const ShapeAxes& a = space->shapes_[shape_];
  size_t local = i - (shape_ == 0 ? 0 : space->ends_[shape_ - 1]);
  auto next = [&local](size_t n) {
    const size_t digit = local % n;
    local /= n;
    return digit;
  };
  experts_ = next(a.experts.size());
  recompute_ = next(a.recomputes.size());
  mb_ = next(a.mbs.size());
  sharding_ = local;
}

LayoutSpace::Iterator& LayoutSpace::Iterator::operator++() {
  ++i_;
  const ShapeAxes& a = space_->shapes_[shape_];
  if (++experts_ < a.experts.size()) return *this;
  experts_ = 0;
  if (++recompute_ < a.recomputes.size()) return *this;
  recompute_ = 0;
  if (++mb_ < a.mbs.size()) return *this;
  mb_ = 0;
  if (++sharding_ < a.shardings.size()) return *this;
  sharding_ = 0;
  ++shape_;
  return *this;
}

Parallelism LayoutSpace::Iterator::operator*() const {
  return space_->Make(space_->shapes_[shape_], *this);
}

Parallelism LayoutSpace::Make(const ShapeAxes& a, const Iterator& d) const {
  const auto [ep, etp] = a.experts[d.experts_];
  const RecomputeChoice& rc = a.recomputes[d.recompute_];
  const auto [sh, sg] = a.shardings[d.sharding_];
  Parallelism p = a.shape;
  p.ep = ep;
  p.etp = etp;
  p.sharding = sh;
  p.shard_group = sg;
  p.micro_batch = a.mbs[d.mb_];
  p.recompute = rc.recompute;
  p.recompute_modules = rc.recompute == Recompute::kSelective ? recompute_modules_ : 0;
  p.recompute_layers = rc.layers;
  p.cpu_offload_layers = rc.offload;
  p.sequence_parallel = a.sp;
  return p;
}

size_t LayoutSpace::bytes() const {
  size_t n = sizeof(*this) + ends_.capacity() * sizeof(size_t);
  for (const ShapeAxes& a : shapes_) {
    n += sizeof(a) + a.mbs.capacity() * sizeof(int) + a.experts.capacity() * sizeof(a.experts[0]) +
         a.shardings.capacity() * sizeof(a.shardings[0]) +
         a.recomputes.capacity() * sizeof(a.recomputes[0]);
  }
  n += module_ladder_.capacity() * sizeof(uint32_t);
  return n + (shapes_.capacity() - shapes_.size()) * sizeof(ShapeAxes);
}

LayoutSpace EnumerateLayouts(const Scenario& s, const Stack* stack, const Catalog& catalog,
                             std::map<std::string, int64_t>* rejected, PartialSteps steps) {
  const LayoutContext ctx =
      MakeLayoutContext(s, ScenarioAccelerator(s, catalog), FindFramework(s.framework), stack);
  return LayoutSpace(
      FindAxes(ctx, s, Rejections{rejected}, steps), s.parallelism.recompute_modules,
      LeavesRecomputeOpen(s.parallelism) ? RecomputeModuleLadder(ctx) : std::vector<uint32_t>{});
}

std::string HeadroomReason(double headroom) {
  return absl::StrFormat("leaves less than %g%% of HBM free (hbm_headroom)", headroom * 100);
}

bool FitsWithHeadroom(const MemoryBreakdown& mem, double headroom) {
  return mem.fits && (headroom <= 0 ||
                      static_cast<double>(mem.total_bytes) <= (1 - headroom) * mem.capacity_bytes);
}

bool PartialRecomputeDominated(const StepModel& model, const Parallelism& p, double headroom) {
  if (IsOffloadLadder(model, p)) {
    // The next lighter of the planner's offload steps, or none at all.
    Parallelism lighter = p;
    lighter.cpu_offload_layers = 0;
    for (int n : OffloadLayerSteps(model.scenario().workload.model.layers)) {
      if (n >= p.cpu_offload_layers) break;
      lighter.cpu_offload_layers = n;
    }
    return FitsWithHeadroom(model.Memory(lighter), headroom);
  }
  if (p.recompute != Recompute::kFull || p.recompute_layers <= 0) return false;
  // The next lighter of the planner's steps (PartialRecomputeSteps), or none at all.
  Parallelism lighter = p;
  lighter.recompute = Recompute::kNone;
  lighter.recompute_layers = 0;
  for (int n : PartialRecomputeSteps(model.scenario().workload.model.layers / std::max(1, p.pp))) {
    if (n >= p.recompute_layers) break;
    lighter.recompute = Recompute::kFull;
    lighter.recompute_layers = n;
  }
  return FitsWithHeadroom(model.Memory(lighter), headroom);
}

bool IsRecomputeLadder(const StepModel& model, const Parallelism& p) {
  const Parallelism& req = model.scenario().parallelism;
  return p.recompute == Recompute::kFull && p.recompute_layers <= 0 && LeavesRecomputeOpen(req) &&
         CapabilitiesAt(model.framework(), model.stack().software_date).partial_recompute;
}

bool ClimbRecomputeLadder(const StepModel& model, double headroom, Parallelism* p,
                          MemoryBreakdown* mem) {
  const std::vector<int> steps =
      PartialRecomputeSteps(model.scenario().workload.model.layers / std::max(1, p->pp));
  auto fits = [&](int layers, MemoryBreakdown* out) {
    Parallelism q = *p;
    q.recompute = layers < 0 ? Recompute::kNone : Recompute::kFull;
    q.recompute_layers = std::max(0, layers);
    *out = model.Memory(q);
    return FitsWithHeadroom(*out, headroom);
  };
  // Memory falls with each layer recomputed: where full recompute on every layer does not fit,
  // nothing does; where the heaviest step does not, no step does.
  *mem = model.Memory(*p);
  MemoryBreakdown heaviest;
  if (steps.empty() || !FitsWithHeadroom(*mem, headroom) || !fits(steps.back(), &heaviest)) {
    return true;
  }
  size_t i = 0;  // the lightest step that fits
  MemoryBreakdown m;
  while (i + 1 < steps.size() && !fits(steps[i], &m)) ++i;
  if (i + 1 == steps.size()) m = heaviest;
  MemoryBreakdown none;
  if (i == 0 && fits(-1, &none)) return false;  // no recompute fits: it is faster
  p->recompute_layers = steps[i];
  *mem = m;
  return true;
}

bool IsOffloadLadder(const StepModel& model, const Parallelism& p) {
  const Parallelism& req = model.scenario().parallelism;
  return p.cpu_offload_layers > 0 && LeavesRecomputeOpen(req);
}

bool ClimbOffloadLadder(const StepModel& model, double headroom, Parallelism* p,
                        MemoryBreakdown* mem) {
  const std::vector<int> steps = OffloadLayerSteps(model.scenario().workload.model.layers);
  auto fits = [&](int layers, MemoryBreakdown* out) {
    Parallelism q = *p;
    q.cpu_offload_layers = layers;
    *out = model.Memory(q);
    return FitsWithHeadroom(*out, headroom);
  };
  // Memory falls with each layer offloaded: where the heaviest step (the candidate) does not
  // fit, no step does.
  *mem = model.Memory(*p);
  if (steps.empty() || !FitsWithHeadroom(*mem, headroom)) return true;
  size_t i = 0;  // the lightest step that fits
  MemoryBreakdown m;
  while (i + 1 < steps.size() && !fits(steps[i], &m)) ++i;
  if (i + 1 == steps.size()) m = *mem;
  MemoryBreakdown none;
  if (i == 0 && fits(0, &none)) return false;  // no offloading fits: it is faster
  p->cpu_offload_layers = steps[i];
  *mem = m;
  return true;
}

bool IsModuleLadder(const LayoutSpace& layouts, const Parallelism& p) {
  return !layouts.module_ladder().empty() && p.recompute == Recompute::kSelective &&
         p.recompute_modules == 0;
}

ModuleRungs ClimbModuleLadder(const StepModel& model, absl::Span<const uint32_t> ladder,
                              double headroom, const Parallelism& p,
                              std::optional<bool> none_fits) {
  ModuleRungs out;
  if (!none_fits) {
    Parallelism none = p;
    none.recompute = Recompute::kNone;
    none_fits = FitsWithHeadroom(model.Memory(none), headroom);
  }
  if (*none_fits) {
    out.none_fits = true;
    return out;
  }
  const StepModel::ModuleMemory memory = model.MemoryByModules(p);
  // The weights, gradients and optimizer state alone over the HBM: nothing fits (and for the
  // same reason as the framework's own).
  if (!memory.floor().fits) {
    out.own = memory.floor();
    return out;
  }
  out.own = memory.With(p.recompute_modules);
  if (FitsWithHeadroom(out.own, headroom)) out.fitting.emplace_back(p, out.own);
  auto with = [&p](uint32_t set) {
    Parallelism q = p;
    q.recompute_modules = set;
    return q;
  };
  // The last set covers the others and saves the most: where it does not fit, none does.
  MemoryBreakdown heaviest = memory.With(ladder.back());
  if (!FitsWithHeadroom(heaviest, headroom)) return out;
  std::vector<uint32_t> fitted;  // the sets that fit: whatever covers one of them is slower
  for (uint32_t set : ladder) {
    if (std::any_of(fitted.begin(), fitted.end(),
                    [set](uint32_t f) { return ModulesCover(set, f); })) {
      continue;
    }
    MemoryBreakdown mem = set == ladder.back() ? heaviest : memory.With(set);
    if (!FitsWithHeadroom(mem, headroom)) continue;
    fitted.push_back(set);
    out.fitting.emplace_back(with(set), std::move(mem));
  }
  return out;
}

namespace {

// What a walk over layouts keeps from one to the next: the top k, the layers' costs, and the
// no-recompute layouts of the current shape, micro batch and sharding. Those come before the
// same layouts' recompute candidates (experts vary fastest, recompute next), which use them:
// the module ladder needs to know whether its layout fits without recompute, and recompute only
// adds time, so a layout's no-recompute throughput bounds every recompute candidate of it.
class LayoutWalk {
 public:
  LayoutWalk(const StepModel& model, const PlanOptions& options, std::vector<Prediction>* top)
      : model_(model), options_(options), k_(std::max(1, options.top_k)), top_(*top) {}

  // Evaluates `p` and keeps it where it makes the top k; a no-recompute layout's throughput is
  // kept for its recompute candidates.
  void Offer(const Parallelism& p, MemoryBreakdown* mem) {
    Prediction pred = model_.Evaluate(p, mem, &layers_);
    if (!nones_.empty() && nones_.back().layout == p)
      nones_.back().tokens_per_s = pred.tokens_per_s;
    if (static_cast<int>(top_.size()) >= k_ && !Better(pred, top_.back(), options_.objective)) {
      return;
    }
    top_.push_back(std::move(pred));
    KeepTop(options_.objective, k_, &top_);
  }

  // Each layout of the walk in turn: a no-recompute one after others starts a new block.
  void Visit(const Parallelism& p) {
    const bool none = IsNone(p);
    if (none && !in_nones_) nones_.clear();
    in_nones_ = none;
  }
  // A no-recompute layout's memory and whether it fits with the headroom.
  void SawNone(const Parallelism& p, bool fits) {
    if (IsNone(p)) nones_.push_back({p, fits, std::nullopt});
  }
  // Whether the no-recompute twin of `p` fits, where the walk has seen it.
  std::optional<bool> NoneFits(const Parallelism& p) {
    const NoneLayout* twin = Twin(p);
    return twin == nullptr ? std::nullopt : std::optional<bool>(twin->fits);
  }
  // Whether recompute candidate `p` cannot make the top k: its no-recompute twin's throughput
  // (predicted once, fitting or not) is below the k-th best (throughput objective only).
  bool Outclassed(const Parallelism& p) {
    if (options_.objective != Objective::kThroughput || static_cast<int>(top_.size()) < k_) {
      return false;
    }
    NoneLayout* twin = Twin(p);
    if (twin == nullptr) return false;
    if (!twin->tokens_per_s) {
      twin->tokens_per_s = model_.Evaluate(twin->layout, nullptr, &layers_).tokens_per_s;
    }
    return *twin->tokens_per_s * (1 + kBoundSlack) < top_.back().tokens_per_s;
  }

 private:
  struct NoneLayout {
    Parallelism layout;
    bool fits = false;
    std::optional<double> tokens_per_s;
  };

  static bool IsNone(const Parallelism& p) {
    return p.recompute == Recompute::kNone && p.cpu_offload_layers <= 0;
  }
  NoneLayout* Twin(const Parallelism& p) {
    Parallelism none = p;
    none.recompute = Recompute::kNone;
    none.recompute_modules = 0;
    none.recompute_layers = 0;
    for (NoneLayout& n : nones_) {
      // Within a block the layouts differ in their expert axes (compared first, for speed).
      if (n.layout.ep == none.ep && n.layout.etp == none.etp && n.layout == none) return &n;
    }
    return nullptr;
  }

  const StepModel& model_;
  const PlanOptions& options_;
  const int k_;
  std::vector<Prediction>& top_;
  LayerCache layers_;
  std::vector<NoneLayout> nones_;
  bool in_nones_ = false;
};

// Counts a candidate that does not fit, or leaves less than the headroom free, under its reason;
// false where it may be predicted.
bool RejectedForMemory(const MemoryBreakdown& mem, const PlanOptions& options, double headroom,
                       const std::string& headroom_reason, PlanResult* result) {
  absl::string_view why;
  const double total = static_cast<double>(mem.total_bytes);
  if (!mem.fits && options.require_fit) {
    why = kDoesNotFitReason;
  } else if (!options.require_fit && total > options.overstatement * mem.capacity_bytes) {
    why = kFarPastMemoryReason;
  } else if (options.require_fit && !FitsWithHeadroom(mem, headroom)) {
    why = headroom_reason;
  }
  if (why.empty()) return false;
  ++result->infeasible_count;
  ++result->infeasible_reasons[std::string(why)];
  return true;
}

}  // namespace

bool EvaluateLayouts(const StepModel& model, const LayoutSpace& layouts, size_t begin, size_t end,
                     const PlanOptions& options, PlanResult* result, int64_t progress_offset,
                     int64_t progress_total) {
  const double headroom = options.hbm_headroom.value_or(
      model.scenario().cluster.hbm_headroom.value_or(kDefaultHbmHeadroom));
  const std::string headroom_reason = headroom > 0 ? HeadroomReason(headroom) : "";
  LayoutWalk walk(model, options, &result->top);
  for (auto it = layouts.At(begin); it.index() < end; ++it) {
    Parallelism p = *it;
    ++result->evaluated_count;
    if (options.progress && options.progress_every > 0 &&
        result->evaluated_count % options.progress_every == 0) {
      if (!options.progress(
              progress_offset + result->evaluated_count,
              progress_total > 0 ? progress_total : static_cast<int64_t>(layouts.size()))) {
        return false;
      }
    }
    walk.Visit(p);
    // A recompute candidate is bounded by its no-recompute twin once it is known to fit (the
    // memory check is cheaper than the twin's prediction).
    auto outclassed = [&] {
      return options.require_fit && p.recompute != Recompute::kNone && walk.Outclassed(p);
    };
    MemoryBreakdown mem;
    if (options.require_fit && IsModuleLadder(layouts, p)) {
      ModuleRungs rungs =
          ClimbModuleLadder(model, layouts.module_ladder(), headroom, p, walk.NoneFits(p));
      if (rungs.none_fits) continue;
      if (!rungs.fitting.empty()) {
        if (!outclassed()) {
          for (auto& [q, m] : rungs.fitting) walk.Offer(q, &m);
        }
        continue;
      }
      mem = std::move(rungs.own);  // nothing fits: counted below as the framework's own
    } else if (options.require_fit && IsRecomputeLadder(model, p)) {
      if (!ClimbRecomputeLadder(model, headroom, &p, &mem)) continue;
    } else if (options.require_fit && IsOffloadLadder(model, p)) {
      if (!ClimbOffloadLadder(model, headroom, &p, &mem)) continue;
    } else {
      mem = model.Memory(p);
      walk.SawNone(p, FitsWithHeadroom(mem, headroom));
    }
    if (RejectedForMemory(mem, options, headroom, headroom_reason, result) || outclassed()) {
      continue;
    }
    walk.Offer(p, &mem);
  }
  return true;
}

void MergeResults(const PlanOptions& options, PlanResult* into, PlanResult&& from) {
  into->evaluated_count += from.evaluated_count;
  into->infeasible_count += from.infeasible_count;
  for (auto& [reason, n] : from.infeasible_reasons) into->infeasible_reasons[reason] += n;
  for (Prediction& p : from.top) into->top.push_back(std::move(p));
  KeepTop(options.objective, std::max(1, options.top_k), &into->top);
}

absl::StatusOr<PlanResult> Plan(const Scenario& s, const Catalog& catalog, const Profile& profile,
                                const PlanOptions& options) {
  return Plan(StepModel(s, catalog, profile), s, catalog, profile, options);
}

absl::StatusOr<PlanResult> Plan(const StepModel& model, const Scenario& s, const Catalog& catalog,
                                const Profile& profile, const PlanOptions& options) {
  if (!model.status().ok()) return model.status();
  PlanResult result;
  const LayoutSpace layouts =
      EnumerateLayouts(s, &model.stack(), catalog, &result.infeasible_reasons);
  for (const auto& [reason, n] : result.infeasible_reasons) {
    result.infeasible_count += n;
    result.evaluated_count += n;
  }
  if (static_cast<int64_t>(layouts.size()) > options.max_layouts) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the search has ", layouts.size(), " layouts, over the limit of ", options.max_layouts));
  }
  if (!EvaluateLayouts(model, layouts, 0, layouts.size(), options, &result)) {
    return absl::CancelledError("the search was cancelled");
  }
  // No layout leaves the headroom free but some fit: the best of those, each warned
  // (StepModel's warnings say how close to the capacity it runs).
  const double headroom =
      options.hbm_headroom.value_or(s.cluster.hbm_headroom.value_or(kDefaultHbmHeadroom));
  if (result.top.empty() && headroom > 0 &&
      result.infeasible_reasons.count(HeadroomReason(headroom)) != 0) {
    PlanOptions without = options;
    without.hbm_headroom = 0;
    PlanResult second;
    if (!EvaluateLayouts(model, layouts, 0, layouts.size(), without, &second)) {
      return absl::CancelledError("the search was cancelled");
    }
    result.top = std::move(second.top);
  }
  for (Prediction& p : result.top) AttachUncertainty(s, model.accelerator(), profile, &p);
  return result;
}

absl::StatusOr<PlanResult> PlanDespiteMemory(const StepModel& model, const Scenario& s,
                                             const Catalog& catalog, const Profile& profile,
                                             PlanOptions options) {
  options.require_fit = false;
  return Plan(model, s, catalog, profile, options);
}

}  // namespace scalecast
