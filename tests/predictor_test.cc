#include "model/predictor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/hardware.h"
#include "model/planner.h"
#include "model/profile.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

Scenario Base() {
  Scenario s;
  s.workload.model.name = "llama2-7b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 512;
  s.workload.precision = Precision::kBf16;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 64;
  s.parallelism = testing::DataParallelLayout(Sharding::kFsdp, 2, Recompute::kSelective);
  return s;
}

absl::StatusOr<Prediction> RunModel(const Scenario& s) {
  return Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
}

struct BadCase {
  const char* name;
  void (*mutate)(Scenario*);
  absl::StatusCode code;
  const char* field;
};

TEST(Predictor, MalformedScenariosNameTheirField) {
  const std::vector<BadCase> cases = {
      {"empty model", [](Scenario* s) { s->workload.model = ModelSpec(); },
       absl::StatusCode::kInvalidArgument, "scenario.workload.model"},
      {"unknown preset", [](Scenario* s) { s->workload.model.name = "gpt-9"; },
       absl::StatusCode::kNotFound, "scenario.workload.model.name"},
      {"zero seq", [](Scenario* s) { s->workload.seq_len = 0; }, absl::StatusCode::kInvalidArgument,
       "scenario.workload.seq_len"},
      {"negative batch", [](Scenario* s) { s->workload.global_batch = -4; },
       absl::StatusCode::kInvalidArgument, "scenario.workload.global_batch"},
      {"no accelerator", [](Scenario* s) { s->cluster.accelerator = ""; },
       absl::StatusCode::kInvalidArgument, "scenario.cluster.accelerator"},
      {"unknown accelerator", [](Scenario* s) { s->cluster.accelerator = "h900"; },
       absl::StatusCode::kNotFound, "scenario.cluster.accelerator"},
      {"zero gpus", [](Scenario* s) { s->cluster.num_gpus = 0; },
       absl::StatusCode::kInvalidArgument, "scenario.cluster.num_gpus"},
      {"negative fabric latency", [](Scenario* s) { s->cluster.inter_node_latency_us = -1; },
       absl::StatusCode::kInvalidArgument, "scenario.cluster.inter_node_latency_us"},
      {"absurd gpus", [](Scenario* s) { s->cluster.num_gpus = 2000000000; },
       absl::StatusCode::kInvalidArgument, "scenario.cluster.num_gpus"},
      {"tp not dividing heads", [](Scenario* s) { s->parallelism.tp = 3; },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.tp"},
      {"gpus not divisible",
       [](Scenario* s) {
         s->parallelism.pp = 4;
         s->cluster.num_gpus = 6;
       },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism"},
      {"dp mismatch", [](Scenario* s) { s->parallelism.dp = 8; },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.dp"},
      {"micro batch", [](Scenario* s) { s->parallelism.micro_batch = 3; },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.micro_batch"},
      {"fp8 on A100",
       [](Scenario* s) {
         s->cluster.accelerator = "a100-sxm-80gb";
         s->workload.precision = Precision::kFp8;
       },
       absl::StatusCode::kInvalidArgument, "scenario.workload.precision"},
      {"vpp without pp", [](Scenario* s) { s->parallelism.vpp = 2; },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.vpp"},
      {"pp on a framework without pipelines",  // not a sharding it cannot combine with pp
       [](Scenario* s) {
         s->framework = "composer";
         s->parallelism.pp = 2;
         s->parallelism.vpp = 0;
       },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.pp: composer-fsdp does not offer"},
      {"cp not dividing seq",
       [](Scenario* s) {
         s->workload.seq_len = 4100;
         s->parallelism.cp = 4;
       },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.cp"},
      {"heads not dividing hidden",
       [](Scenario* s) {
         s->workload.model = testing::DenseModel("x", 4, 1000, 3, 0, 4000, Mlp::kGated, 100);
       },
       absl::StatusCode::kInvalidArgument, "scenario.workload.model.heads"},
      {"shard group without hsdp", [](Scenario* s) { s->parallelism.shard_group = 8; },
       absl::StatusCode::kInvalidArgument, "scenario.parallelism.shard_group"},
      {"step graph without graphs",
       [](Scenario* s) {
         s->stack.full_step_graph = true;
         s->stack.cuda_graphs = false;
       },
       absl::StatusCode::kInvalidArgument, "scenario.stack.cuda_graphs"},
      {"fp8 attention in bf16 training", [](Scenario* s) { s->stack.fp8_attention = true; },
       absl::StatusCode::kInvalidArgument, "scenario.stack.fp8_attention"},
  };
  for (const BadCase& c : cases) {
    Scenario s = Base();
    c.mutate(&s);
    absl::StatusOr<Prediction> p = RunModel(s);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.status().code(), c.code) << c.name << ": " << p.status();
    EXPECT_NE(p.status().message().find(c.field), absl::string_view::npos)
        << c.name << ": " << p.status();
  }
}

// What the request's framework and version were read as is said whether the layout is given or
// searched for: the search prices the stack resolved once, notes included, not the completed
// scenario resolved again (whose framework is the table's name by then).
TEST(Predictor, TheStacksNotesSurviveTheLayoutSearch) {
  for (const bool searched : {false, true}) {
    Scenario s = Base();
    s.framework = "llm-foundry";
    s.stack.version = "0.10";
    if (searched) s.parallelism = Parallelism();
    absl::StatusOr<Prediction> p = RunModel(s);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(std::any_of(p->warnings.begin(), p->warnings.end(), [](const std::string& w) {
      return absl::StrContains(w, "llm-foundry 0.10 is its release 0.10 of 2024-07");
    })) << (searched ? "searched" : "given");
    EXPECT_EQ(p->stack.release, "2024.04");
  }
}

TEST(Predictor, PresetAndExplicitShapeAgree) {
  Scenario preset = Base();
  Scenario shape = Base();
  shape.workload.model = Catalog::Builtin().FindModel("llama2-7b")->spec;
  shape.workload.model.name = "my label";
  absl::StatusOr<Prediction> a = RunModel(preset), b = RunModel(shape);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ(a->step_time_s, b->step_time_s);
}

// A preset name plus any shape field set is the preset with that field changed.
TEST(Predictor, PresetWithOverridesIsThePresetWithThoseFieldsChanged) {
  const ModelSpec& llama = Catalog::Builtin().FindModel("llama3-8b")->spec;
  Scenario deeper = Base();
  deeper.workload.model = ModelSpec();
  deeper.workload.model.name = "llama3-8b";
  deeper.workload.model.layers = 40;
  absl::StatusOr<Scenario> r = ResolveScenario(deeper, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  ModelSpec expected = llama;
  expected.layers = 40;
  EXPECT_EQ(r->workload.model.layers, 40);
  EXPECT_EQ(r->workload.model.hidden, llama.hidden);
  EXPECT_EQ(r->workload.model.kv_heads, llama.kv_heads);
  EXPECT_EQ(r->workload.model.vocab, llama.vocab);
  EXPECT_EQ(r->workload.model.ffn_hidden, llama.ffn_hidden);
  EXPECT_EQ(r->workload.model.name, "llama3-8b");
  // It predicts as the same shape given in full: 40/32 of the layers' work.
  Scenario full = Base();
  full.workload.model = expected;
  full.workload.model.name = "llama3-8b, 40 layers";
  absl::StatusOr<Prediction> a = RunModel(deeper), b = RunModel(full),
                             base = RunModel([] {
                               Scenario x = Base();
                               x.workload.model.name = "llama3-8b";
                               return x;
                             }());
  ASSERT_TRUE(a.ok() && b.ok() && base.ok()) << a.status() << b.status() << base.status();
  EXPECT_DOUBLE_EQ(a->step_time_s, b->step_time_s);
  EXPECT_GT(a->step_time_s, base->step_time_s);

  // MoE and MLA presets keep every field the request leaves alone.
  Scenario v3 = Base();
  v3.workload.model = ModelSpec();
  v3.workload.model.name = "deepseek-v3";
  v3.workload.model.vocab = 160000;
  v3.workload.model.moe.experts_per_token = 6;
  r = ResolveScenario(v3, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelSpec& preset = Catalog::Builtin().FindModel("deepseek-v3")->spec;
  EXPECT_EQ(r->workload.model.vocab, 160000);
  EXPECT_EQ(r->workload.model.moe.experts_per_token, 6);
  EXPECT_EQ(r->workload.model.moe.num_experts, preset.moe.num_experts);
  EXPECT_EQ(r->workload.model.mla.kv_lora_rank, preset.mla.kv_lora_rank);
  EXPECT_EQ(r->workload.model.mtp_layers, preset.mtp_layers);
  EXPECT_EQ(r->workload.model.moe.router_groups, preset.moe.router_groups);

  // The changed shape is checked as any shape, naming the field.
  Scenario nano = Base();
  nano.workload.model = ModelSpec();
  nano.workload.model.name = "nemotron-3-nano-30b-a3b";
  nano.workload.model.layers = 60;
  absl::Status st = ResolveScenario(nano, Catalog::Builtin()).status();
  EXPECT_EQ(st.message(),
            "scenario.workload.model.layer_pattern: 52 characters, but layers is 60 (one per "
            "layer)");
  // A name that is no preset is a label: its shape must be complete.
  Scenario label = Base();
  label.workload.model = ModelSpec();
  label.workload.model.name = "my-model";
  label.workload.model.layers = 40;
  st = ResolveScenario(label, Catalog::Builtin()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(st.message(), "scenario.workload.model.hidden")) << st;
}

// The host's fixed work per optimizer step (GlobalParams::step_host_s) and the wait at the
// step's synchronisations for the slowest rank (step_sync_s a doubling of the GPUs) add to every
// step alike, inside the optimizer's share of the breakdown: no wait on one GPU, log2 of the GPUs
// times step_sync_s on more; a large share of a short step (a small model, one micro-batch a
// step), a small one of a long step.
TEST(Predictor, TheHostsWorkAndTheWaitForTheSlowestRankWeighOnShortSteps) {
  Profile with = Profile::BuiltinDefault(), without = with;
  ASSERT_GT(with.global.step_host_s, 1e-4);
  ASSERT_GT(with.global.step_sync_s, 1e-3);
  without.global.step_host_s = 1e-4;
  without.global.step_sync_s = 1e-5;
  auto step = [](const Scenario& s, const Profile& profile) {
    absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), profile);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Prediction{};
  };
  Scenario one = Base();
  one.workload.model.name = "llama2-1b";
  one.cluster.num_gpus = 1;
  one.workload.global_batch = 1;
  one.parallelism = testing::DataParallelLayout(Sharding::kDdp, 1, Recompute::kNone);
  Scenario small = Base();
  small.workload.model.name = "llama2-1b";
  small.workload.global_batch = 64;  // one micro-batch of 1 a GPU
  small.parallelism = testing::DataParallelLayout(Sharding::kFsdp, 1, Recompute::kNone);
  Scenario large = Base();
  large.workload.global_batch = 2048;  // sixteen micro-batches of 2
  const double host = with.global.step_host_s - without.global.step_host_s;
  const double sync = with.global.step_sync_s - without.global.step_sync_s;
  for (const Scenario& s : {one, small, large}) {
    const double added = host + sync * std::log2(s.cluster.num_gpus);
    const Prediction a = step(s, with), b = step(s, without);
    EXPECT_NEAR(a.step_time_s - b.step_time_s, added, 1e-9) << s.cluster.num_gpus;
    EXPECT_NEAR(a.time.optimizer_s - b.time.optimizer_s, added, 1e-9) << s.cluster.num_gpus;
  }
  const double added = host + sync * std::log2(64);
  const double small_share = added / step(small, with).step_time_s;
  const double large_share = added / step(large, with).step_time_s;
  EXPECT_GT(small_share, 0.05);
  EXPECT_LT(large_share, 0.01);
}

// A CUDA graph of the whole step (Stack::full_step_graph: Megatron-Core's full_iteration scope,
// MLPerf's FULL_CUDA_GRAPH) replays the optimizer, clipping and loss reduction without the host:
// the per-step host work leaves the optimizer's time, exactly, and per-kernel graphs are implied.
TEST(Predictor, AWholeStepGraphTakesTheHostsPerStepWorkOff) {
  Scenario s = Base();
  s.stack.cuda_graphs = true;
  absl::StatusOr<Prediction> layers = RunModel(s);
  s.stack.full_step_graph = true;
  absl::StatusOr<Prediction> whole = RunModel(s);
  s.stack.cuda_graphs.reset();  // the step graph implies them
  absl::StatusOr<Prediction> implied = RunModel(s);
  ASSERT_TRUE(layers.ok() && whole.ok() && implied.ok()) << layers.status();
  const GlobalParams& global = Profile::BuiltinDefault().global;
  const double host = global.step_host_s + global.step_sync_s * std::log2(s.cluster.num_gpus);
  ASSERT_GT(host, global.step_host_s);
  EXPECT_NEAR(layers->time.optimizer_s - whole->time.optimizer_s, host, 1e-9);
  EXPECT_NEAR(layers->step_time_s - whole->step_time_s, host, 1e-6);
  EXPECT_TRUE(whole->stack.full_step_graph);
  EXPECT_TRUE(implied->stack.cuda_graphs);
  EXPECT_EQ(implied->step_time_s, whole->step_time_s);
}

// A step compiled as one program (JAX's jitted train step: FrameworkBehaviour::step_is_one_program)
// is dispatched asynchronously and runs without the host: the per-step host work and the wait for
// the slowest rank's host do not reach it, whatever their size, where an eager PyTorch step pays
// both. The small model of NVIDIA's Paxml tables (126M on 64 GPUs, 8,192 tokens a GPU a step)
// is where this shows.
TEST(Predictor, AStepCompiledAsOneProgramHasNoHostOnItsPath) {
  Profile with = Profile::BuiltinDefault(), without = with;
  ASSERT_GT(with.global.step_sync_s, 1e-3);
  without.global.step_host_s = 0;
  without.global.step_sync_s = 0;
  Scenario s = Base();
  s.workload.model.name = "gpt3-125m";
  s.workload.seq_len = 2048;
  s.workload.global_batch = 256;  // 4 sequences a GPU, one micro-batch
  s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 4, Recompute::kNone);
  auto step = [&](const char* framework, const Profile& profile) {
    Scenario f = s;
    f.framework = framework;
    absl::StatusOr<Prediction> p = Predict(f, Catalog::Builtin(), profile);
    EXPECT_TRUE(p.ok()) << framework << ": " << p.status();
    return p.ok() ? p->step_time_s : 0.0;
  };
  for (const char* jax : {"paxml", "maxtext"}) {
    EXPECT_EQ(step(jax, with), step(jax, without)) << jax;
  }
  const double host = with.global.step_host_s + with.global.step_sync_s * std::log2(64);
  EXPECT_NEAR(step("fsdp", with) - step("fsdp", without), host, 1e-9);
  EXPECT_GT(host / step("fsdp", with), 0.05);  // a large share of this short step
}

// The host dispatches an eager layer's operators in GlobalParams::layer_host_s per micro-batch
// while the GPU runs what it queued. A layer whose GPU work is the shorter (GPT-3 125M, one
// sequence of 1,024 tokens a micro-batch, on a slow host) waits for the host: its layers take at
// least the host's time and no more than the host's and the GPU's together. A fused or compiled
// layer dispatches 16 of the eager layer's 52 operators, a graph none; a long layer (32
// sequences) hides the default host entirely.
TEST(Predictor, AnEagerLayerShorterThanItsDispatchWaitsForTheHost) {
  Profile builtin = Profile::BuiltinDefault(), with = builtin, without = builtin;
  ASSERT_GT(builtin.global.layer_host_s, 1e-4);
  const double host = 0.01;  // a slow host: every case below is host-bound
  with.global.layer_host_s = host;
  without.global.layer_host_s = 0;
  Scenario s = Base();
  s.framework = "";  // plain eager PyTorch
  s.workload.model.name = "gpt3-125m";
  s.workload.seq_len = 1024;
  s.cluster.num_gpus = 1;
  s.workload.global_batch = 4;  // four micro-batches of one sequence
  s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 1, Recompute::kNone);
  auto compute = [](const Scenario& x, const Profile& profile) {
    absl::StatusOr<Prediction> p = Predict(x, Catalog::Builtin(), profile);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->time.compute_s : 0.0;
  };
  const double layers = 12, micro_batches = 4;
  struct Case {
    const char* name;
    void (*set)(Scenario*);
    double share;  // of an eager layer's dispatch
  };
  const Case cases[] = {
      {"eager", [](Scenario*) {}, 1.0},
      {"compiled", [](Scenario* x) { x->stack.compiled = true; }, 16.0 / 52},
      {"fused", [](Scenario* x) { x->stack.fused_kernels = true; }, 16.0 / 52},
  };
  for (const Case& c : cases) {
    Scenario x = s;
    c.set(&x);
    const double floor = micro_batches * layers * c.share * host;
    EXPECT_LT(compute(x, without), floor) << c.name;  // the GPU's work alone is shorter
    EXPECT_GE(compute(x, with), floor) << c.name;
    EXPECT_LT(compute(x, with), floor + compute(x, without)) << c.name;
  }
  Scenario graphed = s;
  graphed.stack.cuda_graphs = true;
  EXPECT_DOUBLE_EQ(compute(graphed, with), compute(graphed, without));
  // The default host on the same eager layers: short ones wait, and the prediction says so;
  // long ones do not.
  EXPECT_GT(compute(s, builtin), compute(s, without));
  Scenario long_layers = s;
  long_layers.workload.global_batch = 32;
  long_layers.parallelism.micro_batch = 32;
  EXPECT_DOUBLE_EQ(compute(long_layers, builtin), compute(long_layers, without));
  auto warns = [&](const Scenario& x) {
    absl::StatusOr<Prediction> p = Predict(x, Catalog::Builtin(), builtin);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return false;
    return std::any_of(p->warnings.begin(), p->warnings.end(), [](const std::string& w) {
      return absl::StrContains(w, "waits") && absl::StrContains(w, "for the host");
    });
  };
  EXPECT_TRUE(warns(s));
  EXPECT_FALSE(warns(long_layers));
}

// PyTorch DDP (nanotron's DistributedDataParallel, bucket_cap_mb 25) all-reduces the gradients in
// buckets of 25 MiB of parameters, filled tensor by tensor in backward order across the layers:
// the reduction is one collective per bucket, each paying a latency that on 64 nodes is at least
// a tree's (log2(64) levels and the 7 other GPUs of a node, each way, kAlphaInterS a step).
// Widening the FFN eight columns at a time moves the bytes smoothly; the all-reduce's time
// steps up by at least that latency where the stage fills one more bucket, and by little
// elsewhere. A framework that reduces each layer in one collective (Megatron-LM's DDP here)
// has no such step.
TEST(Predictor, DdpGradientsAreReducedInTorchDdpBuckets) {
  auto allreduce_s = [](const char* framework, int ffn) {
    Scenario s = Base();
    s.framework = framework;
    s.workload.model = ModelSpec();
    s.workload.model.hidden = 1024;
    s.workload.model.heads = 8;
    s.workload.model.layers = 32;
    s.workload.model.ffn_hidden = ffn;
    s.workload.model.mlp = Mlp::kPlain;
    s.workload.model.vocab = 32000;
    s.workload.seq_len = 1024;
    s.cluster.num_gpus = 512;
    s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 1, Recompute::kNone);
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << framework << " ffn " << ffn << ": " << p.status();
    if (!p.ok()) return 0.0;
    for (const CommTime& c : p->time.comm) {
      if (c.kind == "dp_allreduce") return c.total_s;
    }
    ADD_FAILURE() << framework << ": no dp_allreduce";
    return 0.0;
  };
  const double extra_bucket_latency = 2 * (std::log2(64.0) + 7) * kAlphaInterS;
  for (const char* framework : {"nanotron", "megatron"}) {
    std::vector<double> steps;
    double prev = allreduce_s(framework, 4096);
    for (int ffn = 4104; ffn <= 4608; ffn += 8) {
      const double t = allreduce_s(framework, ffn);
      steps.push_back(t - prev);
      prev = t;
    }
    std::sort(steps.begin(), steps.end());
    const double largest = steps.back(), median = steps[steps.size() / 2];
    if (std::string(framework) == "nanotron") {
      EXPECT_GT(largest, extra_bucket_latency) << framework;
      EXPECT_LT(median, 0.1 * largest) << framework;
    } else {
      EXPECT_LT(largest, extra_bucket_latency) << framework;
    }
  }
}

// A cluster that states its fabric's per-step latency (a cloud fabric's, larger than
// InfiniBand's) pays it on the data-parallel collectives that cross nodes: the step grows with it
// at 64 nodes, InfiniBand's stated explicitly is the default, and one node does not see it.
TEST(Predictor, StatedFabricLatencyPricesTheCollectivesAcrossNodes) {
  auto dp_comm = [](int gpus, double latency_us) {
    Scenario s = Base();
    s.framework = "nanotron";
    s.cluster.num_gpus = gpus;
    s.cluster.inter_node_latency_us = latency_us;
    s.parallelism = testing::DataParallelLayout(Sharding::kZero1, 1, Recompute::kNone);
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << gpus << " " << latency_us << ": " << p.status();
    double total = 0;
    if (!p.ok()) return total;
    for (const CommTime& c : p->time.comm) {
      if (absl::StartsWith(c.kind, "dp_")) total += c.total_s;
    }
    return total;
  };
  const double ib = dp_comm(512, 0);
  ASSERT_GT(ib, 0);
  EXPECT_DOUBLE_EQ(dp_comm(512, kAlphaInterS * 1e6), ib);
  EXPECT_GT(dp_comm(512, 41), ib + 511 * (41e-6 - kAlphaInterS));  // at least one ring's steps
  EXPECT_DOUBLE_EQ(dp_comm(8, 41), dp_comm(8, 0));
}

// Megatron's column-parallel layers have reduced their input gradient asynchronously, beside the
// weight-gradient GEMM, since September 2021 (with or without sequence parallelism): the backward's
// TP collectives leave the critical path and the forward's stay on it. Megatron-LM 2.6 (August
// 2021; no sequence parallelism before 22.05) and Megatron-DeepSpeed, which turns the
// asynchronous reduction off under DeepSpeed, keep every TP collective exposed.
TEST(Predictor, MegatronReducesInputGradientsBesideTheWeightGradientGemm) {
  auto tp = [](const char* framework, const char* version, bool sp) {
    Scenario s = Base();
    s.framework = framework;
    s.stack.version = version;
    // Plain data parallelism: Megatron-LM's releases before 2022-06 had no distributed optimizer.
    s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 1, Recompute::kNone);
    s.parallelism.tp = 4;
    s.parallelism.sequence_parallel = sp;
    s.parallelism.dp = s.cluster.num_gpus / 4;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << framework << " " << version << ": " << p.status();
    CommTime out;
    if (!p.ok()) return out;
    for (const CommTime& c : p->time.comm) {
      if (c.kind == "tp") out = c;
    }
    EXPECT_GT(out.total_s, 0) << framework << " " << version;
    return out;
  };
  for (const bool sp : {false, true}) {
    const CommTime async = tp("megatron", "22.05", sp);
    // Per block, with no recompute repeating the forward's: an all-reduce each way, the
    // backward's hidden but for a slowed share; with sequence parallelism an all-gather and a
    // reduce-scatter each way, of which only the backward reduce-scatter is hidden.
    const double hidden_share = sp ? 0.25 : 0.5;
    EXPECT_LT(async.exposed_s, (1 - 0.6 * hidden_share) * async.total_s) << "sp " << sp;
    EXPECT_GT(async.exposed_s, (1 - hidden_share) * async.total_s) << "sp " << sp;
    for (const auto& [framework, version] :
         {std::pair{"megatron", "2.6"}, std::pair{"megatron-deepspeed", "2023.07"}}) {
      if (sp && std::string(framework) == "megatron") continue;
      const CommTime blocking = tp(framework, version, sp);
      EXPECT_DOUBLE_EQ(blocking.exposed_s, blocking.total_s) << framework << " sp " << sp;
    }
  }
}

// Transformer Engine's fp8 dot-product attention runs QK^T and PV at the fp8 rate: the step's
// compute falls, by more where attention is a larger share (longer sequences at the same tokens a
// step), the switch echoes in the resolved stack, and an unfused attention, which has no fp8
// path, is unchanged.
TEST(Predictor, Fp8AttentionRunsTheAttentionCoreAtTheFp8Rate) {
  auto compute = [](Scenario s, bool fp8_attention) {
    s.workload.precision = Precision::kFp8;
    s.stack.fp8_attention = fp8_attention;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return 0.0;
    EXPECT_EQ(p->stack.fp8_attention, fp8_attention);
    return p->time.compute_s;
  };
  Scenario short_seq = Base();
  Scenario long_seq = Base();
  long_seq.workload.seq_len = 4 * short_seq.workload.seq_len;
  long_seq.workload.global_batch = short_seq.workload.global_batch / 4;
  const double short_off = compute(short_seq, false), short_on = compute(short_seq, true);
  const double long_off = compute(long_seq, false), long_on = compute(long_seq, true);
  EXPECT_LT(short_on, short_off);
  EXPECT_GT((long_off - long_on) / long_off, 1.5 * (short_off - short_on) / short_off);
  Scenario unfused = Base();
  unfused.stack.attention_kernel = "math";
  EXPECT_EQ(compute(unfused, true), compute(unfused, false));
  // A Mamba-2 mixer's scan runs in 16 bits: a model of Mamba and MLP layers only has nothing for
  // the switch to speed up.
  Scenario mamba = Base();
  mamba.workload.model = Catalog::Builtin().FindModel("nemotron-3-nano-30b-a3b")->spec;
  mamba.workload.model.name.clear();
  mamba.workload.model.moe = MoeSpec();
  mamba.workload.model.layers = 8;
  mamba.workload.model.layer_pattern = "M-M-M-M-";
  mamba.workload.model.ffn_hidden = 4 * mamba.workload.model.hidden;
  EXPECT_EQ(compute(mamba, true), compute(mamba, false));
}

// Mamba-2's SSD scan runs at its kernels' rate per SM and clock, not at the tensor cores' peak:
// pure Mamba-2 training (1.4B: d_model 2,048, 48 layers, 64 heads of 64, state 128, one group;
// one GPU, 4 x 4,096 tokens, bf16) measured 102.5, 239.2 and 360.4 TFLOP/s on A100, H200 and
// GB200 (state-spaces/mamba issue #904): GB200 1.51 x H200 where its 16-bit peak is 2.53 x, A100
// 0.43 x. A transformer of the same size gains more from Blackwell than the Mamba model does.
TEST(Predictor, MambaScanRunsAtTheSmsRateNotTheTensorPeak) {
  auto tokens = [](const char* accelerator, const std::string& pattern) {
    Scenario s;
    ModelSpec& m = s.workload.model;
    m.layers = 48;
    m.hidden = 2048;
    m.heads = 16;
    m.ffn_hidden = 8192;
    m.vocab = 50280;
    m.layer_pattern = pattern;
    if (pattern.find('M') != std::string::npos) {
      m.mamba_heads = 64;
      m.mamba_head_dim = 64;
      m.mamba_state = 128;
      m.mamba_groups = 1;
    }
    s.workload.seq_len = 4096;
    s.workload.global_batch = 4;
    s.workload.precision = Precision::kBf16;
    s.cluster.accelerator = accelerator;
    s.cluster.num_gpus = 1;
    s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 4, Recompute::kNone);
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << accelerator << ": " << p.status();
    return p.ok() ? p->tokens_per_s_per_gpu : 0.0;
  };
  const std::string mamba(48, 'M');
  const double h200 = tokens("h200-sxm-141gb", mamba);
  const double gb200 = tokens("gb200-nvl72", mamba);
  const double a100 = tokens("a100-sxm-80gb", mamba);
  EXPECT_NEAR(gb200 / h200, 1.51, 0.15);
  EXPECT_NEAR(a100 / h200, 0.43, 0.05);
  std::string transformer;
  for (int i = 0; i < 24; ++i) transformer += "*-";
  EXPECT_GT(tokens("gb200-nvl72", transformer) / tokens("h200-sxm-141gb", transformer),
            1.15 * gb200 / h200);
}

// Autocast over fp32 parameters (Composer's FSDP 'DEFAULT' before 0.13, plain AMP): the
// residual stream and the norms on it carry fp32, each matmul's fp32 input and weight is cast
// on the way in, and FSDP gathers 4-byte parameters. A small model, whose step holds more of
// that memory-bound work, slows more than a large one; the GEMMs keep their bf16 rate.
TEST(Predictor, Fp32ParametersUnderAutocastMoveTheStreamAndTheGathersInFp32) {
  struct Run {
    double compute_s = 0, gather_bytes = 0;
  };
  auto run = [](Scenario s, bool fp32_params) {
    s.stack.fp32_params = fp32_params;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    Run r;
    if (!p.ok()) return r;
    EXPECT_EQ(p->stack.fp32_params, fp32_params);
    r.compute_s = p->time.compute_s;
    for (const CommTime& c : p->time.comm) {
      if (c.kind == "dp_allgather") r.gather_bytes = static_cast<double>(c.bytes_per_gpu);
    }
    return r;
  };
  Scenario large = Base();
  Scenario small = Base();
  small.workload.model = Catalog::Builtin().FindModel("llama2-7b")->spec;
  small.workload.model.name.clear();
  small.workload.model.layers = 12;
  small.workload.model.hidden = 768;
  small.workload.model.heads = small.workload.model.kv_heads = 6;
  small.workload.model.ffn_hidden = 2048;
  const Run large_off = run(large, false), large_on = run(large, true);
  const Run small_off = run(small, false), small_on = run(small, true);
  EXPECT_GT(large_on.compute_s, large_off.compute_s);
  const double large_cost = large_on.compute_s / large_off.compute_s - 1;
  const double small_cost = small_on.compute_s / small_off.compute_s - 1;
  EXPECT_GT(small_cost, large_cost) << small_cost << " vs " << large_cost;
  ASSERT_GT(large_off.gather_bytes, 0);
  EXPECT_NEAR(large_on.gather_bytes / large_off.gather_bytes, 2.0, 1e-6);
  // The releases that ran it: Composer 0.11-0.12's (the MosaicGPT tables), not llm-foundry's.
  auto resolved = [](const char* version) {
    Scenario s = Base();
    s.framework = "composer-fsdp";
    s.stack.version = version;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() && p->stack.fp32_params;
  };
  EXPECT_TRUE(resolved("2023.02"));
  EXPECT_FALSE(resolved("2023.05"));
}

// Hand-fused kernels (TinyLlama's flash-attn layer norm, rotary and cross-entropy; Liger Kernel)
// on a plain PyTorch stack run each norm, activation and rotary chain as one kernel: the step's
// memory-bound work shrinks and the GEMMs keep their time, so the run is faster, and it is
// echoed as resolved. A stack that fuses by default (Megatron) turned off pays the op chains.
TEST(Predictor, HandFusedKernelsRunEachElementwiseChainAsOneKernel) {
  auto run = [](Scenario s, std::optional<bool> fused) {
    s.stack.fused_kernels = fused;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Prediction();
  };
  Scenario plain = Base();
  plain.framework = "fsdp";
  const Prediction eager = run(plain, std::nullopt), fused = run(plain, true);
  EXPECT_FALSE(eager.stack.fused_kernels);
  EXPECT_TRUE(fused.stack.fused_kernels);
  EXPECT_TRUE(fused.stack.FusedLoss());
  EXPECT_LT(fused.time.compute_s, eager.time.compute_s);
  EXPECT_GT(fused.tokens_per_s_per_gpu, eager.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(run(plain, false).time.compute_s, eager.time.compute_s);
  Scenario megatron = Base();
  megatron.framework = "megatron";
  megatron.parallelism.sharding = Sharding::kZero1;
  const Prediction own = run(megatron, std::nullopt), unfused = run(megatron, false);
  EXPECT_TRUE(own.stack.fused_kernels);
  EXPECT_FALSE(unfused.stack.fused_kernels);
  EXPECT_GT(unfused.time.compute_s, own.time.compute_s);
}

// GPT-2's 50,257-word vocabulary is not a whole number of 16-byte vectors: a stack that computes
// on the vocabulary as given runs its output layer's three GEMMs at kUnalignedGemmRate, so the
// vocabulary padded to 50,304 (as nanoGPT trains it) makes the step faster although it adds work.
// A Megatron-family framework pads it itself to a multiple of 128 x TP, torch.compile to the
// alignment: the same for both.
TEST(Predictor, AnUnalignedVocabularySlowsTheOutputLayerUnlessTheFrameworkPadsIt) {
  auto run = [](const std::string& framework, int vocab, bool compiled = false) {
    Scenario s;
    s.workload.model.name = "gpt2";
    s.workload.model.vocab = vocab;
    s.workload.seq_len = 1024;
    s.workload.global_batch = 16;
    s.workload.precision = Precision::kBf16;
    s.cluster.accelerator = "h200-sxm-141gb";
    s.cluster.num_gpus = 1;
    s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 16, Recompute::kNone);
    s.framework = framework;
    s.stack.compiled = compiled;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->time.compute_s : 0.0;
  };
  const double as_given = run("", 50257), padded = run("", 50304);
  EXPECT_GT(as_given, padded * 1.2);
  EXPECT_NEAR(run("megatron", 50257), run("megatron", 50304), 1e-12);
  EXPECT_LT(run("", 50257, true), run("", 50304, true));  // padded to 50,264, not 50,304
}

// Transformer Engine casts a module's weight to fp8 on the first micro-batch of a step and reuses
// it (its `is_first_microbatch` argument, which Megatron-Core passes): at 32 micro-batches a step
// a Megatron fp8 micro-batch saves about 31/32 of the weights' casts against one micro-batch a
// step, beyond what bf16 saves (the host's per-step work and the optimizer amortise alike). A
// stack without that cache (plain PyTorch DDP with fp8) casts every micro-batch again.
TEST(Predictor, MegatronCastsFp8WeightsOncePerStep) {
  auto per_micro_batch = [](Scenario s, Precision precision, int micro_batches) {
    s.workload.precision = precision;
    if (precision == Precision::kBf16) s.stack.fp8_recipe.clear();
    s.workload.global_batch = 64 * micro_batches;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << s.framework << " " << ToString(precision) << ": " << p.status();
    return p.ok() ? p->step_time_s / micro_batches : 0.0;
  };
  auto saved = [&](const Scenario& s, Precision precision) {
    return per_micro_batch(s, precision, 1) - per_micro_batch(s, precision, 32);
  };
  Scenario megatron = Base();
  megatron.framework = "megatron";
  megatron.stack.version = "0.8";  // delayed scaling: 3 B an element cast
  megatron.parallelism = testing::DataParallelLayout(Sharding::kZero1, 1, Recompute::kNone);
  Scenario plain = megatron;
  plain.framework = "fsdp";
  plain.stack.version = "2.4";
  plain.stack.fp8_recipe = "delayed";
  plain.parallelism.sharding = Sharding::kDdp;
  // The weights' casts a micro-batch: forward and the backward's two passes, 3 B an element of
  // llama2-7b's 6.5 B block parameters, through H100's HBM at the profile's efficiency.
  const Profile& profile = Profile::BuiltinDefault();
  const double hbm = Catalog::Builtin().FindAccelerator("h100-sxm-80gb")->hbm_tbps * 1e12 *
                     profile.ForAccelerator("h100").hbm_eff;
  const double casts = 3 * 3 * 6.5e9 / hbm;
  const double cached = saved(megatron, Precision::kFp8) - saved(megatron, Precision::kBf16);
  EXPECT_GT(cached, 0.6 * casts * 31 / 32);
  EXPECT_LT(cached, 1.4 * casts * 31 / 32);
  const double uncached = saved(plain, Precision::kFp8) - saved(plain, Precision::kBf16);
  EXPECT_LT(std::fabs(uncached), 0.2 * casts);
}

TEST(Predictor, OutputsAreConsistent) {
  absl::StatusOr<Prediction> p = RunModel(Base());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout.dp, 64);
  EXPECT_NEAR(p->tokens_per_s, 512.0 * 4096 / p->step_time_s, 1e-6 * p->tokens_per_s);
  EXPECT_NEAR(p->tokens_per_s_per_gpu * 64, p->tokens_per_s, 1e-6 * p->tokens_per_s);
  EXPECT_GT(p->mfu, 0.2);
  EXPECT_LT(p->mfu, 0.8);
  EXPECT_GT(p->hfu, p->mfu);  // selective recompute adds hardware FLOPs
  double parts = p->time.compute_s + p->time.recompute_s + p->time.optimizer_s;
  for (const CommTime& c : p->time.comm) {
    EXPECT_LE(c.exposed_s, c.total_s * 1.3 + 1e-12) << c.kind;
    parts += c.exposed_s;
  }
  EXPECT_NEAR(parts / p->step_time_s, 1.0, 0.01);
  const Accelerator& a = *Catalog::Builtin().FindAccelerator("h100-sxm-80gb");
  EXPECT_GT(p->power.watts_per_gpu, a.idle_w);
  EXPECT_LE(p->power.watts_per_gpu, a.power_limit_w);
  EXPECT_NEAR(p->power.joules_per_token, p->power.watts_per_gpu * 64 / p->tokens_per_s, 1e-9);
  EXPECT_TRUE(p->memory.fits);
  EXPECT_EQ(p->memory.capacity_bytes, int64_t{80} << 30);
}

