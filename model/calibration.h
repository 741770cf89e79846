// Validation of the model against measured runs, and least-squares calibration of a profile's
// efficiency parameters on log error.
#ifndef SCALECAST_MODEL_CALIBRATION_H_
#define SCALECAST_MODEL_CALIBRATION_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/profile.h"
#include "model/types.h"

namespace scalecast {

struct ValidationRow {
  const Measurement* measurement = nullptr;
  double predicted_tokens_per_s_per_gpu = 0;
  double error = 0;     // predicted / measured - 1
  Parallelism layout;   // the layout predicted (blank fields filled by the planner)
  double band_low = 0;  // the 80 % band held out (leave-one-group-out reports only)
  double band_high = 0;
  std::string failure;  // non-empty when the row could not be predicted
  // Whether the memory model says the layout fits (a measured run's layout did fit: false is
  // the memory model's error, and the row is predicted all the same).
  bool fits = true;
};

struct ErrorStats {
  int count = 0;
  double mape = 0;        // mean absolute percentage error, as a fraction
  double median_ape = 0;  // median absolute percentage error, as a fraction
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  ErrorStats overall;
  std::map<std::string, ErrorStats> by_framework;
  std::map<std::string, ErrorStats> by_accelerator;
  std::map<std::string, ErrorStats> by_source;
  // Per measurement label, keyed "key=value": a run counts once in the group of each of its
  // labels; a run without labels is in none.
  std::map<std::string, ErrorStats> by_label;
  int failed_count = 0;
  int not_fitting_count = 0;  // rows predicted whose layout the memory model says does not fit
};

// Predicts each measured run (planner for its blank layout fields) and summarises the error.
ValidationReport Validate(const std::vector<Measurement>& runs, const Catalog& catalog,
                          const Profile& profile);

ErrorStats Summarise(const std::vector<double>& abs_errors);
// The median of `values` (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> values);

// A measured run's MFU as the record table counts it (model/records.h): the model's FLOPs per
// token, for the model as a prediction resolves it, times its tokens/s per GPU, over its
// accelerator's dense 16-bit peak. The resolver's error when the run does not resolve.
absl::StatusOr<double> MeasuredMfu(const Measurement& m, const Catalog& catalog);

// Recomputes `overall`, every by_* group and `failed_count` from `report->rows`: a row with a
// failure counts as failed and in no group; the others by |error|. The one home of the grouping.
void SummariseRows(ValidationReport* report);

// The empirical-Bayes prior of a calibrated layer, from the model's own held-out residuals
// (log of predicted / measured, leave-one-source-out), grouped by stack: a source's rows of one
// framework on one accelerator, what a user calibrates under one name (a source that mixes
// stacks, such as a table of NeMo, MaxText and Paxml runs, would count its stacks' differing
// levels as scatter of one run about its level, and average them out of the level spread).
//  - run_scatter (sigma0) and scatter_dof (nu0): how far one run sits from its own stack's
//    level. Stacks differ in that too (a benchmark table of one configuration swept over GPU
//    counts scatters less than a table of many models), so each stack's scatter sigma_j^2 is
//    drawn from a scaled inverse chi-square prior with nu0 degrees of freedom and scale sigma0^2;
//    both are fitted by maximum likelihood to the per-stack sample variances (s_j^2 / sigma0^2
//    is then F(n_j - 1, nu0) distributed). A small nu0 says scatter varies a lot between stacks,
//    so a stack's own runs say much about its own scatter.
//  - level_spread (tau): how far a new stack's level sits from the model's, the spread of the
//    per-stack mean log residuals across stacks (method of moments: their variance less the
//    part each stack's own scatter explains, its posterior sigma_j^2 / rows, averaged).
// Only stacks with two or more held-out rows count.
struct LayerPriors {
  double level_spread = 0.139;  // fallbacks: see LayerPriorsOf
  double run_scatter = 0.089;
  double scatter_dof = 2.15;
  std::string derivation;  // in words: where the figures came from
};
struct FitOptions {
  int max_iterations = 40;
  // Weight of the pull toward each parameter's prior, per unit of log deviation, relative to one
  // row's squared log error. Keeps parameters the data cannot see at their documented priors.
  double prior_weight = 1;
};

struct FitResult {
  Profile profile;
  ValidationReport before;          // the starting profile on the same runs
  ValidationReport after;           // in-sample
  double cross_validated_mape = 0;  // leave-one-source-out when >1 source, else 5-fold
  std::map<std::string, ErrorStats> cross_validated_by_group;
  int iterations = 0;
  // From the leave-one-source-out rows (cross_validate with more than one source), else unset.
  LayerPriors layer_priors{0, 0, 0, ""};
};

// Fits the efficiency parameters of the accelerator families and framework families present in
// `runs`, starting from `start`; the rest of `start` is kept. `cross_validate` also reports the
// held-out error (costs one fit per group).
absl::StatusOr<FitResult> Fit(const std::vector<Measurement>& runs, const Catalog& catalog,
                              const Profile& start, const FitOptions& options, bool cross_validate);

LayerPriors LayerPriorsFromHeldOut(const std::vector<ValidationRow>& rows);

// Student's t distribution with `dof` (> 0, not necessarily whole) degrees of freedom: its
// cumulative distribution at t, and the t whose cumulative probability is p (0 < p < 1; NaN
// otherwise).
double StudentTCdf(double t, double dof);
double StudentTQuantile(double p, double dof);

// The layer priors a fitted profile carries: its info.layer_level_spread,
// info.layer_run_scatter and info.layer_scatter_dof, all three (written by scalecast-validate
// --fit, i.e. scripts/refit.sh, from its leave-one-source-out rows through
// LayerPriorsFromHeldOut), else the built-in default's, else the struct's fallbacks: the same
// procedure's figures on the leave-one-source-out residuals of the built-in profile of 2026-12
// and the three shared calibration sets (scalecast-fewshot prints them: 0.139, 0.089, 2.15).
LayerPriors LayerPriorsOf(const Profile& profile);

// Few-shot calibration: a layer over `start` that moves only what the given runs can carry, as
// far as the evidence warrants (empirical-Bayes shrinkage toward `start`).
//
// 1. Level. The runs' log ratios x_i = log(measured / predicted) under `start` (layouts planned
//    once with it). Their mean m is the stack's level against the model. The runs agree when
//    their sample standard deviation s is at most half the model's run scatter sigma0; then
//    the per-run scatter is sigma^2 = max(s^2, noise^2); else it is the posterior of the
//    prior's scatter given theirs, sigma^2 = (nu0 sigma0^2 + (n - 1) s^2) / (nu0 + n - 1)
//    (sigma0^2 itself for one run). The overall efficiency of the stack (stack.efficiency, a
//    factor on every part of the step) moves to exp(m * n tau^2 / (n tau^2 + sigma^2)): runs
//    that agree move it nearly all the way even at n = 2; runs that disagree have a small mean
//    or a large s and move it less. Runs `start` already predicts within `noise` (MAPE) are not
//    fitted.
//    Whether the level is taken at all is decided under the prior's scatter: the posterior
//    scatter sigma_n^2 = (nu0 sigma0^2 + (n - 1) s^2) / (nu0 + n - 1), with nu_n = nu0 + n - 1
//    degrees of freedom, whatever the runs' agreement (with one degree of freedom two runs that
//    agree say little about how far the stack's next run sits from them: sigma_n is still
//    sqrt(nu0 / (nu0 + 1)) sigma0 at s = 0). With B = n tau^2 / (n tau^2 + sigma_n^2), the
//    posterior of the stack's log level is Student-t with nu_n degrees of freedom, location B m
//    and scale sqrt(B sigma_n^2 / n); the level is shown when its central `credibility`
//    interval (80 %, a prediction band's coverage) clears 0, i.e. when
//    |B m| > t(nu_n, 0.9) sqrt(B sigma_n^2 / n). A level not shown is declined ("level not
//    shown") unless further parameters (steps 2-5, each tested out of sample) carry the layer.
// 2. Further parameters, only with three runs or more and only along directions the runs vary
//    in: for every fittable parameter of the runs' families (plus the stack, MoE and global
//    ones), d log prediction / d log parameter per run, less its mean over the runs (the mean is
//    the level's direction). A parameter whose centred sensitivity has rms >= min_sensitivity
//    informs the variation; the candidates are ordered by column-pivoted Gram-Schmidt (collinear
//    ones end the list, as does the cap of (n - 1) / 2). Each has the prior spread tau / s_k
//    (s_k: the rms of its sensitivity on the runs: a stack-to-stack level change of tau, if it
//    were all this parameter's), so its pull toward `start` is sigma^2 s_k^2 / tau^2 per unit
//    log deviation, one run's squared log error being 1.
// 3. Choice. Leave-one-out (8 interleaved folds past 24 runs) of the linearised posterior picks
//    how many further parameters join the level (0 included); more than 0 only when the held-out
//    MAPE beats the level alone's by the margin min_gain * sqrt(2 / n).
// 4. The other runs. When `others` holds the user's other stored runs of these stacks, each
//    chosen further parameter is checked on them before it is taken, in order: it joins only
//    when it does not raise the MAPE there over the level and the parameters taken before it.
// 5. Held out. With two runs or more, the layer (each fold's shrinkage set from its own training
//    runs, as a fit on them alone would) must predict each run, fitted without it, better than
//    `start` does by the margin, and with two runs (whose mean one of them can carry alone) each
//    run better than `start` predicts it: else the further parameters are dropped and the level
//    alone is tried, and failing that the layer is declined (the runs do not share an offset).
// 6. The layer is declined when it raises the MAPE on `others` by more than others_tolerance
//    over `start`.
// 7. A layer that moves nothing is declined: `accepted` false, `profile` = `start`, `reason` why.
struct LayerFitOptions {
  // The empirical-Bayes prior; unset (any of its three figures <= 0): LayerPriorsOf(start).
  LayerPriors priors{0, 0, 0, ""};
  int max_iterations = 30;
  // |d log prediction / d log parameter| (rms over the runs, after removing the mean) at which a
  // parameter counts as informing the runs' variation: a 10 % change of it moves predictions
  // apart by 0.5 %.
  double min_sensitivity = 0.05;
  // Share of a parameter's sensitivity norm that must remain after removing the directions of
  // the parameters chosen before it; less is collinear (the runs cannot tell them apart).
  double collinear = 0.2;
  // Run-level error the runs are not fitted below (MAPE as a fraction). A policy, not a
  // measurement: two runs of one configuration differ by about this much in step time, so a
  // layer fitted to less would fit noise.
  double noise = 0.02;
  // The central posterior interval of the stack's level that must clear 1 for the level to be
  // taken (step 1): 0.8, the coverage of every prediction's band (model/uncertainty.h), i.e. a
  // posterior probability of at least 90 % that the stack runs faster (or slower) than `start`
  // says, on the side the runs point. The project's convention, not fitted to any runs.
  double credibility = 0.8;
  // Held-out MAPE further parameters must gain over the level alone (as a fraction) with two
  // runs; with n runs the margin is min_gain * sqrt(2 / n).
  double min_gain = 0.01;
  int max_leave_one_out = 24;  // more runs: `folds` interleaved folds
  int folds = 8;
  // The user's other stored runs of the same stacks (not fitted on), for step 4; may be empty.
  std::vector<Measurement> others;
  double others_tolerance = 0.01;  // MAPE points (as a fraction) a layer may add on `others`
  // Which runs, in words, recorded with each change ('#' and line breaks become spaces); empty:
  // the runs' ids (the first 8) and how many.
  std::string evidence;
  // Checked between fits; true stops the fit with CANCELLED.
  std::function<bool()> stop;
};

struct LayerFit {
  bool accepted = false;
  bool validated = false;  // a held-out check was possible (two runs or more)
  std::string reason;      // in words: what was moved and why, or why nothing was
  // When declined, which rule declined it, in a few words: "within noise" (the start already
  // predicts the runs), "level not shown" (step 1), "held out no better" (step 5), "other runs"
  // (step 6) or "moves nothing".
  std::string declined;
  // `start` with the changes applied (name, base and changes left to the caller), or `start`
  // itself when not accepted.
  Profile profile;
  std::vector<ParameterChange> changes;  // by key; empty when not accepted
  ValidationReport before;               // `start` on the runs
  ValidationReport after;                // `profile` on the runs (in-sample)
  ErrorStats held_out_before;            // `start` on the runs (it was not fitted on them)
  ErrorStats held_out_after;             // the chosen parameter set fitted without each fold
  std::string held_out_method;           // "leave-one-out" / "8-fold", "" with one run
  std::vector<std::string> considered;   // the ordered further candidates (step 2)
  LayerPriors priors;                    // the prior used
  double level = 1;   // measured / predicted, geometric mean over the runs, under `start`
  double shrink = 0;  // n tau^2 / (n tau^2 + sigma^2): the share of the level taken
  // The posterior of the stack's log level under the prior's scatter (step 1): Student-t with
  // level_dof degrees of freedom, location and scale; level_t_needed is the t quantile the
  // credibility interval uses, and level_shown whether that interval clears 0.
  double level_location = 0, level_scale = 0, level_dof = 0, level_t_needed = 0;
  bool level_shown = false;
  ErrorStats others_before, others_after;  // on options.others (count 0 when none)
};

absl::StatusOr<LayerFit> FitLayer(const std::vector<Measurement>& runs, const Catalog& catalog,
                                  const Profile& start, const LayerFitOptions& options);

// Leave-one-group-out: for each group (a source, a framework), fit on the others and predict
// it. Runs whose group is "" are never held out (they always train). Per-group held-out stats, the
// overall held-out MAPE, and the 80 % band the held-out residuals give, with its coverage checked
// group by group against the other groups' residuals.
struct HoldOutReport {
  std::map<std::string, ErrorStats> by_group;
  ErrorStats overall;
  std::vector<ValidationRow> rows;
  double band_low_ratio = 1, band_high_ratio = 1;  // measured / predicted at 10 % and 90 %
  double band_coverage = 0;                        // share of held-out runs inside their band
  double band_median_width = 0;                    // (high - low) / predicted, median
  double band_tail = 0.1;  // the tail level used (0.1 = 10th and 90th percentiles)
};
// The run as a user stating only `facts` (model/types.h StatedFacts) would ask for it.
Measurement AsAsked(const Measurement& m, StatedFacts facts);
// Each of the runs so, in order.
std::vector<Measurement> AsAsked(const std::vector<Measurement>& runs, StatedFacts facts);

// `asked`, when given, holds what each run's user asks for (runs[i] with facts left out, same
// order and size): the folds fit on the runs as measured and predict the held-out runs as asked.
HoldOutReport LeaveOneGroupOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                               const Profile& start, const FitOptions& options,
                               const std::function<std::string(const Measurement&)>& group,
                               const std::vector<Measurement>* asked = nullptr);
// Leave-one-source-out once, each held-out source predicted as a user stating each of `levels`
// asks for it (AsAsked): one report per level, from the same folds' fits (on every fact).
std::map<StatedFacts, HoldOutReport> LeaveOneSourceOutByFacts(const std::vector<Measurement>& runs,
                                                              const Catalog& catalog,
                                                              const Profile& start,
                                                              const FitOptions& options,
                                                              absl::Span<const StatedFacts> levels);
HoldOutReport LeaveOneSourceOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                                const Profile& start, const FitOptions& options,
                                const std::vector<Measurement>* asked = nullptr);
HoldOutReport LeaveOneFrameworkOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                                   const Profile& start, const FitOptions& options);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_CALIBRATION_H_
