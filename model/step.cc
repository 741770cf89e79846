#include "model/step.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/layout.h"

namespace scalecast {
namespace {

// --- Memory constants -------------------------------------------------------------------------
// Mixed-precision AdamW state per parameter (Rajbhandari et al. 2020, ZeRO, section 3.1):
// bf16 weights 2 B, fp32 gradients 4 B (reduced in fp32: Megatron's main_grad, FSDP's
// reduce_dtype=float32 in torchtitan and llm-foundry's DEFAULT mixed precision), fp32 master
// weights 4 B, Adam moments 8 B.
constexpr double kBf16 = 2, kFp32 = 4, kAdamMoments = 8;
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

bool LowPrecision(Precision p) {
  return p == Precision::kFp8 || p == Precision::kMxfp8 || p == Precision::kNvfp4;
}

}  // namespace

StepModel::StepModel(const Scenario& s, const Catalog& catalog, const Profile& profile)
    : s_(s), shape_(s.workload.model) {
  acc_ = catalog.FindAccelerator(s.cluster.accelerator);
  if (acc_ == nullptr) {
    status_ = absl::NotFoundError(absl::StrCat(
        "scenario.cluster.accelerator: unknown accelerator '", s.cluster.accelerator, "'"));
    return;
  }
  framework_ = FindFramework(s.framework);
  if (framework_ == nullptr) framework_ = &GenericFramework();
  absl::StatusOr<Stack> stack = ResolveStack(*framework_, s.stack, s.workload.precision);
  if (!stack.ok()) {
    status_ = stack.status();
    return;
  }
  stack_ = *std::move(stack);
  params_ = CountParams(shape_);
  hw_ = MakeHardware(*acc_, profile.ForAccelerator(acc_->family), stack_, profile.stack,
                     s.workload.precision, s.cluster.gpus_per_node,
                     s.cluster.inter_node_gbps_per_gpu);
  overlap_eff_ = profile.stack.overlap_eff;
  comm_slowdown_ = profile.global.comm_slowdown;
  model_flops_per_token_ = ModelFlopsPerToken(shape_, s.workload.seq_len);
}

LayerCost StepModel::ComputeLayer(int tp, int cp, int micro_batch, Recompute rc, bool sp) const {
  LayerCost c;
  const Shape& m = shape_;
  const double h = m.hidden, f = m.ffn;
  const double seq = s_.workload.seq_len;
  const double local_seq = seq / cp;
  const double tokens = micro_batch * local_seq;
  // The four linear layers as (M, N, K) of the forward GEMM; TP splits N (column parallel) or
  // K (row parallel).
  const double gemms[4][3] = {{tokens, m.qkv_out / tp, h},
                              {tokens, h, h / tp},
                              {tokens, m.mlp_up_out / tp, h},
                              {tokens, h, f / tp}};
  double fwd_gemm = 0, bwd_gemm = 0;
  for (const auto& g : gemms) {
    fwd_gemm += GemmTime(hw_, g[0], g[1], g[2]);
    bwd_gemm += GemmTime(hw_, g[0], g[2], g[1]);  // input gradient
    bwd_gemm += GemmTime(hw_, g[2], g[1], g[0]);  // weight gradient
  }
  const double local_heads = m.heads / tp;
  const auto attention = hw_.math_attention ? MathAttentionTime : AttentionTime;
  const double attn_f = attention(hw_, micro_batch, local_seq, seq, local_heads, m.head_dim, false);
  const double attn_b = attention(hw_, micro_batch, local_seq, seq, local_heads, m.head_dim, true);

  // Memory-bound kernels, bytes per forward: two norms (read+write h each) and two residual adds
  // (read 2h, write h) on the replicated activations (split by TP only with sequence
  // parallelism), rotary embedding on q and k, the activation function, and the fp8 recipe's
  // casts of GEMM inputs and weights; all of it scaled by how much the stack fuses.
  const double rep_tokens = sp ? tokens / tp : tokens;
  double fwd_bytes = rep_tokens * 10 * h * kBf16;
  fwd_bytes += tokens * 2 * (h + m.kv_heads * m.head_dim) / tp * kBf16;
  fwd_bytes += tokens * (m.gated ? 3 : 2) * f / tp * kBf16;
  const double layer_params = params_.per_layer / tp;
  fwd_bytes *= hw_.traffic_scale;
  if (LowPrecision(s_.workload.precision)) {
    fwd_bytes += (tokens * (2 * h + h / tp + f / tp) + layer_params) * hw_.cast_bytes;
  }
  const double mem_f = MemTime(hw_, fwd_bytes, 12);
  const double mem_b = MemTime(hw_, 2 * fwd_bytes, 24);

  c.fwd_s = fwd_gemm + attn_f + mem_f;
  c.bwd_s = bwd_gemm + attn_b + mem_b;
  const double attn_fwd_flops = 2.0 * micro_batch * local_seq * seq * m.head_dim * local_heads;
  const double matmul_fwd_flops = 2.0 * tokens * (layer_params - 2 * h / tp);
  c.flops_hw = 3 * matmul_fwd_flops + (1 + kAttnBackwardRatio) * attn_fwd_flops;
  if (rc == Recompute::kFull) {
    c.recompute_s = c.fwd_s;
    c.flops_hw += matmul_fwd_flops + attn_fwd_flops;
  } else if (rc == Recompute::kSelective) {
    switch (framework_->behaviour.selective) {
      case SelectivePolicy::kAttentionCore:  // the attention core and memory-bound kernels
        c.recompute_s = attn_f + mem_f;
        c.flops_hw += attn_fwd_flops;
        break;
      case SelectivePolicy::kEveryOtherMatmul:  // half the GEMMs and the memory-bound kernels
        c.recompute_s = 0.5 * fwd_gemm + mem_f;
        c.flops_hw += 0.5 * matmul_fwd_flops;
        break;
      case SelectivePolicy::kHalfTheLayers:  // a full forward on half the layers
        c.recompute_s = 0.5 * c.fwd_s;
        c.flops_hw += 0.5 * (matmul_fwd_flops + attn_fwd_flops);
        break;
    }
  }

  // Tensor parallelism: per layer two collectives of the micro-batch's activations forward and
  // two backward (all-reduce, or all-gather + reduce-scatter with sequence parallelism); a full
  // recompute repeats the forward's. They sit on the compute stream, exposed, unless the stack
  // overlaps them with the GEMMs they feed (userbuffers / async TP split each GEMM into chunks
  // and move one chunk while the previous multiplies).
  if (tp > 1) {
    const Group g{tp, std::min(tp, hw_.domain)};
    const double msg = tokens * h * kBf16;
    const double one = sp ? CollectiveTime(hw_, Collective::kAllGather, g, msg) +
                                CollectiveTime(hw_, Collective::kReduceScatter, g, msg)
                          : CollectiveTime(hw_, Collective::kAllReduce, g, msg);
    c.tp_fwd_s = 2 * one;
    c.tp_bwd_s = 2 * one + (rc == Recompute::kFull ? 2 * one : 0);
    c.tp_exposed_s = c.tp_fwd_s + c.tp_bwd_s;
    if (stack_.tp_comm_overlap) {
      c.tp_exposed_s = Exposed(c.tp_fwd_s, fwd_gemm, overlap_eff_, comm_slowdown_) +
                       Exposed(c.tp_bwd_s, bwd_gemm, overlap_eff_, comm_slowdown_);
    }
    const double sent = 2.0 * (tp - 1) / tp * msg;  // per collective pair, per GPU
    c.tp_bytes = (4 + (rc == Recompute::kFull ? 2 : 0)) * sent;
  }
  // Context parallelism: ring exchange of K and V chunks (cp-1 steps) beside the attention
  // forward, K/V and their gradients beside its backward.
  if (cp > 1) {
    const double local_kv = std::max(1.0, m.kv_heads / tp);
    const double kv_bytes = micro_batch * local_seq * 2 * local_kv * m.head_dim * kBf16;
    const Group g{cp, Clamp(hw_.domain / tp, 1, cp)};
    const double step = CollectiveTime(hw_, Collective::kSendRecv, g, kv_bytes);
    c.cp_fwd_s = (cp - 1) * step;
    c.cp_bwd_s = 2 * c.cp_fwd_s;
    c.cp_exposed_s = Exposed(c.cp_fwd_s, attn_f, overlap_eff_, comm_slowdown_) +
                     Exposed(c.cp_bwd_s, attn_b, overlap_eff_, comm_slowdown_);
    c.cp_bytes = 3.0 * (cp - 1) * kv_bytes;
  }
  return c;
}

MemoryBreakdown StepModel::Memory(const Parallelism& p) const {
  MemoryBreakdown mem;
  const int g = s_.cluster.num_gpus;
  const int tp = p.tp, pp = p.pp, cp = p.cp;
  const int dp = g / (tp * pp * cp);
  const bool sp = p.sp();
  const Shape& m = shape_;
  const double h = m.hidden, f = m.ffn;
  const double layers_per_stage = SplitLayers(s_.workload.model, p).Max();
  // The stage holding the embedding and the output layer (pp == 1: both).
  const double head_params =
      pp == 1 ? params_.embedding + params_.output : std::max(params_.embedding, params_.output);
  const double stage_params = (layers_per_stage * params_.per_layer + head_params) / tp;
  const double unit_params = std::max(params_.per_layer, params_.output) / tp;
  const int n_dp = dp * cp;
  int shard = 1;
  if (p.sharding == Sharding::kHsdp) shard = std::max(1, p.shard_group);
  if (p.sharding == Sharding::kFsdp || p.sharding == Sharding::kZero1 ||
      p.sharding == Sharding::kZero2) {
    shard = n_dp;
  }
  switch (p.sharding) {
    case Sharding::kFsdp:
    case Sharding::kHsdp:
      // Sharded fp32 parameters and gradients, two gathered bf16 units (current + prefetched)
      // and one unit's unsharded gradient in flight.
      mem.weights_bytes = Bytes(stage_params * kFp32 / shard + 2 * unit_params * kBf16);
      mem.gradients_bytes = Bytes(stage_params * kFp32 / shard + unit_params * kFp32);
      mem.optimizer_bytes = Bytes(stage_params * kAdamMoments / shard);
      if (pp > 1 && framework_->behaviour.fsdp_stage_gathered_across_microbatches) {
        // With pipelining, FSDP keeps the stage gathered from forward to backward and
        // accumulates unsharded gradients until the last micro-batch (torchtitan sets
        // reshard_after_forward=False with PP; torch.distributed.pipelining defers the
        // reduce-scatter to the last micro-batch).
        mem.weights_bytes += Bytes(stage_params * kBf16);
        mem.gradients_bytes += Bytes(stage_params * kFp32);
      }
      break;
    case Sharding::kZero2:
      mem.weights_bytes = Bytes(stage_params * kBf16);
      mem.gradients_bytes = Bytes(stage_params * kFp32 / shard + unit_params * kFp32);
      mem.optimizer_bytes = Bytes(stage_params * (kFp32 + kAdamMoments) / shard);
      break;
    case Sharding::kZero1:
      mem.weights_bytes = Bytes(stage_params * kBf16);
      mem.gradients_bytes = Bytes(stage_params * kFp32);
      mem.optimizer_bytes = Bytes(stage_params * (kFp32 + kAdamMoments) / shard);
      break;
    default:  // DDP
      mem.weights_bytes = Bytes(stage_params * kBf16);
      mem.gradients_bytes = Bytes(stage_params * kFp32);
      mem.optimizer_bytes = Bytes(stage_params * (kFp32 + kAdamMoments));
      break;
  }
  // Activations saved per token per layer (bytes). Replicated across TP ranks unless sequence
  // parallel: layer input, norm outputs, the second residual (8h). Split by TP: q/k/v, the
  // attention output, the MLP input projections' outputs and the activation output. Flash
  // attention keeps no s*s score matrix (Korthikanti et al. 2022's 5as/h term is gone).
  const double rep = sp ? 1.0 / tp : 1.0;
  const double split = (kBf16 * m.qkv_out + kBf16 * h + kBf16 * m.mlp_up_out + kBf16 * f) / tp;
  double per_token = 0;
  switch (p.recompute) {
    case Recompute::kFull:
      per_token = kBf16 * h * rep;  // the layer input only
      break;
    case Recompute::kSelective: {
      // Drop the norm outputs and the activation output; keep GEMM outputs (or half of them,
      // or keep whole layers on half the blocks, per the framework's policy).
      const double gemm_outputs = (kBf16 * m.qkv_out + kBf16 * h + kBf16 * m.mlp_up_out) / tp;
      switch (framework_->behaviour.selective) {
        case SelectivePolicy::kAttentionCore:
          per_token = 4 * h * rep + gemm_outputs;
          break;
        case SelectivePolicy::kEveryOtherMatmul:
          per_token = 4 * h * rep + gemm_outputs - 0.5 * kBf16 * m.mlp_up_out / tp;
          break;
        case SelectivePolicy::kHalfTheLayers:
          per_token = 0.5 * (kBf16 * h * rep) + 0.5 * (8 * h * rep + split);
          break;
      }
      break;
    }
    default:
      per_token = 8 * h * rep + split;
  }
  const double tokens = static_cast<double>(p.micro_batch) * s_.workload.seq_len / cp;
  const int64_t micro_batches =
      s_.workload.global_batch / (static_cast<int64_t>(dp) * p.micro_batch);
  // Micro-batches whose activations are live at once on the first stage: 1 without PP; pp for
  // 1F1B; interleaving adds (pp-1)/vpp more chunks' worth (Narayanan et al. 2021).
  double in_flight = 1;
  if (pp > 1) {
    in_flight = std::min<double>(static_cast<double>(micro_batches),
                                 pp + (p.vpp > 1 ? (pp - 1.0) / p.vpp : 0.0));
  }
  double act = per_token * tokens * layers_per_stage * in_flight;
  // During backward with full recompute one layer's activations are rebuilt in full.
  if (p.recompute == Recompute::kFull) act += (8 * h * rep + split) * tokens;
  // The loss: logits of the micro-batch (vocab split by TP) on the last stage.
  act += tokens * m.vocab / tp * (stack_.FusedLoss() ? kFusedLogitBytes : kLogitBytes);
  mem.activations_bytes = Bytes(act);
  mem.other_bytes = Bytes(kRuntimeOverheadBytes);
  const double live = static_cast<double>(mem.weights_bytes + mem.gradients_bytes +
                                          mem.optimizer_bytes + mem.activations_bytes) +
                      kRuntimeOverheadBytes;
  mem.other_bytes += Bytes(live * (kFragmentation - 1));
  mem.total_bytes = Bytes(static_cast<double>(mem.weights_bytes) + mem.gradients_bytes +
                          mem.optimizer_bytes + mem.activations_bytes + mem.other_bytes);
  mem.capacity_bytes = Bytes(acc_->hbm_gib * (1LL << 30));
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
  return mem;
}

StepModel::HeadCost StepModel::ComputeHead(int tp, double tokens) const {
  // Embedding lookup, final norm, logits GEMM and loss: on the last stage (or the only one).
  const Shape& m = shape_;
  const double h = m.hidden;
  const double loss_bytes = tokens * m.vocab / tp * kLossTrafficBytes * hw_.traffic_scale;
  HeadCost c;
  c.fwd_s = GemmTime(hw_, tokens, m.vocab / tp, h) +
            MemTime(hw_, loss_bytes + tokens * 6 * h * kBf16 * hw_.traffic_scale, 6);
  c.bwd_s = GemmTime(hw_, tokens, h, m.vocab / tp) + GemmTime(hw_, h, m.vocab / tp, tokens) +
            MemTime(hw_, loss_bytes + tokens * 8 * h * kBf16 * hw_.traffic_scale, 8);
  return c;
}

StepModel::StageCost StepModel::SlowestStage(const Parallelism& p, const LayerCost& lc,
                                             const HeadCost& head) const {
  // Per micro-batch on one stage: its layers' compute, exposed TP and CP, and the head on the
  // last stage. The slowest stage sets the pipeline's pace.
  const double per_layer = lc.fwd_s + lc.bwd_s + lc.recompute_s + lc.tp_exposed_s + lc.cp_exposed_s;
  const PipelineSplit split = SplitLayers(s_.workload.model, p);
  StageCost best;
  auto consider = [&](double layers, bool has_head) {
    const double t = layers * per_layer + (has_head ? head.fwd_s + head.bwd_s : 0.0);
    if (t > best.t_mb) best = StageCost{layers, has_head, t};
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

StepModel::CommTerm StepModel::PipelineP2p(const Parallelism& p, double micro_batches,
                                           double tokens) const {
  // Each micro-batch crosses every chunk boundary forward and back.
  CommTerm t;
  if (p.pp <= 1) return t;
  const double act_bytes = tokens * shape_.hidden * kBf16 / (p.sp() ? p.tp : 1);
  const int stride = p.tp * p.cp * p.dp;
  const Group link{2, stride < hw_.domain ? 2 : 1};
  const double one = CollectiveTime(hw_, Collective::kSendRecv, link, act_bytes);
  t.total = 2.0 * p.vpp * micro_batches * one;
  t.bytes = 2.0 * p.vpp * micro_batches * act_bytes;
  t.ranks = p.pp;
  // 1F1B sends are blocking between a stage's steps; the interleaved schedule overlaps them.
  t.exposed =
      p.vpp == 1 ? t.total : t.total * (1 - overlap_eff_) + comm_slowdown_ * t.total * overlap_eff_;
  return t;
}

StepModel::DataParallelComm StepModel::DataParallel(const Parallelism& p, const StageCost& stage,
                                                    const LayerCost& lc, const HeadCost& head,
                                                    double mbs) const {
  DataParallelComm out;
  const int tp = p.tp, n_dp = p.dp * p.cp;
  const double h = shape_.hidden;
  // A stack that does not overlap DP communication issues it after the compute it follows.
  const double ov = stack_.dp_overlap ? overlap_eff_ : 0.0;
  const double kappa = comm_slowdown_;
  const int dp_per_domain = Clamp(hw_.domain / tp, 1, n_dp);
  const Group dp_group{n_dp, dp_per_domain};
  const double layer_f_window = lc.fwd_s + lc.tp_fwd_s;
  const double layer_b_window = lc.bwd_s + lc.recompute_s + lc.tp_bwd_s;
  // The FSDP units of the slowest stage: (embedding,) layers, output layer.
  struct Unit {
    double params, fwd, bwd;
  };
  std::vector<Unit> units;
  const int layers = static_cast<int>(stage.layers);
  units.reserve(layers + 2);
  if (p.pp == 1) units.push_back({params_.embedding / tp, 0.0, 0.0});
  for (int i = 0; i < layers; ++i) {
    units.push_back({params_.per_layer / tp, layer_f_window, layer_b_window});
  }
  if (stage.has_head) units.push_back({(params_.output + h) / tp, head.fwd_s, head.bwd_s});
  for (const Unit& u : units) out.stage_params += u.params;
  const double stage_params = out.stage_params;
  const double c_f = stage.layers * lc.fwd_s + (stage.has_head ? head.fwd_s : 0.0);
  const double c_b =
      stage.layers * (lc.bwd_s + lc.recompute_s) + (stage.has_head ? head.bwd_s : 0.0);
  out.allgather.ranks = out.reducescatter.ranks = out.allreduce.ranks = n_dp;
  if (n_dp <= 1) return out;
  const Sharding sh = p.sharding;
  if (sh == Sharding::kFsdp || sh == Sharding::kHsdp) {
    Group shard_group = dp_group;
    Group replica_group{1, 1};
    if (sh == Sharding::kHsdp) {
      const int sgs = std::max(1, std::min(p.shard_group, n_dp));
      shard_group = Group{sgs, Clamp(hw_.domain / tp, 1, sgs)};
      const int replicas = n_dp / sgs;
      const int rep_per_domain =
          hw_.domain / tp >= sgs ? Clamp(hw_.domain / (tp * sgs), 1, replicas) : 1;
      replica_group = Group{replicas, rep_per_domain};
      out.allreduce.ranks = replicas;
    }
    const int ag_ranks = shard_group.ranks;
    out.allgather.ranks = out.reducescatter.ranks = ag_ranks;
    out.optimizer_shard = ag_ranks;
    const size_t n = units.size();
    std::vector<double> ag(n), rs(n), ar(n);
    for (size_t i = 0; i < n; ++i) {
      ag[i] = CollectiveTime(hw_, Collective::kAllGather, shard_group, units[i].params * kBf16);
      rs[i] = CollectiveTime(hw_, Collective::kReduceScatter, shard_group, units[i].params * kFp32);
      ar[i] = CollectiveTime(hw_, Collective::kAllReduce, replica_group,
                             units[i].params * kFp32 / shard_group.ranks);
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
    const bool once_per_step =
        p.pp > 1 && framework_->behaviour.fsdp_stage_gathered_across_microbatches;
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
    out.allgather.bytes = reps * 2 * stage_params * kBf16 * (ag_ranks - 1) / ag_ranks;
    out.reducescatter.bytes = reps * stage_params * kFp32 * (ag_ranks - 1) / ag_ranks;
    const int replicas = out.allreduce.ranks;
    if (replicas > 1 && sh == Sharding::kHsdp) {
      out.allreduce.bytes =
          reps * 2.0 * stage_params * kFp32 / ag_ranks * (replicas - 1) / replicas;
    }
    return out;
  }
  // DDP / ZeRO: gradients reduced in buckets (one per unit) during the last micro-batch's
  // backward (ZeRO-2: every micro-batch's); ZeRO gathers updated parameters after the step,
  // beside the next forward where the stack overlaps it (Megatron's --overlap-param-gather).
  const bool zero = sh == Sharding::kZero1 || sh == Sharding::kZero2;
  out.optimizer_shard = zero ? n_dp : 1;
  const Collective red = zero ? Collective::kReduceScatter : Collective::kAllReduce;
  double red_sum = 0, last = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const double t = CollectiveTime(hw_, red, dp_group, units[i].params * kFp32);
    red_sum += t;
    if (i == 0) last = t;  // the first unit's gradients are ready last
  }
  const double red_exp = Exposed(red_sum - last, c_b, ov, kappa) + last;
  const double reps = sh == Sharding::kZero2 ? mbs : 1.0;
  const double wire = zero ? (n_dp - 1.0) / n_dp : 2.0 * (n_dp - 1.0) / n_dp;
  if (zero) {
    out.reducescatter = {reps * red_sum, reps * red_exp, reps * stage_params * kFp32 * wire, n_dp};
    const double ag = CollectiveTime(hw_, Collective::kAllGather, dp_group, stage_params * kBf16);
    out.allgather = {ag, Exposed(ag, c_f, ov, kappa), stage_params * kBf16 * (n_dp - 1.0) / n_dp,
                     n_dp};
  } else {
    out.allreduce = {red_sum, red_exp, stage_params * kFp32 * wire, n_dp};
  }
  return out;
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

void StepModel::AddWarnings(const Parallelism& p, double step, double comm_exposed, double bubble,
                            Prediction* out) const {
  const Accelerator& a = *acc_;
  const double gib = 1 << 30;
  if (!out->memory.fits) {
    out->warnings.push_back(absl::StrFormat("does not fit: %.1f GiB needed, %.0f GiB on %s",
                                            out->memory.total_bytes / gib, a.hbm_gib, a.id));
  }
  if (p.tp > hw_.domain) {
    out->warnings.push_back(absl::StrFormat(
        "tp=%d spans %d NVLink domains of %d GPUs: tensor-parallel traffic crosses the network",
        p.tp, (p.tp + hw_.domain - 1) / hw_.domain, hw_.domain));
  }
  if (bubble > 0.15 * step) {
    out->warnings.push_back(absl::StrFormat(
        "pipeline bubble is %.0f%% of the step: use more micro-batches or interleaving",
        100 * bubble / step));
  }
  if (comm_exposed > 0.25 * step) {
    out->warnings.push_back(
        absl::StrFormat("exposed communication is %.0f%% of the step", 100 * comm_exposed / step));
  }
  if (hw_.clock_scale < 0.999) {
    out->warnings.push_back(
        absl::StrFormat("the %.0f W power limit throttles compute clocks to ~%.0f%%",
                        a.power_limit_w, 100 * hw_.clock_scale));
  }
  const AttentionKernel ran = EffectiveAttentionKernel(stack_.attention, GenerationOf(a.family));
  if (stack_.attention != AttentionKernel::kDefault && ran != stack_.attention) {
    out->warnings.push_back(
        absl::StrFormat("attention kernel %s does not run on %s: predicted "
                        "with %s",
                        ToString(stack_.attention), a.id, ToString(ran)));
  }
}

Prediction StepModel::Evaluate(const Parallelism& layout, const MemoryBreakdown* memory) const {
  Prediction out;
  out.label = s_.label;
  out.stack = stack_;
  Parallelism p = layout;
  const int g = s_.cluster.num_gpus;
  p.vpp = std::max(1, p.vpp);
  p.dp = g / (p.tp * p.pp * p.cp);
  p.sequence_parallel = p.sp();
  out.layout = p;
  const double seq = s_.workload.seq_len;
  const double mbs =
      static_cast<double>(s_.workload.global_batch / (static_cast<int64_t>(p.dp) * p.micro_batch));
  const double tokens = p.micro_batch * seq / p.cp;

  const LayerCost lc = ComputeLayer(p.tp, p.cp, p.micro_batch, p.recompute, p.sp());
  const HeadCost head = ComputeHead(p.tp, tokens);
  const StageCost stage = SlowestStage(p, lc, head);
  const CommTerm p2p = PipelineP2p(p, mbs, tokens);
  const DataParallelComm dp = DataParallel(p, stage, lc, head, mbs);

  const double optimizer =
      MemTime(hw_, dp.stage_params / dp.optimizer_shard * kOptimizerBytesPerParam, 6);
  const double bubble = p.pp > 1 ? (p.pp - 1.0) / p.vpp * (stage.t_mb + p2p.total / mbs) : 0.0;
  const double step = mbs * stage.t_mb + p2p.exposed + bubble + optimizer + dp.allgather.exposed +
                      dp.reducescatter.exposed + dp.allreduce.exposed;

  out.step_time_s = step;
  out.tokens_per_s = static_cast<double>(s_.workload.global_batch) * seq / step;
  out.tokens_per_s_per_gpu = out.tokens_per_s / g;
  const double peak = hw_.bf16_peak;
  out.model_tflops_per_gpu = model_flops_per_token_ * out.tokens_per_s_per_gpu / 1e12;
  out.mfu = model_flops_per_token_ * out.tokens_per_s_per_gpu / peak;
  const double head_flops = stage.has_head ? 6.0 * tokens * params_.output / p.tp : 0.0;
  out.hfu = mbs * (stage.layers * lc.flops_hw + head_flops) / step / peak;

  TimeBreakdown& t = out.time;
  t.compute_s = mbs * (stage.layers * (lc.fwd_s + lc.bwd_s) +
                       (stage.has_head ? head.fwd_s + head.bwd_s : 0.0));
  t.recompute_s = mbs * stage.layers * lc.recompute_s;
  t.pipeline_bubble_s = bubble;
  t.optimizer_s = optimizer;
  auto add = [&t](std::string kind, double total, double exposed, double bytes, int ranks) {
    if (total <= 0) return;
    t.comm.push_back(CommTime{std::move(kind), total, exposed, Bytes(bytes), ranks});
  };
  add("dp_allgather", dp.allgather.total, dp.allgather.exposed, dp.allgather.bytes,
      dp.allgather.ranks);
  add("dp_reducescatter", dp.reducescatter.total, dp.reducescatter.exposed, dp.reducescatter.bytes,
      dp.reducescatter.ranks);
  add("dp_allreduce", dp.allreduce.total, dp.allreduce.exposed, dp.allreduce.bytes,
      dp.allreduce.ranks);
  add("tp", mbs * stage.layers * (lc.tp_fwd_s + lc.tp_bwd_s), mbs * stage.layers * lc.tp_exposed_s,
      mbs * stage.layers * lc.tp_bytes, p.tp);
  add("pp_p2p", p2p.total, p2p.exposed, p2p.bytes, p.pp);
  add("cp", mbs * stage.layers * (lc.cp_fwd_s + lc.cp_bwd_s), mbs * stage.layers * lc.cp_exposed_s,
      mbs * stage.layers * lc.cp_bytes, p.cp);

  out.memory = memory != nullptr ? *memory : Memory(p);
  double comm_exposed = 0;
  for (const CommTime& c : t.comm) comm_exposed += c.exposed_s;
  out.power = Power(step, comm_exposed, bubble);
  out.power.joules_per_token = out.power.watts_per_gpu * g / out.tokens_per_s;
  AddWarnings(p, step, comm_exposed, bubble, &out);
  return out;
}

}  // namespace scalecast
