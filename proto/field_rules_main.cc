// scalecast-field-rules: writes model/field_rules_gen.h from the (scalecast.v1.field) options of
// proto/scalecast/v1/scalecast.proto (run by the build). The model layer sees no protobuf; this
// header carries what it needs of the schema as plain constants: each option-bearing field's
// accepted range and CSV column (a FieldRule, model/field_rule.h), and a visitor per message that
// hands each such field of the model's struct to a callback; and server/convert_gen.h, the plain
// fields copied between proto and model; and model/model_fields_gen.h, every plain field of a
// ModelSpec by path and the stack's switches; and Predict's codec over the model's structs
// (server/predict_codec.cc) with its tests' visitor. The rules header also carries the names of
// the communication kinds (proto enum CommKind) the model's predictions time. Usage:
// scalecast-field-rules rules|convert|fields|codec|visit OUT.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "proto/scalecast/v1/scalecast.pb.h"

namespace {

namespace gp = ::google::protobuf;
namespace pb = ::scalecast::v1;

// The messages with a visitor of their own; the fields of any other message under them (moe,
// mla) are visited with theirs, as "moe.num_experts". Stack's struct is StackOptions. Plan's
// (PlanRequest, with its constraints and reliability, and PlanCandidate) are visited on the plan
// job's structs; a Scenario message under them (a candidate's accelerator_spec) is Scenario's.
const std::set<std::string> kRoots = {"ModelSpec", "Workload",    "Cluster",      "Parallelism",
                                      "Stack",     "PlanRequest", "PlanCandidate"};

void Reach(const gp::Descriptor* d, std::set<std::string>* seen) {
  if (!seen->insert(d->name()).second) return;
  for (int i = 0; i < d->field_count(); ++i) {
    if (d->field(i)->message_type() != nullptr) Reach(d->field(i)->message_type(), seen);
  }
}

// The messages a Scenario holds, at any depth.
const std::set<std::string>& UnderScenario() {
  static const auto* names = [] {
    auto* out = new std::set<std::string>;
    Reach(pb::Scenario::descriptor(), out);
    return out;
  }();
  return *names;
}

std::string Camel(const std::string& path) {
  std::string out;
  bool up = true;
  for (char c : path) {
    if (c == '_' || c == '.') {
      up = true;
    } else {
      out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      up = false;
    }
  }
  return out;
}

std::string Number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// The largest value of the field's type: the range's top when the proto gives none.
double TypeMax(const gp::FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32:
      return 2147483647.0;
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return 9223372036854775807.0;
    default:
      return 1e9;  // as the CLI's doubles
  }
}

struct Out {
  std::ostringstream consts;
  std::ostringstream visit;
};

// The fields of `d` (path prefix `prefix`) that carry a range or a CSV column, into the root's
// constants and visitor; nested messages that are not roots are walked.
void Walk(const std::string& root, const gp::Descriptor* d, const std::string& prefix, Out* out) {
  const bool outside = UnderScenario().count(root) == 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    if (f->message_type() != nullptr) {
      const std::string& type = f->message_type()->name();
      if (!f->is_repeated() && kRoots.count(type) == 0 &&
          !(outside && UnderScenario().count(type) != 0)) {
        Walk(root, f->message_type(), path + ".", out);
      }
      continue;
    }
    if (!f->options().HasExtension(pb::field)) continue;
    const pb::FieldUi& ui = f->options().GetExtension(pb::field);
    const bool ranged = ui.has_min() || ui.has_max();
    if (!ranged && ui.csv().empty()) continue;
    const std::string name = "k" + root + Camel(path);
    out->consts << "// " << d->full_name() << "." << f->name() << "\n"
                << "inline constexpr FieldRule " << name << "{\"" << path << "\", \"" << ui.csv()
                << "\", " << Number(ui.has_min() ? ui.min() : 0) << ", "
                << Number(ui.has_max() ? ui.max() : TypeMax(f)) << ", "
                << (ranged ? "true" : "false") << "};\n";
    out->visit << "  f(" << name << ", m." << path << ");\n";
  }
}

