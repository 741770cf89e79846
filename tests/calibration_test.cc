// The model's accuracy on both calibration sets (382 runs, with the stack each source states),
// and the fitter and CSV reader behind it.
#include "model/calibration.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/measurements.h"
#include "model/profile.h"
#include "model/workload.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

const std::vector<Measurement>& Runs() {
  static const auto* runs = [] {
    auto* all = new std::vector<Measurement>;
    for (const char* f : {"calibration.csv", "calibration-stacks.csv"}) {
      auto r = ParseMeasurementsCsv(testing::ReadShared(f));
      if (!r.ok()) ADD_FAILURE() << f << ": " << r.status();
      if (r.ok()) all->insert(all->end(), r->begin(), r->end());
    }
    std::ifstream in(std::string(SCALECAST_SOURCE_DIR) + "/data/stack-features.csv");
    std::stringstream text;
    text << in.rdbuf();
    if (absl::Status s = ApplyRunAnnotations(text.str(), all); !s.ok()) ADD_FAILURE() << s;
    return all;
  }();
  return *runs;
}

// FLOPs-only baseline: one geometric-mean efficiency per accelerator, MAPE per framework.
std::map<std::string, double> FlopsOnlyMape() {
  std::map<std::string, std::vector<std::pair<double, double>>> by_acc;  // acc -> (pred0, meas)
  std::map<std::string, std::vector<double>> err;
  for (const Measurement& m : Runs()) {
    const Accelerator& a = *Catalog::Builtin().FindAccelerator(m.scenario.cluster.accelerator);
    ModelSpec spec = m.scenario.workload.model;
    const double pred0 = a.PeakFlops(Precision::kBf16) /
                         ModelFlopsPerToken(Shape(spec), m.scenario.workload.seq_len);
    by_acc[a.id].push_back({pred0, m.tokens_per_s_per_gpu});
  }
  std::map<std::string, double> eff;
  for (const auto& [id, v] : by_acc) {
    double s = 0;
    for (const auto& [p, meas] : v) s += std::log(meas / p);
    eff[id] = std::exp(s / v.size());
  }
  for (const Measurement& m : Runs()) {
    const Accelerator& a = *Catalog::Builtin().FindAccelerator(m.scenario.cluster.accelerator);
    const double pred =
        eff[a.id] * a.PeakFlops(Precision::kBf16) /
        ModelFlopsPerToken(Shape(m.scenario.workload.model), m.scenario.workload.seq_len);
    err[m.scenario.framework].push_back(std::fabs(pred / m.tokens_per_s_per_gpu - 1));
  }
  std::map<std::string, double> out;
  for (const auto& [fw, v] : err) out[fw] = Summarise(v).mape;
  return out;
}

