#include "jobs/plan_job.h"

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/limits.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/profile.h"

namespace scalecast {
namespace {

PlanJobRequest Request(const char* model, int seq, int64_t batch, double tokens) {
  PlanJobRequest r;
  r.base.workload.model.name = model;
  r.base.workload.seq_len = seq;
  r.base.workload.global_batch = batch;
  r.tokens = tokens;
  return r;
}

PlanCandidateSpec Candidate(const char* acc, double price, std::vector<int> counts = {}) {
  PlanCandidateSpec c;
  c.accelerator = acc;
  c.price_per_gpu_hour = price;
  c.gpu_counts = std::move(counts);
  return c;
}

absl::StatusOr<PlanJobResult> Plan(const PlanJobRequest& r, JobControl control = {}) {
  return RunPlan(r, Catalog::Builtin(), Profile::BuiltinDefault(), control);
}

TEST(PlanJob, DaysGpuHoursEnergyAndCostFollowFromThePrediction) {
  PlanJobRequest r = Request("llama2-7b", 4096, 0, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2.5, {8, 64, 256}),
                  Candidate("a100-sxm-80gb", 1.5, {16, 128})};
  r.electricity_price_per_kwh = 0.1;
  r.pue = 1.25;
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->options.size(), 5u);  // top_k 0: every count
  EXPECT_TRUE(res->ranked_by_cost);
  for (const PlanJobOption& o : res->options) {
    const double price = o.accelerator == "h100-sxm-80gb" ? 2.5 : 1.5;
    EXPECT_NEAR(o.days, 1e12 / o.prediction.tokens_per_s / o.goodput.goodput / 86400,
                1e-9 * o.days);
    EXPECT_DOUBLE_EQ(o.gpu_hours, o.days * 24 * o.num_gpus);
    EXPECT_NEAR(o.energy_mwh, o.prediction.power.cluster_kw * 1.25 * o.days * 24 / 1000,
                1e-9 * o.energy_mwh);
    EXPECT_NEAR(o.cost, o.gpu_hours * price + o.energy_mwh * 1000 * 0.1, 1e-9 * o.cost);
    EXPECT_EQ(o.scenario.cluster.num_gpus, o.num_gpus);
    EXPECT_GT(o.scenario.workload.global_batch, 0);
    EXPECT_LE(o.scenario.workload.global_batch * 4096, int64_t{4} << 20);
    EXPECT_TRUE(o.top);
  }
  for (size_t i = 1; i < res->options.size(); ++i) {
    EXPECT_LE(res->options[i - 1].cost, res->options[i].cost);
  }
  EXPECT_EQ(res->bound_violations, 0);
}

// A candidate's fabric (its per-step latency across nodes) reaches the scenarios the plan
// prices: the same GPUs on a slower fabric take longer, and the option says which it assumed.
TEST(PlanJob, CandidateFabricLatencyReachesItsScenarios) {
  PlanJobRequest r = Request("llama2-7b", 4096, 0, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2.5, {512})};
  PlanJobRequest slow = r;
  slow.candidates[0].inter_node_latency_us = 41;
  const absl::StatusOr<PlanJobResult> a = Plan(r), b = Plan(slow);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->options.size(), 1u);
  ASSERT_EQ(b->options.size(), 1u);
  EXPECT_EQ(b->options[0].scenario.cluster.inter_node_latency_us, 41);
  EXPECT_GT(b->options[0].days, a->options[0].days);
}

TEST(PlanJob, GoodputFallsWithTheGpuCount) {
  PlanJobRequest r = Request("llama2-7b", 4096, 1024, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 0, {8, 32, 128, 512})};
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  std::map<int, double> goodput;
  for (const PlanJobOption& o : res->options) goodput[o.num_gpus] = o.goodput.goodput;
  ASSERT_EQ(goodput.size(), 4u);
  double previous = 1;
  for (const auto& [g, gp] : goodput) {
    EXPECT_LT(gp, previous) << g;
    previous = gp;
  }
  EXPECT_FALSE(res->ranked_by_cost);  // no price: GPU-hours rank
}

