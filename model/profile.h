// A calibration profile: the few efficiency parameters the physics cannot know, each documented
// here: the hardware's per accelerator family (pooled by generation), the software features'
// (shared by every stack that has the feature), and global ones; plus the uncertainty band. The
// built-in default profile is model/data/default_profile.txt, fitted to both shared calibration
// sets by scripts/refit.sh and compiled in. No per-row, per-model or per-source parameters exist.
#ifndef SCALECAST_MODEL_PROFILE_H_
#define SCALECAST_MODEL_PROFILE_H_

#include <functional>
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
  // Memory-bound traffic, in an eager stack (no hand-fused kernels, no compiler), of the ops
  // PyTorch has no single kernel for, relative to a fused kernel. Counted op by op on the Llama
  // reference code (facebookresearch/llama model.py, torchtitan's default RMSNorm): RMSNorm
  // upcasts to fp32, squares, reduces, scales, casts back and multiplies by the weight, 36 bytes
  // per element against a fused kernel's 4 (9x); rotary embedding upcasts q and k, multiplies as
  // complex numbers and casts back, 20 bytes against 4 (5x); SwiGLU's silu then product, 10 bytes
  // per output against 6 (1.7x). Native kernels (LayerNorm, the residual add, GELU, softmax
  // cross-entropy) run as a fused stack's do. Prior 4, the middle of that range.
  double eager_traffic = 4.0;
  // Memory-bound traffic of a torch.compile'd stack relative to a hand-fused one: Inductor fuses
  // elementwise chains but not across GEMM epilogues. Prior 1.2.
  double compiled_traffic = 1.2;
  // The stack's overall efficiency against the model: every part of a step takes 1/efficiency
  // as long. 1 in every fitted profile (Fit never moves it); a calibrated layer moves it first,
  // as the level every run of a user's stack shares (FitLayer, model/calibration.h).
  double efficiency = 1;
};

// An all-to-all's bandwidth relative to the ring collectives' plateau the hardware model uses:
// nccl-tests alltoall of 1 GiB on 8 H100 reaches 332 GB/s bus bandwidth where a send/receive
// ring runs at 361 (shared/data/collectives.csv rows 88-89).
inline constexpr double kAllToAllRingShare = 0.92;

// Mixture-of-experts layers (Megatron-Core's MoE layer with the all-to-all token dispatcher and
// grouped GEMMs). Fitted on shared/data/moe.csv; a dense run does not see them.
struct MoeParams {
  // Rows a group of the experts' grouped GEMM loses to the grouping, in thousands (profile values
  // are read in (0, 10]): a group of m rows runs at m / (m + 1000 * grouped_gemm_krows) of one
  // dense GEMM of its shape (each group's last, partial tile of rows and its share of the
  // kernel's per-group setup: cuBLASLt / CUTLASS grouped GEMM, Transformer Engine's multi-stream
  // GroupedLinear). A GPU holding one expert runs a plain GEMM and does not pay it. Prior 0.128
  // (128 rows), an estimate: half of a 256-row tile. It replaced grouped_gemm_ratio, a constant
  // rate (retired: profile.cc kRetiredParams).
  double grouped_gemm_krows = 0.128;
  // Achieved dispatch/combine all-to-all bandwidth relative to the ring collectives' plateau the
  // hardware model uses: prior a plain all-to-all's (kAllToAllRingShare); fitted, it also takes
  // what the dispatch adds (its permutes, uneven splits).
  double a2a_eff = kAllToAllRingShare;
  // Host time per dropless MoE layer and micro-batch (forward and backward together, the
  // layer's attention included: it replaces GlobalParams::layer_host_s there) that the GPU waits
  // on after the layer's tokens-per-expert sync: the short kernels launched from an
  // empty queue (StepModel::AddHostWait). Prior 5 ms, an estimate: ~500 launch-bound kernels
  // forward and backward (the DeepSeek-V3 GB200 write-up counts 72 router kernels before fusion,
  // plus per-expert quantization and allocation kernels) at the ~10 us each that PyTorch eager
  // dispatch and launch take.
  double layer_overhead_s = 5e-3;
  // Host time per model chunk and micro-batch under the 1F1B all-to-all overlap
  // (--overlap-moe-expert-parallel-comm), on top of the layers' own launches: Megatron-Core's
  // combined 1F1B (combined_1f1b.py) merges one micro-batch's forward of a chunk with another's
  // backward, building a schedule plan of the chunk's layers and the events that stage them on two
  // streams for each merged pass. Its layers launch as they would without the overlap; the plan
  // is paid once a chunk, so it weighs on the interleaved layouts the overlap needs under
  // pipelining (chunks of 2-6 layers) and hardly at all on a whole model in one chunk.
  // Megatron-LM's DeepSeek-V3 GB200 write-up: the staging "aggravates the CPU overhead". The
  // prior, 15 ms, is an estimate: what the earlier per-layer form charged beyond a plain layer's
  // launches (13.2 against 4.9 ms, model 2026.12.15) times the two layers a chunk of the H100
  // runs that set it. Megatron-Bridge's controlled pair on 16 H100
  // (data/megatron-bridge-cards-2026.csv: Qwen3-30B-A3B at PP 1 and micro-batch 1, the overlap
  // alone switched, 24.71 -> 20.99 s a step) is what a per-layer cost could not fit.
  double overlap_chunk_overhead_s = 15e-3;
};

