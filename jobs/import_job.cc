#include "jobs/import_job.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "model/predictor.h"

namespace scalecast {

absl::Status PrepareToStore(const Catalog& catalog, Measurement* m) {
  if (absl::Status st = ValidateMeasurement(*m, ""); !st.ok()) return st;
  absl::StatusOr<Scenario> resolved = ResolveScenario(m->scenario, catalog);
  if (!resolved.ok()) return resolved.status();
  m->scenario.cluster.accelerator = resolved->cluster.accelerator;  // the canonical id
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Measurement>> ReadCsvImport(const CsvImport& in, const Catalog& catalog,
                                                       const JobControl& control) {
  std::vector<int> lines;
  absl::StatusOr<std::vector<Measurement>> runs = ParseMeasurementsCsv(in.csv, &lines);
  if (!runs.ok()) return runs.status();
  if (runs->empty()) return absl::InvalidArgumentError("line 2: no rows after the header");
  if (static_cast<int64_t>(runs->size()) > in.max_runs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csv: ", runs->size(), " rows, over the limit of ", in.max_runs, " runs in one batch"));
  }
  for (size_t i = 0; i < runs->size(); ++i) {
    if (control.Cancelled()) return absl::CancelledError("the import was stopped");
    Measurement& m = (*runs)[i];
    if (m.source.empty()) m.source = in.source;
    for (const auto& [k, v] : in.labels) m.labels.emplace(k, v);
    if (absl::Status st = PrepareToStore(catalog, &m); !st.ok()) {
      // A row the checks refuse (an unknown accelerator too) is a bad file, like a bad cell.
      return absl::InvalidArgumentError(absl::StrCat("line ", lines[i], ": ", st.message()));
    }
  }
  return runs;
}

absl::StatusOr<RecordOutcome> RecordRuns(Store* store, std::vector<Measurement> runs) {
  const size_t n = runs.size();
  absl::StatusOr<std::vector<Measurement>> stored = store->RecordMeasurements(std::move(runs));
  if (!stored.ok()) return stored.status();
  RecordOutcome out;
  for (Measurement& m : *stored) out.ids.push_back(std::move(m.id));
  out.duplicates = static_cast<int64_t>(n - out.ids.size());
  return out;
}

}  // namespace scalecast
