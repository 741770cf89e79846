// Plain structs the scaling model takes and returns. They mirror the API contract's Scenario and
// Prediction (shared/design/api.md) so the server's conversion is field-for-field; no protobuf
// here.
#ifndef SCALECAST_MODEL_TYPES_H_
#define SCALECAST_MODEL_TYPES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace scalecast {

enum class Mlp { kUnspecified = 0, kGated = 1, kPlain = 2 };
// kMxfp4: OCP Microscaling fp4 (E2M1 elements, one E8M0 scale per 32), as AMD's CDNA 4 (MI350X,
// MI355X) runs it; kNvfp4: NVIDIA's fp4 (E2M1, an E4M3 scale per 16).
enum class Precision {
  kUnspecified = 0,
  kBf16 = 1,
  kFp16 = 2,
  kFp8 = 3,
  kMxfp8 = 4,
  kNvfp4 = 5,
  kMxfp4 = 6
};
// fp8 and fp4 formats: GEMM inputs cast below 16 bits.
inline bool IsLowPrecision(Precision p) {
  return p == Precision::kFp8 || p == Precision::kMxfp8 || p == Precision::kNvfp4 ||
         p == Precision::kMxfp4;
}
inline bool IsFp4(Precision p) { return p == Precision::kNvfp4 || p == Precision::kMxfp4; }
enum class Sharding { kUnspecified = 0, kDdp = 1, kZero1 = 2, kZero2 = 3, kFsdp = 4, kHsdp = 5 };
enum class Recompute { kUnspecified = 0, kNone = 1, kSelective = 2, kFull = 3 };
// Megatron-Core's fine-grained selective recompute (--recompute-modules): each module's outputs
// are dropped after the forward and rebuilt in the backward. Parallelism::recompute_modules holds
// a set of them as bits (1 << module).
enum class RecomputeModule {
  kCoreAttn = 0,       // "core_attn": the attention core
  kMlaUpProj = 1,      // "mla_up_proj": MLA's up-projections of the latents to q, k, v
  kLayernorm = 2,      // "layernorm": the input norms
  kMoeAct = 3,         // "moe_act": the routed experts' activation function
  kMlp = 4,            // "mlp": a dense layer's whole MLP
  kMoe = 5,            // "moe": a MoE layer's whole MLP (router, dispatch, experts, combine)
  kSharedExperts = 6,  // "shared_experts": the shared experts
};
inline constexpr int kRecomputeModules = 7;
inline constexpr uint32_t Bit(RecomputeModule m) { return 1u << static_cast<int>(m); }

// How fp8 GEMM inputs are scaled (Transformer Engine / torchao names). Each recipe changes the
// bytes its casts move and, for the block-scaled ones on Hopper, the GEMM's own rate.
enum class Fp8Recipe {
  kNone = 0,
  kDelayed,
  kTensorwise,
  kRowwise,
  kBlockwise,
  kMxfp8,
  kNvfp4,
  kMxfp4
};
// The attention implementation. kMath is unfused attention that materialises the score matrix
// (Megatron-LM before flash attention: fused softmax, separate batched GEMMs).
// kFa1: FlashAttention 1 (CUDA, 2022); kTriton: FlashAttention in Triton (OpenAI's tutorial
// kernel, as llm-foundry's attn_impl: triton ran it in 2023).
enum class AttentionKernel { kDefault = 0, kMath, kFa2, kFa3, kCudnn, kFa1, kTriton };

// How context parallelism exchanges keys and values between its ranks (Megatron-Core's
// cp_comm_type, Transformer Engine's attention with context parallelism). kRing ("p2p"): K/V
// chunks passed around a ring beside the attention's compute; kAllToAll ("a2a", DeepSpeed-Ulysses):
// queries, keys and values exchanged for whole sequences of a share of the heads, blocking;
// kAllGather ("allgather", Llama 3's): the whole sequence's K/V gathered before the attention,
// blocking (but for the backward's collectives under XLA); kHierarchical ("a2a+p2p"): a2a inside a
// group of ranks, the ring between the groups.
enum class CpComm { kRing = 0, kAllToAll, kAllGather, kHierarchical };

