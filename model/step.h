// The step-time, memory and power model of one resolved scenario, for any complete layout.
// Built once per scenario (shape, hardware and profile resolved), then evaluated per layout; the
// planner evaluates thousands of layouts against one StepModel.
#ifndef SCALECAST_MODEL_STEP_H_
#define SCALECAST_MODEL_STEP_H_

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/hardware.h"
#include "model/profile.h"
#include "model/types.h"
#include "model/workload.h"

namespace scalecast {

// Forward and backward cost of one transformer layer for one micro-batch on one GPU.
struct LayerCost {
  double fwd_s = 0;  // GEMMs + attention + memory-bound kernels
  double bwd_s = 0;
  double recompute_s = 0;   // extra forward work in backward
  double tp_fwd_s = 0;      // tensor-parallel collectives, forward
  double tp_bwd_s = 0;      // including the recomputed forward's
  double tp_exposed_s = 0;  // what sticks out of the GEMMs (all of it without TP overlap)
  double tp_bytes = 0;      // per layer, forward + backward
  double cp_fwd_s = 0;      // context-parallel KV exchange, total and exposed
  double cp_bwd_s = 0;
  double cp_exposed_s = 0;
  double cp_bytes = 0;
  double ep_fwd_s = 0;  // expert-parallel dispatch and combine all-to-alls, total and exposed
  double ep_bwd_s = 0;
  double ep_exposed_s = 0;
  double ep_bytes = 0;
  double flops_redo = 0;   // FLOPs recomputed per layer per micro-batch
  double host_wait_s = 0;  // of fwd_s + bwd_s: the GPU waiting for the host's launches
};

// Layer costs a StepModel already computed, keyed by what a layer's cost depends on (tp, cp, ep,
// etp, sequence parallelism, micro batch, recompute, its modules and its share of layers, and the
// share of a step's fp8 weight casts a micro-batch pays): a planner's layouts differ mostly in pp,
// vpp, dp and sharding, which leave the layer alone but for that share. One per
// thread of work (not thread-safe) and per StepModel; it holds at most kMaxEntries costs and starts
// over when full.
class LayerCache {
 public:
  static constexpr size_t kMaxEntries = 4096;

 private:
  friend class StepModel;
  struct Key {
    int tp, cp, ep, etp, micro_batch;
    unsigned recompute_modules;
    int recompute;
    double recompute_share;    // of a stage's layers, under full recompute (recompute_layers / pp)
    double weight_cast_share;  // StepModel::WeightCastShare: depends on pp and dp
    bool sp;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, LayerCost, KeyHash> costs_;
};

// At most one entry per block kind (attention, Mamba, dense FFN, MoE), or per GPU a layout's
// memory is bounded by, kept without a heap allocation: the planner builds these for every
// layout it tries.
template <typename T>
class BlockList {
 public:
  void push_back(const T& v) { items_[n_++] = v; }
  const T& front() const { return items_[0]; }
  const T& operator[](int i) const { return items_[i]; }
  int size() const { return n_; }
  T* begin() { return items_.data(); }
  T* end() { return items_.data() + n_; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + n_; }

 private:
  std::array<T, 4> items_{};
  int n_ = 0;
};

class StepModel {
 public:
  // `s` must be resolved (ResolveScenario). status() says whether the accelerator exists.
  StepModel(const Scenario& s, const Catalog& catalog, const Profile& profile);
  // From a resolution's findings (model/predictor.h Resolve): no lookups, always ok.
  StepModel(const Scenario& s, const Accelerator& accelerator, const Framework& framework,
            const Stack& stack, const Profile& profile);
  const absl::Status& status() const { return status_; }

  // Full prediction for a complete layout; dp is derived from the GPU count. `memory`, when
  // given, is Memory(layout) already computed (the planner checks it first); `cache`, when given,
  // keeps the layer costs for the next layouts (the same prediction either way).
  Prediction Evaluate(const Parallelism& layout, const MemoryBreakdown* memory = nullptr,
                      LayerCache* cache = nullptr) const;

