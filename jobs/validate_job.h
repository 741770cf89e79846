// Validate over a store of any size: the runs are counted first (refused at once past the
// limit), then read a page at a time, predicted, and folded into running summaries, so that
// memory follows the page, not the store (issue 27: one Validate over 1M runs held 2.3 GB).
#ifndef SCALECAST_JOBS_VALIDATE_JOB_H_
#define SCALECAST_JOBS_VALIDATE_JOB_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "jobs/job.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/profile.h"

namespace scalecast {

// Where the runs come from (the store, through whatever thread the caller reads it on).
struct RunSource {
  // How many runs match.
  std::function<absl::StatusOr<int64_t>()> count;
  // One page after `token` ("" = the first); *next = "" on the last page.
  std::function<absl::StatusOr<std::vector<Measurement>>(const std::string& token,
                                                         std::string* next)>
      page;
};

struct ValidateJobOptions {
  // More matching runs is RESOURCE_EXHAUSTED, decided by the count before any run is read.
  int64_t max_runs = 1'000'000;
  // Keep every row (and its run) for the caller: the memory then follows the runs, so it is
  // refused (RESOURCE_EXHAUSTED naming include_rows) past max_rows.
  bool keep_rows = false;
  int64_t max_rows = 50'000;
};

// Distinct groups tracked per dimension (source, label, accelerator, framework); a group first
// seen after that many is left out of the report (it is counted in `overall` all the same).
inline constexpr size_t kMaxTrackedGroups = 10'000;

struct ValidateJobResult {
  // overall, by_* and the counts; rows only with keep_rows (they point into `runs`).
  ValidationReport report;
  std::deque<std::vector<Measurement>> runs;
  // Mean absolute error per (accelerator, framework): for the model-error gauge.
  std::map<std::pair<std::string, std::string>, ErrorStats> by_pair;
  int64_t untracked_groups = 0;  // groups left out past kMaxTrackedGroups
};

// FAILED_PRECONDITION "filter: no stored runs match" when there are none (naming `described`);
// CANCELLED when control says stop (checked between slices of 8 runs and between pages). A
// row that cannot be judged (a stored value out of bounds, a non-finite error) is a failed
// row naming the run, as in a report of all runs at once.
absl::StatusOr<ValidateJobResult> RunValidateJob(const RunSource& source, const Catalog& catalog,
                                                 const Profile& profile,
                                                 const ValidateJobOptions& options,
                                                 const std::string& described,
                                                 const JobControl& control);

}  // namespace scalecast

#endif  // SCALECAST_JOBS_VALIDATE_JOB_H_
