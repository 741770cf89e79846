#include "model/measurements.h"

#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/catalog.h"
#include "model/framework.h"

namespace scalecast {

absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(absl::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1, row_line = 1;
  auto end_field = [&] {
    row.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (field_started && !field.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line, ": stray quote in a field"));
      }
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_field();
      if (!(row.size() == 1 && row[0].empty())) rows.push_back(std::move(row));
      row.clear();
      ++line;
      row_line = line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(absl::StrCat("line ", row_line, ": unterminated quote"));
  }
  if (field_started || !row.empty()) {
    end_field();
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

struct Columns {
  std::map<std::string, size_t> index;
  const std::string* Get(const std::vector<std::string>& row, absl::string_view name) const {
    auto it = index.find(std::string(name));
    if (it == index.end() || it->second >= row.size()) return nullptr;
    return &row[it->second];
  }
};

}  // namespace

absl::StatusOr<std::vector<Measurement>> ParseMeasurementsCsv(absl::string_view text) {
  absl::StatusOr<std::vector<std::vector<std::string>>> parsed = ParseCsv(text);
  if (!parsed.ok()) return parsed.status();
  const auto& rows = *parsed;
  if (rows.empty()) return absl::InvalidArgumentError("line 1: empty file, no header row");
  Columns cols;
  for (size_t i = 0; i < rows[0].size(); ++i) {
    cols.index[std::string(absl::StripAsciiWhitespace(rows[0][i]))] = i;
  }
  static const char* kRequired[] = {
      "framework", "layers",      "hidden",   "heads",     "vocab",
      "seq_len",   "accelerator", "num_gpus", "precision", "tokens_per_s_per_gpu"};
  for (const char* c : kRequired) {
    if (cols.index.count(c) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("line 1, column ", c, ": missing from header"));
    }
  }
  // A dense file names the FFN width ffn_hidden; an MoE file (moe.csv) names the experts' and
  // the dense layers' widths.
  if (cols.index.count("ffn_hidden") == 0 && cols.index.count("num_experts") == 0) {
    return absl::InvalidArgumentError(
        "line 1, column ffn_hidden: missing from header (and no num_experts column)");
  }
  std::vector<Measurement> out;
  // Physical line numbers: a quoted field may span lines, so count newlines as we go.
  int line = 1;
  for (size_t r = 1; r < rows.size(); ++r) {
    ++line;
    const std::vector<std::string>& row = rows[r];
    int extra_lines = 0;
    for (const std::string& f : row) {
      for (char ch : f) extra_lines += ch == '\n';
    }
    if (row.size() != rows[0].size()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", row.size(),
                                                     " fields, the header has ", rows[0].size()));
    }
    auto bad = [&](absl::string_view col, absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line, ", column ", col, ": ", why));
    };
    auto text_of = [&](absl::string_view col) -> std::string {
      const std::string* v = cols.Get(row, col);
      return v == nullptr ? "" : std::string(absl::StripAsciiWhitespace(*v));
    };
    // Integer cell; blank gives `blank` unless required.
    auto int_of = [&](absl::string_view col, bool required, int64_t lo, int64_t hi,
                      int64_t* out_value) -> absl::Status {
      const std::string v = text_of(col);
      if (v.empty()) {
        if (required) return bad(col, "is required");
        *out_value = 0;
        return absl::OkStatus();
      }
      int64_t x = 0;
      if (!absl::SimpleAtoi(v, &x)) return bad(col, absl::StrCat("'", v, "' is not an integer"));
      if (x < lo || x > hi)
        return bad(col, absl::StrCat(x, " is out of range [", lo, ", ", hi, "]"));
      *out_value = x;
      return absl::OkStatus();
    };
    Measurement m;
    Scenario& s = m.scenario;
    int64_t v = 0;
