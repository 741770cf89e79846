// The framework table: one home for what each training framework is (family, versions), what it
// can run (capabilities), how it behaves (defaults and scheduling choices), and which software
// features of its stack are on by default. The physics reads a resolved `Stack` and
// `FrameworkBehaviour`, never a framework name.
#ifndef SCALECAST_MODEL_FRAMEWORK_H_
#define SCALECAST_MODEL_FRAMEWORK_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/types.h"

namespace scalecast {

// When a capability reached a framework's releases (a decimal year, the date of the first
// release that has it; 0 = every release the table has): a release dated before it does not
// offer it (FrameworkCapabilities::At).
struct CapabilityDates {
  double tensor_parallel = 0;
  double pipeline_parallel = 0;
  double interleaved_pipeline = 0;
  double zero1 = 0;  // the distributed optimizer (Sharding::kZero1)
  double fsdp = 0;   // fully sharded data parallelism, hybrid-sharded too
  double hsdp = 0;   // hybrid sharding (Sharding::kHsdp) alone
  double sequence_parallel = 0;
  double context_parallel = 0;
  // A choice of context parallelism's exchange: all-to-all and all-gather beside the ring
  // (Megatron-Core's cp_comm_type a2a, allgather), the two-level a2a+p2p, and the ring where it
  // came after the all-to-all (Colossal-AI's ring_attn) or the all-gather (MaxText's ring).
  double cp_all_to_all = 0;
  double cp_all_gather = 0;
  double cp_hierarchical = 0;
  double cp_ring = 0;
  double expert_parallel = 0;
  double uneven_pipeline_split = 0;
  double recompute_modules = 0;
  double cpu_offload = 0;
  std::string source;  // where the dates come from

  // Each capability with its date, in words ("sequence parallelism"), dated or not.
  std::vector<std::pair<const char*, double>> Named() const;
  // The date of an exchange of context parallelism (cp_ring, cp_all_to_all, ...).
  double& Of(CpComm c);
  double Of(CpComm c) const { return const_cast<CapabilityDates*>(this)->Of(c); }
};

// The months an exchange of context parallelism came to GPUs and to TPUs (kNeverOn: not there).
inline constexpr double kNeverOn = 1e9;
struct CpCommPlatforms {
  CpComm comm = CpComm::kRing;
  double gpu_since = 0;
  double tpu_since = 0;
};

// What a framework can run, from its documentation: the planner only proposes layouts the
// framework supports; a fixed layout it does not offer is refused with the reason.
struct FrameworkCapabilities {
  bool tensor_parallel = true;
  // Sequence parallelism beside TP (Korthikanti et al. 2022, arXiv 2205.05198): the layer norms
  // and dropouts split over the TP ranks, all-gathers and reduce-scatters for the all-reduces.
  bool sequence_parallel = true;
  bool pipeline_parallel = true;
  bool interleaved_pipeline = true;
  bool uneven_pipeline_split = true;  // first/last stage sizes, embedding/loss in the split
  // Chunks of unequal size when the layers (with embedding and loss) do not divide evenly.
  bool flexible_pipeline_layout = false;
  bool context_parallel = true;
  // The exchanges context parallelism can run (CpComm), the framework's default
  // (FrameworkBehaviour::cp_comm) among them.
  std::vector<CpComm> cp_comms = {CpComm::kRing};
  // Exchanges that run on one kind of accelerator only, or on one from a later month than on
  // the other (MaxText's Ulysses on TPUs alone, its ring on TPUs a release after GPUs): checked
  // where the accelerator is known (CheckCp). The earlier of an exchange's two months is its
  // `since` date (the table sets it from this list).
  std::vector<CpCommPlatforms> cp_comm_platforms;
  // Mixture-of-experts: experts split over ranks (EP), and each expert's GEMMs split over ranks
  // of their own (ETP, Megatron-Core's expert_tensor_parallel_size; torchtitan's etp).
  bool expert_parallel = true;
  bool expert_tensor_parallel = true;
  // Selective recompute by named module (Megatron-Core's --recompute-modules).
  bool recompute_modules = false;
  // Full recompute on some layers of each pipeline stage only (Megatron-Core's
  // --recompute-method block --recompute-num-layers N).
  bool partial_recompute = false;
  // Activations of some layers kept in host memory (Megatron-Core's --cpu-offloading
  // --cpu-offloading-num-layers over Transformer Engine's CPU offload context; plain PyTorch's
  // torch.autograd.graph.save_on_cpu, FrameworkBehaviour::offload_on_compute_stream).
  bool cpu_offload = false;
  std::vector<Sharding> shardings = {Sharding::kDdp, Sharding::kZero1, Sharding::kZero2,
                                     Sharding::kFsdp, Sharding::kHsdp};
  // Shardings that combine with pipeline parallelism (DeepSpeed pipelines take ZeRO-1 at most).
  std::vector<Sharding> pipeline_shardings = shardings;
  // Tensor parallelism beside fully sharded parameters (FSDP and HSDP, ZeRO-3). DeepSpeed's
  // AutoTP refuses ZeRO-3 (below).
  bool tensor_parallel_with_fsdp = true;
  CapabilityDates since;

