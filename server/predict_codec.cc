#include "server/predict_codec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "model/limits.h"
#include "proto/scalecast/v1/scalecast.pb.h"
#include "proto/wire_writer.h"
#include "server/convert.h"

namespace scalecast {
namespace {

using namespace ::scalecast::wire;  // NOLINT: the forms the generated writer calls

// --- The writer's hooks: where the structs differ from ToProto's messages ----------------------

// A nested message is written when ToProto builds it: always, but for these (convert.h).
template <class T>
bool Present(const T&) {
  return true;
}
bool Present(const MoeSpec& m) { return Echoed(m); }
bool Present(const MlaSpec& m) { return Echoed(m); }
bool Present(const AcceleratorSpec& s) { return Echoed(s); }
bool Present(const Uncertainty& u) { return Echoed(u); }

// A repeated string: every element; a set of recompute modules as their names (ToProto).
char* Strings(Buffer& b, char* p, uint32_t field, const std::vector<std::string>& v) {
  for (const std::string& e : v) p = StringAlways(b, p, field, e);
  return p;
}
char* Strings(Buffer& b, char* p, uint32_t field, uint32_t modules) {
  if (modules == 0) return p;
  for (const std::string& name : RecomputeModuleNames(modules)) {
    p = StringAlways(b, p, field, name);
  }
  return p;
}

// --- The reader's forms: false for anything FromProto would do more with -----------------------

// A string longer than this, or with a byte outside 1..127 (a NUL, which CheckLengths refuses, or
// UTF-8 beyond ASCII, which protobuf validates), takes the slow path: every string FromProto
// checks has a limit of at least this.
constexpr size_t kDirectStringBytes =
    std::min({kMaxNameBytes, kMaxLabelValueBytes, kMaxLayerPatternBytes});

// A varint past its first byte.
bool ReadLongVarint(const char*& p, const char* end, uint64_t* v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t c = static_cast<uint8_t>(*p++);
    if (shift == 63 && c > 1) return false;  // past 64 bits: protobuf's call
    r |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (c < 0x80) {
      *v = r;
      return true;
    }
  }
  return false;
}
SCALECAST_INLINE bool ReadVarint(const char*& p, const char* end, uint64_t* v) {
  if (p != end && static_cast<uint8_t>(*p) < 0x80) {  // most of a request's tags and numbers
    *v = static_cast<uint8_t>(*p++);
    return true;
  }
  return ReadLongVarint(p, end, v);
}
SCALECAST_INLINE bool ReadTag(const char*& p, const char* end, uint32_t* tag) {
  uint64_t v;
  if (!ReadVarint(p, end, &v) || v > UINT32_MAX) return false;
  *tag = static_cast<uint32_t>(v);
  return true;
}
// int32 as protobuf reads it: a varint's low 32 bits.
template <class T>
SCALECAST_INLINE bool ReadInt32(const char*& p, const char* end, T& out) {
  uint64_t v;
  if (!ReadVarint(p, end, &v)) return false;
  out = static_cast<int32_t>(static_cast<uint32_t>(v));
  return true;
}
template <class T>
SCALECAST_INLINE bool ReadInt64(const char*& p, const char* end, T& out) {
  uint64_t v;
  if (!ReadVarint(p, end, &v)) return false;
  out = static_cast<int64_t>(v);
  return true;
}
template <class T>
SCALECAST_INLINE bool ReadBool(const char*& p, const char* end, T& out) {
  uint64_t v;
  if (!ReadVarint(p, end, &v)) return false;
  out = v != 0;
  return true;
}
// A finite double (FromProto refuses some fields' NaNs: all go the slow path).
template <class T>
SCALECAST_INLINE bool ReadDouble(const char*& p, const char* end, T& out) {
  if (end - p < 8) return false;
  double v;
  std::memcpy(&v, p, 8);  // little-endian, as the wire format (x86-64, AArch64)
  p += 8;
  if (!std::isfinite(v)) return false;
  out = v;
  return true;
}
// An enum value FromProto takes (0 to the model's largest).
template <NamedEnum E>
SCALECAST_INLINE bool ReadEnum(const char*& p, const char* end, E& out) {
  int32_t v;
  if (!ReadInt32(p, end, v) || v < 0 || v > MaxEnumValue<E>()) return false;
  out = static_cast<E>(v);
  return true;
}
SCALECAST_INLINE bool ReadLength(const char*& p, const char* end, size_t* n) {
  uint64_t v;
  if (!ReadVarint(p, end, &v) || v > static_cast<uint64_t>(end - p)) return false;
  *n = static_cast<size_t>(v);
  return true;
}
// Whether the `n` bytes at `p` are all in 1..127, eight at a time (a byte of 0 borrows from, or
// a byte of 128 or more sets, some byte's top bit).
SCALECAST_INLINE bool Ascii(const char* p, size_t n) {
  constexpr uint64_t kOnes = 0x0101010101010101, kTops = 0x8080808080808080;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (((w - kOnes) | w) & kTops) return false;
  }
  for (; i < n; ++i) {
    const uint8_t c = static_cast<uint8_t>(p[i]);
    if (c == 0 || c >= 0x80) return false;
  }
  return true;
}
inline bool ReadString(const char*& p, const char* end, std::string& out) {
  size_t n;
  if (!ReadLength(p, end, &n) || n > kDirectStringBytes || !Ascii(p, n)) return false;
  if (n != 0 || !out.empty()) out.assign(p, n);
  p += n;
  return true;
}
inline bool ReadString(const char*& p, const char* end, std::optional<std::string>& out) {
  std::string v;
  if (!ReadString(p, end, v)) return false;
  out = std::move(v);
  return true;
}
// A file's bytes (a config.json) are FromProto's to read: only an empty one is read here.
inline bool ReadEmptyString(const char*& p, const char* end) {
  size_t n;
  return ReadLength(p, end, &n) && n == 0;
}
// What FromProto leaves in a field the request does not set.
template <class T>
SCALECAST_INLINE void ZeroField(T& v) {
  v = T();
}
SCALECAST_INLINE void ZeroField(std::string& v) { v.clear(); }