absl::string_view ToString(Fp8Recipe r);
absl::string_view ToString(AttentionKernel k);
absl::string_view ToString(CpComm c);
// Megatron-Core's names (ToString) in any case, and "ring", "ulysses", "all_gather",
// "hierarchical"; false for any other name, "" included (the caller's default).
bool ParseCpComm(absl::string_view s, CpComm* out);
// Every name ParseCpComm takes, for error messages.
absl::string_view CpCommNames();
// "" -> kNone; the table's names (ToString) in any case, and Transformer Engine's and
// Megatron-Bridge's "current" / "cs" for tensorwise.
bool ParseFp8Recipe(absl::string_view s, Fp8Recipe* out);
// Every name ParseFp8Recipe takes, for error messages.
absl::string_view Fp8RecipeNames();
// "" -> kDefault; the table's names (ToString) and the names users write for the same kernels,
// in any case and with '_' or ' ' for '-': PyTorch's and Hugging Face Transformers'
// attn_implementation ("eager", "sdpa", "flash_attention_2", "flash_attention_3"), the
// flash-attn package's, and Transformer Engine's fused attention ("te", cuDNN's).
bool ParseAttentionKernel(absl::string_view s, AttentionKernel* out);
// Every name ParseAttentionKernel takes, for error messages.
absl::string_view AttentionKernelNames();

// A stack resolved for one scenario: every feature decided.
struct Stack {
  std::string version;
  // The framework release the stack was resolved to (model/framework.h) and when it shipped, as
  // a decimal year (2024.75 = October 2024): the era of its libraries (cuBLAS, cuDNN, Transformer
  // Engine, NCCL), which sets how close the hardware runs to its mature efficiency.
  std::string release;
  double software_date = 0;
  // Set when the version asked for is not a release the table knows: which release it was
  // resolved to, in words (a prediction warning).
  std::string release_note;
  // The Megatron-Bridge tag whose performance presets the release ships ("v0.5.0" for the 26.06
  // container and Megatron-Bridge 0.5: model/recipe_presets.h); "" for any other release.
  std::string recipe_tag;
  bool tp_comm_overlap = false;  // TP collectives hidden behind GEMMs (userbuffers, async TP)
  bool dp_overlap = true;        // DP reduce / gather issued beside compute
  Fp8Recipe fp8_recipe = Fp8Recipe::kNone;
  AttentionKernel attention = AttentionKernel::kFa2;
  // Context parallelism's exchange: the one asked for, else the framework's
  // (FrameworkBehaviour::cp_comm).
  CpComm cp_comm = CpComm::kRing;
  bool cuda_graphs = false;    // kernels replayed from a graph: no per-op host dispatch
  bool compiled = false;       // torch.compile / XLA: elementwise chains fused
  bool fused_kernels = false;  // hand-fused norms, activations, RoPE, loss (TE, Megatron, XLA)
  // Cross-entropy computed in chunks without an fp32 copy of the logits (hand-fused stacks, and
  // flash-attn's fused cross-entropy in llm-foundry).
  bool fused_loss = false;
  // MoE token dispatch. false: the all-to-all dispatcher (a routed copy per expert crosses the
  // network); true: a fused dispatcher (DeepEP, HybridEP: Megatron-Core's flex dispatcher) that
  // sends a token once per remote NVLink domain, forwarding inside it over NVLink.
  bool fused_dispatch = false;
  // Dispatch/combine all-to-alls overlapped with another micro-batch's compute (Megatron-Core
  // --overlap-moe-expert-parallel-comm, DualPipe-style). Its staged schedule keeps the host from
  // running ahead, so the MoE layers' launch time adds to the GPU's in full.
  bool ep_comm_overlap = false;
  // Gradients accumulated and reduced in bf16 (Megatron-Core's DDP with grad_reduce_in_fp32 off,
  // as Megatron-Bridge's performance recipes set it): 2 bytes a gradient in memory and on the
  // wire. false: fp32 gradients (Megatron's main_grad, FSDP's reduce_dtype=float32).
  bool bf16_grads = false;
  // fp8 training with fp8 primary weights: the parameter all-gather of a sharded optimizer or
  // FSDP carries fp8, 1 byte a parameter (StepModel::ParamGatherBytes).
  bool fp8_param_gather = false;
  // The whole training step, optimizer included, replayed from one CUDA graph (Megatron-Core's
  // full_iteration scope, MLPerf's FULL_CUDA_GRAPH): the host's per-step work (ProfileGlobal::
  // step_host_s) is not on the GPU's path. Implies cuda_graphs.
  bool full_step_graph = false;
  // fp8 or fp4 training with the attention core in fp8 (Transformer Engine's fp8 dot-product
  // attention on cuDNN): QK^T and PV at the fp8 tensor rate (kFp8AttentionSpeedup).
  bool fp8_attention = false;
  // Parameters kept in fp32 under autocast (FSDP param_dtype None, Composer's 'DEFAULT' before
  // 0.13): the residual stream and its norms on fp32 tensors (StepModel::StreamBytes), the fp32
  // inputs and weights of the attention and dense FFN matmuls cast to bf16 (kAutocastCastBytes),
  // fp32 parameter gathers (StepModel::ParamGatherBytes). Memory is priced as with bf16
  // parameters.
  bool fp32_params = false;