#define SC_INT(col, req, lo, hi, dst)                                      \
  if (absl::Status st = int_of(col, req, lo, hi, &v); !st.ok()) return st; \
  dst = static_cast<decltype(dst)>(v)
    SC_INT("layers", true, 1, 4096, s.workload.model.layers);
    SC_INT("hidden", true, 1, 1 << 20, s.workload.model.hidden);
    SC_INT("heads", true, 1, 16384, s.workload.model.heads);
    SC_INT("kv_heads", false, 0, 16384, s.workload.model.kv_heads);
    SC_INT("ffn_hidden", false, 1, 1 << 24, s.workload.model.ffn_hidden);
    SC_INT("vocab", true, 1, 1 << 24, s.workload.model.vocab);
    SC_INT("seq_len", true, 1, 1 << 22, s.workload.seq_len);
    SC_INT("num_gpus", true, 1, 1 << 20, s.cluster.num_gpus);
    SC_INT("gpus_per_node", false, 0, 1024, s.cluster.gpus_per_node);
    SC_INT("tp", false, 0, 1 << 20, s.parallelism.tp);
    SC_INT("pp", false, 0, 1 << 20, s.parallelism.pp);
    SC_INT("vpp", false, 0, 4096, s.parallelism.vpp);
    SC_INT("cp", false, 0, 1 << 20, s.parallelism.cp);
    SC_INT("dp", false, 0, 1 << 20, s.parallelism.dp);
    SC_INT("micro_batch", false, 0, int64_t{1} << 32, s.parallelism.micro_batch);
    SC_INT("global_batch", false, 0, int64_t{1} << 32, s.workload.global_batch);
    // Mixture-of-experts and attention columns (moe.csv); blank or absent = dense, GQA.
    ModelSpec& model = s.workload.model;
    SC_INT("num_experts", false, 0, 4096, model.moe.num_experts);
    SC_INT("top_k", false, 0, 4096, model.moe.experts_per_token);
    SC_INT("moe_ffn_hidden", false, 0, 1 << 24, model.moe.expert_ffn_hidden);
    SC_INT("shared_experts", false, 0, 4096, model.moe.shared_experts);
    SC_INT("shared_ffn_hidden", false, 0, 1 << 24, model.moe.shared_ffn_hidden);
    SC_INT("dense_layers", false, 0, 4096, model.moe.dense_layers);
    int dense_ffn = 0;
    SC_INT("dense_ffn_hidden", false, 0, 1 << 24, dense_ffn);
    SC_INT("head_dim", false, 0, 1 << 16, model.head_dim);
    SC_INT("q_lora_rank", false, 0, 1 << 20, model.mla.q_lora_rank);
    SC_INT("kv_lora_rank", false, 0, 1 << 20, model.mla.kv_lora_rank);
    SC_INT("qk_nope_head_dim", false, 0, 1 << 16, model.mla.qk_nope_head_dim);
    SC_INT("qk_rope_head_dim", false, 0, 1 << 16, model.mla.qk_rope_head_dim);
    SC_INT("v_head_dim", false, 0, 1 << 16, model.mla.v_head_dim);
    SC_INT("mtp_layers", false, 0, kMaxMtpLayers, model.mtp_layers);
    SC_INT("ep", false, 0, 1 << 20, s.parallelism.ep);
    SC_INT("etp", false, 0, 1 << 20, s.parallelism.etp);
