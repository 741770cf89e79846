// Validation of stored runs a slice at a time, below gRPC: what Validate and Calibrate share.
#ifndef SCALECAST_JOBS_VALIDATION_H_
#define SCALECAST_JOBS_VALIDATION_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/profile.h"
#include "storage/store.h"

namespace scalecast {

// A filter in words ("accelerator=h100-sxm-80gb, source=my-lab"; "all stored runs" when empty).
std::string DescribeFilter(const MeasurementFilter& f);

// Validates `runs` a few at a time, checking `stop` between slices, so that work its caller gave
// up on frees the CPU within a slice's time; rows are independent, so the report is the one
// scalecast::Validate gives for all runs at once. The rows point into *slices. A row whose error
// is not finite (an implausible stored value) fails, naming the run, instead of turning the
// summaries into Inf; so does a run with an implausible stored value (kept from before the
// bounds existed). Returns CANCELLED when stopped.
absl::StatusOr<ValidationReport> ValidateInSlices(std::vector<Measurement> runs,
                                                  const Catalog& catalog, const Profile& profile,
                                                  const std::function<bool()>& stop,
                                                  std::vector<std::vector<Measurement>>* slices);

}  // namespace scalecast

#endif  // SCALECAST_JOBS_VALIDATION_H_
