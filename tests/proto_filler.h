// A protobuf message with every field set from its descriptor (tests/predict_codec_test.cc): a
// value, often an edge one, zeros and unset messages now and then.
#ifndef SCALECAST_TESTS_PROTO_FILLER_H_
#define SCALECAST_TESTS_PROTO_FILLER_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "google/protobuf/message.h"

namespace scalecast::testing {

namespace gp = ::google::protobuf;

class Filler {
 public:
  explicit Filler(uint32_t seed) : rng_(seed) {}

  // Every field of `m` and of the messages under it: a value, often an edge one; zeros (and
  // unset messages) in about one field in five, so that both sides of each test are taken.
  void Fill(gp::Message* m, int depth = 0) {
    const gp::Descriptor* d = m->GetDescriptor();
    const gp::Reflection* r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const gp::FieldDescriptor* f = d->field(i);
      if (f->is_repeated()) {
        const int n = Pick(4);
        for (int k = 0; k < n; ++k) AddOne(m, r, f, depth);
        continue;
      }
      if (Pick(5) == 0) {
        // Left unset, or set to its zero: a field with presence is then written all the same.
        if (f->has_presence() && f->message_type() == nullptr && Pick(2) == 0) SetZero(m, r, f);
        continue;
      }
      SetOne(m, r, f, depth);
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  double Double() {
    static const double kEdges[] = {-0.0,
                                    0.0,
                                    1.0,
                                    -1.5,
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::denorm_min(),
                                    1e300};
    if (Pick(3) == 0) return kEdges[Pick(8)];
    return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
  }
  int64_t Int64() {
    static const int64_t kEdges[] = {0,
                                     1,
                                     -1,
                                     127,
                                     128,
                                     16383,
                                     16384,
                                     std::numeric_limits<int64_t>::max(),
                                     std::numeric_limits<int64_t>::min()};
    if (Pick(2) == 0) return kEdges[Pick(9)];
    return std::uniform_int_distribution<int64_t>(-(int64_t{1} << 40), int64_t{1} << 40)(rng_);
  }
  int32_t Int32() {
    static const int32_t kEdges[] = {0,
                                     1,
                                     -1,
                                     127,
                                     128,
                                     300,
                                     std::numeric_limits<int32_t>::max(),
                                     std::numeric_limits<int32_t>::min()};
    if (Pick(2) == 0) return kEdges[Pick(8)];
    return std::uniform_int_distribution<int32_t>(-100000, 100000)(rng_);
  }
  std::string String() {
    static const char* kEdges[] = {"", "megatron", "calibrated: 295 runs of megatron stacks",
                                   "\xc3\xa9t\xc3\xa9"};
    if (Pick(2) == 0) return kEdges[Pick(4)];
    return std::string(static_cast<size_t>(Pick(300)), static_cast<char>('a' + Pick(26)));
  }

  void SetZero(gp::Message* m, const gp::Reflection* r, const gp::FieldDescriptor* f) {
    switch (f->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_DOUBLE:
        return r->SetDouble(m, f, 0.0);
      case gp::FieldDescriptor::CPPTYPE_INT32:
        return r->SetInt32(m, f, 0);
      case gp::FieldDescriptor::CPPTYPE_INT64:
        return r->SetInt64(m, f, 0);
      case gp::FieldDescriptor::CPPTYPE_BOOL:
        return r->SetBool(m, f, false);
      case gp::FieldDescriptor::CPPTYPE_ENUM:
        return r->SetEnumValue(m, f, 0);
      case gp::FieldDescriptor::CPPTYPE_STRING:
        return r->SetString(m, f, "");
      default:
        FAIL() << f->full_name() << ": a field type the writer does not know";
    }
  }

  void SetOne(gp::Message* m, const gp::Reflection* r, const gp::FieldDescriptor* f, int depth) {
    switch (f->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_DOUBLE:
        return r->SetDouble(m, f, Double());
      case gp::FieldDescriptor::CPPTYPE_INT32:
        return r->SetInt32(m, f, Int32());
      case gp::FieldDescriptor::CPPTYPE_INT64:
        return r->SetInt64(m, f, Int64());
      case gp::FieldDescriptor::CPPTYPE_BOOL:
        return r->SetBool(m, f, Pick(2) == 0);
      case gp::FieldDescriptor::CPPTYPE_ENUM:  // proto3 enums are open: unknown and negative too
        return r->SetEnumValue(m, f, Pick(3) == 0 ? Int32() : Pick(4));
      case gp::FieldDescriptor::CPPTYPE_STRING:
        return r->SetString(m, f, String());
      case gp::FieldDescriptor::CPPTYPE_MESSAGE:
        // Present and empty now and then (written as a tag and a zero length).
        if (depth > 8 || Pick(6) == 0) {
          r->MutableMessage(m, f);
        } else {
          Fill(r->MutableMessage(m, f), depth + 1);
        }
        return;
      default:
        FAIL() << f->full_name() << ": a field type the writer does not know";
    }
  }

  void AddOne(gp::Message* m, const gp::Reflection* r, const gp::FieldDescriptor* f, int depth) {
    switch (f->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_STRING:
        return r->AddString(m, f, String());
      case gp::FieldDescriptor::CPPTYPE_MESSAGE:
        if (Pick(6) == 0) {
          r->AddMessage(m, f);
        } else {
          Fill(r->AddMessage(m, f), depth + 1);
        }
        return;
      default:
        FAIL() << f->full_name() << ": a repeated field type the writer does not know";
    }
  }

  std::mt19937 rng_;
};

}  // namespace scalecast::testing

#endif  // SCALECAST_TESTS_PROTO_FILLER_H_
