#include "model/hardware.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/match.h"

namespace scalecast {
namespace {

// Dynamic power falls with the square of the clock over the DVFS range the cap uses (P ~ f V^2
// with V partly tracking f); an assumption, stated.
constexpr double kPowerClockExponent = 2.0;

}  // namespace

int DomainSize(const Accelerator& acc, int gpus_per_node) {
  // A rack-scale NVLink domain (GB200/GB300 NVL72: 72 GPUs over 18 trays of 4) spans nodes: its
  // size does not depend on how many GPUs a tray or node holds.
  if (acc.nvlink_domain > acc.gpus_per_node) return std::max(1, acc.nvlink_domain);
  const int gpn = gpus_per_node > 0 ? gpus_per_node : acc.gpus_per_node;
  return std::max(1, std::min(gpn, acc.nvlink_domain));
}

double ClockScale(const Accelerator& acc) {
  const double demand = acc.idle_w + kComputeActivity * (acc.tdp_w - acc.idle_w);
  if (acc.power_limit_w >= demand || acc.power_limit_w <= acc.idle_w) return 1.0;
  return std::pow((acc.power_limit_w - acc.idle_w) / (demand - acc.idle_w),
                  1.0 / kPowerClockExponent);
}

AttentionKernel EffectiveAttentionKernel(AttentionKernel k, absl::string_view generation) {
  if (k == AttentionKernel::kDefault) k = AttentionKernel::kFa2;
  if (generation == "volta") return AttentionKernel::kMath;
  if (k == AttentionKernel::kFa3 && generation != "hopper") return AttentionKernel::kFa2;
  // FlashAttention 1 and the Triton kernel predate Blackwell; what runs there is FA2's successor.
  if ((k == AttentionKernel::kFa1 || k == AttentionKernel::kTriton) && generation == "blackwell") {
    return AttentionKernel::kFa2;
  }
  const bool amd = absl::StartsWith(generation, "cdna");
  if (k == AttentionKernel::kCudnn && amd) return AttentionKernel::kFa2;
  return k;
}

UnfusedAttention UnfusedAttentionOf(AttentionKernel k, absl::string_view generation, double qk_dim,
                                    double v_dim, double software_date) {
  const AttentionKernel run = EffectiveAttentionKernel(k, generation);
  if (run == AttentionKernel::kFa1 && std::max(qk_dim, v_dim) > kFa1MaxHeadDim) {
    return UnfusedAttention::kFa1HeadWidth;
  }
  if (run == AttentionKernel::kCudnn && generation == "blackwell" && qk_dim > 128 &&
      qk_dim != v_dim && software_date > 0 && software_date < kCudnnMlaOnBlackwellDate) {
    return UnfusedAttention::kCudnnBeforeMlaWidths;
  }
  return UnfusedAttention::kNo;
}

double AttentionHeadDimKnee(AttentionKernel k, absl::string_view generation) {
  const AttentionKernel run = EffectiveAttentionKernel(k, generation);
  const bool warp_specialized = (run == AttentionKernel::kFa3 || run == AttentionKernel::kCudnn) &&
                                (generation == "hopper" || generation == "blackwell");
  return warp_specialized ? kAttnHeadDimKneeWarpSpecialized : kAttnHeadDimKnee;
}

double AttentionKernelFactor(AttentionKernel k, absl::string_view generation) {
  switch (EffectiveAttentionKernel(k, generation)) {
    case AttentionKernel::kFa2:
      if (generation == "hopper") return kFa2OnHopper;
      if (generation == "blackwell") return 0.5;
      return 1.0;
    case AttentionKernel::kCudnn:
      return generation == "ampere" ? 0.95 : 1.0;
    // FlashAttention-2 paper (kFa2OverFa1, kFa2OverTriton): slower than FA2 by those ratios.
    case AttentionKernel::kFa1:
      return AttentionKernelFactor(AttentionKernel::kFa2, generation) / kFa2OverFa1;
    case AttentionKernel::kTriton:
      // Measured against FA2 on A100 only; on Hopper FA2 itself leaves the warp-specialised
      // hardware idle (kFa2OnHopper), so the Triton kernel is timed at FA2's rate there.
      if (generation != "ampere") return AttentionKernelFactor(AttentionKernel::kFa2, generation);
      return AttentionKernelFactor(AttentionKernel::kFa2, generation) / kFa2OverTriton;
    default:
      return 1.0;  // FA3 on Hopper; math attention is timed as GEMMs, not by this factor
  }
}

double CastBytesPerElement(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kNone:
      return 0;
    case Fp8Recipe::kDelayed:
      return 3;
    case Fp8Recipe::kTensorwise:
      return 5;
    case Fp8Recipe::kRowwise:
    case Fp8Recipe::kBlockwise:
      return 6;
    case Fp8Recipe::kMxfp8:
      return 4;
    case Fp8Recipe::kNvfp4:
      return 5;
    case Fp8Recipe::kMxfp4:
      return kMxfp4CastBytes;
  }
  return 0;
}

