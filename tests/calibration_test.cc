// The model's accuracy on both calibration sets (382 runs, with the stack each source states),
// and the fitter and CSV reader behind it.
#include "model/calibration.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/workload.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

const std::vector<Measurement>& Runs() {
  static const auto* runs = new std::vector<Measurement>(
      testing::LoadRuns({"calibration.csv", "calibration-stacks.csv"}));
  return *runs;
}

// FLOPs-only baseline: one geometric-mean efficiency per accelerator, MAPE per framework.
std::map<std::string, double> FlopsOnlyMape() {
  std::map<std::string, std::vector<std::pair<double, double>>> by_acc;  // acc -> (pred0, meas)
  std::map<std::string, std::vector<double>> err;
  for (const Measurement& m : Runs()) {
    const Accelerator& a = *Catalog::Builtin().FindAccelerator(m.scenario.cluster.accelerator);
    ModelSpec spec = m.scenario.workload.model;
    const double pred0 = a.PeakFlops(Precision::kBf16) /
                         ModelFlopsPerToken(Shape(spec), m.scenario.workload.seq_len);
    by_acc[a.id].push_back({pred0, m.tokens_per_s_per_gpu});
  }
  std::map<std::string, double> eff;
  for (const auto& [id, v] : by_acc) {
    double s = 0;
    for (const auto& [p, meas] : v) s += std::log(meas / p);
    eff[id] = std::exp(s / v.size());
  }
  for (const Measurement& m : Runs()) {
    const Accelerator& a = *Catalog::Builtin().FindAccelerator(m.scenario.cluster.accelerator);
    const double pred =
        eff[a.id] * a.PeakFlops(Precision::kBf16) /
        ModelFlopsPerToken(Shape(m.scenario.workload.model), m.scenario.workload.seq_len);
    err[m.scenario.framework].push_back(std::fabs(pred / m.tokens_per_s_per_gpu - 1));
  }
  std::map<std::string, double> out;
  for (const auto& [fw, v] : err) out[fw] = Summarise(v).mape;
  return out;
}

