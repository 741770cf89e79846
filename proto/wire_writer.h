// The protobuf wire format written front to back into a flat buffer: the forms Predict's
// generated response writer calls (server/predict_codec.cc, over the model's structs). proto3's
// rules: a field without presence only when it is not its zero, a field with presence whenever
// it is set, repeated elements all, nested messages as their length and bytes.
#ifndef SCALECAST_PROTO_WIRE_WRITER_H_
#define SCALECAST_PROTO_WIRE_WRITER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace scalecast::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

#define SCALECAST_INLINE inline __attribute__((always_inline))

// The buffer, written front to back through a pointer each function holds in a register (a
// member pointer would be reloaded after every byte stored: a char store may alias it). Room is
// made for kRoom bytes at the start, after each string and after each nested message, and for
// each string by its length: the scalar fields written between two such points (a message's,
// and those of the nested messages it then begins, at most 12 bytes a field) take a few hundred
// bytes at most, and WritePredictResponse stops the process rather than return if a change to
// the proto ever made them take more (tests/predict_codec_test.cc sets every field). A nested
// message's length, unknown until its fields are written, takes one byte first and its bytes
// move up when it needs more.
class Buffer {
 public:
  static constexpr size_t kRoom = 1024;

  explicit Buffer(std::string* buf) : buf_(buf) {
    if (buf_->size() < 4 * kRoom) buf_->resize(4 * kRoom);
  }
  char* begin() { return buf_->data(); }
  char* end() { return buf_->data() + buf_->size(); }
  // `p` with at least `n` bytes free after it (the buffer grown, `p` moved with it).
  SCALECAST_INLINE char* Room(char* p, size_t n) {
    return static_cast<size_t>(buf_->data() + buf_->size() - p) >= n ? p : Grow(p, n);
  }

 private:
  char* Grow(char* p, size_t n) {
    const size_t at = static_cast<size_t>(p - buf_->data());
    buf_->resize(std::max(2 * buf_->size(), at + n));
    return buf_->data() + at;
  }
  std::string* buf_;
};

SCALECAST_INLINE char* Tag(char* p, uint32_t field, WireType type) {
  const uint32_t tag = (field << 3) | type;  // field numbers below 2048: two bytes at most
  if (tag < 0x80) {
    *p++ = static_cast<char>(tag);
  } else {
    p[0] = static_cast<char>(tag | 0x80);
    p[1] = static_cast<char>(tag >> 7);
    p += 2;
  }
  return p;
}
SCALECAST_INLINE char* Varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// The proto3 scalar fields: written when not zero (a double when its bits are not all zero:
// -0.0 is written, as protobuf writes it); the ...Always forms for a field with presence.
SCALECAST_INLINE char* DoubleAlways(char* p, uint32_t field, double v) {
  p = Tag(p, field, kFixed64);
  std::memcpy(p, &v, 8);  // little-endian, as the wire format (x86-64, AArch64)
  return p + 8;
}
SCALECAST_INLINE char* Double(char* p, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits != 0 ? DoubleAlways(p, field, v) : p;
}
// int32 and enums: a negative value sign-extended to ten bytes, as protobuf writes it.
SCALECAST_INLINE char* Int32Always(char* p, uint32_t field, int32_t v) {
  return Varint(Tag(p, field, kVarint), static_cast<uint64_t>(static_cast<int64_t>(v)));
}
SCALECAST_INLINE char* Int32(char* p, uint32_t field, int32_t v) {
  return v != 0 ? Int32Always(p, field, v) : p;
}
SCALECAST_INLINE char* Int64Always(char* p, uint32_t field, int64_t v) {
  return Varint(Tag(p, field, kVarint), static_cast<uint64_t>(v));
}
SCALECAST_INLINE char* Int64(char* p, uint32_t field, int64_t v) {
  return v != 0 ? Int64Always(p, field, v) : p;
}
SCALECAST_INLINE char* UInt64Always(char* p, uint32_t field, uint64_t v) {
  return Varint(Tag(p, field, kVarint), v);
}
SCALECAST_INLINE char* UInt64(char* p, uint32_t field, uint64_t v) {
  return v != 0 ? UInt64Always(p, field, v) : p;
}
SCALECAST_INLINE char* BoolAlways(char* p, uint32_t field, bool v) {
  p = Tag(p, field, kVarint);
  *p++ = v ? 1 : 0;
  return p;
}
SCALECAST_INLINE char* Bool(char* p, uint32_t field, bool v) {
  return v ? BoolAlways(p, field, v) : p;
}

inline char* StringAlways(Buffer& b, char* p, uint32_t field, const std::string& v) {
  p = b.Room(p, 12 + v.size() + Buffer::kRoom);  // the string, and kRoom after it
  p = Varint(Tag(p, field, kLengthDelimited), v.size());
  std::memcpy(p, v.data(), v.size());
  return p + v.size();
}
SCALECAST_INLINE char* String(Buffer& b, char* p, uint32_t field, const std::string& v) {
  return v.empty() ? p : StringAlways(b, p, field, v);
}

// A nested message: its tag, its length and what `body(p)` writes (returning its end). kKept
// bytes are left for the length before the body is written (2 for a message that is always
// 128 bytes or more); the body moves when its length takes another count (FixLength).
inline char* FixLength(Buffer& b, char* at, char* end, size_t kept) {
  const size_t len = static_cast<size_t>(end - at) - kept;
  char bytes[10];
  size_t n = 0;
  uint64_t v = len;
  do {
    bytes[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  } while (v != 0);
  bytes[n - 1] = static_cast<char>(bytes[n - 1] & 0x7f);
  if (n > kept) {
    const size_t from = static_cast<size_t>(at - b.begin());
    end = b.Room(end, n - kept);
    at = b.begin() + from;
  }
  if (n != kept) std::memmove(at + n, at + kept, len);
  std::memcpy(at, bytes, n);
  return at + n + len;
}
template <size_t kKept = 1, typename F>
SCALECAST_INLINE char* Message(Buffer& b, char* p, uint32_t field, F&& body) {
  static_assert(kKept == 1 || kKept == 2);
  p = Tag(p, field, kLengthDelimited);
  const size_t at = static_cast<size_t>(p - b.begin());
  char* end = body(p + kKept);
  char* length = b.begin() + at;
  const size_t len = static_cast<size_t>(end - length) - kKept;
  if (kKept == 1 && len < 0x80) {
    length[0] = static_cast<char>(len);
  } else if (kKept == 2 && len >= 0x80 && len < 0x4000) {
    length[0] = static_cast<char>(len | 0x80);
    length[1] = static_cast<char>(len >> 7);
  } else {
    end = FixLength(b, length, end, kKept);
  }
  return b.Room(end, Buffer::kRoom);
}

}  // namespace scalecast::wire

#endif  // SCALECAST_PROTO_WIRE_WRITER_H_
