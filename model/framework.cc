#include "model/framework.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/field_rules.h"
#include "model/model_fields_gen.h"
#include "model/status_macros.h"

namespace scalecast {
namespace {

using S = Sharding;
using A = AttentionKernel;
using R = Fp8Recipe;

// The fp8 recipes whose training keeps fp8 primary weights for the parameter all-gather when a
// stack does (Stack::fp8_param_gather): Transformer Engine's delayed and current (tensorwise)
// scaling and MXFP8. Megatron-Bridge's mixed-precision recipes set fp8_param_gather for these
// and not for the subchannel (blockwise) or nvfp4 ones (src/megatron/bridge/training/
// mixed_precision.py, v0.1.0rc3 to v0.5.0); torchao's fp8 all-gather
// (enable_fsdp_float8_all_gather) takes tensorwise scaling only.
bool KeepsFp8Weights(Fp8Recipe r) {
  return r == R::kDelayed || r == R::kTensorwise || r == R::kMxfp8;
}

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

// The middle of a month as a decimal year: Ym(2024, 9) = 2024.71.
constexpr double Ym(int year, int month) { return year + (month - 0.5) / 12.0; }

// A behaviour every release of a framework has (FrameworkBehaviour's "since" dates).
constexpr double kAlways = 1.0;

// One release: its stack (version, release and date filled in) and the source of both.
FrameworkVersion Rel(const char* version, double date, Stack s, absl::string_view source) {
  s.version = s.release = version;
  s.software_date = date;
  return FrameworkVersion{version, s, date, std::string(source), {}, IsDatedVersion(version)};
}

// Releases of the same stack at several dates (its features unchanged across them).
void AddReleases(std::vector<FrameworkVersion>* out, const Stack& s,
                 std::initializer_list<std::pair<const char*, double>> releases,
                 const char* source) {
  for (const auto& [version, date] : releases) out->push_back(Rel(version, date, s, source));
}

// Releases oldest first; of one date, in the order they were added (a dated snapshot added after
// the own-numbered tag of its month is the one a date placed there names).
void SortByDate(std::vector<FrameworkVersion>* releases) {
  std::stable_sort(
      releases->begin(), releases->end(),
      [](const FrameworkVersion& a, const FrameworkVersion& b) { return a.date < b.date; });
}

// PyTorch releases as a plain PyTorch stack sees them (pytorch.org release blog posts): SDPA
// arrived in 2.0 with a FlashAttention-1 based flash backend, 2.2 moved it to FlashAttention-2
// ("FlashAttention-v2 integration in scaled_dot_product_attention"), 2.4 made FSDP2
// (fully_shard) public. Before 2.0 attention is PyTorch's own matmul-softmax-matmul.
std::vector<FrameworkVersion> PytorchReleases(Stack s) {
  const char* src =
      "PyTorch release notes (pytorch.org blog): 1.12, 2.0 (SDPA, flash backend = "
      "FlashAttention 1), 2.2 (SDPA FlashAttention-2), 2.4 (FSDP2), 2.6, 2.8, 2.9";
  std::vector<FrameworkVersion> out;
  Stack math = s;
  math.attention = A::kMath;
  out.push_back(Rel("1.12", Ym(2022, 6), math, src));
  out.push_back(Rel("1.13", Ym(2022, 10), math, src));
  Stack fa1 = s;
  fa1.attention = A::kFa1;
  AddReleases(&out, fa1, {{"2.0", Ym(2023, 3)}, {"2.1", Ym(2023, 10)}}, src);
  AddReleases(&out, s,
              {{"2.2", Ym(2024, 1)},
               {"2.3", Ym(2024, 4)},
               {"2.4", Ym(2024, 7)},
               {"2.5", Ym(2024, 10)},
               {"2.6", Ym(2025, 1)},
               {"2.7", Ym(2025, 4)},
               {"2.8", Ym(2025, 8)},
               {"2.9", Ym(2025, 10)}},
              src);
  return out;
}

// DeepSpeed's releases by their tags' dates (microsoft/DeepSpeed: v0.5.0 2021-08-16, v0.6.0
// 2022-03-07, v0.7.0 2022-07-31, v0.8.0 2023-01-17, v0.9.0 2023-04-13, v0.10.0 2023-07-17,
// v0.10.2 2023-08-30, the first with DeepSpeed-Ulysses, v0.12.0 2023-11-03, v0.14.0 2024-03-07,
// v0.16.0 2024-11-25, v0.16.4 2025-02-20, the first with AutoTP training (DeepSpeed() below);
// v0.17.0 from its GitHub release).
std::vector<std::pair<const char*, double>> DeepSpeedReleases() {
  return {{"0.5", Ym(2021, 8)},    {"0.6", Ym(2022, 3)},    {"0.7", Ym(2022, 7)},
          {"0.8", Ym(2023, 1)},    {"0.9", Ym(2023, 4)},    {"0.10", Ym(2023, 7)},
          {"0.10.2", Ym(2023, 8)}, {"0.12", Ym(2023, 11)},  {"0.14", Ym(2024, 3)},
          {"0.16", Ym(2024, 11)},  {"0.16.4", Ym(2025, 2)}, {"0.17", Ym(2025, 6)}};
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
  f.capabilities.partial_recompute = true;
  // TransformerConfig.cpu_offloading / cpu_offloading_num_layers (Megatron-Core 0.5, 2024/03,
  // with Transformer Engine's get_cpu_offload_context).
  f.capabilities.cpu_offload = true;
  // Context parallelism's exchange by cp_comm_type (core/transformer/transformer_config.py, over
  // Transformer Engine's attention with context parallelism): "p2p" (the ring, the default),
  // "a2a" and "all_gather" from NVIDIA/Megatron-LM 91a8a4c8 (2024-10-21), "a2a+p2p" with
  // --hierarchical-context-parallel-sizes from 645c329d (2024-11-15); both first tagged in
  // core_v0.10.0. Dated per framework (CapabilityDates::cp_all_to_all, cp_all_gather,
  // cp_hierarchical).
  f.capabilities.cp_comms = {CpComm::kRing, CpComm::kAllToAll, CpComm::kAllGather,
                             CpComm::kHierarchical};
  f.behaviour.expert_bias_outside_gemm = true;
  f.behaviour.low_precision_weights_cached = true;
  f.behaviour.tp_gathers_quantized = true;
  f.behaviour.pipeline_sends_split_since = Ym(2021, 2);
  f.behaviour.tp_input_grad_async_since = Ym(2021, 9);
  f.behaviour.chunked_data_parallel_sync = true;
  return f;
}

// A framework that shards data only: no tensor, pipeline or context parallelism, so nothing to
// pipeline or interleave; `shardings` are the data-parallel ones it offers.
void DataParallelOnly(FrameworkCapabilities* c, std::vector<Sharding> shardings) {
  c->tensor_parallel = c->pipeline_parallel = false;
  c->interleaved_pipeline = c->context_parallel = false;
  c->uneven_pipeline_split = false;
  c->shardings = std::move(shardings);
  c->pipeline_shardings = {};
}

// Megatron-LM numbers its releases core_v0.x from Megatron-Core 0.4 (2023-12; before, YY.MM tags
// to 23.06: NVIDIA/Megatron-LM tags). From then a YY.MM given to megatron names an NGC NeMo
// container, whose Megatron-Core runs as the container's performance recipes set it (userbuffers
// TP overlap, bf16 gradients, fp8 weights, the flex dispatcher from 26.02): the shared
// calibration data names runs so (moe.csv's Megatron-Bridge performance-summary runs are
// framework megatron, sources "(25.09 NeMo container)" to "(26.02.01 NeMo container)"). So
// megatron takes nemo's containers of the Megatron-Core era, each at its date among the
// Megatron-Core releases; the newest, "today's", stays the library's own.
void AddNemoContainers(const Framework& nemo, Framework* megatron) {
  double core_since = 0;
  for (const FrameworkVersion& r : megatron->versions) {
    if (absl::StartsWith(r.version, "0.") && (core_since == 0 || r.date < core_since)) {
      core_since = r.date;
    }
  }
  for (const FrameworkVersion& r : nemo.versions) {
    if (r.date < core_since || !r.dated) continue;
    FrameworkVersion c = r;
    c.from = nemo.name;
    megatron->versions.push_back(std::move(c));
  }
  megatron->taken_releases =
      "a YY.MM from Megatron-Core 0.4 on names that NeMo container (NVIDIA/Megatron-LM tags: "
      "core_v0.x from 0.4, YY.MM to 23.06; moe.csv's Megatron-Bridge runs)";
  // By date, and on a date a container shares with a release of the library's own (26.08 and
  // Megatron-Core 0.19), the library's last: the newest is its own.
  std::stable_sort(megatron->versions.begin(), megatron->versions.end(),
                   [](const FrameworkVersion& a, const FrameworkVersion& b) {
                     return std::pair(a.date, a.from.empty()) < std::pair(b.date, b.from.empty());
                   });
}

// PyTorch's hybrid sharding (FSDP's ShardingStrategy.HYBRID_SHARD) came with 2.0 (2023-03): "this
// wasn't implemented as of PyTorch 1.13.1, it appears it's going to be in the next release"
// (allenai/OLMo issue #38, 2023-03-13, on the master branch's torch/distributed/fsdp/api.py).
void DatePytorchSharding(FrameworkCapabilities* c) {
  c->since.hsdp = Ym(2023, 3);
  c->since.source =
      "PyTorch 2.0 release (2023-03): HYBRID_SHARD, absent from 1.13.1 (allenai/OLMo issue #38)";
}

// Generic: a PyTorch-style stack with flash attention and overlapped data parallelism, no
// hand-fused kernels. Used when a request names no framework.
Framework GenericPytorch() {
  Framework f;
  f.name = "";
  f.family = "generic";
  f.description =
      "no framework named: plain eager PyTorch (SDPA attention, no fused kernels, no compiler, "
      "no TP overlap); versions are PyTorch's";
  f.behaviour.sequence_parallel_with_tp = true;
  f.behaviour.separate_projections = true;  // as Hugging Face models are built
  // PyTorch's pipeline runtime is torch.distributed.pipelining (PyTorch 2.4), whose stages
  // reduce FSDP2's and DDP's gradients once a step (FrameworkBehaviour). FSDP2 became plain
  // PyTorch's FSDP in 2.6 (January 2025), public as torch.distributed.fsdp.fully_shard (its
  // documentation page created 2024-12-04; in 2.4 and 2.5 it was the private
  // torch.distributed._composable.fsdp): before, FSDP is FullyShardedDataParallel (FSDP1).
  f.behaviour.pipeline_reduces_once_since = Ym(2025, 1);
  // A framework the table does not know may split its pipeline any way it likes.
  f.capabilities.flexible_pipeline_layout = true;
  // Plain PyTorch recomputes any module it wraps: torch.utils.checkpoint.checkpoint "Checkpoint
  // a model or part of the model ... It can be applied on any part of a model" (its docstring,
  // PyTorch 0.4 on). Megatron-Core's --recompute-modules run its tensor_parallel.checkpoint,
  // "directly copied from torch.utils.checkpoint", or CheckpointWithoutOutput, which also frees
  // the module's output (megatron/core/tensor_parallel/random.py, transformer_layer.py).
  f.capabilities.recompute_modules = true;
  // torch.autograd.graph.save_on_cpu keeps any region's saved tensors in host memory.
  f.capabilities.cpu_offload = true;
  f.behaviour.offload_on_compute_stream = true;
  DatePytorchSharding(&f.capabilities);
  f.versions = PytorchReleases(Stack());
  return f;
}

// Megatron-LM / Megatron-Core. 22.05: the Megatron-LM of Korthikanti et al. 2022 (arXiv
// 2205.05198): fused softmax/bias-GeLU/layernorm kernels, unfused (math) attention, gradient
// all-reduce after backward. 24.09: Megatron-Core with Transformer Engine (fused kernels,
// cuDNN fused attention), --overlap-grad-reduce / --overlap-param-gather; TP communication
// overlap (--tp-comm-overlap) is opt-in.
Framework MegatronLm() {
  Framework f = MegatronCore(
      "megatron", "Megatron-LM / Megatron-Core: TP+SP, interleaved PP, CP, distributed optimizer");
  Stack old;
  old.fused_kernels = true;
  old.attention = A::kMath;
  old.dp_overlap = false;
  Stack core;
  core.fused_kernels = true;
  core.attention = A::kCudnn;
  core.fp8_recipe = R::kDelayed;
  // Dates: the repository's tags (v2.0 2021-01-12, v2.6 2021-08-27, 23.04 2023-05-11, 23.06
  // 2023-06-28, core_v0.4.0 2023-12-11 ... core_v0.19.0 2026-08-19); 22.05 is the code of
  // Korthikanti et al. (arXiv 2205.05198, May 2022). Flash attention (--use-flash-attn) and
  // Transformer Engine (--transformer-impl) were opt-in before Megatron-Core.
  const char* tags = "NVIDIA/Megatron-LM tags and CHANGELOG (v2.x, 23.04, 23.06, core_v0.x)";
  // Megatron-LM v1.0 (tag 2020-04-21, f738dac6): PyTorch's softmax (torch.nn.Softmax in
  // megatron/model/transformer.py) and a scripted GeLU apart from its bias, apex's fused
  // LayerNorm only; --DDP-impl local by default, its all-reduce after the backward pass.
  Stack v1 = old;
  v1.fused_kernels = false;
  f.versions.push_back(
      Rel("1.0", Ym(2020, 4), v1,
          "NVIDIA/Megatron-LM tag v1.0 (f738dac6): megatron/model/transformer.py, arguments.py"));
  AddReleases(&f.versions, old, {{"2.0", Ym(2021, 1)}, {"2.6", Ym(2021, 8)}}, tags);
  f.versions.push_back(
      Rel("22.05", Ym(2022, 5), old, "Korthikanti et al. 2022 (arXiv 2205.05198)"));
  AddReleases(&f.versions, old, {{"23.04", Ym(2023, 5)}, {"23.06", Ym(2023, 6)}}, tags);
  AddReleases(&f.versions, core,
              {{"0.4", Ym(2023, 12)},
               {"0.5", Ym(2024, 2)},
               {"0.6", Ym(2024, 4)},
               {"0.7", Ym(2024, 5)},
               {"0.8", Ym(2024, 8)}},
              tags);
  // When each capability came: the first release whose tagged code has its setting (git grep at
  // the NVIDIA/Megatron-LM tags). Sequence parallelism and the distributed optimizer from their
  // merges into main, 2022-05-20 (9aad9203, branch sequence_parallel: the code of Korthikanti et
  // al.) and 2022-06-08 (d07d29df, branch lmcafee/distrib-opt-nodupe; the YY.MM tags before
  // 23.04 are not in the repository); context_parallel_size and expert_model_parallel_size
  // (core/parallel_state.py) from core_v0.4.0; cpu_offloading_num_layers from 0.5;
  // num_layers_in_first_pipeline_stage from 0.9; cp_comm_type's a2a, allgather and a2a+p2p
  // from 0.10; Megatron-FSDP (use_custom_fsdp,
  // core/distributed) and recompute_modules (core/transformer/transformer_config.py) from 0.12.
  // Not dated: expert-tensor parallelism (before 0.10 decoupled it, expert_tensor_parallel_size,
  // the experts were split over the TP ranks) and the flexible pipeline layout (0.13's
  // pipeline_model_parallel_layout), which the planner's uneven split, counting the embedding
  // and the loss as layers, stands in for: the planner does not search the first and last stage
  // sizes that 0.9 to 0.12 took instead.
  CapabilityDates& since = f.capabilities.since;
  since.source =
      "NVIDIA/Megatron-LM: the merges into main (9aad9203 sequence parallelism, d07d29df the "
      "distributed optimizer) and each core_v0.x tag's code (git grep of its settings)";
  since.sequence_parallel = Ym(2022, 5);
  since.zero1 = Ym(2022, 6);
  since.context_parallel = since.expert_parallel = Ym(2023, 12);
  since.cpu_offload = Ym(2024, 2);
  since.uneven_pipeline_split = Ym(2024, 10);
  since.cp_all_to_all = since.cp_all_gather = since.cp_hierarchical = Ym(2025, 2);
  since.fsdp = since.recompute_modules = Ym(2025, 4);
  AddReleases(&f.versions, core,
              {{"0.9", Ym(2024, 10)},
               {"0.10", Ym(2025, 2)},
               {"0.11", Ym(2025, 3)},
               {"0.12", Ym(2025, 4)},
               {"0.13", Ym(2025, 7)},
               {"0.14", Ym(2025, 10)},
               {"0.15", Ym(2025, 12)},
               {"0.16", Ym(2026, 2)},
               {"0.17", Ym(2026, 4)},
               {"0.18", Ym(2026, 6)},
               {"0.19", Ym(2026, 8)}},
              tags);
  return f;
}

// Megatron-Bridge's containers (25.09 on), from the 24.x releases' stack `s24`. Megatron-Bridge
// keeps the bf16 gradients (every performance config sets cfg.ddp.grad_reduce_in_fp32 = False:
// scripts/performance/configs/*/*_llm_pretrain.py, v0.1.0rc3's yamls to v0.5.0), makes fp8 current
// scaling the default, and its fp8 mixed-precision recipes keep fp8 primary weights
// (src/megatron/bridge/training/mixed_precision.py: bf16_with_fp8_delayed_scaling_mixed,
// _current_scaling_mixed and _mxfp8_mixed set fp8_param_gather = True; the subchannel (blockwise)
// and nvfp4 recipes False, KeepsFp8Weights).
void AddBridgeContainers(const Stack& s24, std::vector<FrameworkVersion>* out) {
  Stack bridge = s24;
  bridge.fp8_recipe = R::kTensorwise;
  bridge.fp8_param_gather = true;
  // Megatron-Bridge's containers, each after the Megatron-Bridge and NeMo versions it ships
  // under their own numbers (so that a date between containers takes the container).
  struct BridgeRelease {
    const char* container;
    double date;
    std::vector<const char*> own;  // Megatron-Bridge x.y, NeMo x.y
    bool flex = false;             // most MoE presets on the flex dispatcher (bridge_flex below)
    // The Megatron-Bridge tag whose MoE presets a request of a catalog model takes
    // (model/recipe_presets.h): the one the container ships, "" where they are not read (25.09's
    // were YAML files).
    const char* presets = "";
  };
  const char* summaries =
      "Megatron-Bridge performance summaries (25.09-26.08 containers); bf16 gradients and fp8 "
      "weights: its scripts/performance configs and mixed_precision.py recipes";
  const char* shipped =
      "NVIDIA-NeMo/Megatron-Bridge docs/releases/software-versions.md (NeMo Framework container "
      "components: 25.09 Megatron-Bridge 0.1.0rc3 and NeMo 2.5.0, 25.11 0.2.0 and 2.6.0, 26.02 "
      "0.3.0 and 2.7.0, 26.04 0.4.0, 26.06 0.5.0); 26.08 0.6.0: the tag v0.6.0 (2026-08-19) "
      "publishes its performance summary as the 26.08 container's";
  const std::vector<BridgeRelease> containers = {
      {"25.09", Ym(2025, 9), {"0.1", "2.5"}},
      {"25.11", Ym(2025, 11), {"0.2", "2.6"}, false, "v0.2.0"},
      {"26.02", Ym(2026, 2), {"0.3", "2.7"}, true, "v0.3.0"},
      {"26.02.01", Ym(2026, 3), {}, true, "v0.3.1"},
      {"26.04", Ym(2026, 4), {"0.4"}, true, "v0.4.0"},
      {"26.06", Ym(2026, 6), {"0.5"}, true, "v0.5.0"},
      {"26.08", Ym(2026, 8), {"0.6"}, true, "v0.6.0"}};
  // From Megatron-Bridge 0.3.0 (the 26.02 container) most of its MoE pre-training presets
  // dispatch through the flex dispatcher: moe_flex_dispatcher_backend "deepep" or "hybridep"
  // in scripts/performance/configs/*/*workload_base_configs.py, each GPU's and precision's
  // preset counted at the tag (scripts/bridge_moe_configs.py): 24 of 51 at v0.2.0, 72 of 119
  // at v0.3.0, 132 of 182 at v0.4.0, 140 of 200 at v0.5.0; from v0.6.0 the presets are recipes
  // per GPU count, 116 of the 140 for catalog models. So a MoE run that names only the
  // release gets the fused dispatch most of its recipes use; a dense run has nothing to
  // dispatch. CUDA graphs stay off: about half of the presets capture any scope (48 of 119,
  // 89 of 182, 99 of 200), the whole step only 14 of v0.5.0's.
  Stack bridge_flex = bridge;
  bridge_flex.fused_dispatch = true;
  const char* flex =
      "; the flex dispatcher: most of the tag's MoE workload presets "
      "(scripts/bridge_moe_configs.py)";
  for (const BridgeRelease& r : containers) {
    Stack st = r.flex ? bridge_flex : bridge;
    st.recipe_tag = r.presets;
    const char* also = r.flex ? flex : "";
    for (const char* own : r.own) {
      out->push_back(Rel(own, r.date, st, absl::StrCat(shipped, also)));
    }
    out->push_back(Rel(r.container, r.date, st, absl::StrCat(summaries, also)));
  }
}

// NeMo on Megatron-Core (dgxc-benchmarking 24.09/24.11 recipes, Megatron-Bridge 25.11): the
// performance recipes turn on TP communication overlap (userbuffers), grad-reduce and
// param-gather overlap; Transformer Engine with cuDNN fused attention; fp8 delayed scaling in
// 24.x, current (tensorwise) scaling by default in Megatron-Bridge.
Framework Nemo() {
  Framework f = MegatronCore(
      "nemo", "NVIDIA NeMo / Megatron-Bridge on Megatron-Core with Transformer Engine");
  // When each capability came: the first NVIDIA/NeMo-Framework-Launcher tag whose training
  // configs (launcher_scripts/conf/training) set it, by git grep at each tag from 23.03, the
  // oldest the repository holds: context_parallel_size and fsdp from 24.01,
  // cpu_offloading from 24.03, expert_model_parallel_size from 24.05; none of them in 23.03 to
  // 23.11. The distributed optimizer (distributed_fused_adam) is in every tag's configs, and
  // the 2022 containers are not in the repository, so it is not dated. What NeMo runs through
  // Megatron-Core no container has before Megatron-Core's code did: uneven first and last
  // stages from the month of their commit (fa8bb592, 2024-09-05), cp_comm_type's a2a and
  // allgather from 2024-10 (91a8a4c8) and a2a+p2p from 2024-11 (645c329d), recompute by module
  // from 2025-04 (3b141a24, 2025-04-05): the earliest each container could have it. The flexible
  // layout is not dated, as for Megatron-LM.
  CapabilityDates& since = f.capabilities.since;
  since.source =
      "NVIDIA/NeMo-Framework-Launcher: each tag's launcher_scripts/conf/training configs (git "
      "grep of their settings, 23.03 to 24.12); for what runs through Megatron-Core, the month "
      "of its NVIDIA/Megatron-LM commit";
  since.context_parallel = since.fsdp = Ym(2024, 1);
  since.cpu_offload = Ym(2024, 3);
  since.expert_parallel = Ym(2024, 5);
  since.uneven_pipeline_split = Ym(2024, 9);
  since.cp_all_to_all = since.cp_all_gather = Ym(2024, 10);
  since.cp_hierarchical = Ym(2024, 11);
  since.recompute_modules = Ym(2025, 4);
  Stack s;
  s.fused_kernels = true;
  s.attention = A::kCudnn;
  s.tp_comm_overlap = true;
  s.fp8_recipe = R::kDelayed;
  // The NeMo Megatron launcher of 2022 (GPT-3 recipes on A100) ran Megatron-LM's own layers:
  // fused softmax and bias-GeLU, unfused attention, no Transformer Engine or userbuffers, the
  // gradient all-reduce after backward (as Megatron-LM of the time).
  Stack launcher;
  launcher.fused_kernels = true;
  launcher.attention = A::kMath;
  launcher.dp_overlap = false;
  const char* launcher_src =
      "NeMo Megatron launcher 22.x (NGC nemo-megatron containers; Megatron-LM layers)";
  // NeMo's own 1.x and 2.x numbers, each beside the container that shipped it (pushed before
  // it, so that a date the two share takes the container): the launcher README's support
  // matrix names NeMo 1.7.2 in the 22.03 container (NVIDIA/NeMo-Framework-Launcher @a6bf3b73)
  // and 1.13.0 in 22.11 (@5aeb4ab8); NVIDIA's MLPerf submissions name NeMo v1.17.0 in 23.04
  // and r1.20.0 in 23.09 (below); docs.nvidia.com's NeMo Framework "Software Component
  // Versions" page (user-guide/24.09) names NeMo 2.0.0 in 24.09.
  const char* matrix = "NVIDIA/NeMo-Framework-Launcher README support matrix (NeMo x.y)";
  f.versions.push_back(Rel("1.7", Ym(2022, 3), launcher, matrix));
  AddReleases(&f.versions, launcher, {{"22.03", Ym(2022, 3)}, {"22.09", Ym(2022, 9)}},
              launcher_src);
  f.versions.push_back(Rel("1.13", Ym(2022, 11), launcher, matrix));
  AddReleases(&f.versions, launcher, {{"22.11", Ym(2022, 11)}}, launcher_src);
  // NeMo Megatron 23.04 (NeMo 1.17 with Transformer Engine release_v0.8, the container of
  // NVIDIA's MLPerf Training v3.0 GPT-3 submission): Transformer Engine's layers and fp8
  // (delayed scaling), its userbuffers TP overlap and the overlapped gradient reduce; its
  // attention calls flash-attn v1 for causal masks on sm80 and later
  // (TransformerEngine release_v0.8 transformer.py; the image pins flash_attn 1.0.5).
  Stack te08 = s;
  te08.attention = A::kFa1;
  const char* mlperf_nemo = "NeMo's own number in NVIDIA's MLPerf Training container (below)";
  f.versions.push_back(Rel("1.17", Ym(2023, 4), te08, mlperf_nemo));
  f.versions.push_back(Rel("23.04", Ym(2023, 4), te08,
                           "mlcommons/training_results_v3.0 NVIDIA gpt3 Dockerfile and configs "
                           "(NeMo v1.17.0, TransformerEngine release_v0.8)"));
  // Container names are their year and month (NGC nvcr.io/nvidia/nemo:YY.MM); features as the
  // 24.09 performance recipes (Transformer Engine, cuDNN attention, userbuffers TP overlap)
  // until Megatron-Bridge (25.09+) made fp8 current scaling the default.
  const char* ngc = "NGC NeMo container release notes (YY.MM)";
  AddReleases(&f.versions, s, {{"23.08", Ym(2023, 8)}}, ngc);
  // NeMo 23.09 (NeMo r1.20.0 on the PyTorch 23.09 image, Transformer Engine 1.0.0dev, flash-attn
  // 2.0.8: NVIDIA's MLPerf Training v3.1 GPT-3 submission): as 23.04, but TE's
  // DotProductAttention tries flash-attn before its cuDNN fused attention, and flash-attn 2 is
  // installed (TransformerEngine @09ba842 transformer_engine/pytorch/attention.py).
  Stack te10 = s;
  te10.attention = A::kFa2;
  f.versions.push_back(Rel("1.20", Ym(2023, 9), te10, mlperf_nemo));
  f.versions.push_back(Rel("23.09", Ym(2023, 9), te10,
                           "mlcommons/training_results_v3.1 NVIDIA gpt3 Dockerfile and configs "
                           "(pytorch:23.09-py3, NeMo r1.20.0, TransformerEngine @09ba842 = "
                           "1.0.0dev, flash-attn 2.0.8)"));
  AddReleases(&f.versions, s, {{"24.01", Ym(2024, 1)}, {"24.03", Ym(2024, 3)}}, ngc);
  // NeMo 24.04 (NeMo 2.0.0rc0 on Megatron-Core 0.7 with Transformer Engine 1.6: NVIDIA's MLPerf
  // Training v4.0 GPT-3 submission): TE 1.6 selects its cuDNN fused attention over flash-attn on
  // sm90 ("Select FusedAttention on sm90 ... for performance", attention.py at v1.6rc1).
  f.versions.push_back(Rel("24.04", Ym(2024, 4), s,
                           "mlcommons/training_results_v4.0 NVIDIA gpt3 Dockerfile and configs "
                           "(pytorch:24.04-py3, NeMo v2.0.0.rc0.beta, Megatron-Core "
                           "core_v0.7.0.beta, TransformerEngine v1.6rc1)"));
  AddReleases(&f.versions, s, {{"24.05", Ym(2024, 5)}, {"24.07", Ym(2024, 7)}}, ngc);
  // From 24.09 the performance recipes reduce gradients in bf16: the NeMo 1 recipes of
  // dgxc-benchmarking (NVIDIA/dgxc-benchmarking @8f5cbb3799, the 24.09 container: llama3.1
  // 8b/70b/405b and gpt3 175b yamls, model.optim distributed_fused_adam with grad_sync_dtype:
  // bf16), NeMo 2's performance_mode (@741c886025's pretrain_llama31.py builds its recipes with
  // performance_mode=True, whose optimisations set grad_reduce_in_fp32 = False) and the
  // scripts/llm/performance scripts of NeMo 2.2 (25.02: grad_reduce_in_fp32 = False with fp8);
  // data/grad-reduce-dtype.csv cites each.
  Stack s24 = s;
  s24.bf16_grads = true;
  f.versions.push_back(Rel("2.0", Ym(2024, 9), s24,
                           "docs.nvidia.com NeMo Framework user guide 24.09, Software Component "
                           "Versions (NeMo Framework 24.09: NeMo 2.0.0)"));
  AddReleases(&f.versions, s24,
              {{"24.09", Ym(2024, 9)},
               {"24.11", Ym(2024, 11)},
               {"24.12", Ym(2024, 12)},
               {"25.02", Ym(2025, 2)},
               {"25.04", Ym(2025, 4)},
               {"25.07", Ym(2025, 7)}},
              "NGC NeMo container release notes (YY.MM); bf16 gradients: the performance recipes "
              "of dgxc-benchmarking and NeMo 2 (data/grad-reduce-dtype.csv)");
  AddBridgeContainers(s24, &f.versions);
  return f;
}

// Megatron-DeepSpeed: Megatron's TP/PP with DeepSpeed ZeRO (ZeRO-2/3 without PP), fused
// Megatron kernels, flash attention 2 (--use-flash-attn-v2).
Framework MegatronDeepSpeed() {
  Framework f;
  f.name = "megatron-deepspeed";
  f.family = "megatron";
  f.description = "Megatron-DeepSpeed: Megatron TP/PP with DeepSpeed ZeRO and Ulysses";
  // Context parallelism as DeepSpeed-Ulysses (--ds-sequence-parallel-size beside TP and PP, its
  // attention DeepSpeed's DistributedAttention; megatron/arguments.py asserts DeepSpeed 0.10.2 or
  // later): microsoft/Megatron-DeepSpeed a2a476e1, "DeepSpeed Ulysses Release (#230)",
  // 2023-08-23.
  f.capabilities.since.context_parallel = Ym(2023, 8);
  f.capabilities.since.source =
      "microsoft/Megatron-DeepSpeed a2a476e1 (DeepSpeed Ulysses Release, 2023-08-23)";
  f.behaviour.cp_comm = CpComm::kAllToAll;
  f.capabilities.cp_comms = {CpComm::kAllToAll};
  // --pp-partition-method type:transformer|embedding: any split of blocks, the embeddings
  // counted as blocks (BLOOM-176B's 70 blocks over 12 stages).
  f.capabilities.flexible_pipeline_layout = true;
  // Pipelines run on DeepSpeed's PipelineEngine, whose only training schedule is 1F1B over one
  // chunk per stage (deepspeed/runtime/pipe/schedule.py, TrainSchedule): no virtual stages.
  f.capabilities.interleaved_pipeline = false;
  // DeepSpeed-MoE's expert parallelism; no expert tensor parallelism.
  f.capabilities.expert_tensor_parallel = false;
  f.capabilities.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
  f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
  f.behaviour.default_sharding = S::kZero1;
  // Sequence parallelism is opt-in (--sequence-parallel, merged from Megatron-LM in 2023); the
  // 2021-2022 forks (MT-NLG, BLOOM) had none: every TP rank holds the whole sequence between
  // blocks.
  f.behaviour.sequence_parallel_with_tp = false;
  // On DeepSpeed's PipelineEngine: pipe buffers partitioned over the TP ranks, each transfer
  // a blocking call of its own.
  f.behaviour.pipeline_sends_split_since = kAlways;
  f.behaviour.pipeline_transfers_one_at_a_time = true;
  // The weight gradient leaves the GEMM for autograd to accumulate: the fused accumulation is
  // commented out in megatron/core/tensor_parallel/layers.py ("TODO: temporary commented",
  // microsoft/Megatron-DeepSpeed @b080750a), and DeepSpeed's engine reduces .grad.
  f.behaviour.grad_accumulation = GradAccumulation::kAutograd;
  Stack s;
  s.fused_kernels = true;
  s.fp8_recipe = R::kDelayed;
  // BLOOM-176B's 2022 branch ran Megatron's fused softmax (unfused attention); flash attention
  // 2 arrived with --use-flash-attn-v2 in 2023 (microsoft/Megatron-DeepSpeed commits).
  Stack bloom = s;
  bloom.attention = A::kMath;
  bloom.dp_overlap = false;
  const char* src = "bigscience-workshop and microsoft/Megatron-DeepSpeed repositories";
  // Megatron-DeepSpeed has no releases of its own: it runs on the DeepSpeed it is installed
  // with, which its users name (BLOOM's and GPT-NeoX's logs print it). DeepSpeed's numbers up to
  // the last dated release here place it at their release dates with the Megatron-DeepSpeed
  // stack of that date. In date order, a dated release after the number it shares a date with,
  // so that a date takes the dated release.
  for (const auto& [version, date] : DeepSpeedReleases()) {
    if (date > Ym(2023, 11)) break;
    f.versions.push_back(Rel(version, date, date < Ym(2023, 10) ? bloom : s,
                             "microsoft/DeepSpeed release tags; Megatron-DeepSpeed runs on the "
                             "DeepSpeed of its date"));
  }
  AddReleases(&f.versions, bloom, {{"2022.03", Ym(2022, 3)}}, src);
  AddReleases(&f.versions, s, {{"2023.10", Ym(2023, 10)}}, src);
  SortByDate(&f.versions);
  return f;
}

// torchtitan: FSDP2 (or HSDP/DDP) with TP+SP, PP (interleaved schedules) and CP; SDPA
// (flash-attention-2 backend); torch.compile and async TP are opt-in (compile=false,
// enable_async_tensor_parallel=false in its train configs); float8 via torchao, dynamic
// tensorwise scaling by default. With PP, FSDP2 keeps a stage gathered across micro-batches.
Framework Torchtitan() {
  Framework f;
  f.name = "torchtitan";
  f.family = "pytorch-fsdp";
  f.description = "torchtitan: FSDP2 + TP/SP + PP + CP, torch.compile and float8 opt-in";
  f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
  f.behaviour.default_sharding = S::kFsdp;
  f.behaviour.sequence_parallel_with_tp = true;
  f.behaviour.pipeline_reduces_once_since = kAlways;
  f.behaviour.microbatches_equal_stages = true;
  f.behaviour.selective = SelectivePolicy::kEveryOtherMatmul;
  f.behaviour.separate_projections = true;
  f.behaviour.tp_gathers_quantized = true;
  // Each layout axis from the commit that brought it: pipeline parallelism aafe0e87 ("Add
  // Pipeline Parallel (and 2D PP+FSDP) support", 2024-05-21, GPipe and 1F1B only), interleaved
  // schedules 04661a6c ("Add train loop support for looped PP schedules", 2024-06-20), HSDP
  // db6b39ac ("Enable HSDP", 2024-09-10), context parallelism b19456a9 (#592, 2024-10-22), expert
  // parallelism 01f4e502 ("dp2ep Expert Parallel", #1324, 2025-07-08).
  CapabilityDates& since = f.capabilities.since;
  since.pipeline_parallel = Ym(2024, 5);
  since.interleaved_pipeline = Ym(2024, 6);
  since.hsdp = Ym(2024, 9);
  since.context_parallel = Ym(2024, 10);
  since.expert_parallel = Ym(2025, 7);
  since.source =
      "pytorch/torchtitan commits aafe0e87 (PP), 04661a6c (interleaved PP), db6b39ac (HSDP), "
      "b19456a9 (CP), 01f4e502 (EP)";
  Stack s;
  s.fp8_recipe = R::kTensorwise;
  // Its release tags, the numbers pip installs and users give (v0.1.0 2025-06-17, v0.2.0
  // 2025-10-17, v0.2.1 2025-12-26, v0.2.2 2026-02-20: the tagged commits' dates), beside the
  // dated snapshots its benchmark reports are numbered by; one stack throughout.
  AddReleases(&f.versions, s,
              {{"0.1", Ym(2025, 6)},
               {"0.2", Ym(2025, 10)},
               {"0.2.1", Ym(2025, 12)},
               {"0.2.2", Ym(2026, 2)}},
              "pytorch/torchtitan release tags v0.1.0-v0.2.2");
  AddReleases(&f.versions, s,
              {{"2024.04", Ym(2024, 4)},
               {"2024.08", Ym(2024, 8)},
               {"2024.12", Ym(2024, 12)},
               {"2025.06", Ym(2025, 6)},
               {"2025.12", Ym(2025, 12)}},
              "pytorch/torchtitan docs/performance.md and benchmarks/ (dated reports)");
  SortByDate(&f.versions);
  return f;
}

// NVIDIA NeMo AutoModel (NVIDIA-NeMo/Automodel): PyTorch-native training of Hugging Face models,
// not through Megatron-Core. Its benchmark configs (examples/llm_benchmark/*.yaml @e45812012) run
// FSDP2 (`distributed.strategy: fsdp2`) with TP, CP, PP (interleaved 1F1B) and EP, Transformer
// Engine's linears and norms (`backend.linear: te`, `rms_norm: te`, `rope_fusion: true`), its
// attention (`attn: te`), grouped-GEMM experts (`experts: gmm`) and the DeepEP dispatcher
// (`dispatcher: deepep`), eager (one Llama config compiles). The dispatcher waits on each
// dispatch and combine (`async_finish=False`, components/moe/megatron/token_dispatcher.py): no
// all-to-all overlap. Its checkpointing wraps whole blocks (components/moe/parallelizer.py
// apply_ac), a request's `full`. No run of it is fitted.
Framework AutoModel() {
  Framework f;
  f.name = "automodel";
  // A family of its own: no run of it is fitted, so its band is an extrapolation's (wider), not
  // the calibrated PyTorch-FSDP stacks' (torchtitan, llm-foundry, fms-fsdp).
  f.family = "automodel";
  f.description =
      "NeMo AutoModel: PyTorch FSDP2 + TP/CP/PP/EP with Transformer Engine layers and DeepEP";
  f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
  f.behaviour.default_sharding = S::kFsdp;
  f.behaviour.separate_projections = true;  // Hugging Face modules: q, k, v and gate, up apart
  Stack s;
  s.fused_kernels = true;
  s.attention = A::kCudnn;
  s.fused_dispatch = true;
  s.fp8_recipe = R::kTensorwise;
  // Its release tags, the numbers pip installs (v0.1.0 2025-10-08, v0.2.0 2025-12-04, v0.3.0
  // 2026-02-26, v0.4.0 2026-04-28, v0.5.0 2026-06-29: the tagged commits' dates; the patch tag
  // v0.1.2 of 2025-10-23 is 0.1's); one stack throughout.
  AddReleases(&f.versions, s,
              {{"0.1", Ym(2025, 10)},
               {"0.2", Ym(2025, 12)},
               {"0.3", Ym(2026, 2)},
               {"0.4", Ym(2026, 4)},
               {"0.5", Ym(2026, 6)}},
              "NVIDIA-NeMo/Automodel release tags v0.1.0-v0.5.0; stack from its "
              "examples/llm_benchmark configs");
  return f;
}

// MosaicML llm-foundry / Composer: PyTorch FSDP (FULL_SHARD default), flash-attention 2
// (attn_impl: flash), eager mode; fp8 through Transformer Engine (delayed scaling). Its
// predecessor, mosaicml/examples' MosaicGPT (2022-12 to 2023-04), is the same stack's older
// releases.
Framework ComposerFsdp() {
  Framework f;
  f.name = "composer-fsdp";
  f.family = "pytorch-fsdp";
  f.description = "MosaicML llm-foundry / Composer: PyTorch FSDP, flash-attention 2, eager";
  DataParallelOnly(&f.capabilities, {S::kDdp, S::kZero2, S::kFsdp, S::kHsdp});
  // MegaBlocks dMoE layers with expert parallelism; no expert tensor parallelism.
  f.capabilities.expert_tensor_parallel = false;
  f.behaviour.default_sharding = S::kFsdp;
  Stack s;
  s.fp8_recipe = R::kDelayed;
  s.fused_loss = true;  // loss_fn: fused_crossentropy (flash-attn's) in the MPT configs
  // llm-foundry's benchmark script (scripts/train/benchmarking/submit_benchmarks.py) ran
  // attn_impl 'triton' (its default) in the May and October 2023 tables; the January 2024
  // update installs flash-attn 2.4.2 ('.[gpu-flash2]'). Dates: the README's commits
  // (1ef7b4d 2023-05-24, b2a43a1 2023-10-19, 5e85bd6 2024-01-06).
  // Before llm-foundry, the MosaicGPT throughput tables of mosaicml/examples (llm/throughput)
  // ran the yamls' attn_impl 'flash', HazyResearch flash-attn 0.2.x (FlashAttention 1), with
  // torch's cross-entropy (F.cross_entropy in mosaic_gpt.py; the fused loss came with the
  // April 2023 tables, whose stack is the 2023.05 one): 22d724c8 (2022-12-21: torch 1.12.1,
  // composer 0.11.1, flash-attn 0.2.2) and b70ef505 (2023-02-13: torch 1.13.1, composer
  // 0.12.1, flash-attn 0.2.8), llm/requirements.txt and the benchmark scripts' image. Their FSDP
  // mixed precision, 'DEFAULT', kept the parameters in fp32 and reduced in bf16 before Composer
  // 0.13 (composer/trainer/dist_strategy.py at v0.11.1 and v0.12.1: param_dtype float32 /
  // None, reduce_dtype the autocast precision; v0.13.3's mosaic_fsdp.py makes DEFAULT bf16
  // parameters): fp32_params and bf16_grads.
  Stack fa1 = s;
  fa1.attention = A::kFa1;
  fa1.fused_loss = false;
  fa1.fp32_params = true;
  fa1.bf16_grads = true;
  AddReleases(&f.versions, fa1, {{"2022.12", Ym(2022, 12)}, {"2023.02", Ym(2023, 2)}},
              "mosaicml/examples llm/throughput README.md and llm/yamls/mosaic_gpt at 22d724c8 "
              "and b70ef505");
  Stack triton = s;
  triton.attention = A::kTriton;
  const char* src = "mosaicml/llm-foundry scripts/train/benchmarking (README and submit script)";
  AddReleases(&f.versions, triton, {{"2023.05", Ym(2023, 5)}, {"2023.10", Ym(2023, 10)}}, src);
  AddReleases(&f.versions, s, {{"2024.01", Ym(2024, 1)}, {"2024.04", Ym(2024, 4)}}, src);
  return f;
}

// IBM foundation-model-stack fms-fsdp: PyTorch FSDP/HSDP, SDPA flash-attention 2,
// torch.compile on in its published configs (use_torch_compile=True).
Framework FmsFsdp() {
  Framework f;
  f.name = "fms-fsdp";
  f.family = "pytorch-fsdp";
  f.description = "IBM fms-fsdp: PyTorch FSDP/HSDP, SDPA, torch.compile";
  DataParallelOnly(&f.capabilities, {S::kDdp, S::kFsdp, S::kHsdp});
  // Dense Llama-family training only: no mixture-of-experts layers.
  f.capabilities.expert_parallel = f.capabilities.expert_tensor_parallel = false;
  f.behaviour.default_sharding = S::kHsdp;
  f.behaviour.selective = SelectivePolicy::kHalfTheLayers;
  Stack s;
  s.compiled = true;
  AddReleases(&f.versions, s, {{"2024.02", Ym(2024, 2)}, {"2024.05", Ym(2024, 5)}},
              "foundation-model-stack/fms-fsdp README (Feb and May 2024 tables)");
  return f;
}

// DeepSpeed: ZeRO stages 1-3; its pipeline engine takes ZeRO-1 at most; context parallelism as
// DeepSpeed-Ulysses from 0.10.2 (2023-08-30, pull request 4198 "DeepSpeed Ulysses release":
// deepspeed/sequence/layer.py, CpComm::kAllToAll); eager PyTorch
// with flash attention 2. Tensor parallelism from 0.16.4 (2025-02-20): AutoTP training (config
// tensor_parallel.autotp_size, pull request 7004) shards a Hugging Face model's linear layers over
// the TP group as column layers and row layers whose outputs are all-reduced
// (deepspeed/module_inject/layers.py LinearLayer, LinearAllreduce): no sequence parallelism, and
// no ZeRO-3 beside it (deepspeed/runtime/engine.py _configure_tensor_parallel_states asserts ZeRO
// stage <= 2; tests/unit/model_parallelism/test_autotp_training.py runs stages 0-2), all at tag
// v0.16.4.
Framework DeepSpeed() {
  Framework f;
  f.name = "deepspeed";
  f.family = "deepspeed";
  f.description =
      "DeepSpeed ZeRO 1-3 with its pipeline engine; Ulysses from 0.10.2, AutoTP (ZeRO 0-2) from "
      "0.16.4";
  f.capabilities.sequence_parallel = false;
  f.capabilities.tensor_parallel_with_fsdp = false;
  f.capabilities.since.context_parallel = Ym(2023, 8);
  f.capabilities.since.tensor_parallel = Ym(2025, 2);
  f.capabilities.since.source =
      "microsoft/DeepSpeed tags v0.10.2 (DeepSpeed-Ulysses) and v0.16.4 (AutoTP training)";
  f.behaviour.cp_comm = CpComm::kAllToAll;
  f.capabilities.cp_comms = {CpComm::kAllToAll};
  f.capabilities.interleaved_pipeline = f.capabilities.uneven_pipeline_split = false;
  // DeepSpeed-MoE: expert parallelism, no expert tensor parallelism.
  f.capabilities.expert_tensor_parallel = false;
  f.capabilities.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
  f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
  f.behaviour.pipeline_sends_split_since = kAlways;  // its PipelineEngine (no TP of its own)
  f.behaviour.pipeline_transfers_one_at_a_time = true;
  // The model is the user's PyTorch code: its linear layers return the weight gradient to
  // autograd, which adds it into .grad until the engine reduces at the accumulation boundary.
  f.behaviour.grad_accumulation = GradAccumulation::kAutograd;
  Stack s;
  s.fp8_recipe = R::kDelayed;
  // DeepSpeed's own numbers (GitHub releases v0.x); its flash attention is the model code's.
  Stack fa1 = s;
  fa1.attention = A::kFa1;
  // Before PyTorch 2.0's SDPA (2023-03) the model code's attention was matmul-softmax-matmul.
  Stack math = s;
  math.attention = A::kMath;
  for (const auto& [version, date] : DeepSpeedReleases()) {
    const Stack& at = date < Ym(2023, 4) ? math : date < Ym(2023, 11) ? fa1 : s;
    f.versions.push_back(
        Rel(version, date, at, "microsoft/DeepSpeed release tags (v0.x.0; v0.10.2, v0.16.4)"));
  }
  return f;
}

// MaxText and Paxml (JAX/XLA on GPU, NVIDIA's JAX containers): XLA fuses elementwise work,
// collectives are scheduled asynchronously beside compute, cuDNN flash attention
// (attention=cudnn_flash_te); FSDP-style sharding by default; fp8 with delayed scaling.
// `attention_2023` is the 23.08 release's kernel (below).
Framework Jax(const char* name, AttentionKernel attention_2023) {
  Framework f;
  f.name = name;
  f.family = "jax";
  f.description = std::string(name) + " (JAX/XLA): FSDP sharding, XLA fusion, cuDNN attention";
  f.capabilities.interleaved_pipeline = false;
  f.capabilities.uneven_pipeline_split = false;
  f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
  // A remat policy names the tensors a layer keeps and recomputes the rest (MaxText's
  // remat_policy: minimal, save_qkv_proj, save_dot_except_mlpwi, or custom with each named
  // projection on device, offloaded or recomputed; praxis AutodiffCheckpointType:
  // SAVE_QKV_OUT_PROJ, SAVE_DOT_ONLY, ...): recompute by module.
  f.capabilities.recompute_modules = true;
  f.behaviour.default_sharding = S::kFsdp;
  f.behaviour.sequence_parallel_with_tp = true;
  f.behaviour.recompute_only_what_backward_consumes = true;  // jax.checkpoint under XLA
  f.behaviour.step_is_one_program = true;  // the jitted train step, dispatched asynchronously
  Stack s;
  s.compiled = true;
  s.fused_kernels = true;
  s.attention = A::kCudnn;
  s.fp8_recipe = R::kDelayed;
  // NVIDIA JAX-Toolbox containers, by year and month. Before cuDNN flash attention reached
  // JAX (2024), MaxText's 2023 stack keeps FA2's rate: its 2023 runs are on TPU, where the
  // Pallas flash kernel came in October 2023 and the tables do not say which cells used it
  // (data/README.md, maxtext-tpu.csv), so nothing shows a slower kernel. Paxml's 2023 containers
  // had no flash kernel at all: XLA's own attention is matmul, softmax, matmul, and Transformer
  // Engine's JAX attention of 2023 (transformer_engine/jax/flax/transformer.py) fused only
  // sequence lengths 128-512 with 64-wide heads, and only under NVTE_FUSED_ATTN=1 (default 0),
  // which the run scripts of 2023 (google/paxml run_pile_multinode.sh @04516ac) do not set;
  // the 24.04 README is the first to say "Flash attention is enabled by default in the given
  // container" (JAX-Toolbox rosetta/rosetta/projects/pax/README.md @8bfbd170).
  Stack early = s;
  early.attention = attention_2023;
  const char* src = "NVIDIA/JAX-Toolbox container tags (YY.MM)";
  AddReleases(&f.versions, early, {{"23.08", Ym(2023, 8)}}, src);
  AddReleases(&f.versions, s, {{"24.04", Ym(2024, 4)}, {"25.01", Ym(2025, 1)}}, src);
  return f;
}

// Google's MaxText: the JAX stack, its own release tags beside JAX-Toolbox's containers, and
// context parallelism on the mesh's `context` axis (ici_context_parallelism), whose exchange is
// context_parallel_strategy (src/maxtext/configs/base.yml: "all_gather" by default):
// - all_gather: GPUs from AI-Hypercomputer/maxtext pull request 1133 (c4f7060d, 2025-04-11:
//   Transformer Engine's all-gather attention, whose collective is exposed, TransformerEngine
//   pull request 1106), TPUs from 1445 (18ccd374, 2025-05-02);
// - ring: GPUs from 2600 (9d0c860c, 2025-11-06, Transformer Engine's ring attention), TPUs from
//   4266 (a3750729, 2026-07-17, Tokamax ring attention);
// - ulysses (a2a) and usp (Ulysses over the ring, a2a+p2p): TPUs only (configs/types.py refuses
//   them elsewhere), from 4687 (2bc4aa5a, 2026-08-10) and 0998c01c (2026-08-13).
// Its older `sequence` axis (attention split by heads, the rest by sequence) is another thing.
Framework MaxText() {
  Framework f = Jax("maxtext", A::kFa2);
  f.behaviour.cp_comm = CpComm::kAllGather;
  f.capabilities.cp_comms = {CpComm::kAllGather, CpComm::kRing, CpComm::kAllToAll,
                             CpComm::kHierarchical};
  f.capabilities.cp_comm_platforms = {{CpComm::kAllGather, Ym(2025, 4), Ym(2025, 5)},
                                      {CpComm::kRing, Ym(2025, 11), Ym(2026, 7)},
                                      {CpComm::kAllToAll, kNeverOn, Ym(2026, 8)},
                                      {CpComm::kHierarchical, kNeverOn, Ym(2026, 8)}};
  CapabilityDates& since = f.capabilities.since;
  since.context_parallel = Ym(2025, 4);
  since.source =
      "AI-Hypercomputer/maxtext: the merges of pull requests 1133, 1445, 2600, 4266 and 4687, "
      "and 0998c01c (context_parallel_strategy)";
  // Its release tags maxtext-v0.1.0 (2025-09-15) to maxtext-v0.2.4 (2026-08-21), dated by their
  // commits, with today's JAX stack.
  AddReleases(&f.versions, f.versions.back().defaults,
              {{"0.1", Ym(2025, 9)},
               {"0.2", Ym(2026, 3)},
               {"0.2.1", Ym(2026, 3)},
               {"0.2.2", Ym(2026, 5)},
               {"0.2.3", Ym(2026, 6)},
               {"0.2.4", Ym(2026, 8)}},
              "AI-Hypercomputer/maxtext release tags maxtext-v0.1.0 to maxtext-v0.2.4");
  SortByDate(&f.versions);
  return f;
}

// Plain PyTorch FSDP (FSDP1's FullyShardedDataParallel before 2.4, FSDP2's fully_shard
// after): eager, SDPA attention, full sharding by default; versions are PyTorch's.
Framework PytorchFsdp() {
  Framework f;
  f.name = "fsdp";
  f.family = "pytorch-fsdp";
  f.description = "plain PyTorch FSDP/FSDP2: eager, SDPA; versions are PyTorch's";
  DataParallelOnly(&f.capabilities, {S::kDdp, S::kZero2, S::kFsdp, S::kHsdp});
  f.capabilities.expert_tensor_parallel = false;
  f.behaviour.default_sharding = S::kFsdp;
  DatePytorchSharding(&f.capabilities);
  f.versions = PytorchReleases(Stack());
  return f;
}

// Hugging Face nanotron: 3D parallelism (TP, PP with any split of pipeline blocks,
// ZeRO-1 DP), flash-attn 2 and flash-attn's fused kernels; eager. Asynchronous TP linears are
// opt-in (ParallelismArgs.tp_linear_async_communication defaults to False,
// src/nanotron/config/parallelism_config.py @2411b022; examples/config_tiny_llama.yaml turns it
// on with tp_mode REDUCE_SCATTER). The Llama model (src/nanotron/models/llama.py @c2528430)
// normalises with TritonRMSNorm (flash-attn's Triton layer_norm_fn, nn/layer_norm.py) and applies
// rotary embedding in training with flash_attn.layers.rotary's fused kernel: the norm and RoPE
// chains eager PyTorch prices op by op are single kernels here, so its stack is hand-fused (its
// SwiGLU, act(gate) * up, stays two kernels, the smallest of the chains).
Framework Nanotron() {
  Framework f;
  f.name = "nanotron";
  f.family = "pytorch-3d";
  f.description =
      "Hugging Face nanotron: TP (SP opt-in), PP, ZeRO-1; flash-attn 2, fused norm/RoPE";
  f.capabilities.context_parallel = false;
  f.capabilities.interleaved_pipeline = false;
  f.capabilities.flexible_pipeline_layout = true;
  f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
  f.behaviour.default_sharding = S::kZero1;
  // tp_mode defaults to ALL_REDUCE (ParallelismArgs.__post_init__); REDUCE_SCATTER is its
  // sequence parallelism.
  f.behaviour.sequence_parallel_with_tp = false;
  // tp_linear_async_communication: asynchronous collectives around unchunked GEMMs.
  f.behaviour.tp_overlap_own_shard_only = true;
  // accumulate_grad_in_fp32 (on in the benchmark configs: the sweep CSV's column):
  // FP32GradientAccumulator adds each micro-batch's bf16 gradients into an fp32 buffer
  // (src/nanotron/optim/gradient_accumulator.py).
  f.behaviour.grad_accumulation = GradAccumulation::kFp32Buffer;
  f.behaviour.ddp_bucket_bytes = kTorchDdpBucketBytes;  // ddp_bucket_cap_mb 25
  Stack s;
  s.fused_kernels = true;
  // Its release tags v0.1-v0.5 (2024-02-08, 02-16, 02-22, 03-04 and 04-19: the tagged commits'
  // dates; the README's benchmark chart names v0.5), before the dated snapshots.
  AddReleases(&f.versions, s,
              {{"0.1", Ym(2024, 2)},
               {"0.2", Ym(2024, 2)},
               {"0.3", Ym(2024, 2)},
               {"0.4", Ym(2024, 3)},
               {"0.5", Ym(2024, 4)}},
              "huggingface/nanotron release tags v0.1-v0.5");
  AddReleases(&f.versions, s, {{"2024.06", Ym(2024, 6)}, {"2025.03", Ym(2025, 3)}},
              "huggingface/nanotron README and configs; src/nanotron/models/llama.py");
  return f;
}

// AI2's OLMo-core: FSDP2 (HSDP) with TP/CP and pipeline options, torch.compile and flash-attn
// in its training configs (src/scripts/train/*.py: compile_model=True).
Framework OlmoCore() {
  Framework f;
  f.name = "olmo-core";
  f.family = "pytorch-fsdp";
  f.description = "AI2 OLMo-core: FSDP2/HSDP + TP/CP, torch.compile, flash-attn 2";
  f.capabilities.interleaved_pipeline = false;
  f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
  f.behaviour.default_sharding = S::kFsdp;
  f.behaviour.sequence_parallel_with_tp = true;
  // Its pipeline is torch.distributed.pipelining's PipelineStage and schedules
  // (src/olmo_core/distributed/parallel/pipeline_parallel.py @8ec12eb7, PipelineSchedule).
  f.behaviour.pipeline_reduces_once_since = kAlways;
  // Context parallelism from v2.0.0 (allenai/OLMo-core 7f7c4894, 2025-03-02, "Add support for
  // context parallelism (round 2)"): ring-flash-attn's zig-zag ring
  // (TransformerContextParallelConfig load_balancer zig_zag, the default) or its llama3 all-gather,
  // which gathers one key/value head at a time beside the attention of the last (heads_k_stride=1),
  // so it is priced as the ring; Ulysses all-to-alls (UlyssesContextParallelStyle) from v2.5.0
  // (64dec1c6, 2026-01-06, "Ulysses CP Support"; tagged 2026-04-01).
  f.capabilities.cp_comms = {CpComm::kRing, CpComm::kAllToAll};
  f.capabilities.since.context_parallel = Ym(2025, 3);
  f.capabilities.since.cp_all_to_all = Ym(2026, 4);
  f.capabilities.since.source =
      "allenai/OLMo-core tags v2.0.0 (ring attention) and v2.5.0 (Ulysses)";
  f.behaviour.separate_projections = true;
  Stack s;
  s.compiled = true;
  s.fp8_recipe = R::kTensorwise;  // torchao float8, as torchtitan
  // Its release tags from v1.0.0, the first with the trainer and the training scripts (v0.1.0,
  // 2024-06, was the distributed library alone): each minor release's first tag, dated by its
  // commit (v1.0.0 2024-08-26 ... v1.9.0 2025-03-10, v2.0.0 2025-03-12 ... v2.5.0 2026-04-02).
  AddReleases(&f.versions, s,
              {{"1.0", Ym(2024, 8)},
               {"1.1", Ym(2024, 9)},
               {"1.2", Ym(2024, 9)},
               {"1.3", Ym(2024, 9)},
               {"1.4", Ym(2024, 10)},
               {"1.5", Ym(2024, 10)},
               {"1.6", Ym(2024, 11)},
               {"1.7", Ym(2024, 11)},
               {"1.8", Ym(2025, 1)},
               {"1.9", Ym(2025, 3)},
               {"2.0", Ym(2025, 3)},
               {"2.1", Ym(2025, 4)},
               {"2.2", Ym(2025, 8)},
               {"2.3", Ym(2025, 10)},
               {"2.4", Ym(2025, 11)},
               {"2.5", Ym(2026, 4)}},
              "allenai/OLMo-core release tags v1.0.0-v2.5.0");
  AddReleases(&f.versions, s, {{"2024.12", Ym(2024, 12)}, {"2025.06", Ym(2025, 6)}},
              "allenai/OLMo-core training scripts");
  SortByDate(&f.versions);
  return f;
}

// AMD Primus (Primus-Megatron): Megatron-Core on ROCm with ROCm Transformer Engine and CK
// flash attention (AMD ROCm Primus docs).
Framework Primus() {
  Framework f = MegatronCore("primus", "AMD Primus: Megatron-Core on ROCm, ROCm TE, CK attention");
  Stack s;
  s.fused_kernels = true;
  s.attention = A::kFa2;  // CK flash attention: the FA2 algorithm
  s.fp8_recipe = R::kDelayed;
  AddReleases(&f.versions, s, {{"25.04", Ym(2025, 4)}, {"25.09", Ym(2025, 9)}},
              "AMD ROCm Primus documentation (rocm/primus container tags)");
  // rocm/primus v26.2 (ROCm 7.2.0): the stack of AMD's MLPerf Training v6.0 Llama 3.1 8B
  // submissions (system descriptions AMD/systems/MI35{0,5}X_EPYC_9575F_primus.json:
  // framework_name "v26.2_primus", ROCm 7.2.0; mlcommons/training_results_v6.0 as stored in
  // the fork Richardyu114/training_results_v6.0 @eabf23a); AMD-AGI/Primus branch release/v26.2
  // ("Primus docker release/v26.2 (#579)", 7f1dae46 of 2026-03-13). Dated by its name, as
  // 25.04 and 25.09 are.
  AddReleases(&f.versions, s, {{"26.02", Ym(2026, 2)}},
              "AMD-AGI/Primus release/v26.2 (rocm/primus:v26.2); MLPerf Training v6.0 AMD "
              "system descriptions (v26.2_primus, ROCm 7.2.0)");
  return f;
}

// PaddlePaddle / PaddleNLP: TP, PP (interleaved), sharding stages 1-3; fused RMSNorm,
// RoPE and SwiGLU kernels and flash attention 2 (PaddleNLP llm/config pretrain arguments
// use_fused_rms_norm, use_fused_rope, use_flash_attention).
Framework PaddlePaddle() {
  Framework f;
  f.name = "paddlepaddle";
  f.family = "paddle";
  f.description = "PaddlePaddle / PaddleNLP: TP (SP opt-in), PP, sharding 1-3; fused kernels, FA2";
  f.capabilities.context_parallel = false;
  f.capabilities.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
  f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1, S::kZero2};
  f.behaviour.default_sharding = S::kZero1;
  // Sequence parallelism is opt-in (sequence_parallel, default False); PaddleNLP's A100 pretrain
  // configs (llm/llama/pretrain-*-tp2sd4_stage2.json, the runs of llm/docs/pretrain.rst
  // @03f3eb2a) leave it off at TP 2.
  f.behaviour.sequence_parallel_with_tp = false;
  Stack s;
  s.fused_kernels = true;
  // Sharding stage 2 reduces each gradient bucket in its backward hook on the compute stream
  // (Paddle group_sharded_stage2.py _get_reduce_fn: dist.reduce(..., sync_op=not
  // self._reduce_overlap)); PaddleNLP's trainer turns the overlap on only when
  // sharding_parallel_config names enable_stage2_overlap (stage 1's broadcast overlap likewise
  // enable_stage1_broadcast_overlap), and its A100 pretrain configs name neither.
  s.dp_overlap = false;
  AddReleases(&f.versions, s, {{"2.6", Ym(2023, 12)}, {"3.0", Ym(2025, 3)}},
              "PaddlePaddle releases; PaddleNLP llm pretrain configs and trainer");
  return f;
}

// Colossal-AI: ZeRO / Gemini with TP, PP (HybridParallelPlugin), flash attention 2 and its
// fused kernels (enable_fused_normalization, enable_flash_attention in the Llama examples).
Framework ColossalAi() {
  Framework f;
  f.name = "colossal-ai";
  f.family = "colossal";
  f.description =
      "Colossal-AI: HybridParallelPlugin (TP, SP opt-in, PP, ZeRO, Ulysses and ring attention), "
      "FA2, fused norms";
  f.capabilities.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
  f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
  f.behaviour.default_sharding = S::kZero1;
  // HybridParallelPlugin(enable_sequence_parallelism=False) by default
  // (colossalai/booster/plugin/hybrid_parallel_plugin.py @4f9953be); the Llama benchmark turns it
  // on only with --sp > 1 (examples/language/llama/benchmark.py).
  f.behaviour.sequence_parallel_with_tp = false;
  // Context parallelism is the plugin's sp_size beside tp, pp and dp: sequence_parallelism_mode
  // "all_to_all" (DeepSpeed-Ulysses, the mode when none is named) from v0.3.7 (2024-04-27), and
  // "ring_attn" (zigzag ring attention) from v0.4.3 (2024-09-10): SUPPORT_SP_MODE in
  // hybrid_parallel_plugin.py at those tags. Its "split_gather" and "ring" modes are the
  // sequence parallelism beside TP.
  f.behaviour.cp_comm = CpComm::kAllToAll;
  f.capabilities.cp_comms = {CpComm::kAllToAll, CpComm::kRing};
  f.capabilities.since.context_parallel = Ym(2024, 4);
  f.capabilities.since.cp_ring = Ym(2024, 9);
  f.capabilities.since.source =
      "hpcaitech/ColossalAI tags v0.3.7 and v0.4.3 (HybridParallelPlugin SUPPORT_SP_MODE)";
  Stack s;
  s.fused_kernels = true;
  // Gemini (the ZeRO-3-like chunk manager) in 0.3 gathers a parameter chunk on access and
  // reduce-scatters a gradient chunk in its hook, both blocking on the compute stream
  // (colossalai/zero/gemini chunk/chunk.py __gather / reduce and gemini_ddp.py grad_handle at
  // v0.3.1): no DP overlap. 0.4 reduces asynchronously (#5713, GeminiPlugin
  // enable_async_reduce=True, first tagged in v0.3.8) and can prefetch gathers (#5781).
  Stack gemini_sync = s;
  gemini_sync.dp_overlap = false;
  AddReleases(&f.versions, gemini_sync, {{"0.3", Ym(2023, 6)}},
              "hpcaitech/ColossalAI v0.3.1 colossalai/zero/gemini (blocking chunk collectives)");
  AddReleases(&f.versions, gemini_sync, {{"0.3.7", Ym(2024, 4)}},
              "hpcaitech/ColossalAI v0.3.7 (2024-04-27): Ulysses sequence parallelism, Gemini's "
              "reduce still blocking (#5713 came in v0.3.8)");
  AddReleases(&f.versions, s, {{"0.4", Ym(2024, 7)}},
              "hpcaitech/ColossalAI v0.4.0 (#5713 async grad chunk reduce, #5781 prefetch)");
  AddReleases(&f.versions, s, {{"0.4.3", Ym(2024, 9)}},
              "hpcaitech/ColossalAI v0.4.3 (2024-09-10): ring attention (ring_attn)");
  AddReleases(&f.versions, s, {{"0.5", Ym(2025, 5)}}, "hpcaitech/ColossalAI v0.5.0 (2025-05-28)");
  return f;
}

// DeepSeek's HAI-LLM as it trained DeepSeek-V3 (DeepSeek-V3 Technical Report, arXiv
// 2412.19437, sections 3.2-3.3): the DualPipe schedule (deepseek-ai/DualPipe README: two
// stages a GPU, paired forward and backward chunks hiding each other's all-to-alls), expert
// parallelism with node-limited dispatch kernels that send a token over InfiniBand once per
// node and forward it over NVLink (DeepEP; the dpsk::ep::internode dispatch and combine
// kernels of deepseek-ai/profile-data train.json, EP64 TP1 on H800), ZeRO-1 data parallelism,
// fp8 GEMMs with 1x128 activation tiles and 128x128 weight blocks (blockwise), and
// FlashAttention-3's Hopper kernels (train.json's flash::compute_attn_ws and FlashAttnBwd).
// Gradients accumulate in fp32 (the report keeps weight gradients in higher precision).
Framework HaiLlm() {
  Framework f;
  f.name = "hai-llm";
  f.family = "deepseek";
  f.description = "DeepSeek HAI-LLM: DualPipe PP, EP with node-limited dispatch, ZeRO-1, fp8";
  f.capabilities.interleaved_pipeline = false;  // DualPipe is its own schedule
  f.capabilities.flexible_pipeline_layout = true;
  f.capabilities.context_parallel = false;
  f.capabilities.expert_tensor_parallel = false;
  f.capabilities.recompute_modules = true;  // norms, MLA up-projections (3.2.3), SwiGLU
  f.capabilities.shardings = f.capabilities.pipeline_shardings = {S::kDdp, S::kZero1};
  f.behaviour.default_sharding = S::kZero1;
  f.behaviour.sequence_parallel_with_tp = true;
  f.behaviour.pipeline_schedule = PipelineSchedule::kDualPipe;
  f.behaviour.selective_modules = Bit(RecomputeModule::kLayernorm) |
                                  Bit(RecomputeModule::kMlaUpProj) | Bit(RecomputeModule::kMoeAct);
  f.behaviour.moe_swiglu_input_fp8 = true;
  f.behaviour.bf16_optimizer_moments = true;
  Stack s;
  s.fused_kernels = true;
  s.attention = A::kFa3;
  s.fp8_recipe = R::kBlockwise;
  s.fused_dispatch = true;
  s.ep_comm_overlap = true;
  AddReleases(&f.versions, s, {{"2024.12", Ym(2024, 12)}},
              "DeepSeek-V3 Technical Report (arXiv 2412.19437, 2024-12); deepseek-ai/DualPipe "
              "and deepseek-ai/profile-data READMEs");
  return f;
}

// The table. Defaults are each framework's documented out-of-the-box settings for LLM
// pre-training, as of the version named; a run that changed one says so in its stack.
// Framework::capability_eras: the capabilities from each date of `since` on, oldest first,
// after the ones before every date. An exchange dated by kind of accelerator
// (cp_comm_platforms) dates from the earlier of its two months.
void AddCapabilityEras(Framework* f) {
  for (const CpCommPlatforms& e : f->capabilities.cp_comm_platforms) {
    f->capabilities.since.Of(e.comm) = std::min(e.gpu_since, e.tpu_since);
  }
  std::vector<double> dates;
  for (const auto& [name, date] : f->capabilities.since.Named()) {
    if (date > 0) dates.push_back(date);
  }
  if (dates.empty()) return;
  std::sort(dates.begin(), dates.end());
  dates.erase(std::unique(dates.begin(), dates.end()), dates.end());
  f->capability_eras.emplace_back(-std::numeric_limits<double>::infinity(),
                                  f->capabilities.At(std::nextafter(dates.front(), 0.0)));
  for (double date : dates) f->capability_eras.emplace_back(date, f->capabilities.At(date));
}

std::vector<Framework>* BuildTable() {
  Framework megatron = MegatronLm();
  Framework nemo = Nemo();
  AddNemoContainers(nemo, &megatron);
  auto* table = new std::vector<Framework>{
      GenericPytorch(), std::move(megatron),
      std::move(nemo),  MegatronDeepSpeed(),
      Torchtitan(),     ComposerFsdp(),
      FmsFsdp(),        DeepSpeed(),
      MaxText(),        Jax("paxml", A::kMath),
      PytorchFsdp(),    Nanotron(),
      OlmoCore(),       Primus(),
      PaddlePaddle(),   ColossalAi(),
      HaiLlm(),         AutoModel(),
  };
  for (Framework& f : *table) AddCapabilityEras(&f);
  return table;
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
    case R::kMxfp4:
      return "mxfp4";
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
    case A::kFa1:
      return "fa1";
    case A::kTriton:
      return "triton";
  }
  return "";
}