// VisitScenario: every root under Scenario, with the member path that reaches it.
void WalkScenario(const gp::Descriptor* d, const std::string& prefix, std::ostringstream* out) {
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (f->message_type() == nullptr || f->is_repeated()) continue;
    const std::string path = prefix + f->name();
    if (kRoots.count(f->message_type()->name()) != 0) {
      *out << "  Visit" << f->message_type()->name() << "(s." << path << ", f);\n";
    }
    WalkScenario(f->message_type(), path + ".", out);
  }
}

// Writes `text` to `path` only when it changed, so that an unrelated proto edit rebuilds no
// code that includes it.
int WriteIfChanged(const char* path, const std::string& text) {
  std::ifstream old(path);
  std::stringstream old_text;
  old_text << old.rdbuf();
  if (old && old_text.str() == text) return 0;
  std::ofstream o(path);
  o << text;
  return o ? 0 : 1;
}

// The messages whose plain fields (numbers, bools, strings; proto3 `optional` ones as
// std::optional) convert field for field, by name, to the model's struct of the same name
// (Stack's is StackOptions). Enums, repeated and message fields are server/convert.cc's, and so
// is a string that carries a file's bytes (`file`: hf_config_json, read by the server).
const char* const kConverted[] = {"Scenario", "Workload",    "ModelSpec", "MoeSpec",
                                  "MlaSpec",  "Parallelism", "Cluster",   "Stack"};

std::string ModelType(const std::string& proto) {
  return proto == "Stack" ? "StackOptions" : proto;
}

bool Plain(const gp::FieldDescriptor* f) {
  if (f->is_repeated()) return false;
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32:
    case gp::FieldDescriptor::CPPTYPE_INT64:
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return true;
    case gp::FieldDescriptor::CPPTYPE_STRING:
      return !(f->options().HasExtension(pb::field) && f->options().GetExtension(pb::field).file());
    default:
      return false;
  }
}

// CopyFromProto (and with `both_ways` CopyToProto) of one message's plain fields into the model's
// struct `model`, field for field by name: a field the struct lacks is a compile error.
std::string CopyFunctions(const std::string& proto, const std::string& model, bool both_ways) {
  const gp::Descriptor* d = pb::Scenario::descriptor()->file()->FindMessageTypeByName(proto);
  std::ostringstream from, to;
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (!Plain(f)) continue;
    const std::string n = f->name();
    if (f->has_presence()) {
      from << "  if (in.has_" << n << "()) out->" << n << " = in." << n << "();\n";
      to << "  if (in." << n << ".has_value()) out->set_" << n << "(*in." << n << ");\n";
    } else if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING) {
      // An empty string is the field's default: set only when it changes the message (an
      // arena message's string costs an allocation even when empty), and copied into the
      // struct only when it changes it (most of a request's strings are empty).
      from << "  if (!in." << n << "().empty() || !out->" << n << ".empty()) out->" << n << " = in."
           << n << "();\n";
      to << "  if (!in." << n << ".empty() || !out->" << n << "().empty()) out->set_" << n << "(in."
         << n << ");\n";
    } else {
      from << "  out->" << n << " = in." << n << "();\n";
      to << "  out->set_" << n << "(in." << n << ");\n";
    }
  }
  std::ostringstream h;
  h << "\ninline void CopyFromProto(const ::scalecast::v1::" << proto << "& in, " << model
    << "* out) {\n"
    << from.str() << "}\n";
  if (both_ways) {
    h << "\ninline void CopyToProto(const " << model << "& in, ::scalecast::v1::" << proto
      << "* out) {\n"
      << to.str() << "}\n";
  }
  return h.str();
}

std::string ConvertHeader() {
  std::ostringstream h;
  h << "// Generated by proto/field_rules_main.cc from proto/scalecast/v1/scalecast.proto: do not\n"
       "// edit. The plain fields of each scenario message copied between the proto and the\n"
       "// model's struct, field for field by name (server/convert.cc does the rest).\n"
       "#ifndef SCALECAST_SERVER_CONVERT_GEN_H_\n"
       "#define SCALECAST_SERVER_CONVERT_GEN_H_\n\n"
       "#include \"model/types.h\"\n"
       "#include \"proto/scalecast/v1/scalecast.pb.h\"\n\n"
       "namespace scalecast::convert_gen {\n";
  for (const char* name : kConverted) h << CopyFunctions(name, ModelType(name), true);
  h << "\n}  // namespace scalecast::convert_gen\n\n"
    << "#endif  // SCALECAST_SERVER_CONVERT_GEN_H_\n";
  return h.str();
}