  bool FusedLoss() const { return fused_loss || fused_kernels; }
};

// A request's stack: unset fields take the framework's defaults (model/framework.h).
struct StackOptions {
  std::optional<bool> tp_comm_overlap;
  std::optional<bool> dp_overlap;
  std::string fp8_recipe;        // "" = the precision's and version's default
  std::string attention_kernel;  // "" = the version's default
  std::string cp_comm_type;      // "" = the framework's (ParseCpComm)
  std::optional<bool> cuda_graphs;
  std::optional<bool> compiled;
  std::optional<bool> fused_dispatch;
  std::optional<bool> ep_comm_overlap;
  std::optional<bool> bf16_grads;
  std::optional<bool> fp8_param_gather;
  std::optional<bool> full_step_graph;
  std::optional<bool> fp8_attention;
  std::optional<bool> fp32_params;
  std::optional<bool> fused_kernels;
  std::string version;  // "" = the newest the table knows
  bool operator==(const StackOptions&) const = default;
};

// Mixture-of-experts feed-forward layers (api.md MoeSpec). num_experts == 0 means dense.
struct MoeSpec {
  int num_experts = 0;         // routed experts per MoE layer
  int experts_per_token = 0;   // top-k
  int expert_ffn_hidden = 0;   // one routed expert's FFN width
  int shared_experts = 0;      // experts every token goes through (DeepSeek, Llama 4)
  int shared_ffn_hidden = 0;   // the shared experts' total FFN width; 0 = shared_experts * expert's
  int dense_layers = 0;        // leading dense layers (ModelSpec.ffn_hidden applies to them)
  double capacity_factor = 0;  // tokens an expert takes, relative to an even share; 0 = dropless
  // Tokens spread evenly over the experts whatever the router says (Megatron-Core's
  // --moe-router-force-load-balancing, used by benchmarks); false = learned routing, whose
  // busiest expert rank sets the pace.
  bool force_balance = false;
  // The routed experts' linear layers have biases (GPT-OSS). Where the framework adds the
  // second GEMM's bias outside the grouped GEMM (Megatron-Core) it costs memory traffic.
  bool expert_bias = false;
  // Latent MoE (Nemotron 3 Super's moe_latent_size; Megatron-Core --moe-latent-size): the routed
  // experts work in this width. A replicated h -> latent projection before the dispatch and a
  // latent -> h one after the combine; the experts' GEMMs, their weights and activations and the
  // all-to-alls are at the latent width. 0 = the hidden width (no projection).
  int latent_size = 0;
  // Group-limited routing (DeepSeek-V3's n_group / topk_group; Megatron-Core's
  // --moe-router-num-groups / --moe-router-group-topk): the experts form router_groups groups (a
  // node's experts under DeepSeek-V3's expert placement) and a token's top-k come from at most
  // router_group_topk of them. 0 = no limit.
  int router_groups = 0;
  int router_group_topk = 0;