TEST(Predictor, Fp8IsFasterThanBf16OnHopper) {
  Scenario s = Base();
  absl::StatusOr<Prediction> bf16 = RunModel(s);
  s.workload.precision = Precision::kFp8;
  absl::StatusOr<Prediction> fp8 = RunModel(s);
  ASSERT_TRUE(bf16.ok() && fp8.ok());
  EXPECT_GT(fp8->tokens_per_s, 1.1 * bf16->tokens_per_s);
}

TEST(Predictor, TensorParallelismAcrossTheNvlinkDomainWarns) {
  Scenario s = Base();
  s.workload.model.name = "llama2-70b";
  s.parallelism.tp = 16;
  s.parallelism.sequence_parallel = true;
  s.parallelism.micro_batch = 1;
  absl::StatusOr<Prediction> p = RunModel(s);
  ASSERT_TRUE(p.ok()) << p.status();
  bool warned = false;
  for (const std::string& w : p->warnings) warned |= w.find("NVLink domain") != std::string::npos;
  EXPECT_TRUE(warned);
}

// InfiniBand SHARP (cluster.in_network_reduction) speeds a data-parallel all-reduce where NVLink
// SHARP runs beside it (H100), and changes nothing, with a warning that says why, where it
// cannot (A100: its NVLink switches do not reduce).
TEST(Predictor, InNetworkReductionSpeedsAllReduceOrSaysWhyNot) {
  auto predict = [](const char* accelerator, bool in_network) {
    Scenario s = Base();
    s.workload.model.name = "llama2-1b";
    s.workload.global_batch = 1024;
    s.cluster.accelerator = accelerator;
    s.cluster.num_gpus = 512;
    s.cluster.in_network_reduction = in_network;
    s.parallelism = testing::DataParallelLayout(Sharding::kDdp, 2, Recompute::kNone);
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Prediction();
  };
  auto warned = [](const Prediction& p) {
    bool w = false;
    for (const std::string& x : p.warnings)
      w |= x.find("in_network_reduction") != std::string::npos;
    return w;
  };
  const Prediction h100 = predict("h100-sxm-80gb", false),
                   h100_sharp = predict("h100-sxm-80gb", true);
  EXPECT_LT(h100_sharp.step_time_s, h100.step_time_s);
  EXPECT_FALSE(warned(h100_sharp));
  const Prediction a100 = predict("a100-sxm-80gb", false),
                   a100_sharp = predict("a100-sxm-80gb", true);
  EXPECT_DOUBLE_EQ(a100_sharp.step_time_s, a100.step_time_s);
  EXPECT_TRUE(warned(a100_sharp));
  EXPECT_FALSE(warned(a100));
}

