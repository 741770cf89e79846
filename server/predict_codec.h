// Predict's request and response in the model's structs and the wire's bytes, with no protobuf
// message between: the request read straight into a Scenario, the response written straight from
// the Prediction and the echoed Scenario. Both are generated from the proto
// (proto/field_rules_main.cc, CodecHeader: each proto field is the struct member of the same
// name), so a field added to the proto needs the struct's member and nothing here. Predict is the
// one call answered inline, and protobuf's messages between the wire and the structs (23 arena
// messages and 14 arena strings built for a response, 10 parsed for a request, then converted)
// cost as much as the model's evaluation. tests/predict_codec_test.cc holds both to protobuf's
// bytes and to FromProto's scenarios and errors.
#ifndef SCALECAST_SERVER_PREDICT_CODEC_H_
#define SCALECAST_SERVER_PREDICT_CODEC_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

// What a PredictResponse carries, field for field (proto PredictResponse).
struct PredictAnswer {
  const Prediction& prediction;
  const std::string& model_version;
  const std::string& calibration;  // the profile's name
  const Scenario& scenario;        // as echoed (EchoStack, the usual network filled in)
};

// Writes the answer's PredictResponse into the front of `buf` (grown as needed, never shrunk: a
// buffer kept between calls is reused) and returns the byte count: the bytes protobuf writes for
// the message convert.h's ToProto builds from the same structs.
size_t WritePredictResponse(const PredictAnswer& answer, std::string* buf);

// A PredictRequest's scenario from its wire bytes into `*out` (default-constructed): the Scenario,
// or the error, that protobuf's parser and FromProto(request.scenario(), path, out) give (bytes
// protobuf cannot parse: INVALID_ARGUMENT). A request that FromProto converts field for field is
// read directly; anything else (an unknown field, a list, a config.json, a described accelerator,
// a value FromProto refuses, malformed bytes) goes through protobuf and FromProto.
absl::Status ReadPredictRequest(absl::string_view bytes, absl::string_view path, Scenario* out);

// The direct read alone (tests): true when it read the scenario into `*out` (default-constructed),
// false when the request needs protobuf and FromProto (then `*out` is partly written).
bool ReadPredictRequestDirect(absl::string_view bytes, Scenario* out);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_PREDICT_CODEC_H_
