// scalecast-validate: the model's error on CSVs of measured runs (shared/data/calibration.csv
// format), per row and summarised per source and per accelerator, beside a FLOPs-only baseline;
// leave-one-source-out error (fit without a source, predict it) with the 80 % band's coverage;
// and, with --fit, the least-squares fit that produces the built-in default profile.
//
//   scalecast-validate [--fit] [--write-profile FILE] [--profile FILE] [--catalog FILE]
//                      [--stack-features FILE]... [--markdown FILE] [--no-rows] [--no-holdout]
//                      [--holdout-by source|moe-model|era] [--facts all|version|framework|none]
//                      [--explain CSV_ID] [--pairs FIELD[,FIELD...]] CSV [CSV ...]
//        scalecast-validate --facts-markdown [--stack-features FILE]... CSV [CSV ...]
//        scalecast-validate --releases-markdown | --records-markdown
//
// --stack-features applies an annotation CSV (keyed by id, source or model; see
// data/README.md); --explain prints one run's prediction term by term; --holdout-by moe-model
// leaves each mixture-of-experts model out in turn instead of each source; --facts predicts each
// run as a user who knows less would ask for it (the fits still see every fact): 'version' keeps
// the framework and its version and leaves the stack's features to the release's defaults,
// 'framework' leaves the version out too (today's release), 'none' the framework as well (the
// generic stack). --pairs sets each controlled pair's predicted throughput ratio beside its
// measured one: two runs of one source that differ in the named scenario fields only
// (tools/pairs.h; workload.precision for bf16 against fp8, stack.version for one release against
// the next).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/measurements.h"
#include "model/model_fields_gen.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/recipe_presets.h"
#include "model/records.h"
#include "model/workload.h"
#include "tools/args.h"
#include "tools/markdown.h"
#include "tools/pairs.h"
#include "tools/run_files.h"

namespace {

using namespace scalecast;  // NOLINT: a tool's main

using tools::MarkdownCell;
using tools::ReadFile;
using tools::SoftwareDateOf;

// The FLOPs-only baseline: tokens/s per GPU = efficiency(accelerator) * peak / FLOPs per token,
// one efficiency per accelerator fitted (geometric mean) on the same rows.
std::map<std::string, ErrorStats> FlopsOnlyBaseline(
    const std::vector<Measurement>& runs, const Catalog& catalog, ErrorStats* overall,
    const std::function<std::string(const Measurement&)>& group) {
  std::map<std::string, std::vector<double>> log_ratio;
  std::vector<double> peak_over_fpt(runs.size(), 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    const Scenario& s = runs[i].scenario;
    const Accelerator* a = catalog.FindAccelerator(s.cluster.accelerator);
    if (a == nullptr) continue;
    ModelSpec m = s.workload.model;
    if (m.kv_heads == 0) m.kv_heads = m.heads;
    const double fpt = ModelFlopsPerToken(Shape(m), s.workload.seq_len);
    peak_over_fpt[i] = a->PeakFlops(Precision::kBf16) / fpt;
    log_ratio[a->id].push_back(std::log(runs[i].tokens_per_s_per_gpu / peak_over_fpt[i]));
  }
  std::map<std::string, double> eff;
  for (const auto& [id, v] : log_ratio) {
    double s = 0;
    for (double x : v) s += x;
    eff[id] = std::exp(s / v.size());
  }
  std::map<std::string, std::vector<double>> by_fw;
  std::vector<double> all;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (peak_over_fpt[i] == 0) continue;
    const double pred = eff[runs[i].scenario.cluster.accelerator] * peak_over_fpt[i];
    const double ae = std::fabs(pred / runs[i].tokens_per_s_per_gpu - 1);
    by_fw[group(runs[i])].push_back(ae);
    all.push_back(ae);
  }
  std::map<std::string, ErrorStats> out;
  for (const auto& [fw, v] : by_fw) out[fw] = Summarise(v);
  *overall = Summarise(all);
  return out;
}

// Leave-one-source-out at each level of what the user knows (--facts-markdown): the folds fit
// on every fact, the held-out source is predicted as asked at that level.
void WriteFactsMarkdown(std::FILE* f, const std::vector<Measurement>& runs, const Catalog& catalog,
                        const FitOptions& options) {
  struct Level {
    StatedFacts facts;
    const char* what;
  };
  static constexpr Level kLevels[] = {
      {StatedFacts::kAll, "everything the source states: framework, version, the stack's features"},
      {StatedFacts::kVersion, "the framework and its version; features at that release's defaults"},
      {StatedFacts::kFramework, "the framework only; today's release and its defaults"},
      {StatedFacts::kNone,
       "no framework: the generic stack (plain eager PyTorch, today's release)"},
  };
  std::fprintf(f,
               "Generated by `scripts/accuracy.sh` (`scalecast-validate --facts-markdown`). Each "
               "source left out in turn, fitted on every fact of the others; the held-out runs "
               "asked for with less known. The model, cluster, layout and workload stay as "
               "measured.\n\n"
               "| what the user states | runs | refused | MAPE | median APE | 80 %% band: "
               "coverage | median width |\n|---|---:|---:|---:|---:|---:|---:|\n");
  std::map<StatedFacts, HoldOutReport> by_facts =
      LeaveOneSourceOutByFacts(runs, catalog, Profile{}, options, kStatedFactsLevels);
  for (const Level& level : kLevels) {
    const HoldOutReport& h = by_facts[level.facts];
    const int refused = static_cast<int>(h.rows.size()) - h.overall.count;
    std::fprintf(f, "| %s (`--facts %s`) | %zu | %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n",
                 level.what, std::string(StatedFactsName(level.facts)).c_str(), h.rows.size(),
                 refused, 100 * h.overall.mape, 100 * h.overall.median_ape, 100 * h.band_coverage,
                 100 * h.band_median_width);
  }
}

