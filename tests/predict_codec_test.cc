// Predict's codec over the model's structs (server/predict_codec.h) against protobuf's path:
// the response's bytes against protobuf's serialization of the message ToProto builds from the
// same structs (every field of every struct set from the generated visitor, zeros and edge values
// among them), and the request's Scenario, or error, against protobuf's parser and FromProto
// over requests valid, odd and broken (unknown fields, wrong wire types, truncated, out of
// range, every field set).
#include "server/predict_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "model/types.h"
#include "proto/scalecast/v1/scalecast.pb.h"
#include "server/convert.h"
#include "server/predict_fields_gen.h"
#include "tests/proto_filler.h"
#include "tests/proto_scenarios.h"

namespace scalecast {
namespace {

namespace gp = ::google::protobuf;

// Sets every member the generated visitor hands it: a value, often an edge one; zeros, unset
// optionals and messages left empty now and then, unless `all` (then every field is non-zero).
class StructFiller {
 public:
  StructFiller(uint32_t seed, bool all) : rng_(seed), all_(all) {}

  void operator()(double& v) {
    static const double kEdges[] = {-0.0,
                                    1.0,
                                    -1.5,
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::denorm_min(),
                                    1e300};
    if (Zero()) {
      v = 0;
    } else {
      v = Pick(3) == 0 ? kEdges[Pick(7)] : std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
      if (all_ && v == 0) v = 2.5;
    }
  }
  void operator()(int& v) {
    static const int kEdges[] = {
        1, -1, 127, 128, 300, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()};
    v = Zero() ? 0 : Pick(2) == 0 ? kEdges[Pick(7)] : 1 + Pick(100000);
  }
  void operator()(int64_t& v) {
    static const int64_t kEdges[] = {1,
                                     -1,
                                     127,
                                     128,
                                     16383,
                                     16384,
                                     std::numeric_limits<int64_t>::max(),
                                     std::numeric_limits<int64_t>::min()};
    v = Zero() ? 0 : Pick(2) == 0 ? kEdges[Pick(8)] : int64_t{1} + Pick(1 << 30) * int64_t{977};
  }
  void operator()(bool& v) { v = !Zero() && (all_ || Pick(2) == 0); }
  void operator()(std::string& v) {
    static const char* kEdges[] = {"megatron", "calibrated: 295 runs of megatron stacks",
                                   "\xc3\xa9t\xc3\xa9"};
    if (Zero()) {
      v.clear();
    } else if (Pick(2) == 0) {
      v = kEdges[Pick(3)];
    } else {
      v.assign(static_cast<size_t>(1 + Pick(300)), static_cast<char>('a' + Pick(26)));
    }
  }
  // A set of recompute modules (Parallelism::recompute_modules).
  void operator()(uint32_t& v) {
    v = Zero() ? 0 : 1 + static_cast<uint32_t>(Pick((1 << kRecomputeModules) - 1));
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(E& v) {  // any number: the proto's enums are open
    v = static_cast<E>(Zero() ? 0 : Pick(3) == 0 ? -1 - Pick(5) : 1 + Pick(8));
  }
  template <class T>
  void operator()(std::optional<T>& v) {
    if (!all_ && Pick(4) == 0) {
      v.reset();
    } else {
      T x{};
      if (Pick(3) != 0) (*this)(x);  // set, and sometimes to its zero: written all the same
      v = x;
    }
  }
  void operator()(std::vector<std::string>& v) {
    v.resize(static_cast<size_t>(all_ ? 1 + Pick(3) : Pick(4)));
    for (std::string& e : v) e = Pick(5) == 0 ? "" : "w" + std::to_string(Pick(1000));
  }
  template <class T, class V>
  void Message(T& m, V&& visit) {
    if (all_ || Pick(6) != 0) visit(m);
  }
  template <class T, class V>
  void Messages(std::vector<T>& list, V&& visit) {
    list.resize(static_cast<size_t>(all_ ? 1 + Pick(3) : Pick(4)));
    for (T& e : list) Message(e, visit);
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool Zero() { return !all_ && Pick(5) == 0; }

  std::mt19937 rng_;
  bool all_;
};

// Every member the visitor hands it, as text: two structs that print the same are the same
// (doubles by their bits).
class Printer {
 public:
  void operator()(const double& v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out_ += std::to_string(bits) + ";";
  }
  void operator()(const int& v) { out_ += std::to_string(v) + ";"; }
  void operator()(const int64_t& v) { out_ += std::to_string(v) + ";"; }
  void operator()(const uint32_t& v) { out_ += std::to_string(v) + "u;"; }
  void operator()(const bool& v) { out_ += v ? "T;" : "F;"; }
  void operator()(const std::string& v) { out_ += std::to_string(v.size()) + ":" + v + ";"; }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(const E& v) { out_ += "e" + std::to_string(static_cast<int>(v)) + ";"; }
  template <class T>
  void operator()(const std::optional<T>& v) {
    if (!v.has_value()) {
      out_ += "unset;";
    } else {
      (*this)(*v);
    }
  }
  void operator()(const std::vector<std::string>& v) {
    out_ += "[";
    for (const std::string& e : v) (*this)(e);
    out_ += "]";
  }
  template <class T, class V>
  void Message(const T& m, V&& visit) {
    out_ += "{";
    visit(m);
    out_ += "}";
  }
  const std::string& out() const { return out_; }

 private:
  std::string out_;
};

std::string Print(const Scenario& s) {
  Printer p;
  VisitS_Scenario(s, p);
  for (const std::string& w : s.input_warnings) p(w);
  return p.out();
}

// What protobuf writes for the response ToProto builds (service.cc's path before the codec).
std::string ProtobufBytes(const PredictAnswer& a) {
  v1::PredictResponse r;
  ToProto(a.prediction, r.mutable_prediction());
  r.set_model_version(a.model_version);
  r.set_calibration(a.calibration);
  ToProto(a.scenario, r.mutable_scenario());
  return r.SerializeAsString();
}

struct Answer {
  Prediction prediction;
  Scenario scenario;
  std::string model_version = "2026.12";
  std::string calibration = "default";
  PredictAnswer view() const { return {prediction, model_version, calibration, scenario}; }
};

Answer Filled(uint32_t seed, bool all) {
  Answer a;
  StructFiller f(seed, all);
  VisitS_Prediction(a.prediction, f);
  VisitS_Scenario(a.scenario, f);
  f(a.calibration);
  return a;
}

TEST(PredictCodecWriter, WritesProtobufsBytesForToProtosMessage) {
  std::string buf;
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    const Answer a = Filled(seed, seed % 7 == 0);
    const size_t n = WritePredictResponse(a.view(), &buf);
    ASSERT_EQ(buf.substr(0, n), ProtobufBytes(a.view())) << "seed " << seed;
  }
}

// No field of any message is left out: with every member set, every field of the response
// parsed back from the writer's bytes is set (a config.json's bytes are never echoed).
void ExpectEveryFieldSet(const gp::Message& m, const std::string& path) {
  const gp::Descriptor* d = m.GetDescriptor();
  const gp::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (f->type() == gp::FieldDescriptor::TYPE_STRING &&
        f->options().GetExtension(v1::field).file()) {
      continue;
    }
    const std::string at = path + "." + f->name();
    if (f->is_repeated()) {
      EXPECT_GT(r->FieldSize(m, f), 0) << at << " left out";
      if (f->message_type() != nullptr && r->FieldSize(m, f) > 0) {
        ExpectEveryFieldSet(r->GetRepeatedMessage(m, f, 0), at);
      }
      continue;
    }
    EXPECT_TRUE(r->HasField(m, f)) << at << " left out";
    if (f->message_type() != nullptr && r->HasField(m, f)) {
      ExpectEveryFieldSet(r->GetMessage(m, f), at);
    }
  }
}

TEST(PredictCodecWriter, LeavesNoFieldOut) {
  std::string buf;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    Answer a = Filled(seed, true);
    a.scenario.workload.model.moe.num_experts = 8;  // messages written only when in use
    a.scenario.workload.model.mla.kv_lora_rank = 512;
    a.prediction.uncertainty.level = 0.8;
    const size_t n = WritePredictResponse(a.view(), &buf);
    v1::PredictResponse parsed;
    ASSERT_TRUE(parsed.ParseFromArray(buf.data(), static_cast<int>(n)));
    ExpectEveryFieldSet(parsed, "response");
  }
}

TEST(PredictCodecWriter, GrowsItsBufferForALongResponse) {
  Answer a = Filled(3, false);
  for (int i = 0; i < 200; ++i) a.prediction.warnings.push_back(std::string(1000, 'w'));
  std::string buf;
  const size_t n = WritePredictResponse(a.view(), &buf);
  EXPECT_EQ(buf.substr(0, n), ProtobufBytes(a.view()));
}

// --- The request ---------------------------------------------------------------------------

// protobuf's path: the parser, then FromProto.
absl::Status SlowRead(const std::string& bytes, Scenario* out) {
  v1::PredictRequest r;
  if (!r.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("request: not a PredictRequest (protobuf cannot parse it)");
  }
  return FromProto(r.scenario(), "scenario", out);
}

struct Tally {
  int direct = 0, total = 0, errors = 0;
};

void ExpectSameAsProtobuf(const std::string& bytes, const std::string& what, Tally* tally) {
  Scenario slow, fast, direct;
  const absl::Status want = SlowRead(bytes, &slow);
  const absl::Status got = ReadPredictRequest(bytes, "scenario", &fast);
  ++tally->total;
  if (!want.ok()) ++tally->errors;
  ASSERT_EQ(got, want) << what;
  if (want.ok()) {
    ASSERT_EQ(Print(fast), Print(slow)) << what;
  }
  if (ReadPredictRequestDirect(bytes, &direct)) {
    ++tally->direct;
    ASSERT_TRUE(want.ok()) << what << ": read directly, refused by FromProto: " << want;
    ASSERT_EQ(Print(direct), Print(slow)) << what;
  }
}

// A request FromProto converts field for field, often: the fields of its plain messages set
// to small values, in-range enums and short names, from the descriptor.
class TameFiller {
 public:
  explicit TameFiller(uint32_t seed) : rng_(seed) {}
  void Fill(gp::Message* m, int depth = 0) {
    const gp::Descriptor* d = m->GetDescriptor();
    const gp::Reflection* r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const gp::FieldDescriptor* f = d->field(i);
      if (f->is_repeated() || Pick(3) == 0) continue;
      if (f->type() == gp::FieldDescriptor::TYPE_STRING &&
          f->options().GetExtension(v1::field).file()) {
        continue;
      }
      switch (f->cpp_type()) {
        case gp::FieldDescriptor::CPPTYPE_DOUBLE:
          r->SetDouble(m, f, Pick(4) == 0 ? 0.0 : Pick(1000) / 8.0);
          break;
        case gp::FieldDescriptor::CPPTYPE_INT32:
          r->SetInt32(m, f, Pick(5) == 0 ? -Pick(300) : Pick(300));
          break;
        case gp::FieldDescriptor::CPPTYPE_INT64:
          r->SetInt64(m, f, Pick(1 << 20));
          break;
        case gp::FieldDescriptor::CPPTYPE_BOOL:
          r->SetBool(m, f, Pick(2) == 0);
          break;
        case gp::FieldDescriptor::CPPTYPE_ENUM:
          r->SetEnumValue(m, f, Pick(f->enum_type()->value_count()));
          break;
        case gp::FieldDescriptor::CPPTYPE_STRING:
          r->SetString(m, f,
                       Pick(3) == 0 ? ""
                                    : std::string(static_cast<size_t>(1 + Pick(20)),
                                                  static_cast<char>('a' + Pick(26))));
          break;
        case gp::FieldDescriptor::CPPTYPE_MESSAGE:
          if (f->message_type()->name() != "AcceleratorSpec" || Pick(8) == 0) {
            Fill(r->MutableMessage(m, f), depth + 1);
          }
          break;
        default:
          break;
      }
    }
  }
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::mt19937 rng_;
};

