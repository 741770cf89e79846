#include "storage/scenario_codec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace scalecast {
namespace {

// v2 added the stack, the uneven pipeline split and an unset sequence_parallel; v3 the
// mixture-of-experts, latent-attention, head-width, local-attention and hybrid model fields and
// ep/etp; v4 stack.bf16_grads and parallelism.recompute_modules; v5 model.moe.expert_bias; v6
// model.mtp_layers; v7 model.tie_embeddings, model.moe.latent_size and the group-limited
// routing (model.moe.router_groups, router_group_topk); v8 parallelism.recompute_layers; v9
// stack.fp8_param_gather; v10 parallelism.cpu_offload_layers; v11 cluster.in_network_reduction;
// v12 stack.full_step_graph; v13 stack.fp8_attention; v14 stack.fp32_params; v15
// stack.fused_kernels; v16 cluster.inter_node_latency_us; v17 stack.cp_comm_type; v18
// parallelism.cp_a2a.
// Older text (without those fields) still decodes, the fields left 0 (unset). kVersionTags[v] is
// version v's tag; the last is the newest.
constexpr absl::string_view kVersionTags[] = {"",
                                              "scenario.v1",
                                              "scenario.v2",
                                              "scenario.v3",
                                              "scenario.v4",
                                              "scenario.v5",
                                              "scenario.v6",
                                              "scenario.v7",
                                              "scenario.v8",
                                              "scenario.v9",
                                              "scenario.v10",
                                              "scenario.v11",
                                              "scenario.v12",
                                              "scenario.v13",
                                              "scenario.v14",
                                              "scenario.v15",
                                              "scenario.v16",
                                              "scenario.v17",
                                              "scenario.v18"};
constexpr int kVersion = static_cast<int>(std::size(kVersionTags)) - 1;

// The largest value of each enum; a decoded value above it is corrupt.
constexpr int kMaxMlp = MaxEnumValue<Mlp>();
constexpr int kMaxPrecision = MaxEnumValue<Precision>();
constexpr int kMaxSharding = MaxEnumValue<Sharding>();
constexpr int kMaxRecompute = MaxEnumValue<Recompute>();

// The one list of fields, shared by encoder and decoder so that they cannot drift apart, and by
// the choice of the version to write (VersionNeeded). S is Scenario (decoding) or const Scenario
// (encoding). Adding a field to Scenario means adding it here, in a new section (`v.Section(9,
// version)`) with its tag in kVersionTags, so that older text still decodes; nothing else.
template <typename S, typename Visitor>
void VisitFields(S& s, Visitor& v, int version) {
  auto& m = s.workload.model;
  v.String("model.name", m.name);
  v.Int("model.layers", m.layers);
  v.Int("model.hidden", m.hidden);
  v.Int("model.heads", m.heads);
  v.Int("model.kv_heads", m.kv_heads);
  v.Int("model.ffn_hidden", m.ffn_hidden);
  v.Enum("model.mlp", m.mlp, kMaxMlp);
  v.Int("model.vocab", m.vocab);
  v.Int("workload.seq_len", s.workload.seq_len);
  v.Int("workload.global_batch", s.workload.global_batch);
  v.Enum("workload.precision", s.workload.precision, kMaxPrecision);
  v.String("cluster.accelerator", s.cluster.accelerator);
  v.Int("cluster.num_gpus", s.cluster.num_gpus);
  v.Int("cluster.gpus_per_node", s.cluster.gpus_per_node);
  v.Double("cluster.inter_node_gbps_per_gpu", s.cluster.inter_node_gbps_per_gpu);
  auto& p = s.parallelism;
  v.Int("parallelism.tp", p.tp);
  v.Int("parallelism.pp", p.pp);
  v.Int("parallelism.vpp", p.vpp);
  v.Int("parallelism.cp", p.cp);
  v.Int("parallelism.dp", p.dp);
  v.Enum("parallelism.sharding", p.sharding, kMaxSharding);
  v.Int("parallelism.shard_group", p.shard_group);
  v.Int("parallelism.micro_batch", p.micro_batch);
  v.Enum("parallelism.recompute", p.recompute, kMaxRecompute);
  v.OptBool("parallelism.sequence_parallel", p.sequence_parallel, version >= 2);
  v.String("framework", s.framework);
  v.String("calibration", s.calibration);
  v.String("label", s.label);
  if (!v.Section(2, version)) return;
  v.Int("parallelism.first_stage_layers", p.first_stage_layers);
  v.Int("parallelism.last_stage_layers", p.last_stage_layers);
  v.Bool("parallelism.embedding_in_split", p.embedding_in_split);
  v.Bool("parallelism.loss_in_split", p.loss_in_split);
  auto& st = s.stack;
  v.String("stack.version", st.version);
  v.OptBool("stack.tp_comm_overlap", st.tp_comm_overlap, true);
  v.OptBool("stack.dp_overlap", st.dp_overlap, true);
  v.String("stack.fp8_recipe", st.fp8_recipe);
  v.String("stack.attention_kernel", st.attention_kernel);
  v.OptBool("stack.cuda_graphs", st.cuda_graphs, true);
  v.OptBool("stack.compiled", st.compiled, true);
  if (!v.Section(3, version)) return;
  v.Int("model.head_dim", m.head_dim);
  v.Int("model.moe.num_experts", m.moe.num_experts);
  v.Int("model.moe.experts_per_token", m.moe.experts_per_token);
  v.Int("model.moe.expert_ffn_hidden", m.moe.expert_ffn_hidden);
  v.Int("model.moe.shared_experts", m.moe.shared_experts);
  v.Int("model.moe.shared_ffn_hidden", m.moe.shared_ffn_hidden);
  v.Int("model.moe.dense_layers", m.moe.dense_layers);
  v.Double("model.moe.capacity_factor", m.moe.capacity_factor);
  v.Int("model.mla.q_lora_rank", m.mla.q_lora_rank);
  v.Int("model.mla.kv_lora_rank", m.mla.kv_lora_rank);
  v.Int("model.mla.qk_nope_head_dim", m.mla.qk_nope_head_dim);
  v.Int("model.mla.qk_rope_head_dim", m.mla.qk_rope_head_dim);
  v.Int("model.mla.v_head_dim", m.mla.v_head_dim);
  v.Int("model.attention_window", m.attention_window);
  v.Int("model.full_attention_every", m.full_attention_every);
  v.String("model.layer_pattern", m.layer_pattern);
  v.Int("model.mamba_heads", m.mamba_heads);
  v.Int("model.mamba_head_dim", m.mamba_head_dim);
  v.Int("model.mamba_state", m.mamba_state);
  v.Int("model.mamba_groups", m.mamba_groups);
  v.Int("parallelism.ep", p.ep);
  v.Bool("model.moe.force_balance", m.moe.force_balance);
  v.OptBool("stack.fused_dispatch", st.fused_dispatch, true);
  v.OptBool("stack.ep_comm_overlap", st.ep_comm_overlap, true);
  v.Int("parallelism.etp", p.etp);
  if (!v.Section(4, version)) return;
  v.OptBool("stack.bf16_grads", st.bf16_grads, true);
  v.Int("parallelism.recompute_modules", p.recompute_modules);
  if (!v.Section(5, version)) return;
  v.Bool("model.moe.expert_bias", m.moe.expert_bias);
  if (!v.Section(6, version)) return;
  v.Int("model.mtp_layers", m.mtp_layers);
  if (!v.Section(7, version)) return;
  v.Bool("model.tie_embeddings", m.tie_embeddings);
  v.Int("model.moe.latent_size", m.moe.latent_size);
  v.Int("model.moe.router_groups", m.moe.router_groups);
  v.Int("model.moe.router_group_topk", m.moe.router_group_topk);
  if (!v.Section(8, version)) return;
  v.Int("parallelism.recompute_layers", p.recompute_layers);
  if (!v.Section(9, version)) return;
  v.OptBool("stack.fp8_param_gather", st.fp8_param_gather, true);
  if (!v.Section(10, version)) return;
  v.Int("parallelism.cpu_offload_layers", p.cpu_offload_layers);
  if (!v.Section(11, version)) return;
  v.Bool("cluster.in_network_reduction", s.cluster.in_network_reduction);
  if (!v.Section(12, version)) return;
  v.OptBool("stack.full_step_graph", st.full_step_graph, true);
  if (!v.Section(13, version)) return;
  v.OptBool("stack.fp8_attention", st.fp8_attention, true);
  if (!v.Section(14, version)) return;
  v.OptBool("stack.fp32_params", st.fp32_params, true);
  if (!v.Section(15, version)) return;
  v.OptBool("stack.fused_kernels", st.fused_kernels, true);
  if (!v.Section(16, version)) return;
  v.Double("cluster.inter_node_latency_us", s.cluster.inter_node_latency_us);
  if (!v.Section(17, version)) return;
  v.String("stack.cp_comm_type", st.cp_comm_type);
  if (!v.Section(18, version)) return;
  v.Int("parallelism.cp_a2a", p.cp_a2a);
}

bool IsRawByte(unsigned char c) {
  return c >= 0x20 && c <= 0x7e && c != '%' && c != ';' && c != '=';
}

void AppendEscaped(absl::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsRawByte(c)) {
      out->push_back(ch);
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xf]);
    }
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lower case is not canonical
}