// One run's prediction term by term (--explain ID).
void Explain(const Measurement& m, const Parallelism& layout, const Catalog& catalog,
             const Profile& profile) {
  absl::StatusOr<Scenario> s = ResolveScenario(m.scenario, catalog);
  absl::StatusOr<Prediction> p = absl::InvalidArgumentError("not resolved");
  if (s.ok()) {
    s->parallelism = layout;  // the row's layout, as Validate resolved or planned it
    p = PredictLayout(*s, catalog, profile);
  } else {
    p = s.status();
  }
  if (!p.ok()) {
    std::printf("  cannot explain: %s\n", std::string(p.status().message()).c_str());
    return;
  }
  const TimeBreakdown& t = p->time;
  std::printf(
      "  step %.3f s: compute %.3f, recompute %.3f, bubble %.3f, optimizer %.3f; "
      "mfu %.1f%%; memory %.1f GiB (weights %.1f, grads %.1f, optimizer %.1f, "
      "activations %.1f)\n",
      p->step_time_s, t.compute_s, t.recompute_s, t.pipeline_bubble_s, t.optimizer_s, 100 * p->mfu,
      p->memory.total_bytes / 1073741824.0, p->memory.weights_bytes / 1073741824.0,
      p->memory.gradients_bytes / 1073741824.0, p->memory.optimizer_bytes / 1073741824.0,
      p->memory.activations_bytes / 1073741824.0);
  for (const CommTime& c : t.comm) {
    std::printf("  %-16s total %.3f s, exposed %.3f s over %d ranks, %.2f GB a GPU\n",
                c.kind.c_str(), c.total_s, c.exposed_s, c.ranks, c.bytes_per_gpu / 1e9);
  }
}

void PrintStats(const char* title, const std::map<std::string, ErrorStats>& groups,
                const std::map<std::string, ErrorStats>* baseline) {
  std::printf("\n%-22s %5s %8s %10s%s\n", title, "rows", "MAPE", "median APE",
              baseline ? "  FLOPs-only MAPE" : "");
  for (const auto& [k, s] : groups) {
    std::printf("%-22s %5d %7.1f%% %9.1f%%", k.c_str(), s.count, 100 * s.mape, 100 * s.median_ape);
    if (baseline != nullptr) {
      auto it = baseline->find(k);
      if (it != baseline->end()) std::printf("  %15.1f%%", 100 * it->second.mape);
    }
    std::printf("\n");
  }
}

void WriteMarkdown(std::FILE* f, const char* title, const std::map<std::string, ErrorStats>& in,
                   const std::map<std::string, ErrorStats>* held_out,
                   const std::map<std::string, ErrorStats>* baseline) {
  std::fprintf(f, "| %s | rows | in-sample MAPE |%s%s\n|---|---:|---:|%s%s\n", title,
               held_out ? " held-out MAPE |" : "", baseline ? " FLOPs-only MAPE |" : "",
               held_out ? "---:|" : "", baseline ? "---:|" : "");
  for (const auto& [k, s] : in) {
    std::fprintf(f, "| %s | %d | %.1f %% |", MarkdownCell(k).c_str(), s.count, 100 * s.mape);
    if (held_out) {
      auto it = held_out->find(k);
      if (it != held_out->end()) {
        std::fprintf(f, " %.1f %% |", 100 * it->second.mape);
      } else {
        std::fprintf(f, " |");
      }
    }
    if (baseline) {
      auto it = baseline->find(k);
      if (it != baseline->end()) {
        std::fprintf(f, " %.1f %% |", 100 * it->second.mape);
      } else {
        std::fprintf(f, " |");
      }
    }
    std::fprintf(f, "\n");
  }
  std::fprintf(f, "\n");
}

// Held-out errors of a group of runs: MAPE, the signed mean (+ = predicted too fast) and the
// 80 % band's coverage.
struct HeldOutBucket {
  int rows = 0, inside = 0;
  double abs_sum = 0, signed_sum = 0;
  void Add(const ValidationRow& r) {
    const double measured = r.measurement->tokens_per_s_per_gpu;
    ++rows;
    abs_sum += std::fabs(r.error);
    signed_sum += r.error;
    inside += measured >= r.band_low && measured <= r.band_high;
  }
};

void WriteBucketsMarkdown(std::FILE* f, const char* title,
                          const std::vector<std::pair<std::string, HeldOutBucket>>& buckets) {
  std::fprintf(f,
               "| %s | rows | held-out MAPE | mean signed error (+ = predicted too fast) | "
               "inside the 80 %% band |\n|---|---:|---:|---:|---:|\n",
               title);
  for (const auto& [name, b] : buckets) {
    if (b.rows == 0) continue;
    std::fprintf(f, "| %s | %d | %.1f %% | %+.1f %% | %.0f %% |\n", name.c_str(), b.rows,
                 100 * b.abs_sum / b.rows, 100 * b.signed_sum / b.rows, 100.0 * b.inside / b.rows);
  }
  std::fprintf(f, "\n");
}

// Held-out error by job size: whether runs of 1,000-10,000+ GPUs come out too slow or too fast
// (the signed mean), beside MAPE and the 80 % band's coverage in each size.
void WriteScaleMarkdown(std::FILE* f, const std::vector<ValidationRow>& held_out) {
  const std::pair<const char*, int> sizes[] = {
      {"1-8", 8},          {"9-64", 64},          {"65-512", 512},
      {"513-2,048", 2048}, {"2,049-8,192", 8192}, {"8,193 and more", 1 << 30}};
  std::vector<std::pair<std::string, HeldOutBucket>> buckets;
  for (const auto& [name, max_gpus] : sizes) buckets.emplace_back(name, HeldOutBucket());
  for (const ValidationRow& r : held_out) {
    if (!r.failure.empty()) continue;
    for (size_t i = 0; i < std::size(sizes); ++i) {
      if (r.measurement->scenario.cluster.num_gpus > sizes[i].second) continue;
      buckets[i].second.Add(r);
      break;
    }
  }
  WriteBucketsMarkdown(f, "GPUs", buckets);
}

// Held-out error by the year of the software a run used: whether the predictions hold in every
// software era, and which way the old and the new miss.
void WriteSoftwareYearMarkdown(std::FILE* f, const std::vector<ValidationRow>& held_out) {
  std::map<int, HeldOutBucket> by_year;
  for (const ValidationRow& r : held_out) {
    if (r.failure.empty()) by_year[static_cast<int>(SoftwareDateOf(*r.measurement))].Add(r);
  }
  std::vector<std::pair<std::string, HeldOutBucket>> buckets;
  for (const auto& [year, b] : by_year) {
    buckets.emplace_back(year > 0 ? std::to_string(year) : std::string("unknown"), b);
  }
  WriteBucketsMarkdown(f, "software released in", buckets);
}

