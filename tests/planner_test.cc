#include "model/planner.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/step.h"

namespace scalecast {
namespace {

Scenario Open(const char* model, int gpus, int64_t batch) {
  Scenario s;
  s.workload.model.name = model;
  s.workload.seq_len = 4096;
  s.workload.global_batch = batch;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = gpus;
  return *ResolveScenario(s, Catalog::Builtin());
}

TEST(Planner, EveryLayoutDividesEvenlyAndFits) {
  const Scenario s = Open("llama2-13b", 128, 1024);
  PlanOptions o;
  o.top_k = 50;
  absl::StatusOr<PlanResult> r = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->top.size(), 50u);
  for (const Prediction& p : r->top) {
    const Parallelism& l = p.layout;
    EXPECT_EQ(40 % l.tp, 0);
    EXPECT_EQ(l.tp * l.pp * l.cp * l.dp, 128);
    EXPECT_EQ(1024 % (int64_t{l.dp} * l.micro_batch), 0);
    EXPECT_TRUE(p.memory.fits);
  }
  for (size_t i = 1; i < r->top.size(); ++i) {
    EXPECT_GE(r->top[i - 1].tokens_per_s, r->top[i].tokens_per_s);
  }
  EXPECT_GT(r->evaluated_count, 1000);
  EXPECT_GT(r->infeasible_count, 0);
  EXPECT_GT(r->infeasible_reasons.count("does not fit in memory"), 0u);
}

// The layout space lists lazily what a list would hold: stepping and indexing give the same
// layouts in the same order, every one distinct, with the innermost axis (experts) varying
// fastest, while the space holds its axes only.
TEST(Planner, TheLayoutSpaceStepsAndIndexesTheSameLayouts) {
  Scenario s = Open("deepseek-v3", 256, 1024);
  s.framework = "megatron";
  const absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  const LayoutSpace space = EnumerateLayouts(*r, nullptr, Catalog::Builtin(), nullptr);
  ASSERT_GT(space.size(), 10000u);
  auto key = [](const Parallelism& p) {
    return std::vector<int>{p.tp,
                            p.pp,
                            p.vpp,
                            p.cp,
                            p.dp,
                            p.ep,
                            p.etp,
                            static_cast<int>(p.sharding),
                            p.shard_group,
                            p.micro_batch,
                            static_cast<int>(p.recompute),
                            p.recompute_layers,
                            p.cpu_offload_layers,
                            p.sp()};
  };
  std::set<std::vector<int>> seen;
  size_t i = 0;
  for (auto it = space.begin(); it != space.end(); ++it, ++i) {
    const Parallelism stepped = *it;
    ASSERT_EQ(it.index(), i);
    ASSERT_EQ(key(stepped), key(space[i])) << i;
    ASSERT_TRUE(seen.insert(key(stepped)).second) << "layout " << i << " listed twice";
  }
  EXPECT_EQ(i, space.size());
  // Starting mid-way steps on as from the start.
  const size_t mid = space.size() / 3;
  auto it = space.At(mid);
  for (size_t j = mid; j < mid + 500; ++j, ++it) ASSERT_EQ(key(*it), key(space[j])) << j;
  // Experts vary fastest: the first two layouts differ in ep (or etp) only.
  const Parallelism a = space[0], b = space[1];
  EXPECT_TRUE(a.ep != b.ep || a.etp != b.etp);
  EXPECT_EQ(a.micro_batch, b.micro_batch);
  EXPECT_EQ(a.recompute, b.recompute);
  // The axes, not the layouts: a list would take size() x sizeof(Parallelism).
  EXPECT_LT(space.bytes() * 10, space.size() * sizeof(Parallelism)) << space.bytes();
}

// The layer-cost cache changes nothing but the time: every layout of an MoE search (whose
// layouts share layer costs across pp, vpp, dp and sharding) predicts the same with and without
// it, including after the cache filled and started over.
TEST(Planner, LayerCacheGivesTheSamePredictions) {
  Scenario s = Open("deepseek-v3", 256, 1024);
  s.framework = "megatron";
  const absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  const StepModel model(*r, Catalog::Builtin(), Profile::BuiltinDefault());
  const LayoutSpace layouts = EnumerateLayouts(*r, nullptr, Catalog::Builtin(), nullptr);
  ASSERT_GT(layouts.size(), 2 * LayerCache::kMaxEntries);
  LayerCache cache;
  std::set<std::vector<int>> keys;
  for (const Parallelism& p : layouts) {
    const Prediction plain = model.Evaluate(p);
    const Prediction cached = model.Evaluate(p, nullptr, &cache);
    ASSERT_EQ(plain.step_time_s, cached.step_time_s);
    ASSERT_EQ(plain.time.compute_s, cached.time.compute_s);
    ASSERT_EQ(plain.memory.total_bytes, cached.memory.total_bytes);
    keys.insert({p.tp, p.cp, p.ep, p.etp, p.micro_batch, static_cast<int>(p.recompute), p.sp()});
  }
  // Many layouts per layer cost (what makes the cache pay), and more costs than it holds (so it
  // started over at least once above).
  EXPECT_LT(keys.size() * 4, layouts.size()) << keys.size();
  EXPECT_GT(keys.size(), LayerCache::kMaxEntries);
}

// The same for an fp8 Megatron run, whose layer cost depends on the micro-batches a step too
// (Transformer Engine casts the weights once a step): layouts of one layer key but different pp
// or dp must not share a cached cost.
TEST(Planner, LayerCacheKeysTheWeightCastsOfAStep) {
  Scenario s = Open("llama2-70b", 256, 1024);
  s.framework = "megatron";
  s.workload.precision = Precision::kFp8;
  const absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  const StepModel model(*r, Catalog::Builtin(), Profile::BuiltinDefault());
  const LayoutSpace layouts = EnumerateLayouts(*r, nullptr, Catalog::Builtin(), nullptr);
  ASSERT_GT(layouts.size(), 100u);
  LayerCache cache;
  std::set<int> dps;
  for (const Parallelism& p : layouts) {
    const Prediction plain = model.Evaluate(p);
    const Prediction cached = model.Evaluate(p, nullptr, &cache);
    ASSERT_EQ(plain.step_time_s, cached.step_time_s);
    ASSERT_EQ(plain.time.compute_s, cached.time.compute_s);
    dps.insert(plain.layout.dp);
  }
  EXPECT_GT(dps.size(), 2u);
}

TEST(Planner, FixedFieldsAreRespected) {
  Scenario s = Open("llama2-70b", 256, 1024);
  s.parallelism.tp = 8;
  s.parallelism.sharding = Sharding::kFsdp;
  s.parallelism.recompute = Recompute::kFull;
  PlanOptions o;
  o.top_k = 20;
  absl::StatusOr<PlanResult> r = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->top.empty());
  for (const Prediction& p : r->top) {
    EXPECT_EQ(p.layout.tp, 8);
    EXPECT_EQ(p.layout.sharding, Sharding::kFsdp);
    EXPECT_EQ(p.layout.recompute, Recompute::kFull);
  }
}

