// A calibration profile: the few efficiency parameters the physics cannot know, each documented
// here, per accelerator family, per framework family and global. The built-in default profile is
// model/data/default_profile.txt, fitted to shared/data/calibration.csv by scalecast-validate --fit
// and compiled in. No per-row or per-model parameters exist.
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

// Per framework family ("pytorch-fsdp", "megatron", "deepspeed", "jax", "generic").
struct FrameworkParams {
  // Multiplier on every kernel's throughput: kernel fusion, torch.compile, host/launch overhead.
  double compute_eff = 1.0;
  // Fraction of the compute window beside it that overlappable communication can use.
  double overlap_eff = 0.9;
};

struct GlobalParams {
  // Slowdown of compute while a communication kernel runs beside it (shared SMs and HBM):
  // overlapped compute takes (1 + comm_slowdown) as long.
  double comm_slowdown = 0.15;
};

struct Profile {
  std::string name = "default";
  std::string description;
  std::map<std::string, AcceleratorParams, std::less<>> accelerators;  // by family
  std::map<std::string, FrameworkParams, std::less<>> frameworks;      // by framework family
  GlobalParams global;
  // What the profile was fitted on and how well (filled by the fitter; informational).
  std::map<std::string, std::string, std::less<>> info;

  const AcceleratorParams& ForAccelerator(absl::string_view family) const;
  const FrameworkParams& ForFramework(absl::string_view framework_family) const;

  // "key = value" lines: accel.<family>.<param>, framework.<family>.<param>, global.<param>,
  // info.<key>, name, description.
  std::string ToText() const;
  static absl::StatusOr<Profile> FromText(absl::string_view text);

  // The built-in default, fitted to the calibration set (model/data/default_profile.txt).
  static const Profile& BuiltinDefault();
};

// The framework family a framework name belongs to; unknown names map to "generic".
absl::string_view FrameworkFamily(absl::string_view framework);
// The framework names the service knows (for validation of requests).
const std::vector<std::string>& KnownFrameworks();

// What a training framework can run, from its documentation: the planner only proposes layouts
// the framework supports (fields a request fixes are taken as given). "" (generic) supports all.
struct FrameworkCapabilities {
  bool tensor_parallel = true;
  bool pipeline_parallel = true;
  bool interleaved_pipeline = true;
  bool context_parallel = true;
  std::vector<Sharding> shardings = {Sharding::kDdp, Sharding::kZero1, Sharding::kZero2,
                                     Sharding::kFsdp, Sharding::kHsdp};
  // Shardings that combine with pipeline parallelism (DeepSpeed pipelines take ZeRO-1 at most).
  std::vector<Sharding> pipeline_shardings = shardings;
};
const FrameworkCapabilities& CapabilitiesOf(absl::string_view framework);

// Flat view of the fitted parameters, for the least-squares fitter.
struct ParamRef {
  std::string key;  // as in ToText
  double* value;
  double lo, hi;  // bounds
  double prior;   // the value the fitter is pulled back to when the data says nothing
};
std::vector<ParamRef> FittableParams(Profile* p, const std::vector<std::string>& families,
                                     const std::vector<std::string>& framework_families);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_PROFILE_H_
