// Mixture-of-experts models: counting (parameters and FLOPs by hand from the published configs),
// the all-to-all against measured collectives, the expert axes of the layout, each MoE term
// moving its part of the step, and the model's error on every run of shared/data/moe.csv.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "model/calibration.h"
#include "model/catalog.h"
#include "model/hardware.h"
#include "model/layout.h"
#include "model/measurements.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/step.h"
#include "model/workload.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

using testing::ReadSource;

// moe.csv with the facts its notes state (architecture, routing, dispatcher), as
// scripts/accuracy.sh reads it.
const std::vector<Measurement>& MoeRuns() {
  static const auto* runs = new std::vector<Measurement>(testing::LoadRuns({"moe.csv"}));
  return *runs;
}

// DeepSeek-V3 (arXiv 2412.19437 §4.2; HF config.json): 61 layers (3 dense), hidden 7168,
// 128 heads of MLA (q_lora 1536, kv_lora 512, nope 128, rope 64, v 128), 256 routed experts of
// width 2048 with top-8 and one shared expert, dense FFN 18432, vocab 129280.
TEST(MoeCounting, DeepSeekV3FlopsPerTokenByHand) {
  const Shape s(Catalog::Builtin().FindModel("deepseek-v3")->spec);
  const double h = 7168, heads = 128, L = 61, seq = 4096;
  const double attn =
      h * 1536 + 1536 * heads * 192 + h * (512 + 64) + 512 * heads * (128 + 128) + heads * 128 * h;
  const double dense_ffn = 3 * h * 18432;
  const double moe_active = 8 * 3 * h * 2048 + 3 * h * 2048 + h * 256;  // routed, shared, router
  const double matmul = L * attn + 3 * dense_ffn + 58 * moe_active + 129280 * h;
  // Causal attention per token and layer: q·k over s/2 keys (2*192) and p·v (2*128), x3.
  const double attention = 3 * 2 * (seq / 2) * (192 + 128) * heads;
  EXPECT_NEAR(ModelFlopsPerToken(s, 4096) / (6 * matmul + L * attention), 1.0, 1e-9);
  // Published: 671B total, 37B activated (the main model, without the MTP module).
  const ParamCount p = CountParams(s);
  EXPECT_NEAR(p.total / 671e9, 1.0, 0.01);
  EXPECT_NEAR(p.activated / 37.5e9, 1.0, 0.03);
}

// Qwen3-235B-A22B (HF config.json): 94 layers, hidden 4096, 64 query heads and 4 KV heads of
// width 128, 128 experts of width 1536, top-8, no shared expert, vocab 151936.
TEST(MoeCounting, Qwen3_235bFlopsPerTokenByHand) {
  const Shape s(Catalog::Builtin().FindModel("qwen3-235b-a22b")->spec);
  const double h = 4096, L = 94, seq = 4096;
  const double attn = h * (64 * 128 + 2 * 4 * 128) + 64 * 128 * h;
  const double moe_active = 8 * 3 * h * 1536 + h * 128;
  const double matmul = L * (attn + moe_active) + 151936 * h;
  const double attention = 3 * 2 * (seq / 2) * (128 + 128) * 64;
  EXPECT_NEAR(ModelFlopsPerToken(s, 4096) / (6 * matmul + L * attention), 1.0, 1e-9);
  const ParamCount p = CountParams(s);
  EXPECT_NEAR(p.total / 235e9, 1.0, 0.02);
  EXPECT_NEAR(p.activated / 22e9, 1.0, 0.03);
}

// nccl-tests alltoall rows of collectives.csv: the model's bus bandwidth (with the default
// profile's all-to-all efficiency) within 1.5x of each measured one.
TEST(MoeCollectives, AllToAllWithinOneAndAHalfOfMeasured) {
  auto rows = ParseCsv(testing::ReadShared("collectives.csv"));
  ASSERT_TRUE(rows.ok());
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < (*rows)[0].size(); ++i) col[(*rows)[0][i]] = i;
  const Accelerator& h100 = *Catalog::Builtin().FindAccelerator("h100-sxm-80gb");
  const Profile& profile = Profile::BuiltinDefault();
  const Hardware hw = MakeHardware(h100, profile.ForAccelerator("h100"), Stack(), profile.stack,
                                   Precision::kBf16, 8, 0);
  std::vector<double> ratios;
  for (size_t r = 1; r < rows->size(); ++r) {
    const auto& row = (*rows)[r];
    if (row[col["collective"]] != "alltoall" || row[col["gpu"]] != "H100") continue;
    double bytes = 0, busbw = 0, gpus = 0;
    if (!absl::SimpleAtod(row[col["message_bytes"]], &bytes) ||
        !absl::SimpleAtod(row[col["busbw_gbps"]], &busbw) ||
        !absl::SimpleAtod(row[col["total_gpus"]], &gpus)) {
      continue;  // a row without a message size states a plateau, not a measurement
    }
    const int n = static_cast<int>(gpus);
    const double t = AllToAllTime(hw, Group{n, 8}, bytes, 1.0) / profile.moe.a2a_eff;
    const double model_busbw = bytes / t * (n - 1) / n / 1e9;
    ratios.push_back(model_busbw / busbw);
    EXPECT_GT(model_busbw / busbw, 1 / 1.5) << "row " << row[0];
    EXPECT_LT(model_busbw / busbw, 1.5) << "row " << row[0];
  }
  EXPECT_GE(ratios.size(), 2u);
}

Scenario DeepSeek(int gpus) {
  Scenario s = testing::StudyScenario("deepseek-v3", "h100-sxm-80gb", gpus);
  s.workload.precision = Precision::kFp8;
  s.framework = "megatron";
  return s;
}

