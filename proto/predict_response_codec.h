// Predict's response written in one pass into the bytes protobuf's serializer writes for it: the
// one response served inline, and protobuf's generated serializer (a size pass, then a write pass
// calling into libprotobuf for each of its ~20 nested messages and checking each string as UTF-8
// again) cost about half as much as the model's evaluation. Each message's writer is generated
// from the proto at build time (proto/field_rules_main.cc, WriterHeader): a field added to the
// proto needs nothing here. tests/proto_codec_test.cc fills every field of every message under
// PredictResponse from the descriptor and compares the bytes with protobuf's.
#ifndef SCALECAST_PROTO_PREDICT_RESPONSE_CODEC_H_
#define SCALECAST_PROTO_PREDICT_RESPONSE_CODEC_H_

#include <cstddef>
#include <string>

#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::proto_internal {

inline constexpr size_t kNotWritten = static_cast<size_t>(-1);

// Writes `r`'s wire bytes into the front of `buf` (grown as needed, never shrunk: a buffer kept
// between calls is reused) and returns their count, or kNotWritten (nothing written) when some
// message of `r` carries unknown fields: protobuf's serializer writes those.
size_t WritePredictResponse(const v1::PredictResponse& r, std::string* buf);

}  // namespace scalecast::proto_internal

#endif  // SCALECAST_PROTO_PREDICT_RESPONSE_CODEC_H_