  // Memory per GPU only (cheap), for pruning.
  MemoryBreakdown Memory(const Parallelism& layout) const;

  const Scenario& scenario() const { return s_; }
  const Accelerator& accelerator() const { return *acc_; }
  const Stack& stack() const { return stack_; }
  const Framework& framework() const { return *framework_; }

 private:
  // The named steps of Evaluate; each returns seconds per optimizer step (or per micro-batch).
  struct HeadCost {  // embedding, final norm, logits and loss on the last stage
    double fwd_s = 0, bwd_s = 0;
    // A multi-token prediction module's own work besides its layer and its head: the two norms
    // and the 2h -> h projection.
    double mtp_fwd_s = 0, mtp_bwd_s = 0;
  };
  struct StageCost {    // the slowest pipeline stage, per micro-batch
    double layers = 0;  // transformer layers on it, multi-token prediction layers included
    int heads = 0;      // passes through the output layer and loss: 1 + MTP modules, or 0
    int mtp = 0;        // multi-token prediction modules on it
    double head_fwd_s = 0, head_bwd_s = 0;  // its heads and MTP projections
    double t_mb = 0;                        // compute + exposed TP/CP per micro-batch
    bool has_head() const { return heads > 0; }
  };
  struct CommTerm {
    double total = 0, exposed = 0, bytes = 0;
    int ranks = 0;
  };
  struct DataParallelComm {
    CommTerm allgather, reducescatter, allreduce;
    double optimizer_shard = 1;
    double stage_params = 0;      // parameters the slowest stage's GPU holds
    double optimizer_params = 0;  // of which it updates (its shards under ZeRO / FSDP)
  };