absl::string_view ToString(CpComm c) {
  switch (c) {
    case CpComm::kRing:
      return "p2p";
    case CpComm::kAllToAll:
      return "a2a";
    case CpComm::kAllGather:
      return "allgather";
    case CpComm::kHierarchical:
      return "a2a+p2p";
  }
  return "";
}

namespace {

// The recipes by their table names (ToString), in the order the "known" lists name them.
constexpr Fp8Recipe kRecipes[] = {R::kDelayed, R::kTensorwise, R::kRowwise, R::kBlockwise,
                                  R::kMxfp8,   R::kNvfp4,      R::kMxfp4};
// Another name users write for one of a table's values.
template <typename T>
struct NameAlias {
  absl::string_view alias;
  T value;
};
// Transformer Engine's and Megatron-Bridge's names for the same recipes.
constexpr NameAlias<Fp8Recipe> kRecipeAliases[] = {{"current", R::kTensorwise},
                                                   {"cs", R::kTensorwise}};

// "a, b, c, or as written elsewhere: x, y": a table's names (ToString), then the other names its
// parser takes, for error messages.
template <typename T, size_t N, size_t M>
std::string NamesList(const T (&table)[N], const NameAlias<T> (&aliases)[M]) {
  std::vector<absl::string_view> names, others;
  for (const T& t : table) names.push_back(ToString(t));
  for (const NameAlias<T>& a : aliases) others.push_back(a.alias);
  return absl::StrCat(absl::StrJoin(names, ", "),
                      ", or as written elsewhere: ", absl::StrJoin(others, ", "));
}

// The value a name (as `normalise` writes it) names: a table name (ToString) or an alias.
template <typename T, size_t N, size_t M, typename Normalise>
bool FindName(absl::string_view name, const T (&table)[N], const NameAlias<T> (&aliases)[M],
              Normalise normalise, T* out) {
  const std::string v = normalise(name);
  for (const T& t : table) {
    if (v == ToString(t)) {
      *out = t;
      return true;
    }
  }
  for (const NameAlias<T>& a : aliases) {
    if (v == normalise(a.alias)) {
      *out = a.value;
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseFp8Recipe(absl::string_view s, Fp8Recipe* out) {
  if (s.empty()) {
    *out = R::kNone;
    return true;
  }
  return FindName(
      s, kRecipes, kRecipeAliases, [](absl::string_view v) { return absl::AsciiStrToLower(v); },
      out);
}

absl::string_view Fp8RecipeNames() {
  static const std::string* const kNames = new std::string(NamesList(kRecipes, kRecipeAliases));
  return *kNames;
}

namespace {

// A name as users write it, in the form the tables compare: lower case, trimmed, '-' for '_' and
// ' ' ("Megatron_DeepSpeed", "Colossal AI", "flash_attention_2").
std::string NameKey(absl::string_view name) {
  std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  std::replace(key.begin(), key.end(), '_', '-');
  std::replace(key.begin(), key.end(), ' ', '-');
  return key;
}

// The table's kernels in the order the "known" lists name them.
constexpr AttentionKernel kKernels[] = {A::kMath, A::kFa1, A::kTriton, A::kFa2, A::kFa3, A::kCudnn};
// The other names users write for the kernels, as they write them. PyTorch SDPA's flash backend
// is flash-attention 2 (from PyTorch 2.2; a release's own default says FA1 where it was);
// Hugging Face Transformers' attn_implementation "eager" is its matmul-softmax-matmul (unfused),
// "flash_attention_2/3" the flash-attn packages; Transformer Engine's fused attention runs
// cuDNN's kernels.
constexpr NameAlias<AttentionKernel> kKernelAliases[] = {{"sdpa", A::kFa2},
                                                         {"eager", A::kMath},
                                                         {"flash_attention_2", A::kFa2},
                                                         {"flash_attention_3", A::kFa3},
                                                         {"flash_attn", A::kFa2},
                                                         {"flash", A::kFa2},
                                                         {"te", A::kCudnn},
                                                         {"transformer_engine", A::kCudnn}};

}  // namespace

bool ParseAttentionKernel(absl::string_view s, AttentionKernel* out) {
  if (NameKey(s).empty()) {
    *out = A::kDefault;
    return true;
  }
  return FindName(s, kKernels, kKernelAliases, NameKey, out);
}

absl::string_view AttentionKernelNames() {
  static const std::string* const kNames = new std::string(NamesList(kKernels, kKernelAliases));
  return *kNames;
}

namespace {

// Context parallelism's exchanges by Megatron-Core's names (ToString), and the names the
// literature gives them: the ring (ring attention), DeepSpeed-Ulysses, Transformer Engine's
// spelling of the all-gather ("all_gather", its docstrings) and the two-level exchange.
constexpr CpComm kCpComms[] = {CpComm::kRing, CpComm::kAllToAll, CpComm::kAllGather,
                               CpComm::kHierarchical};
constexpr NameAlias<CpComm> kCpCommAliases[] = {{"ring", CpComm::kRing},
                                                {"ulysses", CpComm::kAllToAll},
                                                {"all_gather", CpComm::kAllGather},
                                                {"hierarchical", CpComm::kHierarchical}};

}  // namespace

bool ParseCpComm(absl::string_view s, CpComm* out) {
  return FindName(s, kCpComms, kCpCommAliases, NameKey, out);
}

absl::string_view CpCommNames() {
  static const std::string* const kNames = new std::string(NamesList(kCpComms, kCpCommAliases));
  return *kNames;
}

const std::vector<Framework>& Frameworks() {
  static const std::vector<Framework>* const kTable = BuildTable();
  return *kTable;
}

std::vector<std::pair<const char*, double>> CapabilityDates::Named() const {
  return {{"tensor parallelism", tensor_parallel},
          {"pipeline parallelism", pipeline_parallel},
          {"an interleaved pipeline schedule", interleaved_pipeline},
          {"sequence parallelism", sequence_parallel},
          {"the distributed optimizer (zero1)", zero1},
          {"context parallelism", context_parallel},
          {"context parallelism by a2a", cp_all_to_all},
          {"context parallelism by allgather", cp_all_gather},
          {"context parallelism by a2a+p2p", cp_hierarchical},
          {"context parallelism by p2p (the ring)", cp_ring},
          {"expert parallelism", expert_parallel},
          {"activation CPU offloading", cpu_offload},
          {"uneven first and last pipeline stages", uneven_pipeline_split},
          {"FSDP (fsdp, hsdp)", fsdp},
          {"hybrid-sharded FSDP (hsdp)", hsdp},
          {"recompute by module", recompute_modules}};
}

double& CapabilityDates::Of(CpComm c) {
  switch (c) {
    case CpComm::kAllToAll:
      return cp_all_to_all;
    case CpComm::kAllGather:
      return cp_all_gather;
    case CpComm::kHierarchical:
      return cp_hierarchical;
    case CpComm::kRing:
      break;
  }
  return cp_ring;
}

FrameworkCapabilities FrameworkCapabilities::At(double date) const {
  FrameworkCapabilities c = *this;
  if (date <= 0) return c;
  auto later = [date](double since) { return since > date; };
  auto drop = [](std::vector<Sharding>* list, Sharding s) { std::erase(*list, s); };
  if (later(since.zero1)) {
    drop(&c.shardings, Sharding::kZero1);
    drop(&c.pipeline_shardings, Sharding::kZero1);
  }
  if (later(since.fsdp)) {
    drop(&c.shardings, Sharding::kFsdp);
    drop(&c.pipeline_shardings, Sharding::kFsdp);
  }
  if (later(since.fsdp) || later(since.hsdp)) {
    drop(&c.shardings, Sharding::kHsdp);
    drop(&c.pipeline_shardings, Sharding::kHsdp);
  }
  if (later(since.tensor_parallel)) c.tensor_parallel = false;
  if (later(since.pipeline_parallel)) c.pipeline_parallel = false;
  if (later(since.interleaved_pipeline)) c.interleaved_pipeline = false;
  if (later(since.sequence_parallel)) c.sequence_parallel = false;
  if (later(since.context_parallel)) c.context_parallel = false;
  std::erase_if(c.cp_comms, [&](CpComm comm) { return later(since.Of(comm)); });
  if (later(since.expert_parallel)) c.expert_parallel = false;
  if (later(since.uneven_pipeline_split)) c.uneven_pipeline_split = false;
  if (later(since.recompute_modules)) c.recompute_modules = false;
  if (later(since.cpu_offload)) c.cpu_offload = false;
  return c;
}

const FrameworkCapabilities& CapabilitiesAt(const Framework& framework, double date) {
  const auto& eras = framework.capability_eras;
  if (date <= 0 || eras.empty() || date >= eras.back().first) return framework.capabilities;
  const FrameworkCapabilities* out = &eras.front().second;
  for (const auto& [from, caps] : eras) {
    if (from > date) break;
    out = &caps;
  }
  return *out;
}

namespace {

// The other names users write for the table's frameworks: their projects' own names. An umbrella
// name covers several frameworks of the table and is priced as one of them only where no other
// word of a name names one (FindByWords: "JAX-Toolbox Pax" is paxml).
struct FrameworkAlias {
  absl::string_view alias, name;
  bool umbrella = false;
};
constexpr FrameworkAlias kFrameworkAliases[] = {{"megatron-lm", "megatron"},
                                                {"megatron-core", "megatron"},
                                                {"mcore", "megatron"},
                                                {"megatron-bridge", "nemo"},
                                                {"nemo-megatron", "nemo"},
                                                {"nemo-framework", "nemo"},
                                                {"nemo-automodel", "automodel"},
                                                {"llm-foundry", "composer-fsdp"},
                                                {"composer", "composer-fsdp"},
                                                // Composer's and llm-foundry's maker, as users
                                                // name its stack.
                                                {"mosaicml", "composer-fsdp"},
                                                {"pytorch-fsdp", "fsdp"},
                                                {"fsdp2", "fsdp"},
                                                // PyTorch's torchtune: its distributed recipes
                                                // shard with FSDP2's fully_shard
                                                // (recipes/full_finetune_distributed.py).
                                                {"torchtune", "fsdp"},
                                                {"pytorch", ""},
                                                {"torch", ""},
                                                {"generic", ""},
                                                {"colossalai", "colossal-ai"},
                                                {"paddle", "paddlepaddle"},
                                                {"paddlenlp", "paddlepaddle"},
                                                {"olmo", "olmo-core"},
                                                {"pax", "paxml"},
                                                // NVIDIA's JAX-Toolbox: its container tags number
                                                // the table's maxtext and paxml releases; the name
                                                // alone is priced as MaxText (Pax before 24.04 ran
                                                // its attention unfused: name paxml for it).
                                                {"jax-toolbox", "maxtext", true},
                                                {"fms", "fms-fsdp"},
                                                // EleutherAI's GPT-NeoX: Megatron's model
                                                // parallelism on DeepSpeed's engine (its README),
                                                // as the project's Pythia run is recorded.
                                                {"gpt-neox", "megatron-deepspeed"},
                                                {"deepspeed-megatron", "megatron-deepspeed"},
                                                {"amd-primus", "primus"},
                                                // The framework the DeepSeek-V3 report names; users
                                                // name it by its maker.
                                                {"deepseek", "hai-llm"}};

}  // namespace

const Framework* FindFramework(absl::string_view name) {
  // A table name as written (what a resolved scenario carries: the path every prediction takes).
  for (const Framework& f : Frameworks()) {
    if (f.name == name) return &f;
  }
  // Written any case, with '_' or ' ' for '-' ("Megatron_DeepSpeed", "Colossal AI").
  std::string key = NameKey(name);
  for (const FrameworkAlias& a : kFrameworkAliases) {
    if (key == a.alias) {
      key = std::string(a.name);
      break;
    }
  }
  for (const Framework& f : Frameworks()) {  // the names are lower case
    if (f.name == key) return &f;
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

double NewestSoftwareDate() {
  static const double kNewest = [] {
    double newest = 0;
    for (const Framework& f : Frameworks()) {
      for (const FrameworkVersion& v : f.versions) newest = std::max(newest, v.date);
    }
    return newest;
  }();
  return kNewest;
}

namespace {

// The version token of what a user wrote: the tag of an image reference
// ("nvcr.io/nvidia/nemo:24.09" -> "24.09") or the last word with a digit in it ("JAX-Toolbox
// 24.04", "DeepSpeed v0.14.4").
absl::string_view VersionToken(absl::string_view v) {
  if (v.empty()) return v;
  const size_t colon = v.rfind(':');
  if (colon != absl::string_view::npos && colon + 1 < v.size()) v = v.substr(colon + 1);
  absl::string_view token = v;
  for (absl::string_view word : absl::StrSplit(v, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    if (std::any_of(word.begin(), word.end(), absl::ascii_isdigit)) token = word;
  }
  return token;
}

// A version as its users write it, without the decoration tags and builds add: a tag's prefix
// ("v2.6", "core_r0.8.0", "r24.09"); a container's or wheel's suffix after the dotted numbers
// ("24.07-py3", "2.4.0+cu121", "0.13.0rc2", "2.5.0.dev20240901"); a date's dashes
// ("2025-01-15" -> "2025.01").
std::string Normalise(absl::string_view v) {
  std::string s = absl::AsciiStrToLower(VersionToken(absl::StripAsciiWhitespace(v)));
  for (absl::string_view prefix : {"core_r", "core_v", "core-", "release-", "v", "r"}) {
    if (absl::StartsWith(s, prefix) && s.size() > prefix.size() &&
        absl::ascii_isdigit(s[prefix.size()])) {
      s = s.substr(prefix.size());
      break;
    }
  }
  // A calendar date: its year and month ("yyyy-mm", "yyyy-mm-dd").
  int year = 0, month = 0;
  if (s.size() >= 7 && s[4] == '-' && (s.size() == 7 || s[7] == '-') &&
      absl::SimpleAtoi(absl::string_view(s).substr(0, 4), &year) && year >= 2000 &&
      absl::SimpleAtoi(absl::string_view(s).substr(5, 2), &month) && month >= 1 && month <= 12) {
    return absl::StrFormat("%d.%02d", year, month);
  }
  // The dotted numbers a suffix follows ("0.13.0rc2" -> "0.13.0", "2.5.0.dev1" -> "2.5.0").
  size_t end = 0;
  while (end < s.size() && absl::ascii_isdigit(s[end])) {
    while (end < s.size() && absl::ascii_isdigit(s[end])) ++end;
    if (end + 1 < s.size() && s[end] == '.' && absl::ascii_isdigit(s[end + 1])) ++end;
  }
  return end > 0 ? s.substr(0, end) : s;
}

// How a version is numbered: a date ("24.09" container, "2024.12" snapshot) or the framework's
// own release numbers ("0.8", "2.4"); 0 when it is not dotted numbers.
enum class Numbering { kNone, kDate, kOwn };

Numbering NumberingOf(const std::vector<int>& parts, bool all_numbers) {
  if (parts.empty() || !all_numbers) return Numbering::kNone;
  if (parts[0] >= 2000 ||
      (parts[0] >= 20 && parts[0] < 100 && parts.size() >= 2 && parts[1] >= 1 && parts[1] <= 12)) {
    return Numbering::kDate;
  }
  return parts[0] < 20 ? Numbering::kOwn : Numbering::kNone;
}

// The decimal year of a date-numbered version (its month's middle).
double DateOf(const std::vector<int>& parts) {
  const int year = parts[0] >= 2000 ? parts[0] : 2000 + parts[0];
  const int month = parts.size() >= 2 ? std::clamp(parts[1], 1, 12) : 6;
  return Ym(year, month);
}

bool AllNumbers(absl::string_view v) {
  for (absl::string_view part : absl::StrSplit(v, '.')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 0) return false;
  }
  return true;
}

// How a normalised version is numbered (Normalise first).
Numbering NumberingOf(absl::string_view v) { return NumberingOf(VersionParts(v), AllNumbers(v)); }

// Where a version that is not a release's exact name falls among the releases.
struct Placement {
  const FrameworkVersion* release = nullptr;  // the release it resolves to
  enum Why { kNearestBefore, kBeforeSeries, kOlderThanAll, kNoSeries, kUnreadable } why;
  const FrameworkVersion* series_oldest = nullptr;  // kBeforeSeries: that series' first release
};

// Which releases a date is placed among first: a container number ("26.02") among the dated
// releases (containers and snapshots); a calendar date ("2024.05") or an own number before its
// series among the framework's own, not those it takes from another (FrameworkVersion::from).
enum class Prefer { kDated, kOwn };

// A container or dated version: the newest preferred release not after its date; where none is,
// the newest release of any numbering not after it.
Placement PlaceByDate(const std::vector<FrameworkVersion>& releases, double date, Prefer prefer) {
  Placement out{nullptr, Placement::kNearestBefore};
  auto preferred = [prefer](const FrameworkVersion& r) {
    return prefer == Prefer::kDated ? r.dated : r.from.empty();
  };
  for (const bool preferred_only : {true, false}) {
    for (const FrameworkVersion& r : releases) {
      if (r.date > date || (preferred_only && !preferred(r))) continue;
      if (out.release == nullptr || r.date >= out.release->date) out.release = &r;
    }
    if (out.release != nullptr) return out;
  }
  // Older than every release: the oldest, a shared date taking the release listed last as above.
  out.why = Placement::kOlderThanAll;
  for (const FrameworkVersion& r : releases) {
    if (out.release == nullptr || r.date <= out.release->date) out.release = &r;
  }
  return out;
}

// The oldest release numbered in the framework's own numbering, of any series; nullptr if none.
const FrameworkVersion* OldestOwnRelease(const std::vector<FrameworkVersion>& releases) {
  const FrameworkVersion* oldest = nullptr;
  for (const FrameworkVersion& r : releases) {
    if (NumberingOf(r.version) != Numbering::kOwn) continue;
    if (oldest == nullptr || r.date < oldest->date) oldest = &r;
  }
  return oldest;
}

// Whether a version names a release exactly: the same string, or the same numbers but for
// trailing zeros ("0.1.0" is torchtitan's 0.1, "2.4.0" PyTorch's 2.4).
bool NamesRelease(const std::string& release, const std::string& want) {
  if (release == want) return true;
  if (!AllNumbers(release) || !AllNumbers(want)) return false;
  std::vector<int> a = VersionParts(release), b = VersionParts(want);
  while (a.size() > 1 && a.back() == 0) a.pop_back();
  while (b.size() > 1 && b.back() == 0) b.pop_back();
  return a == b;
}

// An own number: the newest release of its series (0.x apart from the rest: Megatron-Core 0.x
// beside Megatron-LM's 1.0-2.6 tags, Megatron-Bridge 0.x beside NeMo's own 2.x) not above it;
// older than that whole series, the newest release of any numbering from before the series began.
Placement PlaceOwnNumber(const std::vector<FrameworkVersion>& releases,
                         const std::vector<int>& parts) {
  Placement out{nullptr, Placement::kNearestBefore};
  const FrameworkVersion* oldest = nullptr;
  for (const FrameworkVersion& r : releases) {
    const std::vector<int> rp = VersionParts(r.version);
    if (NumberingOf(rp, AllNumbers(r.version)) != Numbering::kOwn) continue;
    if ((rp[0] == 0) != (parts[0] == 0)) continue;
    if (oldest == nullptr || r.date < oldest->date) oldest = &r;
    if (rp <= parts && (out.release == nullptr || rp >= VersionParts(out.release->version))) {
      out.release = &r;
    }
  }
  if (out.release != nullptr) return out;
  // A 0.x number where the framework has no 0.x series came before its 1.0: before its oldest own
  // release of any series (OLMo-core's v0.1.0 library preceded the v1.x trainer).
  if (oldest == nullptr && parts[0] == 0) oldest = OldestOwnRelease(releases);
  if (oldest == nullptr) return {&releases.back(), Placement::kNoSeries};
  // Strictly before the series' first release: not the container it shares its date with.
  out = PlaceByDate(releases, std::nextafter(oldest->date, 0.0), Prefer::kOwn);
  if (out.why == Placement::kNearestBefore) out = {out.release, Placement::kBeforeSeries, oldest};
  return out;
}

// The warning of a placement, naming `field` (path.version).
std::string PlacementNote(const Placement& p, absl::string_view field, absl::string_view name,
                          absl::string_view version) {
  const std::string& to = p.release->version;
  switch (p.why) {
    case Placement::kNearestBefore:
      return absl::StrCat(field, ": ", name, " ", version,
                          " is not a release the model knows; resolved to the nearest before it, ",
                          to);
    case Placement::kBeforeSeries:
      return absl::StrCat(field, ": '", version, "' is older than every ", name,
                          " release numbered like it (the oldest is ", p.series_oldest->version,
                          "); resolved to the release before them, ", to);
    case Placement::kOlderThanAll:
      return absl::StrCat(field, ": '", version, "' is older than every ", name,
                          " release the model knows; resolved to the oldest, ", to);
    case Placement::kNoSeries:
      return absl::StrCat(field, ": '", version, "' is in no numbering the model has for ", name,
                          "; resolved to the newest release, ", to);
    case Placement::kUnreadable:
      break;
  }
  return absl::StrCat(field, ": '", version, "' is not a ", name,
                      " version the model can read; resolved to the newest, ", to);
}

// Where the release is another framework's (FrameworkVersion::from), what the note adds.
std::string TakenClause(const FrameworkVersion& r) {
  if (r.from.empty()) return "";
  return absl::StrCat(r.from, "'s release of that number, priced as ", r.from, " ", r.version,
                      " (its recipes' defaults)");
}

}  // namespace

bool IsDatedVersion(absl::string_view version) {
  return NumberingOf(Normalise(version)) == Numbering::kDate;
}

double DatedVersionYear(absl::string_view version) {
  const std::string v = Normalise(version);
  return NumberingOf(v) == Numbering::kDate ? DateOf(VersionParts(v)) : 0.0;
}

const FrameworkVersion& ResolveRelease(const Framework& framework, absl::string_view version,
                                       absl::string_view path, std::string* note,
                                       absl::string_view sub) {
  const std::vector<FrameworkVersion>& releases = framework.versions;
  note->clear();
  const std::string want = Normalise(version);
  if (want.empty()) return releases.back();
  const std::string field = absl::StrCat(path, sub, ".version");
  for (const FrameworkVersion& r : releases) {
    if (NamesRelease(r.version, want)) {
      const std::string taken = TakenClause(r);
      if (!taken.empty())
        *note = absl::StrCat(field, ": ", framework.name, " ", r.version, " is ", taken);
      return r;
    }
  }
  const std::vector<int> parts = VersionParts(want);
  Placement placed{&releases.back(), Placement::kUnreadable};
  switch (NumberingOf(parts, AllNumbers(want))) {
    case Numbering::kDate:
      placed =
          PlaceByDate(releases, DateOf(parts), parts[0] >= 2000 ? Prefer::kOwn : Prefer::kDated);
      break;
    case Numbering::kOwn:
      placed = PlaceOwnNumber(releases, parts);
      break;
    case Numbering::kNone:
      break;
  }
  *note = PlacementNote(placed, field, framework.name.empty() ? "plain PyTorch" : framework.name,
                        version);
  const std::string taken = TakenClause(*placed.release);
  if (!taken.empty()) absl::StrAppend(note, ": ", taken);
  return *placed.release;
}

std::string YearMonthOf(double date) {
  const int year = static_cast<int>(date);
  return absl::StrFormat("%d-%02d", year, static_cast<int>((date - year) * 12) + 1);
}

// The projects' tags, dated by their commits in the repositories' snapshots: mosaicml/llm-foundry
// v0.1.0 (2023-05-08) to v0.21.0 (2025-05-31), mosaicml/composer v0.11.0 (2022-10-24) to v0.32.0
// (2025-07-14); each minor release's first tag.
const std::vector<ProjectTags>& TaggedProjects() {
  static const auto* const kProjects = new std::vector<ProjectTags>{
      {"llm-foundry",
       "composer-fsdp",
       {{"0.1", Ym(2023, 5)},   {"0.2", Ym(2023, 7)},   {"0.3", Ym(2023, 9)},
        {"0.4", Ym(2023, 11)},  {"0.5", Ym(2024, 2)},   {"0.6", Ym(2024, 3)},
        {"0.7", Ym(2024, 3)},   {"0.8", Ym(2024, 5)},   {"0.9", Ym(2024, 6)},
        {"0.10", Ym(2024, 7)},  {"0.11", Ym(2024, 8)},  {"0.12", Ym(2024, 9)},
        {"0.13", Ym(2024, 10)}, {"0.14", Ym(2024, 10)}, {"0.15", Ym(2024, 11)},
        {"0.16", Ym(2025, 1)},  {"0.17", Ym(2025, 1)},  {"0.18", Ym(2025, 3)},
        {"0.19", Ym(2025, 4)},  {"0.20", Ym(2025, 4)},  {"0.21", Ym(2025, 5)}},
       "mosaicml/llm-foundry release tags v0.1.0-v0.21.0"},
      {"composer",
       "composer-fsdp",
       {{"0.11", Ym(2022, 10)}, {"0.12", Ym(2022, 12)}, {"0.13", Ym(2023, 3)},
        {"0.14", Ym(2023, 5)},  {"0.15", Ym(2023, 6)},  {"0.16", Ym(2023, 8)},
        {"0.17", Ym(2023, 11)}, {"0.18", Ym(2024, 1)},  {"0.19", Ym(2024, 2)},
        {"0.20", Ym(2024, 2)},  {"0.21", Ym(2024, 3)},  {"0.22", Ym(2024, 5)},
        {"0.23", Ym(2024, 6)},  {"0.24", Ym(2024, 8)},  {"0.25", Ym(2024, 9)},
        {"0.26", Ym(2024, 10)}, {"0.27", Ym(2024, 11)}, {"0.28", Ym(2024, 12)},
        {"0.29", Ym(2025, 2)},  {"0.30", Ym(2025, 4)},  {"0.31", Ym(2025, 5)},
        {"0.32", Ym(2025, 7)}},
       "mosaicml/composer release tags v0.11.0-v0.32.0"}};
  return *kProjects;
}

namespace {

// A number in a tagged project's own numbering as the date of its tag (the newest tag not above
// it; the oldest for one below them all), "YYYY-MM", which the framework's releases place; the
// note says so. The version unchanged where the project is not tagged or the number is a date.
std::string ProjectVersionAsDate(absl::string_view written_key, const std::string& version,
                                 absl::string_view field, std::string* note) {
  const std::string want = Normalise(version);
  const std::vector<int> parts = VersionParts(want);
  if (NumberingOf(parts, AllNumbers(want)) != Numbering::kOwn) return version;
  for (const ProjectTags& p : TaggedProjects()) {
    if (p.project != written_key) continue;
    const std::pair<const char*, double>* tag = nullptr;
    for (const auto& t : p.tags) {
      if (VersionParts(t.first) <= parts) tag = &t;
    }
    const bool older = tag == nullptr;
    if (older) tag = &p.tags.front();
    const std::string month = YearMonthOf(tag->second);
    *note = older ? absl::StrCat(field, ": ", p.project, " ", version,
                                 " is older than its first release, ", tag->first, " of ", month)
                  : absl::StrCat(field, ": ", p.project, " ", version, " is its release ",
                                 tag->first, " of ", month);
    absl::StrAppend(note, " (", p.source, "), placed by that date");
    return month;  // a calendar date ("2024-07"), which the releases place (Normalise)
  }
  return version;
}

// The libraries' date: today's without a version; a version named by its date (a container,
// YY.MM) between two releases runs the features of the release before it on the libraries of its
// own date (cuBLAS, cuDNN, Transformer Engine and NCCL ship in the container); else the
// release's.
double SoftwareDateOf(const StackOptions& o, double release_date) {
  if (o.version.empty()) return NewestSoftwareDate();
  const std::string asked = Normalise(o.version);
  const std::vector<int> parts = VersionParts(asked);
  if (NumberingOf(parts, AllNumbers(asked)) != Numbering::kDate) return release_date;
  return std::clamp(DateOf(parts), release_date, std::max(release_date, NewestSoftwareDate()));
}

// Every switch the request sets (the proto's optional bools, model/model_fields_gen.h) and the
// attention kernel it names, over the release's defaults.
absl::Status ApplySwitches(const StackOptions& o, absl::string_view path, absl::string_view sub,
                           Stack* s) {
  if (o.full_step_graph.value_or(false) && !o.cuda_graphs.value_or(true)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, sub, ".cuda_graphs: false, but full_step_graph captures every kernel of the step"));
  }
  field_rules::VisitStackSwitches(o, *s,
                                  [](const char*, const std::optional<bool>& asked, bool& v) {
                                    if (asked) v = *asked;
                                  });
  if (s->full_step_graph) s->cuda_graphs = true;  // a step graph replays every kernel
  if (o.attention_kernel.empty()) return absl::OkStatus();
  AttentionKernel k;
  if (!ParseAttentionKernel(o.attention_kernel, &k)) {
    return absl::InvalidArgumentError(absl::StrCat(path, sub, ".attention_kernel: unknown kernel '",
                                                   o.attention_kernel,
                                                   "' (known: ", AttentionKernelNames(), ")"));
  }
  if (k != A::kDefault) s->attention = k;
  return absl::OkStatus();
}

// The recipe a run of `precision` uses: the one its micro-scaled or fp4 precision implies; under
// fp8 the one asked for, else the release's, else delayed scaling; none in 16-bit training.
absl::StatusOr<Fp8Recipe> RecipeFor(const StackOptions& o, Precision precision,
                                    Fp8Recipe release_recipe, absl::string_view path,
                                    absl::string_view sub) {
  Fp8Recipe recipe = R::kNone;
  if (!ParseFp8Recipe(o.fp8_recipe, &recipe)) {
    return absl::InvalidArgumentError(absl::StrCat(path, sub, ".fp8_recipe: unknown recipe '",
                                                   o.fp8_recipe, "' (known: ", Fp8RecipeNames(),
                                                   ")"));
  }
  // The message is built only on an error: this runs for every prediction.
  auto bad = [&](const auto&... why) {
    return absl::InvalidArgumentError(absl::StrCat(path, sub, ".fp8_recipe: ", why...));
  };
  switch (precision) {
    case Precision::kMxfp8:
    case Precision::kNvfp4:
    case Precision::kMxfp4: {
      const Fp8Recipe implied = precision == Precision::kMxfp8   ? R::kMxfp8
                                : precision == Precision::kNvfp4 ? R::kNvfp4
                                                                 : R::kMxfp4;
      if (recipe != R::kNone && recipe != implied) {
        return bad(ToString(recipe), " does not apply to ", ToString(precision), " training");
      }
      return implied;
    }
    case Precision::kFp8:
      if (recipe == R::kMxfp8 || recipe == R::kNvfp4 || recipe == R::kMxfp4) {
        return bad(ToString(recipe), " needs precision ", ToString(recipe));
      }
      if (recipe != R::kNone) return recipe;
      return release_recipe != R::kNone ? release_recipe : R::kDelayed;
    default:
      if (recipe != R::kNone) {
        return bad(ToString(recipe), " needs an fp8 or fp4 precision, not ", ToString(precision));
      }
      return R::kNone;
  }
}

// The exchange context parallelism runs: the one asked for where the framework's release of
// `date` offers it, else the framework's.
absl::StatusOr<CpComm> CpCommFor(const Framework& framework, const StackOptions& o, double date,
                                 absl::string_view path, absl::string_view sub) {
  if (o.cp_comm_type.empty()) return framework.behaviour.cp_comm;
  CpComm c;
  if (!ParseCpComm(o.cp_comm_type, &c)) {
    return absl::InvalidArgumentError(absl::StrCat(path, sub, ".cp_comm_type: unknown exchange '",
                                                   o.cp_comm_type, "' (known: ", CpCommNames(),
                                                   ")"));
  }
  const FrameworkCapabilities& at = CapabilitiesAt(framework, date);
  if (at.context_parallel && absl::c_linear_search(at.cp_comms, c)) return c;
  // The framework by name, with the month of its release where today's runs what it does not.
  const bool later = !at.context_parallel
                         ? framework.capabilities.context_parallel
                         : absl::c_linear_search(framework.capabilities.cp_comms, c);
  const std::string who =
      absl::StrCat(framework.name.empty() ? "the generic framework" : framework.name,
                   later ? absl::StrCat(" as of ", YearMonthOf(date)) : "");
  if (!at.context_parallel) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, sub, ".cp_comm_type: ", who, " does not offer context parallelism"));
  }
  std::vector<absl::string_view> names;
  for (CpComm each : at.cp_comms) names.push_back(ToString(each));
  return absl::InvalidArgumentError(
      absl::StrCat(path, sub, ".cp_comm_type: ", who, " does not offer ", ToString(c),
                   " context parallelism (it runs ", absl::StrJoin(names, ", "), ")"));
}

}  // namespace

absl::StatusOr<Stack> ResolveStack(const Framework& framework, const StackOptions& o,
                                   Precision precision, absl::string_view path,
                                   absl::string_view sub) {
  std::string note;
  const FrameworkVersion& release = ResolveRelease(framework, o.version, path, &note, sub);
  Stack s = release.defaults;
  s.software_date = SoftwareDateOf(o, s.software_date);
  s.release_note = std::move(note);
  RETURN_IF_ERROR(ApplySwitches(o, path, sub, &s));
  ASSIGN_OR_RETURN(s.cp_comm, CpCommFor(framework, o, s.software_date, path, sub));
  ASSIGN_OR_RETURN(s.fp8_recipe, RecipeFor(o, precision, s.fp8_recipe, path, sub));
  // A release's fp8 primary weights go with the recipes that keep them (KeepsFp8Weights); not
  // asked for, the others (blockwise, nvfp4, mxfp4) are taken to gather 16-bit weights.
  if (!o.fp8_param_gather.has_value() && !KeepsFp8Weights(s.fp8_recipe)) {
    s.fp8_param_gather = false;
  }
  if (s.fp8_attention && !IsLowPrecision(precision)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, sub, ".fp8_attention: fp8 attention runs inside fp8 or fp4 training, not ",
        ToString(precision)));
  }
  return s;
}

