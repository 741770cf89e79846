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
