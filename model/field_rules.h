// The proto's field rules (model/field_rule.h, generated into model/field_rules_gen.h) checked on
// the model's structs: one range check for every field whose proto option gives min or max, so
// that no bound is written twice. Cross-field rules (tp <= num_gpus, a field required beside
// another) stay with the code that resolves them.
#ifndef SCALECAST_MODEL_FIELD_RULES_H_
#define SCALECAST_MODEL_FIELD_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/field_rule.h"
#include "model/field_rules_gen.h"

namespace scalecast {

// A field's name in a request, for an error: `path` + `sub` + "." + `name` ("scenarios[2]" +
// ".cluster" + "accelerator"); at the request's top (path and sub empty) `name` alone, and for
// an empty `name` the message itself (`path` + `sub`). Build it only when there is an error.
inline std::string FieldName(absl::string_view path, absl::string_view sub,
                             absl::string_view name) {
  const bool top = path.empty() && sub.empty();
  return absl::StrCat(path, sub, top || name.empty() ? "" : ".", name);
}

// INVALID_ARGUMENT "<FieldName>: <why>", the form of every error that names a request's field.
inline absl::Status FieldError(absl::string_view path, absl::string_view sub,
                               absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(FieldName(path, sub, name), ": ", why));
}

// Whether `v` lies in the rule's range: numbers (NaN never does; an unset optional always does);
// other types have no range.
template <typename T>
bool InRange(const FieldRule& r, const T& v) {
  if constexpr (std::is_same_v<T, std::optional<double>>) {
    return !v.has_value() || InRange(r, *v);
  } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    return v >= r.min && v <= r.max;
  } else {
    return true;
  }
}

// "V is out of range [lo, hi]" for a value InRange refuses.
template <typename T>
std::string OutOfRange(const FieldRule& r, const T& v) {
  if constexpr (std::is_same_v<T, std::optional<double>>) {
    return OutOfRange(r, *v);
  } else if constexpr (std::is_integral_v<T>) {
    return absl::StrCat(v, " is out of range [", static_cast<int64_t>(r.min), ", ",
                        static_cast<int64_t>(r.max), "]");
  } else if constexpr (std::is_arithmetic_v<T>) {
    return absl::StrCat(v, " is out of range [", r.min, ", ", r.max, "]");
  } else {
    return "is out of range";  // no range for this type: InRange never refuses it
  }
}

// The first field that `visit` (a generated field_rules::Visit<Message> bound to a struct) hands
// over outside its rule's range, as INVALID_ARGUMENT "<path><sub>.<name>: V is out of range [lo,
// hi]" ("<name>: ..." when path and sub are empty). Builds no string when every field is in range.
template <typename Visit>
absl::Status CheckFieldRanges(Visit&& visit, absl::string_view path, absl::string_view sub) {
  std::string why;
  const char* name = nullptr;
  visit([&](const FieldRule& r, const auto& v) {
    if (name != nullptr || !r.ranged || InRange(r, v)) return;
    name = r.name;
    why = OutOfRange(r, v);
  });
  if (name == nullptr) return absl::OkStatus();
  return FieldError(path, sub, name, why);
}

// One field against its rule, named "<path>.<rule name>" (the rule's name alone for an empty
// path): for a message's fields copied into another (a plan candidate's cluster fields, which are
// Cluster's; the plan's hbm_headroom, which is Cluster's at the request's top).
template <typename T>
absl::Status CheckFieldRange(const FieldRule& r, const T& v, absl::string_view path) {
  if (!r.ranged || InRange(r, v)) return absl::OkStatus();
  return FieldError(path, "", r.name, OutOfRange(r, v));
}

}  // namespace scalecast

#endif  // SCALECAST_MODEL_FIELD_RULES_H_
