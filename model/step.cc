#include "model/step.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/field_rules_gen.h"
#include "model/layout.h"
#include "model/recipe_presets.h"

namespace scalecast {
namespace {

// --- Memory constants -------------------------------------------------------------------------
// Mixed-precision AdamW state per parameter (Rajbhandari et al. 2020, ZeRO, section 3.1):
// bf16 weights 2 B, fp32 gradients 4 B (reduced in fp32: Megatron's main_grad, FSDP's
// reduce_dtype=float32 in torchtitan and llm-foundry's DEFAULT mixed precision), fp32 master
// weights 4 B, Adam moments 8 B (4 B where the framework keeps them in bf16, as DeepSeek's
// HAI-LLM does: FrameworkBehaviour::bf16_optimizer_moments). A stack that reduces gradients in
// bf16 (Stack::bf16_grads) holds and sends 2 B a gradient (StepModel::GradBytes).
constexpr double kBf16 = 2, kFp32 = 4;
constexpr double kFp8Byte = 1;  // an fp8 (or saved nvfp4/mxfp8 quantized) element, scales aside
// Optimizer step traffic per locally held parameter: read param, grad, m, v (16 B), write param,
// m, v (12 B), write the bf16 copy (2 B), plus the gradient-norm read (4 B).
constexpr double kOptimizerBytesPerParam = 34;
// CUDA context, cuBLAS workspaces and NCCL buffers: ~2 GiB measured on Hopper nodes with a few
// communicators (PyTorch issue reports of "non-PyTorch memory" in nvidia-smi); an estimate.
constexpr double kRuntimeOverheadBytes = 2.0 * (1 << 30);
// Caching-allocator fragmentation on top of the live peak (torch.cuda.memory_reserved vs
// max_memory_allocated in torchtitan runs is typically 3-8 %); an estimate.
constexpr double kFragmentation = 1.05;
// Bytes per logit per token held for the loss at its peak (unfused PyTorch cross-entropy): the
// bf16 logits, their fp32 upcast's log-softmax kept for backward, and its fp32 gradient; a fused
// cross-entropy keeps the bf16 logits only.
constexpr double kLogitBytes = 10;
constexpr double kFusedLogitBytes = 2;
// Bytes moved per logit per token by the loss (upcast, log-softmax, gather, and its backward).
constexpr double kLossTrafficBytes = 8;

// --- Power activity factors (share of the board's dynamic range, TDP - idle) ------------------
// GEMM-heavy compute: kComputeActivity (model/hardware.h).
// A GPU waiting on exposed collectives still runs NCCL kernels, keeps HBM and NVLink busy and
// its clocks up. Set from seed claim C2 (Fernandez et al. 2024): when exposed communication
// cuts per-GPU throughput by 37.22 %, power per GPU falls by 5.87 %, so the exposed-comm phase
// draws 1 - 0.0587/0.3722 = 84 % of the compute phase's power: (0.84*605 - 70)/630 = 0.70.
constexpr double kCommActivity = 0.70;
// Pipeline-bubble idling: clocks up, no work; an estimate (nvidia-smi of a synchronising GPU).
constexpr double kIdleActivity = 0.30;

// Exposed time of `comm` overlapped with a compute window: what sticks out, plus the slowdown
// the communication kernels cause to the compute they share the GPU with.
inline double Exposed(double comm, double window, double overlap_eff, double slowdown) {
  const double usable = overlap_eff * window;
  return std::max(0.0, comm - usable) + slowdown * std::min(comm, usable);
}

// Byte counts of absurd (but valid) requests can exceed int64; saturate instead of overflowing.
int64_t Bytes(double v) {
  constexpr double kMax = 9.0e18;
  return v >= kMax ? static_cast<int64_t>(kMax) : (v <= 0 ? 0 : static_cast<int64_t>(v));
}

int Clamp(int v, int lo, int hi) { return std::max(lo, std::min(v, hi)); }

bool LowPrecision(Precision p) { return IsLowPrecision(p); }

// Learned routing leaves some experts above an even share. Loss-free balancing (Wang et al. 2024,
// arXiv 2408.15664, used by DeepSeek-V3) keeps the per-batch maximum violation, max load / mean
// load - 1, near 0.2 once training settles (their MaxVio_batch curves); an estimate.
constexpr double kExpertMaxViolation = 0.2;

// Load of the busiest of `ep` ranks holding `experts` experts between them, relative to an even
// share, under learned routing. With expert loads of spread sigma, the busiest of E experts sits
// sigma * sqrt(2 ln E) above the mean (the expected maximum of E normal draws), so sigma =
// MaxVio / sqrt(2 ln E); a rank averages E/ep experts (sigma / sqrt(E/ep)) and the busiest of ep
// ranks sits sqrt(2 ln ep) of those above the mean.
double RoutingImbalance(double experts, double ep) {
  if (ep <= 1 || experts <= 1) return 1.0;
  const double sigma = kExpertMaxViolation / std::sqrt(2.0 * std::log(experts));
  return 1.0 + sigma / std::sqrt(experts / ep) * std::sqrt(2.0 * std::log(ep));
}

// The share of an eager layer's operator dispatches a fused layer keeps: of the 52 autograd
// operators of a Llama decoder layer's forward (GlobalParams::layer_host_s), a layer whose norms,
// rotary embedding, activation and residual adds run as fused kernels, hand-written (Transformer
// Engine, Megatron, Apex, Triton) or generated (torch.compile's Inductor), launches the 7
// projections, the attention kernel and about 8 fused kernels (two norms with their residual
// adds, rotary on q and k, SwiGLU): 16.
constexpr double kFusedHostShare = 16.0 / 52.0;

}  // namespace

StepModel::StepModel(const Scenario& s, const Catalog& catalog, const Profile& profile)
    : s_(s), shape_(s.workload.model) {
  const Accelerator* acc = ScenarioAccelerator(s, catalog);
  if (acc == nullptr) {
    status_ = absl::NotFoundError(absl::StrCat(
        "scenario.cluster.accelerator: unknown accelerator '", s.cluster.accelerator, "'"));
    return;
  }
  const Framework* framework = nullptr;
  std::string name = s.framework;
  StackOptions options = s.stack;
  absl::StatusOr<Stack> stack =
      ResolvePricedStack(&name, &options, s.workload.precision, "scenario", &framework);
  if (!stack.ok()) {
    status_ = stack.status();
    return;
  }
  ApplyRecipePreset(catalog, options, s.workload.model, *acc, s.workload.precision,
                    s.cluster.num_gpus, "scenario.stack", &*stack);
  Init(*acc, *framework, *stack, profile);
}

StepModel::StepModel(const Scenario& s, const Accelerator& accelerator, const Framework& framework,
                     const Stack& stack, const Profile& profile)
    : s_(s), shape_(s.workload.model) {
  Init(accelerator, framework, stack, profile);
}

namespace {

// A layer's parameter tensors as shares of its dense parameters, in the order backward produces
// their gradients: down projection, up (and gate), the FFN's norm, output projection, QKV (or v,
// k, q when the framework keeps them apart), the attention's norm. One share of 1 for a layer the
// split does not describe (MLA, Mamba, MoE, hybrids).
std::vector<double> LayerTensorShares(const Shape& m, const ParamCount& params,
                                      bool separate_projections) {
  const double dense = params.per_layer_dense();
  if (m.mla || m.moe || m.n_mamba > 0 || dense <= 0) return {1.0};
  const double h = m.hidden;
  const double down = m.ffn * h, up = h * m.mlp_up_out;
  const double o = m.heads * m.v_head_dim * h, qkv = h * m.qkv_out;
  const double norm = (dense - (down + up + o + qkv)) / 2;
  if (norm < 0) return {1.0};
  // Each tensor as DDP meets it; a framework that keeps projections apart has two (gate and up)
  // or three (v, k, q) where a fused one has one.
  const bool split_up = separate_projections && m.gated;
  const double q = h * m.heads * m.qk_head_dim, kv = (qkv - q) / 2;
  std::vector<double> shares;
  shares.reserve(9);
  shares.push_back(down);
  shares.push_back(split_up ? up / 2 : up);
  if (split_up) shares.push_back(up / 2);
  shares.push_back(norm);
  shares.push_back(o);
  if (separate_projections) {
    shares.push_back(kv);
    shares.push_back(kv);
    shares.push_back(q);
  } else {
    shares.push_back(qkv);
  }
  shares.push_back(norm);
  for (double& x : shares) x /= dense;
  return shares;
}

}  // namespace

void StepModel::Init(const Accelerator& accelerator, const Framework& framework, const Stack& stack,
                     const Profile& profile) {
  const Scenario& s = s_;
  acc_ = &accelerator;
  framework_ = &framework;
  stack_ = stack;
  params_ = CountParams(shape_);
  const AcceleratorParams& fitted = profile.ForAccelerator(acc_->family);
  hw_ = MakeHardware(*acc_, fitted, stack_, profile.stack, s.workload.precision,
                     s.cluster.gpus_per_node, s.cluster.inter_node_gbps_per_gpu);
  // The 16-bit GEMMs' hardware: hw_ itself unless the matmuls run in 8 or 4 bits.
  hw16_ = LowPrecision(s.workload.precision)
              ? MakeHardware(*acc_, fitted, stack_, profile.stack, Precision::kBf16,
                             s.cluster.gpus_per_node, s.cluster.inter_node_gbps_per_gpu)
              : hw_;
  unfused_attention_ =
      UnfusedAttentionOf(stack_.attention, GenerationOf(acc_->family), shape_.qk_head_dim,
                         shape_.v_head_dim, stack_.software_date);
  if (unfused_attention_ != UnfusedAttention::kNo) {
    hw_.math_attention = hw16_.math_attention = true;
  }
  hw_.in_network_reduction = hw16_.in_network_reduction = s.cluster.in_network_reduction;
  if (s.cluster.inter_node_latency_us > 0) {
    hw_.alpha_inter_s = hw16_.alpha_inter_s = s.cluster.inter_node_latency_us * 1e-6;
  }
  // The stack's libraries at their era's maturity (model/profile.h MaturityParams).
  const double maturity = profile.maturity.Factor(GenerationOf(acc_->family), stack_.software_date);
  for (Hardware* hw : {&hw_, &hw16_}) {
    hw->gemm_eff *= maturity;
    hw->attn_eff *= maturity;
  }
  overlap_eff_ = profile.stack.overlap_eff;
  stack_efficiency_ = profile.stack.efficiency;
  comm_slowdown_ = profile.global.comm_slowdown;
  // The host's fixed work once a step and the wait at the step's global synchronisations for
  // the slowest of the ranks, all of which a graph of the whole step (optimizer, gradient
  // clipping and loss reduction inside) replays without the host, and a step compiled as one
  // program runs without it (FrameworkBehaviour::step_is_one_program).
  const bool hostless_step = stack_.full_step_graph || framework.behaviour.step_is_one_program;
  step_host_s_ = hostless_step ? 0.0
                               : profile.global.step_host_s +
                                     profile.global.step_sync_s *
                                         std::log2(static_cast<double>(s.cluster.num_gpus));
  // The host's dispatch of a layer (GlobalParams::layer_host_s): none where the step has no host
  // on its path or a CUDA graph replays the layer from one launch; fused or compiled kernels
  // dispatch kFusedHostShare of an eager layer's operators.
  const double dispatched = hostless_step || stack_.cuda_graphs       ? 0.0
                            : stack_.compiled || stack_.fused_kernels ? kFusedHostShare
                                                                      : 1.0;
  layer_host_s_ = dispatched * profile.global.layer_host_s;
  // A TP all-gather's bytes an element (FrameworkBehaviour::tp_gathers_quantized): the quantized
  // copy where the stack casts before it gathers, 16 bits otherwise and for the row- and
  // block-scaled recipes (torchtitan's float8 TP is tensorwise only; Transformer Engine gathers
  // Float8Block inputs in high precision, force_hp_input_gather).
  const bool gathers_quantized = LowPrecision(s.workload.precision) &&
                                 framework.behaviour.tp_gathers_quantized &&
                                 !ScalesByRowOrBlock(stack_.fp8_recipe);
  tp_gather_bytes_ = gathers_quantized ? hw_.matmul_bytes : kBf16;
  ssd_flops_per_sm_clock_ = 1e3 * profile.global.ssd_kflops_per_sm_clock;
  pads_vocab_ = framework.family == "megatron";
  if (framework.behaviour.ddp_bucket_bytes > 0) {
    ddp_layer_tensors_ =
        LayerTensorShares(shape_, params_, framework.behaviour.separate_projections);
  }
  model_flops_per_token_ = ModelFlopsPerToken(shape_, s.workload.seq_len);
  moe_balanced_ = s.workload.model.moe.force_balance;
  moe_ = profile.moe;
}

struct StepModel::BlockContext {
  int tp = 1, cp = 1, ep = 1, etp = 1;
  bool sp = false;
  double micro_batch = 1;
  double seq = 0;         // full sequence
  double local_seq = 0;   // this CP rank's share
  double tokens = 0;      // micro_batch * local_seq: the tokens a TP group works on
  double rep_tokens = 0;  // tokens held per GPU outside the TP-split GEMMs (/tp with SP)
  bool low_precision = false;
  bool modules = false;               // recompute by module: the blocks price each module's redo
  bool separate_projections = false;  // FrameworkBehaviour::separate_projections
  // Casts of a block's input under fp8: one per linear layer that reads it (torchao's Float8Linear
  // casts its own input), or one for all when the stack casts the input once before TP's
  // all-gather (torchtitan's PrepareFloat8ModuleInput, tensorwise scaling under TP only).
  double attn_input_casts = 1, ffn_input_casts = 1;
  // The share of a step's weight casts one micro-batch pays: 1 / micro-batches when the stack
  // caches its low-precision weights for the step, 1 otherwise.
  double weight_cast_share = 1;
};

void StepModel::AddAttentionGemms(const BlockContext& x, BlockCost* b) const {
  const Shape& m = shape_;
  const double h = m.hidden, tp = x.tp, t = x.tokens;
  // The linear layers as (M, N, K) of the forward GEMM; TP splits N (column parallel) or K (row
  // parallel). MLA's down-projections to the latents are replicated across TP ranks
  // (Megatron-Core MLASelfAttention: linear_q_down_proj / linear_kv_down_proj are not split), and
  // under sequence parallelism each rank runs them on its own sequence shard, then gathers the
  // latents (multi_latent_attention.py _qkv_down_projection: "Linear: [s / TP, b, q_lora_rank]").
  absl::InlinedVector<std::array<double, 3>, 5> gemms;  // at most five: no allocation
  if (m.mla) {
    const double nope = m.qk_head_dim - m.qk_rope, own = x.rep_tokens;
    if (m.q_lora > 0) {
      gemms.push_back({own, m.q_lora, h});
      gemms.push_back({t, m.heads * m.qk_head_dim / tp, m.q_lora});
    } else {
      gemms.push_back({t, m.heads * m.qk_head_dim / tp, h});
    }
    gemms.push_back({own, m.kv_lora + m.qk_rope, h});
    // What the up-projections gather: the latents (and the rope keys), not the hidden state
    // (multi_latent_attention.py: gather_from_sequence_parallel_region of k_pos_emb; the
    // column-parallel up-projections gather their latent inputs under sequence parallelism).
    b->tp_gather_width = (m.q_lora > 0 ? m.q_lora : h) + m.kv_lora + m.qk_rope;
    gemms.push_back({t, m.heads * (nope + m.v_head_dim) / tp, m.kv_lora});
  } else if (x.separate_projections) {
    const double kv_out = m.kv_heads * m.head_dim / tp;
    gemms.push_back({t, m.heads * m.head_dim / tp, h});
    gemms.push_back({t, kv_out, h});
    gemms.push_back({t, kv_out, h});
  } else {
    gemms.push_back({t, m.qkv_out / tp, h});
  }
  gemms.push_back({t, h, m.heads * m.v_head_dim / tp});
  for (const auto& g : gemms) {
    const double f = GemmTime(hw_, g[0], g[1], g[2]);
    b->gemm_f += f;
    if (&g == &gemms.back()) b->row_f = f;  // the output projection
    b->gemm_b += GemmTime(hw_, g[0], g[2], g[1]) + GemmTime(hw_, g[2], g[1], g[0]);
    b->matmul_flops_f += 2.0 * g[0] * g[1] * g[2];
    // MLA's up-projections: from a latent (q_lora or kv_lora wide) to the heads.
    const bool up = x.modules && m.mla && (g[2] == m.q_lora || g[2] == m.kv_lora) &&
                    g[1] != m.q_lora && g[1] != m.kv_lora + m.qk_rope;
    if (up) {
      b->redo_f[static_cast<int>(RecomputeModule::kMlaUpProj)] += f;
      b->redo_flops[static_cast<int>(RecomputeModule::kMlaUpProj)] += 2.0 * g[0] * g[1] * g[2];
    }
  }
}

void StepModel::AddAttentionCore(const BlockContext& x, BlockCost* b) const {
  const Shape& m = shape_;
  // Attention core: full causal layers and windowed ones, weighted by their share. The kernels
  // take an effective key length twice the keys an average query sees (the causal half).
  const double local_heads = m.heads / x.tp;
  const double qk = m.qk_head_dim, v = m.v_head_dim;
  const auto attention = hw_.math_attention ? MathAttentionTime : AttentionTime;
  const double share = WindowedShare(m);
  for (const bool windowed : {false, true}) {
    const double w = windowed ? share : 1 - share;
    if (w <= 0) continue;
    const double keys = KeysPerQuery(m, x.seq, windowed);
    const double kv = windowed ? 2 * keys : x.seq;
    b->core_f += w * attention(hw_, x.micro_batch, x.local_seq, kv, local_heads, qk, v, false);
    b->core_b += w * attention(hw_, x.micro_batch, x.local_seq, kv, local_heads, qk, v, true);
    b->core_flops_f +=
        w * 2.0 * x.micro_batch * x.local_seq * keys * (m.qk_head_dim + m.v_head_dim) * local_heads;
  }
}

double StepModel::AttentionTraffic(const BlockContext& x) const {
  const Shape& m = shape_;
  const double h = m.hidden, tp = x.tp, t = x.tokens;
  // Memory-bound kernels, bytes per forward: the norm (read+write h) and the residual add (read
  // 2h, write h) on the replicated activations (split by TP only with sequence parallelism),
  // rotary embedding on q and k (MLA: on the rope part only, plus the two latent norms).
  double rope = 0;
  if (m.mla) {
    rope = t * 2 * (m.heads / tp + 1) * m.qk_rope * kBf16 +
           t * 2 * (m.q_lora + m.kv_lora) * kBf16;  // the latent norms
  } else if (m.rotary) {
    rope = t * 2 * (m.heads + m.kv_heads) * m.head_dim / tp * kBf16;
  }
  return NormResidualTraffic(x) + rope * hw_.composite_traffic_scale +
         InputCastTraffic(x, x.attn_input_casts * h, m.heads * m.v_head_dim / tp,
                          m.attn_params / tp);
}

StepModel::BlockCost StepModel::AttentionBlock(const BlockContext& x) const {
  BlockCost b;
  AddAttentionGemms(x, &b);
  AddAttentionCore(x, &b);
  const double bytes = AttentionTraffic(x);
  b.mem_f = MemTime(hw_, bytes, 6);
  b.mem_b = MemTime(hw_, 2 * bytes, 12);
  if (x.modules) {
    b.redo_f[static_cast<int>(RecomputeModule::kCoreAttn)] = b.core_f;
    b.redo_flops[static_cast<int>(RecomputeModule::kCoreAttn)] = b.core_flops_f;
    b.redo_f[static_cast<int>(RecomputeModule::kLayernorm)] = NormTime(x);
  }
  return b;
}

double StepModel::NormTime(const BlockContext& x) const {
  // One norm over the block's replicated input: read and write h a token.
  return MemTime(hw_, x.rep_tokens * 2 * shape_.hidden * StreamBytes() * NormScale(), 1);
}

double StepModel::StreamBytes() const {
  // The residual stream and the norms on it: fp32 under autocast over fp32 parameters (the
  // residual add promotes a bf16 matmul output to the fp32 stream, and autocast runs layer_norm
  // in fp32), else the training's 16 bits.
  return stack_.fp32_params ? kFp32 : kBf16;
}

double StepModel::InputCastTraffic(const BlockContext& x, double stream_in, double inner_in,
                                   double params) const {
  // Bytes a micro-batch's casts move in one block: the fp8 recipe casts every GEMM input (the
  // stream's norm output into the first GEMMs, stream_in wide, and the inner tensor into the
  // last, inner_in wide) and the weights; autocast over fp32 parameters casts only the fp32
  // ones, the norm output and the weights (the inner tensor is a bf16 matmul output already).
  const double t = x.tokens, weights = x.weight_cast_share * params;
  double bytes = 0;
  if (x.low_precision) bytes += (t * (stream_in + inner_in) + weights) * hw_.cast_bytes;
  if (stack_.fp32_params) bytes += (t * stream_in + weights) * kAutocastCastBytes;
  return bytes;
}

double StepModel::NormScale() const {
  return shape_.rms_norm ? hw_.composite_traffic_scale : hw_.traffic_scale;
}

double StepModel::NormResidualTraffic(const BlockContext& x) const {
  // The norm (read and write h) and the residual add (read 2h, write h), scaled as their kernels.
  const double h = shape_.hidden;
  return x.rep_tokens * h * StreamBytes() * (2 * NormScale() + 3 * hw_.traffic_scale);
}

double StepModel::ActivationTraffic(double rows, double width) const {
  // The activation function over an FFN's width: gated reads 2f and writes f, plain reads and
  // writes f.
  return shape_.gated ? rows * 3 * width * kBf16 * hw_.composite_traffic_scale
                      : rows * 2 * width * kBf16 * hw_.traffic_scale;
}

StepModel::BlockCost StepModel::MambaBlock(const BlockContext& x) const {
  // Mamba-2 mixer, heads split by TP (Megatron-Core MambaMixer): in_proj column-parallel,
  // out_proj row-parallel, the SSD scan's chunked kernels between them.
  const Shape& m = shape_;
  const double h = m.hidden, tp = x.tp, t = x.tokens;
  BlockCost b;
  const double gemms[2][3] = {{t, m.mamba_in_out / tp, h}, {t, h, m.mamba_inner / tp}};
  for (const auto& g : gemms) {
    const double f = GemmTime(hw_, g[0], g[1], g[2]);
    b.gemm_f += f;
    if (&g == &gemms[1]) b.row_f = f;  // out_proj
    b.gemm_b += GemmTime(hw_, g[0], g[2], g[1]) + GemmTime(hw_, g[2], g[1], g[0]);
    b.matmul_flops_f += 2.0 * g[0] * g[1] * g[2];
  }
  b.core_flops_f = t * MambaScanFlopsPerToken(m) / tp;
  // The scan's chunked kernels run at a rate per SM and clock (GlobalParams::
  // ssd_kflops_per_sm_clock), not at the tensor cores' peak; where the part's SM clock is not
  // known, at the attention kernels' 16-bit rate.
  const double rate = hw16_.sm_cycles_per_s > 0 ? hw16_.sm_cycles_per_s * ssd_flops_per_sm_clock_
                                                : hw16_.bf16_peak * hw16_.attn_eff;
  b.core_f = b.core_flops_f / (rate * hw16_.clock_scale) + kGemmFixedS;
  b.core_b = kAttnBackwardRatio * b.core_f;
  // Norm and residual on the replicated activations; the conv and the gated norm over the inner
  // width (read x, B, C and z, write y, several passes).
  double bytes = x.rep_tokens * 5 * h * kBf16 + t * 4 * m.mamba_in_out / tp * kBf16;
  bytes *= hw_.traffic_scale;
  if (x.low_precision)
    bytes +=
        (t * (h + m.mamba_inner / tp) + x.weight_cast_share * m.mamba_params / tp) * hw_.cast_bytes;
  b.mem_f = MemTime(hw_, bytes, 8);
  b.mem_b = MemTime(hw_, 2 * bytes, 16);
  if (x.modules) b.redo_f[static_cast<int>(RecomputeModule::kLayernorm)] = NormTime(x);
  return b;
}

StepModel::BlockCost StepModel::DenseFfnBlock(const BlockContext& x) const {
  const Shape& m = shape_;
  const double h = m.hidden, f = m.ffn, tp = x.tp, t = x.tokens;
  BlockCost b;
  // A gated FFN's gate and up projections as one GEMM, or as two of half the width.
  const bool split = x.separate_projections && m.gated;
  const double up = split ? m.mlp_up_out / 2 : m.mlp_up_out;
  const std::array<std::array<double, 3>, 3> gemms = {
      {{t, up / tp, h}, {t, h, f / tp}, {t, up / tp, h}}};
  for (int i = 0; i < (split ? 3 : 2); ++i) {
    const auto& g = gemms[i];
    const double f = GemmTime(hw_, g[0], g[1], g[2]);
    b.gemm_f += f;
    if (i == 1) {  // the down projection, which ends the layer
      b.row_f = b.tail_f = f;
      b.tail_flops = 2.0 * g[0] * g[1] * g[2];
    }
    b.gemm_b += GemmTime(hw_, g[0], g[2], g[1]) + GemmTime(hw_, g[2], g[1], g[0]);
    b.matmul_flops_f += 2.0 * g[0] * g[1] * g[2];
  }
  // Norm, residual add, and the activation function.
  double bytes = NormResidualTraffic(x) + ActivationTraffic(t, f / tp) +
                 InputCastTraffic(x, x.ffn_input_casts * h, f / tp, m.dense_ffn_params / tp);
  b.mem_f = MemTime(hw_, bytes, 6);
  b.mem_b = MemTime(hw_, 2 * bytes, 12);
  if (x.modules) {
    b.redo_f[static_cast<int>(RecomputeModule::kMlp)] = b.fwd();
    b.redo_flops[static_cast<int>(RecomputeModule::kMlp)] = b.matmul_flops_f;
    b.redo_f[static_cast<int>(RecomputeModule::kLayernorm)] = NormTime(x);
  }
  return b;
}

double StepModel::ExpertLoad(int ep) const {
  // The busiest EP rank's load (1 under forced balance); a capacity factor caps it, and a padded
  // capacity (Megatron's moe_pad_expert_input_to_capacity) is computed in full.
  if (shape_.capacity_factor > 0) return shape_.capacity_factor;
  return moe_balanced_ ? 1.0 : RoutingImbalance(shape_.experts, ep);
}

StepModel::ExpertBiasCost StepModel::ExpertBias(double rows, double local_experts) const {
  // Megatron-Core's TEGroupedMLP._apply_bias adds the second expert GEMM's bias outside the
  // GEMM: per local expert chunk t + b * p with the router probability p, then a cat and a cast
  // back to bf16. The probabilities are fp32 under a fused dispatcher (DeepEP and HybridEP take
  // fp32 probabilities only; Megatron-Core's flex dispatcher casts them) and bf16 otherwise (the
  // router's input dtype), and an fp32 p promotes the sum to fp32. Bytes per routed row of width
  // h, forward: bf16 b*p written (2h), read with t and summed (4h + 2h), cat (2h + 2h) = 12h;
  // fp32: 4h + (2h + 4h + 4h) + (4h + 4h) + the cast (4h + 2h) = 28h. Backward: the gradients of
  // b and p, each a product and a reduction over the gradient (bf16 12h), and under fp32 the
  // cast of the incoming gradient up and of t's gradient down (6h + 6h + 24h = 36h). Kernels: a
  // product and a sum per expert forward, about twice as many backward.
  ExpertBiasCost c;
  if (!shape_.expert_bias || !framework_->behaviour.expert_bias_outside_gemm || rows <= 0) {
    return c;
  }
  const double h = shape_.expert_width;  // the routed rows' width (the latent, if any)
  const bool fp32 = stack_.fused_dispatch;
  c.fwd_s = MemTime(hw_, rows * h * (fp32 ? 28.0 : 12.0), 2 * local_experts + 2);
  c.bwd_s = MemTime(hw_, rows * h * (fp32 ? 36.0 : 12.0), 4 * local_experts + 2);
  return c;
}

void StepModel::AddSharedExperts(const BlockContext& x, BlockCost* b) const {
  const Shape& m = shape_;
  const double h = m.hidden, tp = x.tp;
  // Shared experts: a dense FFN of width shared_ffn over the TP group's tokens.
  if (m.shared_ffn <= 0) return;
  const double t = x.tokens;
  const double gemms[2][3] = {{t, m.shared_up_out / tp, h}, {t, h, m.shared_ffn / tp}};
  for (const auto& g : gemms) {
    const double f = GemmTime(hw_, g[0], g[1], g[2]);
    b->gemm_f += f;
    b->gemm_b += GemmTime(hw_, g[0], g[2], g[1]) + GemmTime(hw_, g[2], g[1], g[0]);
    b->matmul_flops_f += 2.0 * g[0] * g[1] * g[2];
    if (x.modules) {
      b->redo_f[static_cast<int>(RecomputeModule::kSharedExperts)] += f;
      b->redo_flops[static_cast<int>(RecomputeModule::kSharedExperts)] += 2.0 * g[0] * g[1] * g[2];
    }
  }
  if (x.modules) {
    b->redo_f[static_cast<int>(RecomputeModule::kSharedExperts)] +=
        MemTime(hw_, ActivationTraffic(t, m.shared_ffn / tp), 1);
  }
}

void StepModel::AddExpertComm(const BlockContext& x, double routed, double load,
                              BlockCost* b) const {
  const Shape& m = shape_;
  const double h = m.expert_width;  // a routed copy's width: the latent under latent MoE
  // Dispatch and combine: each GPU sends its routed copies (bf16 hidden states) over the EP
  // group; backward sends their gradients back the same two ways. EP ranks are consecutive
  // after the expert-tensor ranks (Megatron-Core's expert rank order etp-ep-dp-pp), so
  // domain / etp of them share an NVLink domain. With etp > 1 the etp ranks of an expert gather
  // the tokens they share and reduce-scatter the outputs.
  if (x.ep > 1) {
    const Group g{x.ep, Clamp(hw_.domain / x.etp, 1, x.ep)};
    const double send = routed * h * kBf16;
    // A fused dispatcher sends each token once to every remote NVLink domain holding one of its
    // experts and forwards it there over NVLink: with k experts spread evenly over D domains a
    // token reaches (D-1)(1-(1-1/D)^k) remote domains, where the plain all-to-all sends
    // k(D-1)/D copies across the network.
    // Group-limited routing (DeepSeek-V3 §2.1.2 node-limited routing: n_group 8 groups of the
    // 256 experts, one per node under its expert placement, a token's experts from topk_group 4
    // of them) confines those k experts to the domains of router_group_topk groups: a group's
    // experts sit on consecutive EP ranks, so it spans D / router_groups domains (at least one),
    // and a token reaches R(1-(1-1/R)^k) of the R domains it can reach. The plain all-to-all
    // sends each copy anyway, and under an even spread the share of copies that stay local is
    // 1/D either way, so its network volume is unchanged.
    double network_share = 1.0;
    if (stack_.fused_dispatch && g.domains() > 1) {
      const double d = g.domains();
      double reach = d;
      if (m.router_groups > 0 && m.router_group_topk > 0) {
        reach = std::min(d, m.router_group_topk * std::max(1.0, d / m.router_groups));
      }
      network_share = reach * (1 - std::pow(1 - 1 / reach, m.top_k)) / m.top_k;
    }
    const double one = AllToAllTime(hw_, g, send, network_share) / moe_.a2a_eff;
    b->ep_f = 2 * one;
    b->ep_b = 2 * one;
    b->ep_bytes = 4 * send * (x.ep - 1) / x.ep;
  }
  if (x.etp > 1) {
    const Group g{x.etp, Clamp(hw_.domain, 1, x.etp)};
    const double msg = routed * x.etp * h * kBf16 * load;
    const double one = CollectiveTime(hw_, Collective::kAllGather, g, msg) +
                       CollectiveTime(hw_, Collective::kReduceScatter, g, msg);
    b->ep_f += one;
    b->ep_b += one;
    b->ep_bytes += 2 * 2.0 * (x.etp - 1) / x.etp * msg;
  }
}

StepModel::ExpertRows StepModel::RowsOf(const BlockContext& x) const {
  const Shape& m = shape_;
  ExpertRows r;
  r.own = x.tokens / x.tp;
  r.routed = r.own * m.top_k;
  r.local_experts = m.experts / x.ep;
  // Tokens per local expert on the busiest rank: an even share times its load.
  r.load = ExpertLoad(x.ep);
  r.per_expert = r.routed * x.etp * x.ep / m.experts * r.load;
  r.rows = r.local_experts * r.per_expert;
  return r;
}

void StepModel::AddExpertGemms(const BlockContext& x, const ExpertRows& r, BlockCost* b) const {
  const Shape& m = shape_;
  const double h = m.hidden, hl = m.expert_width, etp = x.etp;
  const double local_experts = r.local_experts, per_expert = r.per_expert;
  const double up = m.expert_up_out / etp, fe = m.expert_ffn / etp;
  // One local expert is one GEMM (Transformer Engine's GroupedLinear with num_gemms = 1 issues a
  // single cuBLAS call); from two on, each group loses moe.grouped_gemm_krows rows' worth.
  const double gg =
      local_experts >= 2 ? 1.0 + 1000 * moe_.grouped_gemm_krows / std::max(1.0, per_expert) : 1.0;
  b->gemm_f = gg * (GroupedGemmTime(hw_, local_experts, per_expert, up, hl) +
                    GroupedGemmTime(hw_, local_experts, per_expert, hl, fe));
  b->gemm_b = gg * (GroupedGemmTime(hw_, local_experts, per_expert, hl, up) +
                    GroupedGemmTime(hw_, local_experts, hl, up, per_expert) +
                    GroupedGemmTime(hw_, local_experts, per_expert, fe, hl) +
                    GroupedGemmTime(hw_, local_experts, fe, hl, per_expert));
  b->matmul_flops_f = 2.0 * local_experts * per_expert * (up * hl + hl * fe);
  if (m.latent_proj_params > 0) {
    const double own = r.own;
    for (const auto& g : {std::array<double, 3>{own, hl, h}, std::array<double, 3>{own, h, hl}}) {
      b->gemm_f += GemmTime(hw_, g[0], g[1], g[2]);
      b->gemm_b += GemmTime(hw_, g[0], g[2], g[1]) + GemmTime(hw_, g[2], g[1], g[0]);
      b->matmul_flops_f += 2.0 * g[0] * g[1] * g[2];
    }
  }
  // Router: a replicated (tokens x experts) GEMM in fp32 or bf16 (Megatron-Core
  // moe_router_dtype), never fp8: a plain linear outside Transformer Engine, timed at the 16-bit
  // rate (hw16_).
  const double router = GemmTime(hw16_, r.own, m.experts, h);
  b->gemm_f += router;
  b->gemm_b += 2 * router;
  b->matmul_flops_f += 2.0 * r.own * m.experts * h;
}

double StepModel::MoeTraffic(const BlockContext& x, const ExpertRows& r) const {
  const Shape& m = shape_;
  const double h = m.hidden, hl = m.expert_width, tp = x.tp, etp = x.etp;
  const double fe = m.expert_ffn / etp, rows = r.rows;
  // Memory-bound: norm and residual; router softmax/top-k; permute and unpermute of the routed
  // copies (read + write h each way) and the probability-weighted combine; the experts'
  // activation function; the shared experts' activation.
  double bytes =
      (r.own * m.experts * 3 * kFp32 + (2 * r.routed + 2 * rows) * hl * kBf16) * hw_.traffic_scale +
      NormResidualTraffic(x) + ActivationTraffic(rows, fe) +
      ActivationTraffic(x.tokens, m.shared_ffn / tp);
  if (x.low_precision) {
    bytes += (rows * (hl + fe) + x.tokens * (h + m.shared_ffn / tp)) * hw_.cast_bytes +
             x.weight_cast_share *
                 (r.local_experts * m.expert_params / etp + m.shared_params / tp) * hw_.cast_bytes;
    if (m.latent_proj_params > 0) {  // the projections' inputs and weights
      bytes += (r.own * (h + hl) + x.weight_cast_share * m.latent_proj_params) * hw_.cast_bytes;
    }
  }
  return bytes;
}

StepModel::BlockCost StepModel::MoeBlock(const BlockContext& x) const {
  // Megatron-Core's MoE layer with the all-to-all token dispatcher: the router scores the
  // GPU's own tokens (the sequence-parallel shard when tp > 1), the dispatch all-to-all sends
  // each routed copy to the EP rank holding its expert, the etp ranks of an expert gather their
  // tokens, the local experts run as one grouped GEMM, and the combine all-to-all brings the
  // outputs back. Shared experts run as a dense FFN split by TP.
  // Under latent MoE the experts, their permutes and the all-to-alls work at the latent width
  // (Shape::expert_width); a replicated (TE "duplicated") projection takes each token the GPU
  // routes from h to the latent before the dispatch and another back after the combine.
  const Shape& m = shape_;
  const ExpertRows r = RowsOf(x);
  BlockCost b;
  AddExpertGemms(x, r, &b);
  const double routed_gemm_f = b.gemm_f, routed_gemm_b = b.gemm_b;  // no TP collective beside
  AddSharedExperts(x, &b);
  const double bytes = MoeTraffic(x, r);
  const double fe = m.expert_ffn / x.etp;
  b.mem_f = MemTime(hw_, bytes, 12);
  b.mem_b = MemTime(hw_, 2 * bytes, 24);
  const ExpertBiasCost bias = ExpertBias(r.rows, r.local_experts);
  b.mem_f += bias.fwd_s;
  b.mem_b += bias.bwd_s;
  if (x.modules) {
    b.redo_f[static_cast<int>(RecomputeModule::kMoeAct)] =
        MemTime(hw_, ActivationTraffic(r.rows, fe), 1);
    b.redo_f[static_cast<int>(RecomputeModule::kLayernorm)] = NormTime(x);
  }
  AddExpertComm(x, r.routed, r.load, &b);
  // The whole MoE MLP rebuilt: its forward (the all-to-alls again, counted with them).
  if (x.modules) {
    b.redo_f[static_cast<int>(RecomputeModule::kMoe)] = b.fwd();
    b.redo_flops[static_cast<int>(RecomputeModule::kMoe)] = b.matmul_flops_f;
  }
  // TP-group collectives. Under sequence parallelism the router and the dispatcher work on the
  // rank's own sequence shard, and the dispatcher's only tensor-parallel group is the experts'
  // (Megatron-Core token_dispatcher.py: self.tp_group = pg_collection.expt_tp, its gathers in
  // AddExpertComm): the layer's TP-group collectives are its shared experts', an MLP split by TP
  // that gathers the shards and reduce-scatters its output; none without shared experts.
  // Without sequence parallelism every rank holds every token: one all-reduce, as a dense FFN.
  if (x.sp) {
    b.tp_share = m.shared_ffn > 0 ? 1.0 : 0.0;
    b.solo_gemm_f = routed_gemm_f;
    b.solo_gemm_b = routed_gemm_b;
  }
  return b;
}

double StepModel::FullRecomputeShare(const Parallelism& p) const {
  if (p.recompute != Recompute::kFull) return 0;
  if (p.recompute_layers <= 0) return 1;
  const double per_stage = static_cast<double>(s_.workload.model.layers) / std::max(1, p.pp);
  return std::min(1.0, p.recompute_layers / per_stage);
}

StepModel::Redo StepModel::RecomputeOf(const BlockCost& b, bool attention,
                                       const Parallelism& p) const {
  // Recompute in backward: a full recompute repeats the forward; selective recompute repeats the
  // modules asked for, else what the framework's policy drops.
  Redo r;
  const double flops_f = b.matmul_flops_f + b.core_flops_f;
  // What a rebuild of the whole block leaves out: nothing under PyTorch's checkpoint, the
  // layer's last projection where only what the backward consumes is recomputed.
  const bool as_needed = framework_->behaviour.recompute_only_what_backward_consumes;
  const double skip_f = as_needed ? b.tail_f : 0.0, skip_flops = as_needed ? b.tail_flops : 0.0;
  if (p.recompute == Recompute::kFull) {
    const double share = FullRecomputeShare(p);
    r.s = share * (b.fwd() - skip_f);
    r.flops = share * (flops_f - skip_flops);
    r.all_to_alls = share;
  } else if (p.recompute == Recompute::kSelective && p.recompute_modules != 0) {
    // A whole-block module (mlp, moe) rebuilds those inside it, the all-to-alls included.
    double whole = 0, whole_flops = 0;
    for (int i = 0; i < kRecomputeModules; ++i) {
      if ((p.recompute_modules & (1u << i)) == 0) continue;
      const bool block = i == static_cast<int>(RecomputeModule::kMlp) ||
                         i == static_cast<int>(RecomputeModule::kMoe);
      (block ? whole : r.s) += b.redo_f[i];
      (block ? whole_flops : r.flops) += b.redo_flops[i];
    }
    if (whole > 0) r = {whole - skip_f, whole_flops - skip_flops, 1.0};
  } else if (p.recompute == Recompute::kSelective) {
    switch (framework_->behaviour.selective) {
      case SelectivePolicy::kAttentionCore:  // the attention core and memory-bound kernels
        r.s = (attention ? b.core_f : 0.0) + b.mem_f;
        r.flops = attention ? b.core_flops_f : 0.0;
        break;
      case SelectivePolicy::kEveryOtherMatmul:  // half the GEMMs and the memory-bound kernels
        r.s = 0.5 * b.gemm_f + b.mem_f;
        r.flops = 0.5 * b.matmul_flops_f;
        break;
      case SelectivePolicy::kHalfTheLayers:  // a full forward on half the layers
        r.s = 0.5 * b.fwd();
        r.flops = 0.5 * flops_f;
        break;
    }
  }
  return r;
}

StepModel::BlockContext StepModel::MakeBlockContext(const Parallelism& p) const {
  BlockContext x;
  x.tp = p.tp;
  x.cp = p.cp;
  x.ep = std::max(1, p.ep);
  x.etp = std::max(1, p.etp);
  x.sp = p.sp();
  x.micro_batch = p.micro_batch;
  x.seq = s_.workload.seq_len;
  x.local_seq = x.seq / p.cp;
  x.tokens = x.micro_batch * x.local_seq;
  x.rep_tokens = x.sp ? x.tokens / p.tp : x.tokens;
  x.low_precision = LowPrecision(s_.workload.precision);
  x.modules = p.recompute == Recompute::kSelective && p.recompute_modules != 0;
  x.separate_projections = framework_->behaviour.separate_projections;
  const bool cast_before_gather = stack_.fp8_recipe == Fp8Recipe::kTensorwise && p.tp > 1;
  if (x.separate_projections && !cast_before_gather && !shape_.mla) {
    x.attn_input_casts = 3;
    x.ffn_input_casts = shape_.gated ? 2 : 1;
  }
  x.weight_cast_share = WeightCastShare(p);
  return x;
}

int64_t StepModel::MicroBatchesPerStep(const Parallelism& p) const {
  const int64_t dp = std::max(1, s_.cluster.num_gpus / (p.tp * p.pp * p.cp));
  return s_.workload.global_batch / (dp * std::max(1, p.micro_batch));
}

double StepModel::UnpairedPassShare(const Parallelism& p) const {
  // Megatron-Core (pipeline_parallel/schedules.py, combined_1f1b.py): without pipelining the
  // schedule is F0, then F(i+1) with B(i), then the last B: one unpaired pass each way in m
  // micro-batches. With pipelining the overlap requires interleaving, and rank r runs
  // (pp - r - 1) * 2 + (vpp - 1) * pp + 1 warm-up chunk forwards (the +1 "so that the forward and
  // backward computations are independent in all 1f1b steps") and as many cool-down backwards,
  // of m * vpp chunks each way; averaged over the ranks, (pp - 1) + (vpp - 1) * pp + 1.
  const double m = static_cast<double>(std::max<int64_t>(1, MicroBatchesPerStep(p)));
  if (p.pp <= 1) return 1.0 / m;
  // DualPipe pairs every chunk but those of its PP/2 - 1 bubble steps and one more each way.
  if (StagesPerGpu(p) == 2) return std::min(1.0, (p.pp / 2.0) / m);
  const double v = std::max(1, p.vpp);
  const double warmup = (p.pp - 1.0) + (v - 1.0) * p.pp + 1.0;
  return std::min(1.0, warmup / (m * v));
}

double StepModel::WeightCastShare(const Parallelism& p) const {
  if (!framework_->behaviour.low_precision_weights_cached) return 1.0;
  return 1.0 / static_cast<double>(std::max<int64_t>(1, MicroBatchesPerStep(p)));
}

LayerCost StepModel::ComputeLayer(const Parallelism& p) const {
  const Shape& m = shape_;
  const BlockContext x = MakeBlockContext(p);

  // Each block kind once, then the layer average weighted by the layers that have it.
  struct Kind {
    double count;
    BlockCost cost;
    bool attention;
  };
  BlockList<Kind> kinds;
  if (m.n_attention > 0) kinds.push_back({m.n_attention, AttentionBlock(x), true});
  if (m.n_mamba > 0) kinds.push_back({m.n_mamba, MambaBlock(x), true});
  if (m.n_dense_ffn > 0) kinds.push_back({m.n_dense_ffn, DenseFfnBlock(x), false});
  if (m.n_moe > 0) kinds.push_back({m.n_moe, MoeBlock(x), false});

  LayerCost c;
  BlockCost gemms;   // the GEMMs beside TP collectives (gemm_f, gemm_b, row_f), weighted
  TpCollectives tp;  // the layer's TP collectives, weighted
  // A block's that gathers the hidden state (all but MLA's attention), priced once.
  const TpCollectives standard_tp = BlockTensorParallel(p, x, m.hidden);
  const double per_layer = 1.0 / std::max(1.0, m.layers);
  for (const Kind& k : kinds) {
    const BlockCost& b = k.cost;
    const double w = k.count * per_layer;
    c.fwd_s += w * b.fwd();
    c.bwd_s += w * b.bwd();
    gemms.gemm_f += w * (b.gemm_f - b.solo_gemm_f);
    gemms.gemm_b += w * (b.gemm_b - b.solo_gemm_b);
    gemms.row_f += w * b.row_f;
    const Redo redo = RecomputeOf(b, k.attention, p);
    c.recompute_s += w * redo.s;
    c.flops_redo += w * redo.flops;
    if (b.tp_share > 0) {
      tp.Add(b.tp_gather_width > 0 ? BlockTensorParallel(p, x, b.tp_gather_width) : standard_tp,
             w * b.tp_share);
    }
    // Expert parallelism: the dispatch/combine all-to-alls sit between the router and the
    // experts and between the experts and the residual, on the critical path unless the stack
    // overlaps them with another micro-batch's compute (below).
    c.ep_fwd_s += w * b.ep_f;
    c.ep_bwd_s += w * (b.ep_b + redo.all_to_alls * b.ep_f);
    c.ep_bytes += w * b.ep_bytes;
  }
  c.ep_exposed_s = c.ep_fwd_s + c.ep_bwd_s;
  if (stack_.ep_comm_overlap) {
    // Megatron-Core's combined 1F1B runs one micro-batch's forward beside another's backward:
    // each pass's all-to-alls hide behind the other pass's compute (the pair's compute, recompute
    // included, is the window for the pair's all-to-alls). The passes with no partner, the
    // warm-up forwards and cool-down backwards, keep theirs exposed.
    const double a2a = c.ep_fwd_s + c.ep_bwd_s;
    const double paired =
        Exposed(a2a, c.fwd_s + c.bwd_s + c.recompute_s, overlap_eff_, comm_slowdown_);
    const double alone = UnpairedPassShare(p);
    c.ep_exposed_s = alone * a2a + (1 - alone) * paired;
  }
  AddTensorParallel(p, tp, gemms, &c);
  if (m.n_attention > 0) {
    const double w = m.n_attention * per_layer;
    const BlockCost& attn = kinds.front().cost;
    AddContextParallel(p, x, w, w * attn.core_f, w * attn.core_b, &c);
  }
  AddHostWait(p, &c);
  return c;
}

StepModel::TpCollectives StepModel::BlockTensorParallel(const Parallelism& p, const BlockContext& x,
                                                        double gather_width) const {
  TpCollectives k;
  if (p.tp <= 1) return k;
  const Group g{p.tp, std::min(p.tp, hw_.domain)};
  const double msg = x.tokens * shape_.hidden * kBf16;
  if (x.sp) {
    const double gathered = x.tokens * gather_width * tp_gather_bytes_;
    k.gather = CollectiveTime(hw_, Collective::kAllGather, g, gathered);
    k.scatter = CollectiveTime(hw_, Collective::kReduceScatter, g, msg);
    k.sent = (p.tp - 1.0) / p.tp * (gathered + msg);
  } else {
    k.all_reduce = CollectiveTime(hw_, Collective::kAllReduce, g, msg);
    k.sent = 2.0 * (p.tp - 1) / p.tp * msg;
  }
  return k;
}

void StepModel::AddTensorParallel(const Parallelism& p, const TpCollectives& k,
                                  const BlockCost& gemms, LayerCost* c) const {
  // Tensor parallelism: one collective of the micro-batch's activations after each block forward
  // and one backward (all-reduce, or all-gather + reduce-scatter with sequence parallelism); a
  // full recompute repeats the forward's. They sit on the compute stream, exposed, unless the
  // stack overlaps them with the GEMMs they feed (userbuffers / async TP split each GEMM into
  // chunks and move one chunk while the previous multiplies). Backward moves the same widths the
  // other way (the row-parallel output's gradient gathered, the column-parallel input's gradient
  // reduce-scattered).
  if (p.tp <= 1) return;
  const int tp = p.tp;
  const double one = k.gather + k.scatter + k.all_reduce;
  c->tp_fwd_s = one;
  const double redone = FullRecomputeShare(p);
  c->tp_bwd_s = one * (1 + redone);
  c->tp_exposed_s = c->tp_fwd_s + c->tp_bwd_s;
  if (stack_.tp_comm_overlap && framework_->behaviour.tp_overlap_own_shard_only) {
    c->tp_exposed_s = OwnShardOverlap(tp, k, redone, gemms);
  } else if (stack_.tp_comm_overlap) {
    c->tp_exposed_s = Exposed(c->tp_fwd_s, gemms.gemm_f, overlap_eff_, comm_slowdown_) +
                      Exposed(c->tp_bwd_s, gemms.gemm_b, overlap_eff_, comm_slowdown_);
  } else if (InEffect(framework_->behaviour.tp_input_grad_async_since)) {
    // The forward's collectives and a recompute's repeat of them block; backward, the
    // row-parallel layer's gather of its output gradient (sequence parallelism) blocks and the
    // column-parallel input gradient's collective runs beside its weight-gradient GEMM, which
    // does the forward's FLOPs (FrameworkBehaviour::tp_input_grad_async_since).
    c->tp_exposed_s = c->tp_fwd_s * (1 + redone) + k.gather + ColumnInputGradExposed(k, gemms);
  }
  c->tp_bytes = (2 + redone) * k.sent;
}

double StepModel::OwnShardOverlap(int tp, const TpCollectives& k, double redone,
                                  const BlockCost& gemms) const {
  // Asynchronous TP without chunked GEMMs (nanotron's tp_linear_async_communication, after
  // Megatron-LM's asynchronous linear layers; src/nanotron/parallel/tensor_parallel/functional.py
  // _ColumnLinearAsyncCommunication and _RowLinearAsyncCommunication @2411b022). Per block, with
  // sequence parallelism (tp_mode REDUCE_SCATTER):
  // - forward all-gather: beside the GEMM of the rank's own input shard, 1/tp of the
  //   column-parallel GEMM; the rest waits for the gathered input;
  // - forward reduce-scatter: after the row-parallel GEMM, blocking
  //   (differentiable_reduce_scatter_sum);
  // - backward all-gather of the output gradient: beside the row-parallel input-gradient GEMM of
  //   the rank's own shard, 1/tp of it (an input-gradient GEMM does the forward's FLOPs);
  // - backward reduce-scatter of the input gradient: beside the column-parallel weight-gradient
  //   GEMM (again the forward's FLOPs), as Megatron-LM's.
  // Without it (ALL_REDUCE): the row-parallel output's all-reduce blocks, the column-parallel
  // input gradient's all-reduce runs beside the weight-gradient GEMM. A full recompute repeats
  // the forward's collectives, overlapped as in the forward.
  const double column_f = gemms.gemm_f - gemms.row_f;
  const double fwd =
      Exposed(k.gather, column_f / tp, overlap_eff_, comm_slowdown_) + k.scatter + k.all_reduce;
  const double bwd = Exposed(k.gather, gemms.row_f / tp, overlap_eff_, comm_slowdown_) +
                     ColumnInputGradExposed(k, gemms);
  return fwd * (1 + redone) + bwd;
}

double StepModel::ColumnInputGradExposed(const TpCollectives& k, const BlockCost& gemms) const {
  // The backward collective of a column-parallel layer's input gradient (reduce-scatter, or
  // all-reduce without sequence parallelism) beside its weight-gradient GEMM, the forward's FLOPs.
  return Exposed(k.scatter + k.all_reduce, gemms.gemm_f - gemms.row_f, overlap_eff_,
                 comm_slowdown_);
}

double StepModel::LocalKvHeads(int tp) const {
  // Latent attention expands its keys and values per query head.
  const Shape& m = shape_;
  return std::max(1.0, (m.mla ? m.heads : m.kv_heads) / tp);
}

double StepModel::CpKvBytes(int tp, double tokens) const {
  return tokens * LocalKvHeads(tp) * (shape_.qk_head_dim + shape_.v_head_dim) * kBf16;
}

void StepModel::AddContextParallel(const Parallelism& p, const BlockContext& x, double w,
                                   double core_f, double core_b, LayerCost* c) const {
  // Context parallelism on attention layers, by the exchange the stack runs (Stack::cp_comm;
  // Transformer Engine's attention with context parallelism, Megatron-Core's cp_comm_type).
  if (p.cp <= 1) return;
  const double local_kv = LocalKvHeads(p.tp);
  const double kv_bytes = CpKvBytes(p.tp, x.micro_batch * x.local_seq);
  const Group all{p.cp, Clamp(hw_.domain / p.tp, 1, p.cp)};
  switch (stack_.cp_comm) {
    case CpComm::kRing:
      AddRingContextParallel(all, kv_bytes, w, core_f, core_b, c);
      return;
    case CpComm::kAllToAll:
      AddAllToAllContextParallel(p, x, w, local_kv, all, c);
      return;
    case CpComm::kAllGather:
      AddAllGatherContextParallel(all, kv_bytes, w, core_b, c);
      return;
    case CpComm::kHierarchical:
      break;
  }
  // a2a+p2p: an all-to-all inside each group of `a` ranks (one NVLink domain) gives each rank a
  // times the sequence for 1/a of the heads, the same bytes of keys and values; the ring then
  // passes those between the cp/a groups beside the attention core (Transformer Engine's
  // AttnFuncWithCPAndKVP2P with a two-level cp group).
  const int a = CpA2aRanks(p);
  if (a > 1) {
    AddAllToAllContextParallel(p, x, w, local_kv, Group{a, Clamp(hw_.domain / p.tp, 1, a)}, c);
  }
  const int rings = p.cp / a;
  if (rings > 1) {
    AddRingContextParallel(Group{rings, Clamp(hw_.domain / (p.tp * a), 1, rings)}, kv_bytes, w,
                           core_f, core_b, c);
  }
}

int StepModel::CpA2aRanks(const Parallelism& p) const {
  if (stack_.cp_comm != CpComm::kHierarchical || p.cp <= 1) return 0;
  if (p.cp_a2a > 0) return p.cp_a2a;
  const Shape& m = shape_;
  const int kv_heads = static_cast<int>(m.mla ? m.heads : m.kv_heads);
  return CpAllToAllRanks(CpComm::kHierarchical, p.cp, p.tp, hw_.domain, static_cast<int>(m.heads),
                         kv_heads > 0 ? kv_heads : static_cast<int>(m.heads));
}

void StepModel::AddRingContextParallel(const Group& g, double kv_bytes, double w, double core_f,
                                       double core_b, LayerCost* c) const {
  // The ring: g.ranks - 1 sends of a K/V chunk beside the attention's forward; K/V and their
  // gradients beside its backward.
  const double fwd = w * (g.ranks - 1) * CollectiveTime(hw_, Collective::kSendRecv, g, kv_bytes);
  c->cp_fwd_s += fwd;
  c->cp_bwd_s += 2 * fwd;
  c->cp_exposed_s += Exposed(fwd, core_f, overlap_eff_, comm_slowdown_) +
                     Exposed(2 * fwd, core_b, overlap_eff_, comm_slowdown_);
  c->cp_bytes += w * 3.0 * (g.ranks - 1) * kv_bytes;
}

void StepModel::AddAllGatherContextParallel(const Group& g, double kv_bytes, double w,
                                            double core_b, LayerCost* c) const {
  // The all-gather (Transformer Engine's AttnFuncWithCPAndKVAllGather, after Llama 3's context
  // parallelism, arXiv 2407.21783 section 3.3.2): the forward gathers the whole sequence's keys
  // and values before the attention; the backward gathers them again and reduce-scatters their
  // gradients. "KV all-gather between CP ranks is exposed" (its docstring): all of it blocks.
  const double whole = g.ranks * kv_bytes;
  const double gather = CollectiveTime(hw_, Collective::kAllGather, g, whole);
  const double scatter = CollectiveTime(hw_, Collective::kReduceScatter, g, whole);
  c->cp_fwd_s += w * gather;
  c->cp_bwd_s += w * (gather + scatter);
  c->cp_bytes += w * 3.0 * (g.ranks - 1) * kv_bytes;
  if (!framework_->behaviour.step_is_one_program) {
    c->cp_exposed_s += w * (2 * gather + scatter);
    return;
  }
  // Under XLA the gathers and the reduce-scatter are ops of the step's one program, and its
  // scheduler starts an asynchronous collective as early as its operand allows and waits for
  // it as late as its user allows (the latency-hiding scheduler, xla/service/
  // latency_hiding_scheduler.cc): the forward's gather needs the keys and values just
  // projected and the attention waits for it, but the backward's needs only the layer's saved
  // shard, so it runs beside the MLP's backward that precedes the attention's, and the
  // gradients' reduce-scatter beside the QKV projection's that follows: those two hide behind
  // the layer's backward less the attention core.
  c->cp_exposed_s +=
      w * gather + Exposed(w * (gather + scatter), c->bwd_s - core_b, overlap_eff_, comm_slowdown_);
}

void StepModel::AddAllToAllContextParallel(const Parallelism& p, const BlockContext& x, double w,
                                           double local_kv, const Group& g, LayerCost* c) const {
  // All-to-all (a2a; DeepSpeed-Ulysses, Transformer Engine's AttnFuncWithCPAndQKVOA2A): the
  // forward exchanges this rank's queries, keys and values of its 1/g.ranks of the sequence for
  // the whole sequence of 1/g.ranks of the heads, one all-to-all each, and the attention's output
  // back; the backward exchanges the output's gradient and the three input gradients the same
  // way. Each all-to-all blocks the compute stream, so all of it is exposed. The attention's own
  // FLOPs are those of the ring's split (the same score matrix, cut by heads instead of by
  // queries).
  const Shape& m = shape_;
  const double tokens = x.micro_batch * x.local_seq;
  const double q_bytes = tokens * std::max(1.0, m.heads / p.tp) * m.qk_head_dim * kBf16;
  const double k_bytes = tokens * local_kv * m.qk_head_dim * kBf16;
  const double v_bytes = tokens * local_kv * m.v_head_dim * kBf16;
  const double o_bytes = tokens * std::max(1.0, m.heads / p.tp) * m.v_head_dim * kBf16;
  double pass = 0;
  for (double bytes : {q_bytes, k_bytes, v_bytes, o_bytes}) {
    pass += CollectiveTime(hw_, Collective::kAllToAll, g, bytes) / kAllToAllRingShare;
  }
  c->cp_fwd_s += w * pass;
  c->cp_bwd_s += w * pass;
  c->cp_exposed_s += 2 * w * pass;
  c->cp_bytes += w * 2.0 * (q_bytes + k_bytes + v_bytes + o_bytes) * (g.ranks - 1) / g.ranks;
}

void StepModel::AddHostWait(const Parallelism& p, LayerCost* c) const {
  // The host dispatches a layer's operators in layer_host_s_ per micro-batch (forward, backward
  // and the recomputed forward's share) while the GPU runs what it queued: the host stays ahead
  // while the layer's GPU work is the longer, and the GPU waits for the difference when it is
  // not (small models, small micro-batches, wide tensor parallelism).
  //
  // A MoE layer's launches, its attention's with its experts', take moe.layer_overhead_s per
  // micro-batch (forward and backward) instead. A dropless layer copies its tokens per expert to
  // the host and waits for them (Megatron-Core's DeepSeek-V3 on GB200 write-up: the sync is what
  // keeps CUDA graphs off the experts). With the plain all-to-all dispatcher the launch queue is
  // empty when the host resumes and a long chain of short kernels follows (the write-up counts 72
  // router kernels before fusion, plus the permute and per-expert quantization kernels, and finds
  // "the CPU kernel launch speed cannot keep up with the kernel execution speed on GPU"): each
  // waits for its own launch, and the wait adds to the GPU's time. A fused dispatcher (DeepEP,
  // HybridEP) folds the preprocessing into a few kernels (17 in the write-up), and a padded
  // capacity has static sizes and no sync at all (Megatron-Core's all-to-all dispatcher skips the
  // copy when it drops and pads): the host keeps ahead, and only a layer whose GPU work is shorter
  // than its launches waits, for the difference. The 1F1B all-to-all overlap (ep_comm_overlap) runs
  // one micro-batch's forward beside another's backward, stage by stage with synchronisation
  // between the stages, which "aggravates the CPU overhead" (the same write-up, on why it left
  // the overlap off on GB200): each merged pass of a model chunk first builds the chunk's schedule
  // plan, moe.overlap_chunk_overhead_s, shared by the chunk's layers, and while the host syncs the
  // other micro-batch's queued work keeps the GPU busy, so again only a layer whose GPU work is
  // shorter than its launches and its share of the plan waits, for the difference, whatever the
  // dispatcher. CUDA graphs replay a padded layer's kernels (static shapes, no sync: Megatron-Core
  // captures MoE layers only when they drop and pad) from one launch: the host waits for nothing.
  // A graph of the whole step replays every layer from one launch, so a stack that captures it
  // has taken the host sync out of its dropless layers (MLPerf v6.0's DeepSeek-V3 configs size
  // each rank's expert buffers on the device, MOE_EXPERT_RANK_CAPACITY_FACTOR=4, and stash
  // activations in pages, MOE_PAGED_STASH, under CUDA_GRAPH_SCOPE=full_iteration;
  // data/mlperf-deepseekv3-v6.0.csv): the host waits for nothing.
  const Shape& m = shape_;
  const double gpu = c->fwd_s + c->bwd_s + c->recompute_s + c->tp_exposed_s + c->cp_exposed_s +
                     c->ep_exposed_s;  // per average layer
  // A recomputed forward dispatches its operators again: a third of a layer's forward and
  // backward launches, in the share of the forward it redoes.
  const double redo = c->fwd_s > 0 ? std::min(1.0, c->recompute_s / c->fwd_s) : 0.0;
  const double moe_share = m.n_moe / std::max(1.0, m.layers);
  // The other layers' dispatch, per average layer.
  const double dense_host = (1.0 - moe_share) * layer_host_s_ * (1.0 + redo / 3.0);
  double moe_host = 0;
  bool synced = false;  // the plain dispatcher's sync, outside the overlap
  const bool moe_graphed = (stack_.cuda_graphs && m.capacity_factor > 0) || stack_.full_step_graph;
  if (m.n_moe > 0 && !moe_graphed) {
    moe_host = moe_share * moe_.layer_overhead_s;
    // A rank's chunks (vpp, or DualPipe's two stages) share its layers / pp layers: each layer's
    // share of the plans, per micro-batch.
    if (stack_.ep_comm_overlap) {
      const double chunks = StagesPerGpu(p) == 2 ? 2.0 : std::max(1, p.vpp);
      moe_host += moe_.overlap_chunk_overhead_s * chunks * p.pp / std::max(1.0, m.layers);
    }
    synced = !(m.capacity_factor > 0 || stack_.fused_dispatch || stack_.ep_comm_overlap);
  }
  // After a sync the MoE launches all wait; otherwise the host's whole time per layer races the
  // GPU's.
  const double wait = synced ? moe_host + std::max(0.0, dense_host - gpu)
                             : std::max(0.0, dense_host + moe_host - gpu);
  // A third of the launches are the forward's, two thirds the backward's.
  c->fwd_s += wait / 3;
  c->bwd_s += 2 * wait / 3;
  c->host_wait_s = wait;
}

StepModel::StateShards StepModel::Shards(const Parallelism& p) const {
  // Dense parameters are replicated over the dp * cp ranks of a TP group; routed experts over
  // the expert-data-parallel ranks, tp * cp * dp / (ep * etp) (Megatron-Core's expert_dp group).
  StateShards st;
  const int ep = std::max(1, p.ep), etp = std::max(1, p.etp);
  const int dp = s_.cluster.num_gpus / (p.tp * p.pp * p.cp);
  const int n_dp = dp * p.cp;
  const int n_edp = std::max(1, p.tp * n_dp / (ep * etp));
  st.expert_split = static_cast<double>(ep) * etp;
  st.dense_ranks = n_dp;
  st.expert_ranks = n_edp;
  switch (p.sharding) {
    case Sharding::kHsdp:
      st.dense = std::max(1, std::min(p.shard_group, n_dp));
      st.expert = std::max(1, std::min(p.shard_group, n_edp));
      break;
    case Sharding::kFsdp:
    case Sharding::kZero1:
    case Sharding::kZero2:
      st.dense = n_dp;
      st.expert = n_edp;
      break;
    default:
      break;
  }
  return st;
}

namespace {

// What `modules` free of a block that `freed` describes (StepModel::SavedBlock::freed): what they
// rebuild; a whole-block module (mlp, moe) drops all but the block's input, the modules inside
// it included.
double FreedByModules(const std::array<double, kRecomputeModules>& freed, uint32_t modules) {
  double parts = 0, whole = 0;
  for (int i = 0; i < kRecomputeModules; ++i) {
    if ((modules & (1u << i)) == 0) continue;
    const bool block = i == static_cast<int>(RecomputeModule::kMlp) ||
                       i == static_cast<int>(RecomputeModule::kMoe);
    (block ? whole : parts) += freed[i];
  }
  return whole > 0 ? whole : parts;
}

}  // namespace

double StepModel::SavedUnderRecompute(const SavedBlock& b, const Parallelism& p,
                                      SelectivePolicy policy, double none, double input) {
  if (p.recompute == Recompute::kFull) return 0;
  if (p.recompute != Recompute::kSelective) return none;
  if (p.recompute_modules != 0) return none - FreedByModules(b.freed, p.recompute_modules);
  // Drop the norm outputs and the activation output; keep GEMM outputs (or half of them, or
  // keep whole layers on half the blocks, per the framework's policy).
  switch (policy) {
    case SelectivePolicy::kAttentionCore:
      return input + b.kept + (b.attention ? b.dropped : 0.0);
    case SelectivePolicy::kEveryOtherMatmul:
      return input + (b.attention ? b.kept + b.dropped : 0.5 * b.kept);
    case SelectivePolicy::kHalfTheLayers:
      return 0.5 * none;
  }
  return none;
}

// The activation blocks of one layer on average, per token of the TP group's micro-batch:
// what each kind of block keeps and drops, and what each recompute module frees. `in` is the
// bytes an element of a GEMM's saved input takes, `load` the busiest EP rank's expert load,
// `swiglu_in` the bytes an element of the routed experts' saved SwiGLU input takes.
BlockList<StepModel::SavedBlock> StepModel::BlocksOf(const Shape& m, const Parallelism& p,
                                                     double in, double load, double swiglu_in) {
  const double h = m.hidden, tp = p.tp;
  const double rep = p.sp() ? 1.0 / tp : 1.0;
  using M = RecomputeModule;
  const double norm_out = in * h * rep;  // the norm's output, the block's first GEMM input
  BlockList<SavedBlock> blocks;
  if (m.n_attention > 0) {
    // MLA also keeps its latents (replicated: the down-projections are not split).
    const double latents = m.mla ? (m.q_lora + m.kv_lora + m.qk_rope) * in : 0.0;
    SavedBlock b{m.n_attention, kBf16 * m.qkv_out / tp + latents, in * m.heads * m.v_head_dim / tp,
                 true};
    // mla_up_proj drops the up-projections' q, k and v (the latents stay).
    if (m.mla) b.freed[static_cast<int>(M::kMlaUpProj)] = kBf16 * m.qkv_out / tp;
    blocks.push_back(b);
  }
  if (m.n_mamba > 0) {
    blocks.push_back({m.n_mamba, kBf16 * m.mamba_in_out / tp, in * m.mamba_inner / tp, true});
  }
  if (m.n_dense_ffn > 0) {
    SavedBlock b{m.n_dense_ffn, kBf16 * m.mlp_up_out / tp, in * m.ffn / tp, false};
    b.freed[static_cast<int>(M::kMlp)] = norm_out + b.kept + b.dropped;  // all but its input
    blocks.push_back(b);
  }
  if (m.n_moe > 0) {
    const double etp = std::max(1, p.etp);
    // Rows this GPU's experts hold per token of the TP group (each routed copy once, gathered
    // over etp and split by it again in width).
    const double rows = m.top_k * load / tp * etp;
    const double shared = kBf16 * m.shared_up_out / tp + in * m.shared_ffn / tp;
    // Latent MoE: the routed copies are latent-wide, and the up-projection back to h keeps its
    // input (the combined latent of the GPU's own tokens).
    const double latent_in = m.latent_proj_params > 0 ? in * m.expert_width / tp : 0.0;
    const double kept = rows * (in * m.expert_width + swiglu_in * m.expert_up_out / etp) +
                        kBf16 * m.shared_up_out / tp + kFp32 * m.experts / tp + latent_in;
    const double dropped = rows * in * m.expert_ffn / etp + in * m.shared_ffn / tp;
    SavedBlock b{m.n_moe, kept, dropped, false};
    b.freed[static_cast<int>(M::kMoe)] = norm_out + kept + dropped;
    b.freed[static_cast<int>(M::kMoeAct)] = rows * in * m.expert_ffn / etp;
    b.freed[static_cast<int>(M::kSharedExperts)] = shared;
    blocks.push_back(b);
  }
  for (SavedBlock& b : blocks) b.freed[static_cast<int>(M::kLayernorm)] = norm_out;  // all blocks
  return blocks;
}

BlockList<StepModel::SavedBlock> StepModel::SavedBlocks(const Parallelism& p) const {
  // Activations saved per token (of the TP group's micro-batch), per block, in bytes. Replicated
  // across TP ranks unless sequence parallel: each block's input, its norm output, and the
  // residual (4h). Split by TP: the GEMMs' outputs that backward needs (attention: q/k/v and the
  // attention output; FFN: the input projections' outputs and the activation output). Flash
  // attention keeps no s*s score matrix (Korthikanti et al. 2022's 5as/h term is gone). MoE:
  // each routed copy's input, its projections and activation on the GPU that computes it.
  // In fp8 training a GEMM's input is saved as the quantized copy its weight-gradient GEMM reads
  // (Transformer Engine's Linear / LayerNormLinear / GroupedLinear save the FP8 input tensor for
  // backward): 1 byte an element; GEMM outputs kept for an activation's or attention's backward
  // stay bf16.
  const double in = SavedInputBytes();
  const double load = shape_.n_moe > 0 ? ExpertLoad(std::max(1, p.ep)) : 1.0;
  // The routed experts' SwiGLU input: bf16, or its fp8 copy where the framework caches it so.
  const double swiglu_in = framework_->behaviour.moe_swiglu_input_fp8 ? in : kBf16;
  return BlocksOf(shape_, p, in, load, swiglu_in);
}

double StepModel::SavedInputBytes() const {
  return LowPrecision(s_.workload.precision) ? kFp8Byte : kBf16;
}

StepModel::ActivationBytes StepModel::PerToken(const BlockList<SavedBlock>& blocks,
                                               const Parallelism& p) const {
  const double rep = p.sp() ? 1.0 / p.tp : 1.0;
  const double per_layer = 1.0 / std::max(1.0, shape_.layers);
  const double input = kBf16 * shape_.hidden * rep;  // what a full recompute keeps per layer
  // The block's input (bf16, for the norm's backward) and its norm output (the first GEMM's
  // input).
  const double norm_in_out = (kBf16 + SavedInputBytes()) * shape_.hidden * rep;
  ActivationBytes out;
  for (const SavedBlock& b : blocks) {
    const double w = b.count * per_layer;
    const double none = norm_in_out + b.kept + b.dropped;
    out.full_layer += w * none;
    out.saved += w * SavedUnderRecompute(b, p, framework_->behaviour.selective, none, input);
  }
  if (p.recompute == Recompute::kFull) {
    // Megatron-Core's block method: the recomputed layers keep their input, the others all.
    const double share = FullRecomputeShare(p);
    out.saved = share * input + (1 - share) * out.full_layer;
  }
  if (p.recompute == Recompute::kSelective && p.recompute_modules == 0 &&
      framework_->behaviour.selective == SelectivePolicy::kHalfTheLayers) {
    out.saved += 0.5 * input;
  }
  return out;
}

StepModel::ActivationBytes StepModel::ActivationsPerToken(const Parallelism& p) const {
  return PerToken(SavedBlocks(p), p);
}

StepModel::StateBytes StepModel::ModelStates(const Parallelism& p, double layers_per_stage,
                                             bool heads) const {
  const Shape& m = shape_;
  // The stage holding the embedding and the output layer (pp == 1, and DualPipe's end GPUs,
  // which hold the first and the last stage: both, one matrix when tied; across stages each
  // holds its copy, as Megatron-Core keeps a tied embedding on the first and last stages).
  double head_params = 0;
  if (heads) {
    head_params = p.pp == 1 || StagesPerGpu(p) == 2
                      ? params_.embedding + (m.tied ? 0.0 : params_.output)
                      : std::max(params_.embedding, params_.output);
  }
  // Per GPU: the dense parameters split by TP, the routed experts' split by EP x ETP.
  const StateShards st = Shards(p);
  const double grad = GradBytes();
  const double dense = (layers_per_stage * params_.per_layer_dense() + head_params) / p.tp;
  const double expert = layers_per_stage * params_.per_layer_expert / st.expert_split;
  const double unit_params =
      std::max(params_.per_layer_dense() / p.tp + params_.per_layer_expert / st.expert_split,
               params_.output / p.tp);
  // Bytes per GPU of state held at `bpp` bytes per parameter, sharded over the data-parallel
  // ranks (the expert-data-parallel ranks for experts) or replicated.
  auto sharded = [&](double bpp) { return dense * bpp / st.dense + expert * bpp / st.expert; };
  auto whole = [&](double bpp) { return (dense + expert) * bpp; };
  // AdamW's two moments: fp32 each, or bf16 (FrameworkBehaviour::bf16_optimizer_moments).
  const double moments = framework_->behaviour.bf16_optimizer_moments ? 2 * kBf16 : 2 * kFp32;
  StateBytes out;
  switch (p.sharding) {
    case Sharding::kFsdp:
    case Sharding::kHsdp:
      // Sharded fp32 parameters and gradients, two gathered bf16 units (current + prefetched)
      // and one unit's unsharded gradient in flight.
      out.weights = sharded(kFp32) + 2 * unit_params * kBf16;
      out.gradients = sharded(grad) + unit_params * grad;
      out.optimizer = sharded(moments);
      if (ReducesOncePerStep(p)) {
        // With pipelining, FSDP keeps the stage gathered from forward to backward and
        // accumulates unsharded gradients until the last micro-batch (torchtitan sets
        // reshard_after_forward=False with PP; torch.distributed.pipelining defers the
        // reduce-scatter to the last micro-batch).
        out.weights_gathered = whole(kBf16);
        out.gradients_whole = whole(grad);
      }
      break;
    case Sharding::kZero2:
      out.weights = whole(kBf16);
      // A stage that reduces once a step holds every micro-batch's gradients whole until then.
      out.gradients = ReducesOncePerStep(p) ? whole(grad) : sharded(grad) + unit_params * grad;
      out.optimizer = sharded(kFp32 + moments);
      break;
    case Sharding::kZero1:
      out.weights = whole(kBf16);
      out.gradients = whole(grad);
      out.optimizer = sharded(kFp32 + moments);
      break;
    default:  // DDP
      out.weights = whole(kBf16);
      out.gradients = whole(grad);
      out.optimizer = whole(kFp32 + moments);
      break;
  }
  return out;
}

StepModel::ActivationMemory StepModel::Activations(const Parallelism& p, const GpuShare& share,
                                                   const ActivationBytes& act_per_token) const {
  const double per_token = act_per_token.saved;
  const double tokens = static_cast<double>(p.micro_batch) * s_.workload.seq_len / p.cp;
  // Micro-batches in flight a layer, on average over the GPU's stages.
  const double in_flight = share.layers > 0 ? share.live / share.layers : 0.0;
  // Offloaded layers hold their activations on the GPU only while one is copied out (Transformer
  // Engine's offload handler frees a layer's tensors once their copy to host memory is done).
  const double offloaded = OffloadedLayers(p);
  ActivationMemory out;
  out.device =
      per_token * tokens * (share.live - (offloaded - std::min(offloaded, 1.0)) * in_flight);
  // During backward with full recompute one layer's activations are rebuilt in full.
  if (p.recompute == Recompute::kFull) out.device += act_per_token.full_layer * tokens;
  // The loss: logits of the micro-batch (vocab split by TP) on the last stage.
  if (share.heads) {
    out.device +=
        tokens * OutputWidth(p.tp) * (stack_.FusedLoss() ? kFusedLogitBytes : kLogitBytes);
  }
  out.host = per_token * tokens * offloaded * in_flight;
  out.offloads = offloaded > 0;
  return out;
}

BlockList<StepModel::GpuShare> StepModel::GpuShares(const Parallelism& p) const {
  const PipelineSplit split = SplitLayers(s_.workload.model, p);
  const double mbs = static_cast<double>(MicroBatchesPerStep(p));
  auto in_flight = [mbs](double n) { return std::min(mbs, n); };
  if (StagesPerGpu(p) == 1) {
    // Micro-batches live at once on the first stage: 1 without PP; pp for 1F1B; interleaving
    // adds (pp-1)/vpp more chunks' worth (Narayanan et al. 2021). That stage's count is taken
    // for the fullest stage, with the larger head and the loss: a bound over the stages.
    const double n = p.pp > 1 ? in_flight(p.pp + (p.vpp > 1 ? (p.pp - 1.0) / p.vpp : 0.0)) : 1.0;
    const double layers = split.Max();
    BlockList<GpuShare> one;
    one.push_back({layers, layers * n, true});
    return one;
  }
  // DualPipe (deepseek-ai/DualPipe README: pp + 1 micro-batches of activations a GPU): GPU i
  // holds stage i of its own direction, where pp - i micro-batches are in flight as on 1F1B's
  // stage i, and stage pp-1-i of the other direction, with i + 1. The end GPUs hold the first
  // stage with pp and the embedding, and the last with one, the MTP modules, the output layer
  // and the loss; the others two middle stages, pp + 1 micro-batches between them, and no head.
  const double last = split.last + split.mtp;
  BlockList<GpuShare> shares;
  shares.push_back({split.first + last, split.first * in_flight(p.pp) + last * in_flight(1), true});
  if (p.pp > 2) shares.push_back({2.0 * split.middle, split.middle * in_flight(p.pp + 1.0), false});
  return shares;
}

namespace {

// The fullest of `n` GPUs (StepModel::GpuShares), `memory_of(i)` being GPU i's memory: it sets
// the layout's need (the first where two tie).
template <typename F>
MemoryBreakdown Fullest(int n, F memory_of) {
  MemoryBreakdown fullest = memory_of(0);
  for (int i = 1; i < n; ++i) {
    MemoryBreakdown m = memory_of(i);
    if (m.total_bytes > fullest.total_bytes) fullest = std::move(m);
  }
  return fullest;
}

}  // namespace

MemoryBreakdown StepModel::Memory(const Parallelism& p) const {
  const ActivationBytes per_token = ActivationsPerToken(p);
  const BlockList<GpuShare> shares = GpuShares(p);
  return Fullest(shares.size(), [&](int i) {
    return GpuMemory(p, shares[i], ModelStates(p, shares[i].layers, shares[i].heads), per_token);
  });
}

StepModel::ModuleMemory StepModel::MemoryByModules(const Parallelism& layout) const {
  ModuleMemory out;
  out.model_ = this;
  out.layout_ = layout;
  out.layout_.recompute = Recompute::kSelective;
  out.shares_ = GpuShares(layout);
  for (const GpuShare& share : out.shares_) {
    out.states_.push_back(ModelStates(layout, share.layers, share.heads));
  }
  out.floor_ = Fullest(out.shares_.size(), [&](int i) {
    return GpuMemory(out.layout_, out.shares_[i], out.states_[i], ActivationBytes{});
  });
  // Where the floor does not fit, no module set does: the blocks are not needed.
  if (out.floor_.fits) out.blocks_ = SavedBlocks(out.layout_);
  return out;
}

MemoryBreakdown StepModel::ModuleMemory::With(uint32_t modules) const {
  Parallelism p = layout_;
  p.recompute_modules = modules;
  const ActivationBytes per_token = model_->PerToken(blocks_, p);
  return Fullest(shares_.size(),
                 [&](int i) { return model_->GpuMemory(p, shares_[i], states_[i], per_token); });
}

double StepModel::CpGatherBytes(const Parallelism& p) const {
  // Transformer Engine's all-gather exchange (AttnFuncWithCPAndKVAllGather.backward) gathers the
  // whole sequence's keys and values again (k_ag, v_ag) and accumulates their gradients in
  // zeroed buffers of the same size (dk, dv: k.shape[0] * cp_size rows) before reduce-scattering
  // them: 2 x cp x a rank's K/V, one layer at a time, at the peak the backward starts from.
  if (p.cp <= 1 || stack_.cp_comm != CpComm::kAllGather || shape_.n_attention <= 0) return 0;
  return 2.0 * CpKvBytes(p.tp, static_cast<double>(p.micro_batch) * s_.workload.seq_len);
}

MemoryBreakdown StepModel::GpuMemory(const Parallelism& p, const GpuShare& share,
                                     const StateBytes& states,
                                     const ActivationBytes& per_token) const {
  const ActivationMemory act = Activations(p, share, per_token);
  MemoryBreakdown mem;
  mem.weights_bytes = Bytes(states.weights) + Bytes(states.weights_gathered);
  mem.gradients_bytes = Bytes(states.gradients) + Bytes(states.gradients_whole);
  mem.optimizer_bytes = Bytes(states.optimizer);
  mem.activations_bytes = Bytes(act.device);
  const double transient = kRuntimeOverheadBytes + CpGatherBytes(p);
  mem.other_bytes = Bytes(transient);
  const double live = static_cast<double>(mem.weights_bytes + mem.gradients_bytes +
                                          mem.optimizer_bytes + mem.activations_bytes) +
                      transient;
  mem.other_bytes += Bytes(live * (kFragmentation - 1));
  mem.total_bytes = Bytes(static_cast<double>(mem.weights_bytes) + mem.gradients_bytes +
                          mem.optimizer_bytes + mem.activations_bytes + mem.other_bytes);
  mem.capacity_bytes = Bytes(acc_->hbm_gib * (1LL << 30));
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
  if (act.offloads) {
    mem.host_bytes = Bytes(act.host);
    mem.host_capacity_bytes = Bytes(acc_->host_memory_gib * (1LL << 30));
    mem.fits = mem.fits && mem.host_bytes <= mem.host_capacity_bytes;
  }
  return mem;
}

double StepModel::OutputWidth(int tp) const {
  const double vocab = shape_.vocab;
  if (pads_vocab_) {
    const double multiple = kMegatronVocabMultiple * tp;
    return std::ceil(vocab / multiple) * multiple / tp;
  }
  // torch.compile's Inductor pads a matmul's dimensions to the alignment itself
  // (torch/_inductor/config.py shape_padding, on by default: "Pad matmul shapes to be multiples
  // of alignment").
  if (stack_.compiled) return std::ceil(vocab / tp / kGemmAlignElements) * kGemmAlignElements;
  return vocab / tp;
}

StepModel::HeadCost StepModel::ComputeHead(int tp, double tokens) const {
  // Embedding lookup, final norm, logits GEMM and loss: on the last stage (or the only one).
  const Shape& m = shape_;
  const double h = m.hidden;
  const double v = OutputWidth(tp);
  const double loss_bytes = tokens * v * kLossTrafficBytes * hw_.traffic_scale;
  HeadCost c;
  // The output layer stays in 16-bit when the layers train in fp8 (hw16_); the vocabulary is the
  // leading dimension of its weight and of the logits in all three GEMMs.
  const auto gemm = GemmAligned(v) ? GemmTime : UnalignedGemmTime;
  c.fwd_s = gemm(hw16_, tokens, v, h) +
            MemTime(hw_, loss_bytes + tokens * 6 * h * kBf16 * hw_.traffic_scale, 6);
  c.bwd_s = gemm(hw16_, tokens, h, v) + gemm(hw16_, h, v, tokens) +
            MemTime(hw_, loss_bytes + tokens * 8 * h * kBf16 * hw_.traffic_scale, 8);
  if (m.mtp > 0) {
    // The MTP module's input: the norms of the hidden state and of the next token's embedding,
    // concatenated (read 2h, write 2h each way) and projected 2h -> h, column-parallel.
    c.mtp_fwd_s = GemmTime(hw_, tokens, h / tp, 2 * h) +
                  MemTime(hw_, tokens * 8 * h * kBf16 * hw_.traffic_scale, 3);
    c.mtp_bwd_s = GemmTime(hw_, tokens, 2 * h, h / tp) + GemmTime(hw_, 2 * h, h / tp, tokens) +
                  MemTime(hw_, tokens * 12 * h * kBf16 * hw_.traffic_scale, 4);
  }
  return c;
}

StepModel::StageCost StepModel::SlowestStage(const Parallelism& p, const LayerCost& lc,
                                             const HeadCost& head) const {
  // Per micro-batch on one stage: its layers' compute, exposed TP and CP, and on the last stage
  // the head and the multi-token prediction modules (a layer, a projection and one more pass
  // through the head each). The slowest stage sets the pipeline's pace.
  const double per_layer =
      lc.fwd_s + lc.bwd_s + lc.recompute_s + lc.tp_exposed_s + lc.cp_exposed_s + lc.ep_exposed_s;
  const PipelineSplit split = SplitLayers(s_.workload.model, p);
  StageCost best;
  auto consider = [&](double layers, bool last) {
    StageCost c;
    c.mtp = last ? split.mtp : 0;
    c.layers = layers + c.mtp;
    c.heads = last ? 1 + c.mtp : 0;
    c.head_fwd_s = c.heads * head.fwd_s + c.mtp * head.mtp_fwd_s;
    c.head_bwd_s = c.heads * head.bwd_s + c.mtp * head.mtp_bwd_s;
    c.t_mb = c.layers * per_layer + c.head_fwd_s + c.head_bwd_s;
    if (c.t_mb > best.t_mb) best = c;
  };
  if (p.pp == 1) {
    consider(split.first, true);
  } else {
    consider(split.last, true);
    consider(split.first, false);
    if (p.pp > 2) consider(split.middle, false);
  }
  return best;
}

int StepModel::StagesPerGpu(const Parallelism& p) const {
  return scalecast::StagesPerGpu(framework_->behaviour, p.pp);
}

bool StepModel::InEffect(double since) const { return since > 0 && stack_.software_date >= since; }

bool StepModel::ReducesOncePerStep(const Parallelism& p) const {
  return p.pp > 1 && InEffect(framework_->behaviour.pipeline_reduces_once_since);
}

double StepModel::BubbleMicroBatches(const Parallelism& p, const LayerCost& lc) const {
  if (p.pp <= 1) return 0.0;
  if (StagesPerGpu(p) == 1) {
    return (p.pp - 1.0) / p.vpp;  // 1F1B: (PP-1)(F+B), interleaving's chunks a vpp-th of that
  }
  // DualPipe: (PP/2-1)(F&B+B-3W) with F&B the paired forward and backward (their compute; each
  // hides the other's communication) and W the backward's weight-gradient half (a linear
  // layer's backward is two GEMMs of equal FLOPs, input and weight gradients: Qi et al. 2023,
  // "Zero Bubble Pipeline Parallelism", section 2): F + B/2 per PP/2-1, in units of F + B.
  const double f = lc.fwd_s, b = lc.bwd_s + lc.recompute_s;
  return (p.pp / 2.0 - 1.0) * (f + 0.5 * b) / std::max(1e-12, f + b);
}

double StepModel::GradAccumulationTime(const Parallelism& p, double stage_params,
                                       double micro_batches) const {
  // Per micro-batch, averaged over the step: the pass that adds a micro-batch's weight gradients
  // into the stage's whole-gradient buffer (FrameworkBehaviour::grad_accumulation), memory-bound.
  // Only DDP and ZeRO-1 keep the whole gradient across micro-batches.
  if (p.sharding != Sharding::kDdp && p.sharding != Sharding::kZero1) return 0.0;
  const double m = std::max(1.0, micro_batches);
  double bytes_per_param = 0, share = 0;
  switch (framework_->behaviour.grad_accumulation) {
    case GradAccumulation::kInGemm:
      return 0.0;
    case GradAccumulation::kAutograd:  // micro-batches 2..m: read .grad and the new, write .grad
      bytes_per_param = 3 * kBf16;
      share = (m - 1) / m;
      break;
    case GradAccumulation::kFp32Buffer:  // every micro-batch: read bf16, read and write fp32
      bytes_per_param = kBf16 + 2 * kFp32;
      share = 1.0;
      break;
  }
  return share * MemTime(hw_, stage_params * bytes_per_param, 1);
}

StepModel::CommTerm StepModel::PipelineP2p(const Parallelism& p, double micro_batches,
                                           double tokens) const {
  // Each micro-batch crosses every chunk boundary forward and back: two transfers on a stage's
  // path, four where each send and receive blocks on its own. A stage's output goes whole from
  // every TP rank, or split over them (sequence parallelism, or a scatter-gather that
  // all-gathers the slices inside the TP group after the receive).
  CommTerm t;
  if (p.pp <= 1) return t;
  const FrameworkBehaviour& b = framework_->behaviour;
  const bool gather = !p.sp() && p.tp > 1 && InEffect(b.pipeline_sends_split_since);
  const double whole = tokens * shape_.hidden * kBf16;
  const double act_bytes = whole / (p.sp() || gather ? p.tp : 1);
  const int stride = p.tp * p.cp * p.dp;
  const Group link{2, stride < hw_.domain ? 2 : 1};
  double one = CollectiveTime(hw_, Collective::kSendRecv, link, act_bytes);
  if (gather) {
    one +=
        CollectiveTime(hw_, Collective::kAllGather, Group{p.tp, std::min(p.tp, hw_.domain)}, whole);
  }
  const double transfers = b.pipeline_transfers_one_at_a_time ? 4.0 : 2.0;
  t.total = transfers * p.vpp * micro_batches * one;
  t.bytes = transfers * p.vpp * micro_batches * act_bytes;
  t.ranks = p.pp;
  // 1F1B sends are blocking between a stage's steps; the interleaved schedule overlaps them.
  t.exposed =
      p.vpp == 1 ? t.total : t.total * (1 - overlap_eff_) + comm_slowdown_ * t.total * overlap_eff_;
  return t;
}

double StepModel::OffloadedLayers(const Parallelism& p) const {
  if (p.cpu_offload_layers <= 0) return 0;
  return std::min<double>(p.cpu_offload_layers, SplitLayers(s_.workload.model, p).Max());
}

StepModel::CommTerm StepModel::HostOffload(const Parallelism& p, const LayerCost& lc,
                                           double micro_batches, double tokens) const {
  // Transformer Engine's CPU offload context (Megatron-Core --cpu-offloading): the tensors an
  // offloaded layer saves for backward are copied to pinned host memory on a side stream while
  // the next layer runs forward, and copied back while the layer after it in backward runs. A
  // copy longer than the layer it hides behind holds the next layer up by the difference. A
  // stack that copies on the compute stream (FrameworkBehaviour::offload_on_compute_stream)
  // hides none of it.
  CommTerm t;
  const double layers = OffloadedLayers(p);
  if (layers <= 0 || hw_.host_bps <= 0) return t;
  const double bytes = ActivationsPerToken(p).saved * tokens;
  const double copy = bytes / hw_.host_bps;
  const double per_layer = framework_->behaviour.offload_on_compute_stream
                               ? 2 * copy
                               : std::max(0.0, copy - lc.fwd_s) + std::max(0.0, copy - lc.bwd_s);
  t.total = 2 * copy * layers * micro_batches;
  t.exposed = per_layer * layers * micro_batches;
  t.bytes = 2 * bytes * layers * micro_batches;
  t.ranks = 1;
  return t;
}

StepModel::DataParallelSetup StepModel::DataParallelUnits(const Parallelism& p,
                                                          const StageCost& stage,
                                                          const LayerCost& lc) const {
  DataParallelSetup d;
  const int tp = p.tp;
  const double h = shape_.hidden;
  d.shards = Shards(p);
  const int n_dp = d.shards.dense_ranks, n_edp = d.shards.expert_ranks;
  d.dp_group = Group{n_dp, Clamp(hw_.domain / tp, 1, n_dp)};
  // Expert-data-parallel ranks are strided by ep * etp (expert rank order etp-ep-dp).
  const int expert_stride = static_cast<int>(d.shards.expert_split);
  d.edp_group = Group{n_edp, Clamp(hw_.domain / expert_stride, 1, n_edp)};
  const double layer_f_window = lc.fwd_s + lc.tp_fwd_s + lc.ep_fwd_s;
  const double layer_b_window = lc.bwd_s + lc.recompute_s + lc.tp_bwd_s + lc.ep_bwd_s;
  // The FSDP units / gradient buckets of the slowest stage: (embedding,) layers, output layer;
  // each with its dense parameters (split by TP) and routed-expert parameters (split by EP x ETP).
  // A tied embedding on the one stage is the output layer's matrix, moved with it.
  if (p.pp == 1 && !shape_.tied) d.Add({params_.embedding / tp, 0.0, 0.0, 0.0}, 1);
  d.layer_run = stage.layers > 0 ? d.run_count : -1;
  d.Add({params_.per_layer_dense() / tp, params_.per_layer_expert / d.shards.expert_split,
         layer_f_window, layer_b_window},
        StagesPerGpu(p) * static_cast<int>(stage.layers));
  if (stage.has_head()) {
    d.Add({(params_.output + h + stage.mtp * params_.mtp_projection) / tp, 0.0, stage.head_fwd_s,
           stage.head_bwd_s},
          1);
  }
  // Summed unit by unit, in order (the same doubles as adding each unit's).
  for (int r = 0; r < d.run_count; ++r) {
    for (int i = 0; i < d.runs[r].count; ++i) {
      d.dense_params += d.runs[r].unit.dense;
      d.expert_params += d.runs[r].unit.expert;
    }
  }
  d.c_f = stage.layers * (lc.fwd_s + lc.ep_fwd_s) + stage.head_fwd_s;
  d.c_b = stage.layers * (lc.bwd_s + lc.recompute_s + lc.ep_bwd_s) + stage.head_bwd_s;
  return d;
}

std::vector<StepModel::GradUnit> StepModel::DataParallelSetup::Units() const {
  size_t n = 0;
  for (int r = 0; r < run_count; ++r) n += runs[r].count;
  std::vector<GradUnit> units;
  units.reserve(n);
  for (int r = 0; r < run_count; ++r) units.insert(units.end(), runs[r].count, runs[r].unit);
  return units;
}

double StepModel::UnitCollective(Collective c, const GradUnit& u, double bytes_per_param,
                                 const Group& dense_group, const Group& expert_group) const {
  // The dense part over the DP group, the expert part over the expert-DP group (in parallel
  // streams in Megatron-Core; summed here, the two share the NICs).
  return CollectiveTime(hw_, c, dense_group, u.dense * bytes_per_param) +
         CollectiveTime(hw_, c, expert_group, u.expert * bytes_per_param);
}

StepModel::Reduction StepModel::ReducePerUnit(Collective c, const DataParallelSetup& d) const {
  // Each run of same-size units (every layer of a stage) is reduced in the same time per unit,
  // summed unit by unit.
  Reduction out;
  const double grad = GradBytes();
  for (int r = 0; r < d.run_count; ++r) {
    const double t = UnitCollective(c, d.runs[r].unit, grad, d.dp_group, d.edp_group);
    if (r == 0) out.last_s = t;
    for (int i = 0; i < d.runs[r].count; ++i) out.total_s += t;
  }
  return out;
}

StepModel::Reduction StepModel::ReduceInDdpBuckets(Collective c, const DataParallelSetup& d) const {
  // DDP sizes its buckets by the parameters' bytes (16-bit, or fp32 under autocast over fp32
  // parameters), whatever the dtype its hook reduces in.
  const double cap = framework_->behaviour.ddp_bucket_bytes;
  const double param_bytes = stack_.fp32_params ? kFp32 : kBf16, grad = GradBytes();
  Reduction out;
  double filled = 0;  // parameters in the open bucket
  auto reduce = [&] {
    if (filled <= 0) return;
    out.last_s = UnitCollective(c, GradUnit{filled, 0, 0, 0}, grad, d.dp_group, d.edp_group);
    out.total_s += out.last_s;
    filled = 0;
  };
  auto add = [&](double params) {
    filled += params;
    if (filled * param_bytes >= cap) reduce();
  };
  // Backward order: the output layer, the layers last to first, the embedding. Expert
  // parameters (none in the frameworks that bucket) are reduced unit by unit beside them.
  for (int r = d.run_count - 1; r >= 0; --r) {
    const GradUnit& u = d.runs[r].unit;
    const double expert =
        u.expert > 0 ? UnitCollective(c, GradUnit{0, u.expert, 0, 0}, grad, d.dp_group, d.edp_group)
                     : 0.0;
    for (int i = 0; i < d.runs[r].count; ++i) {
      if (r == d.layer_run) {
        for (const double share : ddp_layer_tensors_) add(u.dense * share);
      } else {
        add(u.dense);
      }
      out.total_s += expert;
    }
  }
  reduce();
  return out;
}

double StepModel::ParamGatherBytes() const {
  // Megatron-Core's --fp8-param-gather (Transformer Engine fp8_model_init: the weights live as
  // Float8Tensors, and the distributed optimizer gathers their fp8 bytes); NeMo's fp8_params.
  const bool fp8 = stack_.fp8_param_gather && LowPrecision(s_.workload.precision);
  // Autocast over fp32 parameters gathers them as they are (FSDP param_dtype None).
  if (stack_.fp32_params && !fp8) return kFp32;
  return fp8 ? kFp8Byte : kBf16;
}

StepModel::DataParallelComm StepModel::DataParallel(const Parallelism& p, const StageCost& stage,
                                                    const LayerCost& lc, double mbs) const {
  const DataParallelSetup d = DataParallelUnits(p, stage, lc);
  DataParallelComm out;
  out.stage_params = d.dense_params + d.expert_params;
  out.allgather.ranks = out.reducescatter.ranks = out.allreduce.ranks = d.shards.dense_ranks;
  // Parameters this GPU updates: sharded state over its shards, else all it holds.
  const bool sharded_state = p.sharding == Sharding::kFsdp || p.sharding == Sharding::kHsdp ||
                             p.sharding == Sharding::kZero1 || p.sharding == Sharding::kZero2;
  out.optimizer_params = sharded_state
                             ? d.dense_params / d.shards.dense + d.expert_params / d.shards.expert
                             : out.stage_params;
  if (d.shards.dense_ranks <= 1 && d.shards.expert_ranks <= 1) return out;
  const bool fsdp = p.sharding == Sharding::kFsdp || p.sharding == Sharding::kHsdp;
  return fsdp ? ShardedDataParallel(p, d, mbs, out) : ReplicatedDataParallel(p, d, mbs, out);
}

StepModel::DataParallelComm StepModel::ShardedDataParallel(const Parallelism& p,
                                                           const DataParallelSetup& d, double mbs,
                                                           DataParallelComm out) const {
  const int tp = p.tp, n_dp = d.shards.dense_ranks, n_edp = d.shards.expert_ranks;
  const std::vector<GradUnit> units = d.Units();
  const double grad = GradBytes(), ov = DpOverlapEff(), kappa = comm_slowdown_;
  const Sharding sh = p.sharding;
  Group shard_group = d.dp_group, expert_shard = d.edp_group;
  Group replica_group{1, 1}, expert_replicas{1, 1};
  if (sh == Sharding::kHsdp) {
    const int sgs = static_cast<int>(d.shards.dense);
    shard_group = Group{sgs, Clamp(hw_.domain / tp, 1, sgs)};
    const int replicas = n_dp / sgs;
    const int rep_per_domain =
        hw_.domain / tp >= sgs ? Clamp(hw_.domain / (tp * sgs), 1, replicas) : 1;
    replica_group = Group{replicas, rep_per_domain};
    out.allreduce.ranks = replicas;
    const int esgs = static_cast<int>(d.shards.expert);
    const int expert_stride = static_cast<int>(d.shards.expert_split);
    expert_shard = Group{esgs, Clamp(hw_.domain / expert_stride, 1, esgs)};
    expert_replicas = Group{std::max(1, n_edp / esgs), 1};
  }
  const int ag_ranks = shard_group.ranks;
  out.allgather.ranks = out.reducescatter.ranks = ag_ranks;
  out.optimizer_shard = ag_ranks;
  const size_t n = units.size();
  std::vector<double> ag(n), rs(n), ar(n);
  for (size_t i = 0; i < n; ++i) {
    // A unit the size of the one before it (every layer of a stage) moves in the same time.
    if (i > 0 && SameSize(units[i], units[i - 1])) {
      ag[i] = ag[i - 1], rs[i] = rs[i - 1], ar[i] = ar[i - 1];
      continue;
    }
    ag[i] = UnitCollective(Collective::kAllGather, units[i], ParamGatherBytes(), shard_group,
                           expert_shard);
    rs[i] = UnitCollective(Collective::kReduceScatter, units[i], grad, shard_group, expert_shard);
    ar[i] = CollectiveTime(hw_, Collective::kAllReduce, replica_group,
                           units[i].dense * grad / shard_group.ranks) +
            CollectiveTime(hw_, Collective::kAllReduce, expert_replicas,
                           units[i].expert * grad / expert_shard.ranks);
  }
  // Forward: unit i+1 is gathered while unit i computes; the first gather is exposed.
  double fwd_exp = ag[0], fwd_ag = ag[0];
  for (size_t i = 0; i + 1 < n; ++i) {
    fwd_exp += Exposed(ag[i + 1], units[i].fwd, ov, kappa);
    fwd_ag += ag[i + 1];
  }
  // Backward, last unit first (it stays gathered after forward): while unit i computes, unit
  // i-1 is gathered and unit i+1's gradients are reduce-scattered (and all-reduced across
  // HSDP replicas); the first unit's reduction is exposed at the end.
  double bwd_ag = 0, bwd_rs = 0, bwd_ar = 0, bwd_exp_ag = 0, bwd_exp_red = 0;
  const bool once_per_step = ReducesOncePerStep(p);
  for (size_t k = n; k-- > 0;) {
    const double a = (!once_per_step && k >= 1) ? ag[k - 1] : 0.0;
    const double r = k + 1 < n ? rs[k + 1] + ar[k + 1] : 0.0;
    const double e = Exposed(a + r, units[k].bwd, ov, kappa);
    if (a + r > 0) {
      bwd_exp_ag += e * a / (a + r);
      bwd_exp_red += e * r / (a + r);
    }
    bwd_ag += a;
    bwd_rs += k + 1 < n ? rs[k + 1] : 0.0;
    bwd_ar += k + 1 < n ? ar[k + 1] : 0.0;
  }
  bwd_exp_red += rs[0] + ar[0];
  bwd_rs += rs[0];
  bwd_ar += ar[0];
  const double red_total = bwd_rs + bwd_ar;
  // Otherwise the gathers and reductions repeat every micro-batch (FSDP reshards after
  // forward and reduces each micro-batch's gradients).
  const double reps = once_per_step ? 1.0 : mbs;
  out.allgather.total = reps * (fwd_ag + bwd_ag);
  out.allgather.exposed = reps * (fwd_exp + bwd_exp_ag);
  out.reducescatter.total = reps * bwd_rs;
  out.allreduce.total = reps * bwd_ar;
  out.reducescatter.exposed = red_total > 0 ? reps * bwd_exp_red * bwd_rs / red_total : 0;
  out.allreduce.exposed = red_total > 0 ? reps * bwd_exp_red * bwd_ar / red_total : 0;
  // Bytes each GPU sends: its dense shard's share and its expert shard's share.
  auto wire = [&](double bpp, const Group& dg, const Group& eg) {
    return d.dense_params * bpp * (dg.ranks - 1) / dg.ranks +
           d.expert_params * bpp * (eg.ranks - 1) / eg.ranks;
  };
  out.allgather.bytes = reps * 2 * wire(ParamGatherBytes(), shard_group, expert_shard);
  out.reducescatter.bytes = reps * wire(grad, shard_group, expert_shard);
  const int replicas = out.allreduce.ranks;
  if (replicas > 1 && sh == Sharding::kHsdp) {
    out.allreduce.bytes = reps * 2.0 * d.dense_params * grad / ag_ranks * (replicas - 1) / replicas;
  }
  return out;
}

StepModel::DataParallelComm StepModel::ReplicatedDataParallel(const Parallelism& p,
                                                              const DataParallelSetup& d,
                                                              double mbs,
                                                              DataParallelComm out) const {
  // DDP / ZeRO: gradients reduced in buckets (one per unit) during the last micro-batch's
  // backward (ZeRO-2: every micro-batch's, unless the pipeline reduces once); ZeRO gathers updated
  // parameters after the step, beside the next forward where the stack overlaps it (Megatron's
  // --overlap-param-gather).
  const int n_dp = d.shards.dense_ranks, n_edp = d.shards.expert_ranks;
  const double grad = GradBytes();
  const Sharding sh = p.sharding;
  const bool zero = sh == Sharding::kZero1 || sh == Sharding::kZero2;
  out.optimizer_shard = zero ? n_dp : 1;
  const Collective red = zero ? Collective::kReduceScatter : Collective::kAllReduce;
  const Reduction reduction = framework_->behaviour.ddp_bucket_bytes > 0
                                  ? ReduceInDdpBuckets(red, d)
                                  : ReducePerUnit(red, d);
  const double red_sum = reduction.total_s, last = reduction.last_s;
  const double ag =
      UnitCollective(Collective::kAllGather, GradUnit{d.dense_params, d.expert_params, 0, 0},
                     ParamGatherBytes(), d.dp_group, d.edp_group);
  const double red_exp = ChunkedExposed(p, red_sum, last, d.c_b);
  const double reps = sh == Sharding::kZero2 && !ReducesOncePerStep(p) ? mbs : 1.0;
  auto wire = [&](double bpp, double factor) {
    return d.dense_params * bpp * factor * (n_dp - 1.0) / std::max(1, n_dp) +
           d.expert_params * bpp * factor * (n_edp - 1.0) / n_edp;
  };
  if (zero) {
    out.reducescatter = {reps * red_sum, reps * red_exp, reps * wire(grad, 1), n_dp};
    out.allgather = {ag, ChunkedExposed(p, ag, 0.0, d.c_f), wire(ParamGatherBytes(), 1), n_dp};
  } else {
    out.allreduce = {red_sum, red_exp, wire(grad, 2), n_dp};
  }
  return out;
}

double StepModel::ChunkedExposed(const Parallelism& p, double total, double edge_s,
                                 double pass_s) const {
  const double ov = DpOverlapEff(), kappa = comm_slowdown_;
  const double v =
      p.pp > 1 && framework_->behaviour.chunked_data_parallel_sync ? std::max(1, p.vpp) : 1;
  if (v <= 1) return Exposed(total - edge_s, pass_s, ov, kappa) + edge_s;
  // Each model chunk syncs on its own (FrameworkBehaviour::chunked_data_parallel_sync). The
  // interleaved schedule runs the chunks in blocks of pp micro-batches (all of them when a step
  // has fewer), so the k-th chunk from the end finishes k blocks of chunk passes before the last
  // one does (and the k-th from the start begins k blocks after the first): the other chunks'
  // collectives hide behind vpp - 1 blocks, the edge chunk's only behind its own pass, unit by
  // unit.
  const double block = static_cast<double>(std::min<int64_t>(p.pp, MicroBatchesPerStep(p)));
  const double chunk_pass = pass_s / v, own = total / v;
  return Exposed(total - own, (v - 1) * std::max(1.0, block) * chunk_pass, ov, kappa) +
         Exposed(std::max(0.0, own - edge_s), chunk_pass, ov, kappa) + std::min(own, edge_s);
}

PowerEstimate StepModel::Power(double step, double comm_exposed, double bubble) const {
  // Idle plus the dynamic range weighted by what the GPU does over the step.
  const Accelerator& a = *acc_;
  const double busy = std::max(0.0, step - comm_exposed - bubble);
  const double range = a.tdp_w - a.idle_w;
  const double compute_w = std::min(a.power_limit_w, a.idle_w + kComputeActivity * range);
  const double comm_w = std::min(a.power_limit_w, a.idle_w + kCommActivity * range);
  const double idle_w = a.idle_w + kIdleActivity * range;
  PowerEstimate p;
  p.watts_per_gpu = std::min(a.power_limit_w,
                             (busy * compute_w + comm_exposed * comm_w + bubble * idle_w) / step);
  p.cluster_kw = p.watts_per_gpu * s_.cluster.num_gpus / 1000.0;
  return p;
}

void StepModel::AddLayoutWarnings(const Parallelism& p, const MemoryBreakdown& mem,
                                  std::vector<std::string>* w) const {
  const Accelerator& a = *acc_;
  const double gib = 1 << 30;
  if (!mem.fits) {
    w->push_back(absl::StrFormat("does not fit: %.1f GiB needed, %.0f GiB on %s",
                                 mem.total_bytes / gib, a.hbm_gib, a.id));
  } else if (const double headroom = s_.cluster.hbm_headroom.value_or(0);
             headroom > 0 &&
             static_cast<double>(mem.total_bytes) > (1 - headroom) * mem.capacity_bytes) {
    w->push_back(absl::StrFormat(
        "uses %.0f%% of HBM, inside the %g%% headroom kept free for allocator fragmentation, "
        "NCCL buffers and CUDA graphs: it may run out of memory",
        100.0 * mem.total_bytes / mem.capacity_bytes, headroom * 100));
  }
  if (a.borrowed) {
    w->push_back(absl::StrCat(a.id, " is described: ", a.like_basis));
  }
  if (p.tp > hw_.domain) {
    w->push_back(absl::StrFormat(
        "tp=%d spans %d NVLink domains of %d GPUs: tensor-parallel traffic crosses the network",
        p.tp, (p.tp + hw_.domain - 1) / hw_.domain, hw_.domain));
  }
}

void StepModel::AddShareWarnings(const StepShares& shares, std::vector<std::string>* w) const {
  const double step = shares.step;
  if (shares.bubble > 0.15 * step) {
    w->push_back(absl::StrFormat(
        "pipeline bubble is %.0f%% of the step: use more micro-batches or interleaving",
        100 * shares.bubble / step));
  }
  if (shares.comm_exposed > 0.25 * step) {
    w->push_back(absl::StrFormat("exposed communication is %.0f%% of the step",
                                 100 * shares.comm_exposed / step));
  }
  if (shares.host_wait > 0.15 * step) {
    w->push_back(absl::StrFormat(
        "the GPU waits %.0f%% of the step for the host to launch its kernels, per layer and "
        "micro-batch: fewer, larger micro-batches or kernels replayed from CUDA graphs shorten it",
        100 * shares.host_wait / step));
  }
}

void StepModel::AddPlatformWarnings(std::vector<std::string>* w) const {
  const Accelerator& a = *acc_;
  if (s_.cluster.in_network_reduction && hw_.nvls_bps <= 0) {
    w->push_back(absl::StrCat(
        "cluster.in_network_reduction has no effect here: ",
        a.nvlink_sharp ? "the stack's NCCL predates NVLink SHARP (NCCL 2.18, May 2023)"
                       : absl::StrCat(a.id, "'s NVLink switches do not reduce (no NVLink SHARP)"),
        ", and InfiniBand SHARP without it (NCCL's CollNet) is not modelled: all-reduce is priced "
        "as rings and trees"));
  }
  if (a.power_unpublished) {
    w->push_back(absl::StrCat(
        a.id, "'s power is not published: the watts use placeholder figures (catalog)"));
  }
  if (hw_.clock_scale < 0.999) {
    w->push_back(absl::StrFormat("the %.0f W power limit throttles compute clocks to ~%.0f%%",
                                 a.power_limit_w, 100 * hw_.clock_scale));
  }
  const AttentionKernel ran = EffectiveAttentionKernel(stack_.attention, GenerationOf(a.family));
  if (stack_.attention != AttentionKernel::kDefault && ran != stack_.attention) {
    w->push_back(absl::StrFormat("attention kernel %s does not run on %s: predicted with %s",
                                 ToString(stack_.attention), a.id, ToString(ran)));
  }
  switch (unfused_attention_) {
    case UnfusedAttention::kNo:
      break;
    case UnfusedAttention::kFa1HeadWidth:
      w->push_back(absl::StrFormat(
          "attention runs unfused: FlashAttention 1 takes head widths up to %.0f, this model's "
          "are q.k %.0f, v %.0f (FlashAttention 2 takes up to 256)",
          kFa1MaxHeadDim, shape_.qk_head_dim, shape_.v_head_dim));
      break;
    case UnfusedAttention::kCudnnBeforeMlaWidths:
      w->push_back(absl::StrFormat(
          "attention runs unfused: cuDNN's fused attention trains head widths q.k %.0f, v %.0f "
          "on %s from cuDNN 9.11 (stacks from August 2025 on); release %s predates it",
          shape_.qk_head_dim, shape_.v_head_dim, a.id, stack_.release));
      break;
  }
}

void StepModel::AddWarnings(const Parallelism& p, const StepShares& shares, Prediction* out) const {
  std::vector<std::string>* w = &out->warnings;
  w->insert(w->end(), s_.input_warnings.begin(), s_.input_warnings.end());
  AddLayoutWarnings(p, out->memory, w);
  AddShareWarnings(shares, w);
  AddPlatformWarnings(w);
  if (!stack_.release_note.empty()) w->push_back(stack_.release_note);
}

size_t LayerCache::KeyHash::operator()(const Key& k) const {
  return absl::HashOf(k.tp, k.cp, k.ep, k.etp, k.micro_batch, k.recompute_modules, k.recompute,
                      k.recompute_share, k.weight_cast_share, k.sp);
}

LayerCost StepModel::Layer(const Parallelism& p, LayerCache* cache) const {
  if (cache == nullptr) return ComputeLayer(p);
  const LayerCache::Key key{p.tp,
                            p.cp,
                            p.ep,
                            p.etp,
                            p.micro_batch,
                            p.recompute_modules,
                            static_cast<int>(p.recompute),
                            FullRecomputeShare(p),
                            WeightCastShare(p),
                            p.sp()};
  if (auto it = cache->costs_.find(key); it != cache->costs_.end()) return it->second;
  if (cache->costs_.size() >= LayerCache::kMaxEntries) cache->costs_.clear();
  const LayerCost c = ComputeLayer(p);
  cache->costs_.emplace(key, c);
  return c;
}

Prediction StepModel::Evaluate(const Parallelism& layout, const MemoryBreakdown* memory,
                               LayerCache* cache) const {
  Prediction out;
  out.label = s_.label;
  out.stack = stack_;
  Parallelism p = layout;
  const int g = s_.cluster.num_gpus;
  p.vpp = std::max(1, p.vpp);
  p.dp = g / (p.tp * p.pp * p.cp);
  p.sequence_parallel = p.sp();
  p.cp_a2a = CpA2aRanks(p);
  out.layout = p;
  const double seq = s_.workload.seq_len;
  const double mbs = static_cast<double>(MicroBatchesPerStep(p));
  const double tokens = p.micro_batch * seq / p.cp;

  const LayerCost lc = Layer(p, cache);
  const HeadCost head = ComputeHead(p.tp, tokens);
  const StageCost stage = SlowestStage(p, lc, head);
  const CommTerm p2p = PipelineP2p(p, mbs, tokens);
  const DataParallelComm dp = DataParallel(p, stage, lc, mbs);
  const CommTerm offload = HostOffload(p, lc, mbs, tokens);
  // Each micro-batch's backward on the stage ends with its gradients added into the stage's
  // accumulator where the GEMMs do not do it themselves: the stage runs that much longer a
  // micro-batch, in its steady state and in the bubble alike.
  const double accumulate = GradAccumulationTime(p, dp.stage_params, mbs);
  const double t_mb = stage.t_mb + accumulate;

  // A calibrated layer's overall efficiency of the stack (StackParams::efficiency, 1 unless a
  // layer moved it) stretches every part of the step alike.
  const double slow = 1.0 / stack_efficiency_;
  // The optimizer step: its memory traffic and the host's fixed work once a step.
  const double optimizer =
      slow * (MemTime(hw_, dp.optimizer_params * kOptimizerBytesPerParam, 6) + step_host_s_);
  const double bubble = slow * BubbleMicroBatches(p, lc) * (t_mb + p2p.total / mbs);
  const double step = slow * (mbs * t_mb) + slow * p2p.exposed + bubble + optimizer +
                      slow * offload.exposed + slow * dp.allgather.exposed +
                      slow * dp.reducescatter.exposed + slow * dp.allreduce.exposed;

  out.step_time_s = step;
  out.tokens_per_s = static_cast<double>(s_.workload.global_batch) * seq / step;
  out.tokens_per_s_per_gpu = out.tokens_per_s / g;
  const double peak = hw_.bf16_peak;
  out.model_tflops_per_gpu = model_flops_per_token_ * out.tokens_per_s_per_gpu / 1e12;
  out.mfu = model_flops_per_token_ * out.tokens_per_s_per_gpu / peak;
  // HFU: MFU and the recomputed FLOPs, averaged over every GPU (each of the pp stages holds
  // layers / pp of the layers on average). The slowest stage's own FLOPs would miss the other
  // stages' work and fall below MFU where that stage holds fewer layers than the average.
  const double layers_per_gpu = shape_.layers / p.pp;
  out.hfu = out.mfu + mbs * layers_per_gpu * lc.flops_redo / step / peak;

  TimeBreakdown& t = out.time;
  t.compute_s =
      slow * mbs *
      (stage.layers * (lc.fwd_s + lc.bwd_s) + stage.head_fwd_s + stage.head_bwd_s + accumulate);
  t.recompute_s = slow * mbs * stage.layers * lc.recompute_s;
  t.pipeline_bubble_s = bubble;
  t.optimizer_s = optimizer;
  t.comm.reserve(8);  // at most the eight kinds below: one allocation
  using Kind = field_rules::CommKind;
  auto add = [&t, slow](Kind kind, double total, double exposed, double bytes, int ranks) {
    if (total <= 0) return;
    t.comm.push_back(CommTime{field_rules::CommKindName(kind), slow * total, slow * exposed,
                              Bytes(bytes), ranks});
  };
  add(Kind::kDpAllgather, dp.allgather.total, dp.allgather.exposed, dp.allgather.bytes,
      dp.allgather.ranks);
  add(Kind::kDpReducescatter, dp.reducescatter.total, dp.reducescatter.exposed,
      dp.reducescatter.bytes, dp.reducescatter.ranks);
  add(Kind::kDpAllreduce, dp.allreduce.total, dp.allreduce.exposed, dp.allreduce.bytes,
      dp.allreduce.ranks);
  add(Kind::kTp, mbs * stage.layers * (lc.tp_fwd_s + lc.tp_bwd_s),
      mbs * stage.layers * lc.tp_exposed_s, mbs * stage.layers * lc.tp_bytes, p.tp);
  add(Kind::kPpP2p, p2p.total, p2p.exposed, p2p.bytes, p.pp);
  add(Kind::kCp, mbs * stage.layers * (lc.cp_fwd_s + lc.cp_bwd_s),
      mbs * stage.layers * lc.cp_exposed_s, mbs * stage.layers * lc.cp_bytes, p.cp);
  add(Kind::kEpAlltoall, mbs * stage.layers * (lc.ep_fwd_s + lc.ep_bwd_s),
      mbs * stage.layers * lc.ep_exposed_s, mbs * stage.layers * lc.ep_bytes, p.ep);
  add(Kind::kHostOffload, offload.total, offload.exposed, offload.bytes, offload.ranks);

  out.memory = memory != nullptr ? *memory : Memory(p);
  double comm_exposed = 0;
  for (const CommTime& c : t.comm) comm_exposed += c.exposed_s;
  out.power = Power(step, comm_exposed, bubble);
  out.power.joules_per_token = out.power.watts_per_gpu * g / out.tokens_per_s;
  AddWarnings(p, {step, comm_exposed, bubble, slow * mbs * stage.layers * lc.host_wait_s}, &out);
  return out;
}

}  // namespace scalecast
