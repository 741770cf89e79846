// scalecast-fewshot: how far a user's own few runs carry a prediction. For each source of the
// calibration CSVs: fit the default profile without that source (as leave-one-source-out does),
// calibrate a layer on a few of its rows with the few-shot rule (FitLayer, model/calibration.h),
// and predict its other rows with and without the layer.
//
//   scalecast-fewshot [--stack-features FILE]... [--markdown FILE] [--every N] [--threads N]
//                     [--fold-cache DIR] [--level-spread T --run-scatter S --scatter-dof D]
//                     [--noise F] [--min-gain F] [--credibility F] [--rows FILE]
//                     [--per-stack | --per-accelerator]
//                     CSV [CSV ...]
//
// Calibration rows of a source: its rows 0, N, 2N, ... in file order (N = 8), at least 2 (rows
// 0 and n/2 when every-Nth gives one); a source with fewer than 3 rows cannot keep a row to
// predict after that and is listed as skipped, outside the overall figures. --per-stack (what
// scripts/fewshot.sh runs) calibrates each stack of a source, its rows of one framework on one
// accelerator (what a user calibrates under one name), on its own with the same rule, over the
// source's fold; the overall figures are over the groups, and each source's groups are also
// summed back into the source ("no source worse"). --per-accelerator groups each source's rows
// by accelerator and calibrates each group on two of them (the first and the middle one), as the
// issue's outside check records two runs per source and accelerator. --fold-cache keeps each
// fold's profile in DIR (a development aid: delete it after a model change); --level-spread with
// --run-scatter and --scatter-dof, --noise, --min-gain and --credibility override FitLayer's
// prior, noise level, margin and the level's credibility interval (to study them; Calibrate
// uses the built-in profile's prior, LayerPriorsOf). --rows writes every row as CSV:
// calibration or test, and its error (predicted / measured - 1) uncalibrated and calibrated.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/profile.h"
#include "tools/args.h"
#include "tools/markdown.h"
#include "tools/run_files.h"

namespace {

using namespace scalecast;  // NOLINT: a tool's main

using tools::MarkdownCell;
using tools::ReadFile;

struct SourceResult {
  std::string source;
  int rows = 0;
  int calibration_rows = 0;
  bool skipped = false;
  std::string note;
  ErrorStats uncalibrated;  // the fold's profile on the rows not calibrated on
  ErrorStats calibrated;    // the layer on the same rows
  std::vector<double> uncalibrated_errors, calibrated_errors;
  std::vector<double> best_level_errors;  // the best level over the layer, chosen on the test rows
  std::vector<std::string> changed;       // "key old->new"
  std::string reason;
  std::vector<Measurement> held;  // every row of the source, predicted by the fold's profile
  std::vector<double> held_errors;
  // --rows: one line per row of the source (CSV, without the header).
  std::vector<std::string> row_lines;
  Profile fold;                                // the default profile fitted without the source
  std::vector<Measurement> mine;               // every row of the source, in file order
  std::vector<Measurement> calibration, test;  // its rows, split
  std::string declined;                        // LayerFit::declined
  LayerPriors priors{0, 0, 0, ""};             // the layer's prior
};

std::vector<double> AbsErrors(const ValidationReport& r) {
  std::vector<double> out;
  for (const ValidationRow& row : r.rows) {
    if (row.failure.empty()) out.push_back(std::fabs(row.error));
  }
  return out;
}

// Rows 0, every, 2*every, ... of n; at least two (0 and n/2).
std::vector<size_t> CalibrationIndices(size_t n, size_t every) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; i += every) out.push_back(i);
  if (out.size() < 2 && n >= 2) out = {0, n / 2};
  return out;
}

absl::StatusOr<Profile> FoldProfile(const std::vector<Measurement>& train, const Catalog& catalog,
                                    const std::string& cache_path) {
  std::string text;
  if (!cache_path.empty() && ReadFile(cache_path, &text)) return Profile::FromText(text);
  Profile start;  // the documented priors, as LeaveOneSourceOut starts
  absl::StatusOr<FitResult> fit = Fit(train, catalog, start, FitOptions(), false);
  if (!fit.ok()) return fit.status();
  if (!cache_path.empty()) std::ofstream(cache_path, std::ios::binary) << fit->profile.ToText();
  return fit->profile;
}

