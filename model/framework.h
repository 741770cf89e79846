// The framework table: one home for what each training framework is (family, versions), what it
// can run (capabilities), how it behaves (defaults and scheduling choices), and which software
// features of its stack are on by default. The physics reads a resolved `Stack` and
// `FrameworkBehaviour`, never a framework name.
#ifndef SCALECAST_MODEL_FRAMEWORK_H_
#define SCALECAST_MODEL_FRAMEWORK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

// What a framework can run, from its documentation: the planner only proposes layouts the
// framework supports; a fixed layout it does not offer is refused with the reason.
struct FrameworkCapabilities {
  bool tensor_parallel = true;
  bool pipeline_parallel = true;
  bool interleaved_pipeline = true;
  bool uneven_pipeline_split = true;  // first/last stage sizes, embedding/loss in the split
  // Chunks of unequal size when the layers (with embedding and loss) do not divide evenly.
  bool flexible_pipeline_layout = false;
  bool context_parallel = true;
  // Mixture-of-experts: experts split over ranks (EP), and each expert's GEMMs split over ranks
  // of their own (ETP, Megatron-Core's expert_tensor_parallel_size; torchtitan's etp).
  bool expert_parallel = true;
  bool expert_tensor_parallel = true;
  // Selective recompute by named module (Megatron-Core's --recompute-modules).
  bool recompute_modules = false;
  std::vector<Sharding> shardings = {Sharding::kDdp, Sharding::kZero1, Sharding::kZero2,
                                     Sharding::kFsdp, Sharding::kHsdp};
  // Shardings that combine with pipeline parallelism (DeepSpeed pipelines take ZeRO-1 at most).
  std::vector<Sharding> pipeline_shardings = shardings;
};

// What "selective" activation recomputation means in a framework.
enum class SelectivePolicy {
  // Megatron-LM (Korthikanti et al. 2022): recompute the attention core and the elementwise
  // work, keep every GEMM's output.
  kAttentionCore,
  // torchtitan's per-op SAC: keep SDPA's inputs and outputs and every second matmul's output,
  // recompute the rest (its _save_list policy): of the GEMM outputs, q/k/v and the attention
  // output stay, half of the MLP's go.
  kEveryOtherMatmul,
  // fms-fsdp's selective checkpointing: fully recompute a fraction of the blocks (p = 0.5 by
  // default), keep the others whole.
  kHalfTheLayers,
};

// Scheduling choices that change the step's cost terms.
struct FrameworkBehaviour {
  SelectivePolicy selective = SelectivePolicy::kAttentionCore;
  Sharding default_sharding = Sharding::kUnspecified;  // what a blank sharding means in a run
  bool sequence_parallel_with_tp = false;              // SP switched on whenever tp > 1
  // With pipelining, FSDP keeps a stage gathered from forward to backward and reduces its
  // gradients once per step (torchtitan + torch.distributed.pipelining); otherwise it reshards
  // and reduces every micro-batch.
  bool fsdp_stage_gathered_across_microbatches = false;
  // A pipeline runs as many micro-batches as it has stages unless told otherwise (torchtitan's
  // pipeline_parallel_microbatches defaults to the pipeline degree): what a blank micro batch
  // means in a run with pp > 1.
  bool microbatches_equal_stages = false;
  // Biased experts: the second expert GEMM returns its bias, and the bias is added per expert
  // chunk, weighted by the router probabilities, outside the grouped GEMM (Megatron-Core's
  // TEGroupedMLP._apply_bias: split, t + b * p, cat, cast). Otherwise the GEMM's epilogue adds
  // it for free.
  bool expert_bias_outside_gemm = false;
};

// One version of a framework's stack defaults.
struct FrameworkVersion {
  std::string version;  // as the framework numbers its releases, compared as dotted numbers
  Stack defaults;       // version filled
};

struct Framework {
  std::string name;    // "nemo", "torchtitan", ...; "" = generic
  std::string family;  // "megatron", "pytorch-fsdp", "deepspeed", "jax", "generic"
  std::string description;
  FrameworkCapabilities capabilities;
  FrameworkBehaviour behaviour;
  std::vector<FrameworkVersion> versions;  // oldest first; the last is the default
};

// Every framework the service knows, in table order ("" = generic first).
const std::vector<Framework>& Frameworks();
// The framework of that name (case-insensitive), or nullptr.
const Framework* FindFramework(absl::string_view name);
// The generic framework (name ""), for unknown names in internal callers.
const Framework& GenericFramework();
// "megatron, nemo, ..." for error messages.
std::string FrameworkNames();

// Resolves a scenario's stack: the framework's defaults for the requested version (the newest
// version not after it; the newest when none is given), then the request's overrides, then the
// fp8 recipe implied by the precision (mxfp8 and nvfp4 are their own recipes; fp8 with no recipe
// takes the version's default, delayed when it has none). Errors name the field
// under `path` ("scenario.stack.fp8_recipe: mxfp8 needs precision mxfp8").
absl::StatusOr<Stack> ResolveStack(const Framework& framework, const StackOptions& options,
                                   Precision precision, absl::string_view path = "scenario.stack");

}  // namespace scalecast

#endif  // SCALECAST_MODEL_FRAMEWORK_H_