TEST(MoeLayout, ExpertAxesFollowMegatronRules) {
  Scenario s = DeepSeek(256);
  s.parallelism.tp = 1;
  s.parallelism.pp = 8;
  s.parallelism.cp = 1;
  s.parallelism.ep = 48;  // does not divide 256 experts
  absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "scenario.parallelism.ep")) << r.status();
  s.parallelism.ep = 64;  // 256 / pp 8 = 32 ranks a stage: ep*etp = 64 does not divide them
  r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "tp*cp*dp=32")) << r.status();
  s.parallelism.ep = 32;
  r = ResolveScenario(s, Catalog::Builtin());
  EXPECT_TRUE(r.ok()) << r.status();
  s.parallelism.etp = 2;  // etp must divide tp = 1
  r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "scenario.parallelism.etp")) << r.status();
  // A dense model takes no expert parallelism.
  Scenario dense = DeepSeek(256);
  dense.workload.model.name = "llama3-70b";
  dense.parallelism.ep = 2;
  r = ResolveScenario(dense, Catalog::Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "mixture-of-experts")) << r.status();
}

TEST(MoeLayout, PlannerSearchesExpertParallelismWithinTheRules) {
  const Scenario s = *ResolveScenario(DeepSeek(2048), Catalog::Builtin());
  const LayoutContext ctx = MakeLayoutContext(s, 8);
  const LayoutSpace layouts = EnumerateLayouts(s, nullptr, Catalog::Builtin(), nullptr);
  std::map<int, int> by_ep;
  for (const Parallelism& p : layouts) {
    ++by_ep[p.ep];
    ASSERT_EQ(CheckEp(ctx, p.ep, p.etp, p.tp * p.cp * p.dp), "") << p.ep << " " << p.etp;
    ASSERT_EQ(CheckEtp(ctx, p.etp, p.tp), "");
  }
  EXPECT_GT(by_ep.size(), 4u);
  PlanOptions options;
  options.top_k = 3;
  absl::StatusOr<PlanResult> plan = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_FALSE(plan->top.empty());
  const Parallelism& best = plan->top.front().layout;
  EXPECT_GT(best.ep, 1);  // 671B of experts do not fit without splitting them
  EXPECT_TRUE(plan->top.front().memory.fits);
}

// One MoE layout of Qwen3-235B whose EP group (ep 16 over tp 2: 32 ranks) spans four 8-GPU domains.
Scenario QwenAcrossNodes() {
  Scenario s = testing::StudyScenario("qwen3-235b-a22b", "h100-sxm-80gb", 256);
  s.workload.global_batch = 512;
  s.framework = "megatron";
  s.parallelism = testing::ExpertLayout(2, 8, 1, 16, Recompute::kSelective);
  return s;
}

double Comm(const Prediction& p, const std::string& kind, bool exposed) {
  for (const CommTime& c : p.time.comm) {
    if (c.kind == kind) return exposed ? c.exposed_s : c.total_s;
  }
  return 0;
}

Prediction PredictFixed(const Scenario& s, const Profile& profile = Profile::BuiltinDefault()) {
  absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), profile);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Prediction();
}

TEST(MoeTerms, EachFeatureMovesItsTerm) {
  const Prediction base = PredictFixed(QwenAcrossNodes());
  ASSERT_GT(Comm(base, "ep_alltoall", false), 0);
  // ep 16 with tp 2 spans four 8-GPU domains: a fused dispatcher sends fewer network copies.
  Scenario fused = QwenAcrossNodes();
  fused.stack.fused_dispatch = true;
  const Prediction f = PredictFixed(fused);
  EXPECT_LT(Comm(f, "ep_alltoall", false), Comm(base, "ep_alltoall", false));
  EXPECT_GT(f.tokens_per_s_per_gpu, base.tokens_per_s_per_gpu);  // and a short launch chain
  // Overlap hides the all-to-all, it does not shrink it (one pipeline stage, so that the step's
  // slowest stage, whose all-to-alls are reported, is the same one with and without it).
  Scenario plain = testing::StudyScenario("qwen3-30b-a3b", "b200-sxm-180gb", 16);
  plain.framework = "megatron";
  plain.workload.global_batch = 256;
  plain.parallelism = testing::ExpertLayout(1, 1, 1, 16, Recompute::kNone);
  Scenario overlap = plain;
  overlap.stack.ep_comm_overlap = true;
  const Prediction o = PredictFixed(overlap), p = PredictFixed(plain);
  EXPECT_DOUBLE_EQ(Comm(o, "ep_alltoall", false), Comm(p, "ep_alltoall", false));
  EXPECT_LT(Comm(o, "ep_alltoall", true), Comm(p, "ep_alltoall", true));
  // Forced balance (benchmarks) is faster than learned routing's busiest rank.
  Scenario balanced = QwenAcrossNodes();
  balanced.workload.model.moe.force_balance = true;
  EXPECT_GT(PredictFixed(balanced).tokens_per_s_per_gpu, base.tokens_per_s_per_gpu);
  // Doubling ep halves the routed experts' weights a GPU holds; the dense part stays: what
  // 16 -> 32 saves is twice what 32 -> 64 saves.
  Scenario widest = QwenAcrossNodes();
  widest.parallelism.pp = 4;  // 64 ranks a stage
  widest.parallelism.ep = 64;
  Scenario narrow4 = QwenAcrossNodes(), wider4 = QwenAcrossNodes();
  narrow4.parallelism.pp = wider4.parallelism.pp = 4;
  wider4.parallelism.ep = 32;
  const Prediction p16 = PredictFixed(narrow4), p32 = PredictFixed(wider4),
                   p64 = PredictFixed(widest);
  ASSERT_EQ(p16.layout.ep, 16);
  ASSERT_EQ(p32.layout.ep, 32);
  ASSERT_EQ(p64.layout.ep, 64);
  const double saved_16_32 = p16.memory.weights_bytes - p32.memory.weights_bytes;
  const double saved_32_64 = p32.memory.weights_bytes - p64.memory.weights_bytes;
  EXPECT_NEAR(saved_16_32 / saved_32_64, 2.0, 0.01);
  // MFU counts activated parameters: the same tokens/s of a 22B-activated model.
  EXPECT_GT(base.mfu, 0.05);
  EXPECT_LT(base.mfu, 0.6);
}

