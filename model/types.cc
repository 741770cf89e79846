#include "model/types.h"

#include <array>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

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
namespace {
constexpr std::array<absl::string_view, kRecomputeModules> kModuleNames = {
    "core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp", "moe", "shared_experts"};
}  // namespace

std::vector<std::string> RecomputeModuleNames(uint32_t modules) {
  std::vector<std::string> out;
  for (int i = 0; i < kRecomputeModules; ++i) {
    if ((modules & (1u << i)) != 0) out.emplace_back(kModuleNames[i]);
  }
  return out;
}

std::string RecomputeModulesToString(uint32_t modules) {
  return absl::StrJoin(RecomputeModuleNames(modules), ",");
}

bool ParseRecomputeModule(absl::string_view s, RecomputeModule* out) {
  for (int i = 0; i < kRecomputeModules; ++i) {
    if (kModuleNames[i] == s) {
      *out = static_cast<RecomputeModule>(i);
      return true;
    }
  }
  return false;
}

bool ParseRecomputeModules(absl::string_view s, uint32_t* out, std::string* bad) {
  uint32_t bits = 0;
  for (absl::string_view name : absl::StrSplit(s, absl::ByAnyChar(",+ "), absl::SkipEmpty())) {
    RecomputeModule m;
    if (!ParseRecomputeModule(name, &m)) {
      if (bad != nullptr) *bad = std::string(name);
      return false;
    }
    bits |= Bit(m);
  }
  *out = bits;
  return true;
}

bool ParseRecompute(absl::string_view s, Recompute* out) {
  return ParseEnum(
      s, out, {Recompute::kUnspecified, Recompute::kNone, Recompute::kSelective, Recompute::kFull});
}

}  // namespace scalecast
