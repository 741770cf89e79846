// Validation of the model against measured runs, and least-squares calibration of a profile's
// efficiency parameters on log error.
#ifndef SCALECAST_MODEL_CALIBRATION_H_
#define SCALECAST_MODEL_CALIBRATION_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

// Recomputes `overall`, every by_* group and `failed_count` from `report->rows`: a row with a
// failure counts as failed and in no group; the others by |error|. The one home of the grouping.
void SummariseRows(ValidationReport* report);

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
};

// Fits the efficiency parameters of the accelerator families and framework families present in
// `runs`, starting from `start`; the rest of `start` is kept. `cross_validate` also reports the
// held-out error (costs one fit per group).
absl::StatusOr<FitResult> Fit(const std::vector<Measurement>& runs, const Catalog& catalog,
                              const Profile& start, const FitOptions& options, bool cross_validate);

// Few-shot calibration: a layer over `start` that moves only what the given runs can carry.
//
// 1. Sensitivity. For every parameter FittableParams lists for the runs' accelerator families
//    (plus the global and stack ones), the derivative of each run's log prediction with respect
//    to the parameter's log, under `start` (layouts planned once with `start`). A parameter
//    informs a run when |d log pred / d log param| >= min_sensitivity; parameters informing no
//    run are never moved.
// 2. Candidates. The informed parameters are ordered by column-pivoted Gram-Schmidt on the
//    sensitivity matrix (most sensitive first; each next one by what it adds beyond those
//    before it); a parameter whose sensitivities are collinear with those already chosen (less
//    than `collinear` of its own norm left) ends the list, as does the cap of max(1, n/2)
//    parameters for n runs. The ordering uses no measured value.
// 3. Choice. For each prefix of that list (0 = leave `start` unchanged), the held-out error of
//    the linearised fit (leave-one-out up to max_leave_one_out runs, else `folds` interleaved
//    folds) picks the number of parameters; with one run, held-out error cannot be measured
//    and the most sensitive parameter alone is fitted (unvalidated).
// 4. Fit and acceptance. The chosen parameters are fitted (Levenberg-Marquardt on log error,
//    pulled toward start's values with prior_weight), and the same held-out protocol is run on
//    the non-linear fit. The layer is accepted only when its held-out MAPE beats start's by
//    min_gain (and, with one run, when that run is off by more than `noise`); otherwise `reason`
//    says why in words and `profile` is `start`. Runs start already predicts within `noise` (MAPE)
//    are not fitted at all.
struct LayerFitOptions {
  // Pull of each moved parameter toward start's value, per unit of log deviation, relative to
  // one run's squared log error. In Bayesian terms the ratio of two variances: a run's scatter
  // about its source's level (log residual rms 0.08 within a source of the calibration sets,
  // in sample) over how far a new source's level sits from the start's in parameter terms
  // (held-out source offsets ~0.1-0.15 in log, at a typical sensitivity ~0.6): ~0.1-0.3. The
  // value was picked on the few-shot benchmark (scalecast-fewshot --prior-weight; README
  // "Few-shot calibration"): 0.1 gave 7.0 % there, 0.25 8.4 %, 1 10.2 %.
  double prior_weight = 0.1;
  int max_iterations = 30;
  // |d log prediction / d log parameter| at which a parameter counts as informing a run: a 10 %
  // change of it moves the prediction by at least 0.5 %.
  double min_sensitivity = 0.05;
  // Share of a parameter's sensitivity norm that must remain after removing the directions of
  // the parameters chosen before it; less is collinear (the runs cannot tell them apart).
  double collinear = 0.2;
  // Run-level error the runs are not fitted below (MAPE as a fraction). A policy, not a
  // measurement: two runs of one configuration differ by about this much in step time, so a
  // layer fitted to less would fit noise.
  double noise = 0.02;
  // Held-out MAPE a layer fitted on two runs must gain over its start to be taken (as a
  // fraction): half the noise level; a smaller gain on a few runs is not told apart from which
  // runs happened to be held out. With n runs the margin is min_gain * sqrt(2 / n), as the
  // scatter of a mean over n held-out runs shrinks.
  double min_gain = 0.01;
  int max_leave_one_out = 24;  // more runs: `folds` interleaved folds
  int folds = 8;
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
  // `start` with the changes applied (name, base and changes left to the caller), or `start`
  // itself when not accepted.
  Profile profile;
  std::vector<ParameterChange> changes;  // by key; empty when not accepted
  ValidationReport before;               // `start` on the runs
  ValidationReport after;                // `profile` on the runs (in-sample)
  ErrorStats held_out_before;            // `start` on the runs (it was not fitted on them)
  ErrorStats held_out_after;             // the chosen parameter set fitted without each fold
  std::string held_out_method;           // "leave-one-out" / "8-fold", "" with one run
  std::vector<std::string> considered;   // the ordered candidate keys (step 2)
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
HoldOutReport LeaveOneGroupOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                               const Profile& start, const FitOptions& options,
                               const std::function<std::string(const Measurement&)>& group);
HoldOutReport LeaveOneSourceOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                                const Profile& start, const FitOptions& options);
HoldOutReport LeaveOneFrameworkOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                                   const Profile& start, const FitOptions& options);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_CALIBRATION_H_
