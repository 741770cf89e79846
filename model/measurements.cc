#include "model/measurements.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/catalog.h"
#include "model/field_rules.h"
#include "model/framework.h"
#include "model/status_macros.h"

namespace scalecast {

absl::StatusOr<bool> CsvReader::Next(std::vector<std::string>* row, int* line) {
  row->clear();
  std::string field;
  bool quoted = false, field_started = false;
  int row_line = line_;
  auto end_field = [&] {
    row->push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  const absl::string_view text = text_;
  for (; pos_ < text.size(); ++pos_) {
    const char c = text[pos_];
    if (quoted) {
      if (c == '"') {
        if (pos_ + 1 < text.size() && text[pos_ + 1] == '"') {
          field += '"';
          ++pos_;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line_;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (field_started && !field.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line_, ": stray quote in a field"));
      }
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && pos_ + 1 < text.size() && text[pos_ + 1] == '\n') ++pos_;
      ++pos_;
      ++line_;
      end_field();
      if (!(row->size() == 1 && (*row)[0].empty())) {
        *line = row_line;
        return true;
      }
      row->clear();  // a blank line
      row_line = line_;
      --pos_;  // the loop's increment
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(absl::StrCat("line ", row_line, ": unterminated quote"));
  }
  if (field_started || !row->empty()) {
    end_field();
    *line = row_line;
    return true;
  }
  return false;
}

absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(absl::string_view text) {
  std::vector<std::vector<std::string>> rows;
  CsvReader reader(text);
  std::vector<std::string> row;
  int line = 0;
  for (;;) {
    ASSIGN_OR_RETURN(const bool more, reader.Next(&row, &line));
    if (!more) break;
    rows.push_back(std::move(row));
  }
  return rows;
}

size_t FirstInvalidUtf8(absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629, section 4)
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // no overlong forms
      if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return absl::string_view::npos;
}

namespace measurements_internal {

struct Columns {
  std::map<std::string, size_t> index;
  const std::string* Get(const std::vector<std::string>& row, absl::string_view name) const {
    auto it = index.find(std::string(name));
    if (it == index.end() || it->second >= row.size()) return nullptr;
    return &row[it->second];
  }
  bool Has(absl::string_view name) const { return index.count(std::string(name)) != 0; }
  // Each header cell's column, by its name without surrounding blanks.
  static Columns FromHeader(const std::vector<std::string>& header) {
    Columns cols;
    for (size_t i = 0; i < header.size(); ++i) {
      cols.index[std::string(absl::StripAsciiWhitespace(header[i]))] = i;
    }
    return cols;
  }
};

}  // namespace measurements_internal

namespace {

using measurements_internal::Columns;

// A measured run names a framework of the table, or none (plain PyTorch): the fit prices each run
// by its framework's features, and a run of unknown ones would teach the generic stack another
// framework's speed. (A prediction of an unknown framework is answered as the generic one.)
std::string UnknownFramework(absl::string_view name) {
  return absl::StrCat(
      "unknown framework '", name, "' (known: ", FrameworkNames(),
      ", or empty for plain PyTorch); a measured run names the framework it ran on");
}

// The columns every file names and every row fills (shared/data/README.md).
constexpr const char* kRequired[] = {
    "framework", "layers",      "hidden",   "heads",     "vocab",
    "seq_len",   "accelerator", "num_gpus", "precision", "tokens_per_s_per_gpu"};

bool IsRequired(absl::string_view col) {
  for (const char* c : kRequired) {
    if (col == c) return true;
  }
  return false;
}

// The header row: every required column named once, and an FFN width for a dense or an MoE file.
absl::StatusOr<Columns> ReadHeader(const std::vector<std::string>& header) {
  Columns cols = Columns::FromHeader(header);
  for (const char* c : kRequired) {
    if (!cols.Has(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line 1, column ", c, ": missing from header"));
    }
  }
  // A dense file names the FFN width ffn_hidden; an MoE file (moe.csv) names the experts' and
  // the dense layers' widths.
  if (!cols.Has("ffn_hidden") && !cols.Has("num_experts")) {
    return absl::InvalidArgumentError(
        "line 1, column ffn_hidden: missing from header (and no num_experts column)");
  }
  return cols;
}

// One data row: its cells by column name, and errors that name its physical line and the column.
// An annotation row (ApplyRunAnnotations) requires no column: its blank cells change nothing.
class RowReader {
 public:
  RowReader(const Columns& cols, const std::vector<std::string>& row, int line,
            bool annotation = false)
      : cols_(cols), row_(row), line_(line), annotation_(annotation) {}

  absl::Status Bad(absl::string_view col, absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_, ", column ", col, ": ", why));
  }
  // The cell's text without surrounding blanks; "" for a blank or absent column.
  std::string Text(absl::string_view col) const {
    const std::string* v = cols_.Get(row_, col);
    return v == nullptr ? "" : std::string(absl::StripAsciiWhitespace(*v));
  }
  bool Has(absl::string_view col) const { return cols_.Has(col); }
  // An integer cell in [lo, hi] into *dst; a blank one leaves it unless required.
  template <typename T>
  absl::Status Int(absl::string_view col, bool required, int64_t lo, int64_t hi, T* dst) const {
    const std::string v = Text(col);
    if (v.empty()) return required ? Bad(col, "is required") : absl::OkStatus();
    int64_t x = 0;
    if (!absl::SimpleAtoi(v, &x)) return Bad(col, absl::StrCat("'", v, "' is not an integer"));
    if (x < lo || x > hi) return Bad(col, absl::StrCat(x, " is out of range [", lo, ", ", hi, "]"));
    *dst = static_cast<T>(x);
    return absl::OkStatus();
  }
  // The cell of a scenario field's column (its proto option's `csv`, model/field_rules_gen.h)
  // into *dst: an integer or a number within the field's proto range, a string, or a true/false;
  // a blank cell leaves *dst as it is, or is refused in a required column.
  template <typename T>
  absl::Status Field(const FieldRule& rule, T* dst) const {
    const absl::string_view col = rule.csv;
    const bool required = !annotation_ && IsRequired(col);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return Int(col, required, static_cast<int64_t>(rule.min), static_cast<int64_t>(rule.max),
                 dst);
    } else if constexpr (std::is_same_v<T, double>) {
      const std::string v = Text(col);
      if (v.empty()) return required ? Bad(col, "is required") : absl::OkStatus();
      if (!absl::SimpleAtod(v, dst) || !std::isfinite(*dst)) {
        return Bad(col, absl::StrCat("'", v, "' is not a number"));
      }
      if (!InRange(rule, *dst)) return Bad(col, OutOfRange(rule, *dst));
      return absl::OkStatus();
    } else if constexpr (std::is_same_v<T, std::string>) {
      std::string v = Text(col);
      if (v.empty()) return required ? Bad(col, "is required") : absl::OkStatus();
      *dst = std::move(v);
      return absl::OkStatus();
    } else if constexpr (std::is_same_v<T, std::optional<bool>> || std::is_same_v<T, bool>) {
      const std::string v = absl::AsciiStrToLower(Text(col));
      if (v.empty()) return required ? Bad(col, "is required") : absl::OkStatus();
      if (v == "true" || v == "1" || v == "yes") {
        *dst = true;
      } else if (v == "false" || v == "0" || v == "no") {
        *dst = false;
      } else {
        return Bad(col, absl::StrCat("'", v, "' is not true or false"));
      }
      return absl::OkStatus();
    } else {
      return absl::InternalError(absl::StrCat("column ", col, ": no CSV reader for its type"));
    }
  }

