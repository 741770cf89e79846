// A small, exact text codec for Scenario, used by the store to keep the whole scenario in one
// column. The format is one line of ';'-separated fields after a version tag:
//
//   scenario.v1;model.name=llama2-70b;model.layers=80;...;label=run%3B7
//
// Every Scenario field appears once, in a fixed order, as key=value. Enums are their integer
// values, bools 0/1, doubles "%.17g" (exact for every finite double), strings percent-escaped
// (every byte outside printable ASCII and each of '%', ';', '=' becomes %XX), so the text is
// printable ASCII whatever the strings hold.
#ifndef SCALECAST_STORAGE_SCENARIO_CODEC_H_
#define SCALECAST_STORAGE_SCENARIO_CODEC_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

// Encodes every field of `s`. DecodeScenario(EncodeScenario(s)) == s, field for field.
std::string EncodeScenario(const Scenario& s);

// Every field of `s` as (key, value), in the encoding's order and spelling, all of them (the
// newest version's keys, defaults included), so two scenarios compare field by field whatever
// version each would be written in.
std::vector<std::pair<std::string, std::string>> ScenarioFields(const Scenario& s);

// Decodes text written by EncodeScenario. Anything else (a missing, extra, reordered or
// malformed field, an enum value out of range, a non-canonical spelling) is INTERNAL: the text
// comes from the store's own column, so a failure means the stored data is corrupt.
absl::StatusOr<Scenario> DecodeScenario(absl::string_view text);

}  // namespace scalecast

#endif  // SCALECAST_STORAGE_SCENARIO_CODEC_H_