TEST(Planner, EnergyObjectiveMinimisesJoulesPerToken) {
  const Scenario s = Open("llama2-7b", 64, 512);
  PlanOptions fast, green;
  fast.top_k = 1;
  green.top_k = 200;
  green.objective = Objective::kEnergy;
  auto f = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), fast);
  auto g = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), green);
  ASSERT_TRUE(f.ok() && g.ok());
  EXPECT_LE(g->top.front().power.joules_per_token, f->top.front().power.joules_per_token);
  for (size_t i = 1; i < g->top.size(); ++i) {
    EXPECT_LE(g->top[i - 1].power.joules_per_token, g->top[i].power.joules_per_token);
  }
}

TEST(Planner, ProgressIsReportedAndCancellationStops) {
  const Scenario s = Open("llama2-70b", 2048, 4096);
  PlanOptions o;
  int64_t calls = 0, last_total = 0;
  o.progress_every = 100;
  o.progress = [&](int64_t done, int64_t total) {
    ++calls;
    last_total = total;
    EXPECT_LE(done, total);
    return calls < 5;  // cancel on the fifth report
  };
  absl::StatusOr<PlanResult> r = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(calls, 5);
  EXPECT_GT(last_total, 500);
}

TEST(Planner, OversizedSearchIsRefused) {
  const Scenario s = Open("llama2-70b", 2048, 4096);
  PlanOptions o;
  o.max_layouts = 100;
  EXPECT_EQ(Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(Planner, SplitSearchesMergeToTheSameAnswer) {
  const Scenario s = Open("llama2-13b", 256, 2048);
  PlanOptions o;
  o.top_k = 3;
  auto whole = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o);
  ASSERT_TRUE(whole.ok());
  StepModel model(s, Catalog::Builtin(), Profile::BuiltinDefault());
  const LayoutSpace layouts = EnumerateLayouts(s, nullptr, Catalog::Builtin(), nullptr);
  PlanResult a, b;
  const size_t half = layouts.size() / 2;
  ASSERT_TRUE(EvaluateLayouts(model, layouts, 0, half, o, &a));
  ASSERT_TRUE(EvaluateLayouts(model, layouts, half, layouts.size(), o, &b));
  MergeResults(o, &a, std::move(b));
  ASSERT_EQ(a.top.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(a.top[i].tokens_per_s, whole->top[i].tokens_per_s);
  }
}

}  // namespace
}  // namespace scalecast

