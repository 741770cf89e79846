// Predict's response written in one pass (see proto/predict_response_codec.h): the bytes
// protobuf's serializer writes, field for field in field-number order (proto3: a field without
// presence only when it is not its zero, a field with presence whenever it is set, repeated
// elements all), nested messages as their length and bytes. Each message's Write is generated
// from the proto (proto/field_rules_main.cc, WriterHeader); the forms it calls are
// proto/wire_writer.h's. tests/proto_codec_test.cc checks it against protobuf's serializer with
// every field set.
#include "proto/predict_response_codec.h"

#include <cstdlib>

#include "proto/wire_writer.h"

namespace scalecast::proto_internal {
namespace {

using namespace ::scalecast::wire;  // NOLINT: the forms the generated writer calls

// Whether `m` carries unknown fields, read from its metadata as protobuf's own serializer does
// (a pointer to the protected member, formed where it is accessible; reflection would cost ~100
// instructions a message).
struct MetadataOf : google::protobuf::MessageLite {
  static constexpr auto kMember = &MetadataOf::_internal_metadata_;
};
bool Known(const google::protobuf::MessageLite& m) {
  return !(m.*MetadataOf::kMember).have_unknown_fields();
}

// Write and AllKnown for every message under PredictResponse, generated from the proto.
#include "proto/predict_response_writer_gen.h"

}  // namespace

size_t WritePredictResponse(const v1::PredictResponse& r, std::string* buf) {
  if (!kWritable || !AllKnown(r)) return kNotWritten;
  Buffer b(buf);
  char* p = Write(b, b.Room(b.begin(), Buffer::kRoom), r);
  if (p > b.end()) std::abort();  // past the room made: see Buffer
  return static_cast<size_t>(p - b.begin());
}

}  // namespace scalecast::proto_internal
