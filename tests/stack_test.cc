// The software stack in the model: each named feature moves the term it should and only that one;
// the framework table decides defaults and what each layout axis accepts (the scenario check and
// the planner alike); the uneven pipeline split; the uncertainty band.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/layout.h"
#include "model/measurements.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/records.h"
#include "model/step.h"
#include "model/uncertainty.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

// Llama 3.1 70B on 64 H100 with a complete layout: tp4 pp2 dp8, ZeRO-1, selective recompute.
Scenario Fixed(const std::string& framework) {
  Scenario s;
  s.workload.model.name = "llama3-70b";
  s.workload.seq_len = 8192;
  s.workload.global_batch = 128;
  s.workload.precision = Precision::kBf16;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 64;
  s.framework = framework;
  Parallelism& p = s.parallelism;
  p.tp = 4;
  p.pp = 2;
  p.vpp = 1;
  p.cp = 1;
  p.sharding = Sharding::kZero1;
  p.micro_batch = 1;
  p.recompute = Recompute::kSelective;
  return s;
}

// DeepSeek-V3 at 4,096 tokens a sequence on `gpus` GPUs of `accelerator` under `framework`, with
// a layout of tp x pp stages and ep expert ranks (etp 1, one sequence a micro-batch) and the
// recompute given.
Scenario DeepSeekV3(const std::string& accelerator, int gpus, const std::string& framework, int tp,
                    int pp, int ep, Recompute recompute) {
  Scenario s;
  s.workload.model.name = "deepseek-v3";
  s.workload.seq_len = 4096;
  s.cluster.accelerator = accelerator;
  s.cluster.num_gpus = gpus;
  s.framework = framework;
  Parallelism& p = s.parallelism;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  p.etp = 1;
  p.micro_batch = 1;
  p.recompute = recompute;
  return s;
}

Prediction PredictFor(const Scenario& s) {
  absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Prediction{};
}

std::map<std::string, CommTime> Comm(const Prediction& p) {
  std::map<std::string, CommTime> out;
  for (const CommTime& c : p.time.comm) out[c.kind] = c;
  return out;
}

double ExposedDp(const Prediction& p) {
  double e = 0;
  for (const CommTime& c : p.time.comm) {
    if (absl::StartsWith(c.kind, "dp_")) e += c.exposed_s;
  }
  return e;
}

// The step of `q` under its framework with `edit` applied to the framework's behaviour: what a
// behaviour term costs, against the same scenario without it.
Prediction EvaluateWithBehaviour(const Scenario& q,
                                 const std::function<void(FrameworkBehaviour*)>& edit) {
  absl::StatusOr<Scenario> r = ResolveScenario(q, Catalog::Builtin());
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return Prediction{};
  Framework f = *FindFramework(q.framework);
  edit(&f.behaviour);
  const StepModel model(*r, *Catalog::Builtin().FindAccelerator(q.cluster.accelerator), f,
                        *ResolveStack(f, q.stack, q.workload.precision), Profile::BuiltinDefault());
  return model.Evaluate(r->parallelism);
}

// DualPipe (HAI-LLM, DeepSeek-V3) against 1F1B on the same layout (deepseek-ai/DualPipe README):
// it idles (PP/2-1)(F&B+B-3W) where 1F1B idles (PP-1)(F+B), holds two stages' parameters a GPU
// and PP+1 micro-batches of activations, pairs its chunks so that each hides the other's
// all-to-alls, and needs an even pipeline.
TEST(Pipeline, DualPipeIdlesLessAndHoldsTwoStagesOnEveryGpu) {
  Scenario s = Fixed("hai-llm");
  s.workload.precision = Precision::kBf16;
  s.parallelism.tp = 1;
  s.parallelism.pp = 8;
  s.parallelism.recompute = Recompute::kFull;
  const Prediction dual = PredictFor(s);
  const Prediction one_f_one_b = EvaluateWithBehaviour(
      s, [](FrameworkBehaviour* b) { b->pipeline_schedule = PipelineSchedule::k1F1B; });
  ASSERT_GT(one_f_one_b.time.pipeline_bubble_s, 0);
  // (PP/2-1)(F + B/2) against (PP-1)(F+B) with B between F and 3F: 3/7 of 5/8 to 3/4.
  const double ratio = dual.time.pipeline_bubble_s / one_f_one_b.time.pipeline_bubble_s;
  EXPECT_GT(ratio, 3.0 / 7 * 0.6);
  EXPECT_LT(ratio, 3.0 / 7 * 0.76);
  EXPECT_LT(dual.step_time_s, one_f_one_b.step_time_s);
  // The same micro-batches through the same layers: the same compute.
  EXPECT_NEAR(dual.time.compute_s, one_f_one_b.time.compute_s, 1e-9 * dual.time.compute_s);
  // Two stages a GPU (the ends hold both the embedding and the output layer).
  EXPECT_GT(dual.memory.weights_bytes, 1.9 * one_f_one_b.memory.weights_bytes);
  EXPECT_GT(dual.memory.gradients_bytes, 1.9 * one_f_one_b.memory.gradients_bytes);
  EXPECT_GT(dual.memory.activations_bytes, one_f_one_b.memory.activations_bytes);
  EXPECT_LT(dual.memory.activations_bytes, 1.2 * one_f_one_b.memory.activations_bytes);
  // An odd pipeline is refused with its field and reason.
  s.parallelism.pp = 5;
  s.parallelism.tp = 1;
  s.cluster.num_gpus = 40;
  s.workload.global_batch = 80;
  const absl::StatusOr<Prediction> odd = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(absl::StrContains(odd.status().message(), "DualPipe schedule needs an even pp"))
      << odd.status();
  // Users write the framework by its maker's name.
  ASSERT_NE(FindFramework("DeepSeek"), nullptr);
  EXPECT_EQ(FindFramework("DeepSeek")->name, "hai-llm");
}

// DeepSeek-V3 as its report trained it (arXiv 2412.19437 section 3.2: 2,048 H800, PP16 under
// DualPipe, EP64, ZeRO-1, fp8), with HAI-LLM's memory savings: recompute of the RMSNorms and
// MLA's up-projections (section 3.2.3) and of the MoE SwiGLU, whose input is cached in fp8, and
// bf16 AdamW moments (section 3.3.3). DualPipe's end GPUs hold stages 0 and 15 with the embedding,
// the output layer and the MTP module (4 + 1 layers and MTP in Megatron-Core's split); stage 0
// holds 16 micro-batches in flight, stage 15 one: 4 x 16 + 2 = 66 layer-micro-batches. The others
// hold two middle stages of 4 layers with 17 micro-batches between them (68) and no head.
TEST(Pipeline, DeepSeekV3FitsOnH800AsItsReportTrainedIt) {
  Scenario s = DeepSeekV3("h800-sxm-80gb", 2048, "hai-llm", 1, 16, 64, Recompute::kSelective);
  s.workload.global_batch = 15360;
  s.workload.precision = Precision::kFp8;
  Parallelism& p = s.parallelism;
  p.vpp = 1;
  p.cp = 1;
  p.sharding = Sharding::kZero1;
  const Prediction selective = PredictFor(s);
  // The framework's selective recompute, named in the layout.
  EXPECT_EQ(selective.layout.recompute_modules, Bit(RecomputeModule::kLayernorm) |
                                                    Bit(RecomputeModule::kMlaUpProj) |
                                                    Bit(RecomputeModule::kMoeAct));
  EXPECT_TRUE(selective.memory.fits) << selective.memory.total_bytes / double(1 << 30);
  p.recompute = Recompute::kFull;
  const Prediction full = PredictFor(s);
  // Either way the end GPUs are the fullest: nearly a middle GPU's activations, and the heads.
  // Their weights are the 5 layers, the MTP module and the heads, over a middle GPU's 8 layers.
  EXPECT_EQ(full.memory.weights_bytes, selective.memory.weights_bytes);
  EXPECT_GT(selective.memory.activations_bytes, 4 * full.memory.activations_bytes);
  // bf16 moments: fp32 master weights and bf16 moments, 8 bytes a parameter against 12.
  const Prediction fp32_moments =
      EvaluateWithBehaviour(s, [](FrameworkBehaviour* b) { b->bf16_optimizer_moments = false; });
  EXPECT_NEAR(
      static_cast<double>(fp32_moments.memory.optimizer_bytes) / full.memory.optimizer_bytes, 1.5,
      1e-6);
  // The SwiGLU input in fp8: each routed copy keeps 2 x 2048 bytes less.
  p.recompute = Recompute::kSelective;
  const Prediction one_f_one_b = EvaluateWithBehaviour(
      s, [](FrameworkBehaviour* b) { b->pipeline_schedule = PipelineSchedule::k1F1B; });
  // 1F1B's first stage: 4 layers with 16 micro-batches (64), one stage of weights; DualPipe's end
  // GPU: 66, and two stages of weights.
  const double logits = 4096.0 * 129280 * 4;  // the fused loss's fp32 logits chunk, at most
  EXPECT_NEAR(selective.memory.activations_bytes / double(one_f_one_b.memory.activations_bytes),
              66.0 / 64, logits / one_f_one_b.memory.activations_bytes);
  EXPECT_GT(selective.memory.weights_bytes, 1.3 * one_f_one_b.memory.weights_bytes);
  const Prediction bf16_swiglu =
      EvaluateWithBehaviour(s, [](FrameworkBehaviour* b) { b->moe_swiglu_input_fp8 = false; });
  EXPECT_GT(bf16_swiglu.memory.activations_bytes, 1.15 * selective.memory.activations_bytes);
  // A dense model has no MLA or MoE: HAI-LLM's selective recompute is its norms only; Megatron's
  // names no module (its policy recomputes the attention core).
  EXPECT_EQ(PredictFor(Fixed("hai-llm")).layout.recompute_modules,
            Bit(RecomputeModule::kLayernorm));
  EXPECT_EQ(PredictFor(Fixed("megatron")).layout.recompute_modules, 0u);
}

// Megatron-Core's interleaved pipeline syncs each model chunk's data-parallel state on its own
// (its schedule: config.grad_sync_func[chunk] after the chunk's last micro-batch backward,
// config.param_sync_func[chunk] before its first forward), so all chunks but the edge one hide
// behind the vpp - 1 blocks of pp chunk passes (fewer micro-batches: blocks of that many) the
// schedule still has to run; without interleaving, or in a framework that syncs the stage as one,
// the whole stage's reduction waits for the last micro-batch's backward.
TEST(Pipeline, InterleavedChunksReduceTheirGradientsWhileTheOtherChunksStillRun) {
  // GPT-3 175B on 1,024 H100 behind 200 Gbit/s a GPU: tp4 pp8 dp32, 8 micro-batches a step.
  Scenario s = Fixed("megatron");
  s.workload.model.name = "gpt3-175b";
  s.workload.seq_len = 2048;
  s.workload.global_batch = 256;
  s.cluster.num_gpus = 1024;
  s.cluster.inter_node_gbps_per_gpu = 200;
  s.parallelism.pp = 8;
  s.parallelism.recompute = Recompute::kNone;
  auto with_vpp = [&](int vpp, const std::string& framework) {
    Scenario q = s;
    q.framework = framework;
    q.parallelism.vpp = vpp;
    return PredictFor(q);
  };
  const Prediction plain = with_vpp(1, "megatron"), interleaved = with_vpp(4, "megatron");
  for (const char* kind : {"dp_reducescatter", "dp_allgather"}) {
    const CommTime a = Comm(plain).at(kind), b = Comm(interleaved).at(kind);
    // The same bytes over the same ranks.
    EXPECT_NEAR(a.total_s, b.total_s, 1e-9 * a.total_s) << kind;
    // Without interleaving the traffic outlasts one micro-batch's pass: much of it shows.
    EXPECT_GT(a.exposed_s, 0.3 * a.total_s) << kind;
    // Interleaved, three chunks of four hide behind 3 x 8 chunk passes; the edge chunk's
    // quarter hides behind its own pass only.
    EXPECT_LT(b.exposed_s, 0.6 * a.exposed_s) << kind;
    EXPECT_GT(b.exposed_s, 0.0) << kind;
  }
  // Two micro-batches a step, fewer than pp: the schedule's blocks hold two, and the chunks have
  // a quarter of the passes to hide behind (the same pass, micro-batch for micro-batch).
  s.workload.global_batch = 64;
  const Prediction few = with_vpp(4, "megatron");
  for (const char* kind : {"dp_reducescatter", "dp_allgather"}) {
    EXPECT_GT(Comm(few).at(kind).exposed_s, 1.2 * Comm(interleaved).at(kind).exposed_s) << kind;
  }
  s.workload.global_batch = 256;
  // A framework not known to sync chunk by chunk (the generic stack) waits for the whole stage.
  const Prediction generic_plain = with_vpp(1, ""), generic_interleaved = with_vpp(4, "");
  for (const char* kind : {"dp_reducescatter", "dp_allgather"}) {
    const double a = Comm(generic_plain).at(kind).exposed_s;
    EXPECT_NEAR(Comm(generic_interleaved).at(kind).exposed_s, a, 1e-9 * a) << kind;
  }
}

// Without sequence parallelism a stage's output is whole on every TP rank. Megatron-LM sends it
// whole until its scatter-gather optimisation (on by default from February 2021: release 2.0 of
// January does not have it, 2.6 does) and split over the TP ranks after, all-gathered inside
// the receiving stage; DeepSpeed's PipelineEngine sends it split too, but as four blocking
// transfers a micro-batch where Megatron's 1F1B has two exchanges.
TEST(Pipeline, StagesSendTheirOutputSplitOverTpWhereTheFrameworkDoes) {
  auto p2p_bytes = [](const std::string& framework, const std::string& version) {
    Scenario s = Fixed(framework);
    s.stack.version = version;
    s.parallelism.sharding = Sharding::kDdp;  // the releases of 2021 had no distributed optimizer
    s.parallelism.sequence_parallel = false;
    s.parallelism.recompute = Recompute::kFull;
    const Prediction p = PredictFor(s);
    EXPECT_EQ(p.stack.release, version);
    return static_cast<double>(Comm(p).at("pp_p2p").bytes_per_gpu);
  };
  const double whole = p2p_bytes("megatron", "2.0");
  ASSERT_GT(whole, 0);
  EXPECT_NEAR(p2p_bytes("megatron", "2.6"), whole / 4, 1e-6 * whole);  // tp 4
  EXPECT_NEAR(p2p_bytes("megatron-deepspeed", "2022.03"), 2 * whole / 4, 1e-6 * whole);
}

TEST(StackFeatures, TpCommOverlapHidesTensorParallelTrafficAndNothingElse) {
  Scenario off = Fixed("megatron");
  off.stack.tp_comm_overlap = false;
  Scenario on = off;
  on.stack.tp_comm_overlap = true;
  const Prediction a = PredictFor(off), b = PredictFor(on);
  EXPECT_DOUBLE_EQ(Comm(a)["tp"].total_s, Comm(b)["tp"].total_s);
  // On the compute stream but for the backward reduce-scatter of each column-parallel input
  // gradient, which Megatron runs beside the weight-gradient GEMM (a quarter of the traffic
  // with sequence parallelism).
  EXPECT_GT(Comm(a)["tp"].exposed_s, 0.75 * Comm(a)["tp"].total_s);
  EXPECT_LT(Comm(a)["tp"].exposed_s, Comm(a)["tp"].total_s);
  EXPECT_LT(Comm(b)["tp"].exposed_s, 0.5 * Comm(a)["tp"].exposed_s);
  EXPECT_DOUBLE_EQ(a.time.compute_s, b.time.compute_s);
  EXPECT_DOUBLE_EQ(ExposedDp(a), ExposedDp(b));
  EXPECT_GT(b.tokens_per_s_per_gpu, a.tokens_per_s_per_gpu);
}

// nanotron's asynchronous TP linears issue their collectives beside unchunked GEMMs: an
// all-gather hides behind the GEMM of the rank's own shard only, the forward reduce-scatter
// waits, and only the backward reduce-scatter has a whole GEMM (the weight gradient) beside it.
// Chunked overlap (userbuffers) hides far more of the same traffic.
TEST(StackFeatures, AsyncTpWithoutChunkedGemmsHidesOnlyWhatItsOwnShardCovers) {
  Scenario off = Fixed("nanotron");
  off.parallelism.recompute = Recompute::kNone;
  off.parallelism.sequence_parallel = true;  // tp_mode REDUCE_SCATTER
  off.stack.tp_comm_overlap = false;
  Scenario on = off;
  on.stack.tp_comm_overlap = true;
  Scenario chunked = Fixed("megatron");
  chunked.parallelism.recompute = Recompute::kNone;
  chunked.stack.tp_comm_overlap = true;
  const CommTime none = Comm(PredictFor(off))["tp"], own = Comm(PredictFor(on))["tp"];
  const CommTime all = Comm(PredictFor(chunked))["tp"];
  ASSERT_GT(own.total_s, 0);
  EXPECT_DOUBLE_EQ(own.total_s, none.total_s);
  EXPECT_LT(own.exposed_s, none.exposed_s);
  // The forward reduce-scatter, a quarter of the traffic, stays on the critical path.
  EXPECT_GT(own.exposed_s, 0.24 * own.total_s);
  EXPECT_GT(own.exposed_s / own.total_s, 2 * all.exposed_s / all.total_s);
  // Without sequence parallelism (tp_mode ALL_REDUCE) the forward all-reduce blocks: half the
  // traffic; the backward one runs beside the weight-gradient GEMM.
  on.parallelism.sequence_parallel = false;
  off.parallelism.sequence_parallel = false;
  const CommTime whole = Comm(PredictFor(on))["tp"], plain = Comm(PredictFor(off))["tp"];
  EXPECT_GT(whole.exposed_s, 0.49 * whole.total_s);
  EXPECT_LT(whole.exposed_s, plain.exposed_s);
}