#undef SC_INT
    if (model.ffn_hidden == 0) model.ffn_hidden = dense_ffn;
    if (model.moe.enabled()) {
      if (model.moe.experts_per_token < 1 || model.moe.experts_per_token > model.moe.num_experts) {
        return bad("top_k", "must be in [1, num_experts] for an MoE run");
      }
      if (model.moe.expert_ffn_hidden < 1)
        return bad("moe_ffn_hidden", "is required for an MoE run");
      // All layers MoE: the dense width is never used; keep the model shape complete.
      if (model.ffn_hidden == 0 && model.moe.dense_layers == 0) {
        model.ffn_hidden = model.moe.expert_ffn_hidden;
      }
    }
    if (model.ffn_hidden == 0) return bad("ffn_hidden", "is required");
    const std::string attention = absl::AsciiStrToLower(text_of("attention"));
    if (attention == "mla") {
      if (model.mla.kv_lora_rank < 1 || model.mla.v_head_dim < 1 ||
          model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim < 1) {
        return bad("attention", "mla needs kv_lora_rank, qk_*_head_dim and v_head_dim");
      }
    } else if (!attention.empty() && attention != "gqa" && attention != "mha") {
      return bad("attention", absl::StrCat("'", attention, "' is not mha, gqa or mla"));
    } else {
      model.mla = MlaSpec();
    }
    s.workload.model.name = text_of("model");
    // A file without an mlp column (moe.csv) means gated (SwiGLU), as every model it holds
    // but the squared-ReLU ones, which data/model-architecture.csv names.
    if (!ParseMlp(text_of("mlp"), &s.workload.model.mlp)) {
      return bad("mlp", absl::StrCat("'", text_of("mlp"), "' is not gated or plain"));
    }
    if (s.workload.model.mlp == Mlp::kUnspecified) {
      if (cols.index.count("mlp") != 0) return bad("mlp", "is required");
      s.workload.model.mlp = Mlp::kGated;
    }
    if (!ParsePrecision(text_of("precision"), &s.workload.precision) ||
        s.workload.precision == Precision::kUnspecified) {
      return bad("precision", absl::StrCat("'", text_of("precision"),
                                           "' is not bf16, fp16, fp8, mxfp8 or nvfp4"));
    }
    if (!ParseSharding(text_of("sharding"), &s.parallelism.sharding)) {
      return bad("sharding", absl::StrCat("'", text_of("sharding"),
                                          "' is not ddp, zero1, zero2, fsdp or hsdp"));
    }
    // "selective: core_attn" and "none (why)" name their kind first; "selective: mla_up_proj"
    // or "selective: layernorm+moe_act" then name Megatron-Core's recompute modules.
    const std::string recompute_text = text_of("recompute");
    const size_t kind_end = recompute_text.find_first_of(" :(;");
    if (!ParseRecompute(recompute_text.substr(0, kind_end), &s.parallelism.recompute)) {
      return bad("recompute",
                 absl::StrCat("'", recompute_text, "' is not none, selective or full"));
    }
    if (kind_end != std::string::npos && recompute_text[kind_end] == ':' &&
        s.parallelism.recompute == Recompute::kSelective) {
      std::string unknown;
      if (!ParseRecomputeModules(recompute_text.substr(kind_end + 1),
                                 &s.parallelism.recompute_modules, &unknown)) {
        return bad("recompute", absl::StrCat("'", unknown, "' is not a recompute module (",
                                             RecomputeModulesToString(~0u), ")"));
      }
    }
    s.cluster.accelerator = text_of("accelerator");
    if (s.cluster.accelerator.empty()) return bad("accelerator", "is required");
    const Framework* framework = FindFramework(text_of("framework"));
    if (framework == nullptr) {
      return bad("framework", absl::StrCat("unknown framework '", text_of("framework"),
                                           "' (known: ", FrameworkNames(), ")"));
    }
    s.framework = framework->name;
    // Optional stack columns: a blank cell takes the framework's default.
    StackOptions& st = s.stack;
    st.version = text_of("framework_version");
    st.fp8_recipe = text_of("fp8_recipe");
    st.attention_kernel = text_of("attention_kernel");
    Fp8Recipe recipe;
    if (!ParseFp8Recipe(st.fp8_recipe, &recipe)) {
      return bad("fp8_recipe", absl::StrCat("'", st.fp8_recipe,
                                            "' is not delayed, tensorwise, "
                                            "rowwise, blockwise, mxfp8 or nvfp4"));
    }
    AttentionKernel kernel;
    if (!ParseAttentionKernel(st.attention_kernel, &kernel)) {
      return bad("attention_kernel",
                 absl::StrCat("'", st.attention_kernel, "' is not math, fa2, fa3, cudnn or sdpa"));
    }
    for (auto [col, slot] :
         {std::pair{"compiled", &st.compiled}, std::pair{"tp_comm_overlap", &st.tp_comm_overlap},
          std::pair{"dp_overlap", &st.dp_overlap}, std::pair{"cuda_graphs", &st.cuda_graphs}}) {
      const std::string v = absl::AsciiStrToLower(text_of(col));
      if (v.empty()) continue;
      if (v == "true" || v == "1" || v == "yes") {
        *slot = true;
      } else if (v == "false" || v == "0" || v == "no") {
        *slot = false;
      } else {
        return bad(col, absl::StrCat("'", v, "' is not true or false"));
      }
    }
    const std::string tps = text_of("tokens_per_s_per_gpu");
    if (!absl::SimpleAtod(tps, &m.tokens_per_s_per_gpu) || !std::isfinite(m.tokens_per_s_per_gpu) ||
        m.tokens_per_s_per_gpu <= 0) {
      return bad("tokens_per_s_per_gpu", absl::StrCat("'", tps, "' is not a positive number"));
    }
    Parallelism& p = s.parallelism;
    if (p.sharding == Sharding::kUnspecified) p.sharding = framework->behaviour.default_sharding;
    if (p.sharding == Sharding::kHsdp && p.shard_group == 0) {
      // The README's HSDP rows shard within a node.
      p.shard_group = s.cluster.gpus_per_node > 0 ? s.cluster.gpus_per_node : 8;
    }
    if (p.micro_batch == 0 && p.pp > 1 && p.dp > 0 && s.workload.global_batch > 0 &&
        framework->behaviour.microbatches_equal_stages) {
      const int64_t local = s.workload.global_batch / p.dp;
      if (local % p.pp == 0) p.micro_batch = static_cast<int>(local / p.pp);
    }
    if (s.workload.global_batch == 0 && p.dp > 0) {
      const int64_t mb = p.micro_batch > 0 ? p.micro_batch : 1;
      s.workload.global_batch = p.dp * mb * (p.pp > 1 ? p.pp : 1);
      if (p.micro_batch == 0) p.micro_batch = 1;
    }
    if (s.workload.global_batch == 0) {
      return bad("global_batch", "is blank and dp is blank: the batch is unknown");
    }
    m.source = text_of("source");
    if (const std::string id = text_of("id"); !id.empty()) m.labels["csv_id"] = id;
    if (const std::string note = text_of("note"); !note.empty()) m.labels["note"] = note;
    out.push_back(std::move(m));
    line += extra_lines;
  }
  return out;
}

