#include "server/hf_config.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace scalecast {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// Keys that name or tune a model without changing what a training step computes or holds:
// token ids, position encodings, norms' epsilon, initialisation, dropout, dtype and bookkeeping.
// Named in one warning so a caller sees them, apart from the keys the parser does not know.
const std::set<std::string, std::less<>>& CostFreeKeys() {
  static const auto* keys =
      new std::set<std::string, std::less<>>{"_name_or_path",
                                             "architectures",
                                             "auto_map",
                                             "torch_dtype",
                                             "dtype",
                                             "transformers_version",
                                             "bos_token_id",
                                             "eos_token_id",
                                             "pad_token_id",
                                             "sep_token_id",
                                             "decoder_start_token_id",
                                             "max_position_embeddings",
                                             "n_positions",
                                             "n_ctx",
                                             "seq_length",
                                             "max_sequence_length",
                                             "rope_theta",
                                             "rope_scaling",
                                             "rope_parameters",
                                             "rope_interleave",
                                             "rotary_pct",
                                             "rotary_emb_base",
                                             "partial_rotary_factor",
                                             "rope_local_base_freq",
                                             "use_rope",
                                             "position_embedding_type",
                                             "rms_norm_eps",
                                             "layer_norm_eps",
                                             "layer_norm_epsilon",
                                             "norm_eps",
                                             "layernorm_epsilon",
                                             "initializer_range",
                                             "initializer_factor",
                                             "init_std",
                                             "use_cache",
                                             "attention_dropout",
                                             "hidden_dropout",
                                             "hidden_dropout_prob",
                                             "attention_probs_dropout_prob",
                                             "embd_pdrop",
                                             "resid_pdrop",
                                             "attn_pdrop",
                                             "summary_type",
                                             "summary_use_proj",
                                             "summary_activation",
                                             "summary_proj_to_labels",
                                             "summary_first_dropout",
                                             "dropout",
                                             "activation_dropout",
                                             "layerdrop",
                                             "ffn_dropout",
                                             "emb_dropout",
                                             "classifier_dropout",
                                             "output_router_logits",
                                             "router_aux_loss_coef",
                                             "router_z_loss_coef",
                                             "aux_loss_alpha",
                                             "seq_aux",
                                             "routed_scaling_factor",
                                             "norm_topk_prob",
                                             "scoring_func",
                                             "topk_method",
                                             "router_jitter_noise",
                                             "use_parallel_residual",
                                             "parallel_attn",
                                             "pretraining_tp",
                                             "quantization_config",
                                             "quantization",
                                             "final_logit_softcapping",
                                             "attn_logit_softcapping",
                                             "query_pre_attn_scalar",
                                             "use_bidirectional_attention",
                                             "hidden_act",
                                             "hidden_activation",
                                             "activation_function",
                                             "mlp_hidden_act",
                                             "residual_in_fp32",
                                             "rescale_prenorm_residual",
                                             "time_step_min",
                                             "time_step_max",
                                             "time_step_floor",
                                             "time_step_limit",
                                             "time_step_rank",
                                             "use_conv_bias",
                                             "use_bias",
                                             "chunk_size",
                                             "conv_kernel",
                                             "mamba_d_conv",
                                             "mamba_conv_bias",
                                             "mamba_proj_bias",
                                             "mamba_dt_rank",
                                             "use_mamba_kernels",
                                             "mamba_hidden_act",
                                             "attention_bias",
                                             "mlp_bias",
                                             "bias",
                                             "add_bias_linear",
                                             "qkv_bias",
                                             "use_qk_norm",
                                             "qk_layernorm",
                                             "alibi",
                                             "apply_residual_connection_post_layernorm",
                                             "do_layer_norm_before",
                                             "enable_bias",
                                             "scale_attn_weights",
                                             "scale_attn_by_inverse_layer_idx",
                                             "reorder_and_upcast_attn",
                                             "attn_implementation",
                                             "_attn_implementation",
                                             "use_sliding_window",
                                             "max_window_layers",
                                             "sliding_window_pattern",
                                             "no_rope_layers",
                                             "no_rope_layer_interval",
                                             "attn_scale",
                                             "attn_temperature_tuning",
                                             "floor_scale",
                                             "use_qk_norm",
                                             "cache_implementation",
                                             "interleave_moe_layer_step",
                                             "moe_layers",
                                             "router_dtype",
                                             "swiglu_limit",
                                             "rope_type",
                                             "original_max_position_embeddings",
                                             "is_decoder",
                                             "is_encoder_decoder",
                                             "tokenizer_class",
                                             "prefix",
                                             "task_specific_params",
                                             "problem_type",
                                             "finetuning_task",
                                             "id2label",
                                             "label2id",
                                             "return_dict",
                                             "output_attentions",
                                             "output_hidden_states",
                                             "torchscript",
                                             "use_return_dict",
                                             "model_max_length",
                                             "ep_size",
                                             "moe_layer_freq",
                                             "keep_mtp_spec_in_bf16",
                                             "mtp_hybrid_override_pattern",
                                             "moe_shared_expert_overlap",
                                             "e_score_correction_bias",
                                             "n_positions",
                                             "image_token_index",
                                             "boi_token_index",
                                             "eoi_token_index",
                                             "image_token_id",
                                             "mm_tokens_per_image",
                                             "tie_encoder_decoder",
                                             "expand",
                                             "mamba_expand",
                                             "residual_dropout",
                                             "embedding_multiplier_scale",
                                             "output_multiplier_scale",
                                             "use_flash_attn",
                                             "layer_types_description"};
  return *keys;
}