TEST(Calibration, DefaultProfileIsWithinTenPercentAndBeatsFlopsOnlyEverywhere) {
  ASSERT_EQ(Runs().size(), 382u);
  const ValidationReport r = Validate(Runs(), Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_EQ(r.failed_count, 0);
  EXPECT_EQ(r.overall.count, 382);
  EXPECT_LE(r.overall.mape, 0.07);
  const std::map<std::string, double> baseline = FlopsOnlyMape();
  for (const auto& [fw, stats] : r.by_framework) {
    EXPECT_LT(stats.mape, baseline.at(fw)) << fw;
  }
}

TEST(Calibration, LeaveOneSourceOutStaysWithinTwelvePercentAndTwentyPerSource) {
  const HoldOutReport h = LeaveOneSourceOut(Runs(), Catalog::Builtin(), Profile(), FitOptions());
  EXPECT_EQ(h.by_group.size(), 17u);
  EXPECT_EQ(h.overall.count, 382);
  EXPECT_LE(h.overall.mape, 0.12);
  for (const auto& [source, stats] : h.by_group) {
    if (stats.count >= 5) {
      EXPECT_LE(stats.mape, 0.20) << source;
    }
  }
}

TEST(Calibration, LeaveOneFrameworkOutStaysWithinFifteenPercent) {
  const HoldOutReport h = LeaveOneFrameworkOut(Runs(), Catalog::Builtin(), Profile(), FitOptions());
  EXPECT_EQ(h.by_group.size(), 7u);
  EXPECT_EQ(h.overall.count, 382);
  EXPECT_LE(h.overall.mape, 0.15);
}

TEST(Calibration, ShippedProfileIsWhatTheFitProduces) {
  // Guards against a stale model/data/default_profile.txt after a physics change.
  Profile start;
  absl::StatusOr<FitResult> r = Fit(Runs(), Catalog::Builtin(), start, FitOptions(), false);
  ASSERT_TRUE(r.ok()) << r.status();
  const ValidationReport shipped = Validate(Runs(), Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_NEAR(r->after.overall.mape, shipped.overall.mape, 0.005);
  EXPECT_LT(r->after.overall.mape, r->before.overall.mape);
}

TEST(Calibration, FittingASubsetChangesItsPredictions) {
  std::vector<Measurement> a100;
  for (const Measurement& m : Runs()) {
    if (m.scenario.cluster.accelerator == "a100-sxm-40gb") a100.push_back(m);
  }
  Profile start;
  start.name = "a100-only";
  absl::StatusOr<FitResult> r = Fit(a100, Catalog::Builtin(), start, FitOptions(), true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(r->after.overall.mape, 0.10);
  EXPECT_GT(r->cross_validated_mape, 0);
  EXPECT_NE(r->profile.accelerators.at("a100").gemm_eff, start.ForAccelerator("a100").gemm_eff);
  // Families the subset did not cover keep their priors.
  EXPECT_EQ(r->profile.accelerators.count("h100"), 0u);
}

TEST(Profile, TextRoundTripsAndRejectsGarbage) {
  const Profile& p = Profile::BuiltinDefault();
  absl::StatusOr<Profile> q = Profile::FromText(p.ToText());
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToText(), p.ToText());
  EXPECT_FALSE(Profile::FromText("accel.h100.gemm_eff = -1\n").ok());
  EXPECT_FALSE(Profile::FromText("accel.h100.warp_speed = 2\n").ok());
  EXPECT_FALSE(Profile::FromText("no equals sign\n").ok());
}

TEST(MeasurementsCsv, BadRowIsRejectedWithLineAndColumn) {
  const std::string header =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,global_batch,"
      "recompute,tokens_per_s_per_gpu\n";
  const std::string good =
      "1,torchtitan,m,32,4096,32,8,14336,gated,128256,8192,h100-sxm-80gb,8,8,bf16,1,1,1,1,8,fsdp,"
      "1,8,full,5000\n";
  ASSERT_TRUE(ParseMeasurementsCsv(header + good).ok());
  auto bad_mlp = ParseMeasurementsCsv(header + good +
                                      "\"2\",torchtitan,m,32,4096,32,8,14336,"
                                      "swish,128256,8192,h100-sxm-80gb,8,8,bf16,1,"
                                      "1,1,1,8,fsdp,1,8,full,5000\n");
  ASSERT_FALSE(bad_mlp.ok());
  EXPECT_NE(bad_mlp.status().message().find("line 3, column mlp"), absl::string_view::npos)
      << bad_mlp.status();
  auto bad_num = ParseMeasurementsCsv(header + good + good.substr(0, good.size() - 5) + "fast\n");
  ASSERT_FALSE(bad_num.ok());
  EXPECT_NE(bad_num.status().message().find("line 3, column tokens_per_s_per_gpu"),
            absl::string_view::npos)
      << bad_num.status();
  auto short_row = ParseMeasurementsCsv(header + "1,torchtitan\n");
  EXPECT_FALSE(short_row.ok());
  auto no_header = ParseMeasurementsCsv("id,framework\n1,megatron\n");
  EXPECT_FALSE(no_header.ok());
  auto quote = ParseMeasurementsCsv(header + "\"1,torchtitan\n");
  EXPECT_FALSE(quote.ok());
}

TEST(MeasurementsCsv, ReadsTheCalibrationSetWithItsConventions) {
  const std::vector<Measurement>& runs = Runs();
  ASSERT_EQ(runs.size(), 382u);
  int fsdp_default = 0;
  for (const Measurement& m : runs) {
    EXPECT_GT(m.scenario.workload.global_batch, 0);
    if (m.scenario.framework == "composer-fsdp") {
      EXPECT_NE(m.scenario.parallelism.sharding, Sharding::kUnspecified);
    }
    if (m.labels.at("csv_id") == "460") {
      ++fsdp_default;  // blank sharding: the framework's default (fms-fsdp: HSDP)
      EXPECT_EQ(m.scenario.parallelism.sharding, Sharding::kHsdp);
    }
  }
  EXPECT_EQ(fsdp_default, 1);
}

}  // namespace
}  // namespace scalecast
