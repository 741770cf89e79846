// Controlled pairs (tools/pairs.h, scalecast-validate --pairs): which runs pair, in which order,
// and the ratios set side by side.
#include "tools/pairs.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace scalecast::tools {
namespace {

TEST(PairValueLess, NumbersInsideTheTextCompareAsNumbers) {
  EXPECT_TRUE(PairValueLess("25.9", "25.11"));
  EXPECT_TRUE(PairValueLess("25.11", "26.02"));
  EXPECT_TRUE(PairValueLess("26.02", "26.02.01"));
  EXPECT_TRUE(PairValueLess("0.9", "0.10"));
  EXPECT_TRUE(PairValueLess("bf16", "fp8"));
  EXPECT_FALSE(PairValueLess("0.10", "0.9"));
  EXPECT_FALSE(PairValueLess("25.09", "25.9"));  // the same number
  EXPECT_FALSE(PairValueLess("fp8", "fp8"));
}

// Runs measured and predicted, owned for the rows that point at them.
class PairsTest : public ::testing::Test {
 protected:
  // A run of `source` like every other but in the fields the test sets.
  Scenario Base() const {
    Scenario s;
    s.workload.model.name = "llama3-8b";
    s.workload.seq_len = 8192;
    s.workload.global_batch = 128;
    s.workload.precision = Precision::kBf16;
    s.cluster.accelerator = "h100-sxm-80gb";
    s.cluster.num_gpus = 8;
    s.parallelism.tp = 1;
    s.framework = "nemo";
    return s;
  }

  void Add(const std::string& source, const Scenario& s, double measured, double predicted,
           const std::string& failure = "") {
    Measurement& m = runs_.emplace_back();
    m.source = source;
    m.scenario = s;
    m.tokens_per_s_per_gpu = measured;
    ValidationRow r;
    r.measurement = &m;
    r.predicted_tokens_per_s_per_gpu = predicted;
    r.error = predicted / measured - 1;
    r.failure = failure;
    rows_.push_back(r);
  }

  std::deque<Measurement> runs_;  // stable addresses
  std::vector<ValidationRow> rows_;
};

TEST_F(PairsTest, RunsOfOneSourceThatDifferInTheNamedFieldOnlyPair) {
  Scenario bf16 = Base();
  bf16.label = "first";  // labels never keep runs apart
  Scenario fp8 = Base();
  fp8.workload.precision = Precision::kFp8;
  fp8.label = "second";
  Scenario fp8_tp2 = fp8;
  fp8_tp2.parallelism.tp = 2;
  Add("S", bf16, 100, 110);
  Add("S", fp8, 150, 198);
  Add("S", fp8_tp2, 140, 150);  // a second difference: no partner
  Add("T", fp8, 160, 180);      // another source
  Add("S", fp8, 155, 0, "could not be predicted");

  absl::StatusOr<std::vector<ControlledPair>> pairs =
      ControlledPairs(rows_, {"workload.precision"});
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 1u);
  const ControlledPair& p = pairs->front();
  EXPECT_EQ(p.from, &rows_[0]);
  EXPECT_EQ(p.to, &rows_[1]);
  EXPECT_EQ(p.from_value, "workload.precision=bf16");
  EXPECT_EQ(p.to_value, "workload.precision=fp8");
  EXPECT_DOUBLE_EQ(p.measured_ratio, 1.5);
  EXPECT_DOUBLE_EQ(p.predicted_ratio, 1.8);
  EXPECT_NEAR(p.Error(), 0.2, 1e-12);

  // Naming "source" lets the other source's run pair too.
  pairs = ControlledPairs(rows_, {"workload.precision", "source"});
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 2u);
  EXPECT_EQ((*pairs)[1].to, &rows_[3]);
  EXPECT_DOUBLE_EQ((*pairs)[1].measured_ratio, 1.6);
}

TEST_F(PairsTest, ReleasesPairInTheOrderOfTheirSoftwareEachWithTheNext) {
  Scenario s = Base();
  for (const char* v : {"25.04", "24.12", "25.02"}) {  // out of order on purpose
    s.stack.version = v;
    Add("S", s, 100, 100);
  }
  absl::StatusOr<std::vector<ControlledPair>> pairs = ControlledPairs(rows_, {"stack."});
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 2u);
  EXPECT_EQ((*pairs)[0].from, &rows_[1]);  // 24.12 -> 25.02
  EXPECT_EQ((*pairs)[0].to, &rows_[2]);
  EXPECT_EQ((*pairs)[1].from, &rows_[2]);  // 25.02 -> 25.04
  EXPECT_EQ((*pairs)[1].to, &rows_[0]);
}

TEST(PairFields, AFieldTheEncodingDoesNotHaveIsNamed) {
  EXPECT_TRUE(CheckPairFields({"workload.precision", "stack.", "source"}).ok());
  const absl::Status s = CheckPairFields({"workload.precision", "workload.nope"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--pairs: no scenario field workload.nope");
  EXPECT_FALSE(ControlledPairs({}, {"nope."}).ok());
}

}  // namespace
}  // namespace scalecast::tools
