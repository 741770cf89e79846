#include "model/framework.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace scalecast {
namespace {

using S = Sharding;
using A = AttentionKernel;
using R = Fp8Recipe;

// Dotted version numbers compared numerically ("24.09" < "24.11" < "25.11"); a part that is not
// a number compares as 0.
std::vector<int> VersionParts(absl::string_view v) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(v, '.')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n)) n = 0;
    out.push_back(n);
  }
  return out;
}

Stack With(Stack s, absl::string_view version) {
  s.version = std::string(version);
  return s;
}

// What every Megatron-Core based framework can run and how it behaves: TP with SP, interleaved
// and uneven PP, CP; DDP, the distributed optimizer (ZeRO-1) or Megatron-FSDP (not with PP).
Framework MegatronCore(const char* name, const char* description) {
  Framework f;
  f.name = name;
  f.family = "megatron";
  f.description = description;
  f.capabilities.shardings = {S::kDdp, S::kZero1, S::kFsdp};
  f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
  f.behaviour.default_sharding = S::kZero1;
  f.behaviour.sequence_parallel_with_tp = true;
  // --pipeline-model-parallel-layout (Megatron-Core 0.13, 2025/07): any count of layers per
  // chunk, so 61 layers run on 16 or 8 chunks (DeepSeek-V3 recipes' "Et|(tt|)*30mL").
  f.capabilities.flexible_pipeline_layout = true;
  f.capabilities.recompute_modules = true;
  f.behaviour.expert_bias_outside_gemm = true;
  return f;
}

