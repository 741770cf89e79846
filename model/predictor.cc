#include "model/predictor.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/field_rules.h"
#include "model/framework.h"
#include "model/hardware.h"
#include "model/layout.h"
#include "model/planner.h"
#include "model/recipe_presets.h"
#include "model/status_macros.h"
#include "model/step.h"
#include "model/uncertainty.h"
#include "model/workload.h"

namespace scalecast {
namespace {

using Place = ScenarioPaths::Place;

// `field` under `at` (FieldName: "scenarios[2]" + ".cluster" + "accelerator").
std::string FieldPath(Place at, absl::string_view field) {
  return FieldName(at.path, at.sub, field);
}

absl::Status Invalid(Place at, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(FieldPath(at, field), ": ", why));
}

ABSL_ATTRIBUTE_NOINLINE absl::Status OutOfRange(Place at, absl::string_view field, int64_t v,
                                                int64_t lo, int64_t hi) {
  return Invalid(at, field, absl::StrCat(v, " is out of range [", lo, ", ", hi, "]"));
}

// Inline: a value in range costs two comparisons, the message only an error.
inline absl::Status CheckRange(Place at, absl::string_view field, int64_t v, int64_t lo,
                               int64_t hi) {
  if (ABSL_PREDICT_FALSE(v < lo || v > hi)) return OutOfRange(at, field, v, lo, hi);
  return absl::OkStatus();
}

// The model: a preset name (with any shape field the request sets over the preset's), or a
// full shape under any name.
absl::Status ResolveModel(const ScenarioPaths& paths, ModelSpec* m, const Catalog& catalog) {
  const Place at = paths.model;
  const ModelPreset* preset = m->name.empty() ? nullptr : catalog.FindModel(m->name);
  if (preset != nullptr && NameOnly(*m)) {  // the preset's shape, checked when it was loaded
    std::string name = std::move(m->name);  // the name as the request spells it
    *m = preset->spec;
    m->name = std::move(name);
    return absl::OkStatus();
  }
  if (!HasShape(*m)) {
    if (m->name.empty()) return Invalid(at, "", "give a preset name or a shape");
    if (preset == nullptr) {
      return absl::NotFoundError(
          absl::StrCat(FieldPath(at, "name"), ": ", catalog.ModelNotFound(m->name)));
    }
  }
  if (preset != nullptr) *m = OverlayShape(preset->spec, *m);
  // Each field's proto range, then ffn_hidden (required only where some layer is dense), MoE,
  // MLA, local attention and the hybrid pattern: the catalog's one rule for them.
  RETURN_IF_ERROR(CheckModelFields(*m, at.path, at.sub));
  RETURN_IF_ERROR(CheckRange(at, "kv_heads", m->kv_heads, 0, m->heads));
  if (m->head_dim == 0 && m->hidden % m->heads != 0) {
    return Invalid(at, "heads", absl::StrCat(m->heads, " does not divide hidden=", m->hidden));
  }
  if (m->kv_heads == 0) m->kv_heads = m->heads;
  if (m->heads % m->kv_heads != 0) {
    return Invalid(at, "kv_heads", absl::StrCat(m->kv_heads, " does not divide heads=", m->heads));
  }
  if (m->mlp == Mlp::kUnspecified) m->mlp = Mlp::kGated;
  return absl::OkStatus();
}

// The model (a preset name or a full shape), the sequence length and the global batch.
absl::Status ResolveWorkload(const ScenarioPaths& paths, Workload* w, const Catalog& catalog) {
  RETURN_IF_ERROR(ResolveModel(paths, &w->model, catalog));
  return CheckFieldRanges([&](auto&& f) { field_rules::VisitWorkload(*w, f); }, paths.workload.path,
                          paths.workload.sub);
}

// The largest batch a public run in the project's data used, in tokens a step: MLPerf Training
// v6.0's DeepSeek-V3 runs on 2,048 to 8,192 GB300 (data/mlperf-deepseekv3-v6.0.csv: 16,384
// sequences of 4,096 tokens). A batch this many times larger is read as tokens by mistake.
constexpr double kLargestPublishedBatchTokens = 16384.0 * 4096;
constexpr double kImplausibleBatchFactor = 16;

// A warning when a global batch (sequences) looks like a token count: over
// kImplausibleBatchFactor x the largest published batch, and a whole number of sequences if
// read as tokens. Empty otherwise.
std::string BatchAsTokensNote(Place at, const Workload& w) {
  const double tokens = static_cast<double>(w.global_batch) * w.seq_len;
  if (w.seq_len <= 0 || tokens <= kImplausibleBatchFactor * kLargestPublishedBatchTokens ||
      w.global_batch % w.seq_len != 0) {
    return "";
  }
  return absl::StrCat(FieldPath(at, "global_batch"), ": ", w.global_batch, " sequences of ",
                      w.seq_len, " tokens is ", absl::StrFormat("%.1f billion", tokens / 1e9),
                      " tokens a step, over ", kImplausibleBatchFactor,
                      " times the largest batch a public run used; the field counts sequences: ",
                      w.global_batch, " tokens would be ", w.global_batch / w.seq_len);
}

// Adds a warning to a scenario once (a resolved scenario resolved again keeps one copy).
void WarnOnce(Scenario* s, std::string warning) {
  if (warning.empty()) return;
  if (std::find(s->input_warnings.begin(), s->input_warnings.end(), warning) !=
      s->input_warnings.end()) {
    return;
  }
  s->input_warnings.push_back(std::move(warning));
}

// The accelerator (its canonical id), the precision it runs (its 16-bit format when none is
// given), the GPU count and the node size (the accelerator's usual node when not given).
// The part a cluster's accelerator_spec describes (model/catalog.h): built once, kept in
// c->described, and named by c->accelerator from then on.
absl::Status ResolveDescribed(Place at, Cluster* c, const Catalog& catalog) {
  const AcceleratorSpec& spec = c->accelerator_spec;
  const std::string spec_path = FieldPath(at, "accelerator_spec");
  std::string nearest;
  ASSIGN_OR_RETURN(const Accelerator* base,
                   SpecBase(catalog, c->accelerator, spec, spec_path, &nearest));
  if (!spec.like.empty() && !c->accelerator.empty()) {
    const Accelerator* named = catalog.FindAccelerator(c->accelerator);
    if (named != nullptr && named != base) {
      return Invalid(at, "accelerator_spec.like",
                     absl::StrCat("'", spec.like, "' differs from cluster.accelerator '",
                                  c->accelerator, "': name one base part"));
    }
  }
  ASSIGN_OR_RETURN(Accelerator a, DescribeAccelerator(*base, spec, spec_path));
  if (!nearest.empty()) {
    a.borrowed = true;
    a.like_basis = nearest;
  }
  // A new part without an id takes the name the request gives it.
  if (spec.id.empty() && !c->accelerator.empty() &&
      catalog.FindAccelerator(c->accelerator) == nullptr) {
    a.id = c->accelerator;
  }
  c->accelerator = a.id;
  c->described = std::make_shared<const Accelerator>(std::move(a));
  return absl::OkStatus();
}

absl::StatusOr<const Accelerator*> ResolveCluster(const ScenarioPaths& paths, Scenario* s,
                                                  const Catalog& catalog) {
  const Place at = paths.cluster;
  Cluster& c = s->cluster;
  const Accelerator* acc = nullptr;
  if (c.accelerator_spec.empty()) {
    c.described.reset();
    if (c.accelerator.empty()) return Invalid(at, "accelerator", "is required");
    acc = catalog.FindAccelerator(c.accelerator);  // a part's id or alias: nothing to say
    if (acc == nullptr) {
      const std::string field = FieldPath(at, "accelerator");
      ASSIGN_OR_RETURN(NamedPart named, catalog.ResolveAccelerator(c.accelerator, field));
      // A name several parts share taken as the usual one, a TPU slice or a system: every
      // prediction says how it was read.
      WarnOnce(s, absl::StrCat(field, ": ", named.note));
      acc = named.accelerator;
      if (named.system != nullptr) ApplySystem(*named.system, &c);
    }
    // The canonical id (the lookup also takes spellings and aliases).
    if (c.accelerator != acc->id) c.accelerator = acc->id;
  } else {
    if (c.described == nullptr) RETURN_IF_ERROR(ResolveDescribed(at, &c, catalog));
    acc = c.described.get();
  }
  Precision& precision = s->workload.precision;
  if (precision == Precision::kUnspecified) {
    precision = acc->peak_tflops_bf16 > 0 ? Precision::kBf16 : Precision::kFp16;
  }
  if (acc->PeakFlops(precision) <= 0) {
    std::string hint;
    if (IsFp4(precision)) {
      const Precision other =
          precision == Precision::kMxfp4 ? Precision::kNvfp4 : Precision::kMxfp4;
      hint = acc->PeakFlops(other) > 0 ? absl::StrCat(" (its fp4 format is ", ToString(other), ")")
                                       : " (it has no fp4 tensor cores)";
    } else {
      std::vector<absl::string_view> runs;
      for (const EnumName<Precision>& n : kPrecisionNames) {
        if (acc->PeakFlops(n.value) > 0) runs.push_back(n.name);
      }
      if (!runs.empty()) hint = absl::StrCat(" (it runs ", absl::StrJoin(runs, ", "), ")");
    }
    return Invalid(paths.workload, "precision",
                   absl::StrCat(ToString(precision), " is not supported on ", acc->id, hint));
  }
  // num_gpus, gpus_per_node, hbm_headroom: their proto ranges.
  RETURN_IF_ERROR(
      CheckFieldRanges([&](auto&& f) { field_rules::VisitCluster(c, f); }, at.path, at.sub));
  if (!c.hbm_headroom.has_value()) c.hbm_headroom = kDefaultHbmHeadroom;
  // 0 = the accelerator's usual network; else at least 0.1 Gb/s per GPU (one 1 GbE link shared
  // by 8 GPUs is 0.125): a tiny positive value would predict no throughput (NaN), not a run.
  if (!(c.inter_node_gbps_per_gpu >= 0) || c.inter_node_gbps_per_gpu > 1e5 ||
      (c.inter_node_gbps_per_gpu > 0 && c.inter_node_gbps_per_gpu < 0.1)) {
    return Invalid(at, "inter_node_gbps_per_gpu",
                   absl::StrCat(c.inter_node_gbps_per_gpu,
                                " is out of range: 0 (the accelerator's usual network) or "
                                "[0.1, 100000]"));
  }
  if (c.gpus_per_node == 0) c.gpus_per_node = std::min(acc->gpus_per_node, c.num_gpus);
  return acc;
}

// The framework (its table name, or the generic one for a name the table does not know) and the
// stack the request asks of it.
absl::StatusOr<const Framework*> ResolveFrameworkOf(absl::string_view top, Scenario* s,
                                                    Stack* stack) {
  const Framework* framework = nullptr;
  ASSIGN_OR_RETURN(
      *stack, ResolvePricedStack(&s->framework, &s->stack, s->workload.precision, top, &framework));
  return framework;
}

// Each layout field within the range its meaning allows (0 = not fixed).
absl::Status CheckParallelismRanges(Place at, const Parallelism& p, int g, int layers,
                                    int64_t global_batch) {
  RETURN_IF_ERROR(CheckRange(at, "tp", p.tp, 0, g));
  RETURN_IF_ERROR(CheckRange(at, "pp", p.pp, 0, g));
  RETURN_IF_ERROR(CheckRange(at, "vpp", p.vpp, 0, layers));
  RETURN_IF_ERROR(CheckRange(at, "cp", p.cp, 0, g));
  RETURN_IF_ERROR(CheckRange(at, "dp", p.dp, 0, g));
  RETURN_IF_ERROR(CheckRange(at, "shard_group", p.shard_group, 0, g));
  RETURN_IF_ERROR(CheckRange(at, "micro_batch", p.micro_batch, 0, global_batch));
  RETURN_IF_ERROR(CheckRange(at, "first_stage_layers", p.first_stage_layers, 0, layers));
  RETURN_IF_ERROR(CheckRange(at, "last_stage_layers", p.last_stage_layers, 0, layers));
  // ep and etp: their proto ranges.
  return CheckFieldRanges([&](auto&& f) { field_rules::VisitParallelism(p, f); }, at.path, at.sub);
}

// A layout axis's rule (model/layout.h) as a status naming the field: `why` empty = valid.
absl::Status CheckAxis(Place at, absl::string_view field, const std::string& why) {
  return why.empty() ? absl::OkStatus() : Invalid(at, field, why);
}

// TP, CP, the pipeline (and where its split puts the embedding and the loss) and sharding.
absl::Status ResolveModelParallelAxes(Place at, const LayoutContext& ctx, Parallelism* p) {
  if (p->tp > 0) RETURN_IF_ERROR(CheckAxis(at, "tp", CheckTp(ctx, p->tp)));
  if (p->cp > 0) RETURN_IF_ERROR(CheckAxis(at, "cp", CheckCp(ctx, p->cp)));
  if (p->cp > 0 && p->tp > 0) RETURN_IF_ERROR(CheckAxis(at, "cp", CheckCpHeads(ctx, p->tp, p->cp)));
  RETURN_IF_ERROR(CheckAxis(at, "cp_a2a", CheckCpA2a(ctx, p->cp_a2a, p->tp, p->cp)));
  if (p->vpp > 1 && p->pp == 1) {
    return Invalid(at, "vpp", "interleaving (vpp > 1) needs pp > 1");
  }
  if (p->pp > 0) RETURN_IF_ERROR(CheckAxis(at, "pp", CheckPp(ctx, p->pp)));
  if (p->pp > 0 && p->vpp > 0) {
    // The planner's rule: an even split, or where the framework uses one and the even split
    // does not divide, the split that counts the embedding and the loss as layers.
    const std::optional<Parallelism> split = FirstPipelineSplit(ctx, *p);
    if (!split.has_value()) {
      const std::string why = CheckPipeline(ctx, *p);
      return Invalid(at, "pp", why.empty() ? "the layers do not split into the stages" : why);
    }
    p->embedding_in_split = split->embedding_in_split;
    p->loss_in_split = split->loss_in_split;
  }
  if (p->sharding != Sharding::kUnspecified) {
    RETURN_IF_ERROR(CheckAxis(at, "sharding", CheckSharding(ctx, p->sharding, p->tp, p->pp)));
  }
  return absl::OkStatus();
}

// The data-parallel degree (derived once tp, pp and cp are fixed), the micro batch it divides
// the global batch into, and HSDP's shard group.
absl::Status ResolveDataParallel(const ScenarioPaths& paths, const LayoutContext& ctx, int g,
                                 Parallelism* p) {
  const Place at = paths.parallelism;
  const int64_t fixed =
      int64_t{p->tp > 0 ? p->tp : 1} * (p->pp > 0 ? p->pp : 1) * (p->cp > 0 ? p->cp : 1);
  if (g % fixed != 0) {
    return Invalid(at, "",
                   absl::StrCat("num_gpus=", g, " is not divisible by tp*pp*cp=", fixed,
                                " of the set degrees"));
  }
  if (p->dp > 0 && g % (fixed * p->dp) != 0) {
    return Invalid(at, "dp",
                   absl::StrCat(p->dp, " does not fit num_gpus=", g, " with tp*pp*cp=", fixed));
  }
  if (p->tp > 0 && p->pp > 0 && p->cp > 0) {
    const int dp = g / (p->tp * p->pp * p->cp);
    if (p->dp > 0 && p->dp != dp) {
      return Invalid(at, "dp", absl::StrCat(p->dp, " != num_gpus/(tp*pp*cp)=", dp));
    }
    p->dp = dp;
  }
  if (p->dp > 0) RETURN_IF_ERROR(CheckAxis(paths.workload, "global_batch", CheckDp(ctx, p->dp)));
  if (p->dp > 0 && p->micro_batch > 0) {
    RETURN_IF_ERROR(CheckAxis(at, "micro_batch", CheckMicroBatch(ctx, p->dp, p->micro_batch)));
  }
  RETURN_IF_ERROR(CheckAxis(at, "shard_group", CheckShardGroup(p->sharding, p->shard_group)));
  if (p->shard_group > 0 && p->dp > 0 && p->cp > 0 && (p->dp * p->cp) % p->shard_group != 0) {
    return Invalid(at, "shard_group",
                   absl::StrCat(p->shard_group, " does not divide dp*cp=", p->dp * p->cp));
  }
  return absl::OkStatus();
}

// Expert axes, by the planner's rules: against the ranks of a pipeline stage (all GPUs over pp
// until tp, cp and dp are known) and tp (all GPUs until it is known). A dense model runs
// ep = etp = 1 (set by the caller).
absl::Status CheckExpertAxes(Place at, const LayoutContext& ctx, int g, const Parallelism& p) {
  RETURN_IF_ERROR(CheckRange(at, "ep", p.ep, 0, g));
  RETURN_IF_ERROR(CheckRange(at, "etp", p.etp, 0, g));
  const int stage_ranks =
      p.tp > 0 && p.dp > 0 && p.cp > 0 ? p.tp * p.dp * p.cp : g / std::max(1, p.pp);
  if (p.etp > 0) {
    RETURN_IF_ERROR(CheckAxis(at, "etp", CheckEtp(ctx, p.etp, p.tp > 0 ? p.tp : g)));
  }
  if (p.ep > 0) {
    RETURN_IF_ERROR(CheckAxis(at, "ep", CheckEp(ctx, p.ep, std::max(1, p.etp), stage_ranks)));
  }
  return absl::OkStatus();
}

}  // namespace