// The stack switches (the proto's, by their request names) a release turns on beyond the release
// table's own columns; "-" when none.
std::string OtherDefaults(Stack s) {
  StackOptions none;
  std::string out;
  field_rules::VisitStackSwitches(
      none, s, [&out](absl::string_view name, const std::optional<bool>&, bool on) {
        static constexpr absl::string_view kColumns[] = {"tp_comm_overlap", "dp_overlap",
                                                         "compiled", "fused_kernels"};
        if (!on ||
            std::find(std::begin(kColumns), std::end(kColumns), name) != std::end(kColumns)) {
          return;
        }
        absl::StrAppend(&out, out.empty() ? "" : ", ", name);
      });
  return out.empty() ? "-" : out;
}

// "0.1 (2025-06)" after a list's ", ".
void AppendDated(std::string* list, absl::string_view version, double date) {
  absl::StrAppend(list, list->empty() ? "" : ", ", version, " (", YearMonthOf(date), ")");
}

// What a release row shows of a release: the features that set its speed and its source.
std::string ReleaseRowKey(const FrameworkVersion& r) {
  const Stack& s = r.defaults;
  return absl::StrCat(ToString(s.attention), "|", s.fused_kernels, s.compiled, s.tp_comm_overlap,
                      s.dp_overlap, "|", ToString(s.fp8_recipe), "|", OtherDefaults(s), "|",
                      r.source);
}

// One framework's own releases, those with the same features and source sharing a row (a
// framework's tags and its dated snapshots interleave by date), rows in order of their first.
void PrintOwnReleases(const char* name, const std::vector<const FrameworkVersion*>& own) {
  std::vector<std::vector<const FrameworkVersion*>> rows;
  std::vector<std::string> keys;
  for (const FrameworkVersion* r : own) {
    const std::string key = ReleaseRowKey(*r);
    const auto at = std::find(keys.begin(), keys.end(), key);
    if (at == keys.end()) {
      keys.push_back(key);
      rows.push_back({r});
    } else {
      rows[at - keys.begin()].push_back(r);
    }
  }
  for (const std::vector<const FrameworkVersion*>& row : rows) {
    std::string names;
    for (const FrameworkVersion* r : row) AppendDated(&names, r->version, r->date);
    const Stack& s = row.front()->defaults;
    std::printf(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, names.c_str(),
        std::string(ToString(s.attention)).c_str(),
        s.fused_kernels ? "yes" : (s.compiled ? "compiler" : "no"),
        s.tp_comm_overlap ? "on" : "off", s.dp_overlap ? "on" : "off",
        s.fp8_recipe == Fp8Recipe::kNone ? "-" : std::string(ToString(s.fp8_recipe)).c_str(),
        OtherDefaults(s).c_str(), MarkdownCell(row.front()->source).c_str());
  }
}

// The projects priced as this framework but numbered apart (TaggedProjects): a row each, their
// numbers read as their tags' dates among the framework's releases.
void PrintProjectNumbers(const char* name, absl::string_view framework) {
  for (const ProjectTags& p : TaggedProjects()) {
    if (p.framework != framework) continue;
    std::string tags;
    for (const auto& [version, date] : p.tags) AppendDated(&tags, version, date);
    const std::string as = "by date";
    std::printf(
        "| %s | %s %s: placed by that date among the releases above | %s | %s | %s | %s | "
        "%s | %s | %s |\n",
        name, std::string(p.project).c_str(), tags.c_str(), as.c_str(), as.c_str(), as.c_str(),
        as.c_str(), as.c_str(), as.c_str(), MarkdownCell(p.source).c_str());
  }
}

// A framework as the release tables name it.
const char* FrameworkLabel(const Framework& f) {
  return f.name.empty() ? "(none: plain PyTorch)" : f.name.c_str();
}

// The capabilities a framework's older releases lack (CapabilityDates), each from its month.
void PrintCapabilityDates() {
  std::printf(
      "\nWhat older releases lack (`CapabilitiesAt`): each capability from its month on; every "
      "other capability of a framework is in each of its releases.\n\n"
      "| framework | capability | from | source |\n|---|---|---|---|\n");
  for (const Framework& f : Frameworks()) {
    std::vector<std::pair<const char*, double>> named = f.capabilities.since.Named();
    std::stable_sort(named.begin(), named.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [capability, date] : named) {
      if (date <= 0) continue;
      std::printf("| %s | %s | %s | %s |\n", FrameworkLabel(f), capability,
                  YearMonthOf(date).c_str(), MarkdownCell(f.capabilities.since.source).c_str());
    }
  }
}

// The exchanges of context parallelism that a framework runs on one kind of accelerator only, or
// there from a later month (FrameworkCapabilities::cp_comm_platforms).
void PrintPlatformDates() {
  std::printf(
      "\nWhere the kind of accelerator matters (`cp_comm_platforms`): a request for an exchange "
      "where its kind lacks it, or lacked it in the release asked for, is refused with that "
      "reason.\n\n"
      "| framework | context parallelism by | on GPUs from | on TPUs from |\n|---|---|---|---|\n");
  auto month = [](double date) { return date >= kNeverOn ? std::string("-") : YearMonthOf(date); };
  for (const Framework& f : Frameworks()) {
    for (const CpCommPlatforms& e : f.capabilities.cp_comm_platforms) {
      std::printf("| %s | %s | %s | %s |\n", FrameworkLabel(f),
                  std::string(ToString(e.comm)).c_str(), month(e.gpu_since).c_str(),
                  month(e.tpu_since).c_str());
    }
  }
}

