// Time of the pieces a training step is made of, on one accelerator and its network: GEMMs by
// shape, flash attention, memory-bound kernels, and collectives on a two-level topology (the
// NVLink domain, then the inter-node network). Every constant carries its source.
#ifndef SCALECAST_MODEL_HARDWARE_H_
#define SCALECAST_MODEL_HARDWARE_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "model/types.h"

namespace scalecast {

// Ring all_reduce/all_gather bus bandwidth plateaus at ~80 % of the unidirectional NVLink rate:
// V100 122/150, A100 232/300, H100 360/450 GB/s (shared/data/microbench.md, "Intra-node plateaus").
inline constexpr double kNvlinkEff = 0.80;
// A 400 Gb/s NIC carries 46-49 GB/s of its 50 (NCCL maintainers, nccl-tests#290 and #267; xxrjun
// 10x1-GPU runs 48.6-48.9 GB/s; microbench.md).
inline constexpr double kNetEff = 0.94;
// A copy engine moves 55.6 GB/s of PCIe Gen5 x16's 64 per direction between pinned host memory
// and the GPU (nvbandwidth host_to_device_memcpy_ce, 1 GiB buffers, as published in NVIDIA's
// nvbandwidth walk-through); the same share is assumed of NVLink-C2C.
inline constexpr double kHostLinkEff = 0.87;
// Per-step latency of a ring inside an NVLink domain: 8x A100 all_reduce of 32 KiB takes 43.8 us
// over 2*(8-1) steps, ~3 us a step (microbench.md, small-message latency table).
inline constexpr double kAlphaIntraS = 3e-6;
// Per-step latency of a ring hop across nodes: fitted to H100 all_gather of 128 MiB on 10 nodes x 8
// GPUs, 158 GB/s busbw (xxrjun/nccl-tests-cluster, microbench.md), with the bandwidth term below;
// consistent with the 46-48 us two-node NVLSTree all_reduce latency (nccl#1244).
inline constexpr double kAlphaInterS = 6e-6;
// NVLink SHARP (NVLS): NVSwitch 3 and later reduce in the switch, so an all-reduce inside an
// NVLink domain sends each GPU's buffer to the switch once and takes the sum back once, where a
// ring moves 2(n-1)/n of it over each link. NCCL runs it for all_reduce only (all_gather and
// reduce_scatter stay on rings: 360-365 GB/s busbw on H100/H200 at 16 GiB, microbench.md). Its
// algorithm bandwidth as a share of the NVLink rate per direction, from the NVLS rows of
// shared/data/collectives.csv: H200 at 5-8 GPUs 0.58-0.61 (busbw 414-482 GB/s at 8 GiB, NCCL
// 2.27.7, ml-engineering), B200 at 6 and 8 GPUs 0.52-0.53 (778, 838 GB/s), GB200 NVL72 at 32
// GPUs 0.49 (850 GB/s, GTC25 slide); 0.56 is the mean of the seven.
inline constexpr double kNvlsEff = 0.56;
// NCCL chooses NVLS from 5 GPUs of a domain up: the same sweeps run a ring at 4 GPUs and NVLS from
// 5 (H200) and 6 (B200) on.
inline constexpr int kNvlsMinRanks = 5;
// NCCL 2.17 brought NVLS and 2.18.1 its inter-node forms, with InfiniBand SHARP ("NVLink SHARP +
// IB SHARP") and with trees (NCCL 2.18.1 release notes; the 2.17.1 documentation set was last
// updated 2023-05-04): a stack released before May 2023 runs rings and trees only.
inline constexpr double kNcclNvlsDate = 2023 + 4.0 / 12;
// InfiniBand SHARP's all-reduce latency, flat in the node count (NCCL maintainers,
// microbench.md): 56.7-58.2 us for 8 B-1 KiB on 16 nodes of 8 A100 over HDR with SHARP groups
// (CoreWeave nccl-tests README, collectives.csv rows 67-68).
inline constexpr double kSharpLatencyS = 57e-6;
// NCCL pipelines tree all_reduce in chunks; filling a tree of depth log2(nodes) costs a chunk's
// transfer per level. 1 MiB reproduces the H100 all_reduce busbw at 16-64 MiB on 4-512 nodes
// (Fernandez et al. 2024 NCCL scan figure, microbench.md) within ~25 %.
inline constexpr double kTreeChunkBytes = 1 << 20;
// GEMM shape knee per SM: a dimension x contributes x / (x + knee) to efficiency, with knee = 1.5
// per SM (~200 on H100's 132 SMs). Fitted to the OpenXLA sm_90 matmul table (microbench.md):
// 4096^3 at 79 %, K=256 at 40 %, m=256 at 42 % of peak.
inline constexpr double kGemmKneePerSm = 1.5;
// Output tile of a large GEMM: 256 x 128 (or 128 x 256), the largest and most efficient tile the
// NVIDIA "Matrix Multiplication Background" user's guide lists for cuBLAS (section 2.3, "Typical
// Tile Dimensions In cuBLAS And Performance"); a dimension that is not a multiple of the tile
// computes the padded remainder anyway (section 3.1, "Tile Quantization"). GPT-OSS's 2,880-wide
// experts, Nemotron-3 Nano's 1,856 and MLA's 576-wide KV latent are the shapes it matters for.
inline constexpr double kGemmTileLong = 256;
inline constexpr double kGemmTileShort = 128;
// A 16-bit GEMM with a dimension that is not a whole number of 16-byte vectors (8 elements)
// cannot take cuBLAS's fastest tensor-core kernels, which load whole vectors (NVIDIA's "Matrix
// Multiplication Background" user's guide, section 4.1 "Tensor Core Requirements": dimensions
// multiples of 16 bytes are most efficient). Measured on one H200 (cuBLAS through PyTorch 2.11,
// CUDA 13.0; data/device/h200-2026-12-04.json, section gemm): GPT-2's logits GEMM 16,384 x 50,257
// x 768 ran at 124 TFLOP/s, 16,384 x 3,072 x 768 at 555: 0.22 of the aligned rate. nanoGPT pads
// GPT-2's vocabulary to 50,304 for it (train.py: "rounded up for efficiency").
inline constexpr double kUnalignedGemmRate = 0.22;
inline constexpr double kGemmAlignElements = 8;
// Megatron-family frameworks pad the vocabulary to a multiple of this times the TP degree
// (--make-vocab-size-divisible-by, default 128; megatron/training/tokenizer/tokenizer.py
// _vocab_size_with_padding); the others compute on the vocabulary as given.
inline constexpr double kMegatronVocabMultiple = 128;
// Fixed cost of one GEMM kernel (launch, prologue, tail), from the same table: 256^3 and 512^3
// reach only 6.5 and 41 TFLOP/s on H100, i.e. ~5 us each.
inline constexpr double kGemmFixedS = 5e-6;
// Flash attention efficiency knees: causal FA2 fwd+bwd on A100 reaches 99/155/189 TFLOP/s at seq
// 512/2k/16k with head dim 128 and 171 vs 189 at head dim 64 (Dao-AILab benchmark figures,
// shared/data/gemm.csv): eff ~ s/(s + 450) * d/(d + 15).
inline constexpr double kAttnSeqKnee = 450;
inline constexpr double kAttnHeadDimKnee = 15;
// The warp-specialised kernels of Hopper and Blackwell (FA3, cuDNN) lose more at narrow heads:
// FA3 forward on H100 runs head dim 64 at 0.71-0.77 and 256 at 1.03-1.17 of head dim 128 (FA3
// paper figures in shared/data/gemm.csv, sequences 1k-16k, causal and not); d/(d + 54) is the
// least-squares fit of the 19 ratios.
inline constexpr double kAttnHeadDimKneeWarpSpecialized = 54;
// Backward of flash attention does 2.5x the forward's FLOPs (it recomputes QK^T); the benchmark
// figures count fwd+bwd as 3.5x forward.
inline constexpr double kAttnBackwardRatio = 2.5;
// FlashAttention-2 over its predecessors on A100, forward + backward (Dao 2023, arXiv 2307.08691,
// section 4.1: 1.7-3.0x over FlashAttention, 1.3-2.5x over FlashAttention in Triton): the
// geometric means of the ranges.
inline constexpr double kFa2OverFa1 = 2.26;
inline constexpr double kFa2OverTriton = 1.80;
// Flash attention 2 over cuDNN's fused attention on Hopper, forward + backward: the mean of the
// ratios one H200 measured at sequence 4k, 8k and 16k (AttentionKernelFactor's comment).
inline constexpr double kFa2OnHopper = 0.56;
// Minimum duration of a memory-bound kernel: launch-bound at ~2 us from a CUDA graph; in eager
// PyTorch the host's per-op dispatch (~4-6 us with autograd, PyTorch issue #2560 and the
// torch.compile / CUDA-graphs docs) sets the floor of a short kernel.
inline constexpr double kMemKernelMinS = 2e-6;
inline constexpr double kEagerKernelMinS = 5e-6;

// Share of the board's dynamic power range (TDP - idle) drawn in GEMM-heavy phases at full
// clock. Public reports of H100 SXM LLM training put it at 600-650 W of 700 (idle ~70 W):
// (620-70)/630 ~ 0.85. Used for power-cap throttling and for the power estimate.
inline constexpr double kComputeActivity = 0.85;

// GPUs that share one NVLink domain in this cluster: the accelerator's domain, cut to the node
// size when a request sets fewer GPUs per node (0 = the usual system); a rack-scale domain
// (NVL72) is not cut.
int DomainSize(const Accelerator& acc, int gpus_per_node);

// The attention kernel's rate relative to the best kernel on the same hardware (which the
// profile's attn_eff describes), by generation; a kernel the hardware cannot run falls back
// (FA3 is Hopper-only; flash attention 2 does not run on Volta). On Hopper FA2 runs 0.56 of
// cuDNN's rate (kFa2OnHopper): both kernels measured in one harness on one H200
// (data/device/h200-2026-12-04.json, section attention: PyTorch SDPA, causal, head 128, 16k
// tokens a call, forward and backward: FA2 255 / 282 / 308 TFLOP/s against cuDNN 449 / 519 / 535
// at sequence 4k / 8k / 16k, ratios 0.57 / 0.54 / 0.58, mean 0.56). Across sources
// (shared/data/gemm.csv: FA2 294-338 TFLOP/s on H100 against FA3's and cuDNN's ~600 forward and
// ~450 backward) the ratio came to 0.62, from different machines and clocks. On A100 FA2 is the
// best kernel and cuDNN's fused attention is within a few per cent. On Blackwell flash attention 2
// runs the sm80 code path without tcgen05 tensor cores: an estimate of half the cuDNN rate.
double AttentionKernelFactor(AttentionKernel k, absl::string_view generation);
// The head-dimension knee of the attention kernel actually run: kAttnHeadDimKnee for flash
// attention 2 and on Ampere, kAttnHeadDimKneeWarpSpecialized for FA3 and cuDNN on Hopper and
// Blackwell.
double AttentionHeadDimKnee(AttentionKernel k, absl::string_view generation);
// The attention kernel actually run (after fallbacks) on a generation.
AttentionKernel EffectiveAttentionKernel(AttentionKernel k, absl::string_view generation);
// Transformer Engine's fused (cuDNN) attention trains multi-head latent attention's unequal head
// widths (d_qk 192 > 128, d_v 128) on Blackwell only from cuDNN 9.11 on (Transformer Engine
// transformer_engine/common/fused_attn/fused_attn.cpp, nvte_get_fused_attn_backend: "9.11: d_qk =
// 192, d_v = 128 + Blackwell + bprop"; head widths above 128 otherwise need Hopper). Before it,
// with no flash-attention kernel for unequal widths, Transformer Engine runs its unfused
// attention. Megatron-LM's DeepSeek-V3 GB200 write-up (docs/discussions/
// deepseek-v3-gb200-optimization) counts "MLA kernels on the Blackwell platform, provided by
// cuDNN 9.11" in its baseline. cuDNN frontend v1.13.0, the frontend for cuDNN 9.11.0, was
// released on 2025-07-17: stacks released from August 2025 on carry it.
inline constexpr double kCudnnMlaOnBlackwellDate = 2025 + 7.0 / 12;
// FlashAttention 1's kernels take head widths up to 128 (Dao-AILab/flash-attention README of the
// 1.x series: "Head dimensions that are multiples of 8, up to 128"; csrc/flash_attn/fmha_api.cpp,
// mha_fwd and mha_bwd: head_size 16, 32, 64 or 128); FlashAttention 2 (July 2023) raised it to
// 256. A wider head under FA1 runs the framework's unfused attention.
inline constexpr double kFa1MaxHeadDim = 128;
// Why a stack asking for a fused attention kernel runs attention of these head widths unfused.
enum class UnfusedAttention {
  kNo,                    // the fused kernel runs
  kFa1HeadWidth,          // FlashAttention 1 past kFa1MaxHeadDim
  kCudnnBeforeMlaWidths,  // cuDNN on Blackwell before kCudnnMlaOnBlackwellDate, q.k != v > 128
};
// The reason, if any, a stack of `software_date` (0: today's) runs these head widths unfused.
UnfusedAttention UnfusedAttentionOf(AttentionKernel k, absl::string_view generation, double qk_dim,
                                    double v_dim, double software_date);

// Bytes moved per element of a GEMM input cast to low precision by each fp8 recipe: delayed
// scaling reads bf16 and writes fp8 (2 + 1) with the amax taken in the same kernel; current
// (tensorwise) scaling first reads the tensor for its amax (2 + 2 + 1); rowwise and blockwise
// scaling write the transposed copy the backward GEMMs need as well (2 + 2 + 1 + 1); mxfp8
// writes both orientations with their E8M0 block scales (2 + 1 + 1, scales 1/32 B each); nvfp4
// writes both orientations in 4 bits after a random Hadamard transform (2 + 2 + 0.5 + 0.5);
// mxfp4 reads bf16 once and writes both orientations (kMxfp4CastBytes).
// Transformer Engine's and torchao's cast kernels; byte counts, not measurements.
double CastBytesPerElement(Fp8Recipe r);
// MXFP4 (OCP Microscaling Formats (MX) Specification v1.0, 2023, sections 5.1-5.2 and the
// concrete format MXFP4: 32-element blocks of E2M1 elements (4 bits, 0.5 B) sharing one E8M0
// scale (8 bits)): a cast reads the bf16 input (2 B) and writes the row-wise and column-wise
// copies the forward and backward GEMMs need, each 0.5 B an element plus 1 B per 32 elements of
// scale: 2 + 2 x (0.5 + 1/32) B an element.
inline constexpr double kMxfp4CastBytes = 2 + 2 * (0.5 + 1.0 / 32);
// Autocast with fp32 parameters (Stack::fp32_params): torch.autocast runs each matmul in bf16
// and casts an fp32 input or weight on the way in, a kernel that reads the fp32 tensor and writes
// its bf16 copy (4 + 2 B an element); a bf16 input (another matmul's output) is not cast.
inline constexpr double kAutocastCastBytes = 4 + 2;
// The GEMM's own rate under a recipe relative to tensor-scaled fp8: Hopper has no hardware
// block scaling, so rowwise and blockwise scales are applied in the GEMM's main loop or
// epilogue (DeepGEMM / CUTLASS blockwise kernels reach ~1550 of cuBLAS tensorwise fp8's ~1650
// TFLOP/s on H800/H100: 0.9); Blackwell scales blocks in hardware (mxfp8, nvfp4: 1.0).
double RecipeGemmFactor(Fp8Recipe r, absl::string_view generation);
// Whether a recipe scales by row or by 128-element block (torchao's rowwise, DeepSeek-style
// blockwise) rather than by tensor or by the hardware's 32-element microscaling blocks.
bool ScalesByRowOrBlock(Fp8Recipe r);
// Block-scaled formats measured against tensor-scaled fp8 on the same GPU (shared/data/gemm.csv
// rows 77-92, Transformer Engine's GEMM profiling tutorial on B300: the four forward GEMMs of one
// layer, M = 15872 tokens, hidden 4096, FFN 16384, under autocast): delayed-scaling fp8 takes
// 2.485 ms, mxfp8 2.848 ms, nvfp4 1.932 ms. Those autocast times include quantizing both inputs
// of every GEMM, which the model prices apart (CastBytesPerElement: 3, 4 and 5 B an element),
// so the rates here are the GEMMs' own: each time less its casts, the layer's 656.4 M input
// elements (activations 15872 x (3 x 4096 + 16384), weights 4096 x (12288 + 4096 + 2 x 16384))
// moved at the prior memory-bound efficiency (AcceleratorParams::hbm_eff 0.75) of B300's 8 TB/s:
// 2.157, 2.410 and 1.385 ms, mxfp8 0.895 of the fp8 rate and nvfp4 1.56x (far below its
// datasheet peak at these shapes; 0.87 and 1.29x with the casts left in). The same cap applies
// to mxfp4 on AMD CDNA 4: no public MI355X MXFP4 GEMM profile at training shapes was found, and
// the B300 one is the only fp4 training-GEMM measurement the project has (the band widens for
// fp4, model/uncertainty.cc).
inline constexpr double kB300LayerInputElements = 656408576;
inline constexpr double kB300CastBytesPerS = 0.75 * 8e12;
constexpr double B300GemmOnlyMs(double autocast_ms, double cast_bytes_per_element) {
  return autocast_ms - 1e3 * cast_bytes_per_element * kB300LayerInputElements / kB300CastBytesPerS;
}
inline constexpr double kMxfp8OverFp8 = B300GemmOnlyMs(2.485, 3) / B300GemmOnlyMs(2.848, 4);
// Transformer Engine's fp8 dot-product attention (cuDNN fp8 fused attention): QK^T and PV at the
// fp8 tensor rate, the softmax's exponentials unchanged (AttentionTime bounds them apart).
// FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608, abstract) on H100: "FP16 reaching up to 740
// TFLOPs/s (75% utilization), and with FP8 reaching close to 1.2 PFLOPs/s" (shared/data/gemm.csv
// row 223), 1.62x. Blackwell's fp8 tensor rate is also twice its bf16 rate; no public Blackwell fp8
// attention profile was found, so the Hopper ratio stands for it (an estimate).
inline constexpr double kFp8AttentionSpeedup = 1200.0 / 740.0;
inline constexpr double kNvfp4OverFp8 = B300GemmOnlyMs(2.485, 3) / B300GemmOnlyMs(1.932, 5);

// Everything about one accelerator + system + profile + stack needed by the kernels below.
struct Hardware {
  const Accelerator* acc = nullptr;
  double matmul_peak = 0;  // FLOP/s for the run's matmul precision
  double bf16_peak = 0;    // FLOP/s for attention (kept in 16-bit)
  double gemm_eff = 0;     // for the run's matmul precision and fp8 recipe
  double attn_eff = 0;     // for the stack's attention kernel
  // The attention kernel's tensor-core rate over bf16's: kFp8AttentionSpeedup for fp8 attention.
  double attn_mma_speedup = 1;
  // Softmax exponentials per second at full clock (bf16 peak / tensor_flops_per_exp); 0: unknown.
  double exp_per_s = 0;
  // SM cycles per second (SMs x tensor clock, from the 16-bit peak and the generation's dense
  // FLOPs per SM and clock: DenseFlopsPerSmClock); 0 where the generation's figure is unknown.
  double sm_cycles_per_s = 0;
  bool math_attention = false;  // unfused attention: score matrix through HBM
  double hbm_bps = 0;           // achieved bytes/s of memory-bound kernels
  // Memory-bound bytes relative to a hand-fused stack: of the kernels eager PyTorch has as one
  // native kernel (LayerNorm, residual add, GELU, softmax cross-entropy), and of those it runs as a
  // chain of elementwise kernels (RMSNorm, rotary embedding, the gated activation).
  double traffic_scale = 1;
  double composite_traffic_scale = 1;
  double kernel_min_s = kMemKernelMinS;  // floor of a short kernel (launch / host dispatch)
  double cast_bytes = 0;   // bytes per GEMM-input element cast by the fp8 recipe (0: none)
  double clock_scale = 1;  // < 1 when the power limit throttles the clocks
  double knee = 0;         // GEMM shape knee
  double attn_head_knee = kAttnHeadDimKnee;  // AttentionHeadDimKnee of the stack's kernel
  int matmul_bytes = 2;                      // bytes per element of matmul inputs
  // Network.
  int domain = 8;         // NVLink domain size in this cluster
  double nvlink_bps = 0;  // achieved ring bandwidth per GPU inside the domain, bytes/s
  double net_bps = 0;     // achieved inter-node bandwidth per GPU, bytes/s
  double host_bps = 0;    // achieved copy bandwidth to or from host memory per GPU, bytes/s
  // NVLS all-reduce bandwidth per GPU inside the domain, bytes/s (0: no NVLink SHARP: the
  // switches cannot reduce, or the stack's NCCL predates it).
  double nvls_bps = 0;
  bool in_network_reduction = false;  // the inter-node fabric reduces (InfiniBand SHARP)
  // Per-step latency of a collective across nodes: kAlphaInterS unless the cluster states its
  // fabric's (Cluster::inter_node_latency_us).
  double alpha_inter_s = kAlphaInterS;
};

// Dense 16-bit tensor-core FLOPs per SM and clock of an NVIDIA generation (0 = not tabled):
// Volta 1,024, Ampere 2,048, Hopper 4,096, Blackwell 8,192 (the architecture whitepapers' per-SM
// rates, as the catalog's tensor_flops_per_exp comments cite them: V100 80 SMs x 1,024 x 1.53 GHz
// = 125, A100 108 x 2,048 x 1.41 GHz = 312, H100 132 x 4,096 x 1.83 GHz = 989, B200 148 x 8,192 x
// 1.86 GHz = 2,250 TFLOP/s).
double DenseFlopsPerSmClock(absl::string_view generation);

// Builds the Hardware view; gpus_per_node and net_gbps overrides of 0 mean the usual system.
Hardware MakeHardware(const Accelerator& acc, const AcceleratorParams& ap, const Stack& stack,
                      const StackParams& sp, Precision precision, int gpus_per_node,
                      double net_gbps_override);

// Power-limit throttling of the compute clock: the fraction of full clock the GPU sustains in
// GEMM-heavy phases when its power limit is below what those phases draw at full clock.
double ClockScale(const Accelerator& acc);

// One GEMM (m x k) * (k x n): time on the GPU, the larger of compute and operand traffic.
double GemmTime(const Hardware& hw, double m, double n, double k);
// Forward or backward of causal flash attention over `batch` sequences of seq_q queries against
// seq_kv keys, with `heads` heads whose queries and keys are qk_dim wide and values v_dim (equal
// but for MLA).
double AttentionTime(const Hardware& hw, double batch, double seq_q, double seq_kv, double heads,
                     double qk_dim, double v_dim, bool backward);
// Unfused ("math") attention of the same shape: batched GEMMs over the whole score matrix and
// the softmax through HBM.
double MathAttentionTime(const Hardware& hw, double batch, double seq_q, double seq_kv,
                         double heads, double qk_dim, double v_dim, bool backward);
// A grouped GEMM (Transformer Engine / cuBLASLt grouped GEMM, Megatron-Core's GroupedMLP): `groups`
// independent (m x k) * (k x n) products in one kernel, as the local experts of an MoE layer
// run. Each group's rate follows the same shape knees as one GEMM (few tokens per expert, small
// m, low efficiency); the fixed cost is paid once.
double GroupedGemmTime(const Hardware& hw, double groups, double m, double n, double k);
// Whether a dimension is a whole number of kGemmAlignElements.
inline bool GemmAligned(double dim) {
  const double q = dim / kGemmAlignElements;
  return q == static_cast<double>(static_cast<int64_t>(q));
}
// GemmTime of a GEMM whose operands' leading dimension is not GemmAligned: its compute at
// kUnalignedGemmRate.
double UnalignedGemmTime(const Hardware& hw, double m, double n, double k);
// Memory-bound kernels moving `bytes` through HBM in `kernels` launches.
double MemTime(const Hardware& hw, double bytes, double kernels);

// kAllToAll: every rank sends an equal share of its `bytes` buffer to each rank (itself
// included); nccl-tests' alltoall.
enum class Collective { kAllGather, kReduceScatter, kAllReduce, kSendRecv, kAllToAll };

// A communicator: `ranks` GPUs, `ranks_per_domain` of them in each NVLink domain it spans.
struct Group {
  int ranks = 1;
  int ranks_per_domain = 1;
  int domains() const { return (ranks + ranks_per_domain - 1) / ranks_per_domain; }
};

// All-to-all of `bytes` per rank with the network part scaled by `network_share` (1 = every
// copy for a remote domain crosses the network; a deduplicating dispatcher sends fewer).
double AllToAllTime(const Hardware& hw, const Group& g, double bytes, double network_share);

// The closed form of a ring all_gather / reduce_scatter of a `bytes` buffer (the gathered size)
// over n ranks: n-1 steps, each a latency plus a 1/n shard at the ring's bandwidth.
double RingTime(int n, double bytes, double bandwidth_bps, double alpha_s);

// Time of one collective; `bytes` is the full buffer (all_gather output, reduce_scatter input,
// all_reduce buffer, the message for send/recv, a rank's send buffer for all-to-all). all_reduce
// takes the fastest of ring, tree, NVLS inside a domain and, across domains on a fabric that
// reduces in the network, NVLS with InfiniBand SHARP. All-to-all sends the shares for peers in the
// same NVLink domain over NVLink and the others over the GPU's NIC at the same time; the slower
// path sets the time (checked against the alltoall rows of shared/data/collectives.csv in
// hardware_test).
double CollectiveTime(const Hardware& hw, Collective c, const Group& g, double bytes);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_HARDWARE_H_