// Odd and broken versions of `bytes`: cut short, a byte changed, an unknown field, a field
// again with a wrong wire type, a field repeated, an enum out of range.
std::vector<std::pair<std::string, std::string>> Mutations(const std::string& bytes,
                                                           TameFiller& rng) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!bytes.empty()) {
    const size_t cut = static_cast<size_t>(rng.Pick(static_cast<int>(bytes.size())));
    out.push_back({"cut at " + std::to_string(cut), bytes.substr(0, cut)});
    std::string flipped = bytes;
    const size_t at = static_cast<size_t>(rng.Pick(static_cast<int>(bytes.size())));
    flipped[at] = static_cast<char>(rng.Pick(256));
    out.push_back({"byte " + std::to_string(at) + " changed", flipped});
  }
  out.push_back({"unknown field", bytes + std::string("\xc0\x3e\x07", 3)});  // 1000: varint 7
  out.push_back({"wrong wire type", bytes + std::string("\x0d\x01\x02\x03\x04", 5)});  // 1: fixed32
  // scenario again: its workload's field 2 as varint 5, then its field 3 as a double
  out.push_back({"scenario again", bytes + std::string("\x0a\x04\x0a\x02\x10\x05", 6)});
  out.push_back({"wrong wire type inside",
                 bytes + std::string("\x0a\x0b\x0a\x09\x19\x00\x00\x00\x00\x00\x00\xf0\x3f", 13)});
  out.push_back({"enum out of range",  // scenario.parallelism.sharding = 99
                 bytes + std::string("\x0a\x04\x1a\x02\x30\x63", 6)});
  out.push_back(
      {"negative enum",  // scenario.parallelism.recompute = -1
       bytes + std::string("\x0a\x0d\x1a\x0b\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 15)});
  out.push_back({"NaN", bytes + std::string("\x0a\x0b\x12\x09\x21\x00\x00\x00\x00\x00\x00\xf8\x7f",
                                            13)});  // cluster's field 4 (a double)
  out.push_back({"NUL in a name", bytes + std::string("\x0a\x05\x22\x03\x61\x00\x62", 7)});
  return out;
}

TEST(PredictCodecReader, ReadsWhatProtobufAndFromProtoRead) {
  Tally tally;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    TameFiller tame(seed);
    v1::PredictRequest r;
    if (seed % 3 == 0) {
      *r.mutable_scenario() = testing::FullLayoutRequest("llama2-70b", 512);
    }
    tame.Fill(r.mutable_scenario());
    const std::string bytes = r.SerializeAsString();
    ASSERT_NO_FATAL_FAILURE(ExpectSameAsProtobuf(bytes, "seed " + std::to_string(seed), &tally));
    for (const auto& [what, odd] : Mutations(bytes, tame)) {
      ASSERT_NO_FATAL_FAILURE(
          ExpectSameAsProtobuf(odd, "seed " + std::to_string(seed) + ", " + what, &tally));
    }
  }
  // Both paths taken, many times each.
  std::printf("direct %d errors %d total %d\n", tally.direct, tally.errors, tally.total);
  EXPECT_GT(tally.direct, tally.total / 5);
  EXPECT_GT(tally.errors, tally.total / 10);
  EXPECT_LT(tally.direct + tally.errors, tally.total);
}

TEST(PredictCodecReader, ReadsEveryFieldSetAsProtobufAndFromProtoDo) {
  Tally tally;
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    v1::PredictRequest r;
    testing::Filler(seed).Fill(&r);
    ASSERT_NO_FATAL_FAILURE(
        ExpectSameAsProtobuf(r.SerializeAsString(), "seed " + std::to_string(seed), &tally));
  }
}