TEST(PlanJob, ConstraintsAreRespected) {
  PlanJobRequest r = Request("llama2-13b", 4096, 0, 2e12);
  r.candidates = {Candidate("h100-sxm-80gb", 3, {16, 64, 256, 1024}),
                  Candidate("a100-sxm-80gb", 1.8, {16, 64, 256, 1024})};
  r.constraints.deadline_days = 30;
  r.constraints.max_gpus = 512;
  r.constraints.budget = 2.5e6;
  r.constraints.max_power_kw = 800;
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  int meeting = 0;
  for (const PlanJobOption& o : res->options) {
    const bool ok = o.days <= 30 && o.num_gpus <= 512 && o.cost <= 2.5e6 && o.facility_kw <= 800;
    EXPECT_EQ(o.meets_constraints, ok) << o.accelerator << " " << o.num_gpus;
    EXPECT_EQ(o.violations.empty(), ok);
    meeting += ok;
  }
  ASSERT_GT(meeting, 0);
  // Options meeting the constraints rank first.
  bool seen_failing = false;
  for (const PlanJobOption& o : res->options) {
    if (!o.meets_constraints) seen_failing = true;
    EXPECT_FALSE(seen_failing && o.meets_constraints);
  }
  // The smallest cluster per candidate that meets them: none smaller does.
  for (const PlanJobOption& o : res->options) {
    if (!o.smallest) continue;
    EXPECT_TRUE(o.meets_constraints);
    for (const PlanJobOption& q : res->options) {
      if (q.candidate == o.candidate && q.num_gpus < o.num_gpus) {
        EXPECT_FALSE(q.meets_constraints);
      }
    }
  }
}

TEST(PlanJob, DoublingsAndParetoFront) {
  PlanJobRequest r = Request("llama2-7b", 4096, 0, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2.5, {16, 32, 64, 128}),
                  Candidate("h200-sxm-141gb", 3.5, {16, 32, 64, 128})};
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  std::map<std::pair<int, int>, const PlanJobOption*> by;
  for (const PlanJobOption& o : res->options) by[{o.candidate, o.num_gpus}] = &o;
  ASSERT_EQ(res->doublings.size(), 6u);
  for (const PlanDoubling& d : res->doublings) {
    const PlanJobOption* a = by[{d.candidate, d.from_gpus}];
    const PlanJobOption* b = by[{d.candidate, d.to_gpus}];
    EXPECT_EQ(d.to_gpus, 2 * d.from_gpus);
    EXPECT_DOUBLE_EQ(d.speedup, a->days / b->days);
    EXPECT_DOUBLE_EQ(d.extra_cost, b->cost - a->cost);
  }
  int front = 0;
  for (const PlanJobOption& o : res->options) {
    bool dominated = false;
    for (const PlanJobOption& q : res->options) {
      dominated |= q.days <= o.days && q.cost <= o.cost && (q.days < o.days || q.cost < o.cost);
    }
    EXPECT_EQ(o.pareto, !dominated);
    front += o.pareto;
  }
  EXPECT_GT(front, 0);
}