TEST(StackFeatures, DpOverlapHidesDataParallelTrafficAndNothingElse) {
  Scenario on = Fixed("megatron");
  on.parallelism.pp = 1;
  on.parallelism.tp = 8;
  on.stack.dp_overlap = true;
  Scenario off = on;
  off.stack.dp_overlap = false;
  const Prediction a = PredictFor(on), b = PredictFor(off);
  EXPECT_LT(ExposedDp(a), ExposedDp(b));
  EXPECT_DOUBLE_EQ(a.time.compute_s, b.time.compute_s);
  EXPECT_DOUBLE_EQ(Comm(a)["tp"].exposed_s, Comm(b)["tp"].exposed_s);
  EXPECT_DOUBLE_EQ(Comm(a)["dp_reducescatter"].total_s, Comm(b)["dp_reducescatter"].total_s);
}

TEST(StackFeatures, Fp8RecipeChangesComputeOnly) {
  Scenario delayed = Fixed("nemo");
  delayed.workload.precision = Precision::kFp8;
  delayed.stack.fp8_recipe = "delayed";
  Scenario current = delayed;
  current.stack.fp8_recipe = "tensorwise";
  Scenario blockwise = delayed;
  blockwise.stack.fp8_recipe = "blockwise";
  const Prediction a = PredictFor(delayed), b = PredictFor(current), c = PredictFor(blockwise);
  EXPECT_EQ(a.stack.fp8_recipe, Fp8Recipe::kDelayed);
  // Current scaling reads each tensor once more for its amax; Hopper applies block scales in
  // the GEMM's main loop. The per-tensor recipes gather the same fp8 bytes over the TP ranks
  // (block scaling gathers in 16 bits: Fp8TensorParallelGathersMoveTheQuantizedCopy).
  EXPECT_LT(a.time.compute_s, b.time.compute_s);
  EXPECT_LT(b.time.compute_s, c.time.compute_s);
  EXPECT_DOUBLE_EQ(Comm(a)["tp"].total_s, Comm(b)["tp"].total_s);
  EXPECT_DOUBLE_EQ(ExposedDp(a) > 0, ExposedDp(b) > 0);
  // bf16 is slower than any fp8 recipe on H100 for this model.
  EXPECT_GT(PredictFor(Fixed("nemo")).time.compute_s, c.time.compute_s);
}

// Under fp8 with sequence parallelism Transformer Engine and torchtitan's float8 TP gather the
// quantized copy: the all-gathers carry 1 byte an element, the reduce-scatters still 2, so a
// Llama layer's TP traffic (gathers and scatters of the hidden state alike) is 3/4 of bf16's.
// Row- and block-scaled recipes gather in 16 bits, as does a stack that gathers before it casts.
TEST(StackFeatures, Fp8TensorParallelGathersMoveTheQuantizedCopy) {
  auto tp_bytes = [](const std::string& framework, Precision precision, const char* recipe) {
    Scenario s = Fixed(framework);
    s.workload.precision = precision;
    s.stack.fp8_recipe = recipe;
    s.parallelism.sequence_parallel = true;
    s.parallelism.sharding = Sharding::kUnspecified;  // the framework's own
    return static_cast<double>(Comm(PredictFor(s))["tp"].bytes_per_gpu);
  };
  const double megatron = tp_bytes("megatron", Precision::kBf16, "");
  ASSERT_GT(megatron, 0);
  EXPECT_NEAR(tp_bytes("megatron", Precision::kFp8, "delayed") / megatron, 0.75, 1e-6);
  EXPECT_NEAR(tp_bytes("megatron", Precision::kFp8, "tensorwise") / megatron, 0.75, 1e-6);
  EXPECT_NEAR(tp_bytes("megatron", Precision::kFp8, "blockwise") / megatron, 1.0, 1e-9);
  const double titan = tp_bytes("torchtitan", Precision::kBf16, "");
  ASSERT_GT(titan, 0);
  EXPECT_NEAR(tp_bytes("torchtitan", Precision::kFp8, "tensorwise") / titan, 0.75, 1e-6);
  EXPECT_NEAR(tp_bytes("torchtitan", Precision::kFp8, "rowwise") / titan, 1.0, 1e-9);
  const double nanotron = tp_bytes("nanotron", Precision::kBf16, "");
  ASSERT_GT(nanotron, 0);
  EXPECT_NEAR(tp_bytes("nanotron", Precision::kFp8, "") / nanotron, 1.0, 1e-9);
}

TEST(StackFeatures, Fp8LeavesTheOutputLayerIn16Bit) {
  // Two models that differ only in their vocabulary: the compute the larger output layer adds
  // is the same in bf16 and fp8 (Megatron-Core's output layer is not a Transformer Engine
  // module, torchtitan's float8 conversion skips it), while the layers run faster in fp8.
  const ModelPreset* llama = Catalog::Builtin().FindModel("llama3-70b");
  ASSERT_NE(llama, nullptr);
  auto compute = [&](int vocab, Precision precision) {
    Scenario s = Fixed("megatron");
    s.workload.model = llama->spec;  // the shape given in full, so the vocabulary is ours
    s.workload.model.vocab = vocab;
    s.workload.precision = precision;
    return PredictFor(s).time.compute_s;
  };
  const double bf16_head = compute(256000, Precision::kBf16) - compute(32000, Precision::kBf16);
  const double fp8_head = compute(256000, Precision::kFp8) - compute(32000, Precision::kFp8);
  EXPECT_GT(bf16_head, 0);
  EXPECT_NEAR(fp8_head, bf16_head, 1e-9 * bf16_head);
  EXPECT_LT(compute(32000, Precision::kFp8), 0.8 * compute(32000, Precision::kBf16));
}

TEST(StackFeatures, AttentionKernelChangesComputeOnlyAndFallsBackWhereItCannotRun) {
  Scenario fa2 = Fixed("nemo");
  fa2.stack.attention_kernel = "fa2";
  Scenario cudnn = fa2;
  cudnn.stack.attention_kernel = "cudnn";
  const Prediction a = PredictFor(fa2), b = PredictFor(cudnn);
  EXPECT_GT(a.time.compute_s, b.time.compute_s);  // FA2 on Hopper: kFa2OnHopper of cuDNN
  EXPECT_DOUBLE_EQ(Comm(a)["tp"].total_s, Comm(b)["tp"].total_s);
  // FA3 is Hopper-only: on A100 it runs as FA2, with a warning.
  Scenario fa3 = fa2;
  fa3.cluster.accelerator = "a100-sxm-80gb";
  fa3.stack.attention_kernel = "fa3";
  Scenario fa2_a100 = fa3;
  fa2_a100.stack.attention_kernel = "fa2";
  const Prediction c = PredictFor(fa3), d = PredictFor(fa2_a100);
  EXPECT_DOUBLE_EQ(c.time.compute_s, d.time.compute_s);
  bool warned = false;
  for (const std::string& w : c.warnings) warned |= absl::StrContains(w, "does not run on");
  EXPECT_TRUE(warned);
}

TEST(StackFeatures, FusionAndCompilationCutMemoryBoundTimeOnly) {
  Scenario eager = Fixed("torchtitan");
  eager.parallelism.sharding = Sharding::kFsdp;
  eager.stack.compiled = false;
  Scenario compiled = eager;
  compiled.stack.compiled = true;
  const Prediction a = PredictFor(eager), b = PredictFor(compiled);
  EXPECT_GT(a.time.compute_s, b.time.compute_s);
  EXPECT_DOUBLE_EQ(Comm(a)["tp"].total_s, Comm(b)["tp"].total_s);
  EXPECT_FALSE(a.stack.fused_kernels);
  EXPECT_TRUE(PredictFor(Fixed("nemo")).stack.fused_kernels);
}

TEST(StackFeatures, CudaGraphsLowerTheLaunchFloorOfShortKernels) {
  // A tiny model whose elementwise kernels are shorter than the eager dispatch floor.
  Scenario s;
  s.workload.model = testing::DenseModel("tiny", 4, 256, 4, 0, 1024, Mlp::kGated, 1000);
  s.workload.seq_len = 256;
  s.workload.global_batch = 8;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 1;
  s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 1, Recompute::kNone);
  s.stack.cuda_graphs = false;
  Scenario graphs = s;
  graphs.stack.cuda_graphs = true;
  EXPECT_GT(PredictFor(s).time.compute_s, PredictFor(graphs).time.compute_s);
}

TEST(StackFeatures, VersionSelectsTheDefaultsAndRequestsOverrideSingleFeatures) {
  const Framework* nemo = FindFramework("NeMo");
  ASSERT_NE(nemo, nullptr);
  StackOptions o;
  o.version = "24.09";
  absl::StatusOr<Stack> old = ResolveStack(*nemo, o, Precision::kFp8);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->fp8_recipe, Fp8Recipe::kDelayed);
  EXPECT_TRUE(old->tp_comm_overlap);
  o.version = "25.11";
  o.tp_comm_overlap = false;
  absl::StatusOr<Stack> bridge = ResolveStack(*nemo, o, Precision::kFp8);
  ASSERT_TRUE(bridge.ok());
  EXPECT_EQ(bridge->fp8_recipe, Fp8Recipe::kTensorwise);
  EXPECT_FALSE(bridge->tp_comm_overlap);
  // Precision decides the block-scaled recipes; a recipe that contradicts it is refused by field.
  StackOptions bad;
  bad.fp8_recipe = "mxfp8";
  absl::StatusOr<Stack> refused = ResolveStack(*nemo, bad, Precision::kBf16);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "scenario.stack.fp8_recipe"));
  EXPECT_EQ(ResolveStack(*nemo, {}, Precision::kMxfp8)->fp8_recipe, Fp8Recipe::kMxfp8);
  StackOptions unknown;
  unknown.attention_kernel = "fa9";
  EXPECT_FALSE(ResolveStack(*nemo, unknown, Precision::kBf16).ok());
  // The physics never tests a framework name: every framework resolves through the table.
  for (const Framework& f : Frameworks()) {
    EXPECT_TRUE(ResolveStack(f, {}, Precision::kBf16).ok()) << f.name;
  }
}

// NeMo's performance recipes reduce gradients in bf16 from the 24.09 container on, and
// Megatron-Bridge's (25.09 on) keep fp8 primary weights with the recipes whose mixed-precision
// config does (delayed, current scaling, MXFP8), not with blockwise or NVFP4; a request can say
// otherwise.
TEST(StackFeatures, NemoPerformanceRecipesReduceInBf16AndGatherFp8Weights) {
  const Framework* nemo = FindFramework("nemo");
  ASSERT_NE(nemo, nullptr);
  auto resolve = [nemo](const char* version, Precision p, const char* recipe = "") {
    StackOptions o;
    o.version = version;
    o.fp8_recipe = recipe;
    absl::StatusOr<Stack> s = ResolveStack(*nemo, o, p);
    EXPECT_TRUE(s.ok()) << version;
    return s.ok() ? *s : Stack{};
  };
  EXPECT_FALSE(resolve("24.07", Precision::kBf16).bf16_grads);
  EXPECT_TRUE(resolve("24.09", Precision::kBf16).bf16_grads);
  EXPECT_TRUE(resolve("25.04", Precision::kFp8).bf16_grads);
  EXPECT_FALSE(resolve("25.04", Precision::kFp8).fp8_param_gather);
  EXPECT_TRUE(resolve("25.11", Precision::kFp8).fp8_param_gather);
  EXPECT_TRUE(resolve("26.04", Precision::kMxfp8).fp8_param_gather);
  EXPECT_TRUE(resolve("26.04", Precision::kFp8, "delayed").fp8_param_gather);
  EXPECT_FALSE(resolve("26.04", Precision::kFp8, "blockwise").fp8_param_gather);
  EXPECT_FALSE(resolve("26.04", Precision::kNvfp4).fp8_param_gather);
  EXPECT_FALSE(resolve("26.04", Precision::kBf16).fp8_param_gather);
  StackOptions asked;
  asked.version = "26.04";
  asked.bf16_grads = false;
  asked.fp8_param_gather = true;
  absl::StatusOr<Stack> own = ResolveStack(*nemo, asked, Precision::kNvfp4);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE(own->bf16_grads);
  EXPECT_TRUE(own->fp8_param_gather);
}

// From the 26.02 container (Megatron-Bridge 0.3.0) most of Megatron-Bridge's MoE performance
// presets use the flex dispatcher, so a run naming only such a release dispatches fused; before it,
// and wherever a request says otherwise, the all-to-all dispatcher. Megatron-Core's own releases
// keep the all-to-all; a container number given to megatron names that NeMo container.
TEST(StackFeatures, BridgeContainersFromTheirFlexMajorityDispatchFused) {
  auto fused = [](const char* framework, const char* version, std::optional<bool> asked = {}) {
    const Framework* f = FindFramework(framework);
    EXPECT_NE(f, nullptr) << framework;
    if (f == nullptr) return false;
    StackOptions o;
    o.version = version;
    o.fused_dispatch = asked;
    absl::StatusOr<Stack> s = ResolveStack(*f, o, Precision::kMxfp8);
    EXPECT_TRUE(s.ok()) << version;
    return s.ok() && s->fused_dispatch;
  };
  EXPECT_FALSE(fused("nemo", "25.11"));
  EXPECT_FALSE(fused("nemo", "0.2"));
  EXPECT_TRUE(fused("nemo", "26.02"));
  EXPECT_TRUE(fused("nemo", "0.3"));
  EXPECT_TRUE(fused("nemo", "26.04.01"));
  EXPECT_TRUE(fused("megatron-bridge", "26.06"));
  EXPECT_TRUE(fused("nemo", ""));  // today's release
  EXPECT_FALSE(fused("nemo", "26.04", false));
  EXPECT_FALSE(fused("megatron", "0.17"));
  EXPECT_FALSE(fused("megatron", ""));  // today's Megatron-Core
  EXPECT_TRUE(fused("megatron", "26.04"));
  EXPECT_FALSE(fused("megatron", "25.11"));
}

// Megatron-LM's releases are core_v0.x from Megatron-Core 0.4; a YY.MM from then on names the NGC
// NeMo container of that number (the shared data labels the Megatron-Bridge performance summaries'
// MoE runs "megatron" with their container), so megatron answers it with that container's stack
// and echoes it, exactly or as the container before it. Megatron-LM's own YY.MM tags and the
// library's 0.x numbers keep their own releases.
TEST(Releases, AMegatronContainerNumberIsTheNemoContainerOfThatNumber) {
  const Framework* megatron = FindFramework("megatron");
  const Framework* nemo = FindFramework("nemo");
  ASSERT_NE(megatron, nullptr);
  ASSERT_NE(nemo, nullptr);
  auto resolve = [](const Framework& f, const char* version) {
    StackOptions o;
    o.version = version;
    absl::StatusOr<Stack> s = ResolveStack(f, o, Precision::kFp8);
    EXPECT_TRUE(s.ok()) << f.name << " " << version << ": " << s.status();
    return s.ok() ? *s : Stack{};
  };
  for (const char* container : {"24.09", "25.09", "26.02.01", "26.06", "26.08"}) {
    const Stack as_megatron = resolve(*megatron, container);
    const Stack as_nemo = resolve(*nemo, container);
    EXPECT_EQ(as_megatron.release, container);
    EXPECT_TRUE(
        absl::StrContains(as_megatron.release_note, absl::StrCat("priced as nemo ", container)))
        << as_megatron.release_note;
    EXPECT_EQ(as_megatron.tp_comm_overlap, as_nemo.tp_comm_overlap) << container;
    EXPECT_EQ(as_megatron.bf16_grads, as_nemo.bf16_grads) << container;
    EXPECT_EQ(as_megatron.fp8_param_gather, as_nemo.fp8_param_gather) << container;
    EXPECT_EQ(as_megatron.fused_dispatch, as_nemo.fused_dispatch) << container;
    EXPECT_EQ(as_megatron.fp8_recipe, as_nemo.fp8_recipe) << container;
  }
  EXPECT_TRUE(resolve(*megatron, "25.09").tp_comm_overlap);
  EXPECT_FALSE(resolve(*megatron, "0.14").tp_comm_overlap);  // the library's opt-in
  // Between two containers, the one before: never a Megatron-Core release of a nearer date.
  const Stack between = resolve(*megatron, "26.01");
  EXPECT_EQ(between.release, "25.11");
  EXPECT_TRUE(absl::StrContains(between.release_note, "nearest before it, 25.11"))
      << between.release_note;
  EXPECT_TRUE(absl::StrContains(between.release_note, "priced as nemo 25.11"))
      << between.release_note;
  EXPECT_TRUE(resolve(*megatron, "0.14").release_note.empty());
  // A calendar date is the framework's own software of that date, not a container.
  EXPECT_EQ(resolve(*megatron, "2024.05").release, "0.7");
  EXPECT_EQ(resolve(*megatron, "2025-11-20").release, "0.14");
  EXPECT_EQ(resolve(*nemo, "2025.10").release, "25.09");
  EXPECT_EQ(resolve(*megatron, "23.06").release, "23.06");  // Megatron-LM's own tag
  EXPECT_EQ(resolve(*megatron, "0.8").release, "0.8");
  EXPECT_EQ(resolve(*megatron, "").release, megatron->versions.back().version);
  EXPECT_TRUE(absl::StartsWith(megatron->versions.back().version, "0."));
}

