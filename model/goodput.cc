#include "model/goodput.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "model/workload.h"

namespace scalecast {

const std::vector<InterruptionSource>& InterruptionSources() {
  // Derived in shared/data/reliability-at-scale.md from the quoted counts.
  static const std::vector<InterruptionSource> kSources = {
      {"Llama 3 405B, 16,384 H100, 54 days: 419 unexpected interruptions",
       kDefaultInterruptionsPer1000GpuDays, "arXiv 2407.21783 Sec 3.3.4, Table 5"},
      {"BLOOM-176B, 384 A100: 1-2 GPU failures a week", 0.55,
       "HF blog 'The Technology Behind BLOOM Training' (0.37-0.74)"},
      {"Meta RSC-1 research cluster: 6.5 failures per 1,000 node-days of 8 GPUs", 0.81,
       "Kokolis et al. arXiv 2410.21680"},
      {"MPT-7B, 440 A100, 9.5 days: 4 hardware failures", 0.96, "databricks.com/blog/mpt-7b"},
      {"OPT-175B, 992 A100, ~60 days: ~105 restarts", 1.8, "arXiv 2205.01068 Sec 2.5"},
  };
  return kSources;
}

double OptimalCheckpointInterval(double write_s, double mtbf_s) {
  return std::sqrt(2.0 * write_s * mtbf_s);
}

double CheckpointBytes(const ModelSpec& model) {
  return CountParams(Shape(model)).total * kCheckpointBytesPerParam;
}

Goodput ComputeGoodput(int num_gpus, double checkpoint_bytes, const ReliabilityOptions& o) {
  Goodput g;
  const double n = std::max(1, num_gpus);
  const double rate = o.interruptions_per_1000_gpu_days > 0 ? o.interruptions_per_1000_gpu_days
                                                            : kDefaultInterruptionsPer1000GpuDays;
  g.interruptions_per_day = rate / 1000.0 * n;
  g.mtbf_s = 86400.0 / g.interruptions_per_day;
  g.restart_s = o.restart_s > 0 ? o.restart_s : kDefaultRestartS;
  const double gbps =
      o.checkpoint_write_gbps > 0 ? o.checkpoint_write_gbps : kDefaultCheckpointGbpsPerGpu * n;
  g.checkpoint_bytes = checkpoint_bytes;
  g.checkpoint_write_s = checkpoint_bytes * 8.0 / (gbps * 1e9);
  g.checkpoint_interval_s = o.checkpoint_interval_s > 0
                                ? o.checkpoint_interval_s
                                : OptimalCheckpointInterval(g.checkpoint_write_s, g.mtbf_s);
  const double tau = g.checkpoint_interval_s;
  if (tau <= 0) {  // nothing to write: no checkpoint cost and no rework
    g.lost_restarts = std::min(1.0, g.restart_s / g.mtbf_s);
    g.goodput = 1.0 - g.lost_restarts;
    return g;
  }
  const double failure = (g.restart_s + tau / 2.0) / g.mtbf_s;
  if (failure >= 1.0) {  // interrupted faster than it can recover: no progress
    g.goodput = 0;
    g.lost_restarts = g.restart_s / (g.restart_s + tau / 2.0);
    g.lost_rework = 1.0 - g.lost_restarts;
    return g;
  }
  const double overhead = g.checkpoint_write_s / tau;
  g.goodput = (1.0 - failure) / (1.0 + overhead);
  g.lost_restarts = g.restart_s / g.mtbf_s;
  g.lost_rework = tau / 2.0 / g.mtbf_s;
  g.lost_checkpointing = (1.0 - failure) * overhead / (1.0 + overhead);
  return g;
}

std::vector<std::string> DescribeReliabilityDefaults(const ReliabilityOptions& o) {
  std::vector<std::string> out;
  if (o.interruptions_per_1000_gpu_days <= 0) {
    out.push_back(absl::StrFormat(
        "reliability.interruptions_per_1000_gpu_days: %.3f (Llama 3 405B: 419 unexpected "
        "interruptions in 54 days on 16,384 H100, arXiv 2407.21783; published runs range "
        "0.37-1.8)",
        kDefaultInterruptionsPer1000GpuDays));
  }
  if (o.restart_s <= 0) {
    out.push_back(absl::StrFormat(
        "reliability.restart_s: %.0f (MegaScale, arXiv 2402.15627: detection and diagnosis "
        "under 10 minutes)",
        kDefaultRestartS));
  }
  if (o.checkpoint_write_gbps <= 0) {
    out.push_back(absl::StrFormat(
        "reliability.checkpoint_write_gbps: %.3f Gbit/s per GPU x GPUs (Llama 3's storage, 2 "
        "TB/s sustained for 16,384 GPUs, arXiv 2407.21783); checkpoint = %g bytes per "
        "parameter (bf16 weights, fp32 master weights and Adam moments, as BLOOM's 2.3 TB)",
        kDefaultCheckpointGbpsPerGpu, kCheckpointBytesPerParam));
  }
  if (o.checkpoint_interval_s <= 0) {
    out.push_back(
        "reliability.checkpoint_interval_s: Young/Daly optimum sqrt(2 x write time x MTBF)");
  }
  return out;
}

}  // namespace scalecast