TEST(Calibration, DefaultProfileIsWithinTenPercentAndBeatsFlopsOnlyEverywhere) {
  ASSERT_EQ(Runs().size(), 382u);
  const ValidationReport r = Validate(Runs(), Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_EQ(r.failed_count, 0);
  EXPECT_EQ(r.overall.count, 382);
  EXPECT_LE(r.overall.mape, 0.07);
  const std::map<std::string, double> baseline = FlopsOnlyMape();
  for (const auto& [fw, stats] : r.by_framework) {
    EXPECT_LT(stats.mape, baseline.at(fw)) << fw;
  }
}

// 11.5 % overall; the worst source with five rows or more is torchtitan's asyncTP benchmark at
// 22.1 % (18.8 % before the era model: its rowwise float8 runs, slowed by a then-known torchao bug
// the model does not price, are the part of it that does not fit).
TEST(Calibration, LeaveOneSourceOutStaysWithinTwelvePercentAndTwentyFivePerSource) {
  const HoldOutReport h = LeaveOneSourceOut(Runs(), Catalog::Builtin(), Profile(), FitOptions());
  EXPECT_EQ(h.by_group.size(), 17u);
  EXPECT_EQ(h.overall.count, 382);
  EXPECT_LE(h.overall.mape, 0.12);
  for (const auto& [source, stats] : h.by_group) {
    if (stats.count >= 5) {
      EXPECT_LE(stats.mape, 0.25) << source;
    }
  }
}

TEST(Calibration, LeaveOneFrameworkOutStaysWithinFifteenPercent) {
  const HoldOutReport h = LeaveOneFrameworkOut(Runs(), Catalog::Builtin(), Profile(), FitOptions());
  EXPECT_EQ(h.by_group.size(), 7u);
  EXPECT_EQ(h.overall.count, 382);
  EXPECT_LE(h.overall.mape, 0.15);
}

// The asked-for runs are what a held-out source is predicted as; the fit still sees every fact.
// Asked as measured, nothing changes; asked with the stack's features left to the release's
// defaults, torchtitan's async-TP runs lose their async TP and compile and are predicted
// differently, from the same fit, and every row is the asked-for run.
TEST(Calibration, HeldOutRunsArePredictedAsAskedFromAFitOnEveryFact) {
  const std::string source = "torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md";
  auto group = [&source](const Measurement& m) { return m.source == source ? source : ""; };
  const std::vector<Measurement>& runs = Runs();
  const std::vector<Measurement> same = AsAsked(runs, StatedFacts::kAll);
  const std::vector<Measurement> version = AsAsked(runs, StatedFacts::kVersion);
  const Catalog& catalog = Catalog::Builtin();
  const HoldOutReport plain = LeaveOneGroupOut(runs, catalog, Profile(), FitOptions(), group);
  const HoldOutReport as_measured =
      LeaveOneGroupOut(runs, catalog, Profile(), FitOptions(), group, &same);
  const HoldOutReport defaults =
      LeaveOneGroupOut(runs, catalog, Profile(), FitOptions(), group, &version);
  ASSERT_EQ(plain.rows.size(), 12u);
  ASSERT_EQ(as_measured.rows.size(), 12u);
  ASSERT_EQ(defaults.rows.size(), 12u);
  int moved = 0;
  for (size_t i = 0; i < plain.rows.size(); ++i) {
    EXPECT_DOUBLE_EQ(as_measured.rows[i].predicted_tokens_per_s_per_gpu,
                     plain.rows[i].predicted_tokens_per_s_per_gpu);
    const Measurement* asked = defaults.rows[i].measurement;
    EXPECT_TRUE(asked >= version.data() && asked < version.data() + version.size());
    EXPECT_FALSE(asked->scenario.stack.tp_comm_overlap.has_value());
    EXPECT_EQ(asked->scenario.stack.version, plain.rows[i].measurement->scenario.stack.version);
    moved += std::fabs(defaults.rows[i].predicted_tokens_per_s_per_gpu /
                           plain.rows[i].predicted_tokens_per_s_per_gpu -
                       1) > 0.01;
  }
  EXPECT_GE(moved, 6);
  EXPECT_EQ(AsAsked(runs.front(), StatedFacts::kNone).scenario.framework, "");
  StatedFacts parsed;
  EXPECT_TRUE(ParseStatedFacts("framework", &parsed));
  EXPECT_EQ(parsed, StatedFacts::kFramework);
  EXPECT_FALSE(ParseStatedFacts("some", &parsed));
  for (StatedFacts f :
       {StatedFacts::kAll, StatedFacts::kVersion, StatedFacts::kFramework, StatedFacts::kNone}) {
    ASSERT_TRUE(ParseStatedFacts(StatedFactsName(f), &parsed)) << StatedFactsName(f);
    EXPECT_EQ(parsed, f);
  }
}

// Every run the model is fitted on is one the server stores: `scalecast measurements import` of
// any of the project's run files succeeds (their sources are citations and their notes quote
// them: limits.h kMaxSourceBytes, kMaxNoteBytes).
TEST(Calibration, EveryRunFittedOnPassesTheStoresChecks) {
  std::vector<std::string> files = {"calibration.csv", "calibration-stacks.csv", "moe.csv"};
  for (const std::string& f : testing::EraRunFiles()) files.push_back(f);
  for (const std::string& f : files) {
    const bool own = f.rfind("data/", 0) == 0;
    absl::StatusOr<std::vector<Measurement>> runs =
        ParseMeasurementsCsv(own ? testing::ReadSource(f) : testing::ReadShared(f));
    ASSERT_TRUE(runs.ok()) << f << ": " << runs.status();
    for (size_t i = 0; i < runs->size(); ++i) {
      EXPECT_TRUE(ValidateMeasurement((*runs)[i], i).ok())
          << f << ": " << ValidateMeasurement((*runs)[i], i);
    }
  }
}

TEST(Calibration, ShippedProfileIsWhatTheFitProduces) {
  // Guards against a stale model/data/default_profile.txt after a physics change.
  // The runs scripts/refit.sh fits: both calibration sets, the MoE runs and those under data/.
  std::vector<std::string> files = {"calibration.csv", "calibration-stacks.csv", "moe.csv"};
  for (const std::string& f : testing::EraRunFiles()) files.push_back(f);
  const std::vector<Measurement> all = testing::LoadRuns(files);
  Profile start;
  absl::StatusOr<FitResult> r = Fit(all, Catalog::Builtin(), start, FitOptions(), false);
  ASSERT_TRUE(r.ok()) << r.status();
  const ValidationReport shipped = Validate(all, Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_NEAR(r->after.overall.mape, shipped.overall.mape, 0.005);
  EXPECT_LT(r->after.overall.mape, r->before.overall.mape);
}

TEST(Calibration, FittingASubsetChangesItsPredictions) {
  std::vector<Measurement> a100;
  for (const Measurement& m : Runs()) {
    if (m.scenario.cluster.accelerator == "a100-sxm-40gb") a100.push_back(m);
  }
  Profile start;
  start.name = "a100-only";
  absl::StatusOr<FitResult> r = Fit(a100, Catalog::Builtin(), start, FitOptions(), true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(r->after.overall.mape, 0.10);
  EXPECT_GT(r->cross_validated_mape, 0);
  EXPECT_NE(r->profile.accelerators.at("a100").gemm_eff, start.ForAccelerator("a100").gemm_eff);
  // A generation the subset did not cover takes its prior with gemm_eff times the share of its
  // prior the covered generation kept (one generation: the median is its own share), the rest of
  // its prior unchanged; no family of it is fitted.
  EXPECT_EQ(r->profile.accelerators.count("h100"), 0u);
  const double kept = r->profile.ForAccelerator("a100").gemm_eff / PriorFor("a100").gemm_eff;
  EXPECT_LT(kept, 1.0);
  const AcceleratorParams& hopper = r->profile.ForAccelerator("h100");
  EXPECT_NEAR(hopper.gemm_eff, PriorFor("h100").gemm_eff * kept, 1e-12);
  EXPECT_EQ(hopper.attn_eff, PriorFor("h100").attn_eff);
  EXPECT_EQ(hopper.hbm_eff, PriorFor("h100").hbm_eff);
}

// A fit that starts from a profile already holding a generation (a user's fit on their own runs,
// starting from the default profile) keeps that generation's values where its runs do not cover
// it, rather than pricing it again from the prior.
TEST(Calibration, AFitKeepsTheGenerationsItsStartHoldsAndDidNotCover) {
  std::vector<Measurement> a100;
  for (const Measurement& m : Runs()) {
    if (m.scenario.cluster.accelerator == "a100-sxm-40gb") a100.push_back(m);
  }
  Profile start;
  start.accelerators["hopper"] = AcceleratorParams{0.5, 0.9, 0.4, 0.6};
  absl::StatusOr<FitResult> r = Fit(a100, Catalog::Builtin(), start, FitOptions(), false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile.ForAccelerator("h100").gemm_eff, 0.5);
  EXPECT_EQ(r->profile.ForAccelerator("h100").attn_eff, 0.4);
  // ...and a generation neither covers still takes its prior at the covered one's share.
  const double kept = r->profile.ForAccelerator("a100").gemm_eff / PriorFor("a100").gemm_eff;
  EXPECT_NEAR(r->profile.ForAccelerator("v100").gemm_eff, PriorFor("v100").gemm_eff * kept, 1e-12);
}

// --- Few-shot calibration (FitLayer) and layered profiles ------------------------------------

// `m` with its measured rate set to `factor` times what `profile` predicts for it: a run of a
// stack that is that much slower or faster than the profile knows.
Measurement Scaled(const Measurement& m, const Profile& profile, double factor) {
  const ValidationReport r = Validate({m}, Catalog::Builtin(), profile);
  EXPECT_TRUE(r.rows.at(0).failure.empty()) << r.rows[0].failure;
  Measurement out = m;
  out.tokens_per_s_per_gpu = r.rows[0].predicted_tokens_per_s_per_gpu * factor;
  return out;
}

// The first `n` runs of the DGX Cloud H100 tables with one framework and a complete layout.
std::vector<Measurement> DgxcH100Runs(size_t n) {
  std::vector<Measurement> out;
  std::string framework;
  for (const Measurement& m : Runs()) {
    if (m.source.find("dgxc-benchmarking") == std::string::npos) continue;
    if (m.scenario.cluster.accelerator != "h100-sxm-80gb") continue;
    if (framework.empty()) framework = m.scenario.framework;
    if (m.scenario.framework != framework) continue;
    out.push_back(m);
    if (out.size() == n) break;
  }
  EXPECT_EQ(out.size(), n);
  return out;
}

double Predicted(const Measurement& m, const Profile& p) {
  return Validate({m}, Catalog::Builtin(), p).rows.at(0).predicted_tokens_per_s_per_gpu;
}

// The fit's loss grows linearly, not quadratically, for runs far from the model (pseudo-Huber on
// the log residual): three runs of a degraded cluster, each three times slower than its
// neighbours, shift the fitted level of the 78 clean A100-40GB runs by about 1 %, where least
// squares on the log takes it (3 x log 3) / 81 = 4 % (4.2 % measured with the quadratic loss).
TEST(Calibration, AFewRunsFarOffDoNotDragTheFit) {
  std::vector<Measurement> clean;
  for (const Measurement& m : Runs()) {
    if (m.scenario.cluster.accelerator == "a100-sxm-40gb") clean.push_back(m);
  }
  ASSERT_GT(clean.size(), 60u);
  std::vector<Measurement> contaminated = clean;
  for (size_t i = 0; i < 3; ++i) {
    Measurement slow = clean[i * 20];
    slow.tokens_per_s_per_gpu /= 3;
    contaminated.push_back(slow);
  }
  Profile start;
  absl::StatusOr<FitResult> a = Fit(clean, Catalog::Builtin(), start, FitOptions(), false);
  absl::StatusOr<FitResult> b = Fit(contaminated, Catalog::Builtin(), start, FitOptions(), false);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  double log_shift = 0;
  for (const Measurement& m : clean) {
    log_shift += std::log(Predicted(m, b->profile) / Predicted(m, a->profile));
  }
  log_shift /= static_cast<double>(clean.size());
  EXPECT_LT(log_shift, 0);  // the slow runs still pull, a little
  EXPECT_GT(log_shift, -0.02) << "the clean runs' level moved " << 100 * log_shift << " %";
}

// The stack's level (stack.efficiency) a fit moved to, as measured / predicted on `m`.
double Moved(const Measurement& m, const LayerFit& fit, const Profile& start) {
  return Predicted(m, fit.profile) / Predicted(m, start);
}

TEST(FitLayer, OneRunMovesOnlyTheLevelPartlyAndUnvalidated) {
  const Profile& start = Profile::BuiltinDefault();
  const std::vector<Measurement> base = DgxcH100Runs(2);
  const std::vector<Measurement> runs = {Scaled(base[0], start, 0.75)};
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->accepted) << fit->reason;
  EXPECT_FALSE(fit->validated);
  ASSERT_EQ(fit->changes.size(), 1u) << fit->reason;
  EXPECT_EQ(fit->changes[0].key, "stack.efficiency");
  EXPECT_EQ(fit->changes[0].runs, 1);
  EXPECT_NE(fit->reason.find("not validated"), std::string::npos) << fit->reason;
  // One run cannot tell the stack's level from its own scatter: the shrinkage takes
  // tau^2 / (tau^2 + sigma0^2) of it, toward 0.75 but not all the way.
  const double shrink = fit->shrink;
  const LayerPriors& p = fit->priors;
  EXPECT_NEAR(shrink,
              p.level_spread * p.level_spread /
                  (p.level_spread * p.level_spread + p.run_scatter * p.run_scatter),
              1e-9);
  const double moved = Moved(base[1], *fit, start);
  EXPECT_NEAR(moved, std::exp(shrink * std::log(0.75)), 0.003);
  EXPECT_LT(moved, 0.95);
  EXPECT_GT(moved, 0.76);
  EXPECT_TRUE(fit->level_shown);
  // One run 7 % slow is well inside the scatter of one run about its stack's level: declined,
  // and the start predicts.
  fit = FitLayer({Scaled(base[0], start, 0.93)}, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->accepted) << fit->reason;
  EXPECT_EQ(fit->declined, "level not shown");
  EXPECT_EQ(fit->profile.ToText(), start.ToText());
}

TEST(StudentT, QuantilesAndCdfMatchTables) {
  // Tabulated quantiles (e.g. Abramowitz and Stegun, table 26.10).
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.706, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.9, 4), 1.533, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.95, 10), 1.812, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.9, 1e6), 1.2816, 1e-3);  // the normal's
  EXPECT_NEAR(StudentTQuantile(0.1, 4), -1.533, 1e-3);
  // Between whole degrees of freedom, between their quantiles.
  const double t = StudentTQuantile(0.9, 3.4);
  EXPECT_LT(t, StudentTQuantile(0.9, 3));
  EXPECT_GT(t, StudentTQuantile(0.9, 4));
  EXPECT_NEAR(StudentTCdf(t, 3.4), 0.9, 1e-9);
  EXPECT_NEAR(StudentTCdf(0, 2.5), 0.5, 1e-12);
  EXPECT_TRUE(std::isnan(StudentTQuantile(1.0, 4)));
}