TEST(Predictor, UnsetLayoutIsFilledByThePlanner) {
  Scenario s = Base();
  s.parallelism = Parallelism();
  absl::StatusOr<Prediction> p = RunModel(s);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->layout.tp, 0);
  EXPECT_GT(p->layout.micro_batch, 0);
  EXPECT_NE(p->layout.recompute, Recompute::kUnspecified);
  EXPECT_NE(p->layout.sharding, Sharding::kUnspecified);
  EXPECT_EQ(p->layout.tp * p->layout.pp * p->layout.cp * p->layout.dp, 64);
  // The planner's choice is at least as fast as the hand-picked layout.
  EXPECT_GE(p->tokens_per_s, RunModel(Base())->tokens_per_s);
}

// A global batch that reads as a token count (far beyond any public run's batch, and a whole
// number of sequences if it were tokens) is answered as asked, with a warning that says what
// the field counts; published batches never warn, and resolving twice keeps one copy.
TEST(Predictor, ABatchThatLooksLikeTokensWarns) {
  Scenario s = Base();
  s.parallelism = Parallelism();
  s.workload.global_batch = 4194304;  // "4M tokens", written into the sequences field
  absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->input_warnings.size(), 1u);
  EXPECT_EQ(r->input_warnings[0],
            "scenario.workload.global_batch: 4194304 sequences of 4096 tokens is 17.2 billion "
            "tokens a step, over 16 times the largest batch a public run used; the field counts "
            "sequences: 4194304 tokens would be 1024");
  absl::StatusOr<Scenario> again = ResolveScenario(*r, Catalog::Builtin());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->input_warnings.size(), 1u);
  absl::StatusOr<Prediction> p = RunModel(s);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(std::find(p->warnings.begin(), p->warnings.end(), r->input_warnings[0]),
            p->warnings.end());

  for (int64_t batch : {int64_t{512}, int64_t{16384}, int64_t{4194305}}) {
    s.workload.global_batch = batch;  // published sizes; one no token count divides
    r = ResolveScenario(s, Catalog::Builtin());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->input_warnings.empty()) << batch << ": " << r->input_warnings[0];
  }
}