bool ScalesByRowOrBlock(Fp8Recipe r) {
  return r == Fp8Recipe::kRowwise || r == Fp8Recipe::kBlockwise;
}

double RecipeGemmFactor(Fp8Recipe r, absl::string_view generation) {
  if (ScalesByRowOrBlock(r) && generation == "hopper") {
    return 0.9;
  }
  if (r == Fp8Recipe::kMxfp8) return kMxfp8OverFp8;
  return 1.0;
}

double DenseFlopsPerSmClock(absl::string_view generation) {
  if (generation == "volta") return 1024;
  if (generation == "ampere") return 2048;
  if (generation == "hopper") return 4096;
  if (generation == "blackwell") return 8192;
  return 0;
}

Hardware MakeHardware(const Accelerator& acc, const AcceleratorParams& ap, const Stack& stack,
                      const StackParams& sp, Precision precision, int gpus_per_node,
                      double net_gbps_override) {
  Hardware hw;
  hw.acc = &acc;
  const absl::string_view generation = GenerationOf(acc.family);
  hw.bf16_peak = acc.SixteenBitPeakFlops();
  const bool low_precision = IsLowPrecision(precision);
  hw.matmul_peak =
      acc.PeakFlops(precision == Precision::kUnspecified ? Precision::kBf16 : precision);
  if (hw.matmul_peak <= 0) hw.matmul_peak = hw.bf16_peak;
  if (IsFp4(precision) && acc.PeakFlops(Precision::kFp8) > 0) {
    hw.matmul_peak = std::min(hw.matmul_peak, kNvfp4OverFp8 * acc.PeakFlops(Precision::kFp8));
  }
  hw.gemm_eff = ap.gemm_eff * (low_precision ? ap.fp8_gemm_ratio : 1.0) *
                RecipeGemmFactor(stack.fp8_recipe, generation);
  hw.matmul_bytes = low_precision ? 1 : 2;
  hw.cast_bytes = low_precision ? CastBytesPerElement(stack.fp8_recipe) : 0.0;
  // fp8 attention (fp8 or fp4 training only, ResolveStack): the fused core's GEMMs at the fp8
  // rate; an unfused (math) attention is timed from the GEMM rate and has no use for this one.
  hw.attn_eff = ap.attn_eff * AttentionKernelFactor(stack.attention, generation);
  hw.attn_mma_speedup = stack.fp8_attention && low_precision ? kFp8AttentionSpeedup : 1.0;
  hw.exp_per_s = acc.tensor_flops_per_exp > 0 ? hw.bf16_peak / acc.tensor_flops_per_exp : 0.0;
  const double per_sm_clock = DenseFlopsPerSmClock(generation);
  // Only where the part's 16-bit peak is its SMs' full rate (tensor_flops_per_exp catalogued;
  // H20's capped tensor cores are not).
  hw.sm_cycles_per_s =
      per_sm_clock > 0 && acc.tensor_flops_per_exp > 0 ? hw.bf16_peak / per_sm_clock : 0.0;
  hw.attn_head_knee = AttentionHeadDimKnee(stack.attention, generation);
  hw.math_attention =
      EffectiveAttentionKernel(stack.attention, generation) == AttentionKernel::kMath;
  hw.hbm_bps = acc.hbm_tbps * 1e12 * ap.hbm_eff;
  // Hand-fused stacks write each elementwise chain as one kernel; torch.compile fuses them with
  // some extra passes (compiled_traffic); eager PyTorch runs a native kernel like a fused one and
  // a composite op as its chain (eager_traffic, fitted; the op-by-op count is in profile.h).
  hw.traffic_scale = stack.fused_kernels ? 1.0 : (stack.compiled ? sp.compiled_traffic : 1.0);
  hw.composite_traffic_scale =
      stack.fused_kernels ? 1.0 : (stack.compiled ? sp.compiled_traffic : sp.eager_traffic);
  hw.kernel_min_s = stack.cuda_graphs || stack.compiled ? kMemKernelMinS : kEagerKernelMinS;
  hw.clock_scale = ClockScale(acc);
  hw.knee = kGemmKneePerSm * std::max(acc.sms, 1);
  hw.domain = DomainSize(acc, gpus_per_node);
  hw.nvlink_bps = acc.nvlink_gbps * 1e9 * kNvlinkEff;
  const double net_gbps = net_gbps_override > 0 ? net_gbps_override : acc.net_gbps;
  hw.net_bps = net_gbps / 8.0 * 1e9 * kNetEff;
  hw.host_bps = acc.host_link_gbps * 1e9 * kHostLinkEff;
  const bool nccl_has_nvls = stack.software_date <= 0 || stack.software_date >= kNcclNvlsDate;
  hw.nvls_bps = acc.nvlink_sharp && nccl_has_nvls ? acc.nvlink_gbps * 1e9 * kNvlsEff : 0.0;
  return hw;
}

