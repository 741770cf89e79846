// Counting: parameters, FLOPs and bytes of a decoder-only model: dense or mixture-of-experts
// feed-forward layers, grouped-query or multi-head latent attention, full or windowed attention,
// and hybrid stacks with Mamba-2 mixers. Pure arithmetic on the model shape; no hardware here.
#ifndef SCALECAST_MODEL_WORKLOAD_H_
#define SCALECAST_MODEL_WORKLOAD_H_

#include <cstdint>

#include "model/types.h"

namespace scalecast {

// Shape quantities derived once from a ModelSpec. A "layer" is one entry of the layer pattern:
// without a pattern every layer is an attention block plus a feed-forward block (dense for the
// first moe.dense_layers, MoE after); with one, each layer is one mixer or one feed-forward
// block (Megatron-Core's hybrid models).
struct Shape {
  double layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  bool gated = true;
  // Norm and position embedding. ModelSpec does not name them; the gated-MLP families (Llama,
  // Mistral, Qwen, DeepSeek, Gemma) use RMSNorm and rotary embeddings, the plain ones of the
  // measured runs (GPT-3, OPT, BLOOM, MPT) LayerNorm with learned or ALiBi positions. They only
  // matter in eager stacks, where RMSNorm and RoPE are chains of kernels (StackParams).
  bool rms_norm = true;
  bool rotary = true;
  double qkv_out = 0;     // grouped-query attention: the fused QKV projection's width
  double mlp_up_out = 0;  // dense FFN: 2f when gated (gate and up fused), f when plain

  // Attention. MLA (DeepSeek-V2 §2.1): q = W_uq(norm(W_dq x)), [c_kv, k_rope] = W_dkv x,
  // [k_nope, v] = W_ukv(norm(c_kv)); the heads' q/k width is nope + rope, v's is v_head_dim.
  bool mla = false;
  double q_lora = 0, kv_lora = 0, qk_rope = 0;
  double qk_head_dim = 0;       // per head, of q and k
  double v_head_dim = 0;        // per head, of v and the attention output
  double attn_params = 0;       // matmul parameters of one attention block
  double attention_window = 0;  // 0 = every layer full causal attention
  int full_attention_every = 0;

  // Feed-forward.
  double dense_ffn_params = 0;  // one dense FFN block
  bool moe = false;
  double experts = 0, top_k = 0, expert_ffn = 0, expert_up_out = 0;
  double shared_ffn = 0, shared_up_out = 0;
  // Latent MoE: the routed experts' width (moe.latent_size, else hidden) and the MoE layer's two
  // replicated projections h -> latent and latent -> h (0 without a latent).
  double expert_width = 0;
  double latent_proj_params = 0;
  // Group-limited routing: expert groups and how many of them one token's experts come from
  // (0 = no limit).
  double router_groups = 0, router_group_topk = 0;
  double expert_params = 0;  // one routed expert
  double shared_params = 0;  // the shared experts together
  double router_params = 0;  // the router's h x experts matrix
  double capacity_factor = 0;
  bool expert_bias = false;  // routed experts' linears carry biases

  // Mamba-2 mixer (Dao & Gu 2024): in_proj h -> [z, x, B, C, dt] = 2*inner + 2*groups*state +
  // heads; a width-4 causal conv over x, B, C; the SSD scan; a gated norm; out_proj inner -> h.
  double mamba_inner = 0, mamba_heads = 0, mamba_head_dim = 0, mamba_state = 0, mamba_groups = 0,
         mamba_in_out = 0, mamba_params = 0;

  double mtp = 0;     // multi-token prediction modules (ModelSpec.mtp_layers)
  bool tied = false;  // the output projection shares the embedding's weights

  // How many layers have each kind of block.
  double n_attention = 0, n_mamba = 0, n_dense_ffn = 0, n_moe = 0;

  explicit Shape(const ModelSpec& m);
};

// Mamba-2's SSD scan processes the sequence in chunks of this many tokens (Megatron-Core
// MambaMixer chunk_size default 128; mamba_ssm's ssd_combined uses the same).
inline constexpr double kMambaChunk = 128;
// Width of Mamba-2's causal depthwise convolution (d_conv = 4 in mamba_ssm and Megatron-Core).
inline constexpr double kMambaConvWidth = 4;

// Parameter counts. Norm weights are included in layer params; biases are not (Llama/MPT/GPT-NeoX
// style models have none, and they would add < 0.1 %).
struct ParamCount {
  double per_layer = 0;         // average over the layers: every parameter of the layer
  double per_layer_expert = 0;  // average over the layers: routed experts' (all of them)
  double embedding = 0;         // token embedding, v*h
  double output = 0;            // the output projection, v*h (the logits GEMM; tied or not)
  double mtp_projection = 0;    // one multi-token prediction module's 2h -> h projection
  // layers*per_layer + embedding + output (once when tied) + final norm
  double total = 0;
  double activated = 0;  // what one token passes through (top-k of the routed experts)
  double matmul = 0;     // activated parameters that take part in matmuls: layers' + output

  double per_layer_dense() const { return per_layer - per_layer_expert; }
};
ParamCount CountParams(const Shape& s);

// Keys an average query attends to: s/2 under a causal mask; a window w < s sees w (less the
// first w tokens' ramp).
double KeysPerQuery(const Shape& s, double seq_len, bool windowed);
// Share of attention layers that are windowed.
double WindowedShare(const Shape& s);

// Model FLOPs for one token of training (forward + backward), the MFU convention: 6 per
// activated matmul parameter (2 forward, 4 backward) plus causal attention's score and value
// products (3x forward) and Mamba-2's scan. Recompute excluded.
double ModelFlopsPerToken(const Shape& s, int seq_len);

// Forward FLOPs of attention (QK^T and PV) for one sequence of one attention layer, all heads,
// averaged over full and windowed layers.
double AttentionForwardFlops(const Shape& s, double seq_len);

// Forward FLOPs of Mamba-2's SSD scan per token of one Mamba layer (the chunked algorithm of
// Dao & Gu 2024 §6: within a chunk C·Bᵀ and its product with x, across chunks the state in and
// out): heads * (2*Q*N + 2*Q*P + 4*N*P) with chunk Q, state N, head dim P.
double MambaScanFlopsPerToken(const Shape& s);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_WORKLOAD_H_