TEST(FitLayer, TwoRunsThatAgreeOnASmallOffsetDoNotShowTheStacksLevel) {
  // Two runs 4 % fast that agree closely: their agreement (one degree of freedom) says little
  // about where the stack's next run sits, and under the prior's run scatter the level's 80 %
  // posterior interval holds 1. Declined, and the start predicts.
  const Profile& start = Profile::BuiltinDefault();
  const std::vector<Measurement> base = DgxcH100Runs(3);
  absl::StatusOr<LayerFit> fit =
      FitLayer({Scaled(base[0], start, 1.04), Scaled(base[1], start, 1.045)}, Catalog::Builtin(),
               start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->accepted) << fit->reason;
  EXPECT_EQ(fit->declined, "level not shown");
  EXPECT_NE(fit->reason.find("they agree"), std::string::npos) << fit->reason;
  EXPECT_NE(fit->reason.find("80 % posterior interval"), std::string::npos) << fit->reason;
  EXPECT_EQ(fit->profile.ToText(), start.ToText());
  EXPECT_EQ(Moved(base[2], *fit, start), 1.0);
  // The interval is the Student-t posterior of the log level under the prior's scatter.
  const LayerPriors& p = fit->priors;
  const double m = std::log(std::sqrt(1.04 * 1.045));
  const double s2 = std::pow(std::log(1.045 / 1.04), 2) / 2;
  const double post2 = (p.scatter_dof * p.run_scatter * p.run_scatter + s2) / (p.scatter_dof + 1);
  const double tau2 = p.level_spread * p.level_spread;
  const double b = 2 * tau2 / (2 * tau2 + post2);
  EXPECT_NEAR(fit->level_dof, p.scatter_dof + 1, 1e-12);
  EXPECT_NEAR(fit->level_location, b * m, 1e-3);
  EXPECT_NEAR(fit->level_scale, std::sqrt(b * post2 / 2), 1e-4);
  EXPECT_LT(std::fabs(fit->level_location), fit->level_t_needed * fit->level_scale);
  // The same two runs 12 % fast: shown, and taken nearly in full (they agree).
  fit = FitLayer({Scaled(base[0], start, 1.12), Scaled(base[1], start, 1.125)}, Catalog::Builtin(),
                 start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->accepted) << fit->reason;
  EXPECT_TRUE(fit->level_shown);
  EXPECT_NE(fit->reason.find("clear of 1"), std::string::npos) << fit->reason;
  EXPECT_NEAR(Moved(base[2], *fit, start), 1.12, 0.01) << fit->reason;
}

TEST(FitLayer, TwoRunsThatAgreeOnA25PercentOffsetMoveTheirStackByAboutThat) {
  const Profile& start = Profile::BuiltinDefault();
  const std::vector<Measurement> base = DgxcH100Runs(4);
  const std::vector<Measurement> runs = {Scaled(base[0], start, 1.25),
                                         Scaled(base[1], start, 1.26)};
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  ASSERT_TRUE(fit->accepted) << fit->reason;
  EXPECT_TRUE(fit->validated);
  EXPECT_NE(fit->reason.find("they agree"), std::string::npos) << fit->reason;
  ASSERT_EQ(fit->changes.size(), 1u) << fit->reason;  // two runs: the level only
  EXPECT_EQ(fit->changes[0].key, "stack.efficiency");
  EXPECT_EQ(fit->changes[0].old_value, 1);
  EXPECT_EQ(fit->changes[0].runs, 2);
  // The stack's other runs move by about the offset the two agree on.
  for (size_t i = 2; i < base.size(); ++i) EXPECT_NEAR(Moved(base[i], *fit, start), 1.25, 0.02);
  // Held out, each run is predicted by the other alone, and one run takes tau^2 / (tau^2 +
  // sigma0^2) of its offset: about 1 - 1.255^(that - 1) off, well inside the start's 20 %.
  const LayerPriors& p = fit->priors;
  const double one_run = p.level_spread * p.level_spread /
                         (p.level_spread * p.level_spread + p.run_scatter * p.run_scatter);
  EXPECT_NEAR(fit->held_out_after.mape, 1 - std::pow(1.255, one_run - 1), 0.01);
  EXPECT_LT(fit->held_out_after.mape, 0.6 * fit->held_out_before.mape);
  EXPECT_GT(fit->held_out_before.mape, 0.2);
  // Every other parameter is as it was.
  Profile a = start, b = fit->profile;
  for (const ParamRef& ref : FittableParams(&a, {"a100", "h100", "b200"})) {
    if (ref.key == "stack.efficiency") continue;
    EXPECT_EQ(*ref.value, *ParameterValue(b, ref.key)) << ref.key;
  }
}

TEST(FitLayer, RunsTheStartAlreadyPredictsAreLeftAloneAndSaysWhy) {
  const Profile& start = Profile::BuiltinDefault();
  std::vector<Measurement> runs;
  const double factors[] = {1.005, 0.995, 1.01};
  const std::vector<Measurement> base = DgxcH100Runs(3);
  for (size_t i = 0; i < base.size(); ++i) runs.push_back(Scaled(base[i], start, factors[i]));
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->accepted);
  EXPECT_TRUE(fit->changes.empty());
  EXPECT_NE(fit->reason.find("already predicts these 3 runs within 2.0 %"), std::string::npos)
      << fit->reason;
  EXPECT_EQ(fit->profile.ToText(), start.ToText());
}