// Under sequence parallelism a MoE layer's routed experts move no tokens over the TP group
// (Megatron-Core's token dispatcher works within the expert-tensor group, token_dispatcher.py
// `self.tp_group = pg_collection.expt_tp`): a layer's TP traffic is its attention's and its
// shared experts', one all-gather and one reduce-scatter each. MLA's up-projections gather the
// latents (q_lora + kv_lora + rope: 1,536 + 512 + 64 wide in DeepSeek-V3), not the hidden state.
TEST(MoeTerms, TensorParallelTrafficIsTheAttentionsAndTheSharedExperts) {
  auto tp_bytes = [](const Scenario& s, int shared_experts, int dense_layers) {
    absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0.0;
    MoeSpec& moe = r->workload.model.moe;
    moe.shared_experts = shared_experts;
    moe.shared_ffn_hidden = shared_experts * moe.expert_ffn_hidden;
    moe.dense_layers = dense_layers;
    absl::StatusOr<Prediction> p = PredictLayout(*r, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return 0.0;
    EXPECT_TRUE(p->layout.sp());
    for (const CommTime& c : p->time.comm) {
      if (c.kind == "tp") return static_cast<double>(c.bytes_per_gpu);
    }
    return 0.0;
  };
  // Qwen3-235B at TP 2 (grouped-query attention, no shared experts): one shared expert doubles it.
  const Scenario qwen = QwenAcrossNodes();
  const double routed_only = tp_bytes(qwen, 0, 0);
  ASSERT_GT(routed_only, 0);
  EXPECT_NEAR(tp_bytes(qwen, 1, 0) / routed_only, 2.0, 1e-6);
  // DeepSeek-V3 at TP 2 in fp8: attention gathers 2,112 columns and reduce-scatters 7,168, its
  // shared expert 7,168 and 7,168; the gathers move the fp8 copy, a byte an element against the
  // reduce-scatters' two (StackFeatures.Fp8TensorParallelGathersMoveTheQuantizedCopy).
  Scenario ds = DeepSeek(256);
  ds.workload.global_batch = 512;
  ds.parallelism = testing::ExpertLayout(2, 4, 1, 32, Recompute::kSelective);
  const double mla_only = tp_bytes(ds, 0, 0);
  ASSERT_GT(mla_only, 0);
  EXPECT_NEAR(tp_bytes(ds, 1, 0) / mla_only,
              (0.5 * 2112 + 7168 + 0.5 * 7168 + 7168) / (0.5 * 2112 + 7168), 1e-5);
  ds.workload.precision = Precision::kBf16;
  const double mla_bf16 = tp_bytes(ds, 0, 0);
  ASSERT_GT(mla_bf16, 0);
  EXPECT_NEAR(tp_bytes(ds, 1, 0) / mla_bf16, (2112.0 + 3 * 7168) / (2112 + 7168), 1e-5);
}

// Megatron-Core's combined 1F1B pairs one micro-batch's forward with another's backward, and each
// pass's all-to-alls hide behind its partner's compute. The first forward and the last backward
// have no partner: with one micro-batch a step nothing is hidden, and the exposed share of the
// all-to-all falls towards the paired passes' as the micro-batches a step grow.
TEST(MoeTerms, TheOverlapLeavesItsUnpairedPassesAllToAllsExposed) {
  Scenario s = testing::StudyScenario("qwen3-30b-a3b", "b200-sxm-180gb", 8);
  s.framework = "megatron";
  s.workload.seq_len = 4096;
  s.workload.model.moe.capacity_factor = 1.0;
  s.parallelism = testing::ExpertLayout(1, 1, 1, 8, Recompute::kNone);
  s.parallelism.micro_batch = 2;
  s.stack.ep_comm_overlap = true;
  auto exposed_share = [&](int64_t global_batch) {
    Scenario t = s;
    t.workload.global_batch = global_batch;
    const Prediction p = PredictFixed(t);
    EXPECT_EQ(p.layout.dp, 8);
    return Comm(p, "ep_alltoall", true) / Comm(p, "ep_alltoall", false);
  };
  const double one = exposed_share(16), two = exposed_share(32), many = exposed_share(16 * 64);
  EXPECT_DOUBLE_EQ(one, 1.0);  // one micro-batch: no partner for either pass
  EXPECT_GE(two, 0.5);         // two: half the passes alone
  EXPECT_LT(two, one);
  EXPECT_LT(many, two);
  EXPECT_LT(many, 0.5);
}

// The host launches a MoE layer in moe.layer_overhead_s per micro-batch. After a dropless
// layer's tokens-per-expert sync the plain all-to-all dispatcher's kernels wait for their
// launches: the whole host time adds to the GPU's, at any micro-batch size. A padded capacity
// (no sync) and a fused dispatcher (a short chain) let the host run ahead: only a layer whose GPU
// work is shorter than its launches waits, for the difference. Under the 1F1B all-to-all overlap
// the host also builds each model chunk's schedule plan, moe.overlap_chunk_overhead_s shared by
// the chunk's layers, and the same rule holds. A graph of the whole step launches every layer at
// once: no wait at all.
TEST(MoeTerms, HostWaitFollowsTheDispatchersSyncPerLayerAndMicroBatch) {
  // The MoE layer's own launches, apart from every layer's operator dispatch
  // (GlobalParams::layer_host_s; Predictor.AnEagerLayerShorterThanItsDispatchWaitsForTheHost).
  Profile moe_host = Profile::BuiltinDefault();
  moe_host.global.layer_host_s = 0;
  Profile no_host = moe_host;
  no_host.moe.layer_overhead_s = 0;
  no_host.moe.overlap_chunk_overhead_s = 0;
  const double host = Profile::BuiltinDefault().moe.layer_overhead_s;
  ASSERT_GT(host, 0);
  auto compute = [](const Scenario& s, const Profile& profile) {
    absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), profile);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->time.compute_s : 0.0;
  };
  auto with = [&](const Scenario& s) { return compute(s, moe_host); };
  auto without = [&](const Scenario& s) { return compute(s, no_host); };
  Scenario base = QwenAcrossNodes();
  base.workload.model.moe.force_balance = true;
  const Prediction p = PredictFixed(base, moe_host);
  // Compute time covers every micro-batch of the slowest stage's layers.
  const double micro_batches = 512.0 / (p.layout.dp * p.layout.micro_batch);
  const double layers = 12;  // the first stage's: Qwen3-235B's 94 MoE layers over 8, rounded up
  const double wait = micro_batches * layers * host;
  EXPECT_NEAR(with(base) - without(base), wait, 1e-6 * wait);
  Scenario big = base;
  big.parallelism.micro_batch = 4;  // a quarter of the micro-batches, a quarter of the waits
  EXPECT_NEAR(with(big) - without(big), wait / 4, 1e-6 * wait);
  // This layer's GPU work outlasts its launches: nothing waits without the sync's chain.
  Scenario padded = base, fused = base;
  padded.workload.model.moe.capacity_factor = 1.0;
  fused.stack.fused_dispatch = true;
  EXPECT_DOUBLE_EQ(with(padded), without(padded));
  EXPECT_DOUBLE_EQ(with(fused), without(fused));
  // A graph of the whole step holds no host sync (its dropless layers size their buffers on the
  // device): nothing waits, dropless and plain-dispatched as the layer is.
  Scenario whole = base;
  whole.stack.full_step_graph = true;
  EXPECT_GT(with(base) - without(base), 0);
  EXPECT_DOUBLE_EQ(with(whole), without(whole));
  // Under the overlap the other micro-batch keeps the GPU busy while the host syncs: its rank
  // holds one chunk of 12 of the 94 layers, each carrying a twelfth of the chunk's plan, and a
  // layer of one sequence or four outlasts its launches and that share: nothing waits, where
  // without the overlap the sync made every launch wait.
  ASSERT_EQ(p.layout.pp, 8);
  ASSERT_EQ(p.layout.vpp, 1);
  Scenario overlapped = big;
  overlapped.stack.ep_comm_overlap = true;
  EXPECT_DOUBLE_EQ(with(overlapped), without(overlapped));
  overlapped.parallelism.micro_batch = 1;
  EXPECT_DOUBLE_EQ(with(overlapped), without(overlapped));
  // A small MoE layer at micro-batch 1 is host-bound even without the sync: its layers take the
  // launches' time (compute and the exposed all-to-all between them), no less.
  Scenario small = testing::StudyScenario("qwen3-30b-a3b", "b200-sxm-180gb", 8);
  small.framework = "megatron";
  small.workload.global_batch = 64;
  small.workload.seq_len = 1024;
  small.workload.model.moe.capacity_factor = 1.0;
  small.parallelism = testing::ExpertLayout(1, 1, 1, 8, Recompute::kNone);
  const double floor = (64.0 / 8) * 48 * host;  // micro-batches x layers x launch time
  absl::StatusOr<Prediction> gpu_only = Predict(small, Catalog::Builtin(), no_host);
  ASSERT_TRUE(gpu_only.ok()) << gpu_only.status();
  const Prediction host_bound = PredictFixed(small, moe_host);
  auto layers_time = [](const Prediction& q) {
    return q.time.compute_s + Comm(q, "ep_alltoall", true);
  };
  EXPECT_LT(layers_time(*gpu_only), floor);
  EXPECT_GE(layers_time(host_bound), floor);
  EXPECT_LT(layers_time(host_bound), 1.05 * floor);  // plus the output layer's time
  // The overlap's staged schedule adds the plan of the one chunk of 48 layers: the same small
  // layers take the launches and the plan instead, and the overlap costs more than it hides.
  small.stack.ep_comm_overlap = true;
  const double chunk = Profile::BuiltinDefault().moe.overlap_chunk_overhead_s;
  ASSERT_GT(chunk, 0);
  const double overlap_floor = (64.0 / 8) * (48 * host + chunk);
  const Prediction staged = PredictFixed(small, moe_host);
  EXPECT_GE(layers_time(staged), overlap_floor);
  EXPECT_LT(layers_time(staged), 1.05 * overlap_floor);
  EXPECT_LT(staged.tokens_per_s_per_gpu, host_bound.tokens_per_s_per_gpu);
}