TEST(Predictor, NothingFitsIsAFailedPreconditionWithReasons) {
  Scenario s = Base();
  s.workload.model.name = "llama3-405b";
  s.cluster.num_gpus = 1;
  s.parallelism = Parallelism();
  absl::StatusOr<Prediction> p = RunModel(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(p.status().message().find("does not fit"), absl::string_view::npos) << p.status();
}

// A run whose tensor and pipeline degrees the caller gives is answered where the memory model
// says no layout of them fits but one needs no more than the model overstates measured runs
// (kMemoryModelOverstatement), flagged as not fitting; the same scenario left to the planner is
// refused, as above, and so is one past what the model overstates.
TEST(Predictor, ALaidOutRunThatTheMemoryModelSaysCannotFitIsAnsweredAndFlagged) {
  Scenario s = Base();
  s.workload.model.name = "llama2-7b";
  s.cluster.num_gpus = 1;
  s.parallelism = Parallelism();
  s.parallelism.tp = 1;
  s.parallelism.pp = 1;
  absl::StatusOr<Prediction> p = RunModel(s);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->memory.fits);
  EXPECT_GT(p->memory.total_bytes, p->memory.capacity_bytes);
  EXPECT_LE(p->memory.total_bytes, kMemoryModelOverstatement * p->memory.capacity_bytes);
  EXPECT_EQ(p->layout.tp, 1);
  EXPECT_EQ(p->layout.pp, 1);
  EXPECT_GT(p->tokens_per_s, 0);
  auto warned = [&](absl::string_view words) {
    return std::any_of(p->warnings.begin(), p->warnings.end(),
                       [&](const std::string& w) { return absl::StrContains(w, words); });
  };
  EXPECT_TRUE(warned("does not fit: ")) << absl::StrJoin(p->warnings, "\n");
  EXPECT_TRUE(warned("no layout with tp=1 pp=1 fits")) << absl::StrJoin(p->warnings, "\n");

  s.parallelism.pp = 0;  // the planner's to choose: nothing fits, so it is refused
  absl::StatusOr<Prediction> open = RunModel(s);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), absl::StatusCode::kFailedPrecondition);

  s.workload.model.name = "llama2-70b";  // some 8x the HBM of one GPU
  s.parallelism.pp = 1;
  absl::StatusOr<Prediction> far = RunModel(s);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(far.status().message(), "does not fit")) << far.status();
}