// The recipe presets a Bridge release's MoE requests take (model/recipe_presets.h): per tag, how
// many model, GPU and precision presets turn each switch on, and how many recompute or set the
// MTP passes (0.6.0's recipes).
void PrintRecipePresets() {
  std::printf(
      "\nA release's recipe for the model (`model/data/bridge_presets.txt`): a MoE request that "
      "names a Megatron-Bridge release and a catalog model runs the preset of its model, GPU and "
      "precision (from 0.6.0 the recipe for the GPU count nearest its own) wherever it leaves a "
      "switch, the recompute or the MTP passes unset. Presets a tag has, how many turn each "
      "switch on, and how many recompute and set the MTP passes (read from 0.6.0's recipes "
      "only):\n\n| Megatron-Bridge tag | presets | models |");
  std::string rule = "|---|---:|---:|";
  for (const RecipeSwitch& s : RecipeSwitches()) {
    std::printf(" `%s` |", std::string(s.name).c_str());
    rule += "---:|";
  }
  std::printf(" recompute | MTP passes |\n%s---:|---:|\n", rule.c_str());
  struct Tally {
    int presets = 0;
    std::set<std::string> models;
    std::vector<int> on = std::vector<int>(RecipeSwitches().size());
    int recompute = 0, mtp = 0;
  };
  std::map<std::string, Tally> by_tag;
  for (const RecipePreset& p : BuiltinRecipePresets()) {
    Tally& t = by_tag[p.tag];
    ++t.presets;
    t.models.insert(p.model);
    for (size_t i = 0; i < RecipeSwitches().size(); ++i) t.on[i] += p.*(RecipeSwitches()[i].preset);
    t.recompute += p.settings.recompute.value_or(Recompute::kNone) != Recompute::kNone;
    t.mtp += p.settings.mtp_layers.has_value();
  }
  for (const auto& [tag, t] : by_tag) {
    std::printf("| %s | %d | %zu |", tag.c_str(), t.presets, t.models.size());
    for (int n : t.on) std::printf(" %d |", n);
    std::printf(" %d | %d |\n", t.recompute, t.mtp);
  }
}

// Every framework's releases: numbering, date, the features that set its speed, the source.
// Releases a framework takes from another (FrameworkVersion::from) share one row.
void PrintReleases() {
  std::printf(
      "| framework | releases (date) | attention | fused kernels | TP overlap | DP overlap | fp8 "
      "default | also on | source |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const Framework& f : Frameworks()) {
    const char* name = FrameworkLabel(f);
    std::vector<const FrameworkVersion*> own, taken;
    for (const FrameworkVersion& r : f.versions) (r.from.empty() ? own : taken).push_back(&r);
    PrintOwnReleases(name, own);
    PrintProjectNumbers(name, f.name);
    if (taken.empty()) continue;
    const std::string as = absl::StrCat("as ", taken.front()->from);
    std::printf(
        "| %s | %s to %s: the %s release of that number | %s | %s | %s | %s | %s | %s | %s |\n",
        name, taken.front()->version.c_str(), taken.back()->version.c_str(),
        taken.front()->from.c_str(), as.c_str(), as.c_str(), as.c_str(), as.c_str(), as.c_str(),
        as.c_str(), MarkdownCell(f.taken_releases).c_str());
  }
  PrintCapabilityDates();
  PrintPlatformDates();
  PrintRecipePresets();
}

// The record table (model/records.cc) as markdown (the README's).
void PrintRecords() {
  std::printf("| generation | precision | MFU | run | source |\n|---|---|---:|---|---|\n");
  for (const MfuRecord& r : MfuRecords()) {
    std::printf("| %s | %s | %.1f %% | %s | %s |\n", r.generation.c_str(), r.precision.c_str(),
                100 * r.mfu, MarkdownCell(r.what).c_str(), MarkdownCell(r.source).c_str());
  }
}

// The command line.
struct Args {
  bool fit = false, rows = true, holdout = true, holdout_rows = false, mfu_records = false;
  bool facts_markdown = false;
  std::string write_profile, profile_path, catalog_path, markdown_path;
  std::vector<std::string> features_paths;  // applied in order
  std::string explain_id;                   // print this CSV id's breakdown
  std::vector<std::string> pair_fields;     // --pairs: the fields a controlled pair differs in
  std::string pairs_markdown_path;          // --pairs-markdown: the pairs' summary as Markdown
  std::string holdout_by = "source";        // source | moe-model | era
  StatedFacts facts = StatedFacts::kAll;    // --facts all | version | framework | none
  std::vector<std::string> csvs;
};

// The arguments, or the exit code of a run that ends here (--help, a usage error, or the record
// and release tables, which need no runs).
std::optional<int> ParseArgs(int argc, char** argv, Args* a) {
  CLI::App app(
      "Predicts measured runs (CSV files) with the built-in or a given profile: each row, the "
      "error by source, accelerator and framework, and leave-one-group-out (fit on the others, "
      "predict the one left out).",
      "scalecast-validate");
  bool records = false, releases = false, no_rows = false, no_holdout = false;
  std::string facts = "all";
  app.add_flag("--fit", a->fit, "fit the profile from the documented priors to every run first");
  app.add_option("--write-profile", a->write_profile, "with --fit: write the fitted profile here")
      ->type_name("FILE");
  app.add_option("--profile", a->profile_path, "the profile to predict with (default: built-in)")
      ->type_name("FILE");
  app.add_option("--catalog", a->catalog_path, "catalog entries merged into the built-in one")
      ->type_name("FILE");
  app.add_option("--stack-features", a->features_paths,
                 "a run annotation file (a stack's features by CSV id), applied in order")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app.add_option("--markdown", a->markdown_path, "write the held-out report as Markdown here")
      ->type_name("FILE");
  app.add_flag("--no-rows", no_rows, "do not print each run's row");
  app.add_flag("--no-holdout", no_holdout, "in-sample only");
  app.add_flag("--holdout-rows", a->holdout_rows, "print each held-out row");
  app.add_option("--holdout-by", a->holdout_by, "the group left out in turn")
      ->check(CLI::IsMember({"source", "moe-model", "era"}));
  app.add_option("--facts", facts, "what a user states of each run (the rest is predicted)")
      ->check(CLI::IsMember({"all", "version", "framework", "none"}));
  app.add_option("--explain", a->explain_id, "print this run's step breakdown")->type_name("ID");
  app.add_option("--pairs", a->pair_fields,
                 "compare predicted with measured throughput ratios of the runs of one source "
                 "that differ in these scenario fields only (e.g. workload.precision, "
                 "stack.version; a prefix ending in '.' names every field under it)")
      ->type_name("FIELD[,FIELD...]")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("--pairs-markdown", a->pairs_markdown_path,
                 "with --pairs: write the pairs' summary per change as Markdown here")
      ->type_name("FILE");
  app.add_flag("--facts-markdown", a->facts_markdown,
               "print leave-one-source-out at each level of --facts as Markdown");
  app.add_flag("--mfu-records", a->mfu_records,
               "print the best measured MFU per generation and precision of the runs");
  app.add_flag("--records-markdown", records,
               "print the record table (best published MFU) as Markdown; no CSV needed");
  app.add_flag("--releases-markdown", releases,
               "print the framework table's releases as Markdown; no CSV needed");
  app.add_option("csvs", a->csvs, "measured runs (calibration.csv's columns)")->type_name("CSV");
  if (std::optional<int> done = tools::ParseCommandLine(&app, argc, argv)) return done;
  if (records) {
    PrintRecords();  // the README's record table
    return 0;
  }
  if (releases) {
    PrintReleases();  // the README's release table
    return 0;
  }
  if (a->csvs.empty()) return tools::UsageError(app, "at least one CSV of runs is needed");
  a->rows = !no_rows;
  a->holdout = !no_holdout;
  ParseStatedFacts(facts, &a->facts);  // one of the names IsMember accepted
  if (!a->pairs_markdown_path.empty() && a->pair_fields.empty()) {
    return tools::UsageError(app, "--pairs-markdown needs --pairs");
  }
  if (!a->pair_fields.empty()) {
    if (absl::Status s = tools::CheckPairFields(a->pair_fields); !s.ok()) {
      return tools::UsageError(app, std::string(s.message()));
    }
    if (a->facts != StatedFacts::kAll) {
      return tools::UsageError(app, "--pairs compares the runs as stated: it needs --facts all");
    }
  }
  return std::nullopt;
}