  bool enabled() const { return num_experts > 0; }
  // The width the routed experts work in: latent_size, else `hidden`.
  int ExpertWidth(int hidden) const { return latent_size > 0 ? latent_size : hidden; }
};

// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; api.md MlaSpec): queries and keys/values
// pass through low-rank latents; the KV cache and saved activations hold the compressed latent.
// kv_lora_rank == 0 means ordinary (grouped-query) attention.
struct MlaSpec {
  int q_lora_rank = 0;  // 0 = queries projected directly from the hidden state
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;

  bool enabled() const { return kv_lora_rank > 0; }
};

// Decoder-only transformer shape. A preset name fills the zero fields; the set ones change the
// preset's (OverlayShape).
struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    // 0 = heads (no grouped-query attention)
  int ffn_hidden = 0;  // dense layers' FFN width (all layers of a dense model)
  Mlp mlp = Mlp::kUnspecified;
  int vocab = 0;
  int head_dim = 0;  // attention head width; 0 = hidden / heads (Qwen3 and GPT-OSS set it)
  MoeSpec moe;
  MlaSpec mla;
  // Multi-token prediction modules trained with the model (DeepSeek-V3 §2.2: one, predicting the
  // token after next). Each is a transformer layer of the model's last kind, a 2h -> h
  // projection of the hidden state and the next token's embedding, and one more pass through
  // the shared output head and a loss; Megatron-Core places them on the last pipeline stage.
  int mtp_layers = 0;
  // The output projection shares the token embedding's weights (Hugging Face tie_word_embeddings:
  // GPT-2, Gemma, Qwen3's small models, MPT): counted once in the parameters and held once where
  // one stage has both (pp = 1); the logits GEMM is the same either way.
  bool tie_embeddings = false;
  // Local attention: windowed layers attend to the last `attention_window` tokens only (GPT-OSS:
  // 128 on every other layer; Llama 4: 8192-token chunks on 3 of 4 layers). 0 = every layer full.
  int attention_window = 0;
  int full_attention_every = 0;  // every N-th layer is full attention, the rest windowed
  // Hybrid models (Nemotron-H / Nemotron-3): one character per layer, as Megatron-Core's
  // hybrid_override_pattern: 'M' Mamba-2 mixer, '*' attention, '-' dense MLP, 'E' MoE. Empty =
  // every layer is attention + feed-forward (dense or MoE as above).
  std::string layer_pattern;
  // Mamba-2 mixer shape for 'M' layers (Dao & Gu 2024, "Transformers are SSMs"): heads x head dim
  // is the inner width, state size per group, groups of B/C.
  int mamba_heads = 0;
  int mamba_head_dim = 0;
  int mamba_state = 0;
  int mamba_groups = 0;
};

struct Workload {
  ModelSpec model;
  int seq_len = 0;
  int64_t global_batch = 0;  // sequences per optimizer step
  Precision precision = Precision::kUnspecified;
};

struct Accelerator;  // model/catalog.h