// Plan's request messages whose plain fields the plan job's structs hold under the same names
// (jobs/plan_job.h, model/goodput.h): server/plan.cc converts the rest (the workload, the
// layouts, the described parts, gpu_counts).
const std::pair<const char*, const char*> kPlanConverted[] = {
    {"PlanCandidate", "PlanCandidateSpec"},
    {"PlanConstraints", "PlanConstraintsSpec"},
    {"Reliability", "ReliabilityOptions"}};

std::string PlanConvertHeader() {
  std::ostringstream h;
  h << "// Generated by proto/field_rules_main.cc from proto/scalecast/v1/scalecast.proto: do not\n"
       "// edit. The plain fields of Plan's candidate, constraints and reliability copied into\n"
       "// the plan job's structs, field for field by name (server/plan.cc does the rest).\n"
       "#ifndef SCALECAST_SERVER_PLAN_CONVERT_GEN_H_\n"
       "#define SCALECAST_SERVER_PLAN_CONVERT_GEN_H_\n\n"
       "#include \"jobs/plan_job.h\"\n"
       "#include \"model/goodput.h\"\n"
       "#include \"proto/scalecast/v1/scalecast.pb.h\"\n\n"
       "namespace scalecast::convert_gen {\n";
  for (const auto& [proto, model] : kPlanConverted) h << CopyFunctions(proto, model, false);
  h << "\n}  // namespace scalecast::convert_gen\n\n"
    << "#endif  // SCALECAST_SERVER_PLAN_CONVERT_GEN_H_\n";
  return h.str();
}

// The plain fields of ModelSpec and the messages under it (moe, mla), by path
// ("moe.num_experts"): model/model_fields_gen.h, for the catalog's keys and the preset overlay.
// `shape` gets one test per shape field (not marked not_shape) that it is set.
void WalkPlain(const gp::Descriptor* d, const std::string& prefix, std::ostringstream* one,
               std::ostringstream* two, std::ostringstream* shape) {
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    if (f->message_type() != nullptr && !f->is_repeated()) {
      WalkPlain(f->message_type(), path + ".", one, two, shape);
    } else if (Plain(f)) {
      *one << "  f(\"" << path << "\", m." << path << ");\n";
      *two << "  f(\"" << path << "\", a." << path << ", b." << path << ");\n";
      if (f->options().GetExtension(pb::field).not_shape()) continue;
      *shape << (shape->tellp() == 0 ? "  return " : " ||\n         ");
      switch (f->cpp_type()) {
        case gp::FieldDescriptor::CPPTYPE_STRING:
          *shape << "!m." << path << ".empty()";
          break;
        case gp::FieldDescriptor::CPPTYPE_BOOL:
          *shape << "m." << path;
          break;
        default:
          *shape << "m." << path << " != 0";
      }
    }
  }
}

// The proto Stack's switches (its optional bools): a request's StackOptions holds each as a
// std::optional<bool>, a resolved Stack as a bool of the same name.
std::string StackSwitches() {
  std::ostringstream out;
  const gp::Descriptor* d = pb::Stack::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_BOOL && f->has_presence()) {
      out << "  f(\"" << f->name() << "\", o." << f->name() << ", s." << f->name() << ");\n";
    }
  }
  return out.str();
}