// Model types whose feed-forward is a plain two-matrix MLP (GELU, ReLU, squared ReLU); the rest
// are gated (SwiGLU / GeGLU: three matrices).
bool PlainMlp(absl::string_view type) {
  return type == "gpt2" || type == "gpt_neox" || type == "bloom" || type == "opt" ||
         type == "falcon" || type == "RefinedWeb" || type == "RefinedWebModel" ||
         type == "gpt_bigcode" || type == "nemotron_h" || type == "nemotron" || type == "mpt";
}

// tie_word_embeddings when a config leaves it out: transformers' PretrainedConfig default (true),
// overridden to false by the config classes of these types.
bool TiedByDefault(absl::string_view type) {
  static const std::set<std::string, std::less<>> untied = {
      "llama",    "llama4_text", "mistral",     "mixtral",     "qwen2",    "qwen2_moe",
      "qwen3",    "qwen3_moe",   "deepseek_v2", "deepseek_v3", "kimi_k2",  "gpt_oss",
      "phi3",     "phimoe",      "gpt_neox",    "nemotron_h",  "nemotron", "jamba",
      "glm4_moe", "glm4",        "olmo2",       "olmoe"};
  return untied.count(type) == 0;
}

// Reads one JSON object's keys, remembering which it used; the first error sticks.
class Reader {
 public:
  Reader(const Struct& s, std::string prefix, absl::string_view path)
      : s_(s), prefix_(std::move(prefix)), path_(path) {}

  bool Has(absl::string_view key) const {
    auto it = s_.fields().find(std::string(key));
    return it != s_.fields().end() && it->second.kind_case() != Value::kNullValue &&
           it->second.kind_case() != Value::KIND_NOT_SET;
  }
  // Marks a key read (a null value, or one whose presence alone is used).
  void Use(absl::string_view key) { used_.insert(std::string(key)); }

  // The first of `keys` present (not null), or nullptr.
  const Value* Find(std::initializer_list<absl::string_view> keys, std::string* which) {
    for (absl::string_view k : keys) {
      auto it = s_.fields().find(std::string(k));
      if (it == s_.fields().end()) continue;
      Use(k);
      if (it->second.kind_case() == Value::kNullValue) continue;
      *which = std::string(k);
      return &it->second;
    }
    return nullptr;
  }

  // An integer in [lo, hi] from the first of `keys`, or `def` when none is present.
  int Int(std::initializer_list<absl::string_view> keys, int lo, int hi, int def) {
    std::string key;
    const Value* v = Find(keys, &key);
    if (v == nullptr || !ok()) return def;
    if (v->kind_case() == Value::kBoolValue && lo == 0) return v->bool_value() ? 1 : 0;
    if (v->kind_case() != Value::kNumberValue) {
      Fail(key, "is not a number");
      return def;
    }
    const double d = v->number_value();
    if (!std::isfinite(d) || d != std::floor(d)) {
      Fail(key, absl::StrCat(d, " is not an integer"));
      return def;
    }
    if (d < lo || d > hi) {
      Fail(key, absl::StrCat(d, " is out of range [", lo, ", ", hi, "]"));
      return def;
    }
    return static_cast<int>(d);
  }
  bool Bool(absl::string_view key, bool def) {
    std::string k;
    const Value* v = Find({key}, &k);
    if (v == nullptr || !ok()) return def;
    if (v->kind_case() != Value::kBoolValue) {
      Fail(k, "is not true or false");
      return def;
    }
    return v->bool_value();
  }
  std::string Str(absl::string_view key) {
    std::string k;
    const Value* v = Find({key}, &k);
    if (v == nullptr || !ok()) return "";
    if (v->kind_case() != Value::kStringValue) {
      Fail(k, "is not a string");
      return "";
    }
    return v->string_value();
  }
  // A list (nullptr when absent); its elements are checked by the caller.
  const google::protobuf::ListValue* List(absl::string_view key) {
    std::string k;
    const Value* v = Find({key}, &k);
    if (v == nullptr || !ok()) return nullptr;
    if (v->kind_case() != Value::kListValue) {
      Fail(k, "is not a list");
      return nullptr;
    }
    return &v->list_value();
  }
  const Struct* Object(absl::string_view key) {
    std::string k;
    const Value* v = Find({key}, &k);
    if (v == nullptr || !ok()) return nullptr;
    if (v->kind_case() != Value::kStructValue) {
      Fail(k, "is not an object");
      return nullptr;
    }
    return &v->struct_value();
  }