// The pruned search (bounds on layouts and on GPU counts) returns the exhaustive search's top k,
// Pareto front and smallest clusters, on random scenarios.
TEST(PlanJob, PrunedSearchEqualsExhaustiveOnRandomScenarios) {
  std::mt19937 rng(20261201);
  const std::vector<const char*> models = {"llama2-7b", "llama3-8b", "llama2-13b", "mpt-7b"};
  const std::vector<const char*> accs = {"h100-sxm-80gb", "a100-sxm-80gb", "h200-sxm-141gb",
                                         "b200-sxm-180gb", "a100-sxm-40gb"};
  int rows_skipped = 0, layouts_saved = 0;
  for (int trial = 0; trial < 12; ++trial) {
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    PlanJobRequest r = Request(models[pick(models.size())], pick(2) ? 2048 : 4096,
                               pick(3) == 0 ? 256 : 0, 1e11 * (1 + pick(50)));
    r.constraints.max_global_batch_tokens = int64_t{1} << (20 + pick(3));
    const int n_acc = 1 + pick(3);
    std::set<int> used;
    while (static_cast<int>(r.candidates.size()) < n_acc) {
      const int a = pick(accs.size());
      if (!used.insert(a).second) continue;
      std::vector<int> counts;
      for (int g = 8; g <= 512; g *= 2) {
        if (pick(3) != 0) counts.push_back(g);
      }
      if (counts.empty()) counts.push_back(64);
      r.candidates.push_back(Candidate(accs[a], pick(4) == 0 ? 0 : 1 + pick(4), counts));
    }
    if (pick(2)) r.constraints.deadline_days = 5 + pick(60);
    if (pick(3) == 0) r.constraints.budget = 1e5 * (1 + pick(20));
    r.top_k = 1 + pick(5);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " model "
                                      << r.base.workload.model.name << " top_k " << r.top_k);
    PlanJobRequest ex = r;
    ex.exhaustive = true;
    const absl::StatusOr<PlanJobResult> a = Plan(r);
    const absl::StatusOr<PlanJobResult> b = Plan(ex);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(a->bound_violations, 0);
    EXPECT_EQ(b->bound_violations, 0);
    auto summary = [](const PlanJobResult& res, bool PlanJobOption::*flag) {
      std::vector<std::tuple<int, int, double>> out;
      for (const PlanJobOption& o : res.options) {
        if (o.*flag) out.emplace_back(o.candidate, o.num_gpus, o.prediction.tokens_per_s);
      }
      return out;
    };
    for (bool PlanJobOption::*flag :
         {&PlanJobOption::top, &PlanJobOption::pareto, &PlanJobOption::smallest}) {
      const auto x = summary(*a, flag), y = summary(*b, flag);
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(std::get<0>(x[i]), std::get<0>(y[i]));
        EXPECT_EQ(std::get<1>(x[i]), std::get<1>(y[i]));
        EXPECT_NEAR(std::get<2>(x[i]), std::get<2>(y[i]), 1e-9 * std::get<2>(y[i]));
      }
    }
    rows_skipped += static_cast<int>(a->gpu_counts_total - a->gpu_counts_evaluated);
    layouts_saved += static_cast<int>(b->layouts_evaluated - a->layouts_evaluated);
  }
  // The bounds prune: some counts skipped whole, many layouts never evaluated.
  EXPECT_GT(rows_skipped, 0);
  EXPECT_GT(layouts_saved, 0);
}

// The same on a mixture-of-experts model, whose bound includes the exposed expert all-to-alls.
TEST(PlanJob, PrunedSearchEqualsExhaustiveOnAnMoeModel) {
  PlanJobRequest r = Request("mixtral-8x7b", 4096, 0, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2.5, {16, 64}),
                  Candidate("h200-sxm-141gb", 3.5, {32})};
  r.top_k = 2;
  PlanJobRequest ex = r;
  ex.exhaustive = true;
  const absl::StatusOr<PlanJobResult> a = Plan(r), b = Plan(ex);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->bound_violations, 0);
  EXPECT_EQ(b->bound_violations, 0);
  ASSERT_EQ(a->options.size(), b->options.size());
  for (size_t i = 0; i < a->options.size(); ++i) {
    EXPECT_EQ(a->options[i].num_gpus, b->options[i].num_gpus);
    EXPECT_NEAR(a->options[i].prediction.tokens_per_s, b->options[i].prediction.tokens_per_s,
                1e-9 * b->options[i].prediction.tokens_per_s);
  }
  EXPECT_LT(a->layouts_evaluated, b->layouts_evaluated);
}

