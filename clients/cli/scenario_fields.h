// The scenario flags, derived at run time from the proto: every field under scalecast.v1.Scenario
// whose `(scalecast.v1.field)` option names a flag (proto/scalecast/v1/options.proto) is one,
// with its help, value name, range and parsing taken from the option and the field's type. A
// field added to the proto with the option is a flag with nothing added here. Plan's own flags
// (--tokens, the constraints, reliability, --price) come from PlanRequest's and PlanCandidate's
// fields the same way.
#ifndef SCALECAST_CLIENTS_CLI_SCENARIO_FIELDS_H_
#define SCALECAST_CLIENTS_CLI_SCENARIO_FIELDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/scalecast/v1/options.pb.h"
#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::cli {

// A proto field that is a flag.
struct FieldFlag {
  // From the root message's own field down to the flag's field (for a Scenario: workload, model,
  // moe, num_experts).
  std::vector<const google::protobuf::FieldDescriptor*> path;
  const ::scalecast::v1::FieldUi* ui = nullptr;
  std::string value_name;  // "" for a boolean flag
};

// In the proto's declaration order, depth first from Scenario.
const std::vector<FieldFlag>& ScenarioFields();
// The field flag `name` (without "--") sets, or null.
const FieldFlag* FindScenarioField(const std::string& name);

// A Scenario field that is a column of the measurements CSV (its option's `csv`), with its path
// from Scenario. `measurements list --csv` writes these columns, so that the file it writes reads
// back (`measurements import`) into the same scenarios.
struct CsvColumn {
  std::vector<const google::protobuf::FieldDescriptor*> path;
  std::string column;
};
// In the proto's declaration order, depth first from Scenario.
const std::vector<CsvColumn>& ScenarioCsvColumns();
// The field's cell, as the CSV reader (model/measurements.cc) reads it back: a number, a string,
// true or false; blank where the field is unset (an absent optional field, a plain one at its
// default).
std::string CsvCell(const CsvColumn& f, const ::scalecast::v1::Scenario& s);

// `scalecast plan`'s own flags: PlanRequest's fields with a flag, its constraints' and
// reliability's included (path from PlanRequest; the workload and stack are Scenario's flags),
// and PlanCandidate's (path from PlanCandidate: what --accelerator's candidate takes).
const std::vector<FieldFlag>& PlanFields();
const std::vector<FieldFlag>& PlanCandidateFields();

// Sets the field, under `root` (the message its path starts from: a Scenario for
// ScenarioFields, a PlanRequest or PlanCandidate for Plan's), from one flag value: the type's
// parser, the option's range, "auto" where allowed, a file's bytes or JSON where the flag names
// a file. Errors name the flag ("--tp: 'x' is not an integer").
absl::Status ApplyField(const FieldFlag& f, const std::string& value,
                        google::protobuf::Message* root);

// The bytes of the file a flag names; "--request: cannot read 'x'" when it cannot be read.
absl::StatusOr<std::string> ReadFlagFile(const std::string& flag, const std::string& path);

// The names an enum's values go by on the command line ("bf16, fp16, ..."): the model's table
// (model/types.h) for the proto enum of the same numbers. Empty for an enum without one.
std::string EnumKnownNames(const google::protobuf::EnumDescriptor* e);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_SCENARIO_FIELDS_H_