std::string ModelFieldsHeader() {
  std::ostringstream visit, pairs, shape;
  WalkPlain(pb::ModelSpec::descriptor(), "", &visit, &pairs, &shape);
  return "// Generated by proto/field_rules_main.cc from proto/scalecast/v1/scalecast.proto: do "
         "not\n"
         "// edit. VisitModelSpecFields(m, f) calls f(path, m.<path>) for every plain field (a\n"
         "// number, a bool, a string) of a ModelSpec and of the messages under it;\n"
         "// VisitModelSpecFieldPairs(a, b, f) calls f(path, a.<path>, b.<path>).\n"
         "// SetsShapeField(m): some field of the shape (not marked not_shape) is set.\n"
         "// VisitStackSwitches(o, s, f) calls f(name, o.<name>, s.<name>) for every switch of "
         "the\n"
         "// proto's Stack (an optional bool): a StackOptions' std::optional<bool> and a resolved\n"
         "// Stack's bool.\n"
         "#ifndef SCALECAST_MODEL_MODEL_FIELDS_GEN_H_\n"
         "#define SCALECAST_MODEL_MODEL_FIELDS_GEN_H_\n\n"
         "namespace scalecast::field_rules {\n\n"
         "template <typename M, typename F>\n"
         "void VisitModelSpecFields(M& m, F&& f) {\n" +
         visit.str() +
         "}\n\n"
         "template <typename A, typename B, typename F>\n"
         "void VisitModelSpecFieldPairs(A& a, B& b, F&& f) {\n" +
         pairs.str() +
         "}\n\n"
         "template <typename M>\n"
         "bool SetsShapeField(const M& m) {\n" +
         shape.str() +
         ";\n}\n\n"
         "template <typename O, typename S, typename F>\n"
         "void VisitStackSwitches(O& o, S& s, F&& f) {\n" +
         StackSwitches() +
         "}\n\n"
         "}  // namespace scalecast::field_rules\n\n"
         "#endif  // SCALECAST_MODEL_MODEL_FIELDS_GEN_H_\n";
}

// Predict's codec over the model's structs (server/predict_codec.cc): the response written from
// the Prediction and the echoed Scenario without building protobuf messages, and the request read
// straight into a Scenario. Function templates per message, the struct's type deduced from the
// member that holds it (Parallelism for both Scenario.parallelism and Prediction.layout): each
// proto field is the struct's member of the same name, so a field added to the proto needs the
// struct's member and nothing here.
//   WriteS_<M>(b, p, m): M's fields in field-number order with proto3's rules, the bytes
//     protobuf writes for the message convert.cc's ToProto builds (a nested message written
//     when Present(member), a repeated string by Strings(...): hooks in predict_codec.cc).
//   ReadS_<M>(p, end, m): M's fields as FromProto converts them, for the request's messages
//     that convert field for field (kConverted and PredictRequest); false for anything FromProto
//     does more with (an unknown field, a wrong wire type, a list, a message converted by hand, a
//     config.json, an out-of-range enum, a non-finite double, a long or non-ASCII string,
//     malformed bytes): the caller then parses with protobuf and converts with FromProto.
//   ZeroS_<M>(m): what FromProto sets from a message's absent fields (plain fields and enums
//     to zero), before ReadS_.
//   VisitS_<M>(m, f) (mode visit, another header): every field's member, for the tests
//     (f(member) for a value, f.Message(member, visit) and f.Messages(list, visit)).
struct CodecGen {
  std::set<std::string> written, read, visited;
  std::ostringstream declare, out, visit_declare, visit;
  std::string error;

  static std::string Name(const gp::Descriptor* d) {
    std::string name = d->full_name().substr(d->file()->package().size() + 1);
    std::replace(name.begin(), name.end(), '.', '_');
    return name;
  }
  // A string that carries a file's bytes (hf_config_json): FromProto's to read, never echoed.
  static bool File(const gp::FieldDescriptor* f) {
    return f->type() == gp::FieldDescriptor::TYPE_STRING && f->options().HasExtension(pb::field) &&
           f->options().GetExtension(pb::field).file();
  }
  // The writer's form of a scalar field ("" when it has none).
  static std::string Form(const gp::FieldDescriptor* f) {
    switch (f->type()) {
      case gp::FieldDescriptor::TYPE_DOUBLE:
        return "Double";
      case gp::FieldDescriptor::TYPE_INT32:
      case gp::FieldDescriptor::TYPE_ENUM:
        return "Int32";
      case gp::FieldDescriptor::TYPE_INT64:
        return "Int64";
      case gp::FieldDescriptor::TYPE_UINT32:
      case gp::FieldDescriptor::TYPE_UINT64:
        return "UInt64";
      case gp::FieldDescriptor::TYPE_BOOL:
        return "Bool";
      default:
        return "";
    }
  }