// Phase 1: the source's split and its fold (the default profile fitted without it), and every
// row of the source predicted by the fold (its held-out residuals).
SourceResult FoldSource(const std::string& source, const std::vector<Measurement>& runs,
                        const Catalog& catalog, size_t every, const std::string& cache_path) {
  SourceResult r;
  r.source = source;
  std::vector<Measurement> mine, train;
  for (const Measurement& m : runs) (m.source == source ? mine : train).push_back(m);
  r.rows = static_cast<int>(mine.size());
  if (mine.size() < 3) {
    r.skipped = true;
    r.note = "fewer than 3 rows: no row left to predict after 2 calibration rows";
    return r;
  }
  const std::vector<size_t> picked = CalibrationIndices(mine.size(), every);
  std::vector<Measurement> calibration, test;
  for (size_t i = 0; i < mine.size(); ++i) {
    (std::find(picked.begin(), picked.end(), i) != picked.end() ? calibration : test)
        .push_back(mine[i]);
  }
  r.calibration_rows = static_cast<int>(calibration.size());
  absl::StatusOr<Profile> fold = FoldProfile(train, catalog, cache_path);
  if (!fold.ok()) {
    r.skipped = true;
    r.note = absl::StrCat("fold fit failed: ", fold.status().message());
    return r;
  }
  r.fold = *std::move(fold);
  r.mine = mine;
  r.calibration = std::move(calibration);
  r.test = std::move(test);
  for (const ValidationRow& row : Validate(mine, catalog, r.fold).rows) {
    if (!row.failure.empty()) continue;
    r.held.push_back(*row.measurement);
    r.held_errors.push_back(row.error);
  }
  return r;
}

// Phase 2: the layer calibrated on the source's calibration rows over its fold, and its other
// rows predicted with and without it.
void CalibrateSource(const Catalog& catalog, size_t every, LayerFitOptions options,
                     SourceResult* result) {
  SourceResult& r = *result;
  if (r.skipped) return;
  options.evidence = absl::StrCat("every ", every, "th row of ", r.source);
  absl::StatusOr<LayerFit> layer = FitLayer(r.calibration, catalog, r.fold, options);
  if (!layer.ok()) {
    r.skipped = true;
    r.note = absl::StrCat("calibration failed: ", layer.status().message());
    return;
  }
  r.reason = layer->reason;
  r.declined = layer->declined;
  r.priors = layer->priors;
  for (const ParameterChange& c : layer->changes) {
    r.changed.push_back(absl::StrFormat("%s %.3g→%.3g", c.key, c.old_value, c.new_value));
  }
  const std::vector<Measurement>& test = r.test;
  const ValidationReport uncal = Validate(test, catalog, r.fold);
  const ValidationReport cal = Validate(test, catalog, layer->profile);
  r.uncalibrated_errors = AbsErrors(uncal);
  r.calibrated_errors = AbsErrors(cal);
  auto line = [&r](const char* role, const ValidationRow& u, const ValidationRow& c) {
    const Measurement& m = *u.measurement;
    auto id = m.labels.find(kCsvIdLabel);
    r.row_lines.push_back(absl::StrFormat(
        "\"%s\",%s,%s,\"%s\",%s,%d,%s,%.6g,%.6g,%.6g", r.source,
        id == m.labels.end() ? "" : id->second, role, m.scenario.workload.model.name,
        m.scenario.cluster.accelerator, m.scenario.cluster.num_gpus,
        ToString(m.scenario.workload.precision), m.tokens_per_s_per_gpu,
        u.failure.empty() ? u.error : NAN, c.failure.empty() ? c.error : NAN));
  };
  for (size_t i = 0; i < layer->before.rows.size(); ++i) {
    line("calibration", layer->before.rows[i], layer->after.rows[i]);
  }
  for (size_t i = 0; i < uncal.rows.size(); ++i) line("test", uncal.rows[i], cal.rows[i]);
  r.uncalibrated = Summarise(r.uncalibrated_errors);
  r.calibrated = Summarise(r.calibrated_errors);
  // The best one more level could do over the layer, chosen on the predicted rows themselves:
  // the factor c that minimises the mean of |a_i c - 1| (a_i = predicted / measured with the
  // layer), the median of 1 / a_i weighted by a_i. What is left is the scatter of the rows about
  // their own level, which no level can take: a bound, not a calibration.
  std::vector<std::pair<double, double>> points;  // 1 / a_i, a_i
  double total = 0;
  for (const ValidationRow& row : cal.rows) {
    if (!row.failure.empty()) continue;
    points.emplace_back(1 / (1 + row.error), 1 + row.error);
    total += 1 + row.error;
  }
  std::sort(points.begin(), points.end());
  double c = 1, acc = 0;
  for (const auto& [x, w] : points) {
    acc += w;
    c = x;
    if (acc >= total / 2) break;
  }
  for (const ValidationRow& row : cal.rows) {
    if (row.failure.empty()) r.best_level_errors.push_back(std::fabs((1 + row.error) * c - 1));
  }
}