bool LayoutComplete(const Parallelism& p) {
  return p.tp > 0 && p.pp > 0 && p.vpp > 0 && p.cp > 0 && p.ep > 0 && p.etp > 0 &&
         p.sharding != Sharding::kUnspecified && p.micro_batch > 0 &&
         p.recompute != Recompute::kUnspecified &&
         (p.sharding != Sharding::kHsdp || p.shard_group > 0);
}

ScenarioPaths ScenarioPaths::Under(absl::string_view path) {
  return {.top = path,
          .workload = {path, ".workload"},
          .model = {path, ".workload.model"},
          .cluster = {path, ".cluster"},
          .parallelism = {path, ".parallelism"}};
}

absl::StatusOr<ResolvedScenario> Resolve(const Scenario& in, const Catalog& catalog,
                                         absl::string_view path) {
  return Resolve(in, catalog, ScenarioPaths::Under(path));
}

absl::StatusOr<ResolvedScenario> Resolve(const Scenario& in, const Catalog& catalog,
                                         const ScenarioPaths& paths) {
  ResolvedScenario r;
  r.scenario = in;
  RETURN_IF_ERROR(ResolveInPlace(catalog, paths, &r));
  return r;
}

absl::Status Resolve(const Scenario& in, const Catalog& catalog, absl::string_view path,
                     ResolvedScenario* out) {
  out->scenario = in;
  return ResolveInPlace(catalog, path, out);
}