  std::string WriteField(const gp::FieldDescriptor* f, bool root) {
    const std::string n = f->name(), num = std::to_string(f->number());
    if (File(f)) return "  // " + n + ": a file's bytes, never echoed\n";
    if (f->is_map()) return Fail(f);
    if (f->is_repeated()) {
      if (f->message_type() != nullptr) {
        return "  for (const auto& e : m." + n + ") {\n    p = Message(b, p, " + num +
               ", [&](char* q) { return WriteS_" + Name(f->message_type()) +
               "(b, q, e); });\n  }\n";
      }
      if (f->type() == gp::FieldDescriptor::TYPE_STRING) {
        return "  p = Strings(b, p, " + num + ", m." + n + ");\n";
      }
      return Fail(f);
    }
    if (f->message_type() != nullptr) {
      return "  if (Present(m." + n + ")) {\n    p = Message<" + (root ? "2" : "1") + ">(b, p, " +
             num + ", [&](char* q) { return WriteS_" + Name(f->message_type()) + "(b, q, m." + n +
             "); });\n  }\n";
    }
    if (f->type() == gp::FieldDescriptor::TYPE_STRING) {
      return f->has_presence() ? "  if (m." + n + ".has_value()) p = StringAlways(b, p, " + num +
                                     ", *m." + n + ");\n"
                               : "  p = String(b, p, " + num + ", m." + n + ");\n";
    }
    const std::string form = Form(f);
    if (form.empty()) return Fail(f);
    const std::string cast =
        f->type() == gp::FieldDescriptor::TYPE_ENUM ? "static_cast<int32_t>" : "";
    return f->has_presence() ? "  if (m." + n + ".has_value()) p = " + form + "Always(p, " + num +
                                   ", " + cast + "(*m." + n + "));\n"
                             : "  p = " + form + "(p, " + num + ", " + cast + "(m." + n + "));\n";
  }

  std::string Fail(const gp::FieldDescriptor* f) {
    error += f->full_name() + ": a field type the struct codec has no form for\n";
    return "";
  }

  static std::vector<const gp::FieldDescriptor*> ByNumber(const gp::Descriptor* d) {
    std::vector<const gp::FieldDescriptor*> fields;
    for (int i = 0; i < d->field_count(); ++i) fields.push_back(d->field(i));
    std::sort(fields.begin(), fields.end(),
              [](auto* a, auto* b) { return a->number() < b->number(); });
    return fields;
  }

  // The writer and the visitor of `d` and, first, of the messages under it.
  void EmitWriter(const gp::Descriptor* d, bool root) {
    if (!written.insert(d->full_name()).second) return;
    for (const gp::FieldDescriptor* f : ByNumber(d)) {
      if (f->message_type() != nullptr && !f->is_map()) EmitWriter(f->message_type(), false);
    }
    const std::string name = Name(d);
    declare << "template <class S>\nchar* WriteS_" << name << "(Buffer& b, char* p, const S& m);\n";
    out << "\ntemplate <class S>\nchar* WriteS_" << name
        << "([[maybe_unused]] Buffer& b, char* p, [[maybe_unused]] const S& m) {\n";
    for (const gp::FieldDescriptor* f : ByNumber(d)) out << WriteField(f, root);
    out << "  return p;\n}\n";
    if (root) return;  // the response's root is a view over the answer's parts
    visit_declare << "template <class S, class F>\nvoid VisitS_" << name << "(S& m, F& f);\n";
    visit << "\ntemplate <class S, class F>\nvoid VisitS_" << name
          << "([[maybe_unused]] S& m, [[maybe_unused]] F& f) {\n";
    for (const gp::FieldDescriptor* f : ByNumber(d)) {
      const std::string n = f->name();
      if (File(f)) continue;
      if (f->message_type() != nullptr) {
        visit << "  f." << (f->is_repeated() ? "Messages" : "Message") << "(m." << n
              << ", [&](auto& e) { VisitS_" << Name(f->message_type()) << "(e, f); });\n";
      } else {
        visit << "  f(m." << n << ");\n";
      }
    }
    visit << "}\n";
  }