// At a GPU count and batch, the plan's option is the planner's best layout (the one Predict and
// Sweep choose): the same recompute choices, module sets of the ladder included. Each scenario
// is one where the best recomputes some modules (checked), which the plan job once could not.
TEST(PlanJob, AnOptionIsThePlannersBestLayout) {
  struct Case {
    const char* model;
    const char* accelerator;
    int gpus;
    int64_t batch;
    const char* framework;
  };
  for (const Case& c : {Case{"llama2-13b", "a100-sxm-80gb", 8, 128, "megatron"},
                        Case{"llama2-70b", "h100-sxm-80gb", 512, 1024, ""},
                        Case{"deepseek-v2-lite", "h100-sxm-80gb", 8, 256, "megatron"}}) {
    SCOPED_TRACE(::testing::Message() << c.model << " on " << c.gpus << " " << c.accelerator);
    PlanJobRequest r = Request(c.model, 4096, c.batch, 1e12);
    r.base.framework = c.framework;
    r.candidates = {Candidate(c.accelerator, 2, {c.gpus})};
    r.top_k = 1;
    const absl::StatusOr<PlanJobResult> plan = Plan(r);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->options.size(), 1u);
    EXPECT_EQ(plan->bound_violations, 0);
    const Prediction& option = plan->options.front().prediction;

    Scenario s = r.base;
    s.cluster.accelerator = c.accelerator;
    s.cluster.num_gpus = c.gpus;
    const absl::StatusOr<Scenario> resolved = ResolveScenario(s, Catalog::Builtin());
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    PlanOptions o;
    o.top_k = 1;
    const absl::StatusOr<PlanResult> best =
        scalecast::Plan(*resolved, Catalog::Builtin(), Profile::BuiltinDefault(), o);
    ASSERT_TRUE(best.ok()) << best.status();
    ASSERT_EQ(best->top.size(), 1u);
    EXPECT_NE(best->top.front().layout.recompute_modules, 0u);
    EXPECT_NEAR(option.tokens_per_s, best->top.front().tokens_per_s,
                1e-9 * best->top.front().tokens_per_s);
    EXPECT_EQ(option.layout.recompute_modules, best->top.front().layout.recompute_modules);
  }
}

// The plan job searches what the request's release could run: asked of Megatron-LM 2021.04, a
// plan of GPT-3 175B on A100 at any count uses neither the distributed optimizer (2022-06), nor
// FSDP, nor sequence parallelism (2022-05), nor CPU offloading or recompute by module; asked of
// today's Megatron-Core the same plan may.
TEST(PlanJob, TheLayoutsSearchedAreThoseOfTheRequestsRelease) {
  PlanJobRequest r = Request("gpt3-175b", 2048, 1536, 3e11);
  r.base.framework = "megatron";
  r.base.stack.version = "2021.04";
  r.candidates = {Candidate("a100-sxm-80gb", 2, {512, 1024})};
  r.top_k = 2;
  const absl::StatusOr<PlanJobResult> plan = Plan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_FALSE(plan->options.empty());
  for (const PlanJobOption& o : plan->options) {
    const Parallelism& p = o.prediction.layout;
    EXPECT_EQ(p.sharding, Sharding::kDdp) << o.num_gpus;
    EXPECT_FALSE(p.sequence_parallel.value_or(false));
    EXPECT_EQ(p.cpu_offload_layers, 0);
    EXPECT_EQ(p.recompute_modules, 0u);
    EXPECT_EQ(p.cp, 1);
  }
  r.base.stack.version.clear();
  const absl::StatusOr<PlanJobResult> today = Plan(r);
  ASSERT_TRUE(today.ok()) << today.status();
  bool newer = false;
  for (const PlanJobOption& o : today->options) {
    const Parallelism& p = o.prediction.layout;
    newer |= p.sharding != Sharding::kDdp || p.sequence_parallel.value_or(false) ||
             p.cpu_offload_layers > 0 || p.recompute_modules != 0;
  }
  EXPECT_TRUE(newer);
}

