// Measured runs on their way into the store: the checks RecordMeasurements and
// ImportMeasurements share, and the CSV import itself (the one CSV reader: the CLI and the Python
// client send the file's bytes to the server). gRPC-free.
#ifndef SCALECAST_JOBS_IMPORT_JOB_H_
#define SCALECAST_JOBS_IMPORT_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobs/job.h"
#include "model/catalog.h"
#include "model/limits.h"
#include "model/measurements.h"
#include "storage/store.h"

namespace scalecast {

// Makes `m` what a batch write stores: within the store's bounds (ValidateMeasurement) and a
// scenario the model can read (its layout may stay partly blank), its accelerator the catalog's
// canonical id of the part it names (a name several parts share is refused, not taken as the
// usual part as a prediction's is). Errors name the field from the measurement down
// ("scenario.cluster.accelerator:
// ...", "tokens_per_s_per_gpu: ..."): the caller puts its own path in front.
absl::Status PrepareToStore(const Catalog& catalog, Measurement* m);

struct CsvImport {
  absl::string_view csv;                      // the file's bytes (shared/data/README.md's columns)
  std::string source;                         // for rows whose source cell is blank or absent
  std::map<std::string, std::string> labels;  // added to every row (a row's csv_id, note stay)
  int64_t max_runs = 0;                       // more rows is INVALID_ARGUMENT naming the limit
};

// What a batch write did: the ids stored now, in batch order, and how many runs were already
// stored (or repeated in the batch) and so were not.
struct RecordOutcome {
  std::vector<std::string> ids;
  int64_t duplicates = 0;
};

// Stores the CSV's runs, each through PrepareToStore, in one streamed write
// (Store::RecordMeasurementStream): all or none, one chunk of runs held at a time besides the
// file's bytes. INVALID_ARGUMENT "line L, column C: why" for a cell the reader refuses (bytes
// that are not UTF-8 included), "line L: <field>: why" for a run the checks refuse (an unknown
// accelerator included: the file is the bad argument), "csv: N rows, over the limit of M runs in
// one batch" past in.max_runs; CANCELLED when `control` asks to stop. Nothing is stored then.
absl::StatusOr<RecordOutcome> ImportCsv(Store* store, const CsvImport& in, const Catalog& catalog,
                                        const JobControl& control);

// Makes the run at an index of a write (checked and ready to store), or says why it cannot be.
using RunAt = std::function<absl::StatusOr<Measurement>(int64_t index)>;

// Stores runs 0 .. count-1, each made by `run` when its chunk is due (Store::kRecordChunk at a
// time), in one streamed write with Store::RecordMeasurements's duplicate rules: all or none, an
// error from `run` included; CANCELLED when `control` asks to stop.
absl::StatusOr<RecordOutcome> RecordRuns(Store* store, int64_t count, const RunAt& run,
                                         const JobControl& control);

}  // namespace scalecast

#endif  // SCALECAST_JOBS_IMPORT_JOB_H_