 private:
  const Columns& cols_;
  const std::vector<std::string>& row_;
  int line_;
  bool annotation_;
};

// Every column a scenario field's proto option names (`csv`) into its field, in the field's
// proto range; a blank or absent cell leaves the field. `skip` (the model's name in an annotation
// file, a key) is not read.
absl::Status ReadFieldColumns(const RowReader& r, Scenario* s, absl::string_view skip = "") {
  absl::Status cells;
  field_rules::VisitScenario(*s, [&](const FieldRule& rule, auto& v) {
    if (cells.ok() && *rule.csv != '\0' && rule.csv != skip) cells = r.Field(rule, &v);
  });
  return cells;
}

// The MLP column: a file without one (moe.csv) means gated (SwiGLU), as every model it holds
// but the squared-ReLU ones, which data/model-architecture.csv names.
absl::Status ReadMlp(const RowReader& r, ModelSpec* model) {
  if (!ParseMlp(r.Text("mlp"), &model->mlp)) {
    return r.Bad("mlp", absl::StrCat("'", r.Text("mlp"), "' is not ", KnownNames<Mlp>()));
  }
  if (model->mlp == Mlp::kUnspecified) {
    if (r.Has("mlp")) return r.Bad("mlp", "is required");
    model->mlp = Mlp::kGated;
  }
  return absl::OkStatus();
}