// A nested message: `body(begin, end)` reads its bytes.
template <class F>
bool ReadMessage(const char*& p, const char* end, F&& body) {
  size_t n;
  if (!ReadLength(p, end, &n) || !body(p, p + n)) return false;
  p += n;
  return true;
}

// WriteS_, ReadS_, ZeroS_ and VisitS_ for Predict's messages, generated from the proto.
#include "server/predict_codec_gen.h"
#include "server/predict_fields_gen.h"

// The request as the generated reader sees it: PredictRequest's one field.
struct RequestView {
  Scenario& scenario;
};

// Every member the generated visitor hands it, as bytes: two structs with the same fingerprint
// hold the same values (doubles by their bits).
class Fingerprint {
 public:
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  void operator()(const T& v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void operator()(const std::string& v) {
    (*this)(v.size());
    out_ += v;
  }
  template <class T>
  void operator()(const std::optional<T>& v) {
    (*this)(v.has_value());
    if (v.has_value()) (*this)(*v);
  }
  template <class T>
  void operator()(const std::vector<T>& v) {
    (*this)(v.size());
    for (const T& e : v) (*this)(e);
  }
  template <class T, class V>
  void Message(const T& m, V&& visit) {
    visit(m);
  }
  template <class T, class V>
  void Messages(const std::vector<T>& list, V&& visit) {
    (*this)(list.size());
    for (const T& e : list) visit(e);
  }
  const std::string& out() const { return out_; }

 private:
  std::string out_;
};

// Whether what ZeroS_ sets is what a default-constructed Scenario holds already (every plain
// field's default its zero, as today): then a read skips it. Checked once, with the visitor.
bool DefaultsAreZero() {
  Scenario zeroed;
  RequestView view{zeroed};
  ZeroS_PredictRequest(view);
  const Scenario defaults;
  Fingerprint a, b;
  VisitS_Scenario(zeroed, a);
  VisitS_Scenario(defaults, b);
  return a.out() == b.out();
}

}  // namespace

size_t WritePredictResponse(const PredictAnswer& answer, std::string* buf) {
  Buffer b(buf);
  char* p = WriteS_PredictResponse(b, b.Room(b.begin(), Buffer::kRoom), answer);
  if (p > b.end()) std::abort();  // past the room made: see wire::Buffer
  return static_cast<size_t>(p - b.begin());
}

bool ReadPredictRequestDirect(absl::string_view bytes, Scenario* out) {
  static const bool kDefaultsAreZero = DefaultsAreZero();
  RequestView request{*out};
  if (!kDefaultsAreZero) ZeroS_PredictRequest(request);
  return ReadS_PredictRequest(bytes.data(), bytes.data() + bytes.size(), request);
}

absl::Status ReadPredictRequest(absl::string_view bytes, absl::string_view path, Scenario* out) {
  if (ReadPredictRequestDirect(bytes, out)) return absl::OkStatus();
  *out = Scenario();
  v1::PredictRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("request: not a PredictRequest (protobuf cannot parse it)");
  }
  return FromProto(request.scenario(), path, out);
}

}  // namespace scalecast
