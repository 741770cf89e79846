#include "jobs/import_job.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/predictor.h"
#include "model/status_macros.h"

namespace scalecast {

absl::Status PrepareToStore(const Catalog& catalog, Measurement* m) {
  if (absl::Status st = ValidateMeasurement(*m, ""); !st.ok()) return st;
  // The store keeps runs on named parts; a described one (its figures) would be lost.
  if (!m->scenario.cluster.accelerator_spec.empty()) {
    return absl::InvalidArgumentError(
        "scenario.cluster.accelerator_spec: a stored run names a catalog accelerator; "
        "describe the hardware in predictions, not in measurements");
  }
  // A measured run is evidence: it names its part; a name several parts share is not taken as
  // the usual one (Catalog::FindUsualAccelerator) as a prediction's would be.
  const std::string& named = m->scenario.cluster.accelerator;
  const std::optional<NamedPart> read = catalog.ReadAccelerator(named);
  if (read && read->how == NamedPart::How::kUsual) {
    return absl::NotFoundError(
        absl::StrCat("scenario.cluster.accelerator: ", catalog.AcceleratorNotFound(named),
                     "; a stored run names its part"));
  }
  absl::StatusOr<Scenario> resolved = ResolveScenario(m->scenario, catalog);
  if (!resolved.ok()) return resolved.status();
  // A system's name is its part and its node: the run keeps both (its replays price them).
  if (read && read->how == NamedPart::How::kSystem) {
    m->scenario.cluster.gpus_per_node = resolved->cluster.gpus_per_node;
    m->scenario.cluster.inter_node_gbps_per_gpu = resolved->cluster.inter_node_gbps_per_gpu;
  }
  m->scenario.cluster.accelerator = resolved->cluster.accelerator;  // the canonical id
  return absl::OkStatus();
}

namespace {

absl::Status Stopped(const char* what) {
  return absl::CancelledError(absl::StrCat("the ", what, " was stopped"));
}

}  // namespace

absl::StatusOr<RecordOutcome> ImportCsv(Store* store, const CsvImport& in, const Catalog& catalog,
                                        const JobControl& control) {
  MeasurementCsvReader reader(in.csv);
  int64_t rows = 0;
  RecordOutcome out;
  auto next = [&](std::vector<Measurement>* chunk) -> absl::Status {
    if (control.Cancelled()) return Stopped("import");
    Measurement m;
    int line = 0;
    while (chunk->size() < Store::kRecordChunk) {
      ASSIGN_OR_RETURN(const bool more, reader.Next(&m, &line));
      if (!more) break;
      if (++rows > in.max_runs) {
        // Count the rest (one row held at a time) to say how many there are.
        std::vector<std::string> row;
        CsvReader rest(in.csv);
        int64_t all = -1;  // the header
        while (true) {
          ASSIGN_OR_RETURN(const bool any, rest.Next(&row, &line));
          if (!any) break;
          ++all;
        }
        return absl::InvalidArgumentError(absl::StrCat("csv: ", all, " rows, over the limit of ",
                                                       in.max_runs, " runs in one batch"));
      }
      if (m.source.empty()) m.source = in.source;
      for (const auto& [k, v] : in.labels) m.labels.emplace(k, v);
      if (absl::Status st = PrepareToStore(catalog, &m); !st.ok()) {
        // A row the checks refuse (an unknown accelerator too) is a bad file, like a bad cell.
        return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", st.message()));
      }
      chunk->push_back(std::move(m));
    }
    // Only the first call can find none: later ones follow a call that found some.
    if (rows == 0) return absl::InvalidArgumentError("line 2: no rows after the header");
    return absl::OkStatus();
  };
  absl::StatusOr<int64_t> given = store->RecordMeasurementStream(
      next, [&out](Measurement&& m) { out.ids.push_back(std::move(m.id)); });
  if (!given.ok()) return given.status();
  out.duplicates = *given - static_cast<int64_t>(out.ids.size());
  return out;
}

absl::StatusOr<RecordOutcome> RecordRuns(Store* store, int64_t count, const RunAt& run,
                                         const JobControl& control) {
  int64_t i = 0;
  RecordOutcome out;
  absl::StatusOr<int64_t> given = store->RecordMeasurementStream(
      [&](std::vector<Measurement>* chunk) -> absl::Status {
        if (control.Cancelled()) return Stopped("write");
        for (; i < count && chunk->size() < Store::kRecordChunk; ++i) {
          ASSIGN_OR_RETURN(Measurement m, run(i));
          chunk->push_back(std::move(m));
        }
        return absl::OkStatus();
      },
      [&out](Measurement&& m) { out.ids.push_back(std::move(m.id)); });
  if (!given.ok()) return given.status();
  out.duplicates = *given - static_cast<int64_t>(out.ids.size());
  return out;
}

}  // namespace scalecast