TEST(PredictCodecReader, ReadsTheBenchmarksRequestDirectly) {
  v1::PredictRequest r;
  *r.mutable_scenario() = testing::FullLayoutRequest("llama2-70b", 512);
  Scenario s;
  EXPECT_TRUE(ReadPredictRequestDirect(r.SerializeAsString(), &s));
  Scenario empty;
  EXPECT_TRUE(ReadPredictRequestDirect("", &empty));
  Tally tally;
  ExpectSameAsProtobuf("", "an empty request", &tally);
}

TEST(PredictCodecReader, NamesTheFieldOfABadValue) {
  v1::PredictRequest r;
  *r.mutable_scenario() = testing::FullLayoutRequest("llama2-70b", 512);
  r.mutable_scenario()->mutable_parallelism()->set_sharding(static_cast<v1::Sharding>(42));
  Scenario s;
  const absl::Status st = ReadPredictRequest(r.SerializeAsString(), "scenario", &s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "scenario.parallelism.sharding: unknown enum value 42");
  const absl::Status bad = ReadPredictRequest(std::string("\x0a\x05\x01", 3), "scenario", &s);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
}

// A filter with several labels too long names the first by key, the same in every process (a
// protobuf map's own order changes from process to process).
TEST(ConvertTest, TheFirstLabelTooLongByKeyIsNamed) {
  v1::MeasurementFilter f;
  for (int i = 0; i < 8; ++i) {
    (*f.mutable_labels())[std::string(1, static_cast<char>('a' + i))] =
        std::string(kMaxLabelValueBytes + 1 + i, 'x');
  }
  const absl::Status st = CheckLengths(f, "filter");
  EXPECT_EQ(st.message(), absl::StrCat("filter.labels (a value): ", kMaxLabelValueBytes + 1,
                                       " bytes, over the limit of ", kMaxLabelValueBytes));
}

}  // namespace
}  // namespace scalecast
