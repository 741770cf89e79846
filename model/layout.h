// The layout axes: for each axis (tensor, pipeline and its split, context, data, micro-batch,
// sharding) one function that lists the candidates the planner tries and one that says why a
// fixed value is not valid. The scenario check (ResolveScenario), the planner and the CSV import
// all use these, so a fixed layout gets exactly the planner's rules.
#ifndef SCALECAST_MODEL_LAYOUT_H_
#define SCALECAST_MODEL_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "model/framework.h"
#include "model/types.h"

namespace scalecast {

// What the axis rules need to know about a scenario.
struct LayoutContext {
  const ModelSpec* model = nullptr;
  int seq_len = 0;
  int64_t global_batch = 0;
  int num_gpus = 0;
  int domain = 8;  // NVLink domain size
  const Framework* framework = nullptr;
  // What the framework's release of software_date can run (CapabilitiesAt); null: today's.
  const FrameworkCapabilities* capabilities = nullptr;
  double software_date = 0;
  CpComm cp_comm = CpComm::kRing;  // context parallelism's exchange (Stack::cp_comm)
  bool host_offload = false;       // the accelerator's entry gives a host link and host memory
  bool tpu = false;                // the accelerator is a TPU (IsTpu)
};

// The context of a resolved scenario whose NVLink domain is `domain` GPUs, for the framework's
// release and exchanges of the resolved `stack` (its software_date and cp_comm; null: today's
// release with the framework's defaults).
LayoutContext MakeLayoutContext(const Scenario& s, int domain, const Stack* stack = nullptr);
// The same with the scenario's framework already looked up (ResolvedScenario::framework).
LayoutContext MakeLayoutContext(const Scenario& s, int domain, const Framework* framework,
                                const Stack* stack = nullptr);
// The same on the scenario's accelerator `acc`: its NVLink domain in the scenario's nodes
// (DomainSize), whether it offloads (CanOffload) and whether it is a TPU (IsTpu); null: an
// 8-GPU domain, neither.
LayoutContext MakeLayoutContext(const Scenario& s, const Accelerator* acc,
                                const Framework* framework, const Stack* stack);

// Transformer layers per pipeline stage; with interleaving each stage's layers are spread over
// vpp chunks. pp == 1: `first` holds every layer.
struct PipelineSplit {
  int first = 0;    // layers on the first stage (which also holds the embedding)
  int middle = 0;   // layers on the busiest middle stage
  int last = 0;     // layers on the last stage (which also holds the output layer and loss)
  int mtp = 0;      // multi-token prediction modules, each one more layer, on the last stage
  int Max() const;  // transformer layers on the fullest stage, MTP layers included
};

// Each Check* returns "" when the value is valid, else the reason in plain words (without the
// field path, which the caller adds).
std::string CheckTp(const LayoutContext& c, int tp);
std::vector<int> TpCandidates(const LayoutContext& c);

// The pipeline degree alone: at least 1, offered by the framework where above 1, at most the
// model's layers.
std::string CheckPp(const LayoutContext& c, int pp);
// pp, vpp and the split options of `p` together (pp, vpp > 0).
std::string CheckPipeline(const LayoutContext& c, const Parallelism& p);
// Pipeline layouts the planner tries (pp, vpp and split options set; the request's fixed pp,
// vpp and split fields kept): even splits of the layers, and where the framework offers it the
// split that counts the embedding and the loss as layers (Megatron-Core), so 126 layers run on
// 16 stages of 8 chunks.
std::vector<Parallelism> PipelineCandidates(const LayoutContext& c, const Parallelism& request);
// The layout PipelineCandidates puts first for a request whose pp and vpp are set (the first
// valid split variant), without building the list; nullopt when no variant is valid.
std::optional<Parallelism> FirstPipelineSplit(const LayoutContext& c, const Parallelism& request);
// The split of a valid pipeline layout.
PipelineSplit SplitLayers(const ModelSpec& m, const Parallelism& p);

std::string CheckCp(const LayoutContext& c, int cp);
// Where context parallelism exchanges heads across all its ranks (CpComm::kAllToAll): cp must
// divide the query and key/value heads of a TP rank; "" elsewhere.
std::string CheckCpHeads(const LayoutContext& c, int tp, int cp);
// The ranks of one all-to-all group of context parallelism over `cp` ranks: all of them for
// kAllToAll; for kHierarchical (a2a+p2p) the largest divisor of cp whose ranks share an NVLink
// domain of `domain` GPUs beside their `tp` TP ranks and divide the `heads` and `kv_heads` of a
// TP rank (Transformer Engine's stated use: a2a over NVLink, p2p between the groups, over the
// network; Megatron-Core's --hierarchical-context-parallel-sizes takes the sizes from the user,
// Parallelism::cp_a2a, and this is the split the model assumes without it); 1 for the ring and
// the all-gather.
int CpAllToAllRanks(CpComm comm, int cp, int tp, int domain, int heads, int kv_heads);
// A two-level exchange's all-to-all group asked for (Parallelism::cp_a2a, 0 = the model's): only
// with a2a+p2p, dividing cp (0 = open) and the heads of a TP rank.
std::string CheckCpA2a(const LayoutContext& c, int a2a, int tp, int cp);
std::vector<int> CpCandidates(const LayoutContext& c);

// Expert parallelism (mixture-of-experts models; a dense model takes ep = etp = 1). etp splits
// each expert's GEMMs (a divisor of tp, as Megatron-Core's expert_tensor_parallel_size is used);
// ep divides the routed experts, and ep * etp divides the tp * cp * dp ranks of a pipeline stage
// out of which Megatron-Core builds the expert groups.
std::string CheckEtp(const LayoutContext& c, int etp, int tp);
// The planner's etp candidates: 1 and tp (a fixed etp may be any valid divisor of tp).
std::vector<int> EtpCandidates(const LayoutContext& c, int tp);
std::string CheckEp(const LayoutContext& c, int ep, int etp, int stage_ranks);
std::vector<int> EpCandidates(const LayoutContext& c, int etp, int stage_ranks);

// Selective recompute's named modules (bits of RecomputeModule): where the framework offers
// them, with recompute selective (or unset: the modules imply it), and each one present in the
// model (mla_up_proj needs MLA, moe and moe_act a MoE layer, ...).
std::string CheckRecomputeModules(const LayoutContext& c, uint32_t modules, Recompute recompute);
// The framework's own selective recompute modules (FrameworkBehaviour::selective_modules) that
// the model has: what a selective layout whose request names no modules recomputes.
uint32_t FrameworkSelectiveModules(const LayoutContext& c);
// The module sets a search tries for selective recompute where the framework's selective
// recompute is a set of modules its users pick (Megatron-Core's --recompute-modules; none where
// the framework fixes its own, FrameworkBehaviour::selective_modules), of the blocks the model
// has, in two chains, lightest first: the memory-bound modules (the norms, the routed experts'
// activation), then MLA's up-projections with them, then the attention core too; and the whole
// feed-forward blocks (mlp, moe) with the norms, then the attention side too. Which is cheapest
// depends on the shape: at long sequences the attention core costs more to rebuild than a dense
// MLP, at short ones less. The framework's own selective (the attention core, SelectivePolicy)
// stays a candidate of its own. The last set covers all the others (ModulesCover).
std::vector<uint32_t> RecomputeModuleLadder(const LayoutContext& c);
// Whether module set `heavier` rebuilds all that `lighter` does (a whole MoE block rebuilds its
// activation too), so that where `lighter` fits `heavier` only costs more time.
bool ModulesCover(uint32_t heavier, uint32_t lighter);
// Full recompute on `layers` of each pipeline stage: the framework must offer it, recompute be
// full (or unset), and a stage of pp (0: not fixed yet) hold at least that many layers.
std::string CheckRecomputeLayers(const LayoutContext& c, int layers, Recompute recompute, int pp);
// "" or why `layers` layers' activations cannot wait in host memory (cpu_offload_layers) with
// this recompute and pp (0 = either yet to be chosen), on an accelerator with a host link:
// Megatron-Core offloads without pipelining and without recompute only (TransformerConfig's
// checks), and fewer layers than the model has.
std::string CheckCpuOffloadLayers(const LayoutContext& c, int layers, Recompute recompute, int pp);
// The offloaded layer counts a search tries where the request leaves recompute and offloading
// open: a quarter, half and three quarters of the layers, with pp 1 on a framework and
// accelerator that can offload; none otherwise.
std::vector<int> OffloadLayerCandidates(const LayoutContext& c, int pp);
// The offload steps of a model of `layers` layers (OffloadLayerCandidates when it can offload),
// lightest first: the one list the candidates and the planner's offload ladder share.
std::vector<int> OffloadLayerSteps(int layers);
// The partial recomputes tried for a stage of `per_stage` layers: a quarter, half and three
// quarters of them (distinct, each 1 to per_stage - 1), ascending.
std::vector<int> PartialRecomputeSteps(int per_stage);
// The partial recomputes the planner tries between none and full on every layer:
// PartialRecomputeSteps of a stage of pp, where the framework offers them.
std::vector<int> RecomputeLayerCandidates(const LayoutContext& c, int pp);
// Whether the request leaves recompute to the search: it fixes neither the kind, the modules, the
// partial layers nor offloading (RecomputeCandidates then offers every choice, and the planner's
// ladders stand for their steps).
bool LeavesRecomputeOpen(const Parallelism& req);
// One recompute choice: its kind and, for full recompute, the layers of each stage it covers
// (0: every layer).
struct RecomputeChoice {
  Recompute recompute = Recompute::kUnspecified;
  int layers = 0;
  int offload = 0;  // layers whose activations wait in host memory (with recompute none)
};
// How a search offers partial recompute and offloading: each step as a layout of its own (the
// plan job, whose bounds are per part), or as the ladders the full-recompute candidate and the
// heaviest offload stand for (EvaluateLayouts climbs them: model/planner.h ClimbRecomputeLadder,
// ClimbOffloadLadder).
enum class PartialSteps { kLadder, kEach };
// The recompute choices for a stage count pp: the request's own when it fixes one, else none,
// selective, full on every layer, the heaviest OffloadLayerCandidates and (kEach) every
// RecomputeLayerCandidates and OffloadLayerCandidates step.
std::vector<RecomputeChoice> RecomputeCandidates(const LayoutContext& c, const Parallelism& req,
                                                 int pp, PartialSteps steps);

// dp given tp*pp*cp; the global batch must split evenly over the replicas.
std::string CheckDp(const LayoutContext& c, int dp);
std::string CheckMicroBatch(const LayoutContext& c, int dp, int micro_batch);
std::vector<int> MicroBatchCandidates(const LayoutContext& c, int dp);

std::string CheckSharding(const LayoutContext& c, Sharding sharding, int tp, int pp);
// The shardings the framework runs at tp and pp (CheckSharding's rules), in its own order; only
// `only` where it names one.
std::vector<Sharding> ShardingCandidates(const LayoutContext& c, int tp, int pp,
                                         Sharding only = Sharding::kUnspecified);
// A shard group is HSDP's: "" without one, or with HSDP or the sharding still open.
std::string CheckShardGroup(Sharding sharding, int shard_group);
// The HSDP shard-group sizes the planner tries for tp and dp*cp (empty when HSDP would equal
// FSDP or DDP here).
std::vector<int> ShardGroupCandidates(const LayoutContext& c, int tp, int n_dp);

// Sequence parallelism for a layout: the request's choice, else the framework's default.
bool SequenceParallel(const LayoutContext& c, const Parallelism& request, int tp);
// "" unless the request asks for sequence parallelism (with tp > 1) of a release without it.
std::string CheckSequenceParallel(const LayoutContext& c, const Parallelism& request);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_LAYOUT_H_