  static const char* Read(const gp::FieldDescriptor* f, int* wire) {
    *wire = 0;
    switch (f->type()) {
      case gp::FieldDescriptor::TYPE_DOUBLE:
        *wire = 1;
        return "ReadDouble";
      case gp::FieldDescriptor::TYPE_INT32:
        return "ReadInt32";
      case gp::FieldDescriptor::TYPE_INT64:
        return "ReadInt64";
      case gp::FieldDescriptor::TYPE_BOOL:
        return "ReadBool";
      case gp::FieldDescriptor::TYPE_ENUM:
        return "ReadEnum";
      case gp::FieldDescriptor::TYPE_STRING:
        *wire = 2;
        return "ReadString";
      default:
        return nullptr;
    }
  }

  // The reader and the zeroing of `d` (one of `direct`) and of the direct messages under it.
  void EmitReader(const gp::Descriptor* d, const std::set<std::string>& direct) {
    if (!read.insert(d->full_name()).second) return;
    std::ostringstream cases, zero;
    for (const gp::FieldDescriptor* f : ByNumber(d)) {
      const std::string n = f->name();
      if (f->is_repeated()) continue;  // converted by hand: the slow path
      if (f->message_type() != nullptr) {
        if (direct.count(f->message_type()->name()) == 0) continue;
        EmitReader(f->message_type(), direct);
        const std::string sub = Name(f->message_type());
        cases << "      case " << (f->number() << 3 | 2) << ":\n"
              << "        if (!ReadMessage(p, end, [&](const char* q, const char* qe) {\n"
              << "              return ReadS_" << sub << "(q, qe, m." << n << ");\n"
              << "            })) {\n          return false;\n        }\n        break;\n";
        zero << "  ZeroS_" << sub << "(m." << n << ");\n";
        continue;
      }
      int wire = 0;
      const char* form = Read(f, &wire);
      if (form == nullptr) continue;
      const std::string tag = std::to_string(f->number() << 3 | wire);
      if (File(f)) {  // a config.json: FromProto reads it (the slow path) unless it is empty
        cases << "      case " << tag << ":\n        if (!ReadEmptyString(p, end)) return false;\n"
              << "        break;\n";
        continue;
      }
      cases << "      case " << tag << ":\n        if (!" << form << "(p, end, m." << n
            << ")) return false;\n        break;\n";
      if (!f->has_presence()) zero << "  ZeroField(m." << n << ");\n";
    }
    const std::string name = Name(d);
    declare << "template <class S>\nbool ReadS_" << name
            << "(const char* p, const char* end, S& m);\n"
            << "template <class S>\nvoid ZeroS_" << name << "(S& m);\n";
    out << "\ntemplate <class S>\nbool ReadS_" << name
        << "(const char* p, const char* end, [[maybe_unused]] S& m) {\n"
        << "  while (p != end) {\n    uint32_t tag;\n    if (!ReadTag(p, end, &tag)) return "
           "false;\n"
        << "    switch (tag) {\n"
        << cases.str() << "      default:\n        return false;\n    }\n  }\n  return true;\n}\n"
        << "\ntemplate <class S>\nvoid ZeroS_" << name << "([[maybe_unused]] S& m) {\n"
        << zero.str() << "}\n";
  }
};

// The codec (mode codec) or the visitors (mode visit: server/predict_fields_gen.h, for tests).
std::string CodecHeader(bool visitors, std::string* error) {
  CodecGen g;
  g.EmitWriter(pb::PredictResponse::descriptor(), true);
  std::set<std::string> direct(std::begin(kConverted), std::end(kConverted));
  g.EmitReader(pb::PredictRequest::descriptor(), direct);
  *error = g.error;
  if (visitors) {
    return "// Generated by proto/field_rules_main.cc from proto/scalecast/v1/scalecast.proto: "
           "do not\n"
           "// edit. VisitS_<Message>(m, f): every field's member of the model's struct for a\n"
           "// message under PredictResponse: f(member) for a value, f.Message(member, visit) and\n"
           "// f.Messages(list, visit) for messages (tests/predict_codec_test.cc).\n"
           "#ifndef SCALECAST_SERVER_PREDICT_FIELDS_GEN_H_\n"
           "#define SCALECAST_SERVER_PREDICT_FIELDS_GEN_H_\n\n" +
           g.visit_declare.str() + g.visit.str() +
           "\n#endif  // SCALECAST_SERVER_PREDICT_FIELDS_GEN_H_\n";
  }
  return "// Generated by proto/field_rules_main.cc from proto/scalecast/v1/scalecast.proto: do "
         "not\n"
         "// edit. Predict's codec over the model's structs (included by\n"
         "// server/predict_codec.cc, which defines Buffer, the forms and the hooks).\n"
         "#ifndef SCALECAST_SERVER_PREDICT_CODEC_GEN_H_\n"
         "#define SCALECAST_SERVER_PREDICT_CODEC_GEN_H_\n\n" +
         g.declare.str() + g.out.str() + "\n#endif  // SCALECAST_SERVER_PREDICT_CODEC_GEN_H_\n";
}