enum class Grouping { kSource, kStack, kAccelerator };

std::string Pct(double f) { return absl::StrFormat("%.1f %%", 100 * f); }

// The command line.
struct Args {
  std::string markdown_path, cache_dir, rows_path;
  std::vector<std::string> annotations;  // every --stack-features, applied in order
  Grouping grouping = Grouping::kSource;
  size_t every = 8;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> csvs;
  LayerFitOptions layer_options;  // FitLayer's defaults, as Calibrate uses them
  bool priors_given = false;      // --level-spread, --run-scatter and --scatter-dof
};

// The arguments, or the exit code of a run that ends here (--help, a usage error).
std::optional<int> ParseArgs(int argc, char** argv, Args* a) {
  LayerFitOptions& lo = a->layer_options;
  CLI::App app(
      "Few-shot calibration, checked per source: each source's fold profile (fitted without it) "
      "calibrated on every Nth of its runs, the error on its other runs before and after.",
      "scalecast-fewshot");
  const auto positive = tools::NumberIn("> 0", [](double x) { return x > 0; });
  const auto non_negative = tools::NumberIn(">= 0", [](double x) { return x >= 0; });
  app.add_option("--stack-features", a->annotations,
                 "a run annotation file (a stack's features by CSV id), applied in order")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app.add_option("--markdown", a->markdown_path, "write the report as Markdown here")
      ->type_name("FILE");
  app.add_option("--rows", a->rows_path,
                 "write each row (calibrated on or held out) with its errors as CSV here")
      ->type_name("FILE");
  app.add_option("--fold-cache", a->cache_dir, "keep each fold's fitted profile in this directory")
      ->type_name("DIR");
  app.add_option("--every", a->every, "calibrate on every Nth run of a group")
      ->type_name("N")
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--threads", a->threads, "folds fitted at once")
      ->type_name("N")
      ->check(CLI::Range(1, 1024));
  bool by_stack = false, by_accelerator = false;
  CLI::Option* per_stack =
      app.add_flag("--per-stack", by_stack, "group the runs by stack, not by source");
  app.add_flag("--per-accelerator", by_accelerator, "group the runs by stack and accelerator")
      ->excludes(per_stack);
  app.add_option("--level-spread", lo.priors.level_spread,
                 "the layer prior's level spread (log; with --run-scatter and --scatter-dof)")
      ->type_name("T")
      ->check(positive);
  app.add_option("--run-scatter", lo.priors.run_scatter, "the layer prior's run scatter (log)")
      ->type_name("S")
      ->check(positive);
  app.add_option("--scatter-dof", lo.priors.scatter_dof, "the run scatter's degrees of freedom")
      ->type_name("D")
      ->check(positive);
  app.add_option("--noise", lo.noise, "run-level error the runs are not fitted below")
      ->type_name("F")
      ->check(non_negative);
  app.add_option("--credibility", lo.credibility,
                 "central interval of the stack's level that must clear 1")
      ->type_name("F")
      ->check(tools::NumberIn("in (0, 1)", [](double x) { return x > 0 && x < 1; }));
  app.add_option("--min-gain", lo.min_gain,
                 "held-out MAPE further parameters must gain over the level alone")
      ->type_name("F")
      ->check(non_negative);
  app.add_option("csvs", a->csvs, "measured runs (calibration.csv's columns)")->type_name("CSV");
  if (std::optional<int> done = tools::ParseCommandLine(&app, argc, argv)) return done;
  if (a->csvs.empty()) return tools::UsageError(app, "at least one CSV of runs is needed");
  if (by_stack) a->grouping = Grouping::kStack;
  if (by_accelerator) a->grouping = Grouping::kAccelerator;
  const LayerPriors& given = lo.priors;
  const int set = (given.level_spread > 0) + (given.run_scatter > 0) + (given.scatter_dof > 0);
  if (set != 0 && set != 3) {
    return tools::UsageError(app, "--level-spread, --run-scatter and --scatter-dof go together");
  }
  a->priors_given = set == 3;
  if (a->priors_given) {
    lo.priors.derivation = absl::StrFormat(
        "given: level spread %.3f, run scatter %.3f with %.2f degrees of freedom (log)",
        given.level_spread, given.run_scatter, given.scatter_dof);
  }
  return std::nullopt;
}

