#include "model/workload.h"

namespace scalecast {

Shape::Shape(const ModelSpec& m)
    : layers(m.layers),
      hidden(m.hidden),
      heads(m.heads),
      kv_heads(m.kv_heads > 0 ? m.kv_heads : m.heads),
      head_dim(m.heads > 0 ? static_cast<double>(m.hidden) / m.heads : 0),
      ffn(m.ffn_hidden),
      vocab(m.vocab),
      gated(m.mlp != Mlp::kPlain) {
  qkv_out = hidden + 2 * kv_heads * head_dim;
  mlp_up_out = gated ? 2 * ffn : ffn;
}

ParamCount CountParams(const Shape& s) {
  ParamCount p;
  const double attn = s.hidden * s.qkv_out + s.hidden * s.hidden;
  const double mlp = s.hidden * s.mlp_up_out + s.ffn * s.hidden;
  p.per_layer = attn + mlp + 2 * s.hidden;
  p.embedding = s.vocab * s.hidden;
  p.output = s.vocab * s.hidden;
  p.total = s.layers * p.per_layer + p.embedding + p.output + s.hidden;
  p.matmul = s.layers * (attn + mlp) + p.output;
  return p;
}

double AttentionForwardFlops(const Shape& s, double seq_len) {
  // QK^T and PV: 2 * s * s * head_dim each per head, halved by the causal mask.
  return 2.0 * 2.0 * seq_len * seq_len * s.head_dim * s.heads * 0.5;
}

double ModelFlopsPerToken(const Shape& s, int seq_len) {
  const ParamCount p = CountParams(s);
  return 6.0 * p.matmul + 3.0 * s.layers * AttentionForwardFlops(s, seq_len) / seq_len;
}

}  // namespace scalecast