// Software maturity: the same GPU runs the same GEMM and attention faster as its libraries
// mature (cuBLAS, cuDNN, Transformer Engine and flash-attention releases after the hardware's
// launch). A stack released t years after its generation's launch reaches
//   1 - deficit * exp(-t / years)
// of the mature efficiency (gemm_eff and attn_eff describe the mature libraries). One curve per
// generation: `deficit` by generation, `years` shared. Priors: NVIDIA's MLPerf Training v4.0
// results (June 2024) gave H100 27 % more GPT-3 175B throughput at 512 GPUs than its June 2023
// submission on the same hardware, by software alone; 1 - 0.35 e^(-t) gives 1.17x over that year
// (t = 0.7 -> 1.7), the rest of that gain being fp8 and communication work the model prices
// through the stack's features.
struct MaturityParams {
  std::map<std::string, double, std::less<>> deficit;  // by generation ("hopper")
  double years = 1.0;
  // The deficit of a generation: its own, else the prior.
  double DeficitOf(absl::string_view generation) const;
  // The share of mature efficiency a stack of `software_date` reaches on `generation`
  // (software_date 0 = today's libraries).
  double Factor(absl::string_view generation, double software_date) const;
};
inline constexpr double kMaturityDeficitPrior = 0.35;

// When a generation's first parts shipped in volume (decimal year), the origin of its maturity
// curve; 0 for a generation the table does not know.
double GenerationLaunch(absl::string_view generation);

