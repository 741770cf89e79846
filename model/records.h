// The limits of the possible: the best model FLOPs utilization published per hardware
// generation and precision, each with its source. MFU is model FLOPs (6N + attention, the
// model's own count) per second over the dense 16-bit peak, so fp8 and fp4 records may exceed 1.
#ifndef SCALECAST_MODEL_RECORDS_H_
#define SCALECAST_MODEL_RECORDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

struct MfuRecord {
  std::string generation;  // "ampere", "hopper", "blackwell", ...
  std::string precision;   // "16-bit", "fp8" (fp8 and mxfp8), "fp4" (nvfp4, mxfp4)
  double mfu = 0;
  std::string what;    // the run: model, accelerator, GPUs
  std::string source;  // where it was published
};

// Every record, by generation then precision.
const std::vector<MfuRecord>& MfuRecords();
// The precision class a record is kept for ("16-bit", "fp8", "fp4").
absl::string_view PrecisionClass(Precision p);
// The record for a generation and precision, or nullptr when none is published.
const MfuRecord* FindMfuRecord(absl::string_view generation, Precision p);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_RECORDS_H_