// The overlap's host cost is a schedule plan a model chunk, not a cost a layer: Megatron-Bridge's
// controlled pair (data/megatron-bridge-cards-2026.csv 8001-8002: Qwen3-30B-A3B on 16 H100 at
// PP 1 and micro-batch 1, the overlap alone switched) ran 15 % faster with it, where the
// interleaved layouts the overlap needs under pipelining (PP 2 with 12 chunks of two layers each,
// 2030 and 2045 of moe.csv) ran slow. The same layers in one chunk carry 1/48 of a plan each; in
// chunks of two, half a plan each.
TEST(MoeTerms, TheOverlapsPlanIsPaidOnceAModelChunk) {
  Scenario s = testing::StudyScenario("qwen3-30b-a3b", "h100-sxm-80gb", 16);
  s.framework = "megatron";
  s.workload.global_batch = 1024;
  s.workload.seq_len = 4096;
  s.workload.model.moe.force_balance = true;
  s.stack.fused_dispatch = true;
  s.stack.ep_comm_overlap = true;
  Profile with = Profile::BuiltinDefault();
  Profile without = with;
  without.moe.overlap_chunk_overhead_s = 0;
  auto step = [&](const Parallelism& layout, const Profile& profile) {
    Scenario c = s;
    c.parallelism = layout;
    return PredictFixed(c, profile).step_time_s;
  };
  auto wait = [&](const Parallelism& layout) { return step(layout, with) - step(layout, without); };
  const Parallelism one_chunk = testing::ExpertLayout(1, 1, 1, 16, Recompute::kNone);
  const Parallelism interleaved = testing::ExpertLayout(1, 2, 12, 8, Recompute::kNone);
  EXPECT_LT(wait(one_chunk), 0.01 * step(one_chunk, with));
  EXPECT_GT(wait(interleaved), 0.05 * step(interleaved, with));
  EXPECT_GT(wait(interleaved), 20 * std::max(0.0, wait(one_chunk)));
}

