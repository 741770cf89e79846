#include "model/feasibility.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/limits.h"
#include "model/predictor.h"
#include "model/profile.h"

namespace scalecast {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Scenario Base(const std::string& model, int gpus, int64_t batch) {
  Scenario s;
  s.workload.model.name = model;
  s.workload.seq_len = 4096;
  s.workload.global_batch = batch;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = gpus;
  return s;
}

bool Feasible(const Scenario& s) {
  return IsFeasible(s, Catalog::Builtin(), Profile::BuiltinDefault());
}

NearestFeasible Nearest(const Scenario& s) {
  return FindNearestFeasible(s, Catalog::Builtin(), Profile::BuiltinDefault());
}

TEST(Feasibility, FiveHundredGpusGetTheNearestCountsOnEachSideThatWork) {
  // 1024 sequences split over dp in {1, 2, 4} leave 125..500 GPUs for tp*pp*cp: no layout.
  const Scenario s = Base("llama2-70b", 500, 1024);
  ASSERT_FALSE(Feasible(s));
  const NearestFeasible n = Nearest(s);
  ASSERT_EQ(n.gpu_counts.size(), 2u);
  const int a = n.gpu_counts[0], b = n.gpu_counts[1];
  EXPECT_TRUE((a < 500 && b > 500) || (a > 500 && b < 500)) << a << ", " << b;
  EXPECT_LE(std::abs(a - 500), std::abs(b - 500)) << "nearest first";
  EXPECT_LE(std::max(a, b), 512);
  for (int g : n.gpu_counts) {
    Scenario t = s;
    t.cluster.num_gpus = g;
    EXPECT_TRUE(Feasible(t)) << g;
    // Nothing nearer on the same side works (the search is dense over 250..750 GPUs).
    ASSERT_GE(g, 250);
    for (int h = std::min(g, 500) + 1; h < std::max(g, 500); ++h) {
      t.cluster.num_gpus = h;
      EXPECT_FALSE(Feasible(t)) << h << " is nearer than " << g;
    }
  }
  EXPECT_FALSE(n.global_batches.empty());
  for (int64_t batch : n.global_batches) {
    Scenario t = s;
    t.workload.global_batch = batch;
    EXPECT_TRUE(Feasible(t)) << batch;
  }
  EXPECT_THAT(n.micro_batches, IsEmpty()) << "micro batch was left to the planner";
  const std::string words = DescribeNearest(n, s);
  EXPECT_THAT(words, HasSubstr("Nearest that work: "));
  EXPECT_THAT(words, HasSubstr(absl::StrCat(a, " or ", b, " GPUs (global batch 1024)")));
  EXPECT_THAT(words, HasSubstr("(500 GPUs)"));
}

// A batch no layout splits is answered at the nearest that does when that is within a tenth of
// it, saying so; further off (or out of its range) it stays refused.
TEST(Feasibility, ABatchWithinATenthOfOneThatSplitsIsAnsweredAtIt) {
  Scenario s = Base("llama2-7b", 96, 1024);
  s.parallelism.tp = 2;
  s.parallelism.pp = 4;
  s.parallelism.cp = 1;  // dp 12
  const std::optional<Scenario> at = AtNearestBatch(s, Nearest(s), "scenarios[2]");
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->workload.global_batch, 1020);
  EXPECT_TRUE(Feasible(*at));
  ASSERT_EQ(at->input_warnings.size(), 1u);
  EXPECT_EQ(at->input_warnings[0],
            "scenarios[2].workload.global_batch: 1024 sequences split evenly over no layout of 96 "
            "GPUs here; predicted for 1020, the nearest global batch that does (1032 also does): "
            "name it to be sure");

  // 7 sequences on 500 GPUs: the nearest that splits, 25, is more than a tenth off.
  const Scenario far = Base("llama2-70b", 500, 7);
  ASSERT_FALSE(Feasible(far));
  const NearestFeasible n = Nearest(far);
  ASSERT_FALSE(n.global_batches.empty());
  EXPECT_GT(std::llabs(n.global_batches[0] - 7), 1);
  EXPECT_FALSE(AtNearestBatch(far, n, "scenario").has_value());
  EXPECT_FALSE(AtNearestBatch(far, NearestFeasible{}, "scenario").has_value());
  // A fixed micro batch that does not divide the replicas' share is the request's to change.
  Scenario micro = s;
  micro.parallelism.dp = 0;
  micro.workload.global_batch = 1020;  // 85 a replica
  micro.parallelism.micro_batch = 2;
  const NearestFeasible m = Nearest(micro);
  EXPECT_FALSE(m.micro_batches.empty());
  EXPECT_FALSE(AtNearestBatch(micro, m, "scenario").has_value());
  // Beyond its range a batch is refused as asked, however near a batch that splits is.
  Scenario huge = s;
  huge.workload.global_batch = kMaxGlobalBatch + 1;
  NearestFeasible top;
  top.global_batches = {kMaxGlobalBatch};
  EXPECT_FALSE(AtNearestBatch(huge, top, "scenario").has_value());
}

TEST(Feasibility, GlobalBatchNotDivisibleByDpGetsTheNeighbouringMultiples) {
  Scenario s = Base("llama2-7b", 96, 1024);
  s.parallelism.tp = 2;
  s.parallelism.pp = 4;
  s.parallelism.cp = 1;  // dp = 96 / 8 = 12, and 12 does not divide 1024
  ASSERT_FALSE(Feasible(s));
  const NearestFeasible n = Nearest(s);
  EXPECT_THAT(n.global_batches, ElementsAre(1020, 1032));
  for (int g : n.gpu_counts) EXPECT_EQ(g % 8, 0) << g;
  ASSERT_FALSE(n.gpu_counts.empty());
  EXPECT_THAT(DescribeNearest(n, s), HasSubstr("global batch 1020 or 1032 (96 GPUs)"));
}

TEST(Feasibility, AFixedMicroBatchThatDoesNotDivideThePerReplicaBatchGetsItsNeighbours) {
  Scenario s = Base("llama2-7b", 64, 1024);
  s.parallelism.tp = 1;
  s.parallelism.pp = 1;
  s.parallelism.cp = 1;
  s.parallelism.micro_batch = 3;  // 1024 / 64 = 16 sequences per replica
  ASSERT_FALSE(Feasible(s));
  const NearestFeasible n = Nearest(s);
  EXPECT_THAT(n.micro_batches, ElementsAre(2, 4));
}

TEST(Feasibility, NothingNearbyHelpsATensorDegreeThatDoesNotDivideTheHeads) {
  Scenario s = Base("llama2-7b", 64, 1024);
  s.parallelism.tp = 3;
  const NearestFeasible n = Nearest(s);
  EXPECT_TRUE(n.empty());
  EXPECT_EQ(DescribeNearest(n, s), "");
}

TEST(Feasibility, AFeasibleScenarioIsFeasible) {
  EXPECT_TRUE(Feasible(Base("llama2-7b", 64, 512)));
}

}  // namespace
}  // namespace scalecast