absl::Status ResolveInPlace(const Catalog& catalog, absl::string_view path, ResolvedScenario* out) {
  return ResolveInPlace(catalog, ScenarioPaths::Under(path), out);
}

absl::Status ResolveInPlace(const Catalog& catalog, const ScenarioPaths& paths,
                            ResolvedScenario* out) {
  ResolvedScenario& r = *out;
  Scenario& s = r.scenario;
  const int stated_mtp = s.workload.model.mtp_layers;  // 0 keeps the catalog's, or a recipe's
  RETURN_IF_ERROR(ResolveWorkload(paths, &s.workload, catalog));
  WarnOnce(&s, BatchAsTokensNote(paths.workload, s.workload));
  ASSIGN_OR_RETURN(r.accelerator, ResolveCluster(paths, &s, catalog));
  ASSIGN_OR_RETURN(r.framework, ResolveFrameworkOf(paths.top, &s, &r.stack));
  if (const RecipePreset* recipe = ApplyRecipePreset(
          catalog, s.stack, s.workload.model, *r.accelerator, s.workload.precision,
          s.cluster.num_gpus, FieldName(paths.top, "", "stack"), &r.stack)) {
    ApplyRecipeSettings(*recipe, stated_mtp, &s.parallelism, &s.workload.model,
                        &r.stack.release_note);
  }
  const int g = s.cluster.num_gpus;
  const ModelSpec& m = s.workload.model;
  Parallelism& p = s.parallelism;
  const Place at = paths.parallelism;
  RETURN_IF_ERROR(CheckParallelismRanges(at, p, g, m.layers, s.workload.global_batch));
  // Every fixed field gets the planner's own rule for its axis (model/layout.h).
  const LayoutContext ctx = MakeLayoutContext(s, r.accelerator, r.framework, &r.stack);
  RETURN_IF_ERROR(ResolveModelParallelAxes(at, ctx, &p));
  RETURN_IF_ERROR(ResolveDataParallel(paths, ctx, g, &p));
  RETURN_IF_ERROR(CheckExpertAxes(at, ctx, g, p));
  RETURN_IF_ERROR(CheckAxis(at, "recompute_modules",
                            CheckRecomputeModules(ctx, p.recompute_modules, p.recompute)));
  if (p.recompute_modules != 0) p.recompute = Recompute::kSelective;
  if (p.recompute_modules == 0 &&
      (p.recompute == Recompute::kSelective || p.recompute == Recompute::kUnspecified)) {
    p.recompute_modules = FrameworkSelectiveModules(ctx);
  }
  RETURN_IF_ERROR(CheckAxis(at, "recompute_layers",
                            CheckRecomputeLayers(ctx, p.recompute_layers, p.recompute, p.pp)));
  if (p.recompute_layers != 0) p.recompute = Recompute::kFull;
  RETURN_IF_ERROR(CheckAxis(at, "cpu_offload_layers",
                            CheckCpuOffloadLayers(ctx, p.cpu_offload_layers, p.recompute, p.pp)));
  if (p.cpu_offload_layers != 0) p.recompute = Recompute::kNone;
  if (!m.moe.enabled()) p.ep = p.etp = 1;
  RETURN_IF_ERROR(CheckAxis(at, "sequence_parallel", CheckSequenceParallel(ctx, p)));
  if (p.tp > 0) p.sequence_parallel = SequenceParallel(ctx, p, p.tp);
  return absl::OkStatus();
}