// In fp8 training the GEMM inputs are saved as their quantized copies (1 byte), and a stack that
// reduces gradients in bf16 holds and sends half the gradient bytes.
TEST(MoeTerms, Fp8SavedInputsAndBf16GradientsShrinkWhatTheyShould) {
  Scenario bf16 = QwenAcrossNodes();
  bf16.workload.precision = Precision::kBf16;
  Scenario fp8 = bf16;
  fp8.workload.precision = Precision::kFp8;
  const Prediction a = PredictFixed(bf16), b = PredictFixed(fp8);
  EXPECT_LT(b.memory.activations_bytes, 0.85 * a.memory.activations_bytes);
  EXPECT_GT(b.memory.activations_bytes, 0.5 * a.memory.activations_bytes);
  EXPECT_EQ(b.memory.gradients_bytes, a.memory.gradients_bytes);
  Scenario halves = bf16;
  halves.stack.bf16_grads = true;
  const Prediction c = PredictFixed(halves);
  EXPECT_NEAR(static_cast<double>(c.memory.gradients_bytes),
              0.5 * static_cast<double>(a.memory.gradients_bytes), 1.0);
  EXPECT_EQ(c.memory.weights_bytes, a.memory.weights_bytes);
  EXPECT_EQ(c.memory.optimizer_bytes, a.memory.optimizer_bytes);
  EXPECT_EQ(c.memory.activations_bytes, a.memory.activations_bytes);
  EXPECT_NEAR(Comm(c, "dp_reducescatter", false), 0.5 * Comm(a, "dp_reducescatter", false),
              0.1 * Comm(a, "dp_reducescatter", false));
  EXPECT_DOUBLE_EQ(Comm(c, "dp_allgather", false), Comm(a, "dp_allgather", false));
}