namespace {

// std::ceil of a positive double, the same double for every input: baseline x86-64 has no
// rounding instruction (SSE4.1's roundsd), and GCC expands std::ceil to ~20 instructions where
// this takes about 8 (callgrind: GemmTime, four of these in each, 137 -> 109 instructions).
inline double CeilPositive(double q) {
  // Below 2^52 the truncation is exact and one more is exact; from 2^52 on (and for NaN and
  // infinity) a double is already whole.
  if (!(q > 0 && q < 0x1p52)) return std::ceil(q);
  const double t = static_cast<double>(static_cast<int64_t>(q));
  return t < q ? t + 1.0 : t;
}

}  // namespace

double GemmTime(const Hardware& hw, double m, double n, double k) {
  const double shape = (m / (m + hw.knee)) * (n / (n + hw.knee)) * (k / (k + hw.knee));
  const double rate = hw.matmul_peak * hw.gemm_eff * shape * hw.clock_scale;
  // Tile quantization: the output is computed in whole tiles, so a dimension that does not
  // divide the tile pays for the padded rest (cuBLAS's largest tile, in the orientation that
  // wastes less); a dimension narrower than the short side gets a narrower tile.
  auto padded = [](double x, double tile) {
    return x <= kGemmTileShort ? x : CeilPositive(x / tile) * tile;
  };
  const double area = std::min(padded(m, kGemmTileLong) * padded(n, kGemmTileShort),
                               padded(m, kGemmTileShort) * padded(n, kGemmTileLong));
  const double compute = 2.0 * area * k / rate;
  // Operands in the matmul precision, output in bf16.
  const double traffic = ((m * k + k * n) * hw.matmul_bytes + m * n * 2.0) / hw.hbm_bps;
  return std::max(compute, traffic) + kGemmFixedS;
}

double UnalignedGemmTime(const Hardware& hw, double m, double n, double k) {
  return (GemmTime(hw, m, n, k) - kGemmFixedS) / kUnalignedGemmRate + kGemmFixedS;
}

double AttentionTime(const Hardware& hw, double batch, double seq_q, double seq_kv, double heads,
                     double qk_dim, double v_dim, bool backward) {
  // Causal: each query sees on average half of the keys when seq_q == seq_kv; with context
  // parallelism (seq_q < seq_kv) the load-balanced split keeps the same half. QK^T and PV take
  // the mean head width.
  const double head_dim = 0.5 * (qk_dim + v_dim);
  const double scores = batch * seq_q * seq_kv * heads * 0.5;
  const double flops = 4.0 * scores * head_dim * (backward ? kAttnBackwardRatio : 1.0);
  const double eff = hw.attn_eff * (seq_kv / (seq_kv + kAttnSeqKnee));
  const double head_eff =
      (head_dim / (head_dim + hw.attn_head_knee)) / (128.0 / (128.0 + hw.attn_head_knee));
  const double mma_s =
      flops / (hw.bf16_peak * hw.attn_mma_speedup * eff * head_eff * hw.clock_scale);
  // One exponential per score, forward, and one more backward, which recomputes the
  // probabilities. The special-function units that take them run beside the tensor cores
  // (FlashAttention-3's and -4's pipelines overlap softmax with the GEMMs), so the slower of the
  // two sets the time: the exponentials where the tensor cores outrun them, tensor_flops_per_exp
  // above the forward's 2 x (d_qk + d_v) FLOPs per score (divided by kFp8AttentionSpeedup for
  // fp8 attention), as with fp8 attention or heads of 64 on Blackwell.
  const double exp_s = hw.exp_per_s > 0 ? scores / (hw.exp_per_s * eff * hw.clock_scale) : 0.0;
  return std::max(mma_s, exp_s) + kGemmFixedS;
}

