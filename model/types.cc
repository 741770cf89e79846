#include "model/types.h"

#include <array>
#include <utility>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace scalecast {

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

namespace {
constexpr std::pair<absl::string_view, StatedFacts> kStatedFactsNames[] = {
    {"all", StatedFacts::kAll},
    {"version", StatedFacts::kVersion},
    {"framework", StatedFacts::kFramework},
    {"none", StatedFacts::kNone}};
}  // namespace

absl::string_view StatedFactsName(StatedFacts facts) {
  for (const auto& [name, f] : kStatedFactsNames) {
    if (f == facts) return name;
  }
  return "";
}

bool ParseStatedFacts(absl::string_view s, StatedFacts* out) {
  for (const auto& [name, facts] : kStatedFactsNames) {
    if (s == name) {
      *out = facts;
      return true;
    }
  }
  return false;
}

}  // namespace scalecast