  // One block of a layer (attention, Mamba mixer, dense FFN, MoE FFN) for one micro-batch.
  struct BlockCost {
    double gemm_f = 0, gemm_b = 0;  // GEMMs forward, backward (input + weight gradients)
    // Forward of the row-parallel GEMM, the one before the block's TP reduce (0 in a MoE block,
    // whose experts shard over their own ranks).
    double row_f = 0;
    // Forward time and FLOPs of the projection that ends the layer (the dense FFN's down
    // projection): its output feeds only the next layer, so a recompute that rebuilds only what
    // the backward consumes (FrameworkBehaviour::recompute_only_what_backward_consumes) skips it.
    double tail_f = 0, tail_flops = 0;
    double core_f = 0, core_b = 0;            // attention core / SSD scan
    double mem_f = 0, mem_b = 0;              // memory-bound kernels
    double matmul_flops_f = 0;                // forward FLOPs of its GEMMs
    double core_flops_f = 0;                  // forward FLOPs of its attention core / scan
    double ep_f = 0, ep_b = 0, ep_bytes = 0;  // all-to-all dispatch + combine
    // Its TP-group collectives, in blocks' worth (one all-gather and one reduce-scatter of the TP
    // group's tokens at the hidden width, or one all-reduce without sequence parallelism). A TP
    // overlap hides them behind the GEMMs beside them: all of the block's but the solo ones (a
    // MoE layer's router and routed experts under sequence parallelism).
    double tp_share = 1;
    double solo_gemm_f = 0, solo_gemm_b = 0;
    // Width of the input its column-parallel GEMMs gather under sequence parallelism (0: the
    // hidden width; MLA gathers its latents).
    double tp_gather_width = 0;
    // Forward time and FLOPs of what each recompute module rebuilds (by RecomputeModule).
    std::array<double, kRecomputeModules> redo_f{}, redo_flops{};
    double fwd() const { return gemm_f + core_f + mem_f; }
    double bwd() const { return gemm_b + core_b + mem_b; }
  };
  struct BlockContext;  // the micro-batch's token counts and the layout (step.cc)
  // Biased experts whose framework adds the bias outside the grouped GEMM: the memory-bound
  // time it costs per micro-batch, forward and backward (zero otherwise).
  struct ExpertBiasCost {
    double fwd_s = 0, bwd_s = 0;
  };
  ExpertBiasCost ExpertBias(double rows, double local_experts) const;
  // The MoE layer's shared experts (a dense FFN over the TP group's tokens) into `b`.
  void AddSharedExperts(const BlockContext& x, BlockCost* b) const;
  // The MoE layer's dispatch and combine all-to-alls of `routed` copies over the EP group, and
  // the expert-tensor ranks' gather and reduce-scatter (at the busiest rank's `load`), into `b`.
  void AddExpertComm(const BlockContext& x, double routed, double load, BlockCost* b) const;
  // How parameter state is split and sharded per GPU.
  struct StateShards {
    double expert_split = 1;  // ep * etp: routed experts' split (dense params: by tp)
    double dense = 1;         // shards of dense state (ZeRO/FSDP over dp*cp, HSDP's group)
    double expert = 1;        // shards of expert state (over the expert-data-parallel ranks)
    int dense_ranks = 1;      // dp * cp
    int expert_ranks = 1;     // tp * dp * cp / (ep * etp)
  };
  StateShards Shards(const Parallelism& p) const;
  struct ActivationBytes {  // per token of the TP group's micro-batch, per layer (average)
    double saved = 0;       // saved for backward under the layout's recompute
    double full_layer = 0;  // one layer's in full (rebuilt in backward under full recompute)
  };
  ActivationBytes ActivationsPerToken(const Parallelism& p) const;
  // One kind of block the layout's layers hold, per token of the TP group's micro-batch: what
  // selective recompute keeps and drops of it, and what each recompute module frees.
  struct SavedBlock {
    double count = 0;    // blocks of this kind in the model
    double kept = 0;     // GEMM outputs kept under selective recompute (input projections)
    double dropped = 0;  // what selective recompute drops (activation / attention output)
    bool attention = false;
    std::array<double, kRecomputeModules> freed{};  // by RecomputeModule
  };
  // The blocks of one layer on average. `in` is the bytes an element of a GEMM's saved input
  // takes, `load` the busiest EP rank's expert load, `swiglu_in` the bytes an element of the
  // routed experts' saved SwiGLU input takes.
  static BlockList<SavedBlock> BlocksOf(const Shape& m, const Parallelism& p, double in,
                                        double load, double swiglu_in);
  BlockList<SavedBlock> SavedBlocks(const Parallelism& p) const;
  // Bytes an element of a GEMM's saved input takes: its fp8 copy under fp8 training, else bf16.
  double SavedInputBytes() const;
  // What one kind of block saves per token under the layout's recompute, out of `none` (what it
  // saves without recompute); `input` is its bf16 input.
  static double SavedUnderRecompute(const SavedBlock& b, const Parallelism& p,
                                    SelectivePolicy policy, double none, double input);
  // ActivationsPerToken from the layout's blocks.
  ActivationBytes PerToken(const BlockList<SavedBlock>& blocks, const Parallelism& p) const;
  // Memory's named steps. Weights, gradients and optimizer state per GPU, in bytes, under the
  // layout's sharding; the FSDP stage a pipelined step keeps gathered is apart (Memory rounds
  // each part to bytes on its own).
  struct StateBytes {
    double weights = 0, gradients = 0, optimizer = 0;
    double weights_gathered = 0, gradients_whole = 0;
  };
  // `layers` transformer layers on one GPU (both its stages under DualPipe); `heads`: the GPU
  // also holds the embedding and the output layer (and the loss's logits).
  StateBytes ModelStates(const Parallelism& p, double layers, bool heads) const;
  // Activations per GPU at peak, in bytes: on the device, and in host memory for offloaded layers.
  struct ActivationMemory {
    double device = 0, host = 0;
    bool offloads = false;
  };
  // What one GPU holds: its transformer layers (both its stages' under DualPipe), the layers'
  // activations live on it at the peak in layer-micro-batches (each stage's layers times the
  // micro-batches in flight on that stage), and whether it holds the embedding, the output
  // layer and the loss.
  struct GpuShare {
    double layers = 0;
    double live = 0;
    bool heads = false;
  };
  ActivationMemory Activations(const Parallelism& p, const GpuShare& share,
                               const ActivationBytes& per_token) const;
  // The GPUs whose memory bounds a layout's: one (the fullest stage), or DualPipe's end GPUs and
  // (pp > 2) middle ones, the fuller of which sets the need.
  BlockList<GpuShare> GpuShares(const Parallelism& p) const;
  // Context parallelism's transient buffers at the backward of an attention layer: the
  // all-gather exchange's whole-sequence keys and values and their gradients (zero for the
  // others, whose buffers are a rank's own share).
  double CpGatherBytes(const Parallelism& p) const;
  MemoryBreakdown GpuMemory(const Parallelism& p, const GpuShare& share, const StateBytes& states,
                            const ActivationBytes& per_token) const;

