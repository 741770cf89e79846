// Measured training runs and the CSV format they are imported from (shared/data/README.md's
// columns). Parsing takes text, not files: no I/O here.
#ifndef SCALECAST_MODEL_MEASUREMENTS_H_
#define SCALECAST_MODEL_MEASUREMENTS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

// The labels the measurements CSV's own columns become, each named after its column: the run's id
// in its CSV (a listed file's csv_id column, else its id column), and the row's note.
inline constexpr char kCsvIdLabel[] = "csv_id";
inline constexpr char kNoteLabel[] = "note";

struct Measurement {
  std::string id;  // assigned by the store; the CSV's id goes to labels[kCsvIdLabel]
  Scenario scenario;
  double tokens_per_s_per_gpu = 0;
  double step_time_s = 0;    // 0 = not measured
  double watts_per_gpu = 0;  // 0 = not measured
  std::string source;
  std::map<std::string, std::string> labels;
  int64_t recorded_at_unix_ms = 0;
};

// Parses CSV text (RFC 4180 quoting) with a header row naming at least the required columns.
// Any bad row fails the whole parse with "line L, column NAME: why" (INVALID_ARGUMENT).
// Blank cells follow the README: blank layout fields are left to the planner; a blank sharding
// takes the framework's default; a blank global batch is dp * micro batch (* pp with pipeline
// parallelism: one micro-batch per stage in flight). When `lines` is given, it gets each run's
// (first) line number, in order.
absl::StatusOr<std::vector<Measurement>> ParseMeasurementsCsv(absl::string_view text,
                                                              std::vector<int>* lines = nullptr);

// Reads CSV text a row at a time (RFC 4180 quoting; blank lines are skipped); errors name the
// line. Holds one row, never the file's all.
class CsvReader {
 public:
  explicit CsvReader(absl::string_view text) : text_(text) {}
  // The next row's fields into *row (replaced) and its first physical line into *line; false
  // at the end of the text.
  absl::StatusOr<bool> Next(std::vector<std::string>* row, int* line);

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
};

namespace measurements_internal {
struct Columns;
}

// ParseMeasurementsCsv a run at a time: the same rules and errors, one run held at a time. Every
// cell must be valid UTF-8 ("line L, column NAME: not valid UTF-8 (byte 0xNN at offset K)";
// the header's cells "line 1, column N: ..."), so that no error echoes bytes that are not text
// and nothing stored is.
class MeasurementCsvReader {
 public:
  explicit MeasurementCsvReader(absl::string_view text);
  ~MeasurementCsvReader();
  MeasurementCsvReader(const MeasurementCsvReader&) = delete;
  MeasurementCsvReader& operator=(const MeasurementCsvReader&) = delete;
  // The next run into *m (replaced) and its first physical line into *line; false at the end.
  // The first call reads the header (an empty file, a missing column: its error comes then).
  absl::StatusOr<bool> Next(Measurement* m, int* line);

 private:
  CsvReader csv_;
  std::unique_ptr<measurements_internal::Columns> cols_;  // null until the header is read
  size_t header_size_ = 0;
  std::vector<std::string> header_names_;
  std::vector<std::string> row_;
};

// The offset of the first byte of `s` that is not part of a well-formed UTF-8 sequence
// (overlong forms, surrogates and code points past U+10FFFF included), or npos.
size_t FirstInvalidUtf8(absl::string_view s);

// Applies an annotation CSV (data/*.csv) keyed by the runs' CSV ids, their source or their model
// name (the first of id, source, model in its header): facts a measurement file leaves out (the
// stack a run used, how it routed, a recompute the source's own figures show, layout and
// architecture facts). Its columns are the measurements CSV's, read by the same rules: every
// column a scenario field's proto option names (`csv`), and mlp and recompute; a model-wide or
// source-wide fp8_recipe applies to the fp8 runs only. A blank cell changes nothing; a bad value
// names its line and column.
absl::Status ApplyRunAnnotations(absl::string_view csv_text, std::vector<Measurement>* runs);

// INVALID_ARGUMENT naming "measurements[index].<field>" when `m` breaks a bound of
// model/limits.h (every store backend enforces them, and the server on its requests).
absl::Status ValidateMeasurement(const Measurement& m, size_t index);
// The same, naming "<path>.<field>" ("<field>" when `path` is empty).
absl::Status ValidateMeasurement(const Measurement& m, absl::string_view path);

// Splits CSV text into rows of fields; errors name the line.
absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(absl::string_view text);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_MEASUREMENTS_H_