// work(0) .. work(n - 1) over `threads` threads (the model is pure and thread-safe).
void ParallelFor(int threads, size_t n, const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) work(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

std::vector<std::string> SourcesOf(const std::vector<Measurement>& runs) {
  std::vector<std::string> sources;
  for (const Measurement& m : runs) {
    if (std::find(sources.begin(), sources.end(), m.source) == sources.end()) {
      sources.push_back(m.source);
    }
  }
  std::sort(sources.begin(), sources.end());
  return sources;
}

// The folds' held-out rows but the one of source `skip` (every fold's with skip out of range).
std::vector<ValidationRow> HeldRowsExcept(const std::vector<SourceResult>& results, size_t skip) {
  std::vector<ValidationRow> rows;
  for (size_t j = 0; j < results.size(); ++j) {
    if (j == skip) continue;
    for (size_t i = 0; i < results[j].held.size(); ++i) {
      ValidationRow row;
      row.measurement = &results[j].held[i];
      row.error = results[j].held_errors[i];
      rows.push_back(row);
    }
  }
  return rows;
}

// The groups a grouped protocol calibrates (--per-stack, --per-accelerator): each source's rows
// of one stack, calibrated on its own rows alone over the source's fold. A stack is what a user
// calibrates: --per-stack, one framework on one accelerator, calibrated on every Nth of its rows
// (at least 2) as a source is; --per-accelerator, one accelerator, calibrated on two of its rows
// (its first and middle), as the outside check records two runs per source and
// accelerator.
std::vector<SourceResult> GroupsOf(const SourceResult& r, Grouping grouping, size_t every) {
  auto key_of = [grouping](const Measurement& m) {
    return grouping == Grouping::kStack
               ? absl::StrCat(m.scenario.framework, ", ", m.scenario.cluster.accelerator)
               : m.scenario.cluster.accelerator;
  };
  std::vector<std::string> keys;
  for (const Measurement& m : r.mine) {
    if (std::find(keys.begin(), keys.end(), key_of(m)) == keys.end()) keys.push_back(key_of(m));
  }
  std::vector<SourceResult> out;
  for (const std::string& key : keys) {
    SourceResult g;
    g.source = absl::StrCat(r.source, " [", key, "]");
    std::vector<Measurement> mine;
    for (const Measurement& m : r.mine) {
      if (key_of(m) == key) mine.push_back(m);
    }
    g.rows = static_cast<int>(mine.size());
    if (mine.size() < 3) {
      g.skipped = true;
      g.note = "fewer than 3 rows: no row left to predict after 2 calibration rows";
    } else {
      g.fold = r.fold;
      const std::vector<size_t> picked = grouping == Grouping::kStack
                                             ? CalibrationIndices(mine.size(), every)
                                             : std::vector<size_t>{0, mine.size() / 2};
      for (size_t k = 0; k < mine.size(); ++k) {
        (std::find(picked.begin(), picked.end(), k) != picked.end() ? g.calibration : g.test)
            .push_back(mine[k]);
      }
      g.calibration_rows = static_cast<int>(g.calibration.size());
    }
    out.push_back(std::move(g));
  }
  return out;
}

// Errors of some groups, pooled.
struct Pool {
  std::vector<double> uncal, cal, best;
  int groups = 0;
  void Add(const SourceResult& r) {
    ++groups;
    uncal.insert(uncal.end(), r.uncalibrated_errors.begin(), r.uncalibrated_errors.end());
    cal.insert(cal.end(), r.calibrated_errors.begin(), r.calibrated_errors.end());
    best.insert(best.end(), r.best_level_errors.begin(), r.best_level_errors.end());
  }
};

// The overall figures of the reported groups (or sources).
struct Totals {
  ErrorStats uncal, cal, best;
  int worse = 0, counted = 0, skipped_rows = 0, counted_rows = 0, calibration_rows = 0;
  std::vector<std::string> skipped;
  // Grouped: each source's groups' (uncalibrated, calibrated) errors together, so that "no
  // source worse" is checked per source too.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_source;
  int sources_worse = 0;
  // Where the error over the bound sits: groups calibrated on two runs (whose level two runs
  // show, or do not) and groups calibrated on more.
  std::string by_runs;
};

Totals TotalsOf(const std::vector<SourceResult>& reported, const std::vector<SourceResult>& results,
                const std::vector<size_t>& source_of, bool grouped) {
  Totals t;
  Pool all, two_runs, more_runs;
  for (size_t i = 0; i < reported.size(); ++i) {
    const SourceResult& r = reported[i];
    if (r.skipped) {
      t.skipped.push_back(r.source);
      t.skipped_rows += r.rows;
      continue;
    }
    ++t.counted;
    t.counted_rows += r.rows;
    t.calibration_rows += r.calibration_rows;
    all.Add(r);
    (r.calibration_rows <= 2 ? two_runs : more_runs).Add(r);
    if (r.calibrated.mape > r.uncalibrated.mape + 0.01) ++t.worse;
    if (grouped) {
      auto& [u, c] = t.by_source[results[source_of[i]].source];
      u.insert(u.end(), r.uncalibrated_errors.begin(), r.uncalibrated_errors.end());
      c.insert(c.end(), r.calibrated_errors.begin(), r.calibrated_errors.end());
    }
  }
  for (const auto& [name, errors] : t.by_source) {
    t.sources_worse += Summarise(errors.second).mape > Summarise(errors.first).mape + 0.01;
  }
  t.uncal = Summarise(all.uncal);
  t.cal = Summarise(all.cal);
  t.best = Summarise(all.best);
  auto split_text = [](const char* what, const Pool& s) {
    const ErrorStats u = Summarise(s.uncal), c = Summarise(s.cal), b = Summarise(s.best);
    return absl::StrFormat("%s, %d %s (%d predicted rows): %s -> %s, bound %s", what, s.groups,
                           s.groups == 1 ? "group" : "groups", c.count, Pct(u.mape), Pct(c.mape),
                           Pct(b.mape));
  };
  t.by_runs = absl::StrCat(split_text("calibrated on two runs", two_runs), "; ",
                           split_text("on more", more_runs));
  return t;
}

// The layer prior used, in words: the one given, or the range of the sources' own.
std::string PriorsUsed(const Args& a, const std::vector<SourceResult>& reported) {
  if (a.priors_given) return a.layer_options.priors.derivation;
  double lo[3] = {1e9, 1e9, 1e9}, hi[3] = {0, 0, 0};
  for (const SourceResult& r : reported) {
    if (r.skipped) continue;
    const double v[3] = {r.priors.level_spread, r.priors.run_scatter, r.priors.scatter_dof};
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], v[k]);
      hi[k] = std::max(hi[k], v[k]);
    }
  }
  return absl::StrFormat(
      "each source's from the leave-one-source-out residuals of the other sources "
      "(LayerPriorsFromHeldOut, as a refit without it would carry): level spread "
      "%.3f-%.3f, run scatter %.3f-%.3f with %.2f-%.2f degrees of freedom (log)",
      lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
}

