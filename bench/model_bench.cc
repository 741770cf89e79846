// Google Benchmark of the scaling model: one full prediction (layout given) and the planner's
// full search. Figures go to the README; tests never assert on time.
#include "benchmark/benchmark.h"
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
  const Catalog& catalog = Catalog::Builtin();
  const Profile& profile = Profile::BuiltinDefault();
  for (auto _ : state) {
    absl::StatusOr<Prediction> p = Predict(s, catalog, profile);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PredictFullLayout);

// The planner's full search: every layout of llama2-70b on N H100s (tp, pp, vpp, cp, sharding,
// micro batch, recompute all open).
void BM_PlannerFullSearch(benchmark::State& state) {
  const Scenario s =
      *ResolveScenario(Llama70bOn(static_cast<int>(state.range(0))), Catalog::Builtin());
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
BENCHMARK(BM_PlannerFullSearch)->Arg(256)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace scalecast
