// Calibrate's workflow below gRPC: resolve the starting profile, read the runs, fit a layer with
// the few-shot rule (model/calibration.h FitLayer), measure it on the other stored runs and store
// it. A server handler translates a CalibrateRequest into a CalibrationJob and the result back;
// a tool or a test calls RunCalibration directly.
#ifndef SCALECAST_JOBS_CALIBRATION_JOB_H_
#define SCALECAST_JOBS_CALIBRATION_JOB_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "jobs/job.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "storage/store.h"

namespace scalecast {

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
};

struct CalibrationJobResult {
  StoredProfile stored;  // what was stored under the name (as written)
  bool written = false;  // whether the store was written
  LayerFit fit;
  OtherRunsError others;
};

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