// The table. Defaults are each framework's documented out-of-the-box settings for LLM
// pre-training, as of the version named; a run that changed one says so in its stack.
std::vector<Framework>* BuildTable() {
  auto* t = new std::vector<Framework>;

  // Generic: a PyTorch-style stack with flash attention and overlapped data parallelism, no
  // hand-fused kernels. Used when a request names no framework.
  {
    Framework f;
    f.name = "";
    f.family = "generic";
    f.description = "no framework named: eager PyTorch-style stack, flash attention 2";
    f.behaviour.sequence_parallel_with_tp = true;
    Stack s;
    f.versions = {{"", s}};
    t->push_back(f);
  }
  // Megatron-LM / Megatron-Core. 22.05: the Megatron-LM of Korthikanti et al. 2022 (arXiv
  // 2205.05198): fused softmax/bias-GeLU/layernorm kernels, unfused (math) attention, gradient
  // all-reduce after backward. 24.09: Megatron-Core with Transformer Engine (fused kernels,
  // cuDNN fused attention), --overlap-grad-reduce / --overlap-param-gather; TP communication
  // overlap (--tp-comm-overlap) is opt-in.
  {
    Framework f = MegatronCore(
        "megatron",
        "Megatron-LM / Megatron-Core: TP+SP, interleaved PP, CP, distributed optimizer");
    Stack old;
    old.fused_kernels = true;
    old.attention = A::kMath;
    old.dp_overlap = false;
    Stack core;
    core.fused_kernels = true;
    core.attention = A::kCudnn;
    core.fp8_recipe = R::kDelayed;
    f.versions = {{"22.05", With(old, "22.05")}, {"24.09", With(core, "24.09")}};
    t->push_back(f);
  }
  // NeMo on Megatron-Core (dgxc-benchmarking 24.09/24.11 recipes, Megatron-Bridge 25.11): the
  // performance recipes turn on TP communication overlap (userbuffers), grad-reduce and
  // param-gather overlap; Transformer Engine with cuDNN fused attention; fp8 delayed scaling in
  // 24.x, current (tensorwise) scaling by default in Megatron-Bridge.
  {
    Framework f = MegatronCore(
        "nemo", "NVIDIA NeMo / Megatron-Bridge on Megatron-Core with Transformer Engine");
    Stack s;
    s.fused_kernels = true;
    s.attention = A::kCudnn;
    s.tp_comm_overlap = true;
    s.fp8_recipe = R::kDelayed;
    Stack bridge = s;
    bridge.fp8_recipe = R::kTensorwise;
    f.versions = {
        {"24.09", With(s, "24.09")}, {"24.11", With(s, "24.11")}, {"25.11", With(bridge, "25.11")}};
    t->push_back(f);
  }
  // Megatron-DeepSpeed: Megatron's TP/PP with DeepSpeed ZeRO (ZeRO-2/3 without PP), fused
  // Megatron kernels, flash attention 2 (--use-flash-attn-v2).
  {
    Framework f;
    f.name = "megatron-deepspeed";
    f.family = "megatron";
    f.description = "Megatron-DeepSpeed: Megatron TP/PP with DeepSpeed ZeRO";
    f.capabilities.context_parallel = false;
    f.capabilities.uneven_pipeline_split = false;
    // DeepSpeed-MoE's expert parallelism; no expert tensor parallelism.
    f.capabilities.expert_tensor_parallel = false;
    f.capabilities.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
    f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
    f.behaviour.default_sharding = S::kZero1;
    f.behaviour.sequence_parallel_with_tp = true;
    Stack s;
    s.fused_kernels = true;
    s.fp8_recipe = R::kDelayed;
    f.versions = {{"2023.10", With(s, "2023.10")}};
    t->push_back(f);
  }
  // torchtitan: FSDP2 (or HSDP/DDP) with TP+SP, PP (interleaved schedules) and CP; SDPA
  // (flash-attention-2 backend); torch.compile and async TP are opt-in (compile=false,
  // enable_async_tensor_parallel=false in its train configs); float8 via torchao, dynamic
  // tensorwise scaling by default. With PP, FSDP2 keeps a stage gathered across micro-batches.
  {
    Framework f;
    f.name = "torchtitan";
    f.family = "pytorch-fsdp";
    f.description = "torchtitan: FSDP2 + TP/SP + PP + CP, torch.compile and float8 opt-in";
    f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
    f.behaviour.default_sharding = S::kFsdp;
    f.behaviour.sequence_parallel_with_tp = true;
    f.behaviour.fsdp_stage_gathered_across_microbatches = true;
    f.behaviour.microbatches_equal_stages = true;
    f.behaviour.selective = SelectivePolicy::kEveryOtherMatmul;
    Stack s;
    s.fp8_recipe = R::kTensorwise;
    f.versions = {{"2024.04", With(s, "2024.04")}, {"2025.06", With(s, "2025.06")}};
    t->push_back(f);
  }
  // MosaicML llm-foundry / Composer: PyTorch FSDP (FULL_SHARD default), flash-attention 2
  // (attn_impl: flash), eager mode; fp8 through Transformer Engine (delayed scaling).
  {
    Framework f;
    f.name = "composer-fsdp";
    f.family = "pytorch-fsdp";
    f.description = "MosaicML llm-foundry / Composer: PyTorch FSDP, flash-attention 2, eager";
    f.capabilities.tensor_parallel = f.capabilities.pipeline_parallel = false;
    f.capabilities.interleaved_pipeline = f.capabilities.context_parallel = false;
    f.capabilities.uneven_pipeline_split = false;
    f.capabilities.shardings = {S::kDdp, S::kZero2, S::kFsdp, S::kHsdp};
    f.capabilities.pipeline_shardings = {};
    // MegaBlocks dMoE layers with expert parallelism; no expert tensor parallelism.
    f.capabilities.expert_tensor_parallel = false;
    f.behaviour.default_sharding = S::kFsdp;
    Stack s;
    s.fp8_recipe = R::kDelayed;
    s.fused_loss = true;  // loss_fn: fused_crossentropy (flash-attn's) in the MPT configs
    f.versions = {{"2023.10", With(s, "2023.10")}};
    t->push_back(f);
  }
  // IBM foundation-model-stack fms-fsdp: PyTorch FSDP/HSDP, SDPA flash-attention 2,
  // torch.compile on in its published configs (use_torch_compile=True).
  {
    Framework f;
    f.name = "fms-fsdp";
    f.family = "pytorch-fsdp";
    f.description = "IBM fms-fsdp: PyTorch FSDP/HSDP, SDPA, torch.compile";
    f.capabilities.tensor_parallel = f.capabilities.pipeline_parallel = false;
    f.capabilities.interleaved_pipeline = f.capabilities.context_parallel = false;
    f.capabilities.uneven_pipeline_split = false;
    f.capabilities.shardings = {S::kDdp, S::kFsdp, S::kHsdp};
    f.capabilities.pipeline_shardings = {};
    // Dense Llama-family training only: no mixture-of-experts layers.
    f.capabilities.expert_parallel = f.capabilities.expert_tensor_parallel = false;
    f.behaviour.default_sharding = S::kHsdp;
    f.behaviour.selective = SelectivePolicy::kHalfTheLayers;
    Stack s;
    s.compiled = true;
    f.versions = {{"2024.05", With(s, "2024.05")}};
    t->push_back(f);
  }
  // DeepSpeed: ZeRO stages 1-3; its pipeline engine takes ZeRO-1 at most; no TP or CP of its own
  // (Ulysses sequence parallelism is not modelled); eager PyTorch with flash attention 2.
  {
    Framework f;
    f.name = "deepspeed";
    f.family = "deepspeed";
    f.description = "DeepSpeed ZeRO 1-3 with its pipeline engine";
    f.capabilities.tensor_parallel = f.capabilities.context_parallel = false;
    f.capabilities.interleaved_pipeline = f.capabilities.uneven_pipeline_split = false;
    // DeepSpeed-MoE: expert parallelism, no expert tensor parallelism.
    f.capabilities.expert_tensor_parallel = false;
    f.capabilities.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
    f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
    Stack s;
    s.fp8_recipe = R::kDelayed;
    f.versions = {{"0.14", With(s, "0.14")}};
    t->push_back(f);
  }
  // MaxText and Paxml (JAX/XLA on GPU, NVIDIA's JAX containers): XLA fuses elementwise work,
  // collectives are scheduled asynchronously beside compute, cuDNN flash attention
  // (attention=cudnn_flash_te); FSDP-style sharding by default; fp8 with delayed scaling.
  for (const char* name : {"maxtext", "paxml"}) {
    Framework f;
    f.name = name;
    f.family = "jax";
    f.description = std::string(name) + " (JAX/XLA): FSDP sharding, XLA fusion, cuDNN attention";
    f.capabilities.interleaved_pipeline = false;
    f.capabilities.uneven_pipeline_split = false;
    f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
    f.behaviour.default_sharding = S::kFsdp;
    f.behaviour.sequence_parallel_with_tp = true;
    Stack s;
    s.compiled = true;
    s.fused_kernels = true;
    s.attention = A::kCudnn;
    s.fp8_recipe = R::kDelayed;
    f.versions = {{"24.04", With(s, "24.04")}};
    t->push_back(f);
  }
  return t;
}

}  // namespace