TEST(Predictor, PowerCapThrottlesTheH100At500W) {
  Scenario s = Base();
  absl::StatusOr<Prediction> full = RunModel(s);
  s.cluster.accelerator = "h100-sxm-96gb-500w";
  absl::StatusOr<Prediction> capped = RunModel(s);
  ASSERT_TRUE(full.ok() && capped.ok());
  EXPECT_LT(capped->tokens_per_s, full->tokens_per_s);
  EXPECT_LE(capped->power.watts_per_gpu, 500);
}

// A TPU slice's chips reach each other over the ICI torus, slices over the data-center network.
// 512 v5e chips as two 256-chip slices (MaxText's multislice: FSDP inside a slice, data parallel
// across) gather and scatter inside each slice exactly as one slice does, and add an all-reduce
// of each chip's 1/256 of the gradients between the two slices, which waits on the DCN's
// 25 Gbps a chip (four times the network, a quarter of its time or less). v5e's power is not
// published, and the prediction says so; v4's is.
TEST(Predictor, TpuSlicesReduceOverTheirInterconnectAndMultisliceCrossesTheNetwork) {
  Scenario one = Base();
  one.framework = "maxtext";
  one.cluster.accelerator = "tpu-v5e";
  one.cluster.num_gpus = 256;
  one.workload.global_batch = 256;
  one.parallelism = testing::DataParallelLayout(Sharding::kFsdp, 1, Recompute::kFull);
  Scenario two = one;
  two.cluster.num_gpus = 512;
  two.workload.global_batch = 512;
  two.parallelism.sharding = Sharding::kHsdp;
  two.parallelism.shard_group = 256;
  Scenario faster = two;
  faster.cluster.inter_node_gbps_per_gpu = 100;
  auto comm = [](const Scenario& s) {
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << p.status();
    std::map<std::string, CommTime> by_kind;
    if (p.ok()) {
      for (const CommTime& c : p->time.comm) by_kind[c.kind] = c;
      EXPECT_TRUE(std::any_of(p->warnings.begin(), p->warnings.end(), [](const std::string& w) {
        return absl::StrContains(w, "tpu-v5e's power is not published");
      }));
    }
    return by_kind;
  };
  std::map<std::string, CommTime> a = comm(one), b = comm(two), c = comm(faster);
  for (const char* kind : {"dp_allgather", "dp_reducescatter"}) {
    ASSERT_EQ(a.count(kind), 1u) << kind;
    ASSERT_EQ(b.count(kind), 1u) << kind;
    EXPECT_EQ(b[kind].ranks, 256) << kind;
    EXPECT_DOUBLE_EQ(b[kind].total_s, a[kind].total_s) << kind;
  }
  EXPECT_EQ(a.count("dp_allreduce"), 0u);
  ASSERT_EQ(b.count("dp_allreduce"), 1u);
  EXPECT_EQ(b["dp_allreduce"].ranks, 2);
  EXPECT_LT(c["dp_allreduce"].total_s, 0.3 * b["dp_allreduce"].total_s);
  one.cluster.accelerator = "tpu-v4";
  absl::StatusOr<Prediction> v4 = RunModel(one);
  ASSERT_TRUE(v4.ok()) << v4.status();
  for (const std::string& w : v4->warnings) EXPECT_FALSE(absl::StrContains(w, "not published"));
}