// The built-in catalog with --catalog's entries, the built-in profile or --profile's, and the
// runs; false (with the reason on stderr) when any cannot be read.
bool LoadInputs(const Args& a, Catalog* catalog, Profile* profile, std::vector<Measurement>* runs) {
  *catalog = Catalog::Builtin();
  *profile = Profile::BuiltinDefault();
  std::string text;
  if (!a.catalog_path.empty()) {
    if (!ReadFile(a.catalog_path, &text)) {
      std::fprintf(stderr, "cannot read %s\n", a.catalog_path.c_str());
      return false;
    }
    if (absl::Status s = catalog->MergeText(text); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", a.catalog_path.c_str(), std::string(s.message()).c_str());
      return false;
    }
  }
  if (!a.profile_path.empty()) {
    if (!ReadFile(a.profile_path, &text)) {
      std::fprintf(stderr, "cannot read %s\n", a.profile_path.c_str());
      return false;
    }
    absl::StatusOr<Profile> p = Profile::FromText(text);
    if (!p.ok()) {
      std::fprintf(stderr, "%s: %s\n", a.profile_path.c_str(),
                   std::string(p.status().message()).c_str());
      return false;
    }
    *profile = *std::move(p);
  }
  absl::StatusOr<std::vector<Measurement>> loaded = tools::LoadRuns(a.csvs, a.features_paths);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return false;
  }
  *runs = *std::move(loaded);
  return true;
}

// --fit: the profile fitted from the documented priors to every run, and (--write-profile) the
// built-in profile's file; false (with the reason on stderr) on failure.
bool FitProfile(const Args& a, const std::vector<Measurement>& runs, const Catalog& catalog,
                const FitOptions& options, Profile* profile) {
  Profile start;  // the documented priors
  start.name = "default";
  absl::StatusOr<FitResult> r = Fit(runs, catalog, start, options, /*cross_validate=*/true);
  if (!r.ok()) {
    std::fprintf(stderr, "fit failed: %s\n", std::string(r.status().message()).c_str());
    return false;
  }
  *profile = r->profile;
  profile->description =
      "fitted to the measured runs given to scalecast-validate --fit (scripts/refit.sh: "
      "shared/data calibration.csv, calibration-stacks.csv and moe.csv)";
  profile->info["fitted_rows"] = std::to_string(r->after.overall.count);
  profile->info["in_sample_mape"] = absl::StrFormat("%.4f", r->after.overall.mape);
  profile->info["leave_one_source_out_mape"] = absl::StrFormat("%.4f", r->cross_validated_mape);
  profile->info["model_version"] = SCALECAST_MODEL_VERSION;
  if (r->layer_priors.level_spread > 0) {  // the calibrated layers' prior (LayerPriorsOf)
    profile->info["layer_level_spread"] = absl::StrFormat("%.4f", r->layer_priors.level_spread);
    profile->info["layer_run_scatter"] = absl::StrFormat("%.4f", r->layer_priors.run_scatter);
    profile->info["layer_scatter_dof"] = absl::StrFormat("%.3f", r->layer_priors.scatter_dof);
  }
  std::printf("fit: %d iterations; in-sample MAPE %.1f%% -> %.1f%%; leave-one-source-out %.1f%%\n",
              r->iterations, 100 * r->before.overall.mape, 100 * r->after.overall.mape,
              100 * r->cross_validated_mape);
  if (a.write_profile.empty()) return true;
  std::ofstream out(a.write_profile, std::ios::binary);
  out << "# Generated by: scripts/refit.sh (scalecast-validate --fit --write-profile "
      << "model/data/default_profile.txt <calibration CSVs>)\n"
      << "# Do not edit by hand; see model/profile.h for each parameter.\n"
      << profile->ToText();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", a.write_profile.c_str());
    return false;
  }
  std::printf("wrote %s\n", a.write_profile.c_str());
  return true;
}

// --mfu-records: the best measured MFU (model FLOPs over dense bf16 peak) per generation and
// precision.
void PrintMfuRecords(const std::vector<Measurement>& runs, const Catalog& catalog) {
  std::map<std::string, std::pair<double, const Measurement*>> best;
  for (const Measurement& m : runs) {
    const absl::StatusOr<double> mfu = MeasuredMfu(m, catalog);
    if (!mfu.ok()) continue;
    const Accelerator* a = catalog.FindAccelerator(m.scenario.cluster.accelerator);
    const std::string key =
        absl::StrCat(GenerationOf(a->family), " ", ToString(m.scenario.workload.precision));
    if (*mfu > best[key].first) best[key] = {*mfu, &m};
  }
  for (const auto& [k, v] : best) {
    std::printf("%-22s %.3f  %s | %s | %s x%d\n", k.c_str(), v.first, v.second->source.c_str(),
                v.second->scenario.workload.model.name.c_str(),
                v.second->scenario.cluster.accelerator.c_str(),
                v.second->scenario.cluster.num_gpus);
  }
}