absl::StatusOr<Scenario> ResolveScenario(const Scenario& in, const Catalog& catalog) {
  ASSIGN_OR_RETURN(ResolvedScenario r, Resolve(in, catalog));
  return std::move(r.scenario);
}

absl::StatusOr<Prediction> PredictLayout(const Scenario& s, const Catalog& catalog,
                                         const Profile& profile) {
  if (!LayoutComplete(s.parallelism)) {
    return absl::InvalidArgumentError("scenario.parallelism: layout is incomplete");
  }
  StepModel model(s, catalog, profile);
  RETURN_IF_ERROR(model.status());
  Prediction p = model.Evaluate(s.parallelism);
  AttachUncertainty(s, model.accelerator(), profile, &p);
  return p;
}

namespace {

// The caller gave the tensor and pipeline degrees: a run they made or mean to make, answered
// even where the memory model says it does not fit, within what it overstates
// (PlanDespiteMemory). A scenario left to the planner is refused instead, and the service names
// the nearest ones that fit.
bool LaidOutByCaller(const Parallelism& p) { return p.tp > 0 && p.pp > 0; }

// A prediction of the caller's degrees made with the memory model's verdict set aside
// (PlanDespiteMemory), flagged: memory.fits false, its "does not fit" warning and this one.
Prediction FlaggedDespiteMemory(Prediction p, const Parallelism& asked) {
  p.warnings.push_back(absl::StrCat(
      "the memory model says no layout with tp=", asked.tp, " pp=", asked.pp,
      " fits; predicted the fastest that needs at most ",
      absl::StrFormat("%g", kMemoryModelOverstatement),
      "x the HBM, as far as the model overstates measured runs (it misses some of what stacks "
      "do to save memory): check the memory on the cluster"));
  return p;
}

}  // namespace

