#include "model/hardware.h"

#include <algorithm>
#include <cmath>

namespace scalecast {
namespace {

// Dynamic power falls with the square of the clock over the DVFS range the cap uses (P ~ f V^2
// with V partly tracking f); an assumption, stated.
constexpr double kPowerClockExponent = 2.0;

}  // namespace

int DomainSize(const Accelerator& acc, int gpus_per_node) {
  const int gpn = gpus_per_node > 0 ? gpus_per_node : acc.gpus_per_node;
  return std::max(1, std::min(gpn, acc.nvlink_domain));
}

double ClockScale(const Accelerator& acc) {
  const double demand = acc.idle_w + kComputeActivity * (acc.tdp_w - acc.idle_w);
  if (acc.power_limit_w >= demand || acc.power_limit_w <= acc.idle_w) return 1.0;
  return std::pow((acc.power_limit_w - acc.idle_w) / (demand - acc.idle_w),
                  1.0 / kPowerClockExponent);
}

Hardware MakeHardware(const Accelerator& acc, const AcceleratorParams& ap,
                      const FrameworkParams& fp, Precision precision, int gpus_per_node,
                      double net_gbps_override) {
  Hardware hw;
  hw.acc = &acc;
  hw.bf16_peak = acc.PeakFlops(Precision::kBf16);
  if (hw.bf16_peak <= 0) hw.bf16_peak = acc.PeakFlops(Precision::kFp16);
  const bool low_precision = precision == Precision::kFp8 || precision == Precision::kMxfp8 ||
                             precision == Precision::kNvfp4;
  hw.matmul_peak =
      acc.PeakFlops(precision == Precision::kUnspecified ? Precision::kBf16 : precision);
  if (hw.matmul_peak <= 0) hw.matmul_peak = hw.bf16_peak;
  hw.gemm_eff = ap.gemm_eff * (low_precision ? ap.fp8_gemm_ratio : 1.0);
  hw.matmul_bytes = precision == Precision::kNvfp4 ? 1 : (low_precision ? 1 : 2);
  hw.attn_eff = ap.attn_eff;
  hw.hbm_bps = acc.hbm_tbps * 1e12 * ap.hbm_eff;
  hw.compute_eff = fp.compute_eff;
  hw.clock_scale = ClockScale(acc);
  hw.knee = kGemmKneePerSm * std::max(acc.sms, 1);
  hw.domain = DomainSize(acc, gpus_per_node);
  hw.nvlink_bps = acc.nvlink_gbps * 1e9 * kNvlinkEff;
  const double net_gbps = net_gbps_override > 0 ? net_gbps_override : acc.net_gbps;
  hw.net_bps = net_gbps / 8.0 * 1e9 * kNetEff;
  return hw;
}

double GemmTime(const Hardware& hw, double m, double n, double k) {
  const double shape = (m / (m + hw.knee)) * (n / (n + hw.knee)) * (k / (k + hw.knee));
  const double rate = hw.matmul_peak * hw.gemm_eff * shape * hw.compute_eff * hw.clock_scale;
  const double compute = 2.0 * m * n * k / rate;
  // Operands in the matmul precision, output in bf16.
  const double traffic = ((m * k + k * n) * hw.matmul_bytes + m * n * 2.0) / hw.hbm_bps;
  return std::max(compute, traffic) + kGemmFixedS;
}

double AttentionTime(const Hardware& hw, double batch, double seq_q, double seq_kv, double heads,
                     double head_dim, bool backward) {
  // Causal: each query sees on average half of the keys when seq_q == seq_kv; with context
  // parallelism (seq_q < seq_kv) the load-balanced split keeps the same half.
  const double fwd_flops = 4.0 * batch * seq_q * seq_kv * head_dim * heads * 0.5;
  const double flops = fwd_flops * (backward ? kAttnBackwardRatio : 1.0);
  const double eff = hw.attn_eff * (seq_kv / (seq_kv + kAttnSeqKnee)) *
                     (head_dim / (head_dim + kAttnHeadDimKnee)) /
                     (128.0 / (128.0 + kAttnHeadDimKnee));
  return flops / (hw.bf16_peak * eff * hw.compute_eff * hw.clock_scale) + kGemmFixedS;
}

double MemTime(const Hardware& hw, double bytes, double kernels) {
  return std::max(bytes / (hw.hbm_bps * hw.compute_eff), kernels * kMemKernelMinS);
}

double RingTime(int n, double bytes, double bandwidth_bps, double alpha_s) {
  if (n <= 1 || bytes <= 0) return 0.0;
  return (n - 1) * (alpha_s + bytes / n / bandwidth_bps);
}

double CollectiveTime(const Hardware& hw, Collective c, const Group& g, double bytes) {
  if (bytes <= 0) return 0.0;
  if (c == Collective::kSendRecv) {
    const bool inter = g.ranks_per_domain < g.ranks;
    return inter ? kAlphaInterS + bytes / hw.net_bps : kAlphaIntraS + bytes / hw.nvlink_bps;
  }
  const int n = g.ranks;
  if (n <= 1) return 0.0;
  const int domains = g.domains();
  const int r = std::min(g.ranks_per_domain, n);
  double bw, alpha;
  if (domains <= 1) {
    bw = hw.nvlink_bps;
    alpha = kAlphaIntraS;
  } else {
    // A ring enters and leaves each domain once; NCCL runs one ring per NIC, so the r GPUs of
    // a domain in this group carry the inter-node traffic in parallel.
    bw = std::min(hw.nvlink_bps, r * hw.net_bps);
    alpha = kAlphaInterS;
  }
  const double ring = RingTime(n, bytes, bw, alpha);
  if (c != Collective::kAllReduce) return ring;
  const double ring_ar = 2.0 * ring;
  if (domains <= 1) return ring_ar;
  // Tree (NCCL's choice at scale): bandwidth term as a ring's, latency logarithmic in the node
  // count plus the pipeline fill of one chunk per tree level, each way.
  const double depth = std::log2(static_cast<double>(domains));
  const double tree = 2.0 * (n - 1.0) / n * bytes / bw + 2.0 * (depth + (r - 1)) * kAlphaInterS +
                      2.0 * depth * kTreeChunkBytes / hw.net_bps;
  return std::min(ring_ar, tree);
}

}  // namespace scalecast