// Megatron-Core's recompute modules: each frees what it rebuilds and costs its forward again;
// a whole-block module (moe) frees and costs more than one inside it (moe_act); the modules must
// exist in the model and need selective recompute where the framework offers them.
TEST(MoeTerms, RecomputeModulesFreeWhatTheyRebuild) {
  Scenario s = DeepSeek(1024);
  s.parallelism = testing::ExpertLayout(2, 8, 4, 64, Recompute::kNone);
  const Prediction none = PredictFixed(s);
  auto with = [&](uint32_t modules) {
    Scenario t = s;
    t.parallelism.recompute = Recompute::kUnspecified;  // the modules imply selective
    t.parallelism.recompute_modules = modules;
    return PredictFixed(t);
  };
  using M = RecomputeModule;
  const Prediction up = with(Bit(M::kMlaUpProj)), act = with(Bit(M::kMoeAct)),
                   moe = with(Bit(M::kMoe)), both = with(Bit(M::kMlaUpProj) | Bit(M::kMoeAct));
  EXPECT_EQ(up.layout.recompute, Recompute::kSelective);
  EXPECT_EQ(up.layout.recompute_modules, Bit(M::kMlaUpProj));
  for (const Prediction* q : {&up, &act, &moe}) {
    EXPECT_LT(q->memory.activations_bytes, none.memory.activations_bytes);
    EXPECT_GT(q->time.recompute_s, 0);
  }
  EXPECT_DOUBLE_EQ(none.time.recompute_s, 0);
  EXPECT_LT(moe.memory.activations_bytes, act.memory.activations_bytes);
  EXPECT_GT(moe.time.recompute_s, act.time.recompute_s);
  EXPECT_GT(Comm(moe, "ep_alltoall", false), Comm(act, "ep_alltoall", false));  // run again
  // Two modules free and cost what each does alone.
  const double freed = (none.memory.activations_bytes - up.memory.activations_bytes) +
                       (none.memory.activations_bytes - act.memory.activations_bytes);
  EXPECT_NEAR(static_cast<double>(none.memory.activations_bytes - both.memory.activations_bytes),
              freed, 1e-6 * freed);
  EXPECT_NEAR(both.time.recompute_s, up.time.recompute_s + act.time.recompute_s,
              1e-9 + 1e-6 * both.time.recompute_s);

  auto refused = [&](Scenario t) {
    absl::StatusOr<Scenario> r = ResolveScenario(t, Catalog::Builtin());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  Scenario full = s;
  full.parallelism.recompute = Recompute::kFull;
  full.parallelism.recompute_modules = Bit(M::kMoeAct);
  EXPECT_TRUE(absl::StrContains(refused(full), "scenario.parallelism.recompute_modules: need"))
      << refused(full);
  Scenario dense = testing::StudyScenario("llama2-70b", "h100-sxm-80gb", 64);
  dense.framework = "megatron";
  dense.parallelism.recompute_modules = Bit(M::kMlp) | Bit(M::kLayernorm);
  EXPECT_EQ(refused(dense), "");
  dense.parallelism.recompute_modules = Bit(M::kMoeAct);
  EXPECT_TRUE(absl::StrContains(refused(dense), "moe_act needs a mixture-of-experts layer"))
      << refused(dense);
  dense.parallelism.recompute_modules = Bit(M::kMlp);
  // Plain PyTorch (no framework named) checkpoints any module; torchtitan offers whole blocks
  // or its op policy only.
  dense.framework = "";
  EXPECT_EQ(refused(dense), "");
  dense.framework = "torchtitan";
  EXPECT_TRUE(absl::StrContains(refused(dense), "torchtitan does not offer recompute by module"))
      << refused(dense);
}

// Biased experts under Megatron-Core: the second GEMM's bias is added per expert chunk outside
// the grouped GEMM, 24 bytes per routed row and hidden unit (forward and backward) with bf16
// router probabilities and 64 with the fp32 ones a fused dispatcher takes; a framework that adds
// it in the GEMM's epilogue pays nothing, and so does a model without biases.
TEST(MoeTerms, ExpertBiasesCostTheirTrafficWhereTheFrameworkAddsThemOutside) {
  Scenario s = testing::StudyScenario("gpt-oss-120b", "b200-sxm-180gb", 64);
  s.framework = "megatron";
  s.workload.global_batch = 256;
  s.workload.model.moe.force_balance = true;
  s.parallelism = testing::ExpertLayout(1, 1, 1, 8, Recompute::kNone);
  s.parallelism.micro_batch = 4;
  ASSERT_TRUE(Catalog::Builtin().FindModel("gpt-oss-120b")->spec.moe.expert_bias);
  // The preset carries the biases (architecture); the comparison sets them after resolving.
  auto compute = [](Scenario x, bool bias) {
    absl::StatusOr<Scenario> r = ResolveScenario(x, Catalog::Builtin());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0.0;
    r->workload.model.moe.expert_bias = bias;
    absl::StatusOr<Prediction> p = PredictLayout(*r, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->time.compute_s : 0.0;
  };
  const double micro_batches = 256.0 / (64 * 4);
  const double rows = 4 * 4096 * 4;  // tokens x top-k: each GPU's experts' share, balanced
  const double h = 2880, layers = 36;
  const double bytes = micro_batches * layers * rows * h * 24;
  const double bf16 = compute(s, true) - compute(s, false);
  // Bandwidth-bound at the fitted share of B200's 8 TB/s (above half of it).
  EXPECT_GT(bf16, bytes / 8e12);
  EXPECT_LT(bf16, bytes / 4e12);
  Scenario fused = s;
  fused.stack.fused_dispatch = true;
  const double fp32 = compute(fused, true) - compute(fused, false);
  EXPECT_NEAR(fp32 / bf16, 64.0 / 24.0, 1e-6);
  Scenario titan = s;
  titan.framework = "torchtitan";
  titan.parallelism.sharding = Sharding::kFsdp;
  EXPECT_DOUBLE_EQ(compute(titan, true), compute(titan, false));
}

// DeepSeek-V3 trains one multi-token prediction module (the preset's mtp_layers): on one
// pipeline stage it adds one layer and one more pass through the output head, with its
// projection: more than a layer's time, less than three.
TEST(MoeTerms, MultiTokenPredictionAddsALayerAndAHeadPass) {
  ASSERT_EQ(Catalog::Builtin().FindModel("deepseek-v3")->spec.mtp_layers, 1);
  Scenario s = DeepSeek(256);
  s.workload.global_batch = 1024;
  s.workload.model.moe.force_balance = true;
  s.parallelism = testing::ExpertLayout(1, 1, 1, 64, Recompute::kFull);
  auto predict = [](Scenario x, int mtp) {
    absl::StatusOr<Scenario> r = ResolveScenario(x, Catalog::Builtin());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return Prediction{};
    r->workload.model.mtp_layers = mtp;
    absl::StatusOr<Prediction> p = PredictLayout(*r, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Prediction{};
  };
  const Prediction without = predict(s, 0), with = predict(s, 1);
  const double layer = without.time.compute_s / 61;  // an average layer, the head a bit more
  const double extra = with.time.compute_s - without.time.compute_s;
  EXPECT_GT(extra, layer);
  EXPECT_LT(extra, 3 * layer);
  EXPECT_GT(with.memory.weights_bytes, without.memory.weights_bytes);
  // The model's FLOPs (MFU's numerator) do not count the MTP module; the hardware's do.
  EXPECT_NEAR(with.mfu / with.tokens_per_s_per_gpu, without.mfu / without.tokens_per_s_per_gpu,
              1e-12);
  // A request's count is kept over the preset's; out of range is refused by its field.
  s.workload.model.mtp_layers = 99;
  const absl::Status refused = ResolveScenario(s, Catalog::Builtin()).status();
  EXPECT_TRUE(absl::StrContains(refused.message(), "scenario.workload.model.mtp_layers"))
      << refused;
}

// Nemotron 3 Super's latent MoE (moe_latent_size 1024 on a 4096-wide model): its published
// 120B total and 12B active (A12B; without the input embedding, as NVIDIA counts Nano's), within
// 2 %; at the hidden width the same experts would count about 450B.
TEST(MoeLatent, NemotronSuperCountsItsPublishedParameters) {
  const ModelSpec& m = Catalog::Builtin().FindModel("nemotron-3-super-120b")->spec;
  ASSERT_EQ(m.moe.latent_size, 1024);
  const ParamCount p = CountParams(Shape(m));
  EXPECT_NEAR(p.total / 120e9, 1.0, 0.02) << p.total;
  EXPECT_NEAR((p.activated - static_cast<double>(m.vocab) * m.hidden) / 12e9, 1.0, 0.02)
      << p.activated;
  ModelSpec wide = m;
  wide.moe.latent_size = 0;
  EXPECT_GT(CountParams(Shape(wide)).total, 400e9);
  // By hand: a routed expert is 2688 x 1024 twice (plain MLP), the two projections 4096 x 1024.
  const Shape s(m);
  EXPECT_DOUBLE_EQ(s.expert_params, 2.0 * 2688 * 1024);
  EXPECT_DOUBLE_EQ(s.latent_proj_params, 2.0 * 4096 * 1024);
}

// A reasonable layout fits: Megatron-Bridge's 64-H100 Super pretraining recipe
// (recipes/nemotronh/h100/nemotron_3_super.py: tp 1, pp 2, ep 32, micro batch 1, seq 4096,
// selective recompute of layernorm, moe_act, moe and core_attn, the distributed optimizer), and
// the planner's own choice on those GPUs.
TEST(MoeLatent, NemotronSuperFitsOnSixtyFourH100) {
  Scenario s = testing::StudyScenario("nemotron-3-super-120b", "h100-sxm-80gb", 64);
  s.workload.global_batch = 1280;
  s.framework = "megatron";
  absl::StatusOr<Prediction> planned = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_TRUE(planned->memory.fits);
  s.parallelism = testing::ExpertLayout(1, 2, 1, 32, Recompute::kSelective);
  s.parallelism.recompute_modules = Bit(RecomputeModule::kLayernorm) |
                                    Bit(RecomputeModule::kMoeAct) | Bit(RecomputeModule::kMoe) |
                                    Bit(RecomputeModule::kCoreAttn);
  absl::StatusOr<Prediction> recipe = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_TRUE(recipe->memory.fits) << recipe->memory.total_bytes / double(1 << 30) << " GiB";
  EXPECT_GT(recipe->mfu, 0.05);
  EXPECT_LT(recipe->mfu, 0.7);
}

// The latent width moves the experts' GEMMs and the all-to-all volume: with the latent, each
// routed copy crosses the EP group at 1024 wide instead of 4096, and the layer's two projections
// are the only new work.
TEST(MoeLatent, DispatchAndExpertsWorkAtTheLatentWidth) {
  Scenario s = testing::StudyScenario("nemotron-3-super-120b", "h100-sxm-80gb", 64);
  s.workload.seq_len = 8192;
  s.workload.global_batch = 512;
  s.framework = "megatron";
  s.workload.model.moe.force_balance = true;
  s.parallelism = testing::ExpertLayout(1, 1, 1, 64, Recompute::kFull);
  auto predict = [](Scenario x, int latent) {
    absl::StatusOr<Scenario> r = ResolveScenario(x, Catalog::Builtin());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return Prediction{};
    r->workload.model.moe.latent_size = latent;
    absl::StatusOr<Prediction> p = PredictLayout(*r, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Prediction{};
  };
  const Prediction latent = predict(s, 1024), wide = predict(s, 4096);
  int64_t latent_bytes = 0, wide_bytes = 0;
  for (const CommTime& c : latent.time.comm) {
    if (c.kind == "ep_alltoall") latent_bytes = c.bytes_per_gpu;
  }
  for (const CommTime& c : wide.time.comm) {
    if (c.kind == "ep_alltoall") wide_bytes = c.bytes_per_gpu;
  }
  ASSERT_GT(latent_bytes, 0);
  EXPECT_NEAR(static_cast<double>(wide_bytes) / latent_bytes, 4.0, 1e-6);
  EXPECT_LT(latent.time.compute_s, wide.time.compute_s);
  EXPECT_LT(latent.memory.activations_bytes, wide.memory.activations_bytes);
  EXPECT_LT(latent.memory.weights_bytes, wide.memory.weights_bytes);
}

// A GPU holding one expert runs it as one GEMM (Transformer Engine's GroupedLinear with one GEMM
// is a single cuBLAS call): the rows a group loses to the grouping (moe.grouped_gemm_krows)
// leave its compute untouched. A GPU holding two experts pays them, the less the more rows each
// group has (a larger micro-batch).
TEST(MoeTerms, OneLocalExpertRunsAsOneGemm) {
  Scenario s = testing::StudyScenario("mixtral-8x7b", "h100-sxm-80gb", 64);
  s.framework = "megatron";
  s.workload.model.moe.force_balance = true;
  auto compute = [&](int ep, int micro_batch, double krows) {
    Scenario x = s;
    x.parallelism = testing::ExpertLayout(1, 1, 1, ep, Recompute::kFull);
    x.parallelism.micro_batch = micro_batch;
    absl::StatusOr<Scenario> r = ResolveScenario(x, Catalog::Builtin());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0.0;
    Profile profile = Profile::BuiltinDefault();
    profile.moe.grouped_gemm_krows = krows;
    absl::StatusOr<Prediction> p = PredictLayout(*r, Catalog::Builtin(), profile);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->time.compute_s : 0.0;
  };
  EXPECT_DOUBLE_EQ(compute(8, 1, 2.0), compute(8, 1, 0.001));      // 8 experts over 8 ranks
  const double slow1 = compute(4, 1, 2.0) / compute(4, 1, 0.001);  // two a GPU
  const double slow4 = compute(4, 4, 2.0) / compute(4, 4, 0.001);
  EXPECT_GT(slow1, 1.05);
  EXPECT_GT(slow1, slow4);
  EXPECT_GT(slow4, 1.0);
}

// Group-limited routing (DeepSeek-V3: 8 groups, top-4): a token's 8 experts span at most 4 of
// the 8 NVLink domains of an EP group of 64 H100, so a fused dispatcher, which sends a token
// once per remote domain, moves less over the network; the plain all-to-all sends every copy
// either way. The DeepSeek-V3 preset carries it, as both NVIDIA recipes set it.
TEST(MoeRouting, GroupLimitedRoutingBoundsTheDomainsAFusedDispatchCrosses) {
  const ModelSpec& preset = Catalog::Builtin().FindModel("deepseek-v3")->spec;
  EXPECT_EQ(preset.moe.router_groups, 8);
  EXPECT_EQ(preset.moe.router_group_topk, 4);
  Scenario s = DeepSeek(512);
  s.workload.global_batch = 1024;
  s.workload.model.moe.force_balance = true;
  s.parallelism = testing::ExpertLayout(1, 1, 1, 64, Recompute::kFull);
  auto ep_time = [&](bool fused, int groups, int topk) {
    Scenario x = s;
    x.stack.fused_dispatch = fused;
    absl::StatusOr<Scenario> r = ResolveScenario(x, Catalog::Builtin());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0.0;
    r->workload.model.moe.router_groups = groups;
    r->workload.model.moe.router_group_topk = topk;
    absl::StatusOr<Prediction> p = PredictLayout(*r, Catalog::Builtin(), Profile::BuiltinDefault());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? Comm(*p, "ep_alltoall", false) : 0.0;
  };
  EXPECT_LT(ep_time(true, 8, 4), ep_time(true, 0, 0));
  EXPECT_LT(ep_time(true, 8, 2), ep_time(true, 8, 4));
  EXPECT_DOUBLE_EQ(ep_time(true, 8, 8), ep_time(true, 0, 0));  // every group: no limit
  EXPECT_DOUBLE_EQ(ep_time(false, 8, 4), ep_time(false, 0, 0));
  // Checked with the shape: groups divide the experts and hold the top-k.
  Scenario bad = s;
  bad.workload.model.moe.router_groups = 7;
  bad.workload.model.moe.router_group_topk = 4;
  EXPECT_TRUE(absl::StrContains(ResolveScenario(bad, Catalog::Builtin()).status().message(),
                                "scenario.workload.model.moe.router_groups: 7 does not divide"));
  bad.workload.model.moe.router_groups = 64;
  bad.workload.model.moe.router_group_topk = 1;  // 4 experts < top-8
  EXPECT_TRUE(absl::StrContains(ResolveScenario(bad, Catalog::Builtin()).status().message(),
                                "scenario.workload.model.moe.router_group_topk: 1 groups of 4"));
}

TEST(MoeTerms, DenseModelsAreUntouchedByTheExpertAxes) {
  Scenario s = testing::StudyScenario("llama2-7b", "h100-sxm-80gb", 64);
  const Prediction a = PredictFixed(s);
  EXPECT_EQ(a.layout.ep, 1);
  EXPECT_EQ(a.layout.etp, 1);
  for (const CommTime& c : a.time.comm) EXPECT_NE(c.kind, "ep_alltoall");
}

// Every measured run of moe.csv is predicted with the built-in profile, near the 10 % in-sample
// target of the MoE issue, and every layout that ran fits the memory model (scripts/accuracy.sh
// prints the figures).
TEST(MoeAccuracy, EveryRunPredicted) {
  const ValidationReport r = Validate(MoeRuns(), Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_EQ(r.failed_count, 0);
  EXPECT_EQ(r.overall.count, 130);
  // 10.4 % (median 8.5 %) with the built-in profile, fitted on every era's runs (the data/ runs
  // included). The median was 6.4 % before a GPU holding one expert ran it as one GEMM and a
  // grouped GEMM's cost became rows a group (moe.grouped_gemm_krows): the coarse-expert runs
  // (Grok-1, ep 8) moved from slow to fast in sample, and held out the MoE models got better
  // (leave-one-model-out 14.5 -> 12.5 %, median 10.2 -> 8.9 %; scripts/accuracy.sh). The softmax
  // exponentials' bound on attention (AttentionTime) moved the median 8.4 -> 8.5 %.
  EXPECT_LT(r.overall.mape, 0.11);
  EXPECT_LT(r.overall.median_ape, 0.09);
  EXPECT_EQ(r.not_fitting_count, 0);  // every layout that ran fits
}

}  // namespace
}  // namespace scalecast