struct GlobalParams {
  // Slowdown of compute while a communication kernel runs beside it (shared SMs and HBM):
  // overlapped compute takes (1 + comm_slowdown) as long.
  double comm_slowdown = 0.15;
  // Host work once per optimizer step that the GPU waits for on one GPU: what runs between one
  // step's last backward kernel and the next step's first forward kernel besides the
  // optimizer's own memory traffic (StepModel charges that from HBM bandwidth). The optimizer's
  // launches, gradient-norm clipping (a norm and a host read of the result to skip a step on
  // inf/nan), the loss's host read for logging, the learning-rate schedule and the data
  // loader's hand-off of the next batch. Megatron-LM's timers report these per step
  // (optimizer-copy-to-main-grad, optimizer-clip-main-grad, optimizer-count-zeros,
  // optimizer-inner-step, batch-generator; megatron/training/training.py, --timing-log-level 1).
  // Measured, not fitted: 1 ms on one H200 (data/device/h200-2026-12-04.json, section train:
  // GPT-2 124M in plain PyTorch with fused AdamW, clipping and a loss read every step, 16 x 1,024
  // tokens a micro-batch: 70.5 ms a step with one micro-batch, 275.3 ms with four, so 2.2 ms a
  // step besides the micro-batches, of which the optimizer's traffic is ~1.2 ms).
  double step_host_s = 0.001;
  // Per-step waits that grow with the ranks, per doubling of the GPUs: every rank waits at the
  // step's global synchronisations (the gradient reduction's last bucket, the gradient norm's
  // and the loss's all-reduces, the inf/nan check) for the slowest, whose host ran late (Python,
  // garbage collection, the data loader, the OS). The expected latest of n ranks' delays grows
  // with log n, as do the hops of NCCL's tree. A graph of the whole step runs with no host on
  // its path and pays neither this nor step_host_s. Fitted (prior 5 ms): the multi-GPU runs'
  // steps exceed their GPU work by far more than one GPU's 1 ms (a single constant fitted 49 ms
  // a step), and by more where the runs are larger.
  double step_sync_s = 0.005;
  // Host time to dispatch one transformer layer's operators, forward and backward, per
  // micro-batch, in an eager stack (PyTorch running op by op: no CUDA graph, no compiler). The
  // host runs ahead of the GPU while the GPU's work is the longer; a layer whose GPU work is
  // shorter waits for the difference (StepModel::AddHostWait): small models, small micro-batches
  // and wide tensor parallelism. A layer with fused norms, rotary and activations, hand-written
  // or compiled, dispatches 16 of those operators (kFusedHostShare in step.cc); a graph replays
  // without the host. Measured, not fitted (no calibration run's layers are that short): 52
  // autograd operators in a Llama decoder layer's forward as Hugging Face's reference code writes
  // it (LlamaDecoderLayer: two RMSNorms of 8 ops, the q/k/v projections and their views, rotary
  // embedding's 14, attention, the output projection, the SwiGLU MLP's 5 and two residual adds)
  // at the 27 us an autograd operator took forward and backward on one H200's host
  // (data/device/h200-2026-12-04.json, section dispatch: eager_autograd_op_fwd_bwd_us): 1.4 ms.
  double layer_host_s = 1.4e-3;
  // Mamba-2's SSD scan (mamba_ssm's chunked Triton kernels: chunk cumsum, chunk state, state
  // passing, the C.B^T chunk products and the chunk scan, and about twice as many backward) in
  // thousands of FLOPs of MambaScanFlopsPerToken per SM and clock (profile values are read in
  // (0, 10]). The kernels stream fp32 intermediates (decay masks, per-chunk states) between
  // launches and run far from the tensor cores' peak, so their rate follows the SMs and the
  // clock, not the generation's tensor throughput: pure Mamba-2 training (1.4B, d_model 2,048,
  // 48 layers, 4 x 4,096 tokens, bf16; state-spaces/mamba issue #904, 2026-04) ran 102.5, 239.2
  // and 360.4 TFLOP/s on A100, H200 and GB200, GB200 only 1.51 x H200 where its tensor peak is
  // 2.5 x. Prior 0.3 (300 FLOPs, 7 % of a Hopper SM's 4,096 tensor FLOPs a clock): the rate at
  // which the model gives that ratio, an estimate; fitted on the hybrid Mamba runs.
  double ssd_kflops_per_sm_clock = 0.3;
};

// The 80 % band of a prediction and what the profile was fitted on (to widen the band where a
// scenario lies outside it). Filled by the fitter from cross-validated residuals.
struct BandParams {
  // 10th and 90th percentiles of measured / predicted tokens/s over held-out runs, after
  // dividing each run's log residual by its widening factor (so the band covers 80 % of held-out
  // runs including the widened ones).
  double low_ratio = 0.85;
  double high_ratio = 1.15;
  // The same for requests that state less of the software (StatedFacts kVersion, kFramework,
  // kNone): the held-out runs predicted as such a user asks for them, from the same folds (Fit).
  // A level not here takes the band above.
  struct Ratios {
    double low = 0, high = 0;
  };
  std::map<StatedFacts, Ratios> fewer_facts;
  int max_gpus = 0;  // largest GPU count fitted on; 0 = unknown
  // Runs fitted on per "framework-family/generation" ("megatron/hopper" -> 85).
  std::map<std::string, int, std::less<>> seen;
};

// One parameter a layered profile changed from its base, and the runs behind the change.
struct ParameterChange {
  std::string key;       // as in ToText / ParamRef::key, e.g. "accel.h100.gemm_eff"
  double old_value = 0;  // the base profile's value when the layer was fitted
  double new_value = 0;  // this layer's value
  int runs = 0;          // runs whose prediction the parameter moves (see FitLayer)
  std::string evidence;  // which runs: the filter, sources or run ids, in words (one line)
  bool operator==(const ParameterChange& o) const {
    return key == o.key && old_value == o.old_value && new_value == o.new_value && runs == o.runs &&
           evidence == o.evidence;
  }
};