  void Fail(absl::string_view key, absl::string_view why) {
    if (!status_.ok()) return;
    status_ = absl::InvalidArgumentError(absl::StrCat(path_, ": ", prefix_, key, ": ", why));
  }
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

  // The keys not read, split into those that leave a step's cost alone and the unknown ones.
  // In key order: a protobuf map iterates in an order that changes from process to process, and
  // the same config must warn the same way every time.
  void Unused(std::vector<std::string>* cost_free, std::vector<std::string>* unknown) const {
    std::vector<absl::string_view> keys;
    for (const auto& [k, v] : s_.fields()) {
      if (used_.count(k) == 0) keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end());
    for (absl::string_view k : keys) {
      (CostFreeKeys().count(k) > 0 ? cost_free : unknown)->push_back(absl::StrCat(prefix_, k));
    }
  }

 private:
  const Struct& s_;
  std::string prefix_;
  std::string path_;
  std::set<std::string> used_;
  absl::Status status_;
};

// A list of strings (layer_types): nullptr-safe; a non-string element is an error.
std::vector<std::string> Strings(const google::protobuf::ListValue* list, Reader* r,
                                 absl::string_view key) {
  std::vector<std::string> out;
  if (list == nullptr) return out;
  for (const Value& v : list->values()) {
    if (v.kind_case() != Value::kStringValue) {
      r->Fail(key, "has an element that is not a string");
      return {};
    }
    out.push_back(v.string_value());
  }
  return out;
}

// Every N-th layer full attention, the rest windowed, from a per-layer list where `full(i)`
// says whether layer i is full. 0 = no full layer. Irregular lists get the nearest period and a
// warning.
int FullEvery(int n, const std::function<bool(int)>& full, const std::string& key,
              std::vector<std::string>* warnings) {
  int count = 0;
  for (int i = 0; i < n; ++i) count += full(i);
  if (count == 0) return 0;
  const int every = std::max(1, static_cast<int>(std::lround(static_cast<double>(n) / count)));
  for (int i = 0; i < n; ++i) {
    if (full(i) != ((i + 1) % every == 0)) {
      warnings->push_back(absl::StrCat("hf_config_json: ", key, " has ", count, " full-attention ",
                                       "layers of ", n, " in an irregular order; modelled as ",
                                       "every ", every, "-th layer full"));
      break;
    }
  }
  return every;
}

// The request bounds (model/limits.h); the model's own checks follow on resolve.
constexpr int kDim = kMaxDim;
constexpr int kLayers = static_cast<int>(kMaxLayers);
constexpr int kHead = static_cast<int>(kMaxHeadDim);