TEST(FitLayer, TwoRunsThatDisagreeLeaveTheirStackNearTheStart) {
  // One run 20 % slower and one 25 % faster than predicted: no level they share.
  const Profile& start = Profile::BuiltinDefault();
  const std::vector<Measurement> base = DgxcH100Runs(3);
  const std::vector<Measurement> runs = {Scaled(base[0], start, 0.8), Scaled(base[1], start, 1.25)};
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NE(fit->reason.find("they disagree"), std::string::npos) << fit->reason;
  EXPECT_NEAR(Moved(base[2], *fit, start), 1.0, 0.01) << fit->reason;
  // Two that disagree and lean one way move less than the mean they lean to.
  const std::vector<Measurement> leaning = {Scaled(base[0], start, 0.95),
                                            Scaled(base[1], start, 1.4)};
  fit = FitLayer(leaning, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  const double mean = std::sqrt(0.95 * 1.4);
  EXPECT_LT(Moved(base[2], *fit, start), 1 + 0.7 * (mean - 1)) << fit->reason;
}

TEST(FitLayer, TwoRunsThatDoNotPredictEachOtherAreDeclined) {
  // Both faster than predicted, one by 2 % and one by 30 %: they show no level (its 80 %
  // posterior interval holds 1, step 1).
  // The layer priors pinned (the shipped profile's of an earlier fit), so that a refit of the
  // profile does not move the thresholds this test is about.
  const Profile& start = Profile::BuiltinDefault();
  LayerFitOptions options;
  options.priors = LayerPriors{0.0803, 0.0623, 2.724, "test"};
  const std::vector<Measurement> base = DgxcH100Runs(5);
  const std::vector<Measurement> runs = {Scaled(base[0], start, 1.02), Scaled(base[1], start, 1.3)};
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->accepted) << fit->reason;
  EXPECT_EQ(fit->declined, "level not shown");
  // With that test relaxed to a 50 % interval, which they pass, the held-out check (step 5)
  // declines them on its own: fitted on either alone, the layer predicts the other worse than the
  // start (leave-one-out), so no offset is taken.
  LayerFitOptions relaxed = options;
  relaxed.credibility = 0.5;
  fit = FitLayer(runs, Catalog::Builtin(), start, relaxed);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->level_shown) << fit->reason;
  EXPECT_FALSE(fit->accepted) << fit->reason;
  EXPECT_TRUE(fit->changes.empty());
  EXPECT_EQ(fit->declined, "held out no better");
  EXPECT_NE(fit->reason.find("the runs do not share an offset"), std::string::npos) << fit->reason;
  EXPECT_NE(fit->reason.find("leave-one-out MAPE 12."), std::string::npos) << fit->reason;
  EXPECT_EQ(fit->profile.ToText(), start.ToText());
  EXPECT_EQ(Moved(base[4], *fit, start), 1.0);
  // The same two runs with two more at 1.28 and 1.27: three of four now share the offset, and
  // each run is predicted by the others better than by the start.
  std::vector<Measurement> four = runs;
  four.push_back(Scaled(base[2], start, 1.28));
  four.push_back(Scaled(base[3], start, 1.27));
  fit = FitLayer(four, Catalog::Builtin(), start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->accepted) << fit->reason;
  EXPECT_LT(fit->held_out_after.mape, fit->held_out_before.mape - 0.01) << fit->reason;
  EXPECT_GT(Moved(base[4], *fit, start), 1.15) << fit->reason;
}

TEST(FitLayer, TwoRunsOneOfWhichTheOtherAlonePredictsWorseAreDeclined) {
  // Both faster than predicted, by 6 % and 21 %. One run alone takes tau^2 / (tau^2 + sigma0^2)
  // = 61 % of its ratio under this prior: held out, the 21 % run alone overshoots the 6 % one
  // (12 % where 6 % was due: the layer predicts it worse than the start) while the 6 %
  // run alone helps the other by more, so the mean of the two gains over a point. With two runs
  // that mean is carried by one of them: each run must be predicted better than the start.
  const Profile& start = Profile::BuiltinDefault();
  LayerFitOptions options;
  options.priors = LayerPriors{0.1, 0.08, 3.5, "test"};
  const std::vector<Measurement> base = DgxcH100Runs(4);
  const std::vector<Measurement> runs = {Scaled(base[0], start, 1.06),
                                         Scaled(base[1], start, 1.21)};
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->accepted) << fit->reason;
  EXPECT_EQ(fit->declined, "held out no better");
  // The mean alone would have passed: the reason names the run the layer makes worse.
  EXPECT_NE(fit->reason.find("but run 2 alone predicts run 1 at 6."), std::string::npos)
      << fit->reason;
  EXPECT_EQ(fit->profile.ToText(), start.ToText());
  EXPECT_EQ(Moved(base[3], *fit, start), 1.0);
  // Two runs on the same side, neither far beyond the other (10 % and 16 %): taken.
  fit = FitLayer({Scaled(base[0], start, 1.10), Scaled(base[2], start, 1.16)}, Catalog::Builtin(),
                 start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->accepted) << fit->reason;
  EXPECT_GT(Moved(base[3], *fit, start), 1.05) << fit->reason;
}

TEST(FitLayer, ALayerNeverRaisesTheErrorOnTheUsersOtherRunsOfTheStackByMoreThanAPoint) {
  const Profile& start = Profile::BuiltinDefault();
  const std::vector<Measurement> base = DgxcH100Runs(8);
  // Two runs that agree on 25 % while the stack's six other stored runs are where the start
  // puts them: the level would make those 25 % worse, so the layer is declined.
  LayerFitOptions options;
  for (size_t i = 2; i < base.size(); ++i) options.others.push_back(Scaled(base[i], start, 1.0));
  const std::vector<Measurement> runs = {Scaled(base[0], start, 1.25),
                                         Scaled(base[1], start, 1.25)};
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->accepted) << fit->reason;
  EXPECT_NE(fit->reason.find("6 other stored runs"), std::string::npos) << fit->reason;
  EXPECT_EQ(fit->profile.ToText(), start.ToText());
  EXPECT_LE(fit->others_after.mape, fit->others_before.mape + 0.01);
  // The same two runs with the other runs sharing their offset: taken, and those runs gain.
  options.others.clear();
  for (size_t i = 2; i < base.size(); ++i) options.others.push_back(Scaled(base[i], start, 1.22));
  fit = FitLayer(runs, Catalog::Builtin(), start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->accepted) << fit->reason;
  EXPECT_EQ(fit->others_after.count, 6);
  EXPECT_LT(fit->others_after.mape, fit->others_before.mape - 0.1);
  // Real runs of one source, calibrated on every 4th: never more than a point worse on the rest.
  std::vector<Measurement> mine, rest;
  size_t index = 0;
  for (const Measurement& m : Runs()) {
    if (m.source.find("dgxc-benchmarking") == std::string::npos) continue;
    (index++ % 4 == 0 && mine.size() < 4 ? mine : rest).push_back(m);
  }
  options.others = rest;
  fit = FitLayer(mine, Catalog::Builtin(), start, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_LE(fit->others_after.mape, fit->others_before.mape + 0.01) << fit->reason;
  EXPECT_EQ(fit->others_after.mape, Validate(rest, Catalog::Builtin(), fit->profile).overall.mape);
}

// The MoE runs of shared/data/moe.csv with the annotations scripts/lib.sh gives them.
std::vector<Measurement> MoeRuns() { return testing::LoadRuns({"moe.csv"}); }