// PyTorch's pipeline runtime (torch.distributed.pipelining, which a stack the table does not
// know is taken to use) adds FSDP2's gradients up across micro-batches and reduces them once,
// after the last backward: twice the micro-batches move the same gradients, and ZeRO-2 holds
// them whole as ZeRO-1 does. Before FSDP2 was plain PyTorch's FSDP (2.6), FSDP1 reduces every
// micro-batch's under the same pipeline, as does PaddlePaddle's sharding stage 2 under its own.
TEST(Predictor, APlainPyTorchPipelineReducesItsGradientsOnceAStep) {
  struct DataParallelCost {
    CommTime reduce, gather;
    int64_t gradients_bytes = 0;
  };
  auto predict = [](const char* framework, Sharding sharding, int global_batch,
                    const char* version = "") {
    Scenario s = Base();
    s.framework = framework;
    s.stack.version = version;
    s.workload.global_batch = global_batch;
    s.parallelism = testing::DataParallelLayout(sharding, 1, Recompute::kSelective);
    s.parallelism.pp = 4;
    s.parallelism.dp = 16;
    absl::StatusOr<Prediction> p = RunModel(s);
    EXPECT_TRUE(p.ok()) << framework << " " << p.status();
    DataParallelCost out;
    if (!p.ok()) return out;
    for (const CommTime& c : p->time.comm) {
      if (c.kind == "dp_reducescatter") out.reduce = c;
      if (c.kind == "dp_allgather") out.gather = c;
    }
    out.gradients_bytes = p->memory.gradients_bytes;
    EXPECT_GT(out.reduce.total_s, 0) << framework;
    return out;
  };
  for (Sharding sharding : {Sharding::kZero2, Sharding::kFsdp}) {
    const DataParallelCost a = predict("", sharding, 512), b = predict("", sharding, 1024);
    EXPECT_NEAR(b.reduce.total_s, a.reduce.total_s, 1e-9 * a.reduce.total_s);
    EXPECT_EQ(b.reduce.bytes_per_gpu, a.reduce.bytes_per_gpu);
    EXPECT_NEAR(b.gather.total_s, a.gather.total_s, 1e-9 * a.gather.total_s);
  }
  const DataParallelCost zero1 = predict("", Sharding::kZero1, 512),
                         zero2 = predict("", Sharding::kZero2, 512);
  EXPECT_EQ(zero2.gradients_bytes, zero1.gradients_bytes);
  EXPECT_NEAR(zero2.reduce.total_s, zero1.reduce.total_s, 1e-9 * zero1.reduce.total_s);
  const DataParallelCost paddle = predict("paddlepaddle", Sharding::kZero2, 512),
                         paddle2 = predict("paddlepaddle", Sharding::kZero2, 1024);
  EXPECT_NEAR(paddle2.reduce.total_s, 2 * paddle.reduce.total_s, 1e-9 * paddle.reduce.total_s);
  EXPECT_LT(paddle.gradients_bytes, zero2.gradients_bytes);
  for (Sharding sharding : {Sharding::kZero2, Sharding::kFsdp}) {
    const DataParallelCost a = predict("", sharding, 512, "2.5"),
                           b = predict("", sharding, 1024, "2.5");
    EXPECT_NEAR(b.reduce.total_s, 2 * a.reduce.total_s, 1e-9 * a.reduce.total_s);
  }
}

}  // namespace
}  // namespace scalecast

