#include "jobs/validation.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace scalecast {

std::string DescribeFilter(const MeasurementFilter& f) {
  std::vector<std::string> parts;
  if (!f.accelerator.empty()) parts.push_back("accelerator=" + f.accelerator);
  if (!f.framework.empty()) parts.push_back("framework=" + f.framework);
  if (!f.source.empty()) parts.push_back("source=" + f.source);
  for (const auto& [k, v] : f.labels) parts.push_back("label." + k + "=" + v);
  return parts.empty() ? "all stored runs" : absl::StrJoin(parts, ", ");
}

namespace {
constexpr size_t kValidateSlice = 8;
}  // namespace

absl::StatusOr<ValidationReport> ValidateInSlices(std::vector<Measurement> runs,
                                                  const Catalog& catalog, const Profile& profile,
                                                  const std::function<bool()>& stop,
                                                  std::vector<std::vector<Measurement>>* slices) {
  ValidationReport out;
  for (size_t begin = 0; begin < runs.size(); begin += kValidateSlice) {
    if (stop()) return absl::CancelledError("validation stopped");
    const size_t end = std::min(runs.size(), begin + kValidateSlice);
    slices->emplace_back(std::make_move_iterator(runs.begin() + begin),
                         std::make_move_iterator(runs.begin() + end));
    ValidationReport part = scalecast::Validate(slices->back(), catalog, profile);
    for (ValidationRow& row : part.rows) {
      // A run stored before the bounds existed: not a measurement to judge the model by.
      if (absl::Status bad = ValidateMeasurement(*row.measurement, "");
          row.failure.empty() && !bad.ok()) {
        const absl::string_view why = bad.message();
        row.failure = absl::StrCat("measurement '", row.measurement->id, "': ", why);
      }
      if (row.failure.empty() && !std::isfinite(row.error)) {
        row.failure = absl::StrCat("measurement '", row.measurement->id,
                                   "': the error is not a finite number (measured ",
                                   row.measurement->tokens_per_s_per_gpu, " tokens/s per GPU)");
      }
      out.rows.push_back(std::move(row));
    }
  }
  SummariseRows(&out);
  return out;
}

}  // namespace scalecast