namespace scalecast {
namespace {

// A shard group is HSDP's: asked for with the sharding left open, the planner answers HSDP with
// that group (it had answered FSDP and dropped the group).
TEST(Planner, AShardGroupAskedForMeansHsdp) {
  Scenario s = Open("llama3-70b", 64, 256);
  s.framework = "torchtitan";
  s.parallelism.shard_group = 8;
  const absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout.sharding, Sharding::kHsdp);
  EXPECT_EQ(p->layout.shard_group, 8);
}

TEST(Planner, ProposesOnlyWhatTheFrameworkOffers) {
  auto top = [](const char* framework) {
    Scenario s = Open("llama2-70b", 512, 1024);
    s.framework = framework;
    PlanOptions o;
    o.top_k = 200;
    absl::StatusOr<PlanResult> r = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->top : std::vector<Prediction>{};
  };
  for (const Prediction& p : top("composer-fsdp")) {
    EXPECT_EQ(p.layout.tp * p.layout.pp * p.layout.cp, 1);
    EXPECT_NE(p.layout.sharding, Sharding::kZero1);
    EXPECT_TRUE(p.warnings.empty() || p.warnings[0].find("does not offer") == std::string::npos);
  }
  bool megatron_uses_mp = false;
  for (const Prediction& p : top("megatron")) {
    // DDP, the distributed optimizer, or Megatron-FSDP without pipelining.
    EXPECT_TRUE(p.layout.sharding == Sharding::kDdp || p.layout.sharding == Sharding::kZero1 ||
                (p.layout.sharding == Sharding::kFsdp && p.layout.pp == 1));
    megatron_uses_mp |= p.layout.tp * p.layout.pp > 1;
  }
  EXPECT_TRUE(megatron_uses_mp);
  // DeepSpeed: AutoTP (0.16.4 on) beside ZeRO 0-2 only, without sequence parallelism; its
  // pipeline engine with ZeRO-1 at most.
  for (const Prediction& p : top("deepspeed")) {
    if (p.layout.tp > 1) {
      EXPECT_TRUE(p.layout.sharding != Sharding::kFsdp && p.layout.sharding != Sharding::kHsdp);
      EXPECT_FALSE(p.layout.sequence_parallel.value_or(false));
    }
    if (p.layout.pp > 1) {
      EXPECT_TRUE(p.layout.sharding == Sharding::kDdp || p.layout.sharding == Sharding::kZero1);
    }
  }
  // A layout a request fixes gets the planner's rules: one the framework does not offer is
  // refused, naming the field and the reason.
  Scenario fixed = Open("llama2-70b", 512, 1024);
  fixed.framework = "composer-fsdp";
  fixed.parallelism.tp = 8;
  absl::StatusOr<Prediction> p = Predict(fixed, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("scenario.parallelism.tp: composer-fsdp does not offer"),
            absl::string_view::npos)
      << p.status();
}

}  // namespace
}  // namespace scalecast