namespace {

// Whether a word is a version as users write one ("v0.14.4", "24.07-py3", "core_r0.8.0").
bool IsVersionNumber(absl::string_view word) {
  const std::string number = Normalise(word);
  return !number.empty() && AllNumbers(number);
}

// Whether a name (NameKey) is an umbrella alias: one covering several frameworks of the table.
bool IsUmbrella(absl::string_view key) {
  return absl::c_any_of(kFrameworkAliases,
                        [&](const FrameworkAlias& a) { return a.umbrella && a.alias == key; });
}

// What a request's framework name names: the framework, the words of the name that name it, and a
// version written after them.
struct FrameworkReading {
  const Framework* framework = nullptr;
  std::string name_part;  // the words that name the framework ("llm-foundry" of "MosaicML ...")
  std::string version;    // a version written after the name, as written; "" = none
  bool by_words = false;  // named by some of its words, not by the whole name
};

// The table framework a run of the name's words names, where the whole name names none
// ("PyTorch FSDP2" -> fsdp from "fsdp2", "torchtitan (FSDP2)" -> torchtitan, "NVIDIA NeMo" ->
// nemo; "NeMo AutoModel" -> automodel, the longer run): the longest run first, then the
// leftmost. Words that name plain PyTorch only ("PyTorch Lightning") name no table framework:
// such a name keeps the unknown-name warning. A name of one word names nothing by its words
// ("megatron-" is no name).
FrameworkReading FindByWords(absl::string_view name) {
  const std::vector<std::string> words =
      absl::StrSplit(NameKey(name), absl::ByAnyChar("-\t()[]/+,;:@"), absl::SkipEmpty());
  if (words.size() < 2) return {};
  FrameworkReading umbrella;
  for (size_t len = words.size(); len > 0; --len) {
    for (size_t start = 0; start + len <= words.size(); ++start) {
      std::string run = absl::StrJoin(words.begin() + start, words.begin() + start + len, "-");
      const Framework* f = FindFramework(run);
      if (f == nullptr || f->name.empty()) continue;
      FrameworkReading read{f, std::move(run), "", true};
      // The one word after the name, last, is its version where it is one ("DeepSpeed-0.14").
      if (start + len + 1 == words.size() && IsVersionNumber(words.back())) {
        read.version = words.back();
      }
      if (!IsUmbrella(read.name_part)) return read;
      if (umbrella.framework == nullptr) umbrella = std::move(read);
    }
  }
  return umbrella;
}

// Reads a request's framework name: the whole name ("Megatron-LM"); a name with its version after
// it, as users write them ("Megatron-LM v3.0", "NeMo 24.09", "DeepSpeed 0.14"); else some of its
// words ("PyTorch FSDP2", "Hugging Face nanotron 0.5").
FrameworkReading ReadFrameworkName(absl::string_view written) {
  if (const Framework* f = FindFramework(written)) return {f, std::string(written), "", false};
  // The version after a space, or an image's tag after its ':' ("nvcr.io/nvidia/nemo:24.09").
  const size_t end = written.find_last_of(" :@");
  if (end != absl::string_view::npos) {
    const absl::string_view name = written.substr(0, end), version = written.substr(end + 1);
    if (IsVersionNumber(version)) {
      FrameworkReading read{FindFramework(name), std::string(name), "", false};
      if (read.framework == nullptr) read = FindByWords(name);
      read.version = std::string(version);
      if (read.framework != nullptr) return read;
    }
  }
  return FindByWords(written);
}

}  // namespace