namespace scalecast {
namespace {

TEST(Predictor, AbsurdButValidSizesDoNotOverflow) {
  Scenario s;
  s.workload.model =
      testing::DenseModel("huge", 4096, 1 << 20, 16384, 0, 1 << 22, Mlp::kGated, 1 << 24);
  s.workload.seq_len = kMaxSeqLen;
  s.workload.global_batch = kMaxGlobalBatch;
  s.cluster.accelerator = "gb300-nvl72";
  s.cluster.num_gpus = 1024;
  s.parallelism = {.tp = 16,
                   .pp = 64,
                   .vpp = 1,
                   .cp = 1,
                   .dp = 0,
                   .sharding = Sharding::kFsdp,
                   .shard_group = 0,
                   .micro_batch = 1,
                   .recompute = Recompute::kFull,
                   .sequence_parallel = true};
  absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->memory.fits);
  EXPECT_GT(p->memory.total_bytes, 0);
  EXPECT_GT(p->step_time_s, 0);
  EXPECT_TRUE(std::isfinite(p->tokens_per_s));
}

}  // namespace
}  // namespace scalecast

namespace scalecast {
namespace {

// Resolving once carries what the resolution found; errors name fields under the caller's path.
TEST(Predictor, ResolveOnceCarriesTheAcceleratorAndStackAndNamesTheCallersPath) {
  Scenario s = Base();
  s.cluster.accelerator = "H100-SXM-80GB";
  s.framework = "megatron";
  absl::StatusOr<ResolvedScenario> r = Resolve(s, Catalog::Builtin(), "scenarios[2]");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_NE(r->accelerator, nullptr);
  EXPECT_EQ(r->accelerator->id, "h100-sxm-80gb");
  EXPECT_EQ(r->scenario.cluster.accelerator, "h100-sxm-80gb");
  ASSERT_NE(r->framework, nullptr);
  EXPECT_EQ(r->framework->name, "megatron");
  EXPECT_EQ(r->stack.fp8_recipe, Fp8Recipe::kNone);  // bf16: no recipe
  // The same prediction as from the scenario itself.
  absl::StatusOr<Prediction> once = Predict(*r, Catalog::Builtin(), Profile::BuiltinDefault());
  absl::StatusOr<Prediction> again = RunModel(s);
  ASSERT_TRUE(once.ok() && again.ok());
  EXPECT_EQ(once->tokens_per_s, again->tokens_per_s);
  EXPECT_EQ(once->memory.total_bytes, again->memory.total_bytes);

  s.parallelism.tp = 3;
  r = Resolve(s, Catalog::Builtin(), "scenarios[2]");
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "scenarios[2].parallelism.tp: "))
      << r.status();
  s = Base();
  s.stack.fp8_recipe = "mxfp8";
  r = Resolve(s, Catalog::Builtin(), "base");
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "base.stack.fp8_recipe: ")) << r.status();
  s = Base();
  s.cluster.accelerator = "h900";
  r = Resolve(s, Catalog::Builtin(), "base");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "base.cluster.accelerator: ")) << r.status();
  // The default path is "scenario", as ResolveScenario's.
  EXPECT_TRUE(absl::StartsWith(ResolveScenario(s, Catalog::Builtin()).status().message(),
                               "scenario.cluster.accelerator: "));
}