absl::Status ApplyRunAnnotations(absl::string_view csv_text, std::vector<Measurement>* runs) {
  absl::StatusOr<std::vector<std::vector<std::string>>> rows = ParseCsv(csv_text);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return absl::OkStatus();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < (*rows)[0].size(); ++i) col[(*rows)[0][i]] = i;
  // The key: a run's CSV id, its source, or its model name (the first column present).
  std::string key;
  for (const char* k : {"id", "source", "model"}) {
    if (col.count(k) != 0) {
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
    by_key[row[col[key]]] = r;
  }
  for (Measurement& m : *runs) {
    std::string run_key;
    if (key == "id") {
      auto id = m.labels.find("csv_id");
      if (id == m.labels.end()) continue;
      run_key = id->second;
    } else {
      run_key = key == "source" ? m.source : m.scenario.workload.model.name;
    }
    auto it = by_key.find(run_key);
    if (it == by_key.end()) continue;
    const std::vector<std::string>& row = (*rows)[it->second];
    auto cell = [&](const char* name) -> std::string {
      auto c = col.find(name);
      return c == col.end() || c->second >= row.size() ? "" : row[c->second];
    };
    auto bad = [&](const char* name) {
      return absl::InvalidArgumentError(absl::StrCat("line ", it->second + 1, ", column ", name,
                                                     ": '", cell(name), "' is not valid"));
    };
    StackOptions& st = m.scenario.stack;
    if (const std::string v = cell("framework_version"); !v.empty()) st.version = v;
    ModelSpec& model = m.scenario.workload.model;
    for (auto [name, slot] :
         {std::pair{"compiled", &st.compiled}, std::pair{"tp_comm_overlap", &st.tp_comm_overlap},
          std::pair{"dp_overlap", &st.dp_overlap}, std::pair{"cuda_graphs", &st.cuda_graphs},
          std::pair{"fused_dispatch", &st.fused_dispatch},
          std::pair{"ep_comm_overlap", &st.ep_comm_overlap},
          std::pair{"bf16_grads", &st.bf16_grads}}) {
      const std::string v = cell(name);
      if (v.empty()) continue;
      if (v != "true" && v != "false") return bad(name);
      *slot = v == "true";
    }
    // Plain true/false facts of the model: how the benchmark routed, and its architecture.
    for (auto [name, slot] : {std::pair{"force_balance", &model.moe.force_balance},
                              std::pair{"expert_bias", &model.moe.expert_bias}}) {
      const std::string v = cell(name);
      if (v.empty()) continue;
      if (v != "true" && v != "false") return bad(name);
      *slot = v == "true";
    }
    if (const std::string v = cell("capacity_factor"); !v.empty()) {
      double cf = 0;
      if (!absl::SimpleAtod(v, &cf) || !(cf >= 0) || cf > 64) return bad("capacity_factor");
      model.moe.capacity_factor = cf;
    }
    Fp8Recipe recipe;
    if (const std::string v = cell("fp8_recipe"); !v.empty()) {
      if (!ParseFp8Recipe(v, &recipe)) return bad("fp8_recipe");
      // A source-wide recipe names how that source's fp8 runs scale; its bf16 and mxfp8 runs
      // keep theirs.
      if (key == "id" || m.scenario.workload.precision == Precision::kFp8) st.fp8_recipe = v;
    }
    AttentionKernel kernel;
    if (const std::string v = cell("attention_kernel"); !v.empty()) {
      if (!ParseAttentionKernel(v, &kernel)) return bad("attention_kernel");
      st.attention_kernel = v;
    }
    if (const std::string v = cell("recompute"); !v.empty()) {
      if (!ParseRecompute(v, &m.scenario.parallelism.recompute)) return bad("recompute");
    }
    // Architecture facts a measurement file leaves out (data/model-architecture.csv).
    if (const std::string v = cell("mlp"); !v.empty()) {
      if (!ParseMlp(v, &model.mlp) || model.mlp == Mlp::kUnspecified) return bad("mlp");
    }
    for (auto [name, slot] :
         {std::pair{"head_dim", &model.head_dim}, std::pair{"mamba_heads", &model.mamba_heads},
          std::pair{"mamba_head_dim", &model.mamba_head_dim},
          std::pair{"mamba_state", &model.mamba_state},
          std::pair{"mamba_groups", &model.mamba_groups},
          std::pair{"attention_window", &model.attention_window},
          std::pair{"full_attention_every", &model.full_attention_every},
          std::pair{"mtp_layers", &model.mtp_layers}, std::pair{"etp", &m.scenario.parallelism.etp},
          std::pair{"first_stage_layers", &m.scenario.parallelism.first_stage_layers},
          std::pair{"last_stage_layers", &m.scenario.parallelism.last_stage_layers}}) {
      const std::string v = cell(name);
      if (v.empty()) continue;
      int x = 0;
      if (!absl::SimpleAtoi(v, &x) || x < 0 || x > (1 << 24)) return bad(name);
      *slot = x;
    }
    if (const std::string v = cell("layer_pattern"); !v.empty()) {
      if (static_cast<int>(v.size()) != model.layers ||
          v.find_first_not_of("M*-E") != std::string::npos) {
        return bad("layer_pattern");
      }
      model.layer_pattern = v;
    }
  }
  return absl::OkStatus();
}

}  // namespace scalecast
