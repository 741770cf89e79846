// Predict's response writer (proto/predict_response_codec.h, its messages' writers generated from
// the proto) against protobuf's serializer: responses with every field of every message under
// PredictResponse set from the descriptor, zeros and edge values among them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "proto/predict_response_codec.h"
#include "proto/scalecast/v1/scalecast.pb.h"
#include "tests/proto_filler.h"

namespace scalecast {
namespace {

namespace gp = ::google::protobuf;
using proto_internal::kNotWritten;
using proto_internal::WritePredictResponse;

using testing::Filler;

TEST(PredictResponseCodec, WritesProtobufsBytesWithEveryFieldSet) {
  std::string buf;
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    v1::PredictResponse r;
    Filler(seed).Fill(&r);
    const size_t n = WritePredictResponse(r, &buf);
    ASSERT_NE(n, kNotWritten) << seed;
    ASSERT_EQ(buf.substr(0, n), r.SerializeAsString()) << "seed " << seed << "\n"
                                                       << r.DebugString();
  }
}

TEST(PredictResponseCodec, WritesAnEmptyResponseAsNoBytes) {
  std::string buf = "left over";
  EXPECT_EQ(WritePredictResponse(v1::PredictResponse(), &buf), 0u);
}

TEST(PredictResponseCodec, LeavesAResponseWithUnknownFieldsToProtobuf) {
  // Field 1000 of Prediction is no field of it: parsed, it is kept as an unknown field, which
  // protobuf's serializer writes back and the writer would drop.
  v1::PredictResponse r;
  std::string bytes;
  {
    v1::Prediction p;
    p.set_mfu(0.5);
    bytes = p.SerializeAsString();
    bytes += std::string("\xc0\x3e\x07", 3);  // field 1000, varint 7
  }
  ASSERT_TRUE(r.mutable_prediction()->ParseFromString(bytes));
  std::string buf;
  EXPECT_EQ(WritePredictResponse(r, &buf), kNotWritten);
}

TEST(PredictResponseCodec, GrowsItsBufferForALongResponse) {
  v1::PredictResponse r;
  for (int i = 0; i < 200; ++i) r.mutable_prediction()->add_warnings(std::string(1000, 'w'));
  std::string buf;
  const size_t n = WritePredictResponse(r, &buf);
  ASSERT_NE(n, kNotWritten);
  EXPECT_EQ(buf.substr(0, n), r.SerializeAsString());
}

}  // namespace
}  // namespace scalecast