absl::string_view ToString(Fp8Recipe r) {
  switch (r) {
    case R::kNone:
      return "";
    case R::kDelayed:
      return "delayed";
    case R::kTensorwise:
      return "tensorwise";
    case R::kRowwise:
      return "rowwise";
    case R::kBlockwise:
      return "blockwise";
    case R::kMxfp8:
      return "mxfp8";
    case R::kNvfp4:
      return "nvfp4";
  }
  return "";
}

absl::string_view ToString(AttentionKernel k) {
  switch (k) {
    case A::kDefault:
      return "";
    case A::kMath:
      return "math";
    case A::kFa2:
      return "fa2";
    case A::kFa3:
      return "fa3";
    case A::kCudnn:
      return "cudnn";
  }
  return "";
}

bool ParseFp8Recipe(absl::string_view s, Fp8Recipe* out) {
  const std::string v = absl::AsciiStrToLower(s);
  for (Fp8Recipe r :
       {R::kNone, R::kDelayed, R::kTensorwise, R::kRowwise, R::kBlockwise, R::kMxfp8, R::kNvfp4}) {
    if (v == ToString(r)) {
      *out = r;
      return true;
    }
  }
  // Transformer Engine's and Megatron-Bridge's names for the same recipes.
  if (v == "current" || v == "cs") {
    *out = R::kTensorwise;
    return true;
  }
  return false;
}