  // What a release of `date` (a decimal year) offers: these capabilities less those that came
  // after it. date <= 0: all of them (today's release).
  FrameworkCapabilities At(double date) const;
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

// Where a stage's weight gradients are added up across micro-batches
// (FrameworkBehaviour::grad_accumulation).
enum class GradAccumulation { kInGemm, kAutograd, kFp32Buffer };

// How a pipeline orders its micro-batches (deepseek-ai/DualPipe README, "Pipeline Bubbles and
// Memory Usage Comparison"): 1F1B idles (PP-1)(F+B) a step (interleaving divides that by its
// virtual stages); DualPipe feeds micro-batches from both ends, each GPU holding two stages (one
// per direction: twice the parameters, PP+1 micro-batches of activations), pairs one
// micro-batch's forward chunk with another's backward so that each hides the other's
// communication, and idles (PP/2-1)(F&B+B-3W), PP even.
enum class PipelineSchedule { k1F1B, kDualPipe };

// Scheduling choices that change the step's cost terms.
struct FrameworkBehaviour {
  PipelineSchedule pipeline_schedule = PipelineSchedule::k1F1B;
  SelectivePolicy selective = SelectivePolicy::kAttentionCore;
  Sharding default_sharding = Sharding::kUnspecified;  // what a blank sharding means in a run
  bool sequence_parallel_with_tp = false;              // SP switched on whenever tp > 1
  // From this software date on (a decimal year; 0 = never), with pipelining, a stage adds its
  // gradients up unsharded across micro-batches and reduces them once, after the last
  // micro-batch's backward: torch.distributed.pipelining's PipelineStage (pytorch/pytorch
  // torch/distributed/pipelining/stage.py, backward_maybe_with_nosync) calls FSDP2's
  // set_requires_gradient_sync(False) and set_reshard_after_backward(False), and DDP's
  // no_sync(), for every backward but the last. FSDP then keeps the stage gathered from forward
  // to backward, and ZeRO-2 (FSDP without the reshard after forward) holds whole gradients as
  // ZeRO-1 does. Otherwise FSDP reshards and reduces every micro-batch, and ZeRO-2
  // reduce-scatters every micro-batch's gradients (FSDP1's FullyShardedDataParallel, which the
  // stage backs through as a plain module).
  double pipeline_reduces_once_since = 0;
  // A pipeline runs as many micro-batches as it has stages unless told otherwise (torchtitan's
  // pipeline_parallel_microbatches defaults to the pipeline degree): what a blank micro batch
  // means in a run with pp > 1.
  bool microbatches_equal_stages = false;
  // Biased experts: the second expert GEMM returns its bias, and the bias is added per expert
  // chunk, weighted by the router probabilities, outside the grouped GEMM (Megatron-Core's
  // TEGroupedMLP._apply_bias: split, t + b * p, cat, cast). Otherwise the GEMM's epilogue adds
  // it for free.
  bool expert_bias_outside_gemm = false;
  // Queries, keys and values (and a gated FFN's gate and up projections) are separate linear
  // layers: three GEMMs (two) where a fused stack runs one, the key and value ones as narrow as
  // kv_heads x head_dim / tp (128 columns for Llama 3 under TP 8). torchtitan
  // (models/llama3/model/model.py: Attention.wq, wk, wv; FeedForward.w1, w3), OLMo-core
  // (olmo_core/nn/attention: Attention.w_q, w_k, w_v) and Hugging Face models (q_proj, k_proj,
  // v_proj; gate_proj, up_proj) are built this way; Megatron-Core (linear_qkv, linear_fc1),
  // llm-foundry (Wqkv) and nanotron (qkv_proj, gate_up_proj) fuse them.
  bool separate_projections = false;
  // Low-precision weight copies are made once per step and reused by every micro-batch: Transformer
  // Engine caches a module's fp8 weight (and its transpose) when told the micro-batch is the first
  // of its step (the `is_first_microbatch` argument of its Linear, LayerNormLinear and
  // GroupedLinear modules), and Megatron-Core passes it (MegatronModule.set_is_first_microbatch,
  // used by its forward-backward schedules), as NeMo 1.x's ParallelTransformer did from its
  // micro-batch counter (nemo/collections/nlp/modules/common/megatron/transformer.py). Otherwise
  // (torchao float8, the JAX stacks) every micro-batch casts the weights again.
  bool low_precision_weights_cached = false;
  // What "selective" recompute drops when a request names no modules, where a framework's
  // selective recompute is a set of modules (RecomputeModule bits; 0: the SelectivePolicy).
  // DeepSeek's HAI-LLM recomputes every RMSNorm and MLA's up-projections in the backward pass
  // (DeepSeek-V3 report, arXiv 2412.19437, section 3.2.3) and the MoE SwiGLU's output from its
  // cached input (section 3.3.3). Of these, the modules the model has are filled in at
  // resolution, and the echoed layout names them.
  uint32_t selective_modules = 0;
  // Under fp8 training, the saved input of the routed experts' SwiGLU (their first GEMM's
  // output) is kept as its fp8 quantized copy, 1 byte an element instead of bf16's 2 (report
  // section 3.3.3, "Inputs of the SwiGLU Operator in MoE ... also stored in FP8").
  bool moe_swiglu_input_fp8 = false;
  // AdamW's first and second moments kept in bf16: 4 bytes a parameter instead of 8, the fp32
  // master weights and gradients as before (report section 3.3.3, "Low-Precision Optimizer
  // States").
  bool bf16_optimizer_moments = false;
  // From this software date on (a decimal year; 0 = never) a pipeline stage without sequence
  // parallelism sends its output split over its TP ranks, each rank one slice, and the receiving
  // stage all-gathers the slices over NVLink: Megatron-LM's scatter-gather optimisation
  // (Narayanan et al. 2021 §4.1; --scatter-gather-tensors-in-pipeline, added 2021-01-20 and on
  // by default from 2021-02-16, commits 27fc4689 and 72e4230b), and DeepSpeed's PipelineEngine,
  // which partitions its pipe buffers over the model-parallel group (runtime/pipe/engine.py:
  // is_pipe_partitioned = is_model_parallel, PartitionedTensor). With sequence parallelism the
  // output is split already.
  double pipeline_sends_split_since = 0;
  // DeepSpeed's PipelineEngine runs RecvActivation, SendGrad, SendActivation and RecvGrad as a
  // blocking call each (runtime/pipe/schedule.py TrainSchedule, p2p.py send/recv): four transfers
  // a micro-batch on a stage's path, where Megatron's 1F1B pairs each send with a receive in one
  // batched exchange (send_forward_recv_backward, send_backward_recv_forward): two.
  bool pipeline_transfers_one_at_a_time = false;
  // What the stack's TP communication overlap (Stack::tp_comm_overlap) hides. False: every
  // collective is split into chunks pipelined against its own GEMM, forward and backward
  // (Transformer Engine's userbuffers, PyTorch's async TP on symmetric memory). True: the
  // collectives are issued asynchronously but the GEMMs are not chunked, so an all-gather runs
  // beside the GEMM of the rank's own shard only and the forward reduce-scatter (or all-reduce)
  // waits (nanotron's tp_linear_async_communication; StepModel::OwnShardOverlap).
  bool tp_overlap_own_shard_only = false;
  // Under fp8 (or fp4) training with sequence parallelism, the tensor-parallel all-gathers move
  // the quantized copy of what they gather, 1 byte an element instead of bf16's 2: Transformer
  // Engine casts a column-parallel layer's input before gathering it (its LayerNormLinear and
  // Linear forward, gather_along_first_dim on the quantized tensor) and quantizes a
  // row-parallel layer's output gradient before gathering it in backward
  // (grad_output_preprocess); torchao's Float8ColwiseParallel gathers its input in float8, as
  // torchtitan's float8 tensor parallelism uses it (parallelize_llama: Float8ColwiseParallel,
  // Float8RowwiseParallel, PrepareFloat8ModuleInput). The reduce-scatters stay 16-bit, and so
  // do the gathers of the row- and block-scaled recipes: torchtitan turns float8 TP on for the
  // tensorwise recipe only ("for rowwise recipes ... all-gather happens in high precision"),
  // and Transformer Engine gathers a Float8BlockQuantizer's input in high precision
  // (module/linear.py force_hp_input_gather, v2.3).
  bool tp_gathers_quantized = false;
  // How the micro-batches of a step add up the weight gradients of a stage that keeps them whole
  // (DDP, ZeRO-1). kInGemm: the weight-gradient GEMM accumulates into the buffer itself
  // (Megatron's gradient_accumulation_fusion: wgrad_gemm_accum_fp32 into main_grad), or the
  // gradients leave every micro-batch (FSDP, ZeRO-2 and -3 reduce-scatter them): no pass of its
  // own. kAutograd: the GEMM returns the gradient and PyTorch's AccumulateGrad adds it into the
  // 16-bit .grad from the second micro-batch on, a kernel reading both and writing one
  // (Megatron-DeepSpeed, whose layers.py has the fused accumulation commented out, under
  // DeepSpeed's engine). kFp32Buffer: every micro-batch's 16-bit gradient is added into an fp32
  // buffer by a kernel of its own (nanotron's FP32GradientAccumulator._accumulate_grad,
  // fp32_grad.add_(half_param.grad), with accumulate_grad_in_fp32).
  GradAccumulation grad_accumulation = GradAccumulation::kInGemm;
  // How context parallelism exchanges keys and values where the request does not say
  // (Stack::cp_comm, StepModel::AddContextParallel). kRing: K/V chunks passed around the ranks
  // beside the attention (Megatron-Core's and Transformer Engine's p2p, torchtitan's ring
  // attention). kAllToAll: DeepSpeed-Ulysses, DeepSpeed's "sequence parallelism"
  // (deepspeed/sequence/layer.py DistributedAttention): each rank's queries, keys and values for
  // its share of the sequence are exchanged for the whole sequence of its share of the heads,
  // the attention runs unsplit, and its output is exchanged back; the backward mirrors the four
  // exchanges. The all-to-alls block the compute stream (its overlap is opt-in, an sp_stream the
  // caller passes), and the heads must divide over the ranks (its layout helper asserts it).
  CpComm cp_comm = CpComm::kRing;
  // A recompute rebuilds only what the backward consumes. JAX's rematerialisation saves a
  // checkpointed function's inputs and recomputes "any residuals consumed on the backward pass
  // ... from those inputs as needed" (docs.jax.dev, "Control autodiff's saved values with
  // jax.checkpoint"); XLA then removes what nothing reads. The output of the projection that
  // ends a layer (the FFN's down projection) feeds only the next layer, whose input is saved at
  // the layer boundary, so it is never redone. PyTorch's checkpoint (Megatron's full and "mlp"
  // recompute) reruns the whole forward of the function it wraps, that projection included.
  bool recompute_only_what_backward_consumes = false;
  // Offloaded activations are copied on the compute stream, between the layer's kernels, not
  // beside them. PyTorch's torch.autograd.graph.save_on_cpu(pin_memory=True) (PyTorch 1.10 on,
  // torch/autograd/graph.py) copies each tensor autograd saves with packed.copy_(tensor) into
  // pinned host memory and brings it back with tensor.to(device, non_blocking=True), both on
  // the current stream; Transformer Engine's CPU offload context copies on a side stream while
  // the next layer runs (StepModel::HostOffload).
  bool offload_on_compute_stream = false;
  // The whole training step is one compiled program that the host dispatches asynchronously and
  // does not wait for: JAX jit-compiles the step (forward, backward, gradient reduction,
  // clipping and the optimizer update) into one XLA executable, and "uses asynchronous dispatch
  // to hide Python overheads" (docs.jax.dev, "Asynchronous dispatch"): the call returns a future
  // and the next step is enqueued while this one runs; the XLA runtime, not Python, launches the
  // kernels. Like a CUDA graph of the whole step (Stack::full_step_graph), it has no host work on
  // the step's path and no host-late rank for the others to wait for at the step's collectives
  // (GlobalParams::step_host_s, step_sync_s).
  bool step_is_one_program = false;
  // An interleaved pipeline's data-parallel state is synced model chunk by model chunk:
  // Megatron-Core's interleaved schedule (pipeline_parallel/schedules.py,
  // backward_step_helper_preprocess / _postprocess) enables a chunk's gradient reduction at its
  // last micro-batch backward (config.grad_sync_func[chunk] under --align-grad-reduce, its
  // default), and gathers a chunk's parameters ahead of its first forward
  // (config.param_sync_func[chunk]). Elsewhere the stage's reduction is priced as one, after the
  // last micro-batch (StepModel::ChunkedExposed).
  bool chunked_data_parallel_sync = false;
  // Bytes of parameters per gradient bucket of a replicated (DDP, ZeRO-1) stage; 0 = one
  // collective per unit (a layer, the embedding, the output layer). PyTorch's
  // DistributedDataParallel assigns the parameter tensors, in the reverse of their registration
  // order (about the order backward produces their gradients), to buckets of bucket_cap_mb
  // (default 25, in MiB) of the parameters' own bytes, never splitting a tensor, and reduces each
  // bucket as soon as all its gradients are ready (torch/nn/parallel/distributed.py,
  // _compute_bucket_assignment_by_size; its first bucket, 1 MiB, is not modelled): a collective,
  // with its latency, for every bucket. nanotron hands its ddp_bucket_cap_mb (default 25,
  // src/nanotron/config/config.py; trainer.py passes it as bucket_cap_mb) to that DDP and
  // reduces its fp32 accumulators bucket by bucket in the DDP communication hook.
  double ddp_bucket_bytes = 0;
  // From this software date on (a decimal year; 0 = never) the backward collective of a
  // column-parallel layer's input gradient (an all-reduce, or a reduce-scatter with sequence
  // parallelism) is issued asynchronously and runs beside that layer's weight-gradient GEMM,
  // without any TP communication overlap switched on. Megatron-LM's
  // ColumnParallelLinearWithAsyncAllreduce, on by default from 2021-09-02 (NVIDIA/Megatron-LM
  // 3f652469, "--no-async-tensor-model-parallel-allreduce ... Disable asynchronous execution of
  // tensor-model-parallel all-reduce with weight gradient compuation of a column-linear layer"),
  // then LinearWithGradAccumulationAndAsyncCommunication with sequence parallelism
  // (megatron/mpu/layers.py, 2022: reduce_scatter ... async_op=True before the weight gradient);
  // Transformer Engine's Linear and LayerNormLinear do the same in their backward (v0.8 on:
  // reduce_scatter_along_first_dim / allreduce of dgrad with async_op=True), and NeMo 1.x's
  // layers ask apex's port of Megatron's for it (nemo/collections/nlp/modules/common/megatron/
  // transformer.py: no_async_tensor_model_parallel_allreduce = TP == 1 or sequence_parallel,
  // the sequence-parallel path reducing asynchronously of its own). Megatron-DeepSpeed
  // turns it off whenever DeepSpeed runs ("DeepSpeed seems to be incompatible with
  // async_tensor_model_parallel_allreduce thus temporarily disabling it", megatron/arguments.py
  // @f4157bea), and its older fork has no such layer.
  double tp_input_grad_async_since = 0;
};

// PyTorch DistributedDataParallel's default bucket: bucket_cap_mb = 25, times 1024 * 1024.
inline constexpr double kTorchDdpBucketBytes = 25.0 * (1 << 20);

// Pipeline stages one GPU holds in a pipeline of `pp` stages under the framework's schedule: 2
// under DualPipe (one per direction), else 1.
int StagesPerGpu(const FrameworkBehaviour& behaviour, int pp);

// One release of a framework: what its stack had out of the box, and when it shipped.
struct FrameworkVersion {
  // As the framework's users number it ("24.09" for a NeMo container, "0.8" for Megatron-Core,
  // "2.4" for PyTorch, "2024.12" for a dated snapshot), compared as dotted numbers within its
  // numbering.
  std::string version;
  Stack defaults;      // version, release and software_date filled
  double date = 0;     // when it shipped, as a decimal year (2024.62 = mid-August 2024)
  std::string source;  // the release note, tag or file the features and date come from
  // Another framework whose release this is, taken whole ("nemo": a NeMo container number asked
  // of megatron); empty for the framework's own.
  std::string from;
  // Numbered by its date (a container "24.09", a snapshot "2024.12": IsDatedVersion(version)),
  // read once when the table is built: placing a version reads it for every release.
  bool dated = false;
};

struct Framework {
  std::string name;    // "nemo", "torchtitan", ...; "" = generic
  std::string family;  // "megatron", "pytorch-fsdp", "deepspeed", "jax", "generic"
  std::string description;
  FrameworkCapabilities capabilities;  // today's release's (CapabilitiesAt for an older one)
  // capabilities.At each date of capabilities.since, oldest first, from when it holds (the last
  // is today's, which CapabilitiesAt hands out as `capabilities`): built with the table, so
  // CapabilitiesAt hands out a reference that lives as long as the table.
  std::vector<std::pair<double, FrameworkCapabilities>> capability_eras;
  FrameworkBehaviour behaviour;
  std::vector<FrameworkVersion> versions;  // by date, oldest first; the last is the default
  // Why some of `versions` are another framework's (FrameworkVersion::from), and its source.
  std::string taken_releases;
};

// When the newest release the table knows shipped: "today's software" for a request that names
// no version (decimal year).
double NewestSoftwareDate();

// The release a version string names, in the framework's own numbering, written as tags, images
// and wheels write it ("v0.14.4", "core_v0.13.0rc2", "nvcr.io/nvidia/nemo:24.09", "24.07-py3",
// "2.4.0+cu121", "2025-01-15"): an exact match; else the newest release not after it in the same
// numbering (a container "YY.MM" or a dated "YYYY.MM" compares by date with every release, "0.8"
// with the framework's own numbers of its series: 0.x apart from the rest). A dated version older
// than every release takes the oldest; an own number older than every release of its series, the
// newest release dated before that series; one in no numbering the table has, the newest.
// `note` is set (a warning naming `path`.version, in words) whenever the match is not exact;
// never an error. The path is `path` + `sub`, joined only for a note.
const FrameworkVersion& ResolveRelease(const Framework& framework, absl::string_view version,
                                       absl::string_view path, std::string* note,
                                       absl::string_view sub = "");

// Whether a version names a date ("24.09", "2025.01", "2024-06-15", an image tag of one): the
// numbering every framework's containers and snapshots share, so it dates the libraries even of
// a framework the table does not know; "0.8" or "2.4" is a framework's own number.
bool IsDatedVersion(absl::string_view version);
// The date a dated version names, as a decimal year ("24.09" and "2024-09-15" are September
// 2024; a year alone is its middle); 0 for a version that names no date.
double DatedVersionYear(absl::string_view version);

// Every framework the service knows, in table order ("" = generic first).
const std::vector<Framework>& Frameworks();

// What the framework's release of `date` (Stack::software_date; <= 0: today's) can run.
const FrameworkCapabilities& CapabilitiesAt(const Framework& framework, double date);

// A project priced as a framework of the table but numbered apart from it: its release tags, each
// dated by its tagged commit. Composer and llm-foundry are both composer-fsdp, and their 0.x
// numbers collide (Composer 0.12 is of 2022-12, llm-foundry 0.12 of 2024-09), so a number is read
// in the numbering of the name the request wrote (ResolvePricedStack), as its tag's date.
struct ProjectTags {
  absl::string_view project;    // the name users write, as FindFramework keys it
  absl::string_view framework;  // the table's framework it is priced as
  std::vector<std::pair<const char*, double>> tags;  // version and date, oldest first
  const char* source;
};
const std::vector<ProjectTags>& TaggedProjects();

// A release date (a decimal year) as its month, "2024-07".
std::string YearMonthOf(double date);
// The framework of that name or of one of the names its users write for it ("megatron-lm",
// "megatron-bridge", "llm-foundry", "pytorch" for plain PyTorch, ...), in any case and with `_`
// or a space for `-`; nullptr for any other name (a prediction prices it as the generic
// framework, with a warning: ResolvePricedStack below).
const Framework* FindFramework(absl::string_view name);
// The generic framework (name ""), for unknown names in internal callers.
const Framework& GenericFramework();
// "megatron, nemo, ..." for error messages.
std::string FrameworkNames();

// Resolves a scenario's stack: the framework's defaults for the requested version (ResolveRelease;
// the newest when none is given, with today's software date), then the request's overrides, then
// the fp8 recipe implied by the precision (mxfp8 and nvfp4 are their own recipes; fp8 with no
// recipe takes the version's default, delayed when it has none). Errors name the field
// under `path` + `sub` ("scenario" + ".stack": "scenario.stack.fp8_recipe: mxfp8 needs precision
// mxfp8"), joined only for an error or a note.
absl::StatusOr<Stack> ResolveStack(const Framework& framework, const StackOptions& options,
                                   Precision precision, absl::string_view path = "scenario.stack",
                                   absl::string_view sub = "");

// The stack of the framework a scenario names (`framework` set to it, `framework_name` to its
// table name), for pricing: a name the table does not know is answered, never refused, as the
// generic framework (plain eager PyTorch, the stack of no known features), kept as written, with
// a note in the stack's release_note naming `path`.framework (plain "framework" for an empty
// `path`: a request that holds them at its top) and the known names; its version is
// kept where it names a date (IsDatedVersion), which dates the libraries, and cleared from
// `options` where it is the framework's own numbering, which is not PyTorch's (today's
// libraries). Then ResolveStack.
absl::StatusOr<Stack> ResolvePricedStack(std::string* framework_name, StackOptions* options,
                                         Precision precision, absl::string_view path,
                                         const Framework** framework);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_FRAMEWORK_H_