// Frameworks whose data-parallel collectives block the compute stream by default: PaddleNLP's
// sharding stage 2 reduces in its backward hook with sync_op unless enable_stage2_overlap is
// asked for, and Colossal-AI 0.3's Gemini gathers and reduces its chunks in place until 0.4's
// asynchronous reduce. A request can still say otherwise.
TEST(StackFeatures, ReleasesWhoseDataParallelCollectivesBlockSaySo) {
  const auto resolve = [](const char* name, const char* version) {
    StackOptions o;
    o.version = version;
    absl::StatusOr<Stack> s = ResolveStack(*FindFramework(name), o, Precision::kBf16);
    EXPECT_TRUE(s.ok()) << name << " " << version;
    return s.ok() ? *s : Stack{};
  };
  EXPECT_FALSE(resolve("paddlepaddle", "2.6").dp_overlap);
  EXPECT_FALSE(resolve("paddlepaddle", "3.0").dp_overlap);
  EXPECT_FALSE(resolve("colossal-ai", "0.3").dp_overlap);
  EXPECT_TRUE(resolve("colossal-ai", "0.4").dp_overlap);
  StackOptions asked;
  asked.version = "2.6";
  asked.dp_overlap = true;
  EXPECT_TRUE(ResolveStack(*FindFramework("paddlepaddle"), asked, Precision::kBf16)->dp_overlap);
}

// A stage that keeps its gradients whole (DDP, ZeRO-1) adds each micro-batch's into its buffer.
// Inside the weight-gradient GEMM (Megatron) that is free; as a pass of its own it is memory
// traffic a micro-batch: every one into nanotron's fp32 buffer, all but the first into
// autograd's .grad. Only compute moves, and gradients that leave every micro-batch (FSDP) add up
// nothing.
TEST(StackFeatures, GradientsAccumulatedOutsideTheGemmCostAPassPerMicroBatch) {
  Scenario nanotron = Fixed("nanotron");
  nanotron.parallelism.pp = 1;
  nanotron.parallelism.tp = 8;
  nanotron.parallelism.sequence_parallel = true;
  Scenario deepspeed = Fixed("megatron-deepspeed");
  deepspeed.parallelism.pp = 1;
  using G = GradAccumulation;
  // `base` with the step's micro-batches (dp 8), the sharding and the framework's accumulation
  // as given.
  auto run = [](const Scenario& base, int micro_batches, G how, Sharding sharding) {
    Scenario q = base;
    q.workload.global_batch = 8 * micro_batches;
    q.parallelism.sharding = sharding;
    return EvaluateWithBehaviour(q, [how](FrameworkBehaviour* b) { b->grad_accumulation = how; });
  };
  // The compute the accumulation pass adds.
  auto extra = [&](const Scenario& base, int m, G how, Sharding sh) {
    return run(base, m, how, sh).time.compute_s - run(base, m, G::kInGemm, sh).time.compute_s;
  };
  // nanotron's fp32 buffer: a pass every micro-batch, the same each time.
  const double fp32_4 = extra(nanotron, 4, G::kFp32Buffer, Sharding::kZero1);
  EXPECT_GT(fp32_4, 0);
  EXPECT_NEAR(extra(nanotron, 8, G::kFp32Buffer, Sharding::kZero1), 2 * fp32_4, 1e-9 * fp32_4);
  // Autograd's .grad: nothing for one micro-batch, then all but the first, on 16-bit gradients.
  EXPECT_DOUBLE_EQ(extra(nanotron, 1, G::kAutograd, Sharding::kDdp), 0);
  const double autograd_4 = extra(nanotron, 4, G::kAutograd, Sharding::kDdp);
  EXPECT_NEAR(extra(nanotron, 8, G::kAutograd, Sharding::kDdp) / 7, autograd_4 / 3,
              1e-9 * autograd_4);
  EXPECT_LT(autograd_4 / 3, fp32_4 / 4);  // 6 bytes a parameter against 10
  // Only compute moves.
  const Prediction in_gemm = run(nanotron, 8, G::kInGemm, Sharding::kZero1);
  const Prediction fp32 = run(nanotron, 8, G::kFp32Buffer, Sharding::kZero1);
  EXPECT_DOUBLE_EQ(Comm(fp32)["tp"].exposed_s, Comm(in_gemm)["tp"].exposed_s);
  EXPECT_DOUBLE_EQ(ExposedDp(fp32), ExposedDp(in_gemm));
  EXPECT_GT(fp32.step_time_s, in_gemm.step_time_s);
  // Gradients that FSDP reduce-scatters every micro-batch are never accumulated whole.
  EXPECT_DOUBLE_EQ(extra(deepspeed, 8, G::kAutograd, Sharding::kFsdp), 0);
  EXPECT_GT(extra(deepspeed, 8, G::kAutograd, Sharding::kZero1), 0);
}

// JAX rematerialises only what the backward consumes: the down projection that ends each layer
// feeds only the next layer, so neither a full recompute nor a rebuilt MLP redoes it. PyTorch's
// checkpoint reruns the whole forward it wraps.
TEST(StackFeatures, XlaRecomputesOnlyWhatTheBackwardConsumes) {
  Scenario s = Fixed("maxtext");
  s.parallelism.tp = 1;
  s.parallelism.pp = 1;
  s.parallelism.sharding = Sharding::kFsdp;
  auto run = [](const Scenario& base, Recompute rc, uint32_t modules, bool as_needed) {
    Scenario q = base;
    q.parallelism.recompute = rc;
    q.parallelism.recompute_modules = modules;
    return EvaluateWithBehaviour(q, [as_needed](FrameworkBehaviour* b) {
      b->recompute_only_what_backward_consumes = as_needed;
    });
  };
  // Hardware FLOPs per token the rebuild leaves out, from HFU / MFU (the step time cancels).
  auto skipped_flops = [](const Prediction& all, const Prediction& needed) {
    const double model_flops = all.model_tflops_per_gpu * 1e12 / all.tokens_per_s_per_gpu;
    return (all.hfu / all.mfu - needed.hfu / needed.mfu) * model_flops;
  };
  // llama3-70b: 80 layers of hidden 8192 and FFN 28672; the down projection's forward is
  // 2 h f FLOPs a token a layer.
  const double down = 2.0 * 8192 * 28672 * 80;
  const uint32_t mlp = 1u << static_cast<int>(RecomputeModule::kMlp);
  EXPECT_TRUE(FindFramework("maxtext")->behaviour.recompute_only_what_backward_consumes);
  EXPECT_FALSE(FindFramework("megatron")->behaviour.recompute_only_what_backward_consumes);
  for (const auto& [rc, modules] :
       {std::pair<Recompute, uint32_t>{Recompute::kFull, 0}, {Recompute::kSelective, mlp}}) {
    const Prediction all = run(s, rc, modules, false);
    const Prediction needed = run(s, rc, modules, true);
    EXPECT_NEAR(skipped_flops(all, needed), down, 1e-6 * down) << ToString(rc);
    EXPECT_LT(needed.time.recompute_s, all.time.recompute_s) << ToString(rc);
    EXPECT_GT(needed.time.recompute_s, 0) << ToString(rc);
    // Only the recompute moves.
    EXPECT_DOUBLE_EQ(needed.time.compute_s, all.time.compute_s) << ToString(rc);
  }
  // Without a recompute there is nothing to leave out.
  EXPECT_DOUBLE_EQ(run(s, Recompute::kNone, 0, true).step_time_s,
                   run(s, Recompute::kNone, 0, false).step_time_s);
}

// --- The framework table drives the scenario check and the planner, one axis at a time -------

absl::Status Check(const Scenario& s) { return ResolveScenario(s, Catalog::Builtin()).status(); }

std::vector<Prediction> Top(Scenario s, int k = 300) {
  absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  EXPECT_TRUE(r.ok()) << r.status();
  PlanOptions o;
  o.top_k = k;
  absl::StatusOr<PlanResult> plan = Plan(*r, Catalog::Builtin(), Profile::BuiltinDefault(), o);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? plan->top : std::vector<Prediction>{};
}

Scenario Open(const std::string& framework) {
  Scenario s = Fixed(framework);
  s.parallelism = Parallelism{};
  s.workload.global_batch = 512;
  return s;
}

TEST(LayoutAxes, TensorParallelOnlyWhereTheFrameworkOffersIt) {
  Scenario s = Fixed("composer-fsdp");
  s.parallelism.pp = 1;
  s.parallelism.sharding = Sharding::kFsdp;
  EXPECT_TRUE(absl::StrContains(Check(s).message(),
                                "scenario.parallelism.tp: composer-fsdp does not offer"));
  for (const Prediction& p : Top(Open("composer-fsdp"))) EXPECT_EQ(p.layout.tp, 1);
  s.framework = "torchtitan";
  EXPECT_TRUE(Check(s).ok()) << Check(s);
}

TEST(LayoutAxes, PipelineSplitsMustDivideUnlessTheFrameworkSplitsUnevenly) {
  Scenario s = Fixed("torchtitan");
  s.workload.model.name = "llama2-70b";  // 80 layers
  s.cluster.num_gpus = 56;
  s.workload.global_batch = 16;
  s.parallelism.tp = 8;
  s.parallelism.pp = 7;  // 80 layers (82 with embedding and loss) do not split in 7
  EXPECT_TRUE(absl::StrContains(Check(s).message(), "scenario.parallelism.pp"));
  // Megatron-Core's custom pipeline layout takes it: chunks of 11 or 12 units, the slowest
  // stage 12 (the first stage's 12 include the embedding).
  s.framework = "megatron";
  absl::StatusOr<Scenario> flexible = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(flexible.ok()) << flexible.status();
  EXPECT_EQ(SplitLayers(flexible->workload.model, flexible->parallelism).Max(), 12);
  s.framework = "torchtitan";
  s.cluster.num_gpus = 64;
  s.parallelism.pp = 4;
  s.parallelism.vpp = 6;  // pp*vpp = 24 chunks
  EXPECT_TRUE(absl::StrContains(Check(s).message(), "pp*vpp=24"));
  // Llama 3.1 405B (126 layers) at pp16 vpp8: the embedding and the loss count as layers.
  Scenario big = Fixed("nemo");
  big.workload.model.name = "llama3-405b";
  big.cluster.num_gpus = 1024;
  big.workload.global_batch = 512;
  big.parallelism.tp = 8;
  big.parallelism.pp = 16;
  big.parallelism.vpp = 8;
  absl::StatusOr<Scenario> r = ResolveScenario(big, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->parallelism.embedding_in_split && r->parallelism.loss_in_split);
  // A framework without uneven splits refuses it.
  big.framework = "maxtext";
  big.parallelism.vpp = 1;
  EXPECT_FALSE(Check(big).ok());
  // The planner proposes the same uneven splits, and only valid ones.
  Scenario open = Open("nemo");
  open.workload.model.name = "llama3-405b";
  open.cluster.num_gpus = 1024;
  open.workload.global_batch = 512;
  const absl::StatusOr<Scenario> ro = ResolveScenario(open, Catalog::Builtin());
  ASSERT_TRUE(ro.ok());
  const LayoutContext ctx = MakeLayoutContext(*ro, 8);
  bool uneven = false;
  for (const Parallelism& p : PipelineCandidates(ctx, Parallelism{})) {
    EXPECT_EQ(CheckPipeline(ctx, p), "") << p.pp << "x" << p.vpp;
    uneven |= p.embedding_in_split;
  }
  EXPECT_TRUE(uneven);
}

// Resolving a fixed pp and vpp takes the split the planner would list first, found without
// building the list: the same answer for every stage and chunk count, valid or not, on a
// framework with the uneven split and on one without.
TEST(Stack, FirstPipelineSplitIsThePlannersFirstCandidate) {
  for (const char* framework : {"nemo", "torchtitan", "megatron"}) {
    Scenario open = Open(framework);
    open.workload.model.name = "llama3-405b";
    open.cluster.num_gpus = 1024;
    open.workload.global_batch = 512;
    const absl::StatusOr<Scenario> ro = ResolveScenario(open, Catalog::Builtin());
    ASSERT_TRUE(ro.ok()) << ro.status();
    const LayoutContext ctx = MakeLayoutContext(*ro, 8);
    int found = 0, uneven = 0;
    for (int pp = 1; pp <= 40; ++pp) {
      for (int vpp = 1; vpp <= 12; ++vpp) {
        Parallelism req;
        req.pp = pp;
        req.vpp = vpp;
        const std::vector<Parallelism> listed = PipelineCandidates(ctx, req);
        const std::optional<Parallelism> first = FirstPipelineSplit(ctx, req);
        ASSERT_EQ(first.has_value(), !listed.empty()) << framework << " " << pp << "x" << vpp;
        if (!first.has_value()) continue;
        ++found;
        uneven += first->embedding_in_split;
        EXPECT_EQ(first->pp, listed.front().pp);
        EXPECT_EQ(first->vpp, listed.front().vpp);
        EXPECT_EQ(first->embedding_in_split, listed.front().embedding_in_split);
        EXPECT_EQ(first->loss_in_split, listed.front().loss_in_split);
      }
    }
    EXPECT_GT(found, 0) << framework;
    if (std::string(framework) == "nemo") {
      EXPECT_GT(uneven, 0);
    }
  }
}

// Units that do not divide go to the first chunks, away from the output layer; a multi-token
// prediction module counts as two units (its layer, its pass through the head) beside the loss.
// DeepSeek-V3's 61 layers: NeMo's split without MTP, and Megatron-Bridge's layouts with it.
TEST(LayoutAxes, RemainderUnitsGoFirstAndMtpModulesCountTwice) {
  ModelSpec m;
  m.layers = 61;
  Parallelism p;
  p.pp = 4;
  p.vpp = 1;
  p.embedding_in_split = p.loss_in_split = true;
  PipelineSplit s = SplitLayers(m, p);  // 63 units: 16, 16, 16, 15
  EXPECT_EQ(std::tuple(s.first, s.middle, s.last, s.mtp), std::tuple(15, 16, 14, 0));
  m.mtp_layers = 1;
  p.pp = 16;  // 65 units: Megatron-Bridge's [E + 4], [4] x 14, [1 + mtp + loss]
  s = SplitLayers(m, p);
  EXPECT_EQ(std::tuple(s.first, s.middle, s.last, s.mtp), std::tuple(4, 4, 1, 1));
  EXPECT_EQ(s.Max(), 4);
  p.pp = 4;
  p.vpp = 4;  // chunks of 4: the last stage's last chunk holds 1 layer, the MTP and the loss
  s = SplitLayers(m, p);
  EXPECT_EQ(std::tuple(s.first, s.middle, s.last, s.mtp), std::tuple(16, 16, 13, 1));
  // Without the loss in the split the MTP layer sits on top of an even last stage.
  p = Parallelism{};
  p.pp = 2;
  p.vpp = 1;
  m.layers = 60;
  s = SplitLayers(m, p);
  EXPECT_EQ(std::tuple(s.first, s.last, s.mtp, s.Max()), std::tuple(30, 30, 1, 31));
}

TEST(LayoutAxes, UnevenSplitByFirstAndLastStageLayers) {
  ModelSpec m;
  m.layers = 126;
  Parallelism p;
  p.pp = 8;
  p.vpp = 1;
  p.embedding_in_split = p.loss_in_split = true;
  PipelineSplit s = SplitLayers(m, p);
  EXPECT_EQ(s.first, 15);
  EXPECT_EQ(s.middle, 16);
  EXPECT_EQ(s.last, 15);
  Parallelism q;
  q.pp = 8;
  q.vpp = 1;
  q.first_stage_layers = 14;
  q.last_stage_layers = 16;  // 96 left for 6 stages
  s = SplitLayers(m, q);
  EXPECT_EQ(s.first, 14);
  EXPECT_EQ(s.middle, 16);
  EXPECT_EQ(s.Max(), 16);
  LayoutContext ctx;
  ctx.model = &m;
  ctx.framework = FindFramework("nemo");
  EXPECT_EQ(CheckPipeline(ctx, q), "");
  q.first_stage_layers = 13;  // 97 left: does not split over 6
  EXPECT_NE(CheckPipeline(ctx, q), "");
  // The last stage also runs the output layer and the loss: taking layers off it is faster than
  // putting them on it.
  Scenario light = Fixed("nemo");
  light.workload.model.name = "llama3-405b";
  light.cluster.num_gpus = 512;
  light.workload.global_batch = 256;
  light.parallelism.tp = 8;
  light.parallelism.pp = 8;
  light.parallelism.first_stage_layers = 16;
  light.parallelism.last_stage_layers = 14;
  Scenario heavy = light;
  heavy.parallelism.first_stage_layers = 14;
  heavy.parallelism.last_stage_layers = 16;
  EXPECT_LT(PredictFor(light).step_time_s, PredictFor(heavy).step_time_s);
}

TEST(LayoutAxes, ContextParallelOnlyWhereOffered) {
  Scenario s = Fixed("fms-fsdp");
  s.parallelism.tp = 1;
  s.parallelism.pp = 1;
  s.parallelism.cp = 2;
  s.parallelism.sharding = Sharding::kFsdp;
  EXPECT_TRUE(absl::StrContains(Check(s).message(), "scenario.parallelism.cp"));
  for (const Prediction& p : Top(Open("fms-fsdp"))) EXPECT_EQ(p.layout.cp, 1);
}

