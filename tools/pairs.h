// Controlled pairs for scalecast-validate --pairs: two runs of one source whose scenarios differ
// in the named fields only (bf16 against fp8 on the same layout, one release against the next on
// the same layout and cluster). The ratio of their measured throughputs is what a Compare of the
// two scenarios answers; set beside the predicted ratio, it checks the model on the one change,
// free of what the two runs share (the cluster, the rest of the stack, the measurement method).
#ifndef SCALECAST_TOOLS_PAIRS_H_
#define SCALECAST_TOOLS_PAIRS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/calibration.h"

namespace scalecast::tools {

struct ControlledPair {
  const ValidationRow* from = nullptr;  // the earlier value, in ControlledPairs' order
  const ValidationRow* to = nullptr;
  std::string from_value;  // the named fields of `from`, "key=value" joined by ","
  std::string to_value;
  double measured_ratio = 0;   // to's measured throughput / from's
  double predicted_ratio = 0;  // the same, predicted
  double Error() const { return predicted_ratio / measured_ratio - 1; }
};

// The pairs among `rows` (rows that could not be predicted are left out): runs of one source
// whose scenarios agree in every field but `fields` (keys of storage/scenario_codec.h's
// encoding; one ending in "." names every key under it, "stack." the whole stack) and the
// label, grouped by those fields' values. Naming "source" pairs runs of different sources too
// (each release's table is a source of its own). The values are ordered by the date of the
// software their runs used (SoftwareDateOf), then by the date their version names
// (DatedVersionYear), then by PairValueLess, and each run of a value is paired with each run of
// the next (one release with the next, bf16 with fp8).
// INVALID_ARGUMENT "--pairs: no scenario field X" for a field the encoding does not have.
absl::StatusOr<std::vector<ControlledPair>> ControlledPairs(const std::vector<ValidationRow>& rows,
                                                            const std::vector<std::string>& fields);

// OK when every one of `fields` names a key of the encoding (itself, or a prefix ending in ".");
// else INVALID_ARGUMENT "--pairs: no scenario field X".
absl::Status CheckPairFields(const std::vector<std::string>& fields);

// Text order with runs of digits compared as numbers: "25.9" < "25.11" < "26.02", "0.9" < "0.10".
bool PairValueLess(const std::string& a, const std::string& b);

}  // namespace scalecast::tools

#endif  // SCALECAST_TOOLS_PAIRS_H_