void PrintReport(const std::vector<SourceResult>& reported, const Totals& t, bool grouped,
                 const std::string& used, const LayerPriors& from_folds) {
  for (const SourceResult& r : reported) {
    std::printf("\n%s\n  rows %d, calibration rows %d", r.source.c_str(), r.rows,
                r.calibration_rows);
    if (r.skipped) {
      std::printf(", skipped: %s\n", r.note.c_str());
      continue;
    }
    std::printf("; MAPE on the other %d rows: uncalibrated %.1f%%, calibrated %.1f%%\n",
                r.calibrated.count, 100 * r.uncalibrated.mape, 100 * r.calibrated.mape);
    std::printf("  %s\n", r.reason.c_str());
  }
  std::printf(
      "\noverall (%d %s, %d predicted rows): uncalibrated MAPE %.1f%%, calibrated %.1f%%; "
      "%d worse by more than 1 point; %zu skipped (%d rows)\n",
      t.counted, grouped ? "groups" : "sources", t.cal.count, 100 * t.uncal.mape, 100 * t.cal.mape,
      t.worse, t.skipped.size(), t.skipped_rows);
  if (grouped) {
    std::printf(
        "by source (its groups' predicted rows together): %d of %d worse by more than 1 "
        "point\n",
        t.sources_worse, static_cast<int>(t.by_source.size()));
  }
  std::printf(
      "the best level over each layer, chosen on its predicted rows (a bound, not a calibration): "
      "%.1f%%\n",
      100 * t.best.mape);
  std::printf(
      "overall MAPE to two decimals: uncalibrated %.2f%%, calibrated %.2f%%\nby "
      "calibration runs: %s\n",
      100 * t.uncal.mape, 100 * t.cal.mape, t.by_runs.c_str());
  std::printf("layer prior used: %s\nlayer prior from all the folds: %s\n", used.c_str(),
              from_folds.derivation.c_str());
}