TEST(PlanJob, SearchedCountsArePowersOfTwoAndNvlinkDomainMultiples) {
  const Accelerator* gb = Catalog::Builtin().FindAccelerator("gb200-nvl72");
  ASSERT_NE(gb, nullptr);
  const std::vector<int> counts = SearchedGpuCounts(*gb, 0, 1024);
  EXPECT_EQ(counts, (std::vector<int>{8, 16, 32, 64, 72, 128, 144, 256, 288, 512, 576, 1024}));
  const Accelerator* h = Catalog::Builtin().FindAccelerator("h100-sxm-80gb");
  EXPECT_EQ(SearchedGpuCounts(*h, 0, 100), (std::vector<int>{8, 16, 32, 64}));
}

TEST(PlanJob, BadRequestsNameTheField) {
  auto err = [](PlanJobRequest r) { return std::string(Plan(r).status().message()); };
  PlanJobRequest ok = Request("llama2-7b", 4096, 512, 1e12);
  ok.candidates = {Candidate("h100-sxm-80gb", 2, {64})};
  ASSERT_TRUE(Plan(ok).ok());
  PlanJobRequest r = ok;
  r.tokens = 0;
  EXPECT_EQ(err(r).rfind("tokens: ", 0), 0u) << err(r);
  r = ok;
  r.candidates.push_back(Candidate("no-such-gpu", 1));
  EXPECT_EQ(err(r).rfind("candidates[1].accelerator: ", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].gpu_counts = {64, 0};
  EXPECT_EQ(err(r).rfind("candidates[0].gpu_counts[1]: ", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].price_per_gpu_hour = -1;
  EXPECT_EQ(err(r).rfind("candidates[0].price_per_gpu_hour: ", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].inter_node_latency_us = -1;
  EXPECT_EQ(err(r).rfind("candidates[0].inter_node_latency_us: ", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].inter_node_latency_us = std::nan("");
  EXPECT_EQ(err(r).rfind("candidates[0].inter_node_latency_us: ", 0), 0u) << err(r);
  // A candidate's cluster fields take Cluster's ranges from the proto (gpus_per_node 0-1024).
  r = ok;
  r.candidates[0].gpus_per_node = 2048;
  EXPECT_EQ(err(r), "candidates[0].gpus_per_node: 2048 is out of range [0, 1024]");
  r = ok;
  r.pue = 0.5;
  EXPECT_EQ(err(r).rfind("pue: ", 0), 0u) << err(r);
  r = ok;
  r.reliability.restart_s = std::nan("");
  EXPECT_EQ(err(r).rfind("reliability.restart_s: ", 0), 0u) << err(r);
  // The request's own ranges are the proto's (PlanRequest's field options), named by path; what
  // one interval cannot say (pue 0 or at least 1, max_gpus up to Cluster.num_gpus's) beside them.
  r = ok;
  r.top_k = 1001;
  EXPECT_EQ(err(r), "top_k: 1001 is out of range [0, 1000]");
  r = ok;
  r.pue = 4;
  EXPECT_EQ(err(r), "pue: 4 is out of range [0, 3]");
  r = ok;
  r.constraints.max_global_batch_tokens = -1;
  EXPECT_EQ(err(r).rfind("constraints.max_global_batch_tokens: -1 is out of range [0, ", 0), 0u)
      << err(r);
  r = ok;
  r.constraints.max_gpus = kMaxGpus + 1;
  EXPECT_EQ(err(r), absl::StrCat("constraints.max_gpus: ", kMaxGpus + 1, " is out of range [0, ",
                                 kMaxGpus, "]"));
  r = ok;
  r.electricity_price_per_kwh = std::numeric_limits<double>::infinity();
  EXPECT_EQ(err(r).rfind("electricity_price_per_kwh: inf is out of range [0, ", 0), 0u) << err(r);
  r = ok;
  r.base.workload.model.name = "no-such-model";
  EXPECT_EQ(err(r).rfind("workload.model", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].layout.tp = 3;
  EXPECT_EQ(err(r).rfind("candidates[0].layout.tp", 0), 0u) << err(r);
  // Each part of the scenario named where the plan request holds it.
  r = ok;
  r.base.workload.model.name.clear();
  r.base.workload.model.layers = 32;
  r.base.workload.model.hidden = 4096;
  r.base.workload.model.heads = 3;
  r.base.workload.model.vocab = 32000;
  r.base.workload.model.ffn_hidden = 11008;
  EXPECT_EQ(err(r), "workload.model.heads: 3 does not divide hidden=4096");
  r = ok;
  r.base.stack.fp8_recipe = "no-such-recipe";
  EXPECT_EQ(err(r).rfind("stack.fp8_recipe: unknown recipe 'no-such-recipe'", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].layout.tp = 8;
  r.candidates[0].layout.pp = 5;
  EXPECT_EQ(err(r),
            "candidates[0].layout: num_gpus=64 is not divisible by tp*pp*cp=40 of the "
            "set degrees");
  r = ok;
  r.candidates[0].accelerator_spec.like = "a100-sxm-80gb";
  EXPECT_EQ(err(r).rfind("candidates[0].accelerator_spec.like: ", 0), 0u) << err(r);
  r = ok;
  r.candidates[0].inter_node_gbps_per_gpu = -1;
  EXPECT_EQ(err(r).rfind("candidates[0].inter_node_gbps_per_gpu: -1 is out of range", 0), 0u)
      << err(r);
  r.candidates[0].inter_node_gbps_per_gpu = std::nan("");
  EXPECT_EQ(err(r).rfind("candidates[0].inter_node_gbps_per_gpu: nan is out of range", 0), 0u)
      << err(r);
  r.candidates[0].inter_node_gbps_per_gpu = 0.01;
  EXPECT_EQ(err(r).rfind("candidates[0].inter_node_gbps_per_gpu: 0.01 is out of range", 0), 0u)
      << err(r);
  r = ok;
  r.candidates.clear();
  EXPECT_EQ(err(r).rfind("candidates: ", 0), 0u) << err(r);
  r = ok;
  r.constraints.max_global_batch_tokens = 1024;
  EXPECT_EQ(err(r).rfind("workload.global_batch: ", 0), 0u) << err(r);
  r = ok;
  r.top_k = -1;
  EXPECT_EQ(err(r).rfind("top_k: ", 0), 0u) << err(r);
}

// A fixed layout that some counts cannot hold is planned at the counts that can, whatever the
// first count's error says (tp 16 is out of range on 8 GPUs).
TEST(PlanJob, AFixedLayoutIsPlannedAtTheCountsThatHoldIt) {
  PlanJobRequest r = Request("llama2-70b", 4096, 512, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2, {8, 16, 64})};
  r.candidates[0].layout.tp = 16;
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_FALSE(res->options.empty());
  for (const PlanJobOption& o : res->options) {
    EXPECT_NE(o.num_gpus, 8);
    EXPECT_EQ(o.scenario.parallelism.tp, 16);
  }
  r.candidates[0].gpu_counts = {8};
  EXPECT_EQ(Plan(r).status().message(), "candidates[0].layout.tp: 16 is out of range [0, 8]");
}

TEST(PlanJob, CancelledAndProgress) {
  PlanJobRequest r = Request("llama2-7b", 4096, 512, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2, {8, 16, 32})};
  std::vector<std::pair<int64_t, int64_t>> progress;
  JobControl control;
  control.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
  ASSERT_TRUE(Plan(r, control).ok());
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress.back(), (std::pair<int64_t, int64_t>{3, 3}));
  JobControl cancel;
  cancel.cancelled = [] { return true; };
  EXPECT_EQ(Plan(r, cancel).status().code(), absl::StatusCode::kCancelled);
}

TEST(PlanJob, DefaultsAreNamedInWarnings) {
  PlanJobRequest r = Request("llama2-7b", 4096, 0, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2, {64})};
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  std::string all;
  for (const std::string& w : res->warnings) all += w + "\n";
  for (const char* field :
       {"reliability.interruptions_per_1000_gpu_days", "reliability.restart_s",
        "reliability.checkpoint_write_gbps", "reliability.checkpoint_interval_s", "pue",
        "constraints.max_global_batch_tokens", "hbm_headroom"}) {
    EXPECT_NE(all.find(field), std::string::npos) << field << "\n" << all;
  }
}

// A described part (AcceleratorSpec, as Predict takes it): with no hardware field it plans
// exactly as the part it names; a field it overrides moves the plan; a bad field is named.
// A candidate named as several parts are ("H100") plans for the usual part, said once in the
// result's warnings; its options name the part.
TEST(PlanJob, SharedAcceleratorNamesPlanTheirUsualPart) {
  PlanJobRequest r = Request("llama2-7b", 4096, 1024, 1e12);
  r.candidates = {Candidate("H100", 0, {8, 64})};
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->options.size(), 2u);
  for (const PlanJobOption& o : res->options) {
    EXPECT_EQ(o.accelerator, "h100-sxm-80gb");
    EXPECT_EQ(o.scenario.cluster.accelerator, "h100-sxm-80gb");
  }
  int notes = 0;
  for (const std::string& w : res->warnings) {
    notes +=
        w.rfind("candidates[0].accelerator: accelerator 'H100' is taken as h100-sxm-80gb", 0) == 0;
  }
  EXPECT_EQ(notes, 1);
  r.candidates = {Candidate("V100 SXM2", 0, {8})};
  EXPECT_EQ(Plan(r).status().message().rfind(
                "candidates[0].accelerator: ambiguous accelerator 'V100 SXM2'", 0),
            0u)
      << Plan(r).status();
}

// A system's name plans its part with its node and network: a p4d.24xlarge's 50 Gbit/s of EFA a
// GPU, against a DGX A100's 200, makes the same 40 GB A100s slower at scale.
TEST(PlanJob, SystemNamesPlanTheirPartOnTheirNetwork) {
  PlanJobRequest r = Request("llama2-70b", 4096, 1024, 1e12);
  r.candidates = {Candidate("p4d.24xlarge", 0, {512}), Candidate("DGX A100 320GB", 0, {512})};
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->options.size(), 2u);
  std::map<double, double> days;  // network -> days
  for (const PlanJobOption& o : res->options) {
    EXPECT_EQ(o.accelerator, "a100-sxm-40gb");
    EXPECT_EQ(o.scenario.cluster.gpus_per_node, 8);
    days[o.scenario.cluster.inter_node_gbps_per_gpu] = o.days;
  }
  ASSERT_EQ(days.size(), 2u);
  ASSERT_TRUE(days.count(50) && days.count(200));
  EXPECT_GT(days[50], days[200]);
  int notes = 0;
  for (const std::string& w : res->warnings) {
    notes += w.rfind("candidates[0].accelerator: accelerator 'p4d.24xlarge' is the ", 0) == 0;
  }
  EXPECT_EQ(notes, 1);
}