TEST(FitLayer, MoeRunsCalibrateWithTheSameLayer) {
  const Profile& start = Profile::BuiltinDefault();
  // Four runs of one MoE source: three 20 % slower than the start says calibrate, the fourth
  // moves with them.
  std::map<std::string, std::vector<Measurement>> by_source;
  for (const Measurement& m : MoeRuns()) {
    if (m.scenario.workload.model.moe.num_experts > 1) by_source[m.source].push_back(m);
  }
  const std::vector<Measurement>* four = nullptr;
  for (const auto& [source, v] : by_source) {
    if (v.size() >= 4 && (four == nullptr || v.size() > four->size())) four = &v;
  }
  ASSERT_NE(four, nullptr);
  std::vector<Measurement> runs;
  for (size_t i = 0; i < 3; ++i) runs.push_back(Scaled((*four)[i], start, 0.8));
  absl::StatusOr<LayerFit> fit = FitLayer(runs, Catalog::Builtin(), start, LayerFitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  ASSERT_TRUE(fit->accepted) << fit->reason;
  bool level = false;
  for (const ParameterChange& c : fit->changes) level |= c.key == "stack.efficiency";
  EXPECT_TRUE(level) << fit->reason;
  EXPECT_NEAR(Moved((*four)[3], *fit, start), 0.8, 0.02) << fit->reason;
}

TEST(FitLayer, ManyRunsMayMoveSeveralParameters) {
  // Each accelerator with many runs in turn, the start fitted without them: where more than the
  // level is off, the 8-fold held-out error carries more than one parameter, each of the runs'
  // own accelerator (or shared), never another part's. At least one group needs it.
  std::map<std::string, std::vector<Measurement>> by_accelerator;
  for (const Measurement& m : Runs()) by_accelerator[m.scenario.cluster.accelerator].push_back(m);
  int several = 0;
  for (const auto& [accelerator, group] : by_accelerator) {
    if (group.size() < 30) continue;
    std::vector<Measurement> rest;
    for (const Measurement& m : Runs()) {
      if (m.scenario.cluster.accelerator != accelerator) rest.push_back(m);
    }
    absl::StatusOr<FitResult> without =
        Fit(rest, Catalog::Builtin(), Profile(), FitOptions(), false);
    ASSERT_TRUE(without.ok()) << without.status();
    absl::StatusOr<LayerFit> fit =
        FitLayer(group, Catalog::Builtin(), without->profile, LayerFitOptions());
    ASSERT_TRUE(fit.ok()) << accelerator << ": " << fit.status();
    if (!fit->accepted) continue;
    EXPECT_EQ(fit->held_out_method, "8-fold") << accelerator;
    EXPECT_LE(fit->held_out_after.mape, fit->held_out_before.mape) << accelerator;
    if (fit->changes.size() > 1) ++several;
    const std::string other = accelerator.rfind("a100", 0) == 0 ? "h100" : "a100";
    for (const ParameterChange& c : fit->changes) {
      EXPECT_EQ(c.key.find(other), std::string::npos) << accelerator << ": " << c.key;
    }
  }
  EXPECT_GT(several, 0);
}

TEST(FitLayer, AFurtherParameterTheUsersOtherRunsContradictIsLeftOut) {
  // The H100-80GB runs (those that carry more than the level, ManyRunsMayMoveSeveralParameters),
  // half fitted on, with the start fitted without any of them. The other half stand for the
  // user's other stored runs, measured at what the level alone predicts: every further parameter
  // moves them off it, so each is checked and left out.
  std::vector<Measurement> h100, rest;
  for (const Measurement& m : Runs()) {
    (m.scenario.cluster.accelerator == "h100-sxm-80gb" ? h100 : rest).push_back(m);
  }
  absl::StatusOr<FitResult> without = Fit(rest, Catalog::Builtin(), Profile(), FitOptions(), false);
  ASSERT_TRUE(without.ok()) << without.status();
  std::vector<Measurement> mine, others;
  for (size_t i = 0; i < h100.size(); ++i) (i % 2 == 0 ? mine : others).push_back(h100[i]);
  LayerFitOptions level_only;
  level_only.min_gain = 10;  // no further parameter can gain that much
  absl::StatusOr<LayerFit> level = FitLayer(mine, Catalog::Builtin(), without->profile, level_only);
  ASSERT_TRUE(level.ok()) << level.status();
  LayerFitOptions options;
  // At the level alone, whether or not the level-only fit was taken (its held-out margin cannot
  // be met): the start's predictions at the level the runs show.
  for (Measurement& m : others) m = Scaled(m, without->profile, level->level);
  // Without the other runs, further parameters are taken.
  absl::StatusOr<LayerFit> fit = FitLayer(mine, Catalog::Builtin(), without->profile, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  ASSERT_GT(fit->considered.size(), 0u) << fit->reason;
  EXPECT_GT(fit->changes.size(), 1u) << fit->reason;
  options.others = others;
  fit = FitLayer(mine, Catalog::Builtin(), without->profile, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NE(fit->reason.find("left out, as each would raise the MAPE on the " +
                             std::to_string(others.size()) + " other stored runs"),
            std::string::npos)
      << fit->reason;
  for (const ParameterChange& c : fit->changes) EXPECT_EQ(c.key, "stack.efficiency");
  EXPECT_LE(fit->others_after.mape, fit->others_before.mape + 0.01) << fit->reason;
}

// Held-out rows of `sources` sources, each with `rows` rows at log error mean_j + scale_j * p_i,
// p a fixed pattern of mean 0 and variance 1.
std::vector<ValidationRow> HeldOutRows(const std::vector<double>& means,
                                       const std::vector<double>& scales,
                                       std::vector<Measurement>* runs) {
  const double pattern[] = {-1.5, -0.5, 0, 0.5, 1.5, 0};  // sum 0, sample variance 1
  runs->assign(means.size(), Measurement());
  std::vector<ValidationRow> out;
  for (size_t j = 0; j < means.size(); ++j) {
    (*runs)[j].source = "source " + std::to_string(j);
    for (double p : pattern) {
      ValidationRow row;
      row.measurement = &(*runs)[j];
      row.error = std::expm1(means[j] + scales[j] * p);
      out.push_back(row);
    }
  }
  return out;
}

TEST(LayerPriors, ScatterDegreesOfFreedomSayHowMuchStacksDifferInScatter) {
  std::vector<double> means, same, varied;
  for (int j = 0; j < 20; ++j) {
    means.push_back(0.15 * ((j % 5) - 2) / std::sqrt(2.0));  // levels spread about 0.15
    same.push_back(0.08);
    varied.push_back(0.02 * std::pow(10.0, (j % 10) / 9.0));  // 0.02 to 0.2
  }
  std::vector<Measurement> runs;
  // Every stack scatters alike: many degrees of freedom, a run scatter of 0.08, and the level
  // spread of the means less their sampling part.
  LayerPriors p = LayerPriorsFromHeldOut(HeldOutRows(means, same, &runs));
  EXPECT_GT(p.scatter_dof, 100) << p.derivation;
  EXPECT_NEAR(p.run_scatter, 0.08, 0.004) << p.derivation;
  double spread2 = 0;
  for (double m : means) spread2 += m * m;
  spread2 /= 19;
  EXPECT_NEAR(p.level_spread, std::sqrt(spread2 - 0.08 * 0.08 / 6), 0.003) << p.derivation;
  // Stacks scatter from 0.02 to 0.2: few degrees of freedom, and a scale inside that range.
  p = LayerPriorsFromHeldOut(HeldOutRows(means, varied, &runs));
  EXPECT_LT(p.scatter_dof, 10) << p.derivation;
  EXPECT_GT(p.run_scatter, 0.03) << p.derivation;
  EXPECT_LT(p.run_scatter, 0.12) << p.derivation;
  // With few degrees of freedom, two runs that agree say more about their own stack's scatter.
  EXPECT_NE(p.derivation.find("degrees of freedom"), std::string::npos);
}

TEST(LayerPriors, AStackIsASourcesRunsOfOneFrameworkOnOneAccelerator) {
  // 12 sources, each with an A100 and an H100 stack whose levels sit 0.12 either side of the
  // model, each stack's runs 0.02 about its own level. A layer calibrates one stack: the run
  // scatter is the stacks' own (0.02), and the level spread their levels' (about 0.12). Counted
  // by source, the two levels of a source would be its run scatter and cancel in its level.
  const double pattern[] = {-1.5, -0.5, 0, 0.5, 1.5, 0};  // sum 0, sample variance 1
  std::vector<Measurement> runs(24);
  std::vector<ValidationRow> rows;
  for (int j = 0; j < 24; ++j) {
    runs[j].source = "source " + std::to_string(j / 2);
    runs[j].scenario.framework = "megatron";
    runs[j].scenario.cluster.accelerator = j % 2 ? "h100-sxm-80gb" : "a100-sxm-80gb";
    const double level = (j % 2 ? 0.12 : -0.12) * (j % 4 < 2 ? 1 : 0.5);
    for (double p : pattern) {
      ValidationRow row;
      row.measurement = &runs[j];
      row.error = std::expm1(level + 0.02 * p);
      rows.push_back(row);
    }
  }
  const LayerPriors p = LayerPriorsFromHeldOut(rows);
  EXPECT_NEAR(p.run_scatter, 0.02, 0.004) << p.derivation;
  EXPECT_GT(p.level_spread, 0.08) << p.derivation;
  EXPECT_LT(p.level_spread, 0.12) << p.derivation;
  EXPECT_NE(p.derivation.find("24 stacks"), std::string::npos) << p.derivation;
}

TEST(Profile, ALayerStoresOnlyItsChangesAndResolvesOverItsBase) {
  Profile layer;
  layer.name = "mine";
  layer.description = "two runs";
  layer.base = "default";
  const double old_gemm = *ParameterValue(Profile::BuiltinDefault(), "accel.h100.gemm_eff");
  layer.changes = {{"accel.h100.gemm_eff", old_gemm, 0.6, 2, "2 runs (source=lab)"}};
  const std::string text = layer.ToText();
  EXPECT_NE(text.find("base = default\n"), std::string::npos) << text;
  EXPECT_NE(text.find("change.accel.h100.gemm_eff = "), std::string::npos) << text;
  EXPECT_EQ(text.find("accel.a100"), std::string::npos) << text;
  EXPECT_EQ(text.find("global."), std::string::npos) << text;
  absl::StatusOr<Profile> back = Profile::FromText(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->base, "default");
  EXPECT_EQ(back->changes, layer.changes);
  EXPECT_EQ(back->ToText(), text);

  auto none = [](const std::string& n) -> absl::StatusOr<Profile> {
    return absl::NotFoundError(n);
  };
  absl::StatusOr<Profile> resolved = ResolveLayers(*back, Profile::BuiltinDefault(), none);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->ForAccelerator("h100").gemm_eff, 0.6);
  EXPECT_EQ(resolved->ForAccelerator("a100").gemm_eff,
            Profile::BuiltinDefault().ForAccelerator("a100").gemm_eff);
  EXPECT_EQ(resolved->ForAccelerator("h200").gemm_eff,
            Profile::BuiltinDefault().ForAccelerator("h200").gemm_eff);
  EXPECT_EQ(resolved->band.high_ratio, Profile::BuiltinDefault().band.high_ratio);
  EXPECT_EQ(resolved->name, "mine");

  // A layer over a layer; a stored full profile at the bottom.
  std::map<std::string, Profile> stored;
  Profile full = Profile::BuiltinDefault();
  full.name = "full";
  full.global.comm_slowdown = 0.2;
  stored["full"] = full;
  Profile mid = layer;
  mid.name = "mid";
  mid.base = "full";
  stored["mid"] = mid;
  Profile top;
  top.name = "top";
  top.base = "mid";
  top.changes = {{"stack.overlap_eff", 0.9, 0.5, 3, ""}};
  auto lookup = [&](const std::string& n) -> absl::StatusOr<Profile> {
    auto it = stored.find(n);
    if (it == stored.end()) return absl::NotFoundError(n);
    return it->second;
  };
  std::vector<std::string> chain;
  resolved = ResolveLayers(top, Profile::BuiltinDefault(), lookup, &chain);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(chain, (std::vector<std::string>{"top", "mid", "full"}));
  EXPECT_EQ(resolved->stack.overlap_eff, 0.5);
  EXPECT_EQ(resolved->ForAccelerator("h100").gemm_eff, 0.6);
  EXPECT_EQ(resolved->global.comm_slowdown, 0.2);
  EXPECT_EQ(resolved->base, "mid");
  ASSERT_EQ(resolved->changes.size(), 1u);

  // Cycles, a missing base and a chain too deep are refused, naming the profiles.
  stored["full"].base = "top";
  stored["full"].changes = {};
  absl::StatusOr<Profile> cycle = ResolveLayers(top, Profile::BuiltinDefault(), lookup);
  EXPECT_EQ(cycle.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cycle.status().message().find("top -> mid -> full -> top"), std::string::npos)
      << cycle.status();
  stored.erase("full");
  absl::StatusOr<Profile> missing = ResolveLayers(top, Profile::BuiltinDefault(), lookup);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.status().message().find("'mid' layers on 'full', which is not stored"),
            std::string::npos)
      << missing.status();
  stored.clear();
  for (int i = 0; i <= kMaxProfileDepth; ++i) {
    Profile p;
    p.name = absl::StrCat("l", i);
    p.base = i == kMaxProfileDepth ? "default" : absl::StrCat("l", i + 1);
    stored[p.name] = p;
  }
  absl::StatusOr<Profile> deep = ResolveLayers(stored["l0"], Profile::BuiltinDefault(), lookup);
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(deep.status().message().find("layers deep"), std::string::npos) << deep.status();

  // A parameter an earlier model had: a stored full profile naming it still loads (kept as
  // info), a layer changing it is refused with what replaced it.
  std::string old_full = Profile::BuiltinDefault().ToText();
  old_full += "moe.grouped_gemm_ratio = 0.87\n";
  absl::StatusOr<Profile> legacy = Profile::FromText(old_full);
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ(legacy->info.at("retired.moe.grouped_gemm_ratio"), "0.87");
  EXPECT_EQ(legacy->moe.grouped_gemm_krows, Profile::BuiltinDefault().moe.grouped_gemm_krows);
  absl::StatusOr<Profile> legacy_layer =
      Profile::FromText("name = old\nbase = default\nchange.moe.grouped_gemm_ratio = 0.87 0.8 2\n");
  ASSERT_TRUE(legacy_layer.ok()) << legacy_layer.status();
  absl::StatusOr<Profile> applied = ResolveLayers(*legacy_layer, Profile::BuiltinDefault(), none);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(applied.status().message().find("retired, replaced by moe.grouped_gemm_krows"),
            std::string::npos)
      << applied.status();

  // Malformed layers.
  EXPECT_FALSE(Profile::FromText("name = x\nbase = default\nglobal.comm_slowdown = 0.1\n").ok());
  EXPECT_FALSE(Profile::FromText("name = x\nchange.global.comm_slowdown = 0.1 0.2 1\n").ok());
  EXPECT_FALSE(
      Profile::FromText("name = x\nbase = default\nchange.stack.overlap_eff = 0.9\n").ok());
  EXPECT_FALSE(Profile::FromText(
                   "base = d\nchange.stack.overlap_eff = 0.9 0.5 1\nchange.stack.overlap_eff = "
                   "0.9 0.6 1\n")
                   .ok());
  Profile unknown;
  unknown.name = "u";
  unknown.base = "default";
  unknown.changes = {{"accel.h100.warp_speed", 1, 2, 1, ""}};
  absl::StatusOr<Profile> bad = ApplyLayer(Profile::BuiltinDefault(), unknown);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("accel.h100.warp_speed"), std::string::npos);
}

