// Counting: parameters, FLOPs and bytes of a decoder-only transformer. Pure arithmetic on the
// model shape; no hardware here.
#ifndef SCALECAST_MODEL_WORKLOAD_H_
#define SCALECAST_MODEL_WORKLOAD_H_

#include <cstdint>

#include "model/types.h"

namespace scalecast {

// Shape quantities derived once from a ModelSpec.
struct Shape {
  double layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  bool gated = true;
  double qkv_out = 0;     // h + 2 * kv_heads * head_dim: the fused QKV projection's width
  double mlp_up_out = 0;  // 2f when gated (gate and up fused), f when plain

  explicit Shape(const ModelSpec& m);
};

// Parameter counts. Norm weights are included in layer params; biases are not (Llama/MPT/GPT-NeoX
// style models have none, and they would add < 0.1 %).
struct ParamCount {
  double per_layer = 0;  // attention + MLP + the two norms
  double embedding = 0;  // token embedding, v*h
  double output = 0;     // untied output projection, v*h (the logits GEMM)
  double total = 0;      // layers*per_layer + embedding + output + final norm
  double matmul = 0;     // the parameters that take part in matmuls: layers' + output
};
ParamCount CountParams(const Shape& s);

// Model FLOPs for one token of training (forward + backward), the MFU convention: 6 per matmul
// parameter (2 forward, 4 backward) plus causal attention's score and value products,
// 6 * layers * seq * hidden per token (12*l*s*h halved by the causal mask). Recompute excluded.
double ModelFlopsPerToken(const Shape& s, int seq_len);

// Forward FLOPs of causal attention (QK^T and PV) for one sequence of one layer, all heads.
double AttentionForwardFlops(const Shape& s, double seq_len);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_WORKLOAD_H_