// Hardware a user describes (the API's AcceleratorSpec): each field set (non-zero, non-empty)
// overrides the base part's (model/catalog.h, DescribeAccelerator).
struct AcceleratorSpec {
  std::string id;    // the described part's id; "" = the base's id
  std::string like;  // the catalog part whose fitted efficiencies it borrows; "" = see Cluster
  double peak_tflops_bf16 = 0;         // dense TFLOP/s; bf16 also sets fp16 (in the base's ratio)
  double peak_tflops_fp8 = 0;          // also mxfp8, in the base's ratio
  double peak_tflops_fp4 = 0;          // the part's fp4 format: mxfp4 on AMD, nvfp4 otherwise
  double hbm_gb = 0;                   // HBM per GPU as vendors print it, read as GiB (2^30 B)
  double hbm_tb_s = 0;                 // TB/s, decimal
  int nvlink_domain = 0;               // GPUs sharing one NVLink / xGMI domain
  double nvlink_gb_s = 0;              // GB/s per GPU per direction
  double inter_node_gbps_per_gpu = 0;  // Gbit/s
  double tdp_watts = 0;                // also the power limit
  double idle_watts = 0;
  double tensor_flops_per_exp = 0;  // per SM and clock (catalog field); 0 = the base's

  bool empty() const;         // no field set (id and like included)
  bool has_hardware() const;  // some field beyond id and like set
};

struct Cluster {
  std::string accelerator;  // catalog (or registered) id
  int num_gpus = 0;
  int gpus_per_node = 0;                 // 0 = the accelerator's usual system
  double inter_node_gbps_per_gpu = 0.0;  // Gbit/s; 0 = the usual system's network
  // Microseconds per collective step across nodes; 0 = InfiniBand's (kAlphaInterS).
  double inter_node_latency_us = 0.0;
  // A described accelerator: set fields override those of `accelerator` (or of spec.like, or of
  // the nearest catalog part for a new one).
  AcceleratorSpec accelerator_spec;
  // Share of HBM the planner keeps free when it picks a layout (allocator fragmentation beyond
  // the estimate, NCCL buffers, CUDA graph pools); unset = kDefaultHbmHeadroom
  // (model/planner.h). A layout the request fixes in full is never refused for it: it is warned.
  std::optional<double> hbm_headroom;
  // The inter-node fabric reduces in its switches (InfiniBand SHARP); see CollectiveTime.
  bool in_network_reduction = false;
  // Set by ResolveScenario when accelerator_spec is: the part it describes (shared by copies).
  std::shared_ptr<const Accelerator> described;
};

// 0 and kUnspecified mean "let the planner choose".
struct Parallelism {
  int tp = 0;
  int pp = 0;
  int vpp = 0;
  int cp = 0;
  int dp = 0;
  Sharding sharding = Sharding::kUnspecified;
  int shard_group = 0;  // HSDP: ranks that hold one full copy of the sharded state
  int micro_batch = 0;
  Recompute recompute = Recompute::kUnspecified;
  // Expert parallel (routed experts split over ep ranks) and expert-tensor parallel (each expert's
  // GEMMs split over etp ranks); MoE models only; 0 = let the planner choose (1 for dense).
  int ep = 0;
  int etp = 0;
  // Selective recompute's modules (bits of RecomputeModule); 0 = the framework's own selective
  // policy (model/framework.h). Needs recompute selective.
  uint32_t recompute_modules = 0;
  // Full recompute on only this many layers of each pipeline stage, the others keeping their
  // activations (Megatron-Core's block method, --recompute-num-layers); 0 = every layer. Needs
  // recompute full.
  int recompute_layers = 0;
  // Layers whose activations wait in host memory between forward and backward (Megatron-Core's
  // --cpu-offloading-num-layers); 0 = none. Needs pp 1 and no recompute.
  int cpu_offload_layers = 0;
  // Two-level (a2a+p2p) context parallelism: ranks of each all-to-all group, the ring joining
  // cp / cp_a2a of them; 0 = the model's choice (CpAllToAllRanks), which a prediction echoes.
  int cp_a2a = 0;
  // Unset = the framework's default (on with tp > 1 where the framework pairs them).
  std::optional<bool> sequence_parallel;
  // Uneven pipeline split (Megatron-Core's --decoder-first/last-pipeline-num-layers and
  // --account-for-embedding/loss-in-pipeline-split); 0 / false = layers split evenly.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  bool embedding_in_split = false;
  bool loss_in_split = false;