TEST(PlanJob, DescribedAcceleratorsPlanAsTheirSpec) {
  PlanJobRequest r = Request("llama2-13b", 4096, 512, 1e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2.5, {16, 64})};
  PlanCandidateSpec same = Candidate("h100-sxm-80gb", 2.5, {16, 64});
  same.accelerator_spec.id = "our-h100";
  same.accelerator_spec.like = "h100-sxm-80gb";
  PlanCandidateSpec faster = same;
  faster.accelerator_spec.id = "our-h100-hbm";
  faster.accelerator_spec.hbm_tb_s = 6.7;  // H100's 3.35 TB/s doubled
  r.candidates.push_back(same);
  r.candidates.push_back(faster);
  const absl::StatusOr<PlanJobResult> res = Plan(r);
  ASSERT_TRUE(res.ok()) << res.status();
  std::map<std::pair<std::string, int>, const PlanJobOption*> by;
  for (const PlanJobOption& o : res->options) by[{o.accelerator, o.num_gpus}] = &o;
  ASSERT_EQ(by.size(), 6u);
  for (int g : {16, 64}) {
    const PlanJobOption* h100 = by.at({"h100-sxm-80gb", g});
    const PlanJobOption* ours = by.at({"our-h100", g});
    EXPECT_DOUBLE_EQ(ours->prediction.tokens_per_s, h100->prediction.tokens_per_s) << g;
    EXPECT_DOUBLE_EQ(ours->days, h100->days) << g;
    EXPECT_EQ(ours->scenario.cluster.accelerator, "our-h100");
    EXPECT_GT(by.at({"our-h100-hbm", g})->prediction.tokens_per_s, h100->prediction.tokens_per_s)
        << g;
  }
  r.candidates[2].accelerator_spec.hbm_gb = -1;
  const absl::Status bad = Plan(r).status();
  EXPECT_EQ(bad.message().rfind("candidates[2].accelerator_spec.hbm_gb", 0), 0u) << bad;
  // A new part (no catalog id) must give its bf16 peak.
  r.candidates = {Candidate("vendor-quote", 3, {64})};
  r.candidates[0].accelerator_spec.id = "vendor-quote";
  r.candidates[0].accelerator_spec.hbm_gb = 192;
  EXPECT_EQ(Plan(r).status().message().rfind("candidates[0].accelerator_spec.peak_tflops_bf16", 0),
            0u)
      << Plan(r).status();
  r.candidates[0].accelerator_spec.peak_tflops_bf16 = 1200;
  r.candidates[0].accelerator_spec.hbm_tb_s = 6;
  const absl::StatusOr<PlanJobResult> quoted = Plan(r);
  ASSERT_TRUE(quoted.ok()) << quoted.status();
  ASSERT_EQ(quoted->options.size(), 1u);
  EXPECT_EQ(quoted->options[0].accelerator, "vendor-quote");
}