// A framework the table does not know is answered as the generic stack (plain eager PyTorch)
// with a warning naming the field and the known frameworks: the same prediction as naming none,
// its own version numbering dropped, a dated version kept.
TEST(Predictor, AnUnknownFrameworkIsPricedAsPlainPytorchWithAWarning) {
  auto warned = [](const Prediction& p, absl::string_view what) {
    for (const std::string& w : p.warnings) {
      if (absl::StrContains(w, what)) return true;
    }
    return false;
  };
  Scenario generic = Base();
  generic.framework = "";
  Scenario unknown = Base();
  unknown.framework = "jaxformer";
  unknown.stack.version = "0.3.1";
  absl::StatusOr<ResolvedScenario> r = Resolve(unknown, Catalog::Builtin(), "scenarios[1]");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->framework, &GenericFramework());
  EXPECT_EQ(r->scenario.framework, "jaxformer");  // as asked: resent, it warns again
  EXPECT_EQ(r->scenario.stack.version, "");       // its own numbering is not PyTorch's
  absl::StatusOr<Prediction> a = RunModel(unknown), b = RunModel(generic);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->tokens_per_s, b->tokens_per_s);
  EXPECT_EQ(a->uncertainty.low, b->uncertainty.low);
  EXPECT_TRUE(warned(*a, "scenario.framework: 'jaxformer' is not in the framework table (known: "))
      << (a->warnings.empty() ? "" : a->warnings[0]);
  EXPECT_TRUE(warned(*a, "megatron"));
  EXPECT_TRUE(warned(*a, "its version '0.3.1' is in its own numbering"));
  EXPECT_FALSE(warned(*b, "framework table"));
  // A dated version dates the libraries, as it would for plain PyTorch.
  unknown.stack.version = "23.03";
  generic.stack.version = "23.03";
  r = Resolve(unknown, Catalog::Builtin(), "scenario");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stack.release, "2.0");
  a = RunModel(unknown);
  b = RunModel(generic);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens_per_s, b->tokens_per_s);
  EXPECT_FALSE(warned(*a, "own numbering"));
}

}  // namespace
}  // namespace scalecast