std::string CsvId(const Measurement& m) {
  const auto it = m.labels.find(kCsvIdLabel);
  return it == m.labels.end() ? "" : it->second;
}

// One line per run: its layout, predicted and measured (the breakdown first for --explain's).
void PrintRows(const ValidationReport& report, const std::string& explain_id,
               const Catalog& catalog, const Profile& profile) {
  std::printf("%-5s %-14s %-20s %-30s %5s %-22s %10s %10s %7s\n", "id", "framework", "accelerator",
              "model", "gpus", "layout(tp/pp/cp/dp mb rc)", "predicted", "measured", "error");
  for (const ValidationRow& r : report.rows) {
    const Measurement& m = *r.measurement;
    const std::string id = CsvId(m);
    if (!r.failure.empty()) {
      std::printf("%-5s %-14s %-20s %-30.30s %5d  FAILED: %s\n", id.c_str(),
                  m.scenario.framework.c_str(), m.scenario.cluster.accelerator.c_str(),
                  m.scenario.workload.model.name.c_str(), m.scenario.cluster.num_gpus,
                  r.failure.c_str());
      continue;
    }
    const Parallelism& p = r.layout;
    std::string layout = absl::StrFormat("%d/%d/%d/%d %d %s", p.tp, p.pp, p.cp, p.dp, p.micro_batch,
                                         ToString(p.recompute));
    if (p.recompute_layers > 0) absl::StrAppend(&layout, ":", p.recompute_layers);
    if (p.cpu_offload_layers > 0) absl::StrAppend(&layout, " off", p.cpu_offload_layers);
    if (p.ep > 1 || p.etp > 1) absl::StrAppend(&layout, absl::StrFormat(" ep%d/%d", p.ep, p.etp));
    if (p.cp_a2a > 0) absl::StrAppend(&layout, " a2a", p.cp_a2a);
    if (id == explain_id) Explain(m, p, catalog, profile);
    std::printf("%-5s %-14s %-20s %-30.30s %5d %-22s %10.1f %10.1f %+6.1f%%%s\n", id.c_str(),
                m.scenario.framework.c_str(), m.scenario.cluster.accelerator.c_str(),
                m.scenario.workload.model.name.c_str(), m.scenario.cluster.num_gpus, layout.c_str(),
                r.predicted_tokens_per_s_per_gpu, m.tokens_per_s_per_gpu, 100 * r.error,
                r.fits ? "" : "  (memory model: does not fit)");
  }
}

// Absolute errors summarised per key of each predicted row.
std::map<std::string, ErrorStats> StatsBy(
    const std::vector<ValidationRow>& rows,
    const std::function<std::string(const ValidationRow&)>& key) {
  std::map<std::string, std::vector<double>> errors;
  for (const ValidationRow& r : rows) {
    if (r.failure.empty()) errors[key(r)].push_back(std::fabs(r.error));
  }
  std::map<std::string, ErrorStats> out;
  for (const auto& [k, v] : errors) out[k] = Summarise(v);
  return out;
}

// The hold-out --holdout-by names: each source, each mixture-of-experts model (dense runs always
// train), or each software era (releases before 2025 against those of 2025 on, each way).
HoldOutReport HoldOut(const std::string& by, const std::vector<Measurement>& runs,
                      const Catalog& catalog, const FitOptions& options,
                      const std::vector<Measurement>& asked) {
  Profile start;
  if (by == "moe-model") {
    return LeaveOneGroupOut(
        runs, catalog, start, options,
        [](const Measurement& m) {
          return m.scenario.workload.model.moe.enabled() ? m.scenario.workload.model.name
                                                         : std::string();
        },
        &asked);
  }
  if (by == "era") {
    return LeaveOneGroupOut(
        runs, catalog, start, options,
        [](const Measurement& m) {
          return std::string(SoftwareDateOf(m) < 2025.0 ? "released before 2025"
                                                        : "released 2025 or later");
        },
        &asked);
  }
  return LeaveOneSourceOut(runs, catalog, start, options, &asked);
}

void PrintHeldOutRows(const HoldOutReport& h) {
  std::printf(
      "\nheld-out rows: id, source, model, accelerator, gpus, predicted, measured, error\n");
  for (const ValidationRow& r : h.rows) {
    const Measurement& m = *r.measurement;
    std::printf("HO %s | %s | %s | %s | %d | %.1f | %.1f | %+.1f%%%s\n", CsvId(m).c_str(),
                m.source.c_str(), m.scenario.workload.model.name.c_str(),
                m.scenario.cluster.accelerator.c_str(), m.scenario.cluster.num_gpus,
                r.predicted_tokens_per_s_per_gpu, m.tokens_per_s_per_gpu, 100 * r.error,
                r.failure.empty() ? "" : " FAILED");
  }
}

// A controlled pair's value as printed: the named fields' values that are set, without their
// keys ("workload.precision=fp8,stack.fp8_recipe=tensorwise" -> "fp8 tensorwise").
std::string PairValue(const std::string& value) {
  std::vector<std::string> set;
  for (absl::string_view field : absl::StrSplit(value, ',')) {
    const size_t eq = field.find('=');
    const absl::string_view v = eq == absl::string_view::npos ? field : field.substr(eq + 1);
    if (!v.empty()) set.emplace_back(v);
  }
  return set.empty() ? "(unset)" : absl::StrJoin(set, " ");
}

// One line of --pairs' summary: a change (one value to the next, or "all") over its pairs.
struct PairChange {
  std::string change;
  size_t pairs = 0;
  double measured = 0;   // median measured ratio (not for "all")
  double predicted = 0;  // median predicted ratio (not for "all")
  double mean_error = 0;
  double median_abs_error = 0;
  bool total = false;  // the "all" line: no ratios of its own
};

