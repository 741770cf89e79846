#include "model/goodput.h"

#include <cmath>

#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/predictor.h"
#include "model/workload.h"

namespace scalecast {
namespace {

constexpr double kBytes70b = 70e9 * kCheckpointBytesPerParam;

// The stated law, written out again: each interruption costs the restart and half an interval
// of rework; each interval pays one checkpoint write.
double Law(int gpus, double rate_per_1000, double restart, double write, double interval) {
  const double mtbf = 86400.0 / (rate_per_1000 / 1000.0 * gpus);
  return (1 - (restart + interval / 2) / mtbf) / (1 + write / interval);
}

TEST(Goodput, CheckpointIntervalIsYoungDalyClosedForm) {
  for (int g : {8, 64, 1024, 16384}) {
    const Goodput gp = ComputeGoodput(g, kBytes70b, {});
    const double write = kBytes70b * 8 / (kDefaultCheckpointGbpsPerGpu * g * 1e9);
    const double mtbf = 86400.0 / (kDefaultInterruptionsPer1000GpuDays / 1000.0 * g);
    EXPECT_DOUBLE_EQ(gp.checkpoint_write_s, write) << g;
    EXPECT_DOUBLE_EQ(gp.mtbf_s, mtbf) << g;
    EXPECT_DOUBLE_EQ(gp.checkpoint_interval_s, std::sqrt(2 * write * mtbf)) << g;
  }
  // An aggregate bandwidth: the write time no longer shrinks with the cluster.
  ReliabilityOptions o;
  o.checkpoint_write_gbps = 800;
  const Goodput gp = ComputeGoodput(4096, kBytes70b, o);
  EXPECT_DOUBLE_EQ(gp.checkpoint_write_s, kBytes70b * 8 / 800e9);
  EXPECT_DOUBLE_EQ(gp.checkpoint_interval_s, std::sqrt(2 * gp.checkpoint_write_s * gp.mtbf_s));
}

TEST(Goodput, FallsWithGpuCountByTheStatedLaw) {
  double previous = 1;
  for (int g = 8; g <= 131072; g *= 2) {
    const Goodput gp = ComputeGoodput(g, kBytes70b, {});
    EXPECT_NEAR(gp.goodput,
                Law(g, kDefaultInterruptionsPer1000GpuDays, kDefaultRestartS, gp.checkpoint_write_s,
                    gp.checkpoint_interval_s),
                1e-12)
        << g;
    EXPECT_LT(gp.goodput, previous) << g;
    EXPECT_NEAR(gp.lost_checkpointing + gp.lost_restarts + gp.lost_rework, 1 - gp.goodput, 1e-12);
    previous = gp.goodput;
  }
  // Storage that grows with the cluster keeps the checkpoint terms constant: the restarts'
  // share, restart / MTBF, grows linearly with the GPU count.
  const Goodput a = ComputeGoodput(1024, kBytes70b, {});
  const Goodput b = ComputeGoodput(2048, kBytes70b, {});
  EXPECT_NEAR(b.lost_restarts, 2 * a.lost_restarts, 1e-15);
  EXPECT_NEAR(b.lost_rework, a.lost_rework, 1e-15);
}

TEST(Goodput, TheOptimalIntervalBeatsShorterAndLongerOnes) {
  const Goodput best = ComputeGoodput(4096, kBytes70b, {});
  for (double f : {0.25, 0.5, 2.0, 4.0}) {
    ReliabilityOptions o;
    o.checkpoint_interval_s = best.checkpoint_interval_s * f;
    const Goodput other = ComputeGoodput(4096, kBytes70b, o);
    EXPECT_DOUBLE_EQ(other.checkpoint_interval_s, best.checkpoint_interval_s * f);
    EXPECT_LT(other.goodput, best.goodput) << f;
  }
}

TEST(Goodput, OverridesAreUsed) {
  ReliabilityOptions o;
  o.interruptions_per_1000_gpu_days = 2;
  o.restart_s = 60;
  o.checkpoint_interval_s = 1800;
  const Goodput gp = ComputeGoodput(1000, kBytes70b, o);
  EXPECT_DOUBLE_EQ(gp.interruptions_per_day, 2.0);
  EXPECT_DOUBLE_EQ(gp.mtbf_s, 43200.0);
  EXPECT_DOUBLE_EQ(gp.restart_s, 60.0);
  EXPECT_NEAR(gp.goodput, Law(1000, 2, 60, gp.checkpoint_write_s, 1800), 1e-12);
  EXPECT_TRUE(DescribeReliabilityDefaults(o).size() == 1);  // only the bandwidth left default
  EXPECT_EQ(DescribeReliabilityDefaults({}).size(), 4u);
}

TEST(Goodput, NoProgressWhenInterruptedFasterThanItRecovers) {
  ReliabilityOptions o;
  o.interruptions_per_1000_gpu_days = 50;
  o.restart_s = 3600;
  const Goodput gp = ComputeGoodput(16384, kBytes70b, o);
  EXPECT_EQ(gp.goodput, 0);
}

// The default rate is Llama 3's: 419 unexpected interruptions in 54 days on 16,384 GPUs, a mean
// time between them of 54 x 24 / 419 = 3.09 h (reliability-at-scale.md).
TEST(Goodput, DefaultRateIsLlama3s) {
  const Goodput gp = ComputeGoodput(16384, kBytes70b, {});
  EXPECT_NEAR(gp.mtbf_s / 3600, 54.0 * 24 / 419, 1e-9);
  EXPECT_NEAR(gp.interruptions_per_day, 419.0 / 54, 1e-9);
  EXPECT_FALSE(InterruptionSources().empty());
}

TEST(Goodput, CheckpointBytesComeFromTheModelsParameters) {
  Scenario s;
  s.workload.model.name = "llama3-70b";
  s.workload.seq_len = 8192;
  s.workload.global_batch = 512;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 64;
  const absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  const double params = CountParams(Shape(r->workload.model)).total;
  EXPECT_GT(params, 69e9);
  EXPECT_LT(params, 72e9);
  EXPECT_DOUBLE_EQ(CheckpointBytes(r->workload.model), params * 14);
}

}  // namespace
}  // namespace scalecast