TEST(LayoutAxes, ShardingFollowsTheFrameworkAndPipelining) {
  Scenario s = Fixed("megatron");
  s.parallelism.sharding = Sharding::kFsdp;  // Megatron-FSDP, but not with PP
  EXPECT_TRUE(absl::StrContains(Check(s).message(), "scenario.parallelism.sharding"));
  s.parallelism.pp = 1;
  EXPECT_TRUE(Check(s).ok()) << Check(s);
  for (const Prediction& p : Top(Open("megatron"))) {
    if (p.layout.pp > 1) {
      EXPECT_TRUE(p.layout.sharding == Sharding::kDdp || p.layout.sharding == Sharding::kZero1);
    }
  }
}

TEST(LayoutAxes, InterleavingOnlyWhereOffered) {
  Scenario s = Fixed("maxtext");
  s.parallelism.sharding = Sharding::kFsdp;
  s.parallelism.pp = 2;
  s.parallelism.vpp = 2;
  EXPECT_TRUE(absl::StrContains(Check(s).message(), "interleaved"));
  for (const Prediction& p : Top(Open("maxtext"))) EXPECT_EQ(p.layout.vpp, 1);
}

TEST(LayoutAxes, FixingOnlyTpKeepsTheFrameworksSequenceParallelism) {
  Scenario s = Open("megatron");
  s.parallelism.tp = 4;
  for (const Prediction& p : Top(s, 20)) EXPECT_TRUE(p.layout.sequence_parallel.value_or(false));
  s.parallelism.sequence_parallel = false;
  for (const Prediction& p : Top(s, 20)) EXPECT_FALSE(p.layout.sequence_parallel.value_or(true));
}

// Sequence parallelism is opt-in in PaddleNLP (sequence_parallel, off in its A100 pretrain
// configs), Colossal-AI (HybridParallelPlugin's enable_sequence_parallelism=False) and nanotron
// (tp_mode ALL_REDUCE unless REDUCE_SCATTER is asked for): a TP layout
// of theirs keeps whole activations between blocks unless the request turns it on.
TEST(LayoutAxes, SequenceParallelismIsOptInWhereTheFrameworkMakesItSo) {
  for (const std::string framework : {"paddlepaddle", "colossal-ai", "nanotron"}) {
    Scenario s = Fixed(framework);
    s.parallelism.recompute = Recompute::kFull;
    const Prediction off = PredictFor(s);
    EXPECT_FALSE(off.layout.sequence_parallel.value_or(true)) << framework;
    s.parallelism.sequence_parallel = true;
    const Prediction on = PredictFor(s);
    EXPECT_TRUE(on.layout.sequence_parallel.value_or(false)) << framework;
    EXPECT_GT(off.memory.activations_bytes, on.memory.activations_bytes) << framework;
  }
}

// --- Every measured run is answered; none that ran is judged not to fit ----------------------

std::vector<Measurement> AllRuns() {
  return testing::LoadRuns({"calibration.csv", "calibration-stacks.csv"});
}

TEST(Calibration, EveryRunOfBothSetsIsAnsweredAndFits) {
  const std::vector<Measurement> runs = AllRuns();
  ASSERT_EQ(runs.size(), 382u);
  const ValidationReport r = Validate(runs, Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_EQ(r.failed_count, 0);
  for (const ValidationRow& row : r.rows) {
    EXPECT_EQ(row.failure, "") << row.measurement->labels.at("csv_id");
    if (!row.failure.empty()) continue;
    StepModel model(*ResolveScenario(row.measurement->scenario, Catalog::Builtin()),
                    Catalog::Builtin(), Profile::BuiltinDefault());
    const MemoryBreakdown mem = model.Memory(row.layout);
    EXPECT_TRUE(mem.fits) << "run " << row.measurement->labels.at("csv_id")
                          << " ran, so it fits: " << mem.total_bytes / double(1 << 30) << " GiB of "
                          << mem.capacity_bytes / double(1 << 30);
  }
}

TEST(Uncertainty, BandCoversEightyPercentOfHeldOutSourcesAndWidensOutsideTheData) {
  // At every level of what a user states: the same folds, the held-out runs asked so.
  std::map<StatedFacts, HoldOutReport> by_facts = LeaveOneSourceOutByFacts(
      AllRuns(), Catalog::Builtin(), Profile(), FitOptions(), kStatedFactsLevels);
  ASSERT_EQ(by_facts.size(), 4u);
  for (const auto& [facts, h] : by_facts) {
    SCOPED_TRACE(StatedFactsName(facts));
    EXPECT_GE(h.band_coverage, 0.75);
    EXPECT_LE(h.band_coverage, 0.85);
    EXPECT_GT(h.band_median_width, 0.0);
  }
  EXPECT_GT(by_facts[StatedFacts::kNone].band_median_width,
            by_facts[StatedFacts::kAll].band_median_width);
  // In the data: nemo on H100. Outside: nemo on MI300X, and fp4.
  const Prediction in = PredictFor(Fixed("nemo"));
  EXPECT_LT(in.uncertainty.low, in.tokens_per_s_per_gpu);
  EXPECT_GT(in.uncertainty.high, in.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(in.uncertainty.level, 0.8);
  EXPECT_TRUE(absl::StartsWith(in.uncertainty.basis, "calibrated:")) << in.uncertainty.basis;
  Scenario amd = Fixed("nemo");
  amd.cluster.accelerator = "mi300x-192gb";
  const Prediction out = PredictFor(amd);
  EXPECT_TRUE(absl::StartsWith(out.uncertainty.basis, "extrapolated:")) << out.uncertainty.basis;
  EXPECT_GT(out.uncertainty.high / out.uncertainty.low, in.uncertainty.high / in.uncertainty.low);
}

// A request's band is the one held-out runs asked with as little gave (Fit: the same folds
// predicted at each level of StatedFacts). Stating less widens it: the generic stack's band is
// wider than the framework's at today's release, which is wider than every fact's. A profile
// without those levels (one fitted before them) keeps its one band for every request.
TEST(Uncertainty, ARequestStatingLessOfTheSoftwareGetsTheBandOfRunsAskedSo) {
  const Profile& profile = Profile::BuiltinDefault();
  for (StatedFacts facts : {StatedFacts::kVersion, StatedFacts::kFramework, StatedFacts::kNone}) {
    ASSERT_TRUE(profile.band.fewer_facts.contains(facts)) << StatedFactsName(facts);
  }
  Scenario all = Fixed("nemo");
  all.stack.version = "24.07";
  all.stack.tp_comm_overlap = true;
  Scenario version = all;
  version.stack.tp_comm_overlap.reset();
  Scenario framework = version;
  framework.stack.version.clear();
  Scenario none = framework;
  none.framework.clear();
  Scenario unknown = framework;
  unknown.framework = "metaseq";
  EXPECT_EQ(FactsStated(all), StatedFacts::kAll);
  EXPECT_EQ(FactsStated(version), StatedFacts::kVersion);
  EXPECT_EQ(FactsStated(framework), StatedFacts::kFramework);
  EXPECT_EQ(FactsStated(none), StatedFacts::kNone);
  EXPECT_EQ(FactsStated(unknown), StatedFacts::kNone);
  auto width = [](const Prediction& p) { return std::log(p.uncertainty.high / p.uncertainty.low); };
  const Prediction p_all = PredictFor(all), p_framework = PredictFor(framework),
                   p_none = PredictFor(none);
  EXPECT_GT(width(p_framework), width(p_all));
  EXPECT_GT(width(p_none), width(p_framework));
  EXPECT_TRUE(absl::StrContains(p_framework.uncertainty.basis, "no framework version stated"))
      << p_framework.uncertainty.basis;
  EXPECT_TRUE(absl::StrContains(p_none.uncertainty.basis, "the generic stack"))
      << p_none.uncertainty.basis;
  EXPECT_FALSE(absl::StrContains(p_all.uncertainty.basis, "stated")) << p_all.uncertainty.basis;
  // The levels are the profile's, read back from its text.
  absl::StatusOr<Profile> read = Profile::FromText(profile.ToText());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->band.fewer_facts.size(), 3u);
  EXPECT_DOUBLE_EQ(read->band.fewer_facts.at(StatedFacts::kNone).low,
                   profile.band.fewer_facts.at(StatedFacts::kNone).low);
  // Without the levels, every request has the one band.
  Profile one = profile;
  one.band.fewer_facts.clear();
  absl::StatusOr<Prediction> q = Predict(framework, Catalog::Builtin(), one);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_NEAR(width(*q), width(p_all), 1e-9);
}

}  // namespace

// Releases in the framework's own numbering: exact releases resolve silently; any other version
// resolves to the nearest release with a warning, never an error.
TEST(Releases, EveryVersionIsAnsweredInTheFrameworksOwnNumbering) {
  struct Case {
    const char* framework;
    const char* version;
    const char* release;
    bool exact;
  };
  for (const Case& c : std::vector<Case>{
           {"megatron", "0.8", "0.8", true},
           {"megatron", "core_r0.8.0", "0.8", true},  // the same numbers but for trailing zeros
           {"megatron", "0.12.3", "0.12", false},
           {"megatron", "v2.6", "2.6", true},
           {"megatron", "22.05", "22.05", true},
           {"nemo", "24.07", "24.07", true},
           {"nemo", "24.08", "24.07", false},  // a container month between releases
           {"nemo", "21.03", "22.03", false},  // older than every release: the oldest
           {"nemo", "2025.01", "24.12", false},
           {"deepspeed", "0.14.2", "0.14", false},
           {"fsdp", "2.4", "2.4", true},
           {"", "2.3.1", "2.3", false},
           {"torchtitan", "2024.12", "2024.12", true},
           {"composer-fsdp", "nightly", "2024.04", false},  // no numbering: the newest
           // As tags, images and wheels write them.
           {"nemo", "24.07-py3", "24.07", true},
           {"nemo", "nvcr.io/nvidia/nemo:24.09", "24.09", true},
           {"paxml", "JAX-Toolbox 24.04", "24.04", true},
           {"fsdp", "2.4.0+cu121", "2.4", true},
           {"megatron", "core_v0.13.0rc2", "0.13", true},
           {"maxtext", "2025-01-15", "25.01", false},
           // Own numbers compare within their series: Megatron-LM's 1.0-2.6 tags apart from
           // Megatron-Core's 0.x, Megatron-Bridge's 0.x apart from NeMo's 2.x.
           {"megatron", "1.0", "1.0", true},
           {"megatron", "1.1", "1.0", false},
           {"megatron", "3.0", "2.6", false},
           {"megatron", "0.3", "23.06", false},  // before Megatron-Core 0.4: the release before
           {"nemo", "0.2.1", "0.2", false},
           {"nemo", "2.6.0", "2.6", true},
           {"nemo", "2.3.0", "2.0", false},  // between NeMo 2.0 and 2.5: the one before
           // NeMo's own 1.x numbers (the toolkit in the 2022-2023 containers) take their era,
           // never a later container.
           {"nemo", "1.13", "1.13", true},
           {"nemo", "1.9.0", "1.7", false},
           {"nemo", "1.5", "22.03", false},  // before NeMo 1.7: the oldest container
           {"nemo", "1.18.0", "1.17", false},
           {"nemo", "1.23", "1.20", false},
           // Megatron-DeepSpeed by the DeepSpeed it runs on; DeepSpeed before 0.9 too.
           {"megatron-deepspeed", "0.7", "0.7", true},
           {"megatron-deepspeed", "0.6.5", "0.6", false},
           {"megatron-deepspeed", "0.16.1", "0.12", false},
           {"megatron-deepspeed", "2022.05", "2022.03", false},
           {"deepspeed", "0.7.3", "0.7", false},
           {"nemo", "25.10", "25.09", false},  // a date between containers takes the container
           // torchtitan, nanotron and OLMo-core by their release tags as well as by date.
           {"torchtitan", "0.1.0", "0.1", true},
           {"torchtitan", "v0.2.1", "0.2.1", true},
           {"torchtitan", "0.3", "0.2.2", false},
           {"torchtitan", "2025.07", "2025.06", false},  // a date still names the snapshot
           {"nanotron", "v0.5", "0.5", true},
           {"nanotron", "0.4.1", "0.4", false},
           {"olmo-core", "v1.6.1", "1.6", false},
           {"olmo-core", "2.0.0", "2.0", true},
           {"olmo-core", "2024.09", "1.3", false},       // a date among its tags
           {"olmo-core", "0.1.0", "1.0", false},         // 0.x before its 1.0: the oldest
           {"composer-fsdp", "0.17", "2024.04", false},  // a numbering the table lacks: the newest
       }) {
    const Framework* f = FindFramework(c.framework);
    ASSERT_NE(f, nullptr) << c.framework;
    StackOptions o;
    o.version = c.version;
    absl::StatusOr<Stack> s = ResolveStack(*f, o, Precision::kBf16);
    ASSERT_TRUE(s.ok()) << c.framework << " " << c.version << ": " << s.status();
    EXPECT_EQ(s->release, c.release) << c.framework << " " << c.version;
    EXPECT_EQ(s->version, c.release) << "the resolved stack echoes the release used";
    EXPECT_EQ(s->release_note.empty(), c.exact) << c.framework << " " << c.version;
    if (!c.exact) {
      EXPECT_TRUE(absl::StrContains(s->release_note, "scenario.stack.version")) << s->release_note;
    }
  }
}

TEST(Releases, FrameworksAnswerToTheNamesTheirUsersWrite) {
  for (const auto& [written, name] : std::vector<std::pair<const char*, const char*>>{
           {"Megatron-LM", "megatron"},
           {"megatron_core", "megatron"},
           {"Megatron-Bridge", "nemo"},
           {"NeMo", "nemo"},
           {"llm-foundry", "composer-fsdp"},
           {"MosaicML", "composer-fsdp"},
           {"torchtune", "fsdp"},
           {"Megatron_DeepSpeed", "megatron-deepspeed"},
           {"GPT-NeoX", "megatron-deepspeed"},
           {"ColossalAI", "colossal-ai"},
           {"Colossal AI", "colossal-ai"},
           {"PyTorch", ""},
           {"", ""}}) {
    const Framework* f = FindFramework(written);
    ASSERT_NE(f, nullptr) << written;
    EXPECT_EQ(f->name, name) << written;
  }
  EXPECT_EQ(FindFramework("tensorflow-mesh"), nullptr);
  EXPECT_EQ(FindFramework("megatron-"), nullptr);
}

// A known name with its version after it ("Megatron-LM v3.0", "NeMo 24.09") is that framework at
// that version (a version the request gives as well wins, with a note); anything else after a
// known name stays an unknown framework, answered as the generic one.
TEST(Releases, AFrameworkNameFollowedByItsVersionIsBoth) {
  struct Case {
    const char* written;
    const char* name;
    const char* release;
  };
  for (const Case& c : std::vector<Case>{{"Megatron-LM v3.0", "megatron", "2.6"},
                                         {"NeMo 24.09", "nemo", "24.09"},
                                         {"torchtitan 2024.12", "torchtitan", "2024.12"},
                                         {"DeepSpeed 0.14.2", "deepspeed", "0.14"}}) {
    std::string name = c.written;
    StackOptions o;
    const Framework* f = nullptr;
    absl::StatusOr<Stack> s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
    ASSERT_TRUE(s.ok()) << c.written << ": " << s.status();
    EXPECT_EQ(name, c.name) << c.written;
    EXPECT_EQ(s->release, c.release) << c.written;
    EXPECT_FALSE(absl::StrContains(s->release_note, "not in the framework table")) << c.written;
  }
  // A version the request gives as well wins, with a note.
  std::string name = "NeMo 24.09";
  StackOptions o;
  o.version = "24.12";
  const Framework* f = nullptr;
  absl::StatusOr<Stack> s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(name, "nemo");
  EXPECT_EQ(s->release, "24.12");
  EXPECT_EQ(s->release_note,
            "scenario.framework: 'NeMo 24.09' names version 24.09; scenario.stack.version "
            "'24.12' is used");
  // "ZeRO-3" is no version: the name's word "DeepSpeed" names the framework, at its newest.
  name = "DeepSpeed ZeRO-3";
  o = StackOptions();
  s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(name, "deepspeed");
  EXPECT_EQ(s->release, "0.17");
}

