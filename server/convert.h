// proto <-> model struct conversion. The enums share their numbers with the model's, so the
// conversion is field-for-field; unknown enum numbers and non-finite numbers are refused with the
// field path.
#ifndef SCALECAST_SERVER_CONVERT_H_
#define SCALECAST_SERVER_CONVERT_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/limits.h"
#include "model/measurements.h"
#include "model/planner.h"
#include "model/profile.h"
#include "model/types.h"
#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast {

namespace pb = ::scalecast::v1;

// Every string field within its length limit (storage/store.h: kMaxNameBytes, ...), checked
// before anything echoes or looks the strings up; INVALID_ARGUMENT naming the field.
absl::Status CheckLengths(const pb::Scenario& in, absl::string_view path);
absl::Status CheckLengths(const pb::MeasurementFilter& in, absl::string_view path);

// `path` prefixes error messages ("scenario", "scenarios[2]", "measurements[7].scenario").
// Lengths are checked first (CheckLengths).
absl::StatusOr<Scenario> FromProto(const pb::Scenario& in, absl::string_view path);
// The same into `*out` (default-constructed): nothing moved, for a caller that keeps it.
absl::Status FromProto(const pb::Scenario& in, absl::string_view path, Scenario* out);
// A layout on its own (a plan candidate's), its errors named under `path`
// ("candidates[0].layout.sharding: ...").
absl::Status FromProto(const pb::Parallelism& in, absl::string_view path, Parallelism* out);
void ToProto(const Scenario& in, pb::Scenario* out);
void ToProto(const Parallelism& in, pb::Parallelism* out);
void ToProto(const StackOptions& in, pb::Stack* out);
void ToProto(const ModelSpec& in, pb::ModelSpec* out);
// Appends the preset's shape to `models` and its parameter count to `sizes`.
void ToProto(const ModelPreset& in, pb::ListModelsResponse* out);
void ToProto(const Prediction& in, pb::Prediction* out);
// Whether ToProto writes these nested messages (absent, they read as all zeros): a dense model's
// MoE and MLA messages are left out, as an old server did, and so are an empty accelerator
// description and a prediction's band when it has none. Predict's struct writer
// (server/predict_codec.h) writes the same.
bool Echoed(const MoeSpec& m);
bool Echoed(const MlaSpec& m);
bool Echoed(const AcceleratorSpec& s);
bool Echoed(const Uncertainty& u);

// Also applies the store's bounds (plausible values, recorded_at in 1970..9999, lengths).
absl::StatusOr<Measurement> FromProto(const pb::Measurement& in, absl::string_view path);
void ToProto(const Measurement& in, pb::Measurement* out);

absl::StatusOr<Objective> FromProto(pb::Objective in, absl::string_view path);

void ToProto(const ErrorStats& in, pb::ErrorStats* out);

// The `max_groups` groups of `in` with the most runs (ties: by name), largest first.
std::vector<std::pair<std::string, ErrorStats>> LargestGroups(
    const std::map<std::string, ErrorStats>& in, size_t max_groups);
// The Validate response from `report`: its rows when `include_rows`, the summaries (by_source and
// by_label capped at kMaxValidateGroups, with the omitted counts) and failed_count.
void ToProto(const ValidationReport& report, bool include_rows, pb::ValidateResponse* out);
void ToProto(const Accelerator& in, pb::Accelerator* out);
void ToProto(const System& in, pb::System* out);
// Field for field; ranges are checked where the spec is resolved (DescribeAccelerator).
AcceleratorSpec FromProto(const pb::AcceleratorSpec& in);
void ToProto(const AcceleratorSpec& in, pb::AcceleratorSpec* out);
// The profile's fitted parameters as a flat map.
void ToProto(const Profile& in, pb::CalibrationProfile* out);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_CONVERT_H_
