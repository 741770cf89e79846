// Memory per GPU against published peaks (torchtitan's rows in the calibration set carry their
// peak memory in `note`) and the cases that must not fit.
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/step.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

constexpr double kGiB = 1 << 30;

TEST(Memory, TorchtitanLlama3_8bFsdpPeaksWithinTenPercent) {
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  const std::regex peak_re("peak memory ([0-9.]+) GiB");
  int checked = 0;
  for (const Measurement& m : *runs) {
    auto note = m.labels.find("note");
    std::smatch match;
    if (note == m.labels.end() || !std::regex_search(note->second, match, peak_re)) continue;
    absl::StatusOr<Scenario> s = ResolveScenario(m.scenario, Catalog::Builtin());
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<Prediction> p = Predict(*s, Catalog::Builtin(), Profile::BuiltinDefault());
    ASSERT_TRUE(p.ok()) << p.status();
    const double published = std::stod(match[1]);
    const double model = p->memory.total_bytes / kGiB;
    std::printf("%-6s %-16s %4d GPUs tp%d pp%d cp%d mb%d %-9s: published %5.1f GiB, model %5.1f\n",
                m.labels.at("csv_id").c_str(), m.scenario.workload.model.name.c_str(),
                m.scenario.cluster.num_gpus, p->layout.tp, p->layout.pp, p->layout.cp,
                p->layout.micro_batch, std::string(ToString(p->layout.recompute)).c_str(),
                published, model);
    // The known case: torchtitan's Llama 3.1 8B with FSDP on 8 and 128 H100s, local batch 2,
    // seq 8192, selective recompute (eager and torch.compile). Other rows are printed for the
    // record: full recompute at 32K-256K context is underestimated (the loss's fp32 buffers at
    // long sequence), the H200 float8 rows overestimated (their newer AC policy saves less).
    if (m.scenario.workload.model.name == "Llama 3.1 8B" && m.scenario.parallelism.tp == 1 &&
        m.scenario.parallelism.cp == 1 && m.scenario.workload.seq_len == 8192 &&
        m.scenario.cluster.accelerator == "h100-sxm-96gb-500w") {
      EXPECT_NEAR(model / published, 1.0, 0.10) << m.labels.at("csv_id");
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

Scenario Llama70b(Sharding sharding, int gpus) {
  Scenario s;
  s.workload.model.name = "llama2-70b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 1024;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = gpus;
  s.parallelism = {.tp = 1,
                   .pp = 1,
                   .vpp = 1,
                   .cp = 1,
                   .dp = 0,
                   .sharding = sharding,
                   .shard_group = 0,
                   .micro_batch = 1,
                   .recompute = Recompute::kFull,
                   .sequence_parallel = false};
  return s;
}

TEST(Memory, Llama70bUnderDdpDoesNotFitOn80GB) {
  absl::StatusOr<Prediction> p =
      Predict(Llama70b(Sharding::kDdp, 64), Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->memory.fits);
  // 18 bytes of weights, fp32 gradients and Adam state per parameter: over a terabyte.
  EXPECT_GT(p->memory.total_bytes, 1000 * kGiB);
  ASSERT_FALSE(p->warnings.empty());
  EXPECT_NE(p->warnings[0].find("does not fit"), std::string::npos);
  // Sharded with FSDP over the same 64 GPUs it fits.
  absl::StatusOr<Prediction> f =
      Predict(Llama70b(Sharding::kFsdp, 64), Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->memory.fits) << f->memory.total_bytes / kGiB;
}

TEST(Memory, ShardingAndRecomputeOrderAsExpected) {
  Scenario s = *ResolveScenario(Llama70b(Sharding::kDdp, 64), Catalog::Builtin());
  StepModel model(s, Catalog::Builtin(), Profile::BuiltinDefault());
  Parallelism p = s.parallelism;
  auto total = [&](Sharding sh, Recompute rc) {
    Parallelism q = p;
    q.sharding = sh;
    q.recompute = rc;
    return model.Memory(q).total_bytes;
  };
  EXPECT_GT(total(Sharding::kDdp, Recompute::kFull), total(Sharding::kZero1, Recompute::kFull));
  EXPECT_GT(total(Sharding::kZero1, Recompute::kFull), total(Sharding::kZero2, Recompute::kFull));
  EXPECT_GT(total(Sharding::kZero2, Recompute::kFull), total(Sharding::kFsdp, Recompute::kFull));
  EXPECT_GT(total(Sharding::kFsdp, Recompute::kNone),
            total(Sharding::kFsdp, Recompute::kSelective));
  EXPECT_GT(total(Sharding::kFsdp, Recompute::kSelective),
            total(Sharding::kFsdp, Recompute::kFull));
  // Tensor parallelism with sequence parallelism divides activations too.
  Parallelism tp = p;
  tp.sharding = Sharding::kFsdp;
  tp.recompute = Recompute::kNone;
  const int64_t tp1 = model.Memory(tp).activations_bytes;
  tp.tp = 8;
  tp.sequence_parallel = true;
  EXPECT_LT(model.Memory(tp).activations_bytes, tp1 / 7);
}

}  // namespace
}  // namespace scalecast