absl::StatusOr<Stack> ResolvePricedStack(std::string* framework_name, StackOptions* options,
                                         Precision precision, absl::string_view path,
                                         const Framework** framework) {
  const FrameworkReading read = ReadFrameworkName(*framework_name);
  *framework = read.framework;
  // A version the request gives besides the one in the name wins, with a note.
  std::string named_version;
  if (!read.version.empty()) {
    if (options->version.empty()) {
      options->version = read.version;
    } else {
      // The framework and the stack sit under the scenario's path, or at the request's top.
      named_version =
          absl::StrCat(FieldName(path, "", "framework"), ": '", *framework_name, "' names version ",
                       read.version, "; ", FieldName(path, "", "stack.version"), " '",
                       options->version, "' is used");
    }
  }
  std::string words;
  if (read.by_words) {
    words = absl::StrCat(FieldName(path, "", "framework"), ": '", *framework_name, "' is read as ",
                         read.framework->name, ", which its words '", read.name_part, "' name");
  }
  if (read.framework != nullptr && IsUmbrella(NameKey(read.name_part))) {
    absl::StrAppend(&words, words.empty() ? "" : "; ", FieldName(path, "", "framework"), ": '",
                    read.name_part, "' covers several frameworks of the table; priced as ",
                    read.framework->name, " (name the one that runs to be sure)");
  }
  std::string unknown, project;
  if (*framework != nullptr) {
    // A project numbered apart from the framework reads its version in its own numbering (a
    // written table name has none).
    if (!options->version.empty() && read.name_part != (*framework)->name) {
      options->version = ProjectVersionAsDate(NameKey(read.name_part), options->version,
                                              FieldName(path, "", "stack.version"), &project);
    }
    *framework_name = (*framework)->name;
  } else {
    *framework = &GenericFramework();
    unknown = absl::StrCat(
        FieldName(path, "", "framework"), ": '", *framework_name,
        "' is not in the framework table (known: ", FrameworkNames(),
        "): priced as plain eager PyTorch (no fused kernels, no compiler, no TP "
        "overlap) with its wider band; name the nearest known framework or set the stack's "
        "features to price what it runs");
    if (!options->version.empty() && !IsDatedVersion(options->version)) {
      absl::StrAppend(&unknown, "; its version '", options->version,
                      "' is in its own numbering, not PyTorch's, so today's libraries are assumed");
      options->version.clear();
    }
  }
  ASSIGN_OR_RETURN(Stack stack, ResolveStack(**framework, *options, precision, path,
                                             path.empty() ? "stack" : ".stack"));
  for (std::string* note : {&project, &named_version, &words, &unknown}) {
    if (note->empty()) continue;
    stack.release_note = stack.release_note.empty() ? std::move(*note)
                                                    : absl::StrCat(*note, "; ", stack.release_note);
  }
  return stack;
}

int StagesPerGpu(const FrameworkBehaviour& behaviour, int pp) {
  return pp > 1 && behaviour.pipeline_schedule == PipelineSchedule::kDualPipe ? 2 : 1;
}

}  // namespace scalecast