// A name the table does not know whole is read from the words that name a framework of it: the
// longest run of words first, then the leftmost, and the prediction says how it was read. Words
// that name plain PyTorch only, or no framework, leave the name unknown.
TEST(Releases, AFrameworkIsReadFromTheWordsThatNameIt) {
  struct Case {
    const char* written;
    const char* version;
    const char* name;     // "" = unknown: the generic framework, with its warning
    const char* release;  // "" = not checked
    bool by_words;        // the warning says the name was read from its words
  };
  for (const Case& c : std::vector<Case>{
           {"PyTorch FSDP2", "2.4", "fsdp", "2.4", true},
           {"torch-fsdp", "", "fsdp", "", true},
           {"torchtitan (FSDP2)", "", "torchtitan", "", true},
           {"NVIDIA NeMo", "24.09", "nemo", "24.09", true},
           {"Megatron + DeepSpeed", "", "megatron-deepspeed", "", true},
           {"Hugging Face nanotron 0.4", "", "nanotron", "0.4", true},
           {"MosaicML llm-foundry", "0.10", "composer-fsdp", "2024.04", true},  // own numbering
           {"JAX-Toolbox", "24.04", "maxtext", "24.04", false},
           {"JAX-Toolbox Pax", "23.08", "paxml", "23.08", true},
           {"nvcr.io/nvidia/nemo:24.07-py3", "", "nemo", "24.07", true},  // an image: its tag
           {"DeepSpeed-0.14.4", "", "deepspeed", "0.14", true},           // the version last
           {"megatron-lm@core_r0.8.0", "", "megatron", "0.8", false},     // a name, '@', a tag
           {"PyTorch Lightning", "", "", "", false},
           {"levanter", "", "", "", false},
           // NeMo AutoModel is a stack of its own (PyTorch FSDP2), not NeMo's Megatron-Bridge:
           // the longer run of words names it.
           {"NeMo AutoModel", "0.4", "automodel", "0.4", false},
           {"NVIDIA NeMo AutoModel", "", "automodel", "", true},
           {"nemo-automodel", "0.5", "automodel", "0.5", false},
       }) {
    std::string name = c.written;
    StackOptions o;
    o.version = c.version;
    const Framework* f = nullptr;
    absl::StatusOr<Stack> s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
    ASSERT_TRUE(s.ok()) << c.written << ": " << s.status();
    EXPECT_EQ(absl::StrContains(s->release_note, "' is read as "), c.by_words) << s->release_note;
    if (*c.name == '\0') {
      EXPECT_EQ(f, &GenericFramework()) << c.written;
      EXPECT_EQ(name, c.written) << "an unknown name is kept as written";
      EXPECT_TRUE(absl::StrContains(s->release_note, "not in the framework table")) << c.written;
      continue;
    }
    EXPECT_EQ(name, c.name) << c.written;
    if (*c.release != '\0') {
      EXPECT_EQ(s->release, c.release) << c.written;
    }
    EXPECT_FALSE(absl::StrContains(s->release_note, "not in the framework table")) << c.written;
  }
  std::string name = "PyTorch FSDP2";
  StackOptions o;
  const Framework* f = nullptr;
  absl::StatusOr<Stack> s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->release_note,
            "scenario.framework: 'PyTorch FSDP2' is read as fsdp, which its words 'fsdp2' name");
  // An umbrella name alone is priced as one of its frameworks, and says so.
  name = "JAX-Toolbox";
  s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(name, "maxtext");
  EXPECT_EQ(s->release_note,
            "scenario.framework: 'JAX-Toolbox' covers several frameworks of the table; priced as "
            "maxtext (name the one that runs to be sure)");
}

// NeMo AutoModel runs Hugging Face models on PyTorch FSDP2 with Transformer Engine layers and
// DeepEP (its examples/llm_benchmark configs), not through Megatron-Core: none of
// Megatron-Bridge's recipes, userbuffers or all-to-all overlap.
TEST(Releases, AutoModelIsAPytorchStackOfItsOwn) {
  const Framework* f = FindFramework("automodel");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(FindFramework("nemo-automodel"), f);
  EXPECT_EQ(f->behaviour.default_sharding, Sharding::kFsdp);
  StackOptions o;
  o.version = "0.4";
  absl::StatusOr<Stack> s = ResolveStack(*f, o, Precision::kBf16);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->release, "0.4");
  EXPECT_TRUE(s->fused_kernels);
  EXPECT_EQ(s->attention, AttentionKernel::kCudnn);
  EXPECT_TRUE(s->fused_dispatch);
  EXPECT_FALSE(s->ep_comm_overlap);
  EXPECT_FALSE(s->tp_comm_overlap);
  EXPECT_FALSE(s->cuda_graphs);
  EXPECT_TRUE(s->recipe_tag.empty());
  // A version before its first tag is its first release, with a warning.
  o.version = "0.0.9";
  s = ResolveStack(*f, o, Precision::kBf16);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->release, "0.1");
  EXPECT_FALSE(s->release_note.empty());
  // No run of it is fitted: its band is an extrapolation's, wider than torchtitan's, whose
  // PyTorch-FSDP family is calibrated on Hopper.
  auto band = [](const char* framework) {
    Scenario sc = testing::StudyScenario("llama3-8b", "h100-sxm-80gb", 8);
    sc.framework = framework;
    absl::StatusOr<Prediction> p = Predict(sc, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->uncertainty : Uncertainty{};
  };
  const Uncertainty automodel = band("automodel"), torchtitan = band("torchtitan");
  EXPECT_TRUE(absl::StrContains(automodel.basis, "automodel stacks never measured on hopper"))
      << automodel.basis;
  EXPECT_TRUE(absl::StartsWith(torchtitan.basis, "calibrated")) << torchtitan.basis;
  EXPECT_GT(automodel.high / automodel.low, torchtitan.high / torchtitan.low);
}

// Composer and llm-foundry are one framework of the table whose 0.x numbers collide: a number is
// read in the numbering of the name written, as the date of that project's tag.
TEST(Releases, ComposerAndLlmFoundryNumbersAreReadAsTheNameWritten) {
  struct Case {
    const char* written;
    const char* version;
    const char* release;
    const char* note;  // "" = none
  };
  for (const Case& c : std::vector<Case>{
           {"llm-foundry", "0.10", "2024.04", "llm-foundry 0.10 is its release 0.10 of 2024-07"},
           {"llm-foundry", "v0.3.0", "2023.05", "is its release 0.3 of 2023-09"},
           {"LLM Foundry 0.3", "", "2023.05", "is its release 0.3 of 2023-09"},
           {"composer", "0.12.1", "2022.12", "composer 0.12.1 is its release 0.12 of 2022-12"},
           {"Composer", "v0.17.2", "2023.10", "is its release 0.17 of 2023-11"},
           {"llm-foundry", "0.0.9", "2023.05", "is older than its first release, 0.1 of 2023-05"},
           {"llm-foundry", "2024.06", "2024.04", ""},  // a date is a date in every numbering
           {"composer-fsdp", "0.17", "2024.04", ""},   // the table's name has no own numbers
       }) {
    std::string name = c.written;
    StackOptions o;
    o.version = c.version;
    const Framework* f = nullptr;
    absl::StatusOr<Stack> s = ResolvePricedStack(&name, &o, Precision::kBf16, "scenario", &f);
    ASSERT_TRUE(s.ok()) << c.written << " " << c.version << ": " << s.status();
    EXPECT_EQ(name, "composer-fsdp");
    EXPECT_EQ(s->release, c.release) << c.written << " " << c.version;
    if (*c.note != '\0') {
      EXPECT_TRUE(absl::StrContains(s->release_note, c.note)) << s->release_note;
    } else {
      EXPECT_FALSE(absl::StrContains(s->release_note, "is its release")) << s->release_note;
    }
  }
}

TEST(Releases, DatedVersionsAreTheNumberingEveryFrameworkShares) {
  for (const char* dated : {"24.09", "2025.01", "2024-06-15", "nvcr.io/nvidia/nemo:24.07-py3",
                            "JAX-Toolbox 24.04", "v2024.12"}) {
    EXPECT_TRUE(IsDatedVersion(dated)) << dated;
  }
  for (const char* own : {"0.8", "2.4", "v0.14.4", "core_v0.13.0rc2", "1.0", "nightly", ""}) {
    EXPECT_FALSE(IsDatedVersion(own)) << own;
    EXPECT_EQ(DatedVersionYear(own), 0) << own;
  }
  // The date each names, mid-month: a container, a snapshot and an image's day of one month
  // agree, and order the way they were released.
  const double september = DatedVersionYear("24.09");
  EXPECT_NEAR(september, 2024 + 8.5 / 12, 1e-12);
  EXPECT_EQ(DatedVersionYear("2024.09"), september);
  EXPECT_EQ(DatedVersionYear("2024-09-15"), september);
  EXPECT_EQ(DatedVersionYear("nvcr.io/nvidia/nemo:24.09-py3"), september);
  EXPECT_LT(DatedVersionYear("2023-06-23"), DatedVersionYear("23.08"));
}

TEST(Releases, EachReleaseHasADateAndASourceInOrder) {
  for (const Framework& f : Frameworks()) {
    ASSERT_FALSE(f.versions.empty()) << f.name;
    for (size_t i = 0; i < f.versions.size(); ++i) {
      const FrameworkVersion& v = f.versions[i];
      EXPECT_GE(v.date, 2020.0) << f.name << " " << v.version;
      EXPECT_LE(v.date, NewestSoftwareDate()) << f.name << " " << v.version;
      EXPECT_FALSE(v.source.empty()) << f.name << " " << v.version;
      EXPECT_EQ(v.defaults.software_date, v.date);
      if (i > 0) {
        EXPECT_GE(v.date, f.versions[i - 1].date) << f.name << " " << v.version;
      }
    }
  }
}

// An older release of the same stack on the same GPU is slower (its libraries were younger),
// and by less the older the hardware already was when the release shipped.
TEST(Releases, OlderReleasesOfTheSameStackAreSlowerByTheMaturityCurve) {
  Scenario s = Fixed("megatron");
  s.stack.version = "0.8";  // Megatron-Core, H100 22 months after its launch
  Scenario older = s;
  older.stack.version = "0.4";  // 14 months after
  Scenario today = s;
  today.stack.version = "";
  const double mid = PredictFor(s).tokens_per_s_per_gpu;
  const double early = PredictFor(older).tokens_per_s_per_gpu;
  const double now = PredictFor(today).tokens_per_s_per_gpu;
  EXPECT_LT(early, mid);
  EXPECT_LT(mid, now);
  // The curve itself: 1 - deficit exp(-t/years), rising to 1 and 1 at today's date when mature.
  const Profile& p = Profile::BuiltinDefault();
  const double launch = GenerationLaunch("hopper");
  double last = 0;
  for (double t : {0.0, 0.5, 1.0, 2.0, 4.0}) {
    const double f = p.maturity.Factor("hopper", launch + t);
    EXPECT_NEAR(f, 1 - p.maturity.DeficitOf("hopper") * std::exp(-t / p.maturity.years), 1e-12);
    EXPECT_GT(f, last);
    last = f;
  }
  EXPECT_EQ(p.maturity.Factor("unknown-generation", 2020.0), 1.0);
}

// The Triton and FA1 kernels of 2022-2023 run slower than FA2 on Ampere by the FlashAttention-2
// paper's ratios.
TEST(Releases, EarlyAttentionKernelsRunAtTheirMeasuredShareOfFa2) {
  EXPECT_NEAR(AttentionKernelFactor(AttentionKernel::kTriton, "ampere"), 1 / kFa2OverTriton, 1e-12);
  EXPECT_NEAR(AttentionKernelFactor(AttentionKernel::kFa1, "ampere"), 1 / kFa2OverFa1, 1e-12);
  AttentionKernel k;
  ASSERT_TRUE(ParseAttentionKernel("triton", &k));
  EXPECT_EQ(k, AttentionKernel::kTriton);
  ASSERT_TRUE(ParseAttentionKernel("fa1", &k));
  EXPECT_EQ(k, AttentionKernel::kFa1);
}

// The kernels answer to the names users write for them: Hugging Face Transformers'
// attn_implementation, the flash-attn package's, Transformer Engine's; anything else is refused
// with every name listed.
TEST(Releases, AttentionKernelsAnswerToTheNamesTheirUsersWrite) {
  using K = AttentionKernel;
  for (const auto& [written, kernel] :
       std::vector<std::pair<const char*, K>>{{"eager", K::kMath},
                                              {"flash_attention_2", K::kFa2},
                                              {"Flash Attention 3", K::kFa3},
                                              {"flash_attn", K::kFa2},
                                              {"SDPA", K::kFa2},
                                              {"TE", K::kCudnn},
                                              {"transformer_engine", K::kCudnn},
                                              {" cudnn ", K::kCudnn},
                                              {"", K::kDefault}}) {
    K k = K::kTriton;
    ASSERT_TRUE(ParseAttentionKernel(written, &k)) << written;
    EXPECT_EQ(k, kernel) << written;
  }
  K k;
  EXPECT_FALSE(ParseAttentionKernel("xformers", &k));
  StackOptions o;
  o.attention_kernel = "xformers";
  absl::StatusOr<Stack> s = ResolveStack(GenericFramework(), o, Precision::kBf16);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(),
                                "scenario.stack.attention_kernel: unknown "
                                "kernel 'xformers' (known: math, fa1"))
      << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "flash_attention_2")) << s.status();
}

// Every recipe name the error lists parses, aliases included, and an unknown one is refused with
// that list (one table: the request's error and the CSV reader's both say it).
TEST(Releases, Fp8RecipesAnswerToEveryNameTheErrorLists) {
  const std::string names(Fp8RecipeNames());
  for (absl::string_view name : absl::StrSplit(names, absl::ByAnyChar(", :"), absl::SkipEmpty())) {
    if (name == "or" || name == "as" || name == "written" || name == "elsewhere") continue;
    Fp8Recipe r = Fp8Recipe::kNone;
    EXPECT_TRUE(ParseFp8Recipe(name, &r)) << name;
    EXPECT_NE(r, Fp8Recipe::kNone) << name;
  }
  Fp8Recipe r;
  ASSERT_TRUE(ParseFp8Recipe("CS", &r));
  EXPECT_EQ(r, Fp8Recipe::kTensorwise);
  StackOptions o;
  o.fp8_recipe = "hybrid";
  absl::StatusOr<Stack> s = ResolveStack(GenericFramework(), o, Precision::kFp8);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), absl::StrCat("scenario.stack.fp8_recipe: unknown recipe "
                                               "'hybrid' (known: ",
                                               names, ")"));
  EXPECT_TRUE(absl::StrContains(names, "delayed, tensorwise")) << names;
  EXPECT_TRUE(absl::StrContains(names, "current, cs")) << names;
}

// The limits of the possible: no measured run, shared or added, is predicted with a band wholly
// above the best MFU published on its generation and precision.
TEST(Records, NoRunIsPredictedAboveItsRecordByMoreThanItsBand) {
  std::vector<std::string> files = {"calibration.csv", "calibration-stacks.csv", "moe.csv"};
  for (const std::string& f : testing::EraRunFiles()) files.push_back(f);
  const std::vector<Measurement> runs = testing::LoadRuns(files);
  const ValidationReport r = Validate(runs, Catalog::Builtin(), Profile::BuiltinDefault());
  int checked = 0;
  for (const ValidationRow& row : r.rows) {
    if (!row.failure.empty()) continue;
    Scenario s = row.measurement->scenario;
    s.parallelism = row.layout;
    absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
    ASSERT_TRUE(p.ok()) << p.status();
    for (const std::string& w : p->warnings) {
      EXPECT_FALSE(absl::StrContains(w, "above the best published"))
          << row.measurement->source << " " << s.workload.model.name << ": " << w;
    }
    ++checked;
  }
  EXPECT_GT(checked, 700);
  // Every generation the data covers has its 16-bit record, with a source.
  for (const char* g : {"ampere", "hopper", "blackwell"}) {
    const MfuRecord* rec = FindMfuRecord(g, Precision::kBf16);
    ASSERT_NE(rec, nullptr) << g;
    EXPECT_FALSE(rec->source.empty());
  }
}

// The record table is current: every generation and precision the measured runs cover has a
// record, and no run, shared or added, beats it (MLPerf v4.1's 256-GPU GPT-3 run at 95.5 % once
// did, against a table that still held NeMo 25.02's 92.9 %).
TEST(Records, NoMeasuredRunBeatsItsRecord) {
  std::vector<std::string> files = {"calibration.csv", "calibration-stacks.csv", "moe.csv"};
  for (const std::string& f : testing::EraRunFiles()) files.push_back(f);
  int checked = 0;
  for (const Measurement& m : testing::LoadRuns(files)) {
    const Accelerator* a = Catalog::Builtin().FindAccelerator(m.scenario.cluster.accelerator);
    ASSERT_NE(a, nullptr) << m.scenario.cluster.accelerator;
    const MfuRecord* rec = FindMfuRecord(GenerationOf(a->family), m.scenario.workload.precision);
    ASSERT_NE(rec, nullptr) << "no record for " << GenerationOf(a->family) << " "
                            << ToString(m.scenario.workload.precision) << ", which " << m.source
                            << " measured";
    const absl::StatusOr<double> mfu = MeasuredMfu(m, Catalog::Builtin());
    ASSERT_TRUE(mfu.ok()) << mfu.status();
    EXPECT_LE(*mfu, rec->mfu + 5e-4)
        << m.source << " " << m.scenario.workload.model.name << " on "
        << m.scenario.cluster.num_gpus << " " << a->family << ": beats " << rec->what;
    ++checked;
  }
  EXPECT_GT(checked, 700);
}

// A scenario priced above every published run on its hardware says so: dense Llama-2 7B in bf16
// on 8 GB300 is predicted well above the one bf16 Blackwell record (a 314B MoE at 46.7 %).
TEST(Records, APredictionAboveTheRecordIsFlagged) {
  Scenario s = Fixed("megatron");
  s.workload.model.name = "llama2-7b";
  s.workload.seq_len = 4096;
  s.cluster.accelerator = "gb300-nvl72";
  s.cluster.num_gpus = 8;
  s.parallelism = testing::DataParallelLayout(Sharding::kZero1, 1, Recompute::kNone);
  s.stack.version = "0.19";  // a stated release: its band is narrow enough to sit above
  absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  const MfuRecord* rec = FindMfuRecord("blackwell", Precision::kBf16);
  ASSERT_NE(rec, nullptr);
  ASSERT_GT(p->mfu * p->uncertainty.low / p->tokens_per_s_per_gpu, rec->mfu) << p->mfu;
  bool flagged = false;
  for (const std::string& w : p->warnings) flagged |= absl::StrContains(w, "best published");
  EXPECT_TRUE(flagged);
}