bool Unescape(absl::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size()) return false;
      const int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (IsRawByte(c)) {
      out->push_back(s[i]);
    } else {
      return false;
    }
  }
  return true;
}

// The sections of VisitFields a version carries: those up to it.
bool Carries(int since, int version) { return version >= since; }

// The oldest version that carries every field a scenario sets (differs from its default): the
// newest section of VisitFields with a set field, and v2 at least (what servers have written since
// v2). A dense scenario is thus v2 text, byte for byte what an older server wrote.
class VersionNeeded {
 public:
  bool Section(int since, int /*version*/) {
    section_ = since;
    return true;
  }
  void String(absl::string_view, const std::string& v) { Set(!v.empty()); }
  template <typename T>
  void Int(absl::string_view, const T& v) {
    Set(v != 0);
  }
  template <typename E>
  void Enum(absl::string_view, const E& v, int) {
    Set(static_cast<int>(v) != 0);
  }
  // -0 and NaN are set: older text could not carry them either.
  void Double(absl::string_view, const double& v) { Set(!(v == 0 && !std::signbit(v))); }
  void Bool(absl::string_view, const bool& v) { Set(v); }
  void OptBool(absl::string_view, const std::optional<bool>& v, bool) { Set(v.has_value()); }
  int version() const { return version_; }

