#include "model/types.h"

namespace scalecast {

absl::string_view ToString(Mlp v) {
  switch (v) {
    case Mlp::kGated:
      return "gated";
    case Mlp::kPlain:
      return "plain";
    default:
      return "";
  }
}
absl::string_view ToString(Precision v) {
  switch (v) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kMxfp8:
      return "mxfp8";
    case Precision::kNvfp4:
      return "nvfp4";
    default:
      return "";
  }
}
absl::string_view ToString(Sharding v) {
  switch (v) {
    case Sharding::kDdp:
      return "ddp";
    case Sharding::kZero1:
      return "zero1";
    case Sharding::kZero2:
      return "zero2";
    case Sharding::kFsdp:
      return "fsdp";
    case Sharding::kHsdp:
      return "hsdp";
    default:
      return "";
  }
}
absl::string_view ToString(Recompute v) {
  switch (v) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    default:
      return "";
  }
}

namespace {
template <typename E>
bool ParseEnum(absl::string_view s, E* out, std::initializer_list<E> values) {
  for (E v : values) {
    if (ToString(v) == s) {
      *out = v;
      return true;
    }
  }
  return false;
}
}  // namespace

bool ParseMlp(absl::string_view s, Mlp* out) {
  return ParseEnum(s, out, {Mlp::kUnspecified, Mlp::kGated, Mlp::kPlain});
}
bool ParsePrecision(absl::string_view s, Precision* out) {
  return ParseEnum(s, out,
                   {Precision::kUnspecified, Precision::kBf16, Precision::kFp16, Precision::kFp8,
                    Precision::kMxfp8, Precision::kNvfp4});
}
bool ParseSharding(absl::string_view s, Sharding* out) {
  return ParseEnum(s, out,
                   {Sharding::kUnspecified, Sharding::kDdp, Sharding::kZero1, Sharding::kZero2,
                    Sharding::kFsdp, Sharding::kHsdp});
}
bool ParseRecompute(absl::string_view s, Recompute* out) {
  return ParseEnum(
      s, out, {Recompute::kUnspecified, Recompute::kNone, Recompute::kSelective, Recompute::kFull});
}

}  // namespace scalecast