// A hybrid model's layer pattern: one of "M*-E" per layer.
absl::Status CheckLayerPattern(const RowReader& r, const ModelSpec& model) {
  const std::string& p = model.layer_pattern;
  if (p.empty()) return absl::OkStatus();
  if (static_cast<int>(p.size()) != model.layers) {
    return r.Bad("layer_pattern",
                 absl::StrCat(p.size(), " characters for ", model.layers, " layers"));
  }
  if (p.find_first_not_of("M*-E") != std::string::npos) {
    return r.Bad("layer_pattern", absl::StrCat("'", p, "' is not one of M*-E per layer"));
  }
  return absl::OkStatus();
}

// The scenario's columns (blank or absent MoE and MLA columns mean a dense GQA model), the MoE
// and attention checks, and the MLP.
absl::Status ReadShapeAndLayout(const RowReader& r, Scenario* s) {
  ModelSpec& model = s->workload.model;
  RETURN_IF_ERROR(ReadFieldColumns(r, s));
  RETURN_IF_ERROR(CheckLayerPattern(r, model));
  int dense_ffn = 0;  // moe.csv's width of the dense layers: ffn_hidden by another name
  RETURN_IF_ERROR(r.Int("dense_ffn_hidden", false, 0,
                        static_cast<int64_t>(field_rules::kModelSpecFfnHidden.max), &dense_ffn));
  if (model.ffn_hidden == 0) model.ffn_hidden = dense_ffn;
  if (model.moe.enabled()) {
    if (model.moe.experts_per_token < 1 || model.moe.experts_per_token > model.moe.num_experts) {
      return r.Bad("top_k", "must be in [1, num_experts] for an MoE run");
    }
    if (model.moe.expert_ffn_hidden < 1)
      return r.Bad("moe_ffn_hidden", "is required for an MoE run");
    // All layers MoE: the dense width is never used; keep the model shape complete.
    if (model.ffn_hidden == 0 && model.moe.dense_layers == 0) {
      model.ffn_hidden = model.moe.expert_ffn_hidden;
    }
  }
  if (model.ffn_hidden == 0) return r.Bad("ffn_hidden", "is required");
  const std::string attention = absl::AsciiStrToLower(r.Text("attention"));
  if (attention == "mla") {
    if (model.mla.kv_lora_rank < 1 || model.mla.v_head_dim < 1 ||
        model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim < 1) {
      return r.Bad("attention", "mla needs kv_lora_rank, qk_*_head_dim and v_head_dim");
    }
  } else if (!attention.empty() && attention != "gqa" && attention != "mha") {
    return r.Bad("attention", absl::StrCat("'", attention, "' is not mha, gqa or mla"));
  } else {
    model.mla = MlaSpec();
  }
  return ReadMlp(r, &model);
}

// The recompute column: "selective: core_attn" and "none (why)" name their kind first;
// "selective: mla_up_proj" or "selective: layernorm+moe_act" then name Megatron-Core's recompute
// modules.
absl::Status ReadRecompute(const RowReader& r, Parallelism* p) {
  const std::string text = r.Text("recompute");
  const size_t kind_end = text.find_first_of(" :(;");
  if (!ParseRecompute(text.substr(0, kind_end), &p->recompute)) {
    return r.Bad("recompute", absl::StrCat("'", text, "' is not ", KnownNames<Recompute>()));
  }
  if (kind_end != std::string::npos && text[kind_end] == ':' &&
      p->recompute == Recompute::kSelective) {
    std::string unknown;
    if (!ParseRecomputeModules(text.substr(kind_end + 1), &p->recompute_modules, &unknown)) {
      return r.Bad("recompute", absl::StrCat("'", unknown, "' is not a recompute module (",
                                             RecomputeModulesToString(~0u), ")"));
    }
  }
  return absl::OkStatus();
}