// CommTime.kind's values, from the proto's CommKind enum: a C++ enum of the same values (in
// order, without COMM_KIND_UNSPECIFIED) and each one's name as CommTime.kind carries it.
std::string CommKinds() {
  const gp::EnumDescriptor* e = pb::CommKind_descriptor();
  const std::string prefix = "COMM_KIND_";
  std::ostringstream values, names;
  for (int i = 0; i < e->value_count(); ++i) {
    const std::string& full = e->value(i)->name();
    if (e->value(i)->number() == 0) continue;
    std::string word = full.substr(prefix.size());
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    values << "  k" << Camel(word) << ",\n";
    names << "    \"" << word << "\",\n";
  }
  return "// CommTime.kind's values (proto enum CommKind, in its order) and their names.\n"
         "enum class CommKind {\n" +
         values.str() +
         "};\n"
         "inline constexpr const char* kCommKindNames[] = {\n" +
         names.str() +
         "};\n"
         "inline constexpr const char* CommKindName(CommKind k) {\n"
         "  return kCommKindNames[static_cast<int>(k)];\n"
         "}\n\n";
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "rules" && mode != "convert" && mode != "plan_convert" && mode != "fields" &&
      mode != "codec" && mode != "visit") {
    std::cerr << "usage: scalecast-field-rules rules|convert|plan_convert|fields|codec|visit "
                 "OUT.h\n";
    return 2;
  }
  if (mode == "convert") return WriteIfChanged(argv[2], ConvertHeader());
  if (mode == "plan_convert") return WriteIfChanged(argv[2], PlanConvertHeader());
  if (mode == "fields") return WriteIfChanged(argv[2], ModelFieldsHeader());
  if (mode == "codec" || mode == "visit") {
    std::string error;
    const std::string text = CodecHeader(mode == "visit", &error);
    if (!error.empty()) {
      std::cerr << error;
      return 1;
    }
    return WriteIfChanged(argv[2], text);
  }
  std::ostringstream h;
  h << "// Generated by proto/field_rules_main.cc from proto/scalecast/v1/scalecast.proto's\n"
       "// (scalecast.v1.field) options: do not edit. Each field with a range (min/max) or a\n"
       "// CSV column, per message; Visit<Message>(m, f) calls f(rule, m.<field>) for each.\n"
       "#ifndef SCALECAST_MODEL_FIELD_RULES_GEN_H_\n"
       "#define SCALECAST_MODEL_FIELD_RULES_GEN_H_\n\n"
       "#include \"model/field_rule.h\"\n\n"
       "namespace scalecast::field_rules {\n\n";
  const gp::FileDescriptor* file = pb::Scenario::descriptor()->file();
  for (const std::string& root : kRoots) {
    const gp::Descriptor* d = file->FindMessageTypeByName(root);
    if (d == nullptr) {
      std::cerr << "no message " << root << "\n";
      return 1;
    }
    Out out;
    Walk(root, d, "", &out);
    h << out.consts.str() << "\n"
      << "template <typename M, typename F>\n"
      << "void Visit" << root << "(M& m, F&& f) {\n"
      << out.visit.str() << "}\n\n";
  }
  std::ostringstream all;
  WalkScenario(pb::Scenario::descriptor(), "", &all);
  h << CommKinds();
  h << "// Every field of a Scenario that has a rule.\n"
    << "template <typename S, typename F>\n"
    << "void VisitScenario(S& s, F&& f) {\n"
    << all.str() << "}\n\n"
    << "}  // namespace scalecast::field_rules\n\n"
    << "#endif  // SCALECAST_MODEL_FIELD_RULES_GEN_H_\n";
  return WriteIfChanged(argv[2], h.str());
}
