#include "model/records.h"

namespace scalecast {

const std::vector<MfuRecord>& MfuRecords() {
  // The measured MFU of each record is recomputed with the model's own FLOP count from the run's
  // published throughput (scalecast-validate --mfu-records over the calibration sets and data/),
  // except where a source states a figure the sets do not hold.
  static const auto* const kRecords = new std::vector<MfuRecord>{
      {"ampere", "16-bit", 0.72, "GPT-style models without activation checkpointing on A100",
       "Dao-AILab/flash-attention README, 'Full model code and training script': up to 225 "
       "TFLOPs/sec per A100, 72 % model FLOPs utilization (shared/data/gemm.csv row 224)"},
      {"hopper", "16-bit", 0.560, "Llama 3.1 405B bf16 on 32 H100",
       "NVIDIA dgxc-benchmarking H100 scaling tables (shared/data/calibration-stacks.csv)"},
      {"hopper", "fp8", 0.955, "GPT-3 175B fp8 on 256 H100",
       "MLPerf Training v4.1 closed division, NVIDIA eos_n32_ngc24.09_nemo "
       "(mlcommons/training_results_v4.1 @b87b9e3; data/mlperf-gpt3.csv id 5718)"},
      {"volta", "16-bit", 0.325, "GPT-3 13B fp16 on 128 V100 (DGX-2)",
       "microsoft/Megatron-DeepSpeed examples_deepspeed/rebase/README.md @b080750 "
       "(data/colossalai-paddlenlp-deepspeed.csv id 7631)"},
      {"cdna2", "16-bit", 0.345, "OLMo 1.2B bf16 on 8 MI250X (LUMI)",
       "allenai/OLMo LOG.md, entry of 2023-04-12 @2d3a219 (data/olmo-core-nanotron.csv id 7540)"},
      {"cdna4", "fp8", 0.642, "Llama 3.1 8B fp8 on 8 MI355X",
       "MLPerf Training v5.1 closed division, AMD MI355X_EPYC_9575F_pytorch "
       "(mlcommons/training_results_v5.1 @441d65f; data/mlperf-llama8b-v5.1-amd.csv id 6102)"},
      {"cdna4", "fp4", 0.768, "Llama 3.1 8B mxfp4 on 8 MI355X",
       "MLPerf Training v6.0 closed division, AMD MI355X_EPYC_9575F_primus "
       "(mlcommons/training_results_v6.0 as stored in the fork Richardyu114/training_results_v6.0 "
       "@eabf23a; data/mlperf-llama8b-v6.0-amd.csv id 6202)"},
      {"tpu-v4", "16-bit", 0.593, "MaxText 52B bf16 on 2 x 192 TPU v4 chips",
       "AI-Hypercomputer/maxtext README.md 'Runtime Performance Results' @e286533 "
       "(data/maxtext-tpu.csv id 7706)"},
      {"tpu-v5e", "16-bit", 0.660, "MaxText 32B bf16 on 256 TPU v5e chips",
       "AI-Hypercomputer/maxtext README.md 'Runtime Performance Results' @e47fa1b "
       "(data/maxtext-tpu.csv id 7721)"},
      {"tpu-v5p", "16-bit", 0.715, "MaxText 32B bf16 on 64 TPU v5p chips",
       "AI-Hypercomputer/maxtext README.md 'Runtime Performance Results' @04262f3 "
       "(data/maxtext-tpu.csv id 7707)"},
      {"blackwell", "16-bit", 0.467, "Grok-1 314B bf16 on 512 GB200",
       "NVIDIA dgxc-benchmarking Grok-1 pretrain recipe (shared/data/moe.csv)"},
      {"blackwell", "fp8", 1.058, "Llama 3.1 405B fp8 on 256 GB300",
       "NVIDIA Megatron-Bridge performance summary, 26.06 container (data/nemo-releases.csv)"},
      {"blackwell", "fp4", 1.502, "Llama 3.1 405B nvfp4 on 512 GB300",
       "MLPerf Training v6.0, NVIDIA theia-cmh_ngpu512_ngc26.04_nemo "
       "(data/mlperf-llama405b-v6.0.csv)"},
  };
  return *kRecords;
}

absl::string_view PrecisionClass(Precision p) {
  switch (p) {
    case Precision::kFp8:
    case Precision::kMxfp8:
      return "fp8";
    case Precision::kUnspecified:
    case Precision::kBf16:
    case Precision::kFp16:
      return "16-bit";
    default:
      return "fp4";  // nvfp4 and the other 4-bit formats
  }
}

const MfuRecord* FindMfuRecord(absl::string_view generation, Precision p) {
  const absl::string_view cls = PrecisionClass(p);
  for (const MfuRecord& r : MfuRecords()) {
    if (r.generation == generation && r.precision == cls) return &r;
  }
  return nullptr;
}

}  // namespace scalecast