// The stack's named choices (read with the scenario's columns) are ones the model knows.
absl::Status CheckStackNames(const RowReader& r, const StackOptions& st) {
  Fp8Recipe recipe;
  if (!ParseFp8Recipe(st.fp8_recipe, &recipe)) {
    return r.Bad("fp8_recipe",
                 absl::StrCat("'", st.fp8_recipe, "' is not one of ", Fp8RecipeNames()));
  }
  AttentionKernel kernel;
  if (!ParseAttentionKernel(st.attention_kernel, &kernel)) {
    return r.Bad("attention_kernel", absl::StrCat("'", st.attention_kernel, "' is not one of ",
                                                  AttentionKernelNames()));
  }
  CpComm comm;
  if (!st.cp_comm_type.empty() && !ParseCpComm(st.cp_comm_type, &comm)) {
    return r.Bad("cp_comm_type",
                 absl::StrCat("'", st.cp_comm_type, "' is not one of ", CpCommNames()));
  }
  return absl::OkStatus();
}

absl::Status ReadSharding(const RowReader& r, Parallelism* p) {
  if (!ParseSharding(r.Text("sharding"), &p->sharding)) {
    return r.Bad("sharding",
                 absl::StrCat("'", r.Text("sharding"), "' is not ", KnownNames<Sharding>()));
  }
  return absl::OkStatus();
}

// Precision, sharding, recompute (with Megatron-Core's modules), the accelerator, the framework
// and the optional stack columns (a blank cell takes the framework's default).
absl::StatusOr<const Framework*> ReadStack(const RowReader& r, Scenario* s) {
  if (!ParsePrecision(r.Text("precision"), &s->workload.precision) ||
      s->workload.precision == Precision::kUnspecified) {
    return r.Bad("precision",
                 absl::StrCat("'", r.Text("precision"), "' is not ", KnownNames<Precision>()));
  }
  RETURN_IF_ERROR(ReadSharding(r, &s->parallelism));
  RETURN_IF_ERROR(ReadRecompute(r, &s->parallelism));
  const Framework* framework = FindFramework(r.Text("framework"));
  if (framework == nullptr) {
    return r.Bad("framework", UnknownFramework(r.Text("framework")));
  }
  s->framework = framework->name;
  RETURN_IF_ERROR(CheckStackNames(r, s->stack));
  return framework;
}

// What a blank sharding means in a run of the framework's release `version`: the framework's
// default, or plain data parallelism where the release predates it (Megatron-LM before its
// distributed optimizer: CapabilitiesAt).
Sharding ReleaseDefaultSharding(const Framework& framework, const std::string& version) {
  const Sharding d = framework.behaviour.default_sharding;
  if (d == Sharding::kUnspecified) return d;
  std::string note;
  const double date = ResolveRelease(framework, version, "", &note).date;
  const std::vector<Sharding>& offered = CapabilitiesAt(framework, date).shardings;
  return std::find(offered.begin(), offered.end(), d) != offered.end() ? d : Sharding::kDdp;
}

// What blank cells leave to the framework: its release's default sharding, HSDP's shard group,
// and the micro and global batch.
absl::Status CompleteBatch(const RowReader& r, const Framework& framework, Scenario* s) {
  Parallelism& p = s->parallelism;
  if (p.sharding == Sharding::kUnspecified) {
    p.sharding = ReleaseDefaultSharding(framework, s->stack.version);
  }
  if (p.sharding == Sharding::kHsdp && p.shard_group == 0) {
    // The README's HSDP rows shard within a node.
    p.shard_group = s->cluster.gpus_per_node > 0 ? s->cluster.gpus_per_node : 8;
  }
  if (p.micro_batch == 0 && p.pp > 1 && p.dp > 0 && s->workload.global_batch > 0 &&
      framework.behaviour.microbatches_equal_stages) {
    const int64_t local = s->workload.global_batch / p.dp;
    if (local % p.pp == 0) p.micro_batch = static_cast<int>(local / p.pp);
  }
  if (s->workload.global_batch == 0 && p.dp > 0) {
    const int64_t mb = p.micro_batch > 0 ? p.micro_batch : 1;
    s->workload.global_batch = p.dp * mb * (p.pp > 1 ? p.pp : 1);
    if (p.micro_batch == 0) p.micro_batch = 1;
  }
  if (s->workload.global_batch == 0) {
    return r.Bad("global_batch", "is blank and dp is blank: the batch is unknown");
  }
  return absl::OkStatus();
}

}  // namespace