// Megatron-Core's block method: full recompute on half of each stage's layers costs half the
// recompute time of all of them and keeps the other half's activations.
TEST(PartialRecompute, SitsBetweenNoneAndFullInTimeAndMemory) {
  Scenario s = Fixed("megatron");  // llama3-70b, 80 layers, pp 2: 40 a stage
  s.parallelism.recompute = Recompute::kNone;
  const Prediction none = PredictFor(s);
  s.parallelism.recompute = Recompute::kFull;
  const Prediction full = PredictFor(s);
  s.parallelism.recompute_layers = 20;
  const Prediction half = PredictFor(s);
  EXPECT_EQ(half.layout.recompute, Recompute::kFull);
  EXPECT_EQ(half.layout.recompute_layers, 20);
  EXPECT_GT(full.time.recompute_s, 0);
  EXPECT_NEAR(half.time.recompute_s, 0.5 * full.time.recompute_s, 0.01 * full.time.recompute_s);
  EXPECT_LT(none.step_time_s, half.step_time_s);
  EXPECT_LT(half.step_time_s, full.step_time_s);
  EXPECT_LT(full.memory.activations_bytes, half.memory.activations_bytes);
  EXPECT_LT(half.memory.activations_bytes, none.memory.activations_bytes);
  // Every layer of the stage is full recompute on every layer.
  s.parallelism.recompute_layers = 40;
  EXPECT_NEAR(PredictFor(s).step_time_s, full.step_time_s, 1e-9 * full.step_time_s);
}

TEST(PartialRecompute, NeedsAFrameworkThatOffersItFullRecomputeAndEnoughLayers) {
  Scenario s = Fixed("megatron");
  s.parallelism.recompute = Recompute::kUnspecified;
  s.parallelism.recompute_layers = 10;
  absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout.recompute, Recompute::kFull);  // implied
  s.parallelism.recompute = Recompute::kSelective;
  p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "parallelism.recompute_layers"))
      << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), "needs recompute full")) << p.status();
  s.parallelism.recompute = Recompute::kFull;
  s.parallelism.recompute_layers = 41;
  p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "more than the 40 layers")) << p.status();
  Scenario t = Fixed("torchtitan");
  t.parallelism.sharding = Sharding::kFsdp;
  t.parallelism.recompute = Recompute::kFull;
  t.parallelism.recompute_layers = 10;
  p = Predict(t, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "recomputes every layer or none"))
      << p.status();
}

// Left to the planner, recompute is the least that fits: where no recompute does not fit and
// full recompute on every layer does, a share of each stage's layers is cheaper and fits.
TEST(PartialRecompute, ThePlannerRecomputesOnlyTheLayersItMust) {
  Scenario s = Fixed("megatron");
  s.cluster.accelerator = "h100-sxm-96gb-500w";
  s.parallelism.recompute = Recompute::kNone;
  ASSERT_FALSE(PredictFor(s).memory.fits);
  s.parallelism.recompute = Recompute::kFull;
  const Prediction full = PredictFor(s);
  ASSERT_TRUE(full.memory.fits);
  s.parallelism.recompute = Recompute::kUnspecified;
  PlanOptions options;
  options.hbm_headroom = 0;
  absl::StatusOr<Scenario> resolved = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  absl::StatusOr<PlanResult> plan =
      Plan(*resolved, Catalog::Builtin(), Profile::BuiltinDefault(), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_FALSE(plan->top.empty());
  const Prediction& best = plan->top.front();
  EXPECT_TRUE(best.memory.fits);
  EXPECT_LT(best.step_time_s, full.step_time_s);
  EXPECT_EQ(best.layout.recompute, Recompute::kFull);
  EXPECT_GT(best.layout.recompute_layers, 0);
  EXPECT_LT(best.layout.recompute_layers, 40);
  // A framework without the block method plans none, selective or full only.
  EXPECT_EQ(RecomputeLayerCandidates(MakeLayoutContext(*resolved, 8), 2),
            (std::vector<int>{10, 20, 30}));
  Scenario titan = *resolved;
  titan.framework = "torchtitan";
  EXPECT_TRUE(RecomputeLayerCandidates(MakeLayoutContext(titan, 8), 2).empty());
  // The planner's search offers the steps as full recompute's ladder: none, selective and full,
  // of which full is evaluated as the lightest step that fits. The plan job's search lists them.
  auto partials = [&](PartialSteps steps) {
    int n = 0;
    for (const Parallelism& l :
         EnumerateLayouts(*resolved, nullptr, Catalog::Builtin(), nullptr, steps)) {
      n += l.recompute_layers > 0;
    }
    return n;
  };
  EXPECT_EQ(partials(PartialSteps::kLadder), 0);
  EXPECT_EQ(partials(PartialSteps::kEach), 3);
  EXPECT_EQ(plan->evaluated_count, 3);
  // The ladder's rung is the lightest step that fits: one layer fewer does not.
  Scenario lighter = *resolved;
  lighter.parallelism = best.layout;
  lighter.parallelism.recompute_layers = best.layout.recompute_layers - 10;
  if (lighter.parallelism.recompute_layers == 0) lighter.parallelism.recompute = Recompute::kNone;
  EXPECT_FALSE(PredictFor(lighter).memory.fits);
}

bool Contains(const std::string& text, const std::string& part) {
  return absl::StrContains(text, part);
}

// Megatron-Bridge's GB200 Llama 3 70B fp8 recipe: Megatron FSDP on 64 GPUs, micro-batch 2, 40 of
// the 80 layers' activations in Grace memory (cpu_offloading_num_layers=40) and no recompute.
Scenario OffloadRecipe(const std::string& accelerator) {
  Scenario s = Fixed("megatron");
  s.workload.precision = Precision::kFp8;
  s.workload.global_batch = 256;
  s.cluster.accelerator = accelerator;
  s.parallelism = testing::DataParallelLayout(Sharding::kFsdp, 2, Recompute::kNone);
  s.parallelism.cpu_offload_layers = 40;
  return s;
}

// Offloaded layers keep their activations in host memory: the GPU holds the other layers' and
// one offloaded layer's in flight, so a layout that does not fit without recompute fits, and
// faster than recomputing as many layers. The copies hide behind the next layer's work where
// the host link is fast (NVLink-C2C on GB200) and stall it where it is not (PCIe on B200, the
// same GPU): the exposed part is the copy less the layer it hides behind, never more than all.
TEST(CpuOffload, HoldsFewerActivationsAndPaysTheCopiesItCannotHide) {
  const Scenario gb200 = OffloadRecipe("gb200-nvl72");
  Scenario kept = gb200;
  kept.parallelism.cpu_offload_layers = 0;
  const Prediction off = PredictFor(gb200), none = PredictFor(kept);
  EXPECT_FALSE(none.memory.fits);
  EXPECT_TRUE(off.memory.fits);
  // 80 layers' activations against 40 + 1.
  EXPECT_NEAR(static_cast<double>(off.memory.activations_bytes),
              41.0 / 80.0 * none.memory.activations_bytes, 0.02 * none.memory.activations_bytes);
  Scenario recompute = kept;
  recompute.parallelism.recompute = Recompute::kFull;
  recompute.parallelism.recompute_layers = 40;
  EXPECT_LT(off.step_time_s, PredictFor(recompute).step_time_s);
  const CommTime c2c = Comm(off).at("host_offload");
  const CommTime pcie = Comm(PredictFor(OffloadRecipe("b200-sxm-180gb"))).at("host_offload");
  EXPECT_EQ(c2c.bytes_per_gpu, pcie.bytes_per_gpu);
  EXPECT_GT(c2c.total_s, 0);
  EXPECT_LT(c2c.exposed_s, 0.25 * c2c.total_s);
  EXPECT_GT(pcie.exposed_s, 0.5 * pcie.total_s);
  EXPECT_LE(pcie.exposed_s, pcie.total_s);
  EXPECT_NEAR(off.step_time_s - none.step_time_s, c2c.exposed_s, 1e-6 * off.step_time_s);
  // The offloaded 40 layers' activations in the Grace's memory, 240 GB a GPU (223.5 GiB).
  EXPECT_NEAR(static_cast<double>(off.memory.host_bytes),
              40.0 / 80.0 * none.memory.activations_bytes, 0.01 * none.memory.activations_bytes);
  EXPECT_EQ(off.memory.host_capacity_bytes, static_cast<int64_t>(223.5 * (1LL << 30)));
  EXPECT_EQ(none.memory.host_bytes, 0);
  // Twice the micro-batch and 60 layers out: HBM holds the rest, the host cannot hold those.
  Scenario more = gb200;
  more.parallelism.micro_batch = 4;
  more.parallelism.cpu_offload_layers = 60;
  const Prediction over = PredictFor(more);
  EXPECT_LE(over.memory.total_bytes, over.memory.capacity_bytes);
  EXPECT_GT(over.memory.host_bytes, over.memory.host_capacity_bytes);
  EXPECT_FALSE(over.memory.fits);
}

// Plain PyTorch offloads with torch.autograd.graph.save_on_cpu, whose copies run on the compute
// stream: the same bytes as Transformer Engine's offload context, none of them hidden, even over
// NVLink-C2C where Megatron-Core hides most.
TEST(CpuOffload, PlainPytorchCopiesOnTheComputeStream) {
  Scenario generic = OffloadRecipe("gb200-nvl72");
  generic.framework = "";
  generic.parallelism.sharding = Sharding::kFsdp;
  absl::StatusOr<Prediction> plain =
      Predict(generic, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->layout.cpu_offload_layers, 40);
  const CommTime serial = Comm(*plain).at("host_offload");
  const CommTime side = Comm(PredictFor(OffloadRecipe("gb200-nvl72"))).at("host_offload");
  EXPECT_EQ(serial.bytes_per_gpu, side.bytes_per_gpu);
  EXPECT_GT(serial.total_s, 0);
  EXPECT_DOUBLE_EQ(serial.exposed_s, serial.total_s);
  EXPECT_LT(side.exposed_s, 0.25 * side.total_s);
}

// Megatron-Core's TransformerConfig refuses CPU offloading with pipelining, with recompute and
// for every layer; frameworks without an offload context (torchtitan) cannot offload at all. A
// request that leaves recompute to the planner gets none, and a planner search keeps pp at 1.
TEST(CpuOffload, NeedsMegatronCoreOneStageNoRecomputeAndFewerLayers) {
  auto error = [](const Scenario& s) {
    absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
    return p.ok() ? std::string("ok") : std::string(p.status().message());
  };
  Scenario s = OffloadRecipe("gb200-nvl72");
  s.parallelism.recompute = Recompute::kUnspecified;
  absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout.recompute, Recompute::kNone);
  EXPECT_EQ(p->layout.cpu_offload_layers, 40);
  Scenario piped = s;
  piped.parallelism.pp = 2;
  piped.parallelism.sharding = Sharding::kZero1;
  EXPECT_PRED2(Contains, error(piped),
               std::string("scenario.parallelism.cpu_offload_layers: needs "
                           "pp=1 (no CPU offloading with pipelining), not "
                           "pp=2"));
  Scenario redo = s;
  redo.parallelism.recompute = Recompute::kSelective;
  EXPECT_PRED2(Contains, error(redo), std::string("cpu_offload_layers: needs recompute none"));
  Scenario all = s;
  all.parallelism.cpu_offload_layers = 80;
  EXPECT_PRED2(Contains, error(all), std::string("80 is not fewer than the model's 80 layers"));
  Scenario titan = s;
  titan.framework = "torchtitan";
  EXPECT_PRED2(Contains, error(titan), std::string("does not offload activations to host memory"));
  Scenario open = s;
  open.parallelism = Parallelism{};
  open.parallelism.cpu_offload_layers = 20;
  absl::StatusOr<Scenario> resolved = ResolveScenario(open, Catalog::Builtin());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const LayoutSpace layouts =
      EnumerateLayouts(*resolved, nullptr, Catalog::Builtin(), nullptr, PartialSteps::kEach);
  ASSERT_FALSE(layouts.empty());
  for (const Parallelism& l : layouts) {
    EXPECT_EQ(l.pp, 1);
    EXPECT_EQ(l.recompute, Recompute::kNone);
    EXPECT_EQ(l.cpu_offload_layers, 20);
  }
}

