// Flag values -> scalecast.v1 messages: scenarios (with --request files and compare's lists)
// and measurement filters.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/cli/flags.h"
#include "clients/cli/scenario_fields.h"
#include "model/types.h"

namespace scalecast::cli {
namespace {

absl::Status Usage(const std::string& message) { return absl::InvalidArgumentError(message); }

// Flags whose value may be a comma list in `compare`: the proto's `list` option.
bool ListCapable(const std::string& name) {
  const FieldFlag* f = FindScenarioField(name);
  return f != nullptr && f->ui->list();
}

// Sets one scenario field from one (single) flag value.
absl::Status ApplyScenarioFlag(const std::string& name, const std::string& value, pb::Scenario* s) {
  const FieldFlag* f = FindScenarioField(name);
  if (f == nullptr) return Usage(absl::StrCat("--", name, ": not a scenario flag"));
  return ApplyField(*f, value, s);
}

std::string JsonError(const google::protobuf::util::Status& s) {
  return std::string(s.message().data(), s.message().size());
}

}  // namespace

absl::StatusOr<int64_t> ParseIntFlag(const std::string& flag, const std::string& value, int64_t lo,
                                     int64_t hi) {
  int64_t v = 0;
  const std::string s(absl::StripAsciiWhitespace(value));
  // A whole number may be written as a double ("16e6" tokens), exactly: below 2^53.
  double d = 0;
  if (!absl::SimpleAtoi(s, &v)) {
    if (!absl::SimpleAtod(s, &d) || !(std::fabs(d) < 0x1p53) || d != std::trunc(d)) {
      return Usage(absl::StrCat(flag, ": '", value, "' is not an integer"));
    }
    v = static_cast<int64_t>(d);
  }
  if (v < lo || v > hi) {
    return Usage(absl::StrCat(flag, ": ", v, " is out of range [", lo, ", ", hi, "]"));
  }
  return v;
}

absl::StatusOr<double> ParseDoubleFlag(const std::string& flag, const std::string& value, double lo,
                                       double hi) {
  double v = 0;
  const std::string s(absl::StripAsciiWhitespace(value));
  if (!absl::SimpleAtod(s, &v) || !std::isfinite(v)) {
    return Usage(absl::StrCat(flag, ": '", value, "' is not a number"));
  }
  if (v < lo || v > hi) {
    return Usage(absl::StrCat(flag, ": ", value, " is out of range [", lo, ", ", hi, "]"));
  }
  return v;
}

absl::StatusOr<std::vector<int64_t>> ParseIntList(const std::string& flag, const std::string& value,
                                                  int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (absl::StripAsciiWhitespace(item).empty()) {
      return Usage(absl::StrCat(flag, ": empty item in '", value, "'"));
    }
    absl::StatusOr<int64_t> v = ParseIntFlag(flag, std::string(item), lo, hi);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<std::vector<pb::Scenario>> ReadRequestFile(const std::string& path,
                                                          bool allow_many) {
  absl::StatusOr<std::string> text = ReadFlagFile("--request", path);
  if (!text.ok()) return text.status();
  google::protobuf::util::JsonParseOptions options;  // strict: unknown fields are errors
  pb::PredictRequest predict;
  google::protobuf::util::Status ps = JsonStringToMessage(*text, &predict, options);
  if (ps.ok() && predict.has_scenario()) return std::vector<pb::Scenario>{predict.scenario()};
  pb::Scenario scenario;
  google::protobuf::util::Status ss = JsonStringToMessage(*text, &scenario, options);
  if (ss.ok()) return std::vector<pb::Scenario>{scenario};
  pb::CompareRequest compare;
  google::protobuf::util::Status cs = JsonStringToMessage(*text, &compare, options);
  const bool looks_compare = absl::StrContains(*text, "\"scenarios\"");
  if (cs.ok() && looks_compare) {
    if (!allow_many && compare.scenarios_size() != 1) {
      return Usage(absl::StrCat("--request ", path, ": holds ", compare.scenarios_size(),
                                " scenarios; only `compare` takes several"));
    }
    if (compare.scenarios_size() == 0) {
      return Usage(absl::StrCat("--request ", path, ": no scenarios"));
    }
    return std::vector<pb::Scenario>(compare.scenarios().begin(), compare.scenarios().end());
  }
  const std::string why = looks_compare                              ? JsonError(cs)
                          : absl::StrContains(*text, "\"scenario\"") ? JsonError(ps)
                                                                     : JsonError(ss);
  return Usage(absl::StrCat("--request ", path,
                            ": not a Scenario or PredictRequest in protobuf JSON: ", why));
}

absl::StatusOr<std::vector<pb::Scenario>> BuildScenarios(const ParsedArgs& args, bool allow_lists,
                                                         const std::vector<std::string>& skip) {
  std::vector<pb::Scenario> bases;
  const std::vector<std::string> files = args.All("request");
  if (files.size() > 1 && !allow_lists) {
    return Usage("--request: only `compare` takes several request files");
  }
  for (const std::string& f : files) {
    absl::StatusOr<std::vector<pb::Scenario>> s = ReadRequestFile(f, allow_lists);
    if (!s.ok()) return s.status();
    bases.insert(bases.end(), s->begin(), s->end());
  }
  if (bases.empty()) bases.emplace_back();

  // Each scenario flag once, at its first position, with its last value; lists split.
  std::vector<std::pair<std::string, std::vector<std::string>>> dims;
  std::map<std::string, size_t> index;
  for (const auto& [name, value] : args.flags) {
    if (!IsScenarioFlag(name) || name == "request") continue;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    std::vector<std::string> items{value};
    if (ListCapable(name) && absl::StrContains(value, ',')) {
      if (!allow_lists) {
        return Usage(absl::StrCat("--", name, ": takes one value here, got '", value,
                                  "' (lists are for `compare`)"));
      }
      items = absl::StrSplit(value, ',');
      for (std::string& item : items) {
        item = std::string(absl::StripAsciiWhitespace(item));
        if (item.empty()) return Usage(absl::StrCat("--", name, ": empty item in '", value, "'"));
      }
    }
    auto it = index.find(name);
    if (it == index.end()) {
      index[name] = dims.size();
      dims.emplace_back(name, std::move(items));
    } else {
      dims[it->second].second = std::move(items);
    }
  }
  // Check every value once, so a bad item is reported even if it would come late.
  for (const auto& [name, items] : dims) {
    for (const std::string& item : items) {
      pb::Scenario scratch;
      if (absl::Status st = ApplyScenarioFlag(name, item, &scratch); !st.ok()) return st;
    }
  }
  std::vector<pb::Scenario> out;
  for (const pb::Scenario& base : bases) {
    std::vector<size_t> pick(dims.size(), 0);
    while (true) {
      pb::Scenario s = base;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (absl::Status st = ApplyScenarioFlag(dims[d].first, dims[d].second[pick[d]], &s);
            !st.ok()) {
          return st;
        }
      }
      out.push_back(std::move(s));
      // Odometer: the last flag varies fastest.
      bool done = true;
      for (size_t d = dims.size(); d > 0; --d) {
        if (++pick[d - 1] < dims[d - 1].second.size()) {
          done = false;
          break;
        }
        pick[d - 1] = 0;
      }
      if (done) break;
    }
  }
  return out;
}

absl::Status CheckRequired(const std::vector<pb::Scenario>& scenarios, bool need_gpus) {
  std::vector<std::string> missing;
  auto need = [&](bool absent, const char* flag) {
    if (absent && std::find(missing.begin(), missing.end(), flag) == missing.end()) {
      missing.push_back(flag);
    }
  };
  for (const pb::Scenario& s : scenarios) {
    const pb::ModelSpec& m = s.workload().model();
    need(m.name().empty() && m.layers() == 0 && m.hf_config_json().empty(), "--model");
    need(s.cluster().accelerator().empty(), "--accelerator");
    need(need_gpus && s.cluster().num_gpus() == 0, "--gpus");
    need(s.workload().seq_len() == 0, "--seq");
    need(s.workload().global_batch() == 0, "--global-batch");
  }
  if (missing.empty()) return absl::OkStatus();
  std::string list = missing.front();
  for (size_t i = 1; i < missing.size(); ++i) {
    absl::StrAppend(&list, i + 1 == missing.size() ? " and " : ", ", missing[i]);
  }
  return Usage(absl::StrCat(list, missing.size() == 1 ? " is" : " are", " required"));
}

absl::StatusOr<pb::MeasurementFilter> BuildFilter(const ParsedArgs& args) {
  pb::MeasurementFilter f;
  if (const std::string* v = args.Last("accelerator")) f.set_accelerator(*v);
  if (const std::string* v = args.Last("framework")) f.set_framework(*v);
  if (const std::string* v = args.Last("source")) f.set_source(*v);
  for (const std::string& kv : args.All("label")) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Usage(absl::StrCat("--label: '", kv, "' is not KEY=VALUE"));
    }
    (*f.mutable_labels())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return f;
}

}  // namespace scalecast::cli