MeasurementCsvReader::MeasurementCsvReader(absl::string_view text) : csv_(text) {}
MeasurementCsvReader::~MeasurementCsvReader() = default;

namespace {

// INVALID_ARGUMENT naming the first cell of `row` that is not valid UTF-8: by its column's name
// from the header (`header` null: by its number, 1-based).
absl::Status CheckUtf8(const std::vector<std::string>& row, const std::vector<std::string>* header,
                       int line) {
  for (size_t i = 0; i < row.size(); ++i) {
    const size_t bad = FirstInvalidUtf8(row[i]);
    if (bad == absl::string_view::npos) continue;
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(row[i][bad]));
    // A header name is shown only when it is text itself.
    const bool named = header != nullptr && i < header->size() &&
                       FirstInvalidUtf8((*header)[i]) == absl::string_view::npos;
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", line, ", column ",
        named ? std::string(absl::StripAsciiWhitespace((*header)[i])) : absl::StrCat(i + 1),
        ": not valid UTF-8 (byte ", byte, " at offset ", bad, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> MeasurementCsvReader::Next(Measurement* m, int* line) {
  if (cols_ == nullptr) {
    std::vector<std::string> header;
    int header_line = 1;
    ASSIGN_OR_RETURN(const bool any, csv_.Next(&header, &header_line));
    if (!any) return absl::InvalidArgumentError("line 1: empty file, no header row");
    RETURN_IF_ERROR(CheckUtf8(header, nullptr, header_line));
    Columns cols;
    ASSIGN_OR_RETURN(cols, ReadHeader(header));
    cols_ = std::make_unique<Columns>(std::move(cols));
    header_size_ = header.size();
    header_names_ = std::move(header);
  }
  ASSIGN_OR_RETURN(const bool more, csv_.Next(&row_, line));
  if (!more) return false;
  if (row_.size() != header_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", *line, ": ", row_.size(), " fields, the header has ", header_size_));
  }
  RETURN_IF_ERROR(CheckUtf8(row_, &header_names_, *line));
  const RowReader r(*cols_, row_, *line);
  *m = Measurement();
  RETURN_IF_ERROR(ReadShapeAndLayout(r, &m->scenario));
  const Framework* framework = nullptr;
  ASSIGN_OR_RETURN(framework, ReadStack(r, &m->scenario));
  const std::string tps = r.Text("tokens_per_s_per_gpu");
  if (!absl::SimpleAtod(tps, &m->tokens_per_s_per_gpu) || !std::isfinite(m->tokens_per_s_per_gpu) ||
      m->tokens_per_s_per_gpu <= 0) {
    return r.Bad("tokens_per_s_per_gpu", absl::StrCat("'", tps, "' is not a positive number"));
  }
  RETURN_IF_ERROR(CompleteBatch(r, *framework, &m->scenario));
  m->source = r.Text("source");
  // The run's id in its CSV: a file `scalecast measurements list --csv` wrote keeps it in csv_id
  // (its id column is the store's).
  const std::string csv_id = r.Text(kCsvIdLabel);
  if (const std::string id = csv_id.empty() ? r.Text("id") : csv_id; !id.empty()) {
    m->labels[kCsvIdLabel] = id;
  }
  if (const std::string note = r.Text(kNoteLabel); !note.empty()) m->labels[kNoteLabel] = note;
  return true;
}

absl::StatusOr<std::vector<Measurement>> ParseMeasurementsCsv(absl::string_view text,
                                                              std::vector<int>* lines) {
  MeasurementCsvReader reader(text);
  std::vector<Measurement> out;
  Measurement m;
  int line = 0;
  for (;;) {
    ASSIGN_OR_RETURN(const bool more, reader.Next(&m, &line));
    if (!more) break;
    out.push_back(std::move(m));
    if (lines != nullptr) lines->push_back(line);
  }
  return out;
}

namespace {

// One annotation row onto a run keyed by `key` ("id", "source" or "model"): the columns the
// measurements CSV reads, by the same rules, where the row fills them (the model's name, a key,
// is never read). A source-wide or model-wide fp8 recipe names how that source's fp8 runs scale;
// its bf16 and mxfp8 runs keep theirs.
absl::Status ApplyAnnotationRow(const RowReader& r, absl::string_view key, Scenario* s) {
  const std::string fp8_recipe = s->stack.fp8_recipe;
  const std::string version = s->stack.version;
  RETURN_IF_ERROR(ReadFieldColumns(r, s, "model"));
  // A release named here changes what the run's default sharding was, unless the row states one.
  const Framework* framework = FindFramework(s->framework);
  if (framework != nullptr && s->stack.version != version && r.Text("sharding").empty() &&
      s->parallelism.sharding == ReleaseDefaultSharding(*framework, version)) {
    s->parallelism.sharding = ReleaseDefaultSharding(*framework, s->stack.version);
  }
  RETURN_IF_ERROR(CheckStackNames(r, s->stack));
  if (key != "id" && s->workload.precision != Precision::kFp8) s->stack.fp8_recipe = fp8_recipe;
  if (!r.Text("sharding").empty()) RETURN_IF_ERROR(ReadSharding(r, &s->parallelism));
  if (!r.Text("recompute").empty()) RETURN_IF_ERROR(ReadRecompute(r, &s->parallelism));
  if (!r.Text("mlp").empty()) RETURN_IF_ERROR(ReadMlp(r, &s->workload.model));
  return CheckLayerPattern(r, s->workload.model);
}

}  // namespace

absl::Status ApplyRunAnnotations(absl::string_view csv_text, std::vector<Measurement>* runs) {
  absl::StatusOr<std::vector<std::vector<std::string>>> rows = ParseCsv(csv_text);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return absl::OkStatus();
  const Columns cols = Columns::FromHeader((*rows)[0]);
  // The key: a run's CSV id, its source, or its model name (the first column present).
  std::string key;
  for (const char* k : {"id", "source", "model"}) {
    if (cols.Has(k)) {
      key = k;
      break;
    }
  }
  if (key.empty())
    return absl::InvalidArgumentError("line 1, column id: missing (or source, model)");
  // Every row has the header's fields: an unquoted comma in a key would otherwise shift the row
  // so that its key matches no run and its facts are silently dropped.
  // (Lines are rows + 1, as in the errors below: annotation cells hold no line breaks.)
  std::map<std::string, size_t> by_key;
  for (size_t r = 1; r < rows->size(); ++r) {
    const std::vector<std::string>& row = (*rows)[r];
    if (row.size() != (*rows)[0].size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", r + 1, ": ", row.size(), " fields, the header has ", (*rows)[0].size()));
    }
    by_key[row[cols.index.at(key)]] = r;
  }
  for (Measurement& m : *runs) {
    std::string run_key;
    if (key == "id") {
      auto id = m.labels.find(kCsvIdLabel);
      if (id == m.labels.end()) continue;
      run_key = id->second;
    } else {
      run_key = key == "source" ? m.source : m.scenario.workload.model.name;
    }
    auto it = by_key.find(run_key);
    if (it == by_key.end()) continue;
    const RowReader r(cols, (*rows)[it->second], static_cast<int>(it->second) + 1,
                      /*annotation=*/true);
    RETURN_IF_ERROR(ApplyAnnotationRow(r, key, &m.scenario));
  }
  return absl::OkStatus();
}

absl::Status ValidateMeasurement(const Measurement& m, size_t index) {
  return ValidateMeasurement(m, absl::StrCat("measurements[", index, "]"));
}

namespace {

// The measured figures: each finite and in its range.
absl::Status CheckResults(const Measurement& m, absl::string_view path) {
  if (!std::isfinite(m.tokens_per_s_per_gpu) || m.tokens_per_s_per_gpu <= 0 ||
      m.tokens_per_s_per_gpu > kMaxTokensPerSPerGpu) {
    return FieldError(path, "", "tokens_per_s_per_gpu",
                      absl::StrCat("must be a finite number in (0, ", kMaxTokensPerSPerGpu,
                                   "], got ", m.tokens_per_s_per_gpu));
  }
  if (!std::isfinite(m.step_time_s) || m.step_time_s < 0 || m.step_time_s > kMaxStepTimeS) {
    return FieldError(
        path, "", "step_time_s",
        absl::StrCat("must be a finite number in [0, ", kMaxStepTimeS, "], got ", m.step_time_s));
  }
  if (!std::isfinite(m.watts_per_gpu) || m.watts_per_gpu < 0 || m.watts_per_gpu > kMaxWattsPerGpu) {
    return FieldError(path, "", "watts_per_gpu",
                      absl::StrCat("must be a finite number in [0, ", kMaxWattsPerGpu, "], got ",
                                   m.watts_per_gpu));
  }
  if (m.recorded_at_unix_ms < 0 || m.recorded_at_unix_ms > kMaxRecordedAtUnixMs) {
    return FieldError(
        path, "", "recorded_at",
        absl::StrCat("must be between 1970 and 9999, got ", m.recorded_at_unix_ms, " ms"));
  }
  return absl::OkStatus();
}

// The texts a store keeps (within their lengths, free of NUL bytes) and the MoE capacity factor
// (finite).
absl::Status CheckTexts(const Measurement& m, absl::string_view path) {
  if (m.id.size() > kMaxNameBytes) {
    return FieldError(path, "", "id", absl::StrCat("longer than ", kMaxNameBytes, " bytes"));
  }
  if (m.source.size() > kMaxSourceBytes) {
    return FieldError(path, "", "source", absl::StrCat("longer than ", kMaxSourceBytes, " bytes"));
  }
  const ModelSpec& model = m.scenario.workload.model;
  if (model.layer_pattern.size() > kMaxLayerPatternBytes) {
    return FieldError(path, "", "scenario.workload.model.layer_pattern",
                      absl::StrCat(model.layer_pattern.size(), " bytes, over the limit of ",
                                   kMaxLayerPatternBytes));
  }
  if (!std::isfinite(model.moe.capacity_factor)) {
    return FieldError(path, "", "scenario.workload.model.moe.capacity_factor",
                      "must be a finite number");
  }
  // PostgreSQL's text cuts a string at its first NUL byte (SQLite keeps it): a value stored in
  // a text column of its own would not read back as written, and is refused on both. (The
  // scenario's text escapes every byte: its label may hold one.)
  const Scenario& sc = m.scenario;
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{"id", &m.id},
                                     {"source", &m.source},
                                     {"scenario.framework", &sc.framework},
                                     {"scenario.cluster.accelerator", &sc.cluster.accelerator},
                                     {"scenario.workload.model.name", &model.name}}) {
    if (value->find('\0') != std::string::npos)
      return FieldError(path, "", field, "contains a NUL byte");
  }
  return absl::OkStatus();
}

// The labels: no NUL bytes, at most kMaxLabels, keys and values within their lengths.
absl::Status CheckLabels(const Measurement& m, absl::string_view path) {
  for (const auto& [k, v] : m.labels) {
    if (k.find('\0') != std::string::npos)
      return FieldError(path, "", "labels", "a key contains a NUL byte");
    if (v.find('\0') != std::string::npos) {
      return FieldError(path, "", absl::StrCat("labels[", k, "]"), "contains a NUL byte");
    }
  }
  if (m.labels.size() > kMaxLabels) {
    return FieldError(path, "", "labels",
                      absl::StrCat(m.labels.size(), " labels, over the limit of ", kMaxLabels));
  }
  for (const auto& [k, v] : m.labels) {
    if (k.empty()) return FieldError(path, "", "labels", "a label key is empty");
    if (k.size() > kMaxLabelKeyBytes) {
      return FieldError(path, "", "labels",
                        absl::StrCat("a key is longer than ", kMaxLabelKeyBytes, " bytes"));
    }
    if (const size_t max = k == kNoteLabel ? kMaxNoteBytes : kMaxLabelValueBytes; v.size() > max) {
      return FieldError(path, "", absl::StrCat("labels[", k, "]"),
                        absl::StrCat("longer than ", max, " bytes"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateMeasurement(const Measurement& m, absl::string_view path) {
  RETURN_IF_ERROR(CheckResults(m, path));
  RETURN_IF_ERROR(CheckTexts(m, path));
  if (FindFramework(m.scenario.framework) == nullptr) {
    return FieldError(path, "", "scenario.framework", UnknownFramework(m.scenario.framework));
  }
  return CheckLabels(m, path);
}

}  // namespace scalecast