// The dense transformer's shape: widths, layers, heads (grouped-query included), vocabulary, the
// dense feed-forward width, tied embeddings, multi-token prediction. False when the config has no
// usable hidden size (nothing further is read).
bool MapDense(Reader& r, const std::string& type, ModelSpec* m) {
  m->hidden = r.Int({"hidden_size", "n_embd", "n_embed", "d_model"}, 1, kDim, 0);
  m->layers = r.Int({"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, 1, kLayers, 0);
  m->heads = r.Int({"num_attention_heads", "n_head", "num_heads", "n_heads"}, 1, 16384, 0);
  m->vocab = r.Int({"vocab_size", "padded_vocab_size"}, 1, 16 * kDim, 0);
  m->head_dim = r.Int({"head_dim", "attention_head_dim", "kv_channels"}, 1, kHead, 0);
  // Grouped-query attention; Falcon: multi_query (one K/V head) or, in its new decoder
  // architecture, num_kv_heads.
  m->kv_heads =
      r.Int({"num_key_value_heads", "num_kv_heads", "n_head_kv", "num_query_groups"}, 1, 16384, 0);
  const bool new_decoder = r.Bool("new_decoder_architecture", false);
  if (r.Bool("multi_query", false) && !new_decoder) m->kv_heads = 1;
  if (!r.ok() || m->hidden == 0) return false;
  m->mlp = PlainMlp(type) ? Mlp::kPlain : Mlp::kGated;
  // The dense feed-forward width (4h where the type fixes it so).
  m->ffn_hidden =
      r.Int({"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"}, 1, 16 * kDim, 0);
  if (m->ffn_hidden == 0 && (type == "gpt2" || type == "bloom" || type == "falcon" ||
                             type == "RefinedWeb" || type == "RefinedWebModel")) {
    m->ffn_hidden = 4 * m->hidden;
  }
  m->tie_embeddings = r.Bool("tie_word_embeddings", TiedByDefault(type));
  m->mtp_layers = r.Int({"num_nextn_predict_layers", "mtp_num_layers"}, 0, kMaxMtpLayers, 0);
  return true;
}

// Mixture of experts: the routed and shared experts, their widths, group-limited routing and
// which layers stay dense.
void MapMoe(Reader& r, const std::string& type, ModelSpec* m) {
  MoeSpec& e = m->moe;
  e.num_experts = r.Int({"n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts"},
                        0, static_cast<int>(kMaxExperts), 0);
  if (e.num_experts == 0) return;
  e.experts_per_token =
      r.Int({"num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k"}, 1,
            static_cast<int>(kMaxExperts), 0);
  // The routed expert's width: moe_intermediate_size, or intermediate_size where every FFN is
  // MoE (Mixtral, GPT-OSS, Llama 4, Jamba).
  const int moe_ffn = r.Int({"moe_intermediate_size"}, 1, 16 * kDim, 0);
  if (moe_ffn > 0) {
    e.expert_ffn_hidden = moe_ffn;
  } else {
    e.expert_ffn_hidden = m->ffn_hidden;
    m->ffn_hidden = 0;
  }
  const int n_shared = r.Int({"n_shared_experts", "num_shared_experts"}, 0, 64, 0);
  const int shared_ffn = r.Int(
      {"moe_shared_expert_intermediate_size", "shared_expert_intermediate_size"}, 1, 16 * kDim, 0);
  if (type == "llama4_text") {
    e.shared_experts = 1;  // Llama4TextMoe: one shared expert of the routed width
  } else if (shared_ffn > 0) {
    e.shared_experts = std::max(1, n_shared);
    e.shared_ffn_hidden = shared_ffn * (n_shared > 1 && type == "nemotron_h" ? n_shared : 1);
  } else {
    e.shared_experts = n_shared;
  }
  e.latent_size = r.Int({"moe_latent_size"}, 1, kDim, 0);
  const int groups = r.Int({"n_group", "num_expert_group", "moe_router_num_groups"}, 1,
                           static_cast<int>(kMaxExperts), 1);
  const int group_topk =
      r.Int({"topk_group", "moe_router_group_topk"}, 1, static_cast<int>(kMaxExperts), 1);
  if (groups > 1) {
    e.router_groups = groups;
    e.router_group_topk = group_topk;
  }
  e.expert_bias = type == "gpt_oss";
  // Which layers are dense: DeepSeek / GLM / Kimi lead with first_k_dense_replace; Qwen's
  // mlp_only_layers and decoder_sparse_step; Llama 4's interleave_moe_layer_step.
  int dense = r.Int({"first_k_dense_replace"}, 0, kLayers, 0);
  if (const auto* only = r.List("mlp_only_layers"); only != nullptr) dense += only->values_size();
  const int step = r.Int({"decoder_sparse_step", "interleave_moe_layer_step"}, 1, kLayers, 1);
  if (step > 1 && m->layers > 0) dense += m->layers - m->layers / step;
  if (type == "llama4_text") {
    const int mlp = r.Int({"intermediate_size_mlp"}, 1, 16 * kDim, 0);
    if (dense > 0) m->ffn_hidden = mlp;
  }
  e.dense_layers = dense;
  if (dense == 0 && type != "jamba" && type != "nemotron_h") {
    m->ffn_hidden = 0;  // every layer MoE: no dense width
  }
}

// Multi-head latent attention's ranks and head widths.
void MapMla(Reader& r, ModelSpec* m) {
  MlaSpec& a = m->mla;
  a.kv_lora_rank = r.Int({"kv_lora_rank"}, 1, kDim, 0);
  if (a.kv_lora_rank > 0) {
    a.q_lora_rank = r.Int({"q_lora_rank"}, 1, kDim, 0);
    a.qk_nope_head_dim = r.Int({"qk_nope_head_dim"}, 0, kHead, 0);
    a.qk_rope_head_dim = r.Int({"qk_rope_head_dim"}, 0, kHead, 0);
    a.v_head_dim = r.Int({"v_head_dim"}, 1, kHead, 0);
    m->head_dim = 0;  // MLA's widths are its own
    m->kv_heads = 0;
  }
}

// Local attention: the window and how often a layer attends to the whole sequence.
void MapLocalAttention(Reader& r, const std::string& type, ModelSpec* m,
                       std::vector<std::string>* warn) {
  const std::vector<std::string> types = Strings(r.List("layer_types"), &r, "layer_types");
  const int window =
      r.Int({"sliding_window", "attention_chunk_size"}, 1, static_cast<int>(kMaxWindow), 0);
  const bool sliding_used =
      type != "qwen2" && type != "qwen3" && type != "qwen2_moe" && type != "qwen3_moe";
  if (window > 0 && (sliding_used || r.Bool("use_sliding_window", false))) {
    m->attention_window = window;
    const int n = m->layers;
    if (!types.empty()) {
      m->full_attention_every = FullEvery(
          static_cast<int>(types.size()), [&](int i) { return types[i] == "full_attention"; },
          "layer_types", warn);
    } else if (type == "gemma2") {
      m->full_attention_every = 2;  // Gemma 2 alternates local and global layers
    } else if (type == "gemma3" || type == "gemma3_text") {
      m->full_attention_every = r.Int({"sliding_window_pattern"}, 1, kLayers, 6);
    } else if (type == "llama4_text") {
      // no_rope_layers: 1 = RoPE with chunked attention, 0 = NoPE with global attention.
      const auto* list = r.List("no_rope_layers");
      if (list != nullptr && list->values_size() > 0) {
        m->full_attention_every = FullEvery(
            list->values_size(),
            [&](int i) {
              const Value& v = list->values(i);
              return v.kind_case() == Value::kNumberValue && v.number_value() == 0;
            },
            "no_rope_layers", warn);
      } else {
        m->full_attention_every = r.Int({"no_rope_layer_interval"}, 1, kLayers, 4);
      }
    }
    if (m->full_attention_every > n) m->full_attention_every = 0;
  } else if (!types.empty()) {
    r.Use("layer_types");
  }
}

// Hybrid stacks: Nemotron-H's pattern and Mamba-2 mixers; Jamba's attention and expert periods.
void MapHybrid(Reader& r, const std::string& type, ModelSpec* m, std::vector<std::string>* warn) {
  MoeSpec& e = m->moe;
  if (type == "nemotron_h") {
    m->layer_pattern = r.Str("hybrid_override_pattern");
    m->mamba_heads = r.Int({"mamba_num_heads"}, 1, 16384, 0);
    m->mamba_head_dim = r.Int({"mamba_head_dim"}, 1, kHead, 0);
    m->mamba_state = r.Int({"ssm_state_size", "mamba_state_dim"}, 1, kHead, 0);
    m->mamba_groups = r.Int({"n_groups", "mamba_n_groups", "mamba_num_groups"}, 1, 16384, 0);
    if (!m->layer_pattern.empty() && m->layer_pattern.find('-') == std::string::npos) {
      m->ffn_hidden = 0;  // no dense MLP layer: intermediate_size unused
    }
  } else if (type == "jamba") {
    // Jamba: each of its layers is a mixer (attention every attn_layer_period-th, at
    // attn_layer_offset; Mamba otherwise) and a feed-forward block (MoE every
    // expert_layer_period-th, at expert_layer_offset; dense otherwise), two entries each in
    // the pattern.
    const int ap = r.Int({"attn_layer_period"}, 1, kLayers, 8);
    const int ao = r.Int({"attn_layer_offset"}, 0, kLayers - 1, 4);
    const int ep = r.Int({"expert_layer_period"}, 1, kLayers, 2);
    const int eo = r.Int({"expert_layer_offset"}, 0, kLayers - 1, 1);
    const int state = r.Int({"mamba_d_state"}, 1, kHead, 16);
    const int expand = r.Int({"mamba_expand"}, 1, 64, 2);
    r.Use("mamba_dt_rank");
    std::string pattern;
    for (int i = 0; i < m->layers; ++i) {
      pattern += i % ap == ao ? '*' : 'M';
      pattern += e.enabled() && i % ep == eo ? 'E' : '-';
    }
    m->layer_pattern = pattern;
    m->layers = static_cast<int>(pattern.size());
    e.dense_layers = 0;
    if (e.enabled() && m->ffn_hidden == 0) m->ffn_hidden = e.expert_ffn_hidden;
    // Mamba-1 mixers (in_proj to 2 x inner, x_proj, dt_proj) modelled as Mamba-2 ones of the
    // same inner width and state: 64-wide heads, one B/C group.
    const int inner = expand * m->hidden;
    m->mamba_head_dim = inner % 64 == 0 ? 64 : inner;
    m->mamba_heads = inner / m->mamba_head_dim;
    m->mamba_state = state;
    m->mamba_groups = 1;
    warn->push_back(
        "hf_config_json: Jamba's Mamba-1 mixers are modelled as Mamba-2 mixers of the same inner "
        "width and state (x_proj and dt_proj, about 3 % of a mixer, are left out)");
  }
}

// Maps one config object (the top level, or a multimodal model's text_config).
void MapText(Reader& r, const std::string& type, ModelSpec* m, std::vector<std::string>* warn) {
  if (!MapDense(r, type, m)) return;
  MapMoe(r, type, m);
  MapMla(r, m);
  MapLocalAttention(r, type, m, warn);
  MapHybrid(r, type, m, warn);
}

}  // namespace

absl::StatusOr<HfModel> ParseHfConfig(absl::string_view json, absl::string_view path) {
  if (json.size() > kMaxHfConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", json.size(), " bytes, over the limit of ", kMaxHfConfigBytes));
  }
  Struct root;
  google::protobuf::util::JsonParseOptions options;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &root, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object: ", std::string(parsed.message())));
  }
  HfModel out;
  Reader top(root, "", path);
  std::string type = top.Str("model_type");
  // Multimodal models (Llama 4, Gemma 3 4B+) nest the language model in text_config; the
  // vision tower is not modelled.
  const Struct* text = top.Object("text_config");
  if (!top.ok()) return top.status();
  Reader inner(text != nullptr ? *text : root, text != nullptr ? "text_config." : "", path);
  if (text != nullptr) {
    const std::string text_type = inner.Str("model_type");
    if (!text_type.empty()) type = text_type;
    if (top.Object("vision_config") != nullptr) {
      out.warnings.push_back(
          "hf_config_json: vision_config: the vision encoder is not modelled (text model only)");
    }
  }
  if (type.empty()) {
    top.Fail("model_type", "is missing (it names the architecture whose keys are mapped)");
    return top.status();
  }
  if (type == "gemma3") type = "gemma3_text";
  MapText(inner, type, &out.spec, &out.warnings);
  if (!inner.ok()) return inner.status();
  // A multimodal model ties (or not) at its top level (Llama 4).
  if (text != nullptr && !inner.Has("tie_word_embeddings") && top.Has("tie_word_embeddings")) {
    out.spec.tie_embeddings = top.Bool("tie_word_embeddings", out.spec.tie_embeddings);
  }
  if (!top.ok()) return top.status();
  if (out.spec.hidden == 0 || out.spec.layers == 0 || out.spec.heads == 0 || out.spec.vocab == 0) {
    inner.Fail(out.spec.hidden == 0   ? "hidden_size"
               : out.spec.layers == 0 ? "num_hidden_layers"
               : out.spec.heads == 0  ? "num_attention_heads"
                                      : "vocab_size",
               "is missing");
    return inner.status();
  }
  out.spec.name = absl::StrCat(type, " (config.json)");
  std::vector<std::string> cost_free, unknown;
  inner.Use("model_type");
  if (text != nullptr) top.Unused(&cost_free, &unknown);
  inner.Unused(&cost_free, &unknown);
  if (!unknown.empty()) {
    out.warnings.push_back(absl::StrCat("hf_config_json: keys not recognised, not used: ",
                                        absl::StrJoin(unknown, ", ")));
  }
  if (!cost_free.empty()) {
    out.warnings.push_back(
        absl::StrCat("hf_config_json: keys not used (they do not change a training step's cost): ",
                     absl::StrJoin(cost_free, ", ")));
  }
  return out;
}

}  // namespace scalecast