bool WriteRows(const std::string& path, const std::vector<SourceResult>& reported) {
  std::ofstream f(path, std::ios::binary);
  f << "source,csv_id,role,model,accelerator,num_gpus,precision,measured_tokens_per_s_per_gpu,"
       "uncalibrated_error,calibrated_error\n";
  for (const SourceResult& r : reported) {
    for (const std::string& l : r.row_lines) f << l << "\n";
  }
  return static_cast<bool>(f);
}

void WriteFewshotMarkdown(std::FILE* f, const Args& a, const std::vector<SourceResult>& reported,
                          const Totals& t, const std::string& used) {
  const bool grouped = a.grouping != Grouping::kSource;
  std::fprintf(f,
               "Generated by `scripts/fewshot.sh`%s. Per source%s: the default profile fitted "
               "without the source, a layer calibrated on %s, the other rows predicted. Overall "
               "(%d %s, %d predicted rows): uncalibrated MAPE %s, calibrated %s; %d of %d worse "
               "by more than 1 point.",
               a.grouping == Grouping::kAccelerator ? " (scalecast-fewshot --per-accelerator)"
               : a.grouping == Grouping::kSource    ? " (scalecast-fewshot without --per-stack)"
                                                    : "",
               a.grouping == Grouping::kStack
                   ? " and stack (its rows of one framework on one accelerator, calibrated on "
                     "their own)"
               : a.grouping == Grouping::kAccelerator ? " and accelerator"
                                                      : "",
               a.grouping == Grouping::kAccelerator
                   ? "two of its rows (the first and the middle one)"
                   : absl::StrCat("every ", a.every, "th of its rows (at least 2)").c_str(),
               t.counted, grouped ? "groups" : "sources", t.cal.count, Pct(t.uncal.mape).c_str(),
               Pct(t.cal.mape).c_str(), t.worse, t.counted);
  if (grouped) {
    std::fprintf(f,
                 " By source (each source's groups' predicted rows together): %d of %d worse "
                 "by more than 1 point.",
                 t.sources_worse, static_cast<int>(t.by_source.size()));
  }
  std::fprintf(f,
               " The best level over each layer, chosen on the predicted rows themselves (what "
               "is left is their scatter about their own level, which no level can take: a "
               "bound, not a calibration): %s.",
               Pct(t.best.mape).c_str());
  std::fprintf(f, " By calibration runs, uncalibrated -> calibrated MAPE: %s.", t.by_runs.c_str());
  std::fprintf(f, " Layer prior: %s.", used.c_str());
  if (!t.skipped.empty()) {
    std::fprintf(f, " Skipped (fewer than 3 rows, none left to predict): %zu %s, %d rows.",
                 t.skipped.size(), grouped ? "groups" : "sources", t.skipped_rows);
  }
  std::fprintf(
      f,
      "\n\n| %s | rows | calibration rows | uncalibrated MAPE | calibrated MAPE | "
      "best level over the layer | parameters changed |\n|---|---:|---:|---:|---:|---:|---|\n",
      a.grouping == Grouping::kStack         ? "source [framework, accelerator]"
      : a.grouping == Grouping::kAccelerator ? "source [accelerator]"
                                             : "source");
  for (const SourceResult& r : reported) {
    if (r.skipped) {
      std::fprintf(f, "| %s | %d | - | - | - | - | skipped: %s |\n", MarkdownCell(r.source).c_str(),
                   r.rows, MarkdownCell(r.note).c_str());
      continue;
    }
    std::fprintf(f, "| %s | %d | %d | %s | %s | %s | %s |\n", MarkdownCell(r.source).c_str(),
                 r.rows, r.calibration_rows, Pct(r.uncalibrated.mape).c_str(),
                 Pct(r.calibrated.mape).c_str(), Pct(Summarise(r.best_level_errors).mape).c_str(),
                 r.changed.empty() ? absl::StrCat("none (declined: ", r.declined, ")").c_str()
                                   : absl::StrJoin(r.changed, ", ").c_str());
  }
  std::fprintf(f,
               "| **overall** (MAPE on %d predicted rows) | %d | %d | **%s** | **%s** | %s | "
               "|\n",
               t.cal.count, t.counted_rows, t.calibration_rows, Pct(t.uncal.mape).c_str(),
               Pct(t.cal.mape).c_str(), Pct(t.best.mape).c_str());
  if (!grouped) return;
  std::fprintf(f,
               "\nBy source, its groups' predicted rows together:\n\n| source | predicted "
               "rows | uncalibrated MAPE | calibrated MAPE |\n|---|---:|---:|---:|\n");
  for (const auto& [name, errors] : t.by_source) {
    const ErrorStats u = Summarise(errors.first), c = Summarise(errors.second);
    std::fprintf(f, "| %s | %d | %s | %s%s |\n", MarkdownCell(name).c_str(), u.count,
                 Pct(u.mape).c_str(), Pct(c.mape).c_str(),
                 c.mape > u.mape + 0.01 ? " (worse)" : "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (std::optional<int> done = ParseArgs(argc, argv, &a)) return *done;
  const Catalog& catalog = Catalog::Builtin();
  absl::StatusOr<std::vector<Measurement>> loaded = tools::LoadRuns(a.csvs, a.annotations);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return 1;
  }
  const std::vector<Measurement> runs = *std::move(loaded);
  const std::vector<std::string> sources = SourcesOf(runs);
  // One fold per source.
  std::vector<SourceResult> results(sources.size());
  ParallelFor(a.threads, sources.size(), [&](size_t i) {
    const std::string cache =
        a.cache_dir.empty() ? "" : absl::StrCat(a.cache_dir, "/fold-", i, ".txt");
    results[i] = FoldSource(sources[i], runs, catalog, a.every, cache);
  });
  // Each source's layer prior: unless given, the one its fold would carry from a refit
  // (LayerPriorsFromHeldOut on the leave-one-source-out residuals of the other sources, so that
  // no source's own rows shape its prior).
  std::vector<LayerPriors> priors(sources.size(), a.layer_options.priors);
  if (!a.priors_given) {
    ParallelFor(a.threads, sources.size(),
                [&](size_t i) { priors[i] = LayerPriorsFromHeldOut(HeldRowsExcept(results, i)); });
  }
  const bool grouped = a.grouping != Grouping::kSource;
  std::vector<SourceResult> groups;
  std::vector<size_t> source_of;  // each reported group's source
  for (size_t i = 0; i < results.size(); ++i) {
    if (!grouped) {
      source_of.push_back(i);
    } else if (!results[i].skipped) {
      for (SourceResult& g : GroupsOf(results[i], a.grouping, a.every)) {
        groups.push_back(std::move(g));
        source_of.push_back(i);
      }
    }
  }
  std::vector<SourceResult>& reported = grouped ? groups : results;
  ParallelFor(a.threads, reported.size(), [&](size_t i) {
    LayerFitOptions options = a.layer_options;
    options.priors = priors[source_of[i]];
    CalibrateSource(catalog, a.every, options, &reported[i]);
  });
  const Totals t = TotalsOf(reported, results, source_of, grouped);
  // The folds' held-out rows are leave-one-source-out residuals: the layer prior they give
  // (LayerPriorsFromHeldOut), and the range of the priors the layers used.
  const LayerPriors from_folds = LayerPriorsFromHeldOut(HeldRowsExcept(results, results.size()));
  const std::string used = PriorsUsed(a, reported);
  PrintReport(reported, t, grouped, used, from_folds);
  if (!a.rows_path.empty() && !WriteRows(a.rows_path, reported)) {
    std::fprintf(stderr, "cannot write %s\n", a.rows_path.c_str());
    return 1;
  }
  if (!a.markdown_path.empty()) {
    std::FILE* f = std::fopen(a.markdown_path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", a.markdown_path.c_str());
      return 1;
    }
    WriteFewshotMarkdown(f, a, reported, t, used);
    std::fclose(f);
  }
  return 0;
}