 public:
  // One layout's memory under several selective-recompute module sets (the planner's module
  // ladder, model/planner.h): the model states and what each module frees of each block, the
  // same under every set, worked out once.
  class ModuleMemory {
   public:
    // Memory(layout) with recompute selective and these modules (0: the framework's own).
    MemoryBreakdown With(uint32_t modules) const;
    // The memory before the layers' activations, which no recompute goes below: where it does
    // not fit, no module set does (and With is not to be asked).
    const MemoryBreakdown& floor() const { return floor_; }

   private:
    friend class StepModel;
    const StepModel* model_ = nullptr;
    Parallelism layout_;
    BlockList<GpuShare> shares_;
    BlockList<StateBytes> states_;
    BlockList<SavedBlock> blocks_;
    MemoryBreakdown floor_;
  };
  ModuleMemory MemoryByModules(const Parallelism& layout) const;

 private:
  // Bytes a gradient takes in memory and on the wire: 2 when the stack reduces in bf16, else 4.
  double GradBytes() const { return stack_.bf16_grads ? 2.0 : 4.0; }
  // Bytes a parameter in the sharded optimizer's or FSDP's parameter all-gather: bf16, or fp8
  // for an fp8 run whose stack keeps fp8 primary weights (Stack::fp8_param_gather).
  double ParamGatherBytes() const;
  BlockCost AttentionBlock(const BlockContext& x) const;
  BlockCost MambaBlock(const BlockContext& x) const;
  BlockCost DenseFfnBlock(const BlockContext& x) const;
  BlockCost MoeBlock(const BlockContext& x) const;
  // AttentionBlock's named steps: the linear layers, the attention core, and the bytes of its
  // memory-bound kernels a forward.
  void AddAttentionGemms(const BlockContext& x, BlockCost* b) const;
  void AddAttentionCore(const BlockContext& x, BlockCost* b) const;
  double AttentionTraffic(const BlockContext& x) const;
  // MoeBlock's named steps. The routed rows of one micro-batch on this GPU: the tokens it routes
  // (`own`) and their copies (`routed`), its experts, the busiest rank's load, and the rows per
  // local expert and in all.
  struct ExpertRows {
    double own = 0, routed = 0, local_experts = 0, load = 1, per_expert = 0, rows = 0;
  };
  ExpertRows RowsOf(const BlockContext& x) const;
  // The routed experts' grouped GEMMs, latent MoE's projections and the router, into `b`.
  void AddExpertGemms(const BlockContext& x, const ExpertRows& r, BlockCost* b) const;
  // Bytes of the MoE layer's memory-bound kernels a forward.
  double MoeTraffic(const BlockContext& x, const ExpertRows& r) const;
  // What a block's recompute repeats in the backward under the layout's recompute.
  struct Redo {
    double s = 0;            // forward time repeated
    double flops = 0;        // forward FLOPs repeated
    double all_to_alls = 0;  // the share of the MoE dispatch and combine run again
  };
  Redo RecomputeOf(const BlockCost& b, bool attention, const Parallelism& p) const;
  // The share of a stage's layers a full recompute repeats (Parallelism::recompute_layers of the
  // stage's layers; 1 for every layer), 0 without full recompute.
  double FullRecomputeShare(const Parallelism& p) const;
  // Micro-batches a step on each pipeline: the global batch over dp x the micro batch (dp from
  // the GPU count).
  int64_t MicroBatchesPerStep(const Parallelism& p) const;
  // The share of a micro-batch's passes the 1F1B all-to-all overlap (Stack::ep_comm_overlap)
  // runs alone, with no other micro-batch's opposite pass to hide its all-to-alls behind: the
  // warm-up forwards and cool-down backwards of Megatron-Core's combined 1F1B schedule.
  double UnpairedPassShare(const Parallelism& p) const;
  // The share of a step's low-precision weight casts one micro-batch pays: 1 / micro-batches a
  // step where the stack caches the cast weights for the step
  // (FrameworkBehaviour::low_precision_weights_cached), else 1.
  double WeightCastShare(const Parallelism& p) const;
  // One norm over the block's input (the layernorm recompute module).
  double NormTime(const BlockContext& x) const;
  // Memory-bound bytes of the block's norm and residual add, and of an FFN's activation over
  // rows x width, each scaled as the stack runs that kernel (Hardware::traffic_scale).
  double NormScale() const;
  // Bytes an element of the residual stream takes (fp32 under autocast over fp32 parameters).
  double StreamBytes() const;
  // Bytes of a block's input and weight casts in one micro-batch (fp8 recipe, autocast).
  double InputCastTraffic(const BlockContext& x, double stream_in, double inner_in,
                          double params) const;
  double NormResidualTraffic(const BlockContext& x) const;
  double ActivationTraffic(double rows, double width) const;
  // The layout's view of one micro-batch: its tokens, the split axes, the precision.
  BlockContext MakeBlockContext(const Parallelism& p) const;
  // TP collectives, one way: all-gather and reduce-scatter with sequence parallelism, else one
  // all-reduce (the others 0), and the bytes a GPU sends for them.
  struct TpCollectives {
    double gather = 0, scatter = 0, all_reduce = 0, sent = 0;
    void Add(const TpCollectives& o, double w) {
      gather += w * o.gather;
      scatter += w * o.scatter;
      all_reduce += w * o.all_reduce;
      sent += w * o.sent;
    }
  };
  // One block's: a gather of the TP group's tokens `gather_width` wide and a reduce-scatter at the
  // hidden width (an all-reduce without sequence parallelism).
  TpCollectives BlockTensorParallel(const Parallelism& p, const BlockContext& x,
                                    double gather_width) const;
  // A layer's tensor-parallel collectives (`k`, its blocks' summed), hidden behind the GEMMs
  // beside them (`gemms`: gemm_f, gemm_b and row_f, summed over the blocks) as far as the stack
  // overlaps them.
  void AddTensorParallel(const Parallelism& p, const TpCollectives& k, const BlockCost& gemms,
                         LayerCost* c) const;
  // Their exposed time when only the GEMM of the rank's own shard runs beside an all-gather
  // (FrameworkBehaviour::tp_overlap_own_shard_only).
  double OwnShardOverlap(int tp, const TpCollectives& k, double redone,
                         const BlockCost& gemms) const;
  // Exposed time of the column-parallel input gradients' backward collectives, run beside their
  // weight-gradient GEMMs (asynchronous TP of either kind).
  double ColumnInputGradExposed(const TpCollectives& k, const BlockCost& gemms) const;
  // The key/value heads a TP rank holds, and the bytes of their keys and values for `tokens`
  // tokens: what context parallelism exchanges.
  double LocalKvHeads(int tp) const;
  double CpKvBytes(int tp, double tokens) const;
  // Context-parallel exchange of the attention layers (w of a layer), beside their attention
  // core (core_f, core_b), as the stack runs it (Stack::cp_comm).
  void AddContextParallel(const Parallelism& p, const BlockContext& x, double w, double core_f,
                          double core_b, LayerCost* c) const;
  // Its parts, each added to `c`. `kv_bytes`: the keys and values of a rank's share of the
  // sequence; `local_kv`: the key/value heads a TP rank holds; `g`: the ranks that exchange.
  // The ring (p2p): kv_bytes passed g.ranks - 1 times beside the attention core.
  void AddRingContextParallel(const Group& g, double kv_bytes, double w, double core_f,
                              double core_b, LayerCost* c) const;
  // All-to-all (a2a, Ulysses) over g.
  void AddAllToAllContextParallel(const Parallelism& p, const BlockContext& x, double w,
                                  double local_kv, const Group& g, LayerCost* c) const;
  // The whole sequence's keys and values gathered over g (allgather): blocking, but for the
  // backward's collectives under XLA, which hide behind the layer's backward less its attention
  // core (`core_b`).
  void AddAllGatherContextParallel(const Group& g, double kv_bytes, double w, double core_b,
                                   LayerCost* c) const;
  // A two-level (a2a+p2p) exchange's all-to-all group: the one asked for (Parallelism::cp_a2a),
  // else CpAllToAllRanks's; 0 for any other exchange or without context parallelism.
  int CpA2aRanks(const Parallelism& p) const;
  // The time a host-bound dropless MoE layer adds to the layer's forward and backward.
  void AddHostWait(const Parallelism& p, LayerCost* c) const;
  // Tokens the busiest EP rank's experts take relative to an even share.
  double ExpertLoad(int ep) const;
  // The average layer: every block kind weighted by how many layers have it.
  LayerCost ComputeLayer(const Parallelism& p) const;
  // ComputeLayer, through `cache` when given.
  LayerCost Layer(const Parallelism& p, LayerCache* cache) const;
  // The output layer's vocabulary width on one TP rank: padded to kMegatronVocabMultiple x tp
  // by a Megatron-family framework, to kGemmAlignElements by torch.compile, as given otherwise.
  double OutputWidth(int tp) const;
  HeadCost ComputeHead(int tp, double tokens) const;
  StageCost SlowestStage(const Parallelism& p, const LayerCost& lc, const HeadCost& head) const;
  // Pipeline stages one GPU holds: 2 under DualPipe (one per direction), else 1.
  int StagesPerGpu(const Parallelism& p) const;
  // Whether a framework behaviour dated `since` (a decimal year; 0 = never) is in this stack.
  bool InEffect(double since) const;
  // Whether the stage reduces its gradients once a step, after the last micro-batch's backward
  // (FrameworkBehaviour::pipeline_reduces_once_since).
  bool ReducesOncePerStep(const Parallelism& p) const;
  // The pipeline's idle time a step, in micro-batches of the slowest stage (PipelineSchedule).
  double BubbleMicroBatches(const Parallelism& p, const LayerCost& lc) const;
  // Time a micro-batch spends adding its weight gradients into the stage's accumulator where
  // the framework does that in a pass of its own (FrameworkBehaviour::grad_accumulation).
  double GradAccumulationTime(const Parallelism& p, double stage_params,
                              double micro_batches) const;
  CommTerm PipelineP2p(const Parallelism& p, double micro_batches, double tokens) const;
  // The copies of offloaded layers' activations to host memory and back (cpu_offload_layers).
  CommTerm HostOffload(const Parallelism& p, const LayerCost& lc, double micro_batches,
                       double tokens) const;
  // Layers of a stage whose activations wait in host memory.
  double OffloadedLayers(const Parallelism& p) const;
  // Data-parallel traffic of a step, in three named steps: the units it moves in, then the
  // sharded (FSDP / HSDP) or the replicated (DDP / ZeRO) schedule.
  DataParallelComm DataParallel(const Parallelism& p, const StageCost& stage, const LayerCost& lc,
                                double micro_batches) const;
  // One FSDP unit / gradient bucket of the slowest stage: its dense parameters (split by TP),
  // its routed-expert parameters (split by EP x ETP), and the compute beside which it moves.
  struct GradUnit {
    double dense = 0, expert = 0, fwd = 0, bwd = 0;
  };
  // Units whose parameters move in the same time (the collectives see only their sizes).
  static bool SameSize(const GradUnit& a, const GradUnit& b) {
    return a.dense == b.dense && a.expert == b.expert;
  }
  // Consecutive units of one size: the stage's layers are one run.
  struct UnitRun {
    GradUnit unit;
    int count = 0;
  };
  // The units of the slowest stage and the groups their state moves over.
  struct DataParallelSetup {
    // (embedding,) layers, output layer: at most three runs, kept without a heap allocation.
    std::array<UnitRun, 3> runs;
    int run_count = 0;
    int layer_run = -1;  // the run of whole layers (their tensors: ddp_layer_tensors_)
    void Add(const GradUnit& u, int count) {
      if (count > 0) runs[run_count++] = {u, count};
    }
    // Every unit in order, for the schedules that walk them one by one.
    std::vector<GradUnit> Units() const;
    double dense_params = 0, expert_params = 0;
    StateShards shards;         // its ranks: dense_ranks (dp * cp), expert_ranks, expert_split
    Group dp_group, edp_group;  // the same ranks as groups on the topology
    double c_f = 0, c_b = 0;    // the stage's compute per micro-batch, forward and backward
  };
  // The share of DP communication the stack overlaps with compute (0: issued after it).
  double DpOverlapEff() const { return stack_.dp_overlap ? overlap_eff_ : 0.0; }
  DataParallelSetup DataParallelUnits(const Parallelism& p, const StageCost& stage,
                                      const LayerCost& lc) const;
  // One collective over a unit: its dense part over `dense_group`, its expert part over
  // `expert_group`.
  double UnitCollective(Collective c, const GradUnit& u, double bytes_per_param,
                        const Group& dense_group, const Group& expert_group) const;
  // A replicated stage's gradient reduction: its total time and the time of the collective that
  // starts last (the first unit's, whose gradients are ready last).
  struct Reduction {
    double total_s = 0, last_s = 0;
  };
  // One collective per unit (a layer, the embedding, the output layer).
  Reduction ReducePerUnit(Collective c, const DataParallelSetup& d) const;
  // PyTorch DDP's buckets (FrameworkBehaviour::ddp_bucket_bytes): the parameter tensors in the
  // order backward produces their gradients, a bucket reduced once it holds the cap; a tensor
  // is never split, so one larger than the cap fills a bucket alone.
  Reduction ReduceInDdpBuckets(Collective c, const DataParallelSetup& d) const;
  // The two schedules; each takes what DataParallel filled in (parameters, ranks) and returns
  // it completed. FSDP / HSDP: each unit gathered before its forward and backward and its
  // gradients reduce-scattered after, beside the neighbouring units' compute (per micro-batch
  // unless the framework keeps a pipeline stage gathered).
  DataParallelComm ShardedDataParallel(const Parallelism& p, const DataParallelSetup& d,
                                       double micro_batches, DataParallelComm out) const;
  // DDP / ZeRO: gradients reduced in buckets during the last micro-batch's backward, ZeRO's
  // parameters gathered beside the next forward.
  DataParallelComm ReplicatedDataParallel(const Parallelism& p, const DataParallelSetup& d,
                                          double micro_batches, DataParallelComm out) const;
  // What of a step's data-parallel collective `total` stays exposed beside `pass_s`, one
  // micro-batch's pass over the stage's layers, whose edge unit (the last reduced, the first
  // gathered) takes `edge_s` and waits for nothing. An interleaved pipeline of a framework that
  // syncs each of its vpp model chunks on its own (FrameworkBehaviour::chunked_data_parallel_sync)
  // hides all chunks but the edge one behind the passes still to run.
  double ChunkedExposed(const Parallelism& p, double total, double edge_s, double pass_s) const;
  PowerEstimate Power(double step, double comm_exposed, double bubble) const;
  // What the step's warnings weigh against the step: the pipeline bubble, the exposed
  // communication and the GPU's wait for the host's launches, in seconds.
  struct StepShares {
    double step = 0, comm_exposed = 0, bubble = 0, host_wait = 0;
  };
  void AddWarnings(const Parallelism& p, const StepShares& shares, Prediction* out) const;
  // AddWarnings' parts, in the order a prediction lists them: what the layout asks of the GPU
  // (memory, a described accelerator, TP beyond the NVLink domain), where the step's time goes
  // (bubble, exposed communication, host waits), and what the platform does not do as asked.
  void AddLayoutWarnings(const Parallelism& p, const MemoryBreakdown& mem,
                         std::vector<std::string>* w) const;
  void AddShareWarnings(const StepShares& shares, std::vector<std::string>* w) const;
  void AddPlatformWarnings(std::vector<std::string>* w) const;

