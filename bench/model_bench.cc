// Google Benchmark of the scaling model: one full prediction (layout given) and the planner's
// full search. Figures go to the README; tests never assert on time.
#include "benchmark/benchmark.h"
#include "jobs/plan_job.h"
#include "model/catalog.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/profile.h"

namespace scalecast {
namespace {

Scenario Llama70bOn(int gpus) {
  Scenario s;
  s.workload.model.name = "llama2-70b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 4096;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = gpus;
  return s;
}

// Predict of `s` (resolved and checked each call) in the benchmark loop.
void PredictLoop(benchmark::State& state, const Scenario& s) {
  const Catalog& catalog = Catalog::Builtin();
  const Profile& profile = Profile::BuiltinDefault();
  for (auto _ : state) {
    absl::StatusOr<Prediction> p = Predict(s, catalog, profile);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}

// The planner's full search over `open`'s unset layout fields in the benchmark loop.
void PlanLoop(benchmark::State& state, const Scenario& open) {
  const Scenario s = *ResolveScenario(open, Catalog::Builtin());
  PlanOptions options;
  options.top_k = 5;
  int64_t layouts = 0;
  for (auto _ : state) {
    absl::StatusOr<PlanResult> r = Plan(s, Catalog::Builtin(), Profile::BuiltinDefault(), options);
    layouts = r->evaluated_count;
    benchmark::DoNotOptimize(r);
  }
  state.counters["layouts"] = static_cast<double>(layouts);
  state.counters["layouts_per_s"] = benchmark::Counter(
      static_cast<double>(layouts) * state.iterations(), benchmark::Counter::kIsRate);
}

// One prediction of a complete layout, the scenario checked and resolved each time (what a
// Predict call with a full layout costs the model).
void BM_PredictFullLayout(benchmark::State& state) {
  Scenario s = Llama70bOn(2048);
  s.parallelism = Parallelism{.tp = 4,
                              .pp = 4,
                              .vpp = 2,
                              .cp = 1,
                              .dp = 0,
                              .sharding = Sharding::kFsdp,
                              .shard_group = 0,
                              .micro_batch = 1,
                              .recompute = Recompute::kSelective,
                              .sequence_parallel = true};
  PredictLoop(state, s);
}
BENCHMARK(BM_PredictFullLayout);

// The planner's full search: every layout of llama2-70b on N H100s (tp, pp, vpp, cp, sharding,
// micro batch, recompute all open).
void BM_PlannerFullSearch(benchmark::State& state) {
  PlanLoop(state, Llama70bOn(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_PlannerFullSearch)->Arg(256)->Arg(2048)->Unit(benchmark::kMillisecond);

Scenario DeepSeekV3On(int gpus) {
  Scenario s;
  s.workload.model.name = "deepseek-v3";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 8192;
  s.workload.precision = Precision::kFp8;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = gpus;
  s.framework = "megatron";
  return s;
}

// One MoE prediction of a complete layout (DeepSeek-V3, 2,048 H100, tp1 pp16 ep64).
void BM_PredictMoeFullLayout(benchmark::State& state) {
  Scenario s = DeepSeekV3On(2048);
  Parallelism& p = s.parallelism;
  p.tp = 1;
  p.pp = 16;
  p.vpp = 1;
  p.cp = 1;
  p.ep = 64;
  p.etp = 1;
  p.sharding = Sharding::kZero1;
  p.micro_batch = 1;
  p.recompute = Recompute::kSelective;
  PredictLoop(state, s);
}
BENCHMARK(BM_PredictMoeFullLayout);

// The planner over DeepSeek-V3 on 2,048 H100 with EP, ETP, TP, PP, VP, CP, sharding, micro
// batch and recompute open.
void BM_PlannerDeepSeekV3(benchmark::State& state) {
  PlanLoop(state, DeepSeekV3On(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_PlannerDeepSeekV3)->Arg(2048)->Unit(benchmark::kMillisecond);

// Plan: Llama 3 70B on 15T tokens across H100, H200, B200 and GB200 NVL72, GPU counts searched
// from 8 to 16,384 (powers of two, and NVL72 rack multiples: 56 counts), the global batch chosen
// within 16M tokens (3 sizes). Arg 0: every count's option (top_k 0); arg > 0: top_k; the second
// argument 1 runs the exhaustive search (no bounds) for comparison.
void BM_PlanFourAccelerators(benchmark::State& state) {
  PlanJobRequest r;
  r.base.workload.model.name = "llama3-70b";
  r.base.workload.seq_len = 8192;
  r.tokens = 15e12;
  r.constraints.max_global_batch_tokens = int64_t{16} << 20;
  r.constraints.deadline_days = 90;
  for (const char* acc : {"h100-sxm-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "gb200-nvl72"}) {
    PlanCandidateSpec c;
    c.accelerator = acc;
    c.price_per_gpu_hour = 2;
    r.candidates.push_back(c);
  }
  r.top_k = static_cast<int>(state.range(0));
  r.exhaustive = state.range(1) != 0;
  int64_t layouts = 0, evaluated = 0, counts = 0, violations = 0;
  for (auto _ : state) {
    absl::StatusOr<PlanJobResult> res =
        RunPlan(r, Catalog::Builtin(), Profile::BuiltinDefault(), JobControl{});
    layouts = res->layouts_total;
    evaluated = res->layouts_evaluated;
    counts = res->gpu_counts_evaluated;
    violations = res->bound_violations;
    benchmark::DoNotOptimize(res);
  }
  state.counters["layouts"] = static_cast<double>(layouts);
  state.counters["evaluated"] = static_cast<double>(evaluated);
  state.counters["gpu_counts"] = static_cast<double>(counts);
  state.counters["bound_violations"] = static_cast<double>(violations);
}
BENCHMARK(BM_PlanFourAccelerators)
    ->Args({0, 0})
    ->Args({5, 0})
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace scalecast