TEST(Profile, EveryFittableParameterCanBeLayered) {
  // Layers go through FittableParams' keys, so a parameter added there layers without more code.
  Profile probe = Profile::BuiltinDefault();
  for (const ParamRef& ref : FittableParams(&probe, {"h100", "mi300x"})) {
    const double value = 0.5 * (ref.lo + ref.hi);
    Profile layer;
    layer.name = "l";
    layer.base = "default";
    layer.changes = {{ref.key, *ParameterValue(Profile::BuiltinDefault(), ref.key), value, 1, ""}};
    absl::StatusOr<Profile> text = Profile::FromText(layer.ToText());
    ASSERT_TRUE(text.ok()) << ref.key << ": " << text.status();
    absl::StatusOr<Profile> resolved = ApplyLayer(Profile::BuiltinDefault(), *text);
    ASSERT_TRUE(resolved.ok()) << ref.key << ": " << resolved.status();
    EXPECT_EQ(*ParameterValue(*resolved, ref.key), value) << ref.key;
  }
  Profile p;
  EXPECT_EQ(SetParameter(&p, "global.comm_slowdown", 5).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Profile, TextRoundTripsAndRejectsGarbage) {
  const Profile& p = Profile::BuiltinDefault();
  absl::StatusOr<Profile> q = Profile::FromText(p.ToText());
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToText(), p.ToText());
  EXPECT_FALSE(Profile::FromText("accel.h100.gemm_eff = -1\n").ok());
  EXPECT_FALSE(Profile::FromText("accel.h100.warp_speed = 2\n").ok());
  EXPECT_FALSE(Profile::FromText("no equals sign\n").ok());
}