bool ParseAttentionKernel(absl::string_view s, AttentionKernel* out) {
  const std::string v = absl::AsciiStrToLower(s);
  for (AttentionKernel k : {A::kDefault, A::kMath, A::kFa2, A::kFa3, A::kCudnn}) {
    if (v == ToString(k)) {
      *out = k;
      return true;
    }
  }
  // PyTorch SDPA's flash backend is flash-attention 2.
  if (v == "sdpa" || v == "flash") {
    *out = A::kFa2;
    return true;
  }
  return false;
}

const std::vector<Framework>& Frameworks() {
  static const std::vector<Framework>* const kTable = BuildTable();
  return *kTable;
}

const Framework* FindFramework(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const Framework& f : Frameworks()) {
    if (f.name == lower) return &f;
  }
  return nullptr;
}

const Framework& GenericFramework() { return Frameworks().front(); }

std::string FrameworkNames() {
  std::string out;
  for (const Framework& f : Frameworks()) {
    if (!f.name.empty()) absl::StrAppend(&out, out.empty() ? "" : ", ", f.name);
  }
  return out;
}

absl::StatusOr<Stack> ResolveStack(const Framework& framework, const StackOptions& o,
                                   Precision precision, absl::string_view path) {
  const std::vector<FrameworkVersion>& versions = framework.versions;
  Stack s = versions.back().defaults;
  if (!o.version.empty()) {
    const std::vector<int> want = VersionParts(o.version);
    if (want.empty() || VersionParts(versions.front().version) > want) {
      if (!framework.name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ".version: '", o.version, "' is older than the oldest ", framework.name,
            " version the model knows (", versions.front().version, ")"));
      }
    }
    for (const FrameworkVersion& v : versions) {
      if (VersionParts(v.version) <= want) s = v.defaults;
    }
    s.version = o.version;
  }
  if (o.tp_comm_overlap) s.tp_comm_overlap = *o.tp_comm_overlap;
  if (o.dp_overlap) s.dp_overlap = *o.dp_overlap;
  if (o.cuda_graphs) s.cuda_graphs = *o.cuda_graphs;
  if (o.fused_dispatch) s.fused_dispatch = *o.fused_dispatch;
  if (o.ep_comm_overlap) s.ep_comm_overlap = *o.ep_comm_overlap;
  if (o.bf16_grads) s.bf16_grads = *o.bf16_grads;
  if (o.compiled) s.compiled = *o.compiled;
  if (!o.attention_kernel.empty()) {
    AttentionKernel k;
    if (!ParseAttentionKernel(o.attention_kernel, &k)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".attention_kernel: unknown kernel '",
                                                     o.attention_kernel,
                                                     "' (known: math, fa2, fa3, cudnn, sdpa)"));
    }
    if (k != A::kDefault) s.attention = k;
  }
  Fp8Recipe recipe = R::kNone;
  if (!o.fp8_recipe.empty() && !ParseFp8Recipe(o.fp8_recipe, &recipe)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".fp8_recipe: unknown recipe '", o.fp8_recipe,
                     "' (known: delayed, tensorwise, rowwise, blockwise, mxfp8, nvfp4)"));
  }
  switch (precision) {
    case Precision::kMxfp8:
    case Precision::kNvfp4: {
      const Fp8Recipe implied = precision == Precision::kMxfp8 ? R::kMxfp8 : R::kNvfp4;
      if (recipe != R::kNone && recipe != implied) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".fp8_recipe: ", ToString(recipe),
                                                       " does not apply to ", ToString(precision),
                                                       " training"));
      }
      s.fp8_recipe = implied;
      break;
    }
    case Precision::kFp8:
      if (recipe == R::kMxfp8 || recipe == R::kNvfp4) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".fp8_recipe: ", ToString(recipe),
                                                       " needs precision ", ToString(recipe)));
      }
      if (recipe != R::kNone) s.fp8_recipe = recipe;
      if (s.fp8_recipe == R::kNone) s.fp8_recipe = R::kDelayed;
      break;
    default:
      if (recipe != R::kNone) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".fp8_recipe: ", ToString(recipe),
                                                       " needs an fp8 or fp4 "
                                                       "precision, not ",
                                                       ToString(precision)));
      }
      s.fp8_recipe = R::kNone;
  }
  return s;
}

}  // namespace scalecast