 private:
  void Set(bool set) {
    if (set) version_ = std::max(version_, section_);
  }
  int section_ = 1;
  int version_ = 2;
};

class Encoder {
 public:
  explicit Encoder(std::string* out) : out_(out) {}
  bool Section(int since, int version) const { return Carries(since, version); }

  void String(absl::string_view key, const std::string& v) {
    Key(key);
    AppendEscaped(v, out_);
  }
  template <typename T>
  void Int(absl::string_view key, const T& v) {
    Key(key);
    absl::StrAppend(out_, v);
  }
  template <typename E>
  void Enum(absl::string_view key, const E& v, int /*max*/) {
    Key(key);
    absl::StrAppend(out_, static_cast<int>(v));
  }
  void Double(absl::string_view key, const double& v) {
    Key(key);
    absl::StrAppend(out_, absl::StrFormat("%.17g", v));
  }
  void Bool(absl::string_view key, const bool& v) {
    Key(key);
    out_->push_back(v ? '1' : '0');
  }
  // Unset is written as an empty value where `may_be_unset`, else as false.
  void OptBool(absl::string_view key, const std::optional<bool>& v, bool may_be_unset) {
    Key(key);
    if (v.has_value() || !may_be_unset) out_->push_back(v.value_or(false) ? '1' : '0');
  }

 private:
  void Key(absl::string_view key) { absl::StrAppend(out_, ";", key, "="); }

  std::string* out_;
};

class Decoder {
 public:
  explicit Decoder(std::vector<std::pair<absl::string_view, absl::string_view>> fields)
      : fields_(std::move(fields)) {}
  bool Section(int since, int version) const { return Carries(since, version); }