namespace scalecast {
namespace {

Scenario ResolvedOn(const char* model, const char* accelerator, int gpus, int64_t batch,
                    const char* framework) {
  Scenario s;
  s.workload.model.name = model;
  s.workload.seq_len = 4096;
  s.workload.global_batch = batch;
  s.cluster.accelerator = accelerator;
  s.cluster.num_gpus = gpus;
  s.framework = framework;
  absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : s;
}

constexpr uint32_t kLn = Bit(RecomputeModule::kLayernorm), kCore = Bit(RecomputeModule::kCoreAttn),
                   kMlp = Bit(RecomputeModule::kMlp), kMoe = Bit(RecomputeModule::kMoe),
                   kAct = Bit(RecomputeModule::kMoeAct), kUp = Bit(RecomputeModule::kMlaUpProj);

// The module sets a search tries follow the model's blocks, lightest first in each chain, and
// the last covers the others. A framework whose selective recompute is its own fixed set
// (HAI-LLM), or that has no recompute by module (DeepSpeed), gets none.
TEST(Planner, TheModuleLadderFollowsTheModelsBlocks) {
  auto ladder = [](const char* model, const char* framework) {
    const Scenario s = ResolvedOn(model, "h100-sxm-80gb", 64, 512, framework);
    return RecomputeModuleLadder(MakeLayoutContext(s, 8));
  };
  const std::vector<uint32_t> dense = ladder("llama2-70b", "megatron");
  EXPECT_EQ(dense, (std::vector<uint32_t>{kLn, kLn | kCore, kLn | kMlp, kLn | kMlp | kCore}));
  const std::vector<uint32_t> mla_moe = ladder("deepseek-v3", "megatron");
  EXPECT_EQ(mla_moe, (std::vector<uint32_t>{kLn | kAct, kLn | kAct | kUp, kLn | kAct | kUp | kCore,
                                            kLn | kMlp | kMoe, kLn | kMlp | kMoe | kUp | kCore}));
  for (const std::vector<uint32_t>& l : {dense, mla_moe, ladder("mixtral-8x7b", "")}) {
    ASSERT_FALSE(l.empty());
    for (uint32_t set : l) EXPECT_TRUE(ModulesCover(l.back(), set)) << set;
  }
  EXPECT_TRUE(ModulesCover(kLn | kMoe, kLn | kAct));  // a whole MoE block rebuilds its activation
  EXPECT_FALSE(ModulesCover(kLn | kAct, kLn | kMoe));
  EXPECT_TRUE(ladder("deepseek-v3", "hai-llm").empty());
  EXPECT_TRUE(ladder("llama2-70b", "deepspeed").empty());
}

// Where no recompute fits, the planner recomputes the modules that cost least and fit: on the
// layout it chose, neither any set of the model's modules nor the framework's own selective or
// full recompute predicts faster within the same HBM headroom.
TEST(Planner, NoSetOfModulesBeatsThePlannersRecompute) {
  const Scenario s = ResolvedOn("llama2-13b", "a100-sxm-80gb", 8, 128, "megatron");
  PlanOptions o;
  o.top_k = 1;
  absl::StatusOr<PlanResult> r = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->top.size(), 1u);
  const Prediction& best = r->top.front();
  // The case this test is about: without recompute the layout does not fit.
  EXPECT_EQ(best.layout.recompute, Recompute::kSelective);
  EXPECT_NE(best.layout.recompute_modules, 0u);
  const StepModel model(s, Catalog::Builtin(), Profile::BuiltinDefault());
  const LayoutContext ctx = MakeLayoutContext(s, 8);
  int tried = 0;
  for (uint32_t modules = 0; modules < (1u << kRecomputeModules); ++modules) {
    if (!CheckRecomputeModules(ctx, modules, Recompute::kSelective).empty()) continue;
    for (Recompute kind : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      if (kind != Recompute::kSelective && modules != 0) continue;
      Parallelism p = best.layout;
      p.recompute = kind;
      p.recompute_modules = modules;
      if (!FitsWithHeadroom(model.Memory(p), kDefaultHbmHeadroom)) continue;
      ++tried;
      EXPECT_LE(model.Evaluate(p).tokens_per_s, best.tokens_per_s * (1 + 1e-9))
          << ToString(kind) << " " << RecomputeModulesToString(modules);
    }
  }
  EXPECT_GT(tried, 2);
}

// The search bounds a recompute candidate by its layout without recompute (model/planner.cc
// LayoutWalk::Outclassed): recomputing never makes a layout faster, whatever it recomputes.
TEST(Planner, RecomputeNeverMakesALayoutFaster) {
  for (const Scenario& s : {ResolvedOn("deepseek-v3", "h100-sxm-80gb", 256, 1024, "megatron"),
                            ResolvedOn("llama2-70b", "h100-sxm-80gb", 64, 512, "megatron")}) {
    const StepModel model(s, Catalog::Builtin(), Profile::BuiltinDefault());
    const LayoutSpace layouts = EnumerateLayouts(s, nullptr, Catalog::Builtin(), nullptr);
    ASSERT_FALSE(layouts.module_ladder().empty());
    LayerCache cache;
    int compared = 0;
    for (auto it = layouts.begin(); it != layouts.end(); ++it) {
      const Parallelism none = *it;
      if (none.recompute != Recompute::kNone || none.cpu_offload_layers > 0 ||
          ++compared % 5 != 0) {
        continue;
      }
      const double bound = model.Evaluate(none, nullptr, &cache).tokens_per_s * (1 + 1e-9);
      std::vector<Parallelism> recomputes;
      for (uint32_t modules : layouts.module_ladder()) {
        recomputes.push_back(none);
        recomputes.back().recompute = Recompute::kSelective;
        recomputes.back().recompute_modules = modules;
      }
      recomputes.push_back(none);
      recomputes.back().recompute = Recompute::kSelective;
      recomputes.push_back(none);
      recomputes.back().recompute = Recompute::kFull;
      for (const Parallelism& p : recomputes) {
        ASSERT_LE(model.Evaluate(p, nullptr, &cache).tokens_per_s, bound)
            << s.workload.model.name << " tp" << p.tp << " pp" << p.pp << " ep" << p.ep << " mb"
            << p.micro_batch << " " << ToString(p.recompute) << " "
            << RecomputeModulesToString(p.recompute_modules);
      }
    }
    EXPECT_GT(compared, 100);
  }
}

}  // namespace
}  // namespace scalecast
