// Reading measured runs for the command-line tools: measurement CSVs, then annotation CSVs
// (data/*.csv, ApplyRunAnnotations) applied in the order given. Errors name the file.
#ifndef SCALECAST_TOOLS_RUN_FILES_H_
#define SCALECAST_TOOLS_RUN_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/measurements.h"

namespace scalecast::tools {

// The whole file; false when it cannot be opened.
bool ReadFile(const std::string& path, std::string* out);

// Every run of `csvs`, with each of `annotations` applied in turn. An unreadable file or a bad
// row is an error "FILE: why"; so is a CSV id that two runs share, in one file or two (an
// annotation keyed by id could not tell them apart).
absl::StatusOr<std::vector<Measurement>> LoadRuns(const std::vector<std::string>& csvs,
                                                  const std::vector<std::string>& annotations);

// The date (decimal year) of the software a run used: its stack's release as the framework
// table resolves it; 0 when it does not resolve.
double SoftwareDateOf(const Measurement& m);

}  // namespace scalecast::tools

#endif  // SCALECAST_TOOLS_RUN_FILES_H_
