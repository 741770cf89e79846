// A calibration profile: the few efficiency parameters the physics cannot know, each documented
// here: the hardware's per accelerator family (pooled by generation), the software features'
// (shared by every stack that has the feature), and global ones; plus the uncertainty band. The
// built-in default profile is model/data/default_profile.txt, fitted to both shared calibration
// sets by scripts/refit.sh and compiled in. No per-row, per-model or per-source parameters exist.
#ifndef SCALECAST_MODEL_PROFILE_H_
#define SCALECAST_MODEL_PROFILE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

// Per accelerator family ("a100", "h100", ...).
struct AcceleratorParams {
  // Fraction of dense bf16/fp16 peak that a large, well-shaped GEMM reaches (all dims >> the
  // shape knee). Priors from the MAMF maxima (shared/data/microbench.md): A100 0.87, H100 0.80,
  // divided by the shape factor at the MAMF shapes.
  double gemm_eff = 0.88;
  // Fraction of fp8 peak reached by an fp8 GEMM, relative to gemm_eff (MAMF fp8 on H100: 70.9 % of
  // 1979 vs 80.3 % bf16, ratio 0.88).
  double fp8_gemm_ratio = 0.88;
  // Fraction of bf16 peak that causal flash attention (forward + backward) reaches at long
  // sequences and head dim 128 (FA2 on A100: 189/312 = 0.61 at 16k; FA2 on H100: 328/989 = 0.33).
  double attn_eff = 0.5;
  // Fraction of HBM bandwidth that memory-bound kernels (norms, activations, casts, optimizer)
  // reach (STREAM-like copies reach 80-90 %; fused elementwise chains less).
  double hbm_eff = 0.75;
};

// What a software stack's named features cost or save, shared by every framework that has the
// feature (model/framework.h says which stack has which). Fitted; each with its prior.
struct StackParams {
  // Fraction of the compute window beside it that overlapped communication can use (DP reduce
  // and gather issued beside compute, TP collectives split into GEMM chunks, CP exchange).
  double overlap_eff = 0.9;
  // Memory-bound traffic of an eager stack (no hand-fused kernels, no compiler) relative to a
  // fused one: unfused RMSNorm, RoPE, SwiGLU and loss each round-trip through HBM several times
  // (an RMSNorm in eager PyTorch is ~5 elementwise kernels with an fp32 upcast; TE fuses it into
  // one). Prior 2.5.
  double eager_traffic = 2.5;
  // Memory-bound traffic of a torch.compile'd stack relative to a hand-fused one: Inductor fuses
  // elementwise chains but not across GEMM epilogues. Prior 1.2.
  double compiled_traffic = 1.2;
};

// Mixture-of-experts layers (Megatron-Core's MoE layer with the all-to-all token dispatcher and
// grouped GEMMs). Fitted on shared/data/moe.csv; a dense run does not see them.
struct MoeParams {
  // Rate of the experts' grouped GEMM relative to one dense GEMM of each group's shape: the
  // groups' uneven tiles and the kernel's per-group setup (cuBLASLt / CUTLASS grouped GEMM).
  // Prior 0.85, an estimate.
  double grouped_gemm_ratio = 0.85;
  // Achieved dispatch/combine all-to-all bandwidth relative to the ring collectives' plateau the
  // hardware model uses: nccl-tests alltoall of 1 GiB on 8 H100 reaches 332 GB/s busbw where a
  // ring plateaus at 360 (shared/data/collectives.csv row 89): prior 0.92.
  double a2a_eff = 0.92;
  // Host time per MoE layer and micro-batch (forward and backward together) that the GPU waits
  // on: the dispatcher's device-to-host copy of the tokens per expert synchronises the stream
  // and drains the kernel launch queue, then its ~30 small permute/sort/router kernels are
  // launched from empty. Prior 1 ms, an estimate (eager PyTorch launches ~5 us a kernel).
  double layer_overhead_s = 1e-3;
};

struct GlobalParams {
  // Slowdown of compute while a communication kernel runs beside it (shared SMs and HBM):
  // overlapped compute takes (1 + comm_slowdown) as long.
  double comm_slowdown = 0.15;
};

// The 80 % band of a prediction and what the profile was fitted on (to widen the band where a
// scenario lies outside it). Filled by the fitter from cross-validated residuals.
struct BandParams {
  // 10th and 90th percentiles of measured / predicted tokens/s over held-out runs, after
  // dividing each run's log residual by its widening factor (so the band covers 80 % of held-out
  // runs including the widened ones).
  double low_ratio = 0.85;
  double high_ratio = 1.15;
  int max_gpus = 0;  // largest GPU count fitted on; 0 = unknown
  // Runs fitted on per "framework-family/generation" ("megatron/hopper" -> 85).
  std::map<std::string, int, std::less<>> seen;
};

struct Profile {
  std::string name = "default";
  std::string description;
  // By accelerator family ("h100") or generation ("hopper"): a family without its own entry
  // takes its generation's (partial pooling), then the documented priors.
  std::map<std::string, AcceleratorParams, std::less<>> accelerators;
  StackParams stack;
  MoeParams moe;
  GlobalParams global;
  BandParams band;
  // What the profile was fitted on and how well (filled by the fitter; informational).
  std::map<std::string, std::string, std::less<>> info;

  // The family's own entry, else its generation's, else the generation's priors.
  const AcceleratorParams& ForAccelerator(absl::string_view family) const;

  // "key = value" lines: accel.<family or generation>.<param>, stack.<param>, global.<param>,
  // info.<key>, name, description.
  std::string ToText() const;
  static absl::StatusOr<Profile> FromText(absl::string_view text);

  // The built-in default, fitted to the calibration set (model/data/default_profile.txt).
  static const Profile& BuiltinDefault();
};

// The hardware generation of an accelerator family ("h100" -> "hopper"): the pool a family
// without data of its own borrows from.
absl::string_view GenerationOf(absl::string_view family);
// The documented priors of a family (its generation's).
AcceleratorParams PriorFor(absl::string_view family);

// Flat view of the fitted parameters, for the least-squares fitter.
struct ParamRef {
  std::string key;  // as in ToText
  double* value;
  double lo, hi;  // bounds
  double prior;   // the value the fitter is pulled back to when the data says nothing
};
// The parameters a fit moves: global and stack parameters, and for each family in `families`
// its own efficiencies, pulled toward its generation's pooled value.
std::vector<ParamRef> FittableParams(Profile* p, const std::vector<std::string>& families);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_PROFILE_H_