// Left to the planner on a framework and accelerator that can offload, with pp 1, offloading is
// searched beside recompute: a quarter, half or three quarters of the layers, of which the
// lightest that fits stands for the ladder. On GB200's NVLink-C2C the recipe's layout offloads
// (half of Llama 3 70B's layers: a quarter does not fit) rather than recompute; where nothing
// need leave the GPU, nothing does.
TEST(CpuOffload, ThePlannerOffloadsTheLightestStepThatFits) {
  Scenario s = OffloadRecipe("gb200-nvl72");
  s.parallelism.recompute = Recompute::kUnspecified;
  s.parallelism.cpu_offload_layers = 0;
  absl::StatusOr<Scenario> resolved = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  PlanOptions options;
  options.hbm_headroom = 0;
  absl::StatusOr<PlanResult> plan =
      Plan(*resolved, Catalog::Builtin(), Profile::BuiltinDefault(), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_FALSE(plan->top.empty());
  const Prediction& best = plan->top.front();
  EXPECT_EQ(best.layout.recompute, Recompute::kNone);
  EXPECT_EQ(best.layout.cpu_offload_layers, 40);
  Scenario quarter = *resolved;
  quarter.parallelism = best.layout;
  quarter.parallelism.cpu_offload_layers = 20;
  EXPECT_FALSE(PredictFor(quarter).memory.fits);
  auto offloads = [&](const Scenario& from, PartialSteps steps) {
    int n = 0;
    for (const Parallelism& l :
         EnumerateLayouts(from, nullptr, Catalog::Builtin(), nullptr, steps)) {
      n += l.cpu_offload_layers > 0;
    }
    return n;
  };
  EXPECT_EQ(offloads(*resolved, PartialSteps::kLadder), 1);
  EXPECT_EQ(offloads(*resolved, PartialSteps::kEach), 3);
  Scenario piped = *resolved;
  piped.parallelism.pp = 2;
  piped.parallelism.sharding = Sharding::kZero1;
  EXPECT_EQ(offloads(piped, PartialSteps::kEach), 0);
  Scenario small = s;
  small.workload.model.name = "llama3-8b";
  absl::StatusOr<Scenario> small_resolved = ResolveScenario(small, Catalog::Builtin());
  ASSERT_TRUE(small_resolved.ok()) << small_resolved.status();
  plan = Plan(*small_resolved, Catalog::Builtin(), Profile::BuiltinDefault(), options);
  ASSERT_TRUE(plan.ok() && !plan->top.empty()) << plan.status();
  EXPECT_EQ(plan->top.front().layout.cpu_offload_layers, 0);
  EXPECT_EQ(plan->top.front().layout.recompute, Recompute::kNone);
}

TEST(PartialRecompute, TheLadderSkipsWhereNoRecomputeFits) {
  Scenario s = Fixed("megatron");
  s.cluster.accelerator = "b200-sxm-180gb";
  s.parallelism.recompute = Recompute::kNone;
  ASSERT_TRUE(PredictFor(s).memory.fits);
  s.parallelism.recompute = Recompute::kUnspecified;
  absl::StatusOr<Scenario> resolved = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const StepModel model(*resolved, Catalog::Builtin(), Profile::BuiltinDefault());
  Parallelism full = resolved->parallelism;
  full.recompute = Recompute::kFull;
  ASSERT_TRUE(IsRecomputeLadder(model, full));
  MemoryBreakdown mem;
  EXPECT_FALSE(ClimbRecomputeLadder(model, 0, &full, &mem));
  // A request that fixes full recompute is not a ladder.
  Scenario fixed = *resolved;
  fixed.parallelism.recompute = Recompute::kFull;
  const StepModel fixed_model(fixed, Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_FALSE(IsRecomputeLadder(fixed_model, fixed.parallelism));
}

// Whether a prediction says its attention runs unfused (UnfusedAttentionOf).
bool WarnsUnfusedAttention(const Prediction& pred) {
  for (const std::string& w : pred.warnings) {
    if (absl::StrContains(w, "attention runs unfused")) return true;
  }
  return false;
}

TEST(Releases, BlackwellRunsMlaAttentionUnfusedBeforeCudnn911) {
  // DeepSeek-V3's latent attention (q.k 192, v 128 wide) on GB200: NeMo 25.04 predates cuDNN
  // 9.11's Blackwell kernel for those widths, so its attention runs unfused; 25.09 has it.
  Scenario s = DeepSeekV3("gb200-nvl72", 128, "nemo", 2, 4, 32, Recompute::kSelective);
  s.workload.global_batch = 1024;
  s.stack.version = "25.04";
  const Prediction old = PredictFor(s);
  s.stack.version = "25.09";
  const Prediction later = PredictFor(s);
  EXPECT_TRUE(WarnsUnfusedAttention(old));
  EXPECT_FALSE(WarnsUnfusedAttention(later));
  EXPECT_GT(old.time.compute_s, later.time.compute_s);
  // On Hopper the fused kernel has trained these widths since cuDNN 9.5: no fallback.
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 512;
  s.stack.version = "25.04";
  EXPECT_FALSE(WarnsUnfusedAttention(PredictFor(s)));
}

TEST(Releases, FlashAttention1RunsHeadsWiderThan128Unfused) {
  // FlashAttention 1 takes head widths up to 128 (kFa1MaxHeadDim); Pythia-1B's 256-wide heads
  // (2048 hidden, 8 heads) under a stack that asks for it run the framework's unfused attention.
  // FlashAttention 2 takes them, and FA1 takes 128-wide heads.
  Scenario s = Fixed("megatron");
  s.workload.model.name = "llama3-8b";
  s.workload.seq_len = 4096;
  s.cluster.accelerator = "a100-sxm-80gb";
  s.stack.attention_kernel = "fa1";
  const Prediction narrow = PredictFor(s);
  s.workload.model.heads = 16;  // 4096 / 16 = 256 wide
  s.workload.model.kv_heads = 8;
  const Prediction wide_fa1 = PredictFor(s);
  s.stack.attention_kernel = "fa2";
  const Prediction wide_fa2 = PredictFor(s);
  EXPECT_FALSE(WarnsUnfusedAttention(narrow));
  EXPECT_TRUE(WarnsUnfusedAttention(wide_fa1));
  EXPECT_FALSE(WarnsUnfusedAttention(wide_fa2));
  EXPECT_GT(wide_fa1.time.compute_s, wide_fa2.time.compute_s);
}

TEST(Releases, AContainerBetweenTwoReleasesRunsTheLibrariesOfItsOwnDate) {
  // NeMo's containers are YY.MM; a container date between two of them takes the features of the
  // one before and the libraries of its own date.
  Scenario s = Fixed("nemo");
  s.stack.version = "25.02";
  const Prediction release = PredictFor(s);
  s.stack.version = "25.03";
  const Prediction container = PredictFor(s);
  EXPECT_GT(container.tokens_per_s, release.tokens_per_s);
  EXPECT_EQ(container.stack.release, "25.02");
  EXPECT_GT(container.stack.software_date, release.stack.software_date);
}

// A release offers what it had when it shipped: Megatron-LM had no sequence parallelism before
// 2022-05 and no distributed optimizer before 2022-06, no context or expert parallelism before
// Megatron-Core 0.4, no Megatron-FSDP before 0.12 (its tags' code, model/framework.cc). Asked for a
// 2021 Megatron-LM, the planner picks plain data parallelism and refuses a sharding of a later
// year, naming the release's month; the same request of today's release may take any of them.
TEST(Releases, AReleaseOffersOnlyTheCapabilitiesItShippedWith) {
  const Framework& megatron = *FindFramework("megatron");
  const FrameworkCapabilities& y2021 = CapabilitiesAt(megatron, 2021.25);
  const std::vector<Sharding> ddp = {Sharding::kDdp};
  EXPECT_EQ(y2021.shardings, ddp);
  EXPECT_EQ(y2021.pipeline_shardings, ddp);
  EXPECT_FALSE(y2021.sequence_parallel || y2021.context_parallel || y2021.expert_parallel ||
               y2021.cpu_offload || y2021.recompute_modules || y2021.uneven_pipeline_split);
  EXPECT_TRUE(y2021.expert_tensor_parallel);  // experts split over the TP ranks before 0.10
  const FrameworkCapabilities& core08 = CapabilitiesAt(megatron, 2024.6);
  const std::vector<Sharding> zero1 = {Sharding::kDdp, Sharding::kZero1};
  EXPECT_EQ(core08.shardings, zero1);
  EXPECT_TRUE(core08.context_parallel && core08.expert_parallel && core08.cpu_offload);
  EXPECT_FALSE(core08.uneven_pipeline_split || core08.recompute_modules);
  const FrameworkCapabilities& today = CapabilitiesAt(megatron, 0);
  EXPECT_EQ(&today, &megatron.capabilities);
  EXPECT_EQ(&CapabilitiesAt(megatron, 2030), &megatron.capabilities);
  EXPECT_EQ(&CapabilitiesAt(*FindFramework("nanotron"), 2021.25),
            &FindFramework("nanotron")->capabilities);
  // torchtitan's axes from the commits that brought them: PP 2024-05, HSDP 2024-09, CP 2024-10,
  // EP 2025-07. Its April 2024 snapshot ran FSDP and TP alone.
  const Framework& titan = *FindFramework("torchtitan");
  const FrameworkCapabilities& titan2404 = CapabilitiesAt(titan, 2024 + 3.5 / 12);
  EXPECT_TRUE(titan2404.tensor_parallel);
  EXPECT_FALSE(titan2404.pipeline_parallel || titan2404.context_parallel ||
               titan2404.expert_parallel);
  EXPECT_EQ(std::count(titan2404.shardings.begin(), titan2404.shardings.end(), Sharding::kHsdp), 0);
  EXPECT_FALSE(CapabilitiesAt(titan, 2024 + 4.5 / 12).interleaved_pipeline);
  EXPECT_TRUE(CapabilitiesAt(titan, 2024 + 4.5 / 12).pipeline_parallel);
  const FrameworkCapabilities& titan2412 = CapabilitiesAt(titan, 2024 + 11.5 / 12);
  EXPECT_TRUE(titan2412.pipeline_parallel && titan2412.interleaved_pipeline &&
              titan2412.context_parallel);
  EXPECT_FALSE(titan2412.expert_parallel);
  EXPECT_TRUE(CapabilitiesAt(titan, 2025 + 6.5 / 12).expert_parallel);
  // PyTorch's hybrid sharding came with 2.0: plain PyTorch 1.13 and PyTorch FSDP 1.13 shard fully
  // or not at all.
  for (const char* name : {"", "fsdp"}) {
    const Framework& pytorch = *FindFramework(name);
    auto offers = [&](double date, Sharding s) {
      const std::vector<Sharding>& list = CapabilitiesAt(pytorch, date).shardings;
      return std::find(list.begin(), list.end(), s) != list.end();
    };
    EXPECT_TRUE(offers(2022.8, Sharding::kFsdp)) << name;
    EXPECT_FALSE(offers(2022.8, Sharding::kHsdp)) << name;
    EXPECT_TRUE(offers(2023.3, Sharding::kHsdp)) << name;
  }
  // NeMo's launcher configs: context parallelism and FSDP from 24.01, CPU offloading from 24.03,
  // expert parallelism from 24.05; the distributed optimizer in every release.
  const Framework& nemo = *FindFramework("nemo");
  const FrameworkCapabilities& nemo2308 = CapabilitiesAt(nemo, 2023 + 7.5 / 12);
  const std::vector<Sharding> nemo_old = {Sharding::kDdp, Sharding::kZero1};
  EXPECT_EQ(nemo2308.shardings, nemo_old);
  EXPECT_FALSE(nemo2308.context_parallel || nemo2308.cpu_offload || nemo2308.expert_parallel);
  const FrameworkCapabilities& nemo2403 = CapabilitiesAt(nemo, 2024 + 2.5 / 12);
  EXPECT_TRUE(nemo2403.context_parallel && nemo2403.cpu_offload);
  EXPECT_FALSE(nemo2403.expert_parallel);
  // What NeMo runs through Megatron-Core, not before Megatron-Core's code had it.
  const FrameworkCapabilities& nemo2407 = CapabilitiesAt(nemo, 2024 + 6.5 / 12);
  EXPECT_TRUE(nemo2407.expert_parallel);
  EXPECT_FALSE(nemo2407.uneven_pipeline_split || nemo2407.recompute_modules);
  const FrameworkCapabilities& nemo2504 = CapabilitiesAt(nemo, 2025 + 3.5 / 12);
  EXPECT_TRUE(nemo2504.uneven_pipeline_split && nemo2504.recompute_modules);

  Scenario s;
  s.workload.model.name = "gpt3-175b";
  s.workload.seq_len = 2048;
  s.workload.global_batch = 1536;
  s.cluster.accelerator = "a100-sxm-80gb";
  s.cluster.num_gpus = 1024;
  s.framework = "megatron";
  s.stack.version = "2021.04";
  const Prediction old = PredictFor(s);
  EXPECT_EQ(old.layout.sharding, Sharding::kDdp);
  EXPECT_EQ(old.layout.cpu_offload_layers, 0);
  EXPECT_EQ(old.layout.recompute_modules, 0u);
  EXPECT_EQ(old.layout.cp, 1);
  EXPECT_GT(old.layout.tp, 1);
  EXPECT_FALSE(old.layout.sequence_parallel.value_or(true));
  Scenario sequence = s;
  sequence.parallelism.tp = 8;
  sequence.parallelism.sequence_parallel = true;
  absl::StatusOr<Prediction> no_sp =
      Predict(sequence, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(no_sp.ok());
  EXPECT_PRED2(Contains, std::string(no_sp.status().message()),
               std::string("scenario.parallelism.sequence_parallel: megatron as of 2021-04 does "
                           "not offer sequence parallelism"));
  Scenario sharded = s;
  sharded.parallelism.sharding = Sharding::kFsdp;
  absl::StatusOr<Prediction> refused =
      Predict(sharded, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_PRED2(Contains, std::string(refused.status().message()),
               std::string("scenario.parallelism.sharding: megatron as of 2021-04 does not "
                           "offer fsdp"));
  sharded.stack.version = "0.12";
  EXPECT_TRUE(Predict(sharded, Catalog::Builtin(), Profile::BuiltinDefault()).ok());
  s.stack.version.clear();
  EXPECT_TRUE(Predict(s, Catalog::Builtin(), Profile::BuiltinDefault()).ok());
}

// A CSV row that leaves the sharding blank takes the framework's default where its release has
// it (Megatron-Core's distributed optimizer), plain data parallelism where it does not.
TEST(Releases, ABlankShardingIsTheDefaultTheRowsReleaseHad) {
  const std::string header =
      "id,source,framework,framework_version,model,layers,hidden,heads,ffn_hidden,vocab,seq_len,"
      "accelerator,num_gpus,precision,tp,pp,dp,micro_batch,global_batch,recompute,"
      "tokens_per_s_per_gpu\n";
  auto sharding_of = [&](const std::string& version) {
    absl::StatusOr<std::vector<Measurement>> runs = ParseMeasurementsCsv(
        header + "1,test,megatron," + version +
        ",gpt,24,2048,16,8192,51200,2048,a100-sxm-80gb,64,bf16,2,2,16,4,512,none,1000\n");
    EXPECT_TRUE(runs.ok()) << runs.status();
    return runs.ok() && !runs->empty() ? runs->front().scenario.parallelism.sharding
                                       : Sharding::kUnspecified;
  };
  EXPECT_EQ(sharding_of("2.0"), Sharding::kDdp);
  EXPECT_EQ(sharding_of("0.8"), Sharding::kZero1);
  EXPECT_EQ(sharding_of(""), Sharding::kZero1);
}

// DeepSpeed shards a model over tensor-parallel ranks from 0.16.4 (AutoTP training), never beside
// ZeRO-3 (its engine asserts ZeRO stage <= 2) and without sequence parallelism; before that
// release a TP layout is refused, naming the release's month.
TEST(Releases, DeepSpeedOffersTensorParallelismFromAutoTp) {
  const Framework& deepspeed = *FindFramework("deepspeed");
  EXPECT_FALSE(CapabilitiesAt(deepspeed, 2024 + 10.5 / 12).tensor_parallel);
  const FrameworkCapabilities& autotp = CapabilitiesAt(deepspeed, 2025 + 1.5 / 12);
  EXPECT_TRUE(autotp.tensor_parallel);
  EXPECT_FALSE(autotp.sequence_parallel || autotp.tensor_parallel_with_fsdp);

  Scenario s;
  s.workload.model.name = "llama3-8b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 256;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 16;
  s.framework = "deepspeed";
  s.parallelism.tp = 2;
  s.stack.version = "0.16";
  absl::StatusOr<Prediction> before = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(before.ok());
  EXPECT_PRED2(Contains, std::string(before.status().message()),
               std::string("scenario.parallelism.tp: deepspeed as of 2024-11 does not offer "
                           "tensor parallelism"));
  s.stack.version = "0.16.4";
  const Prediction autotp_run = PredictFor(s);
  EXPECT_EQ(autotp_run.layout.tp, 2);
  EXPECT_NE(autotp_run.layout.sharding, Sharding::kFsdp);
  EXPECT_NE(autotp_run.layout.sharding, Sharding::kHsdp);
  EXPECT_FALSE(autotp_run.layout.sequence_parallel.value_or(false));
  Scenario zero3 = s;
  zero3.parallelism.sharding = Sharding::kFsdp;
  absl::StatusOr<Prediction> refused =
      Predict(zero3, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(refused.ok());
  EXPECT_PRED2(Contains, std::string(refused.status().message()),
               std::string("scenario.parallelism.sharding: deepspeed does not combine fsdp with "
                           "tensor parallelism"));
  // ZeRO-3 with TP and PP left open: Llama 3 70B does not fit 16 GPUs fully sharded alone, and
  // the planner does not answer with TP or PP beside it (it had answered tp8 pp2 fsdp, which
  // DeepSpeed runs neither way).
  zero3.workload.model.name = "llama3-70b";
  zero3.parallelism.tp = 0;
  zero3.stack.version = "0.17";
  absl::StatusOr<Prediction> none_fits =
      Predict(zero3, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(none_fits.ok()) << none_fits->layout.tp << " " << none_fits->layout.pp;
  EXPECT_EQ(none_fits.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_PRED2(Contains, std::string(none_fits.status().message()),
               std::string("the framework does not combine the sharding with this tp or pp"));
}

namespace {

// Llama 2 7B at 65,536 tokens on 32 A100, CP 8 and no TP, two micro-batches a step.
Scenario LongContextLlama2(const char* framework) {
  Scenario s;
  s.workload.model.name = "llama2-7b";
  s.workload.seq_len = 65536;
  s.workload.global_batch = 8;
  s.cluster.accelerator = "a100-sxm-80gb";
  s.cluster.num_gpus = 32;
  s.parallelism.tp = 1;
  s.parallelism.cp = 8;
  s.parallelism.micro_batch = 1;
  s.framework = framework;
  return s;
}

// A prediction of `s` with the stack's version and context-parallel exchange as given.
absl::StatusOr<Prediction> PredictAt(Scenario s, const char* version, const char* comm) {
  s.stack.version = version;
  s.stack.cp_comm_type = comm;
  return Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
}

// Why a prediction was refused; "" when it was answered.
std::string RefusalOf(const absl::StatusOr<Prediction>& p) {
  return p.ok() ? std::string() : std::string(p.status().message());
}

// A prediction's context-parallel communication.
CommTime CpOf(const Prediction& p) {
  for (const CommTime& c : p.time.comm) {
    if (c.kind == "cp") return c;
  }
  return CommTime{};
}

}  // namespace

// DeepSpeed's context parallelism is DeepSpeed-Ulysses (0.10.2 on): four all-to-alls a layer each
// way, of the queries, keys, values and output of a rank's share of the sequence, on the compute
// stream; the heads must divide over the ranks. Llama 2 7B at 65,536 tokens on 32 A100 at CP 8,
// two micro-batches a step: 2 passes x 4 tensors x 8,192 tokens x 4,096 x 2 bytes x 7/8 sent,
// a layer, 32 layers, 28 GiB a GPU; the ring Megatron-Core runs sends K and V around all ranks,
// six times as much, mostly hidden behind the attention.
TEST(Releases, DeepSpeedContextParallelismIsUlysses) {
  const Framework& deepspeed = *FindFramework("deepspeed");
  EXPECT_FALSE(CapabilitiesAt(deepspeed, 2023 + 6.5 / 12).context_parallel);
  EXPECT_TRUE(CapabilitiesAt(deepspeed, 2023 + 7.5 / 12).context_parallel);
  EXPECT_EQ(deepspeed.behaviour.cp_comm, CpComm::kAllToAll);

  Scenario s = LongContextLlama2("deepspeed");
  s.stack.version = "0.14";
  const CommTime ulysses = CpOf(PredictFor(s));
  EXPECT_EQ(ulysses.bytes_per_gpu, int64_t{28} << 30);
  EXPECT_GT(ulysses.total_s, 0);
  EXPECT_DOUBLE_EQ(ulysses.exposed_s, ulysses.total_s);  // blocking all-to-alls
  Scenario ring = s;
  ring.framework = "megatron";
  ring.stack.version = "0.8";
  const CommTime p2p = CpOf(PredictFor(ring));
  EXPECT_EQ(p2p.bytes_per_gpu, 6 * ulysses.bytes_per_gpu);
  EXPECT_LT(p2p.exposed_s, 0.5 * p2p.total_s);

  s.stack.version = "0.10";
  absl::StatusOr<Prediction> before = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(before.ok());
  EXPECT_PRED2(Contains, std::string(before.status().message()),
               std::string("scenario.parallelism.cp: deepspeed as of 2023-07 does not offer "
                           "context parallelism"));
  // Llama 3 8B has 8 key/value heads: 16 ranks cannot split them, and neither can 8 ranks when
  // TP halves them first; the planner does not propose either.
  Scenario gqa = s;
  gqa.workload.model.name = "llama3-8b";
  gqa.stack.version = "0.17";
  gqa.parallelism.cp = 16;
  absl::StatusOr<Prediction> split = Predict(gqa, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(split.ok());
  EXPECT_PRED2(Contains, std::string(split.status().message()),
               std::string("scenario.parallelism.cp: deepspeed's context parallelism by "
                           "all-to-all (a2a, Ulysses) splits the heads: cp=16 does not divide the "
                           "8 key/value heads"));
  gqa.parallelism.cp = 8;
  gqa.parallelism.tp = 2;
  EXPECT_FALSE(Predict(gqa, Catalog::Builtin(), Profile::BuiltinDefault()).ok());
  gqa.parallelism.cp = 0;
  gqa.parallelism.tp = 0;
  const Prediction planned = PredictFor(gqa);
  EXPECT_EQ(8 % planned.layout.cp, 0);
  EXPECT_EQ((8 / planned.layout.tp) % planned.layout.cp, 0);

  // Megatron-DeepSpeed runs Ulysses beside Megatron's TP from the same month
  // (--ds-sequence-parallel-size): at TP 2 a rank exchanges half the heads, half the bytes.
  const Framework& mds = *FindFramework("megatron-deepspeed");
  EXPECT_FALSE(CapabilitiesAt(mds, 2023 + 6.5 / 12).context_parallel);
  EXPECT_TRUE(CapabilitiesAt(mds, 2023 + 7.5 / 12).context_parallel);
  Scenario with_tp = s;
  with_tp.framework = "megatron-deepspeed";
  with_tp.stack.version = "0.12";
  with_tp.parallelism.tp = 2;
  with_tp.parallelism.cp = 8;
  with_tp.workload.global_batch = 4;  // two micro-batches a step at dp 2
  EXPECT_EQ(CpOf(PredictFor(with_tp)).bytes_per_gpu, int64_t{14} << 30);
}

// Megatron-Core runs context parallelism by any of cp_comm_type's exchanges (0.10 on; NeMo's
// containers from the months of the commits). Llama 2 7B at 65,536 tokens on A100, two
// micro-batches a step, 32 layers, K/V of a rank's share of the sequence kv = tokens x 32 heads x
// (128 + 128) x 2 bytes:
// - p2p at CP 8 (8,192 tokens, kv = 128 MiB): 3 x 7 x kv a layer, 168 GiB a GPU, mostly hidden;
// - allgather: the same bytes (gathered K/V forward and backward, their gradients
//   reduce-scattered), all of them exposed, and 2 GiB of whole-sequence K/V and gradient buffers
//   in the backward;
// - a2a: DeepSpeed-Ulysses' 28 GiB, exposed;
// - a2a+p2p at CP 16 on 64 GPUs: a2a inside the 8-GPU node (2 x 4 tensors x 32 MiB x 7/8, 14 GiB)
//   and the ring between the two nodes' groups (3 x 1 x 64 MiB, 12 GiB): 26 GiB, where the ring
//   alone sends 180 GiB.
TEST(Releases, MegatronCoreRunsEachContextParallelExchange) {
  Scenario s = LongContextLlama2("megatron");
  auto cp_with = [&s](const char* comm) {
    Scenario asked = s;
    asked.stack.cp_comm_type = comm;
    return CpOf(PredictFor(asked));
  };
  const CommTime p2p = cp_with("");
  EXPECT_EQ(p2p.bytes_per_gpu, int64_t{168} << 30);
  EXPECT_LT(p2p.exposed_s, 0.5 * p2p.total_s);
  EXPECT_EQ(cp_with("ring").total_s, p2p.total_s);
  const CommTime gather = cp_with("allgather");
  EXPECT_EQ(gather.bytes_per_gpu, p2p.bytes_per_gpu);
  EXPECT_DOUBLE_EQ(gather.exposed_s, gather.total_s);
  EXPECT_GT(gather.exposed_s, p2p.exposed_s);
  // Its backward holds the whole sequence's K/V and their gradients for a layer: 2 x 8 x 128 MiB
  // = 2 GiB more memory (with the allocator's fragmentation on top).
  Scenario gathered = s;
  gathered.stack.cp_comm_type = "allgather";
  const double more = static_cast<double>(PredictFor(gathered).memory.total_bytes -
                                          PredictFor(s).memory.total_bytes);
  EXPECT_GE(more, 2.0 * (1 << 30));
  EXPECT_LE(more, 2.2 * (1 << 30));
  const CommTime a2a = cp_with("Ulysses");
  EXPECT_EQ(a2a.bytes_per_gpu, int64_t{28} << 30);
  EXPECT_DOUBLE_EQ(a2a.exposed_s, a2a.total_s);
  // Inside one NVLink domain the two-level exchange is one all-to-all.
  EXPECT_EQ(cp_with("a2a+p2p").bytes_per_gpu, a2a.bytes_per_gpu);
  s.cluster.num_gpus = 64;
  s.parallelism.cp = 16;
  EXPECT_EQ(cp_with("p2p").bytes_per_gpu, int64_t{180} << 30);
  const CommTime two_level = cp_with("a2a+p2p");
  EXPECT_EQ(two_level.bytes_per_gpu, int64_t{26} << 30);
  EXPECT_LT(two_level.exposed_s, two_level.total_s);  // the ring's part beside the attention
  EXPECT_EQ(CpAllToAllRanks(CpComm::kHierarchical, 16, 1, 8, 32, 32), 8);
  EXPECT_EQ(CpAllToAllRanks(CpComm::kHierarchical, 16, 8, 8, 32, 8), 1);   // TP fills the node
  EXPECT_EQ(CpAllToAllRanks(CpComm::kHierarchical, 16, 2, 72, 32, 8), 4);  // 4 KV heads a rank

  // Each release offers what it shipped; each framework what it runs.
  auto refusal = [&s](const char* framework, const char* version, const char* comm) {
    Scenario asked = s;
    asked.framework = framework;
    return RefusalOf(PredictAt(asked, version, comm));
  };
  EXPECT_EQ(refusal("megatron", "0.9", "a2a"),
            "scenario.stack.cp_comm_type: megatron as of 2024-10 does not offer a2a context "
            "parallelism (it runs p2p)");
  EXPECT_EQ(refusal("megatron", "0.10", "a2a+p2p"), "");
  EXPECT_NE(refusal("nemo", "24.09", "allgather"), "");
  EXPECT_EQ(refusal("nemo", "24.11", "allgather"), "");
  EXPECT_EQ(refusal("nemo", "24.11", "a2a+p2p"), "");
  EXPECT_EQ(refusal("torchtitan", "", "a2a"),
            "scenario.stack.cp_comm_type: torchtitan does not offer a2a context parallelism (it "
            "runs p2p)");
  EXPECT_EQ(refusal("deepspeed", "", "p2p"),
            "scenario.stack.cp_comm_type: deepspeed does not offer p2p context parallelism (it "
            "runs a2a)");
  EXPECT_EQ(refusal("composer-fsdp", "", "a2a"),
            "scenario.stack.cp_comm_type: composer-fsdp does not offer context parallelism");
  EXPECT_EQ(refusal("deepspeed", "0.10", "a2a"),
            "scenario.stack.cp_comm_type: deepspeed as of 2023-07 does not offer context "
            "parallelism");
  EXPECT_EQ(refusal("megatron", "", "rings"),
            "scenario.stack.cp_comm_type: unknown exchange 'rings' (known: p2p, a2a, allgather, "
            "a2a+p2p, or as written elsewhere: ring, ulysses, all_gather, hierarchical)");

  // Asked for a2a with the layout open, Megatron is planned with a cp that divides the heads
  // (Llama 3 8B: 8 key/value heads), as DeepSpeed is.
  Scenario open = s;
  open.workload.model.name = "llama3-8b";
  open.parallelism.tp = open.parallelism.cp = 0;
  open.stack.cp_comm_type = "a2a";
  const Prediction planned = PredictFor(open);
  EXPECT_EQ((8 / planned.layout.tp) % planned.layout.cp, 0);
  open.parallelism.tp = 2;
  open.parallelism.cp = 8;
  EXPECT_FALSE(Predict(open, Catalog::Builtin(), Profile::BuiltinDefault()).ok());
}

// The two-level exchange (a2a+p2p) takes the all-to-all group a request sets (Megatron-Core's
// --hierarchical-context-parallel-sizes, MaxText's usp split), else the largest one NVLink domain
// holds whose ranks split the heads, and echoes it. Llama 2 7B at 65,536 tokens, CP 16 on 64
// A100: groups of 8 send 14 GiB by all-to-all and the 2-group ring 12 GiB; groups of 4 send 12
// GiB and a 4-group ring three times 12; one group of 16 sends 15 GiB by all-to-all alone.
TEST(Releases, TwoLevelContextParallelismTakesTheGroupAskedFor) {
  Scenario s = LongContextLlama2("megatron");
  s.cluster.num_gpus = 64;
  s.parallelism.cp = 16;
  s.stack.cp_comm_type = "a2a+p2p";
  auto with = [&s](int a2a) {
    Scenario asked = s;
    asked.parallelism.cp_a2a = a2a;
    return Predict(asked, Catalog::Builtin(), Profile::BuiltinDefault());
  };
  absl::StatusOr<Prediction> chosen = with(0);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->layout.cp_a2a, 8);
  EXPECT_EQ(CpOf(*chosen).bytes_per_gpu, int64_t{26} << 30);
  absl::StatusOr<Prediction> four = with(4);
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(four->layout.cp_a2a, 4);
  EXPECT_EQ(CpOf(*four).bytes_per_gpu, int64_t{48} << 30);
  absl::StatusOr<Prediction> all = with(16);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(CpOf(*all).bytes_per_gpu, int64_t{15} << 30);
  EXPECT_DOUBLE_EQ(CpOf(*all).exposed_s, CpOf(*all).total_s);  // no ring to hide

  auto refusal = [&with](int a2a) { return RefusalOf(with(a2a)); };
  EXPECT_EQ(refusal(3), "scenario.parallelism.cp_a2a: 3 does not divide cp=16");
  s.stack.cp_comm_type = "p2p";
  EXPECT_EQ(refusal(4),
            "scenario.parallelism.cp_a2a: sets the all-to-all group of a2a+p2p context "
            "parallelism (stack.cp_comm_type), not of p2p");
  s.stack.cp_comm_type = "a2a+p2p";
  s.workload.model.name = "llama3-8b";
  EXPECT_EQ(refusal(16), "scenario.parallelism.cp_a2a: 16 does not divide the 8 key/value heads");
  // With cp left open the planner keeps to multiples of the group asked for.
  s.parallelism.cp = 0;
  s.parallelism.tp = 0;
  absl::StatusOr<Prediction> planned = with(4);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->layout.cp % 4, 0);
  EXPECT_EQ(planned->layout.cp_a2a, 4);
}

// Colossal-AI's HybridParallelPlugin runs context parallelism as its sp_size beside TP and PP:
// DeepSpeed-Ulysses ("all_to_all", the mode when none is named) from v0.3.7 (2024-04) and ring
// attention ("ring_attn") from v0.4.3 (2024-09). Before, no release offers it; each release
// offers the exchanges it shipped, and the numbers users write place it.
TEST(Releases, ColossalAiRunsUlyssesThenRingAttention) {
  Scenario s = LongContextLlama2("colossal-ai");
  auto with = [&s](const char* version, const char* comm) { return PredictAt(s, version, comm); };
  absl::StatusOr<Prediction> old = with("0.3", "");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().message(),
            "scenario.parallelism.cp: colossal-ai as of 2023-06 does not offer context "
            "parallelism");
  // Ulysses by default: DeepSpeed's bytes for the same layout (28 GiB a GPU, all exposed).
  absl::StatusOr<Prediction> ulysses = with("0.3.7", "");
  ASSERT_TRUE(ulysses.ok()) << ulysses.status();
  EXPECT_EQ(CpOf(*ulysses).bytes_per_gpu, int64_t{28} << 30);
  EXPECT_DOUBLE_EQ(CpOf(*ulysses).exposed_s, CpOf(*ulysses).total_s);
  absl::StatusOr<Prediction> no_ring = with("0.4.2", "ring");
  ASSERT_FALSE(no_ring.ok());
  EXPECT_EQ(no_ring.status().message(),
            "scenario.stack.cp_comm_type: colossal-ai as of 2024-07 does not offer p2p context "
            "parallelism (it runs a2a)");
  absl::StatusOr<Prediction> ring = with("0.4.3", "ring");
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(CpOf(*ring).bytes_per_gpu, int64_t{168} << 30);
  EXPECT_LT(CpOf(*ring).exposed_s, CpOf(*ring).total_s);
  // The planner keeps Ulysses' rule: Llama 3 8B's 8 key/value heads take cp 8 at most.
  s.workload.model.name = "llama3-8b";
  s.parallelism.cp = 16;
  EXPECT_FALSE(with("", "").ok());
  s.parallelism.cp = 0;
  s.parallelism.tp = 0;
  absl::StatusOr<Prediction> planned = with("", "");
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ((8 / planned->layout.tp) % planned->layout.cp, 0);
}

// MaxText's context parallelism (context_parallel_strategy) gathers the keys and values by
// default, from 2025-04 on GPUs and 2025-05 on TPUs; the ring came to GPUs in 2025-11 and to TPUs
// in 2026-07; Ulysses runs on TPUs only, from 2026-08. Its own release tags (0.1 to 0.2.4) place
// a request, as the JAX-Toolbox containers do.
TEST(Releases, MaxTextGathersThenRingsThenRunsUlyssesOnTpus) {
  Scenario s = LongContextLlama2("maxtext");
  auto with = [&s](const char* version, const char* comm) { return PredictAt(s, version, comm); };
  auto refusal = [&with](const char* version, const char* comm) {
    return RefusalOf(with(version, comm));
  };
  EXPECT_EQ(refusal("25.01", ""),
            "scenario.parallelism.cp: maxtext as of 2025-01 does not offer context parallelism");
  // The all-gather: the ring's bytes (168 GiB a GPU, as Megatron's p2p). XLA schedules the
  // backward's gather and reduce-scatter beside the layer's other backward work, so of the three
  // collectives the forward's gather (a third) is exposed in full and the rest in part, where
  // Megatron-Core's (Transformer Engine's PyTorch attention) are exposed whole.
  absl::StatusOr<Prediction> gather = with("0.1", "");
  ASSERT_TRUE(gather.ok()) << gather.status();
  EXPECT_EQ(CpOf(*gather).bytes_per_gpu, int64_t{168} << 30);
  EXPECT_GE(CpOf(*gather).exposed_s, CpOf(*gather).total_s / 3);
  EXPECT_LT(CpOf(*gather).exposed_s, 0.9 * CpOf(*gather).total_s);
  Scenario megatron = s;
  megatron.framework = "megatron";
  megatron.stack.cp_comm_type = "allgather";
  const CommTime exposed = CpOf(PredictFor(megatron));
  EXPECT_EQ(exposed.bytes_per_gpu, CpOf(*gather).bytes_per_gpu);
  EXPECT_DOUBLE_EQ(exposed.exposed_s, exposed.total_s);
  EXPECT_EQ(refusal("0.1", "ring"),
            "scenario.stack.cp_comm_type: maxtext as of 2025-09 does not offer p2p context "
            "parallelism (it runs allgather)");
  absl::StatusOr<Prediction> ring = with("0.2", "ring");
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(CpOf(*ring).bytes_per_gpu, int64_t{168} << 30);
  EXPECT_LT(CpOf(*ring).exposed_s, CpOf(*ring).total_s);
  EXPECT_EQ(refusal("0.2.4", "a2a"),
            "scenario.parallelism.cp: maxtext runs a2a context parallelism on TPUs only");

  s.cluster.accelerator = "tpu-v5p";
  EXPECT_EQ(refusal("0.2.3", "ring"),
            "scenario.parallelism.cp: maxtext as of 2026-06 runs p2p context parallelism on GPUs "
            "only (on TPUs from 2026-07)");
  EXPECT_EQ(refusal("0.2.4", "ring"), "");
  absl::StatusOr<Prediction> ulysses = with("0.2.4", "ulysses");
  ASSERT_TRUE(ulysses.ok()) << ulysses.status();
  EXPECT_EQ(CpOf(*ulysses).bytes_per_gpu, int64_t{28} << 30);
  EXPECT_EQ(refusal("0.2.4", "a2a+p2p"), "");
  // Asked for the ring where TPUs lack it, the planner leaves context parallelism out.
  s.parallelism.cp = 0;
  absl::StatusOr<Prediction> planned = with("0.2.3", "ring");
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->layout.cp, 1);
}

// OLMo-core's context parallelism is ring-flash-attn's zig-zag ring from v2.0 (2025-03), its
// Ulysses all-to-alls from v2.5 (2026-04).
TEST(Releases, OlmoCoreRingsFromTwoAndRunsUlyssesFromTwoFive) {
  Scenario s = LongContextLlama2("olmo-core");
  auto with = [&s](const char* version, const char* comm) { return PredictAt(s, version, comm); };
  absl::StatusOr<Prediction> old = with("1.8", "");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().message(),
            "scenario.parallelism.cp: olmo-core as of 2025-01 does not offer context parallelism");
  absl::StatusOr<Prediction> ring = with("2.0", "");
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(CpOf(*ring).bytes_per_gpu, int64_t{168} << 30);
  absl::StatusOr<Prediction> early = with("2.4", "a2a");
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().message(),
            "scenario.stack.cp_comm_type: olmo-core as of 2025-11 does not offer a2a context "
            "parallelism (it runs p2p)");
  absl::StatusOr<Prediction> ulysses = with("2.5", "ulysses");
  ASSERT_TRUE(ulysses.ok()) << ulysses.status();
  EXPECT_EQ(CpOf(*ulysses).bytes_per_gpu, int64_t{28} << 30);
}

}  // namespace scalecast