  bool sp() const { return sequence_parallel.value_or(false) && tp > 1; }
  friend bool operator==(const Parallelism&, const Parallelism&) = default;
};

struct Scenario {
  Workload workload;
  Cluster cluster;
  Parallelism parallelism;
  std::string framework;    // "megatron", "torchtitan", ...; "" = generic
  StackOptions stack;       // software features over the framework's defaults
  std::string calibration;  // profile name; "" = built-in default
  std::string label;
  // About the request itself (a config.json's keys the model does not use, a shared accelerator
  // name taken as its usual part): carried into every prediction's warnings.
  std::vector<std::string> input_warnings;
};

// Seconds per optimizer step spent in one kind of communication.
struct CommTime {
  std::string kind;  // CommKindName(k) of a field_rules::CommKind (proto enum CommKind)
  double total_s = 0;
  double exposed_s = 0;
  int64_t bytes_per_gpu = 0;
  int ranks = 0;
};

struct TimeBreakdown {  // seconds per optimizer step on the critical path
  double compute_s = 0;
  double recompute_s = 0;
  double pipeline_bubble_s = 0;
  double optimizer_s = 0;
  std::vector<CommTime> comm;
};

struct MemoryBreakdown {  // bytes per GPU at peak
  int64_t weights_bytes = 0;
  int64_t gradients_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activations_bytes = 0;
  int64_t other_bytes = 0;
  int64_t total_bytes = 0;
  int64_t capacity_bytes = 0;
  bool fits = false;  // in HBM, and the offloaded activations in host memory
  // Activations offloaded to host memory (Parallelism::cpu_offload_layers) and the host memory
  // per GPU they may fill; both 0 without offloading.
  int64_t host_bytes = 0;
  int64_t host_capacity_bytes = 0;
};

struct PowerEstimate {
  double watts_per_gpu = 0;
  double cluster_kw = 0;
  double joules_per_token = 0;
};

// An 80 % band on tokens/s per GPU, from cross-validated residuals.
struct Uncertainty {
  double low = 0;
  double high = 0;
  double level = 0;
  std::string basis;  // why this width, in words
};

struct Prediction {
  std::string label;
  Parallelism layout;  // fully resolved
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;  // fractions
  double hfu = 0;
  double model_tflops_per_gpu = 0;
  TimeBreakdown time;
  MemoryBreakdown memory;
  PowerEstimate power;
  std::vector<std::string> warnings;
  Stack stack;  // the resolved software stack
  Uncertainty uncertainty;
};

// One table per enum: the lower-case names its values go by in CSV files, flags, messages and
// the store ("bf16", "fsdp", "selective", "gated"), in value order, kUnspecified (the name "")
// left out. Printing, parsing and the "known values" messages all come from these tables; the
// proto's enum numbers are the model's, so the largest value bounds the proto's too.
template <typename E>
struct EnumName {
  E value;
  absl::string_view name;
};
inline constexpr EnumName<Mlp> kMlpNames[] = {{Mlp::kGated, "gated"}, {Mlp::kPlain, "plain"}};
inline constexpr EnumName<Precision> kPrecisionNames[] = {
    {Precision::kBf16, "bf16"},   {Precision::kFp16, "fp16"},   {Precision::kFp8, "fp8"},
    {Precision::kMxfp8, "mxfp8"}, {Precision::kNvfp4, "nvfp4"}, {Precision::kMxfp4, "mxfp4"}};
inline constexpr EnumName<Sharding> kShardingNames[] = {{Sharding::kDdp, "ddp"},
                                                        {Sharding::kZero1, "zero1"},
                                                        {Sharding::kZero2, "zero2"},
                                                        {Sharding::kFsdp, "fsdp"},
                                                        {Sharding::kHsdp, "hsdp"}};
