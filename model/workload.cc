#include "model/workload.h"

#include <algorithm>

namespace scalecast {

Shape::Shape(const ModelSpec& m)
    : layers(m.layers),
      hidden(m.hidden),
      heads(m.heads),
      kv_heads(m.kv_heads > 0 ? m.kv_heads : m.heads),
      head_dim(m.head_dim > 0 ? m.head_dim
                              : (m.heads > 0 ? static_cast<double>(m.hidden) / m.heads : 0)),
      ffn(m.ffn_hidden),
      vocab(m.vocab),
      gated(m.mlp != Mlp::kPlain) {
  const double h = hidden;
  const double up = gated ? 2 : 1;  // matrices before the activation
  rms_norm = rotary = gated || m.mla.enabled();
  // Attention.
  mla = m.mla.enabled();
  if (mla) {
    q_lora = m.mla.q_lora_rank;
    kv_lora = m.mla.kv_lora_rank;
    qk_rope = m.mla.qk_rope_head_dim;
    qk_head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    v_head_dim = m.mla.v_head_dim;
    const double q =
        q_lora > 0 ? h * q_lora + q_lora * heads * qk_head_dim : h * heads * qk_head_dim;
    const double kv =
        h * (kv_lora + qk_rope) + kv_lora * heads * (m.mla.qk_nope_head_dim + v_head_dim);
    attn_params = q + kv + heads * v_head_dim * h;
    qkv_out = heads * qk_head_dim + heads * (qk_head_dim + v_head_dim);  // q, k, v after up-proj
  } else {
    qk_head_dim = v_head_dim = head_dim;
    qkv_out = heads * head_dim + 2 * kv_heads * head_dim;
    attn_params = h * qkv_out + heads * head_dim * h;
  }
  attention_window = m.attention_window;
  full_attention_every = m.full_attention_every;
  // Feed-forward.
  mlp_up_out = up * ffn;
  dense_ffn_params = h * mlp_up_out + ffn * h;
  moe = m.moe.enabled();
  if (moe) {
    experts = m.moe.num_experts;
    top_k = m.moe.experts_per_token;
    expert_ffn = m.moe.expert_ffn_hidden;
    expert_up_out = up * expert_ffn;
    shared_ffn =
        m.moe.shared_ffn_hidden > 0 ? m.moe.shared_ffn_hidden : m.moe.shared_experts * expert_ffn;
    shared_up_out = up * shared_ffn;
    // Latent MoE (Megatron-Core's fc1_latent_proj / fc2_latent_proj): the experts' GEMMs run at
    // the latent width between two projections every token passes through.
    expert_width = m.moe.ExpertWidth(m.hidden);
    latent_proj_params = m.moe.latent_size > 0 ? 2 * h * expert_width : 0;
    router_groups = m.moe.router_groups;
    router_group_topk = m.moe.router_group_topk;
    expert_params = expert_width * expert_up_out + expert_ffn * expert_width;
    shared_params = h * shared_up_out + shared_ffn * h;
    router_params = h * experts;
    capacity_factor = m.moe.capacity_factor;
    expert_bias = m.moe.expert_bias;
  }
  mtp = m.mtp_layers;
  tied = m.tie_embeddings;
  // Mamba-2.
  mamba_heads = m.mamba_heads;
  mamba_head_dim = m.mamba_head_dim;
  mamba_state = m.mamba_state;
  mamba_groups = m.mamba_groups;
  mamba_inner = mamba_heads * mamba_head_dim;
  mamba_in_out = 2 * mamba_inner + 2 * mamba_groups * mamba_state + mamba_heads;
  mamba_params = h * mamba_in_out + mamba_inner * h;
  // Layer kinds.
  if (m.layer_pattern.empty()) {
    n_attention = layers;
    n_moe = moe ? std::max(0, m.layers - m.moe.dense_layers) : 0;
    n_dense_ffn = layers - n_moe;
  } else {
    for (char c : m.layer_pattern) {
      n_attention += c == '*';
      n_mamba += c == 'M';
      n_dense_ffn += c == '-';
      n_moe += c == 'E';
    }
  }
}

ParamCount CountParams(const Shape& s) {
  ParamCount p;
  const double h = s.hidden;
  // Per block, the weights outside the matmuls: its pre-norm (h); MLA's two latent norms;
  // Mamba's gated norm over the inner width, its conv weights, and dt bias, A and D per head.
  const double attn_other = h + (s.mla ? s.q_lora + s.kv_lora : 0);
  const double mamba_other =
      h + s.mamba_inner + kMambaConvWidth * (s.mamba_inner + 2 * s.mamba_groups * s.mamba_state) +
      3 * s.mamba_heads;
  const double moe_shared = s.shared_params + s.router_params + s.latent_proj_params;
  // Matmul weights of the layers: every block, the MoE blocks with all experts or the top-k.
  const double matmul_blocks = s.n_attention * s.attn_params + s.n_mamba * s.mamba_params +
                               s.n_dense_ffn * s.dense_ffn_params + s.n_moe * moe_shared;
  const double matmul_all = matmul_blocks + s.n_moe * s.experts * s.expert_params;
  const double matmul_active = matmul_blocks + s.n_moe * s.top_k * s.expert_params;
  const double other =
      s.n_attention * attn_other + s.n_mamba * mamba_other + (s.n_dense_ffn + s.n_moe) * h;
  const double layers_total = matmul_all + other;
  const double layers_active = matmul_active + other;
  p.per_layer = s.layers > 0 ? layers_total / s.layers : 0;
  p.per_layer_expert = s.layers > 0 ? s.n_moe * s.experts * s.expert_params / s.layers : 0;
  p.embedding = s.vocab * h;
  p.output = s.vocab * h;
  p.mtp_projection = 2 * h * h;
  // A tied output projection is the embedding's matrix: one more GEMM, no more weights.
  const double head = p.embedding + (s.tied ? 0 : p.output) + h;
  p.total = layers_total + head;
  p.activated = layers_active + head;
  p.matmul = matmul_active + p.output;
  return p;
}

double WindowedShare(const Shape& s) {
  if (s.attention_window <= 0) return 0;
  if (s.full_attention_every <= 1) return s.full_attention_every == 1 ? 0 : 1;
  return 1.0 - 1.0 / s.full_attention_every;
}

double KeysPerQuery(const Shape& s, double seq_len, bool windowed) {
  const double w = s.attention_window;
  if (!windowed || w <= 0 || w >= seq_len) return 0.5 * seq_len;
  return w * (1.0 - 0.5 * w / seq_len);
}

double AttentionForwardFlops(const Shape& s, double seq_len) {
  // Per query and head: q·k over keys (2*d_qk each) and p·v (2*d_v each).
  const double share = WindowedShare(s);
  const double keys =
      (1 - share) * KeysPerQuery(s, seq_len, false) + share * KeysPerQuery(s, seq_len, true);
  return 2.0 * seq_len * keys * (s.qk_head_dim + s.v_head_dim) * s.heads;
}

double MambaScanFlopsPerToken(const Shape& s) {
  const double q = kMambaChunk, n = s.mamba_state, p = s.mamba_head_dim;
  return s.mamba_heads * (2 * q * n + 2 * q * p + 4 * n * p);
}

double ModelFlopsPerToken(const Shape& s, int seq_len) {
  const ParamCount p = CountParams(s);
  return 6.0 * p.matmul + 3.0 * s.n_attention * AttentionForwardFlops(s, seq_len) / seq_len +
         3.0 * s.n_mamba * MambaScanFlopsPerToken(s);
}

}  // namespace scalecast