  Scenario s_;
  absl::Status status_;
  // The constructors' common part, once the accelerator and the stack are known.
  void Init(const Accelerator& accelerator, const Framework& framework, const Stack& stack,
            const Profile& profile);

  const Accelerator* acc_ = nullptr;
  const Framework* framework_ = nullptr;
  Stack stack_;
  Shape shape_;
  ParamCount params_;
  Hardware hw_;
  // The same GPU for the GEMMs a framework keeps in 16-bit when the layers train in fp8 (equal
  // to hw_ otherwise): the output layer (Megatron-Core builds it as its own ColumnParallelLinear,
  // not a Transformer Engine module, so fp8_autocast leaves it alone; torchtitan's float8
  // conversion skips the module named "output"; MPT's tied head is a plain F.linear) and the MoE
  // router (a plain fp32 or bf16 linear).
  Hardware hw16_;
  double overlap_eff_ = 0;
  double stack_efficiency_ = 1;
  double comm_slowdown_ = 0;
  // GlobalParams::step_host_s + step_sync_s x log2(GPUs); 0 under a whole-step graph.
  double step_host_s_ = 0;
  // GlobalParams::layer_host_s as this stack dispatches a layer: eager in full, fused or
  // compiled in part (kFusedHostShare), 0 from a graph or a step compiled as one program.
  double layer_host_s_ = 0;
  // Bytes an element a sequence-parallel TP all-gather moves (2, or the fp8 copy's 1).
  double tp_gather_bytes_ = 2;
  double ssd_flops_per_sm_clock_ = 0;  // GlobalParams::ssd_kflops_per_sm_clock, in FLOPs
  bool pads_vocab_ = false;            // a Megatron-family framework: kMegatronVocabMultiple x tp
  // A layer's parameter tensors as shares of its dense parameters, in backward order, for a
  // framework that reduces in DDP buckets (LayerTensorShares in step.cc); empty otherwise.
  std::vector<double> ddp_layer_tensors_;
  double model_flops_per_token_ = 0;
  bool moe_balanced_ = false;
  // Why the stack's fused attention kernel cannot run these head widths (UnfusedAttentionOf):
  // attention then runs unfused, and the prediction says why.
  UnfusedAttention unfused_attention_ = UnfusedAttention::kNo;
  MoeParams moe_;  // tokens spread evenly over experts (benchmarks' forced balance)
};

}  // namespace scalecast

#endif  // SCALECAST_MODEL_STEP_H_
