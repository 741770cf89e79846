// Goodput: the share of a training job's wall clock spent on steps that count, once interruptions
// (failures and the restarts after them) and checkpoints are paid for. Pure arithmetic on public
// failure data (shared/data/reliability-at-scale.md); no hardware model here.
//
// The law (Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
// Clusters", arXiv 2410.21680, their closed form for the expected effective training time ratio):
//
//   goodput = (1 - (restart + interval / 2) / mtbf) / (1 + write / interval)
//
// with mtbf = 1 / (N * rate) for N GPUs interrupted at `rate` per GPU-second: each interruption
// costs the restart plus the work since the last checkpoint (half an interval on average), and
// every interval pays one checkpoint write. The interval that minimises the loss is Young's
// (J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 1974;
// J. T. Daly, FGCS 2006): sqrt(2 * write * mtbf).
#ifndef SCALECAST_MODEL_GOODPUT_H_
#define SCALECAST_MODEL_GOODPUT_H_

#include <string>
#include <vector>

#include "model/types.h"

namespace scalecast {

// Published interruption rates, per 1,000 GPU-days (reliability-at-scale.md, each derived there
// from the quoted counts).
struct InterruptionSource {
  const char* run;
  double per_1000_gpu_days;
  const char* source;
};
const std::vector<InterruptionSource>& InterruptionSources();

// The default rate: Llama 3 405B's 419 unexpected interruptions in a 54-day snapshot on up to
// 16,384 H100 (arXiv 2407.21783 Sec 3.3.4, Table 5): 419 / (54 * 16,384) * 1,000 = 0.474 per 1,000
// GPU-days, the largest and best documented run (the others: 0.37-1.8, InterruptionSources()).
inline constexpr double kDefaultInterruptionsPer1000GpuDays = 419.0 / (54.0 * 16384.0) * 1000.0;
// Restart: ByteDance MegaScale (arXiv 2402.15627 Sec 6.3): "The average time required for
// detecting failure and executing diagnostic tests is less than 10 minutes".
inline constexpr double kDefaultRestartS = 600;
// Checkpoint storage: Llama 3's Tectonic fabric "supports a sustainable throughput of 2 TB/s" for
// up to 16,384 GPUs (arXiv 2407.21783 Sec 3.3.1): 2e12 * 8 / 16,384 = 0.977 Gbit/s per GPU, scaled
// with the cluster unless the caller gives an aggregate bandwidth.
inline constexpr double kDefaultCheckpointGbpsPerGpu = 2e12 * 8 / 1e9 / 16384.0;
// Checkpoint bytes per parameter: bf16 weights (2) + fp32 master weights (4) + Adam's two fp32
// moments (8). BLOOM-176B: "each checkpoint with fp32 optim states and bf16+fp32 weights is
// 2.3TB" (HF blog "The Technology Behind BLOOM Training"): 176e9 * 14 B = 2.46e12 B = 2.24 TiB.
inline constexpr double kCheckpointBytesPerParam = 14;

// What the caller may set; 0 = the default above.
struct ReliabilityOptions {
  double interruptions_per_1000_gpu_days = 0;
  double restart_s = 0;
  double checkpoint_write_gbps = 0;  // aggregate Gbit/s to storage; 0 = per-GPU default x GPUs
  double checkpoint_interval_s = 0;  // 0 = Young/Daly optimal
};

struct Goodput {
  double mtbf_s = 0;  // mean time between interruptions of the whole job
  double interruptions_per_day = 0;
  double checkpoint_bytes = 0;
  double checkpoint_write_s = 0;
  double checkpoint_interval_s = 0;  // the one used (optimal or given)
  double restart_s = 0;
  double goodput = 0;  // useful time / wall clock, in [0, 1]
  // The parts lost, as shares of wall clock: checkpoint writes, restarts, recomputed work.
  double lost_checkpointing = 0, lost_restarts = 0, lost_rework = 0;
};

// Young/Daly: sqrt(2 * write_s * mtbf_s).
double OptimalCheckpointInterval(double write_s, double mtbf_s);

// Goodput of a job on `num_gpus` whose state is `checkpoint_bytes`. Defaults fill unset options.
Goodput ComputeGoodput(int num_gpus, double checkpoint_bytes, const ReliabilityOptions& options);

// Checkpoint bytes of a model: its parameters (CountParams) x kCheckpointBytesPerParam.
double CheckpointBytes(const ModelSpec& resolved_model);

// The defaults a plan used, in words (each with its source), for the response's warnings.
std::vector<std::string> DescribeReliabilityDefaults(const ReliabilityOptions& options);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_GOODPUT_H_
