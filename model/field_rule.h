// A scenario field's rule as the proto states it (its `(scalecast.v1.field)` option): the range
// the server, the catalog and the CSV reader check, and the measurements CSV column that holds
// it. The rules themselves are generated from the proto at build time (model/field_rules_gen.h,
// by proto/field_rules_main.cc): the model layer sees no protobuf, and the proto is their one
// home. model/field_rules.h checks them.
#ifndef SCALECAST_MODEL_FIELD_RULE_H_
#define SCALECAST_MODEL_FIELD_RULE_H_

namespace scalecast {

struct FieldRule {
  const char* name;  // the field's path under its message ("moe.num_experts" in ModelSpec)
  const char* csv;   // its measurements CSV column; "" = none
  double min;        // the accepted range, both ends included
  double max;
  bool ranged;  // the proto gives min or max: checked (else the range is the type's, unchecked)
};

}  // namespace scalecast

#endif  // SCALECAST_MODEL_FIELD_RULE_H_