double MathAttentionTime(const Hardware& hw, double batch, double seq_q, double seq_kv,
                         double heads, double qk_dim, double v_dim, bool backward) {
  // Unfused attention: QK^T and PV as batched GEMMs over the full (unmasked) score matrix, and
  // the scaled, masked softmax through HBM: fp16 scores written and read, probabilities
  // written and read (8 B per score forward; the backward reads scores, probabilities and
  // their gradients, 12 B) when the softmax is one kernel (Megatron's FusedScaleMaskSoftmax, a
  // compiler's fusion). Written as PyTorch ops it is a chain (scale, mask, softmax, dropout,
  // each a pass over the scores: Megatron-LM's 2019 attention and its --no-masked-softmax-fusion
  // path), priced like eager PyTorch's other composite ops (composite_traffic_scale).
  // One batched GEMM per product over all batch x head pairs: QK^T reduces over the query-key
  // width, PV writes the value width.
  const double rows = batch * heads * seq_q;
  const double gemms = GemmTime(hw, rows, seq_kv, qk_dim) + GemmTime(hw, rows, v_dim, seq_kv);
  const double scores = rows * seq_kv;
  const double mem =
      MemTime(hw, scores * (backward ? 12.0 : 8.0) * hw.composite_traffic_scale, backward ? 2 : 1);
  return (backward ? 2.0 : 1.0) * gemms + mem;
}

double GroupedGemmTime(const Hardware& hw, double groups, double m, double n, double k) {
  if (groups <= 0 || m <= 0) return 0.0;
  return groups * (GemmTime(hw, m, n, k) - kGemmFixedS) + kGemmFixedS;
}

double MemTime(const Hardware& hw, double bytes, double kernels) {
  return std::max(bytes / hw.hbm_bps, kernels * hw.kernel_min_s);
}

double AllToAllTime(const Hardware& hw, const Group& g, double bytes, double network_share) {
  const int n = g.ranks;
  if (n <= 1 || bytes <= 0) return 0.0;
  const int r = std::min(g.ranks_per_domain, n);
  // Peers are all addressed at once (grouped send/recv), so one latency of the slower path.
  const double intra = bytes * (r - 1.0) / n / hw.nvlink_bps;
  const double inter = network_share * bytes * static_cast<double>(n - r) / n / hw.net_bps;
  return std::max(intra, inter) + (g.domains() > 1 ? hw.alpha_inter_s : kAlphaIntraS);
}

double RingTime(int n, double bytes, double bandwidth_bps, double alpha_s) {
  if (n <= 1 || bytes <= 0) return 0.0;
  return (n - 1) * (alpha_s + bytes / n / bandwidth_bps);
}

double CollectiveTime(const Hardware& hw, Collective c, const Group& g, double bytes) {
  if (bytes <= 0) return 0.0;
  if (c == Collective::kSendRecv) {
    const bool inter = g.ranks_per_domain < g.ranks;
    return inter ? hw.alpha_inter_s + bytes / hw.net_bps : kAlphaIntraS + bytes / hw.nvlink_bps;
  }
  const int n = g.ranks;
  if (n <= 1) return 0.0;
  const int domains = g.domains();
  const int r = std::min(g.ranks_per_domain, n);
  if (c == Collective::kAllToAll) return AllToAllTime(hw, g, bytes, 1.0);
  double bw, alpha;
  if (domains <= 1) {
    bw = hw.nvlink_bps;
    alpha = kAlphaIntraS;
  } else {
    // A ring enters and leaves each domain once; NCCL runs one ring per NIC, so the r GPUs of
    // a domain in this group carry the inter-node traffic in parallel.
    bw = std::min(hw.nvlink_bps, r * hw.net_bps);
    alpha = hw.alpha_inter_s;
  }
  const double ring = RingTime(n, bytes, bw, alpha);
  if (c != Collective::kAllReduce) return ring;
  const double ring_ar = 2.0 * ring;
  // NVLS: the domain's switches reduce the buffer (two switch round trips of latency).
  const bool nvls = hw.nvls_bps > 0 && r >= kNvlsMinRanks;
  const double nvls_intra = nvls ? bytes / hw.nvls_bps : 0.0;
  if (domains <= 1) return nvls ? std::min(ring_ar, 2 * kAlphaIntraS + nvls_intra) : ring_ar;
  // Tree (NCCL's choice at scale): bandwidth term as a ring's, latency logarithmic in the node
  // count plus the pipeline fill of one chunk per tree level, each way.
  const double depth = std::log2(static_cast<double>(domains));
  const double tree = 2.0 * (n - 1.0) / n * bytes / bw +
                      2.0 * (depth + (r - 1)) * hw.alpha_inter_s +
                      2.0 * depth * kTreeChunkBytes / hw.net_bps;
  double best = std::min(ring_ar, tree);
  if (nvls && hw.in_network_reduction) {
    // NVLS with InfiniBand SHARP (NCCL's multi-node NVLS): each GPU's 1/r shard of the domain's
    // sum goes up the switch tree once and the total comes back once, beside the NVLS phases in
    // the domain; the slower of the two sets the pace.
    const double inter = bytes / r / hw.net_bps;
    best = std::min(best, kSharpLatencyS + std::max(nvls_intra, inter));
  }
  return best;
}

}  // namespace scalecast
