#include "tools/pairs.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/framework.h"
#include "model/types.h"
#include "storage/scenario_codec.h"
#include "tools/run_files.h"

namespace scalecast::tools {
namespace {

// Not a scenario field: naming it pairs runs of different sources (one release's table with the
// next one's).
constexpr char kSourceField[] = "source";

bool Named(const std::string& key, const std::vector<std::string>& fields) {
  for (const std::string& f : fields) {
    if (key == f || (absl::EndsWith(f, ".") && absl::StartsWith(key, f))) return true;
  }
  return false;
}

// A named field's value as a user reads it: an enum by its name, the rest as encoded.
std::string Shown(const std::string& key, const std::string& value, const Scenario& s) {
  if (key == "workload.precision") return std::string(ToString(s.workload.precision));
  if (key == "parallelism.sharding") return std::string(ToString(s.parallelism.sharding));
  if (key == "parallelism.recompute") return std::string(ToString(s.parallelism.recompute));
  return value;
}

// A run split in two: what it shares with its partners (with its source) and the named fields.
struct Split {
  std::string shared;
  std::string value;
};

Split SplitRun(const ValidationRow& r, const std::vector<std::string>& fields) {
  const Measurement& m = *r.measurement;
  std::vector<std::string> shared, named;
  if (!Named(kSourceField, fields)) shared.push_back(m.source);
  for (const auto& [key, value] : ScenarioFields(m.scenario)) {
    if (key == "label") continue;
    if (Named(key, fields)) {
      named.push_back(absl::StrCat(key, "=", Shown(key, value, m.scenario)));
    } else {
      shared.push_back(absl::StrCat(key, "=", value));
    }
  }
  return {absl::StrJoin(shared, ";"), absl::StrJoin(named, ",")};
}

// Every key the encoding has (a scenario's fields at the newest version).
std::set<std::string> EncodingKeys() {
  std::set<std::string> keys;
  for (const auto& [key, value] : ScenarioFields(Scenario{})) keys.insert(key);
  return keys;
}

}  // namespace

absl::Status CheckPairFields(const std::vector<std::string>& fields) {
  const std::set<std::string> keys = EncodingKeys();
  for (const std::string& f : fields) {
    if (f == kSourceField) continue;
    const bool known =
        std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return Named(k, {f}); });
    if (!known) return absl::InvalidArgumentError(absl::StrCat("--pairs: no scenario field ", f));
  }
  return absl::OkStatus();
}

bool PairValueLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      // Leading zeros aside, the longer run of digits is the larger number.
      std::string_view x(a.data() + i, ie - i), y(b.data() + j, je - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

absl::StatusOr<std::vector<ControlledPair>> ControlledPairs(
    const std::vector<ValidationRow>& rows, const std::vector<std::string>& fields) {
  if (absl::Status s = CheckPairFields(fields); !s.ok()) return s;
  // shared -> value -> the runs of that value, in the order given.
  std::map<std::string, std::map<std::string, std::vector<const ValidationRow*>>> groups;
  for (const ValidationRow& r : rows) {
    if (!r.failure.empty() || r.measurement == nullptr) continue;
    Split s = SplitRun(r, fields);
    groups[std::move(s.shared)][std::move(s.value)].push_back(&r);
  }
  std::vector<ControlledPair> out;
  for (const auto& [shared, by_value] : groups) {
    // The values in the order of their software: the release it resolves to, then the date its
    // version names (two spellings of releases the table places together), then the text.
    struct Ordered {
      double release = 0, named = 0;
      std::string value;
    };
    std::vector<Ordered> values;
    for (const auto& [value, runs] : by_value) {
      const Measurement& m = *runs.front()->measurement;
      values.push_back({SoftwareDateOf(m), DatedVersionYear(m.scenario.stack.version), value});
    }
    std::sort(values.begin(), values.end(), [](const Ordered& a, const Ordered& b) {
      if (a.release != b.release) return a.release < b.release;
      if (a.named != b.named) return a.named < b.named;
      return PairValueLess(a.value, b.value);
    });
    for (size_t v = 0; v + 1 < values.size(); ++v) {
      const std::string& a = values[v].value;
      const std::string& b = values[v + 1].value;
      for (const ValidationRow* from : by_value.at(a)) {
        for (const ValidationRow* to : by_value.at(b)) {
          out.push_back(
              {from, to, a, b,
               to->measurement->tokens_per_s_per_gpu / from->measurement->tokens_per_s_per_gpu,
               to->predicted_tokens_per_s_per_gpu / from->predicted_tokens_per_s_per_gpu});
        }
      }
    }
  }
  return out;
}

}  // namespace scalecast::tools