// Per change (in text order), the median measured and predicted ratios and how far the predicted
// ratio is from the measured one; then "all" the pairs together.
std::vector<PairChange> SummarisePairs(const std::vector<tools::ControlledPair>& pairs) {
  std::map<std::string, std::vector<const tools::ControlledPair*>> by_change;
  for (const tools::ControlledPair& p : pairs) {
    by_change[absl::StrCat(PairValue(p.from_value), " -> ", PairValue(p.to_value))].push_back(&p);
  }
  auto errors_of = [](PairChange* c, const std::vector<double>& errors) {
    std::vector<double> abs_errors;
    for (double e : errors) {
      c->mean_error += e / errors.size();
      abs_errors.push_back(std::fabs(e));
    }
    c->pairs = errors.size();
    c->median_abs_error = Summarise(abs_errors).median_ape;
  };
  std::vector<PairChange> out;
  std::vector<double> all_errors;
  for (const auto& [change, list] : by_change) {
    std::vector<double> measured, predicted, errors;
    for (const tools::ControlledPair* p : list) {
      measured.push_back(p->measured_ratio);
      predicted.push_back(p->predicted_ratio);
      errors.push_back(p->Error());
    }
    all_errors.insert(all_errors.end(), errors.begin(), errors.end());
    PairChange& c = out.emplace_back();
    c.change = change;
    c.measured = Median(measured);
    c.predicted = Median(predicted);
    errors_of(&c, errors);
  }
  PairChange& all = out.emplace_back();
  all.change = "all";
  all.total = true;
  errors_of(&all, all_errors);
  return out;
}

// --pairs: each controlled pair (the CSV ids of its two runs, the change, the measured and the
// predicted throughput ratio), then the summary.
void PrintPairs(const std::vector<tools::ControlledPair>& pairs,
                const std::vector<std::string>& fields) {
  std::printf("\ncontrolled pairs (runs that differ in %s only): %zu\n",
              absl::StrJoin(fields, ", ").c_str(), pairs.size());
  std::printf("%-6s %-6s %-26s %-16s %5s %-30s %9s %9s %7s\n", "from", "to", "model", "accelerator",
              "gpus", "change", "measured", "predicted", "error");
  for (const tools::ControlledPair& p : pairs) {
    const Measurement& m = *p.to->measurement;
    const std::string change = absl::StrCat(PairValue(p.from_value), " -> ", PairValue(p.to_value));
    std::printf("%-6s %-6s %-26.26s %-16.16s %5d %-30.30s %9.3f %9.3f %+6.1f%%\n",
                CsvId(*p.from->measurement).c_str(), CsvId(m).c_str(),
                m.scenario.workload.model.name.c_str(), m.scenario.cluster.accelerator.c_str(),
                m.scenario.cluster.num_gpus, change.c_str(), p.measured_ratio, p.predicted_ratio,
                100 * p.Error());
  }
  std::printf("\n%-40s %5s %15s %16s %11s %14s\n", "change", "pairs", "measured ratio",
              "predicted ratio", "mean error", "median |error|");
  for (const PairChange& c : SummarisePairs(pairs)) {
    const bool all = c.total;
    std::printf("%-40.40s %5zu %15s %16s %+10.1f%% %13.1f%%\n", c.change.c_str(), c.pairs,
                all ? "" : absl::StrFormat("%.3f", c.measured).c_str(),
                all ? "" : absl::StrFormat("%.3f", c.predicted).c_str(), 100 * c.mean_error,
                100 * c.median_abs_error);
  }
}

// --pairs-markdown: the summary as a Markdown table.
void WritePairsMarkdown(std::FILE* f, const std::vector<tools::ControlledPair>& pairs,
                        const std::vector<std::string>& fields) {
  std::fprintf(f,
               "Generated by `scripts/accuracy.sh` (`scalecast-validate --pairs %s`): %zu pairs of "
               "runs that differ in those fields only.\n\n"
               "| change | pairs | measured ratio (median) | predicted ratio (median) | mean error "
               "| median abs. error |\n|---|---:|---:|---:|---:|---:|\n",
               absl::StrJoin(fields, ",").c_str(), pairs.size());
  for (const PairChange& c : SummarisePairs(pairs)) {
    const bool all = c.total;
    std::fprintf(f, "| %s | %zu | %s | %s | %+.1f %% | %.1f %% |\n",
                 all ? "**all**" : MarkdownCell(c.change).c_str(), c.pairs,
                 all ? "" : absl::StrFormat("%.3f", c.measured).c_str(),
                 all ? "" : absl::StrFormat("%.3f", c.predicted).c_str(), 100 * c.mean_error,
                 100 * c.median_abs_error);
  }
}

// --holdout-by moe-model's markdown: the mixture-of-experts runs only, in sample (the profile
// given) and each model left out in turn, per model and per accelerator.
void WriteMoeMarkdown(std::FILE* f, const ValidationReport& report, const HoldOutReport& h,
                      const std::map<std::string, ErrorStats>& held_by_acc) {
  std::map<std::string, std::vector<double>> by_model, by_acc;
  std::vector<double> all;
  int refused = 0;
  for (const ValidationRow& r : report.rows) {
    if (!r.measurement->scenario.workload.model.moe.enabled()) continue;
    if (!r.failure.empty()) {
      ++refused;
      continue;
    }
    const double ae = std::fabs(r.error);
    by_model[r.measurement->scenario.workload.model.name].push_back(ae);
    by_acc[r.measurement->scenario.cluster.accelerator].push_back(ae);
    all.push_back(ae);
  }
  std::map<std::string, ErrorStats> in_model, in_acc;
  for (const auto& [k, v] : by_model) in_model[k] = Summarise(v);
  for (const auto& [k, v] : by_acc) in_acc[k] = Summarise(v);
  const ErrorStats in_all = Summarise(all);
  std::fprintf(f,
               "Generated by `scripts/accuracy.sh`. %d mixture-of-experts runs, %d "
               "refused, %d whose measured layout the memory model says does not fit. "
               "In-sample MAPE %.1f %% (median %.1f %%); leave-one-model-out MAPE %.1f %% "
               "(median %.1f %%).\n\n",
               in_all.count + refused, refused, report.not_fitting_count, 100 * in_all.mape,
               100 * in_all.median_ape, 100 * h.overall.mape, 100 * h.overall.median_ape);
  WriteMarkdown(f, "model", in_model, &h.by_group, nullptr);
  WriteMarkdown(f, "accelerator", in_acc, &held_by_acc, nullptr);
}

