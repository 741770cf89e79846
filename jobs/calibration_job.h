// Calibrate's workflow below gRPC: resolve the starting profile, read the runs, fit a layer with
// the few-shot rule (model/calibration.h FitLayer), measure it on the other stored runs and store
// it. A server handler translates a CalibrateRequest into a CalibrationJob and the result back;
// a tool or a test calls RunCalibration directly.
#ifndef SCALECAST_JOBS_CALIBRATION_JOB_H_
#define SCALECAST_JOBS_CALIBRATION_JOB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jobs/job.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "storage/store.h"

namespace scalecast {

// The info key under which a declined calibration's stored profile (its start, unchanged) keeps
// the reason (CalibrationProfile.declined_reason).
inline constexpr char kDeclinedReasonKey[] = "declined_reason";

struct CalibrationJob {
  std::string name;        // the profile to store; checked by CheckProfileName
  std::string start_from;  // "" or "default": the built-in profile; else a stored profile
  MeasurementFilter filter;
  bool replace = false;           // overwrite a profile of that name
  int64_t max_runs = -1;          // more matching runs is RESOURCE_EXHAUSTED (negative: no limit)
  int64_t max_other_runs = 1000;  // other stored runs evaluated (evenly spaced past it)
};

// The error on the stored runs not fitted on, with the start and with the stored profile.
struct OtherRunsError {
  ErrorStats before, after;
  int64_t stored = 0;    // runs stored besides those fitted on
  bool sampled = false;  // fewer than `stored` were evaluated (evenly spaced)
  // Stored runs left out of this check, and of the same-stack runs the fit weighs, because the
  // model cannot evaluate them (an input past a bound added after they were stored, an
  // implausible stored value, no layout): how many, and the first kMaxSkippedNamed of them,
  // each "stored run 'ID' cannot be evaluated (WHY)".
  int64_t skipped = 0;
  std::vector<std::string> skipped_named;
};
inline constexpr size_t kMaxSkippedNamed = 10;

struct CalibrationJobResult {
  // What was stored under the name: the layer, or when the fit was declined the start unchanged
  // (no changes) with info[kDeclinedReasonKey].
  StoredProfile stored;
  bool written = false;           // whether the store was written (always, when OK)
  std::vector<Measurement> runs;  // the runs fitted on: fit.before and fit.after point into them
  LayerFit fit;
  OtherRunsError others;
};

// Drift: runs matching a stored profile's filter (kept in its info.filter.* by RunCalibration)
// stored after the profile, predicted with it. The profile has drifted when at least
// kMinDriftRuns of them have a median measured / predicted outside the profile's 80 % band.
inline constexpr int kMinDriftRuns = 2;
inline constexpr int kMaxDriftRuns = 200;  // the latest this many are predicted
struct ProfileDrift {
  bool tracked = false;     // the profile kept its filter (Calibrate stored it)
  int runs = 0;             // runs matching it stored since (the latest kMaxDriftRuns)
  double median_ratio = 1;  // measured / predicted over them; 1 with none
  bool drifted = false;
  std::string text;  // in words when drifted, else ""
};

// The filter a profile Calibrate stored was fitted on; nullopt when it kept none.
std::optional<MeasurementFilter> StoredFilter(const Profile& profile);

// `stored`'s drift, predicting with `resolved` (its resolution). Reads the store.
absl::StatusOr<ProfileDrift> DriftOf(const StoredProfile& stored, const Profile& resolved,
                                     Store* store, const Catalog& catalog,
                                     const JobControl& control);

// INVALID_ARGUMENT naming "name" unless `name` is 1-64 letters, digits, '-', '_' or '.' and not
// "default".
absl::Status CheckProfileName(const std::string& name);

// Runs the job: FAILED_PRECONDITION when no stored run matches (or one holds an implausible
// value), ALREADY_EXISTS when the name is taken and replace is false, NOT_FOUND for an unknown
// start_from, CANCELLED when `control` says stop. Every status names the request field.
absl::StatusOr<CalibrationJobResult> RunCalibration(const CalibrationJob& job, Store* store,
                                                    const Catalog& catalog,
                                                    const std::shared_ptr<const Profile>& builtin,
                                                    const JobControl& control);

}  // namespace scalecast

#endif  // SCALECAST_JOBS_CALIBRATION_JOB_H_