inline constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}};
// The table of E.
constexpr absl::Span<const EnumName<Mlp>> EnumNames(Mlp) { return kMlpNames; }
constexpr absl::Span<const EnumName<Precision>> EnumNames(Precision) { return kPrecisionNames; }
constexpr absl::Span<const EnumName<Sharding>> EnumNames(Sharding) { return kShardingNames; }
constexpr absl::Span<const EnumName<Recompute>> EnumNames(Recompute) { return kRecomputeNames; }

// An enum with a table above.
template <typename E>
concept NamedEnum = requires(E e) {
  EnumNames(e);
};

// The name of `v`; "" for kUnspecified or a value outside the table.
template <NamedEnum E>
absl::string_view ToString(E v) {
  for (const EnumName<E>& n : EnumNames(E{})) {
    if (n.value == v) return n.name;
  }
  return "";
}
// False for an unknown name; "" parses to kUnspecified.
template <NamedEnum E>
bool ParseEnum(absl::string_view s, E* out) {
  if (s.empty()) {
    *out = E{};
    return true;
  }
  for (const EnumName<E>& n : EnumNames(E{})) {
    if (n.name == s) {
      *out = n.value;
      return true;
    }
  }
  return false;
}
// The names of E for a message: "bf16, fp16, fp8, mxfp8 or nvfp4" (`last` before the last one;
// ", " lists them all alike).
template <NamedEnum E>
std::string KnownNames(absl::string_view last = " or ") {
  std::string out;
  const absl::Span<const EnumName<E>> names = EnumNames(E{});
  for (size_t i = 0; i < names.size(); ++i) {
    const absl::string_view sep = i + 1 == names.size() ? last : ", ";
    if (i > 0) out.append(sep.data(), sep.size());
    out.append(names[i].name.data(), names[i].name.size());
  }
  return out;
}
// The largest value of E, as its number.
template <NamedEnum E>
constexpr int MaxEnumValue() {
  return static_cast<int>(EnumNames(E{}).back().value);
}

inline bool ParseMlp(absl::string_view s, Mlp* out) { return ParseEnum(s, out); }
inline bool ParsePrecision(absl::string_view s, Precision* out) { return ParseEnum(s, out); }
inline bool ParseSharding(absl::string_view s, Sharding* out) { return ParseEnum(s, out); }
inline bool ParseRecompute(absl::string_view s, Recompute* out) { return ParseEnum(s, out); }
// What a user states of the software when asking for a prediction (scalecast-validate --facts,
// and each request's band: model/uncertainty.h FactsStated): every fact its source gives (a
// version and some of the stack's features); the framework and its version, the stack's
// features left to that release's defaults; the framework only (today's release); nothing
// about the software (the generic stack). The model, cluster, layout and workload are stated at
// every level.
enum class StatedFacts { kAll, kVersion, kFramework, kNone };
inline constexpr StatedFacts kStatedFactsLevels[] = {StatedFacts::kAll, StatedFacts::kVersion,
                                                     StatedFacts::kFramework, StatedFacts::kNone};
// "all", "version", "framework", "none"; false for anything else.
bool ParseStatedFacts(absl::string_view s, StatedFacts* out);
// The name ParseStatedFacts reads for `facts`.
absl::string_view StatedFactsName(StatedFacts facts);

// Megatron-Core's names of the modules in `modules`, in RecomputeModule order.
std::vector<std::string> RecomputeModuleNames(uint32_t modules);
// The same, comma-separated ("" for none).
std::string RecomputeModulesToString(uint32_t modules);
// Parses one module name; false for an unknown one.
bool ParseRecomputeModule(absl::string_view s, RecomputeModule* out);
// Parses a list separated by ',', '+' or spaces; on an unknown name returns false and sets
// `bad` to it.
bool ParseRecomputeModules(absl::string_view s, uint32_t* out, std::string* bad);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_TYPES_H_