// Every layout a plan picks leaves the HBM headroom free; a larger headroom never gives a
// faster option, and the default is named in the warnings only when the caller did not choose.
TEST(PlanJob, LayoutsLeaveTheHbmHeadroomFree) {
  PlanJobRequest r = Request("llama2-70b", 4096, 1024, 2e12);
  r.candidates = {Candidate("h100-sxm-80gb", 2, {64, 256, 1024})};
  std::map<int, double> tps;
  for (double headroom : {0.0, 0.05, 0.25}) {
    r.base.cluster.hbm_headroom = headroom;
    r.hbm_headroom_given = true;
    const absl::StatusOr<PlanJobResult> res = Plan(r);
    ASSERT_TRUE(res.ok()) << res.status();
    for (const std::string& w : res->warnings) {
      EXPECT_EQ(w.rfind("hbm_headroom:", 0), std::string::npos) << w;
    }
    for (const PlanJobOption& o : res->options) {
      EXPECT_LE(static_cast<double>(o.prediction.memory.total_bytes),
                (1 - headroom) * o.prediction.memory.capacity_bytes)
          << headroom << " " << o.num_gpus;
      if (tps.count(o.num_gpus) != 0) {
        EXPECT_LE(o.prediction.tokens_per_s, tps[o.num_gpus] * (1 + 1e-12)) << o.num_gpus;
      }
      tps[o.num_gpus] = o.prediction.tokens_per_s;
    }
    EXPECT_EQ(res->bound_violations, 0);
  }
  r.base.cluster.hbm_headroom = 0.9;
  EXPECT_EQ(Plan(r).status().message().rfind("hbm_headroom: ", 0), 0u) << Plan(r).status();
}

}  // namespace
}  // namespace scalecast