absl::StatusOr<Prediction> Predict(const ResolvedScenario& r, const Catalog& catalog,
                                   const Profile& profile) {
  const Scenario& s = r.scenario;
  StepModel model(s, *r.accelerator, *r.framework, r.stack, profile);
  RETURN_IF_ERROR(model.status());
  if (LayoutComplete(s.parallelism)) {
    Prediction p = model.Evaluate(s.parallelism);
    AttachUncertainty(s, *r.framework, *r.accelerator, profile, &p);
    return p;
  }
  PlanOptions options;
  options.top_k = 1;
  ASSIGN_OR_RETURN(PlanResult plan, Plan(model, s, catalog, profile, options));
  if (plan.top.empty() && LaidOutByCaller(s.parallelism) &&
      plan.infeasible_reasons.count(std::string(kDoesNotFitReason)) != 0) {
    ASSIGN_OR_RETURN(PlanResult despite, PlanDespiteMemory(model, s, catalog, profile, options));
    if (!despite.top.empty()) {
      return FlaggedDespiteMemory(std::move(despite.top.front()), s.parallelism);
    }
  }
  if (plan.top.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no layout fits: ", plan.evaluated_count, " evaluated, ",
                     plan.infeasible_count, " infeasible (", plan.InfeasibleSummary(), ")"));
  }
  return plan.top.front();  // Plan attached its band
}

absl::StatusOr<Prediction> Predict(const Scenario& scenario, const Catalog& catalog,
                                   const Profile& profile) {
  ASSIGN_OR_RETURN(ResolvedScenario r, Resolve(scenario, catalog));
  return Predict(r, catalog, profile);
}

}  // namespace scalecast