TEST(MeasurementsCsv, BadRowIsRejectedWithLineAndColumn) {
  const std::string header =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,global_batch,"
      "recompute,tokens_per_s_per_gpu\n";
  const std::string good =
      "1,torchtitan,m,32,4096,32,8,14336,gated,128256,8192,h100-sxm-80gb,8,8,bf16,1,1,1,1,8,fsdp,"
      "1,8,full,5000\n";
  ASSERT_TRUE(ParseMeasurementsCsv(header + good).ok());
  auto bad_mlp = ParseMeasurementsCsv(header + good +
                                      "\"2\",torchtitan,m,32,4096,32,8,14336,"
                                      "swish,128256,8192,h100-sxm-80gb,8,8,bf16,1,"
                                      "1,1,1,8,fsdp,1,8,full,5000\n");
  ASSERT_FALSE(bad_mlp.ok());
  EXPECT_NE(bad_mlp.status().message().find("line 3, column mlp"), absl::string_view::npos)
      << bad_mlp.status();
  auto bad_num = ParseMeasurementsCsv(header + good + good.substr(0, good.size() - 5) + "fast\n");
  ASSERT_FALSE(bad_num.ok());
  EXPECT_NE(bad_num.status().message().find("line 3, column tokens_per_s_per_gpu"),
            absl::string_view::npos)
      << bad_num.status();
  // An optional column: multi-token prediction modules, in range or refused by name.
  const std::string mtp_header = header.substr(0, header.size() - 1) + ",mtp_layers\n";
  const std::string mtp_row = good.substr(0, good.size() - 1) + ",1\n";
  auto mtp = ParseMeasurementsCsv(mtp_header + mtp_row);
  ASSERT_TRUE(mtp.ok()) << mtp.status();
  EXPECT_EQ((*mtp)[0].scenario.workload.model.mtp_layers, 1);
  auto bad_mtp = ParseMeasurementsCsv(mtp_header + good.substr(0, good.size() - 1) + ",17\n");
  ASSERT_FALSE(bad_mtp.ok());
  EXPECT_NE(bad_mtp.status().message().find("line 2, column mtp_layers"), absl::string_view::npos)
      << bad_mtp.status();
  auto short_row = ParseMeasurementsCsv(header + "1,torchtitan\n");
  EXPECT_FALSE(short_row.ok());
  auto no_header = ParseMeasurementsCsv("id,framework\n1,megatron\n");
  EXPECT_FALSE(no_header.ok());
  auto quote = ParseMeasurementsCsv(header + "\"1,torchtitan\n");
  EXPECT_FALSE(quote.ok());
}

// "selective: mla_up_proj" and "selective: layernorm+moe_act" name Megatron-Core's recompute
// modules after the kind; an unknown module is refused with its line and column.
TEST(MeasurementsCsv, RecomputeCellNamesTheModules) {
  const std::string header =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,global_batch,"
      "recompute,tokens_per_s_per_gpu\n";
  auto row = [](const std::string& recompute) {
    return "1,megatron,m,32,4096,32,8,14336,gated,128256,8192,h100-sxm-80gb,8,8,bf16,1,1,1,1,8,"
           "zero1,1,8," +
           recompute + ",5000\n";
  };
  auto runs = ParseMeasurementsCsv(header + row("selective: layernorm+moe_act") +
                                   row("selective (default modules)") + row("none (why)"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].scenario.parallelism.recompute, Recompute::kSelective);
  EXPECT_EQ((*runs)[0].scenario.parallelism.recompute_modules,
            Bit(RecomputeModule::kLayernorm) | Bit(RecomputeModule::kMoeAct));
  EXPECT_EQ((*runs)[1].scenario.parallelism.recompute_modules, 0u);
  EXPECT_EQ((*runs)[2].scenario.parallelism.recompute, Recompute::kNone);
  auto bad = ParseMeasurementsCsv(header + row("selective: attention"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "line 2, column recompute"))
      << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "'attention' is not a recompute module"))
      << bad.status();
}

// Parses CSV text that holds one measured run into `runs`.
void ParseOneRun(const std::string& csv, std::vector<Measurement>* runs) {
  absl::StatusOr<std::vector<Measurement>> parsed = ParseMeasurementsCsv(csv);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  *runs = *std::move(parsed);
}

// An annotation file keyed by model name adds the architecture facts a measurement file leaves
// out; a row with more or fewer fields than its header (an unquoted comma in a model name) is
// refused with its line instead of silently matching no run, and a bad cell names its column.
TEST(RunAnnotations, ModelFactsApplyAndRaggedRowsAreRefused) {
  const std::string runs_csv =
      "id,framework,model,layers,hidden,heads,kv_heads,vocab,seq_len,num_experts,top_k,"
      "moe_ffn_hidden,accelerator,num_gpus,gpus_per_node,precision,tp,pp,ep,dp,micro_batch,"
      "global_batch,tokens_per_s_per_gpu\n"
      "1,megatron,\"Big, biased\",36,2880,64,8,201088,4096,128,4,2880,b200-sxm-180gb,64,8,bf16,"
      "1,1,8,64,4,1280,13000\n";
  std::vector<Measurement> runs;
  ASSERT_NO_FATAL_FAILURE(ParseOneRun(runs_csv, &runs));
  EXPECT_FALSE(runs[0].scenario.workload.model.moe.expert_bias);
  const std::string header = "model,head_dim,expert_bias,evidence\n";
  ASSERT_TRUE(ApplyRunAnnotations(header + "\"Big, biased\",64,true,why\n", &runs).ok());
  EXPECT_TRUE(runs[0].scenario.workload.model.moe.expert_bias);
  EXPECT_EQ(runs[0].scenario.workload.model.head_dim, 64);
  const absl::Status ragged =
      ApplyRunAnnotations(header + "other,64,,why\nBig, biased,64,true,why\n", &runs);
  EXPECT_EQ(ragged.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(ragged.message(), "line 3: 5 fields, the header has 4")) << ragged;
  const absl::Status bad = ApplyRunAnnotations(header + "\"Big, biased\",64,maybe,why\n", &runs);
  EXPECT_TRUE(absl::StrContains(bad.message(), "expert_bias")) << bad;
}