// Layers a profile may stack (a layer over a layer over ...) before resolution refuses it.
inline constexpr int kMaxProfileDepth = 8;

struct Profile {
  std::string name = "default";
  std::string description;
  // By accelerator family ("h100") or generation ("hopper"): a family without its own entry
  // takes its generation's (partial pooling), then the documented priors.
  std::map<std::string, AcceleratorParams, std::less<>> accelerators;
  StackParams stack;
  MoeParams moe;
  GlobalParams global;
  MaturityParams maturity;
  BandParams band;
  // What the profile was fitted on and how well (filled by the fitter; informational).
  std::map<std::string, std::string, std::less<>> info;

  // Layering. A profile with a non-empty `base` is a layer: it is its base profile ("default" =
  // the built-in one, else a stored profile's name) with `changes` applied, and its text holds
  // only name, description, info, base and changes. FromText of a layer leaves the parameter
  // blocks above at their struct defaults: resolve it (ResolveLayers) before predicting with it;
  // a resolved layer keeps `base` and `changes` (what it is) and carries its base's parameters
  // and band with the changes applied. A profile without `base` is a full profile, as stored
  // before layers existed.
  std::string base;
  std::vector<ParameterChange> changes;  // by key, each key once
  bool IsLayer() const { return !base.empty(); }

  // The family's own entry, else its generation's, else the generation's priors.
  const AcceleratorParams& ForAccelerator(absl::string_view family) const;

  // "key = value" lines: accel.<family or generation>.<param>, stack.<param>, global.<param>,
  // maturity.years, maturity.<generation>.deficit,
  // info.<key>, name, description. A layer writes, instead of the parameter blocks,
  // "base = <name>" and one "change.<key> = <old> <new> <runs> <evidence>" line per change
  // (evidence is the rest of the line). Texts without these lines read as they always did.
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

// The profile `layer` describes, resolved over its already resolved base: `base` with each of
// layer.changes set (through FittableParams' keys), named and described as `layer`, keeping
// layer.base and layer.changes. INVALID_ARGUMENT naming the change when a key is unknown or its
// value outside the parameter's bounds.
absl::StatusOr<Profile> ApplyLayer(const Profile& base, const Profile& layer);

// Resolves `top` through its chain of bases: `lookup(name)` returns the stored profile of that
// name (a layer or a full profile; NOT_FOUND when none), and "default" is `builtin`. At most
// kMaxProfileDepth layers; a cycle or a deeper chain is FAILED_PRECONDITION naming the profiles.
// `chain`, when given, receives the names walked from top down to the full profile at the
// bottom ("default" for the built-in).
absl::StatusOr<Profile> ResolveLayers(
    const Profile& top, const Profile& builtin,
    const std::function<absl::StatusOr<Profile>(const std::string&)>& lookup,
    std::vector<std::string>* chain = nullptr);

// The value of a fittable parameter (a key of FittableParams) in `p`, with a family's pooling
// (a family without its own entry reads its generation's). INVALID_ARGUMENT for an unknown key.
absl::StatusOr<double> ParameterValue(const Profile& p, absl::string_view key);
// Sets a fittable parameter, creating the family's own entry from its pooled values when needed.
// INVALID_ARGUMENT for an unknown key or a value outside the parameter's bounds.
absl::Status SetParameter(Profile* p, absl::string_view key, double value);

// Flat view of the fitted parameters, for the least-squares fitter.
struct ParamRef {
  std::string key;  // as in ToText
  double* value;
  double lo, hi;            // bounds
  double prior;             // the value the fitter is pulled back to when the data says nothing
  bool layer_only = false;  // moved by a calibrated layer (FitLayer) only, never by Fit
};
// The parameters a fit moves: global and stack parameters, and for each family in `families`
// its own efficiencies, pulled toward its generation's pooled value. Every other use of
// parameter keys (layers, FitLayer) goes through this list, so a parameter added here is
// fittable, layerable and shown without further code.
std::vector<ParamRef> FittableParams(Profile* p, const std::vector<std::string>& families);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_PROFILE_H_