// What --markdown writes for a source or era hold-out.
struct AccuracyTables {
  const ValidationReport& report;
  const HoldOutReport& held;
  const std::map<std::string, ErrorStats>& in_by_source;
  const std::map<std::string, ErrorStats>& held_by_acc;
  const std::map<std::string, ErrorStats>& baseline;
  const ErrorStats& baseline_overall;
};

void WriteAccuracyMarkdown(std::FILE* f, const std::string& holdout_by, const AccuracyTables& t) {
  const HoldOutReport& h = t.held;
  std::fprintf(f,
               "Generated by `scripts/accuracy.sh`. %d runs, %d refused. Overall: in-sample "
               "MAPE %.1f %%, leave-one-%s-out MAPE %.1f %% (median %.1f %%), FLOPs-only "
               "baseline %.1f %%. 80 %% band: %.1f %% of held-out runs inside, median width "
               "%.1f %%.\n\n",
               t.report.overall.count + t.report.failed_count, t.report.failed_count,
               100 * t.report.overall.mape, holdout_by.c_str(), 100 * h.overall.mape,
               100 * h.overall.median_ape, 100 * t.baseline_overall.mape, 100 * h.band_coverage,
               100 * h.band_median_width);
  if (holdout_by == "era") {
    std::fprintf(f,
                 "| era predicted (fitted on the other) | rows | MAPE | median APE |\n"
                 "|---|---:|---:|---:|\n");
    for (const auto& [era, st] : h.by_group) {
      std::fprintf(f, "| %s | %d | %.1f %% | %.1f %% |\n", era.c_str(), st.count, 100 * st.mape,
                   100 * st.median_ape);
    }
    std::fprintf(f, "\n");
  } else {
    WriteMarkdown(f, "source", t.in_by_source, &h.by_group, &t.baseline);
    WriteScaleMarkdown(f, h.rows);
    WriteSoftwareYearMarkdown(f, h.rows);
  }
  WriteMarkdown(f, "accelerator", t.report.by_accelerator, &t.held_by_acc, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (std::optional<int> done = ParseArgs(argc, argv, &a)) return *done;
  Catalog catalog;
  Profile profile;
  std::vector<Measurement> runs;
  if (!LoadInputs(a, &catalog, &profile, &runs)) return 1;
  FitOptions options;
  if (a.fit && !FitProfile(a, runs, catalog, options, &profile)) return 1;
  if (a.facts_markdown) {
    WriteFactsMarkdown(stdout, runs, catalog, options);
    return 0;
  }
  if (a.mfu_records) {
    PrintMfuRecords(runs, catalog);
    return 0;
  }
  // The runs as their users would ask for them (--facts): what is predicted, in and out of
  // sample; the fits above and below see every fact.
  const std::vector<Measurement> asked = AsAsked(runs, a.facts);
  const ValidationReport report = Validate(asked, catalog, profile);
  if (a.rows) PrintRows(report, a.explain_id, catalog, profile);
  auto by_source = [](const Measurement& m) { return m.source; };
  ErrorStats baseline_overall;
  const auto baseline = FlopsOnlyBaseline(runs, catalog, &baseline_overall, by_source);
  const std::map<std::string, ErrorStats> in_by_source =
      StatsBy(report.rows, [](const ValidationRow& r) { return r.measurement->source; });
  std::printf(
      "\nprofile '%s': %d rows predicted, %d failed; %d measured layouts the memory "
      "model says do not fit\n",
      profile.name.c_str(), report.overall.count, report.failed_count, report.not_fitting_count);
  std::printf(
      "in-sample: MAPE %.1f%%, median APE %.1f%% (FLOPs-only baseline, one fitted "
      "efficiency per accelerator: MAPE %.1f%%)\n",
      100 * report.overall.mape, 100 * report.overall.median_ape, 100 * baseline_overall.mape);
  PrintStats("source", in_by_source, &baseline);
  PrintStats("accelerator", report.by_accelerator, nullptr);
  PrintStats("framework", report.by_framework, nullptr);
  if (!a.pair_fields.empty()) {
    absl::StatusOr<std::vector<tools::ControlledPair>> pairs =
        tools::ControlledPairs(report.rows, a.pair_fields);
    if (!pairs.ok()) {  // CheckPairFields passed in ParseArgs
      std::fprintf(stderr, "%s\n", std::string(pairs.status().message()).c_str());
      return 1;
    }
    PrintPairs(*pairs, a.pair_fields);
    if (!a.pairs_markdown_path.empty()) {
      std::FILE* f = std::fopen(a.pairs_markdown_path.c_str(), "w");
      if (f == nullptr) {
        std::fprintf(stderr, "cannot write %s\n", a.pairs_markdown_path.c_str());
        return 1;
      }
      WritePairsMarkdown(f, *pairs, a.pair_fields);
      std::fclose(f);
    }
  }
  if (!a.holdout) return 0;
  const HoldOutReport h = HoldOut(a.holdout_by, runs, catalog, options, asked);
  std::printf(
      "\nleave-one-%s-out (fit on the others from the priors, predict the one left out): "
      "MAPE %.1f%%, median APE %.1f%% over %d rows\n",
      a.holdout_by.c_str(), 100 * h.overall.mape, 100 * h.overall.median_ape, h.overall.count);
  std::printf("80%% band out of sample: coverage %.1f%%, median width %.1f%% of the prediction\n",
              100 * h.band_coverage, 100 * h.band_median_width);
  PrintStats("held-out source", h.by_group, &baseline);
  if (a.holdout_rows) PrintHeldOutRows(h);
  const std::map<std::string, ErrorStats> held_by_acc = StatsBy(
      h.rows, [](const ValidationRow& r) { return r.measurement->scenario.cluster.accelerator; });
  PrintStats("held-out accelerator", held_by_acc, nullptr);
  if (a.markdown_path.empty()) return 0;
  std::FILE* f = std::fopen(a.markdown_path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", a.markdown_path.c_str());
    return 1;
  }
  if (a.holdout_by == "moe-model") {
    WriteMoeMarkdown(f, report, h, held_by_acc);
  } else {
    WriteAccuracyMarkdown(f, a.holdout_by,
                          {report, h, in_by_source, held_by_acc, baseline, baseline_overall});
  }
  std::fclose(f);
  return 0;
}