// An annotation file's columns are the measurements CSV's, read by the same rules: any column a
// proto field declares applies (here ones no annotation file carried before), the model's name
// (a key) never does, and a bad cell names its line and column as the measurements CSV does.
TEST(RunAnnotations, ColumnsAreTheMeasurementsCsvColumns) {
  const std::string runs_csv =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,dp,micro_batch,global_batch,tokens_per_s_per_gpu\n"
      "7,megatron,m,8,1024,16,16,4096,32000,4096,h100-sxm-80gb,8,8,bf16,1,2,4,1,64,9000\n";
  std::vector<Measurement> runs;
  ASSERT_NO_FATAL_FAILURE(ParseOneRun(runs_csv, &runs));
  const std::string header = "id,model,tp,kv_heads,recompute_layers,dp_overlap,layer_pattern\n";
  ASSERT_TRUE(ApplyRunAnnotations(header + "7,renamed,2,4,1,yes,\n", &runs).ok());
  const Scenario& s = runs[0].scenario;
  EXPECT_EQ(s.workload.model.name, "m");
  EXPECT_EQ(s.parallelism.tp, 2);
  EXPECT_EQ(s.workload.model.kv_heads, 4);
  EXPECT_EQ(s.parallelism.recompute_layers, 1);
  EXPECT_EQ(s.stack.dp_overlap, std::optional<bool>(true));
  const absl::Status range = ApplyRunAnnotations(header + "7,,,,5000,,\n", &runs);
  EXPECT_TRUE(absl::StrContains(range.message(),
                                "line 2, column recompute_layers: 5000 is out of range [0, 4096]"))
      << range;
  const absl::Status pattern = ApplyRunAnnotations(header + "7,,,,,,M*M*\n", &runs);
  EXPECT_TRUE(absl::StrContains(pattern.message(),
                                "line 2, column layer_pattern: 4 characters for 8 layers"))
      << pattern;
  EXPECT_EQ(runs[0].scenario.parallelism.tp, 2);  // blank cells changed nothing
}

// A source whose measurement file leaves ETP blank can state the framework's own setting (the
// NeMo launcher's Grok-1 yaml: no expert_tensor_parallel_size, so Megatron-Core's default, TP);
// the row then predicts with that layout instead of the planner's best.
TEST(RunAnnotations, SourceFactsSetExpertTensorParallelAndTpOverlap) {
  const std::string runs_csv =
      "id,source,framework,model,layers,hidden,heads,kv_heads,vocab,seq_len,num_experts,top_k,"
      "moe_ffn_hidden,accelerator,num_gpus,gpus_per_node,precision,tp,pp,cp,ep,dp,micro_batch,"
      "global_batch,recompute,tokens_per_s_per_gpu\n"
      "1,launcher,nemo,m,8,6144,48,8,128256,8192,8,2,32768,h100-sxm-80gb,32,8,bf16,4,1,1,8,8,1,"
      "256,none,12000\n";
  std::vector<Measurement> runs;
  ASSERT_NO_FATAL_FAILURE(ParseOneRun(runs_csv, &runs));
  EXPECT_EQ(runs[0].scenario.parallelism.etp, 0);  // blank: the planner chooses
  const std::string header = "source,etp,tp_comm_overlap,evidence\n";
  ASSERT_TRUE(ApplyRunAnnotations(header + "launcher,4,false,why\n", &runs).ok());
  EXPECT_EQ(runs[0].scenario.parallelism.etp, 4);
  EXPECT_EQ(runs[0].scenario.stack.tp_comm_overlap, std::optional<bool>(false));
  const ValidationReport r = Validate(runs, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].failure, "");
  EXPECT_EQ(r.rows[0].layout.etp, 4);
  const absl::Status bad = ApplyRunAnnotations(header + "launcher,four,false,why\n", &runs);
  EXPECT_TRUE(absl::StrContains(bad.message(), "line 2, column etp")) << bad;
}

// A run's launch script can shard otherwise than its table says (the DGX Cloud MaxText recipe
// shards over 16 nodes and replicates across the rest: data/dgxc-scaling-recipes.csv): an
// annotation's sharding and shard group replace the CSV's, the group changes what the parameter
// all-gather spans, and a sharding the vocabulary lacks names its line and column.
TEST(RunAnnotations, ShardingAndShardGroupReplaceTheTables) {
  const std::string runs_csv =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,dp,sharding,micro_batch,global_batch,recompute,"
      "tokens_per_s_per_gpu\n"
      "9,maxtext,m,32,4096,32,8,14336,32000,4096,h100-sxm-80gb,1024,8,bf16,1,1,1024,fsdp,2,2048,"
      "full,3000\n";
  std::vector<Measurement> runs;
  ASSERT_NO_FATAL_FAILURE(ParseOneRun(runs_csv, &runs));
  // The ranks the parameter all-gather spans, as predicted for the run.
  auto gather_ranks = [](const Scenario& s) {
    absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok())
      for (const CommTime& c : p->time.comm)
        if (c.kind == "dp_allgather") return c.ranks;
    return 0;
  };
  EXPECT_EQ(gather_ranks(runs[0].scenario), 1024);
  const std::string header = "id,sharding,shard_group,evidence\n";
  ASSERT_TRUE(ApplyRunAnnotations(header + "9,hsdp,128,why\n", &runs).ok());
  EXPECT_EQ(runs[0].scenario.parallelism.sharding, Sharding::kHsdp);
  EXPECT_EQ(runs[0].scenario.parallelism.shard_group, 128);
  EXPECT_EQ(gather_ranks(runs[0].scenario), 128);
  const absl::Status bad = ApplyRunAnnotations(header + "9,zero9,,why\n", &runs);
  EXPECT_TRUE(absl::StrContains(bad.message(), "line 2, column sharding")) << bad;
}

TEST(MeasurementsCsv, ReadsTheCalibrationSetWithItsConventions) {
  const std::vector<Measurement>& runs = Runs();
  ASSERT_EQ(runs.size(), 382u);
  int fsdp_default = 0;
  for (const Measurement& m : runs) {
    EXPECT_GT(m.scenario.workload.global_batch, 0);
    if (m.scenario.framework == "composer-fsdp") {
      EXPECT_NE(m.scenario.parallelism.sharding, Sharding::kUnspecified);
    }
    if (m.labels.at("csv_id") == "460") {
      ++fsdp_default;  // blank sharding: the framework's default (fms-fsdp: HSDP)
      EXPECT_EQ(m.scenario.parallelism.sharding, Sharding::kHsdp);
    }
  }
  EXPECT_EQ(fsdp_default, 1);
}

}  // namespace
}  // namespace scalecast
