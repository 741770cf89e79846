#include "clients/cli/scenario_fields.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "clients/cli/flags.h"
#include "clients/cli/table.h"
#include "model/types.h"

namespace scalecast::cli {
namespace {

namespace gp = ::google::protobuf;
using FD = gp::FieldDescriptor;

absl::Status Usage(const std::string& message) { return absl::InvalidArgumentError(message); }

// Every field under `d` that carries the option, depth first, with its path from `d`; a
// message's own fields may carry it too (moe: --experts, ...), except a message in `skip`
// (Scenario's, under a PlanRequest).
template <typename Visit>
void Walk(const gp::Descriptor* d, const std::set<const gp::Descriptor*>& skip,
          std::vector<const FD*>* path, Visit&& visit) {
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    path->push_back(f);
    if (f->options().HasExtension(pb::field)) visit(*path, f->options().GetExtension(pb::field));
    const gp::Descriptor* sub = f->message_type();
    if (sub != nullptr && !f->is_repeated() && skip.count(sub) == 0) Walk(sub, skip, path, visit);
    path->pop_back();
  }
}

// The messages a Scenario holds, at any depth.
void Reach(const gp::Descriptor* d, std::set<const gp::Descriptor*>* seen) {
  if (!seen->insert(d).second) return;
  for (int i = 0; i < d->field_count(); ++i) {
    if (d->field(i)->message_type() != nullptr) Reach(d->field(i)->message_type(), seen);
  }
}

const std::vector<FieldFlag>* FieldsOf(const gp::Descriptor* d, bool skip_scenario) {
  std::set<const gp::Descriptor*> skip;
  if (skip_scenario) Reach(pb::Scenario::descriptor(), &skip);
  auto* out = new std::vector<FieldFlag>;
  std::vector<const FD*> path;
  Walk(d, skip, &path, [&](const std::vector<const FD*>& at, const pb::FieldUi& ui) {
    if (ui.flag().empty()) return;
    const bool boolean = at.back()->cpp_type() == FD::CPPTYPE_BOOL;
    out->push_back(FieldFlag{at, &ui, boolean ? "" : ui.value()});
  });
  return out;
}

// The model's table of an enum, seen through the proto enum with the same numbers.
struct EnumCodec {
  bool (*parse)(absl::string_view, int*);
  std::string (*known)();
};

template <NamedEnum E>
EnumCodec Codec() {
  return {[](absl::string_view s, int* v) {
            E e;
            if (!ParseEnum(s, &e)) return false;
            *v = static_cast<int>(e);
            return true;
          },
          [] { return KnownNames<E>(", "); }};
}

const EnumCodec* FindCodec(const gp::EnumDescriptor* e) {
  static const auto* codecs = new std::map<std::string, EnumCodec>{
      {pb::Mlp_descriptor()->full_name(), Codec<Mlp>()},
      {pb::Precision_descriptor()->full_name(), Codec<Precision>()},
      {pb::Sharding_descriptor()->full_name(), Codec<Sharding>()},
      {pb::Recompute_descriptor()->full_name(), Codec<Recompute>()},
  };
  auto it = codecs->find(e->full_name());
  return it == codecs->end() ? nullptr : &it->second;
}

absl::Status SetInt(const std::string& flag, const std::string& value, const pb::FieldUi& ui,
                    const FD* f, gp::Message* m) {
  const bool is32 = f->cpp_type() == FD::CPPTYPE_INT32;
  int64_t v = 0;
  if (!(ui.auto_zero() && value == "auto")) {
    const int64_t lo = ui.has_min() ? static_cast<int64_t>(ui.min()) : 0;
    const int64_t hi = ui.has_max() ? static_cast<int64_t>(ui.max())
                       : is32       ? std::numeric_limits<int32_t>::max()
                                    : std::numeric_limits<int64_t>::max();
    absl::StatusOr<int64_t> parsed = ParseIntFlag(flag, value, lo, hi);
    if (!parsed.ok()) return parsed.status();
    v = *parsed;
  }
  if (is32) {
    m->GetReflection()->SetInt32(m, f, static_cast<int32_t>(v));
  } else {
    m->GetReflection()->SetInt64(m, f, v);
  }
  return absl::OkStatus();
}

absl::Status SetEnum(const std::string& flag, const std::string& value, const pb::FieldUi& ui,
                     const FD* f, gp::Message* m) {
  int v = 0;
  const EnumCodec* codec = FindCodec(f->enum_type());
  if (ui.auto_zero() && value == "auto") {
    v = 0;
  } else if (codec == nullptr || value.empty() || !codec->parse(value, &v)) {
    return Usage(
        absl::StrCat(flag, ": '", value, "' is not one of ", EnumKnownNames(f->enum_type())));
  }
  m->GetReflection()->SetEnumValue(m, f, v);
  return absl::OkStatus();
}

// A repeated string of names with their own parser.
absl::Status SetNames(const std::string& flag, const std::string& value, const pb::FieldUi& ui,
                      const FD* f, gp::Message* m) {
  if (ui.names() != "recompute_modules") {
    return absl::InternalError(absl::StrCat(flag, ": no parser for names '", ui.names(), "'"));
  }
  uint32_t modules = 0;
  std::string unknown;
  if (!ParseRecomputeModules(value, &modules, &unknown)) {
    return Usage(
        absl::StrCat(flag, ": '", unknown, "' is not one of ", RecomputeModulesToString(~0u)));
  }
  if (modules == 0) {
    return Usage(absl::StrCat(flag, ": names no module (", RecomputeModulesToString(~0u), ")"));
  }
  m->GetReflection()->ClearField(m, f);
  for (std::string& name : RecomputeModuleNames(modules)) {
    m->GetReflection()->AddString(m, f, std::move(name));
  }
  return absl::OkStatus();
}

absl::Status SetJsonFile(const std::string& flag, const std::string& value, const FD* f,
                         gp::Message* m) {
  absl::StatusOr<std::string> text = ReadFlagFile(flag, value);
  if (!text.ok()) return text.status();
  gp::Message* dst = m->GetReflection()->MutableMessage(m, f);
  gp::util::JsonParseOptions options;  // strict: unknown fields are errors
  if (gp::util::Status st = gp::util::JsonStringToMessage(*text, dst, options); !st.ok()) {
    const std::string& type = f->message_type()->name();
    const bool vowel = std::string("AEIOU").find(type.front()) != std::string::npos;
    return Usage(absl::StrCat(flag, ": '", value, "' is not ", vowel ? "an " : "a ", type,
                              " in JSON: ", std::string(st.message())));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFlagFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Usage(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::vector<FieldFlag>& ScenarioFields() {
  static const auto* fields = FieldsOf(pb::Scenario::descriptor(), false);
  return *fields;
}

const std::vector<FieldFlag>& PlanFields() {
  static const auto* fields = FieldsOf(pb::PlanRequest::descriptor(), true);
  return *fields;
}

const std::vector<FieldFlag>& PlanCandidateFields() {
  static const auto* fields = FieldsOf(pb::PlanCandidate::descriptor(), true);
  return *fields;
}

const std::vector<CsvColumn>& ScenarioCsvColumns() {
  static const auto* fields = [] {
    auto* out = new std::vector<CsvColumn>;
    std::vector<const FD*> path;
    Walk(pb::Scenario::descriptor(), {}, &path,
         [&](const std::vector<const FD*>& at, const pb::FieldUi& ui) {
           if (!ui.csv().empty()) out->push_back(CsvColumn{at, ui.csv()});
         });
    return out;
  }();
  return *fields;
}

std::string CsvCell(const CsvColumn& c, const pb::Scenario& s) {
  const gp::Message* m = &s;
  for (size_t i = 0; i + 1 < c.path.size(); ++i) {
    m = &m->GetReflection()->GetMessage(*m, c.path[i]);
  }
  const FD* f = c.path.back();
  const gp::Reflection* r = m->GetReflection();
  // A field with presence (proto3 `optional`) is blank when absent and written when present, at
  // its default too (an explicit false); a plain field is blank at its default.
  const bool presence = f->has_presence();
  if (presence && !r->HasField(*m, f)) return "";
  auto number = [&](auto v) { return !presence && v == 0 ? std::string() : absl::StrCat(v); };
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32:
      return number(r->GetInt32(*m, f));
    case FD::CPPTYPE_INT64:
      return number(r->GetInt64(*m, f));
    case FD::CPPTYPE_UINT32:
      return number(r->GetUInt32(*m, f));
    case FD::CPPTYPE_UINT64:
      return number(r->GetUInt64(*m, f));
    case FD::CPPTYPE_DOUBLE: {
      const double v = r->GetDouble(*m, f);
      return !presence && v == 0 ? "" : ExactDouble(v);
    }
    case FD::CPPTYPE_BOOL: {
      const bool v = r->GetBool(*m, f);
      return v ? "true" : (presence ? "false" : "");
    }
    case FD::CPPTYPE_STRING:
      return r->GetString(*m, f);
    default:  // no other type names a column (cli_test ScenarioCsvColumnsAreWritable)
      return "";
  }
}

const FieldFlag* FindScenarioField(const std::string& name) {
  static const auto* index = [] {
    auto* out = new std::map<std::string, const FieldFlag*>;
    for (const FieldFlag& f : ScenarioFields()) (*out)[f.ui->flag()] = &f;
    return out;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

std::string EnumKnownNames(const gp::EnumDescriptor* e) {
  const EnumCodec* codec = FindCodec(e);
  return codec == nullptr ? "" : codec->known();
}

absl::Status ApplyField(const FieldFlag& f, const std::string& value, gp::Message* root) {
  const std::string flag = "--" + f.ui->flag();
  const pb::FieldUi& ui = *f.ui;
  gp::Message* m = root;
  for (size_t i = 0; i + 1 < f.path.size(); ++i) {
    m = m->GetReflection()->MutableMessage(m, f.path[i]);
  }
  const FD* fd = f.path.back();
  if (ui.non_empty() && value.empty()) {
    return Usage(absl::StrCat(flag, ": needs a non-empty value"));
  }
  const gp::Reflection* r = m->GetReflection();
  switch (fd->cpp_type()) {
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_INT64:
      return SetInt(flag, value, ui, fd, m);
    case FD::CPPTYPE_DOUBLE: {
      absl::StatusOr<double> v =
          ParseDoubleFlag(flag, value, ui.has_min() ? ui.min() : 0, ui.has_max() ? ui.max() : 1e9);
      if (!v.ok()) return v.status();
      r->SetDouble(m, fd, *v);
      return absl::OkStatus();
    }
    case FD::CPPTYPE_BOOL: {
      absl::StatusOr<bool> v = ParseBoolFlag(flag, value);
      if (!v.ok()) return v.status();
      r->SetBool(m, fd, *v);
      return absl::OkStatus();
    }
    case FD::CPPTYPE_ENUM:
      return SetEnum(flag, value, ui, fd, m);
    case FD::CPPTYPE_STRING:
      if (fd->is_repeated()) return SetNames(flag, value, ui, fd, m);
      if (ui.file()) {
        absl::StatusOr<std::string> text = ReadFlagFile(flag, value);
        if (!text.ok()) return text.status();
        r->SetString(m, fd, *std::move(text));
      } else {
        r->SetString(m, fd, value);
      }
      return absl::OkStatus();
    case FD::CPPTYPE_MESSAGE:
      if (ui.file()) return SetJsonFile(flag, value, fd, m);
      break;
    default:
      break;
  }
  return absl::InternalError(absl::StrCat(flag, ": the field's type has no flag parser"));
}

}  // namespace scalecast::cli