  void String(absl::string_view key, std::string& v) {
    absl::string_view raw;
    if (!Next(key, &raw)) return;
    if (!Unescape(raw, &v)) Fail(key, "bad escape");
  }
  template <typename T>
  void Int(absl::string_view key, T& v) {
    absl::string_view raw;
    if (!Next(key, &raw)) return;
    if (!absl::SimpleAtoi(raw, &v)) Fail(key, "not an integer");
  }
  template <typename E>
  void Enum(absl::string_view key, E& v, int max) {
    absl::string_view raw;
    if (!Next(key, &raw)) return;
    int i = 0;
    if (!absl::SimpleAtoi(raw, &i) || i < 0 || i > max) {
      Fail(key, absl::StrCat("not an enum value in [0, ", max, "]"));
      return;
    }
    v = static_cast<E>(i);
  }
  void Double(absl::string_view key, double& v) {
    absl::string_view raw;
    if (!Next(key, &raw)) return;
    if (!absl::SimpleAtod(raw, &v)) Fail(key, "not a number");
  }
  void Bool(absl::string_view key, bool& v) {
    absl::string_view raw;
    if (!Next(key, &raw)) return;
    if (raw != "0" && raw != "1") Fail(key, "not 0 or 1");
    v = raw == "1";
  }
  void OptBool(absl::string_view key, std::optional<bool>& v, bool may_be_unset) {
    absl::string_view raw;
    if (!Next(key, &raw)) return;
    if (raw.empty() && may_be_unset) {
      v.reset();
      return;
    }
    if (raw != "0" && raw != "1") Fail(key, may_be_unset ? "not 0, 1 or empty" : "not 0 or 1");
    v = raw == "1";
  }

  // OK when every field was read and nothing is left over.
  std::string Finish() {
    if (error_.empty() && next_ != fields_.size()) {
      error_ = absl::StrCat("unexpected field '", fields_[next_].first, "'");
    }
    return error_;
  }

 private:
  bool Next(absl::string_view key, absl::string_view* raw) {
    if (!error_.empty()) return false;
    if (next_ >= fields_.size()) {
      error_ = absl::StrCat("missing field '", key, "'");
      return false;
    }
    const auto& [k, v] = fields_[next_++];
    if (k != key) {
      error_ = absl::StrCat("expected field '", key, "', found '", k, "'");
      return false;
    }
    *raw = v;
    return true;
  }
  void Fail(absl::string_view key, absl::string_view why) {
    if (error_.empty()) error_ = absl::StrCat(key, ": ", why);
  }

  std::vector<std::pair<absl::string_view, absl::string_view>> fields_;
  size_t next_ = 0;
  std::string error_;
};

absl::Status Corrupt(absl::string_view why) {
  return absl::InternalError(absl::StrCat("corrupt stored scenario: ", why));
}

}  // namespace

namespace {

std::string Encode(const Scenario& s, int version) {
  std::string out(kVersionTags[std::clamp(version, 1, kVersion)]);
  Encoder encoder(&out);
  VisitFields(s, encoder, version);
  return out;
}

}  // namespace

// A scenario is written in the oldest version that carries all it sets (a dense one as v2 text,
// byte for byte what an older server wrote), so the store's duplicate check (equal scenario text)
// still finds runs recorded before.
std::string EncodeScenario(const Scenario& s) {
  VersionNeeded needed;
  VisitFields(s, needed, kVersion);
  return Encode(s, needed.version());
}

std::vector<std::pair<std::string, std::string>> ScenarioFields(const Scenario& s) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string text = Encode(s, kVersion);
  bool tag = true;
  for (absl::string_view field : absl::StrSplit(text, ';')) {
    if (std::exchange(tag, false)) continue;  // the version tag
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    out.emplace_back(kv.first, kv.second);
  }
  return out;
}

absl::StatusOr<Scenario> DecodeScenario(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ';');
  int version = 0;
  for (int v = 1; v <= kVersion; ++v) {
    if (parts[0] == kVersionTags[v]) version = v;
  }
  if (version == 0) {
    return Corrupt(absl::StrCat("does not start with '", kVersionTags[kVersion], "'"));
  }
  std::vector<std::pair<absl::string_view, absl::string_view>> fields;
  fields.reserve(parts.size() - 1);
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == absl::string_view::npos) return Corrupt(absl::StrCat("field ", i, " has no '='"));
    fields.emplace_back(parts[i].substr(0, eq), parts[i].substr(eq + 1));
  }
  Scenario s;
  Decoder decoder(std::move(fields));
  VisitFields(s, decoder, version);
  if (std::string error = decoder.Finish(); !error.empty()) return Corrupt(error);
  if (s.parallelism.recompute_modules >= (1u << kRecomputeModules)) {
    return Corrupt("parallelism.recompute_modules: an unknown module bit");
  }
  // Every value has exactly one spelling; anything else ("+1", " 1", "1e0") was not written by
  // EncodeScenario.
  if (Encode(s, version) != text) return Corrupt("not in canonical form");
  return s;
}

}  // namespace scalecast
