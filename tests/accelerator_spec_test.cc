// Described accelerators (AcceleratorSpec), MXFP4 and the planner's HBM headroom.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/hardware.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

const Catalog& Cat() { return Catalog::Builtin(); }

// llama2-7b on 64 H100s (8 nodes) with a fixed FSDP layout: compute, HBM traffic, data-parallel
// traffic over the network and power all show.
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

Prediction PredictOk(const Scenario& s) {
  absl::StatusOr<Prediction> p = Predict(s, Cat(), Profile::BuiltinDefault());
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Prediction();
}

double CommTotal(const Prediction& p) {
  double t = 0;
  for (const CommTime& c : p.time.comm) t += c.total_s;
  return t;
}

// Every field of a catalog part, as a spec.
AcceleratorSpec SpecOf(const Accelerator& a) {
  AcceleratorSpec s;
  s.peak_tflops_bf16 = a.peak_tflops_bf16;
  s.peak_tflops_fp8 = a.peak_tflops_fp8;
  s.peak_tflops_fp4 = a.peak_tflops_nvfp4 > 0 ? a.peak_tflops_nvfp4 : a.peak_tflops_mxfp4;
  s.hbm_gb = a.hbm_gib;
  s.hbm_tb_s = a.hbm_tbps;
  s.nvlink_domain = a.nvlink_domain;
  s.nvlink_gb_s = a.nvlink_gbps;
  s.inter_node_gbps_per_gpu = a.net_gbps;
  s.tdp_watts = a.tdp_w;
  s.idle_watts = a.idle_w;
  s.tensor_flops_per_exp = a.tensor_flops_per_exp;
  return s;
}

TEST(AcceleratorSpec, EqualToACatalogPartPredictsExactlyAsIt) {
  for (const char* id : {"h100-sxm-80gb", "b200-sxm-180gb", "mi355x-288gb"}) {
    Scenario plain = Base();
    plain.cluster.accelerator = id;
    const Prediction want = PredictOk(plain);
    for (const bool named : {true, false}) {
      Scenario described = plain;
      described.cluster.accelerator_spec = SpecOf(*Cat().FindAccelerator(id));
      if (!named) {  // a new id, like the catalog part
        described.cluster.accelerator = "";
        described.cluster.accelerator_spec.id = "my-part";
        described.cluster.accelerator_spec.like = id;
      }
      const Prediction got = PredictOk(described);
      EXPECT_EQ(got.tokens_per_s, want.tokens_per_s) << id;
      EXPECT_EQ(got.step_time_s, want.step_time_s) << id;
      EXPECT_EQ(got.memory.total_bytes, want.memory.total_bytes) << id;
      EXPECT_EQ(got.memory.capacity_bytes, want.memory.capacity_bytes) << id;
      EXPECT_EQ(got.power.watts_per_gpu, want.power.watts_per_gpu) << id;
      EXPECT_EQ(got.uncertainty.low, want.uncertainty.low) << id;
      EXPECT_EQ(got.uncertainty.high, want.uncertainty.high) << id;
      EXPECT_EQ(got.uncertainty.basis, want.uncertainty.basis) << id;
      EXPECT_EQ(got.warnings, want.warnings) << id;
    }
  }
}

// One override: which parts of the prediction it may move.
struct FieldCase {
  const char* field;
  std::function<void(AcceleratorSpec*)> set;
  Precision precision;
  const char* accelerator;
  bool moves_compute, moves_comm, moves_memory_capacity, moves_power_only;
};

TEST(AcceleratorSpec, EachOverrideMovesOnlyItsTerm) {
  const std::vector<FieldCase> cases = {
      {"peak_tflops_bf16", [](AcceleratorSpec* s) { s->peak_tflops_bf16 = 1500; }, Precision::kBf16,
       "h100-sxm-80gb", true, false, false, false},
      {"peak_tflops_fp8", [](AcceleratorSpec* s) { s->peak_tflops_fp8 = 3000; }, Precision::kFp8,
       "h100-sxm-80gb", true, false, false, false},
      {"peak_tflops_fp4", [](AcceleratorSpec* s) { s->peak_tflops_fp4 = 5500; }, Precision::kMxfp4,
       "mi355x-288gb", true, false, false, false},
      {"hbm_gb", [](AcceleratorSpec* s) { s->hbm_gb = 141; }, Precision::kBf16, "h100-sxm-80gb",
       false, false, true, false},
      {"hbm_tb_s", [](AcceleratorSpec* s) { s->hbm_tb_s = 8; }, Precision::kBf16, "h100-sxm-80gb",
       true, false, false, false},
      {"nvlink_gb_s", [](AcceleratorSpec* s) { s->nvlink_gb_s = 100; }, Precision::kBf16,
       "h100-sxm-80gb", false, true, false, false},
      {"nvlink_domain", [](AcceleratorSpec* s) { s->nvlink_domain = 4; }, Precision::kBf16,
       "h100-sxm-80gb", false, true, false, false},
      {"inter_node_gbps_per_gpu", [](AcceleratorSpec* s) { s->inter_node_gbps_per_gpu = 100; },
       Precision::kBf16, "h100-sxm-80gb", false, true, false, false},
      {"tdp_watts", [](AcceleratorSpec* s) { s->tdp_watts = 900; }, Precision::kBf16,
       "h100-sxm-80gb", false, false, false, true},
      {"idle_watts", [](AcceleratorSpec* s) { s->idle_watts = 150; }, Precision::kBf16,
       "h100-sxm-80gb", false, false, false, true},
      // Exponentials 16x slower than Hopper's: the attention's forward waits on them.
      {"tensor_flops_per_exp", [](AcceleratorSpec* s) { s->tensor_flops_per_exp = 4096; },
       Precision::kBf16, "h100-sxm-80gb", true, false, false, false},
  };
  for (const FieldCase& c : cases) {
    SCOPED_TRACE(c.field);
    Scenario plain = Base();
    plain.cluster.accelerator = c.accelerator;
    plain.workload.precision = c.precision;
    if (c.precision == Precision::kMxfp4) plain.stack.fp8_recipe = "";
    // tp 8 inside the node, so that NVLink carries tensor-parallel traffic.
    plain.parallelism.tp = 8;
    plain.parallelism.sequence_parallel = true;
    const Prediction want = PredictOk(plain);
    Scenario described = plain;
    c.set(&described.cluster.accelerator_spec);
    const Prediction got = PredictOk(described);
    ASSERT_GT(want.tokens_per_s, 0);
    ASSERT_GT(got.tokens_per_s, 0);
    if (c.moves_compute) {
      EXPECT_NE(got.time.compute_s, want.time.compute_s);
    } else {
      EXPECT_EQ(got.time.compute_s, want.time.compute_s);
    }
    if (c.moves_comm) {
      EXPECT_NE(CommTotal(got), CommTotal(want));
    } else {
      EXPECT_EQ(CommTotal(got), CommTotal(want));
    }
    EXPECT_EQ(got.memory.total_bytes, want.memory.total_bytes);
    if (c.moves_memory_capacity) {
      EXPECT_NE(got.memory.capacity_bytes, want.memory.capacity_bytes);
    } else {
      EXPECT_EQ(got.memory.capacity_bytes, want.memory.capacity_bytes);
    }
    if (c.moves_power_only) {
      EXPECT_EQ(got.step_time_s, want.step_time_s);
      EXPECT_NE(got.power.watts_per_gpu, want.power.watts_per_gpu);
    }
    if (!c.moves_compute && !c.moves_comm && !c.moves_power_only) {
      EXPECT_EQ(got.step_time_s, want.step_time_s);
    }
  }
}

TEST(AcceleratorSpec, NetworkOverrideIsOneField) {
  // "h100-sxm-80gb with 800 Gb/s": faster data-parallel traffic, the rest as the catalog part.
  // (tp 8 fills each node, so each data-parallel ring has one GPU per node on the network.)
  Scenario plain = Base();
  plain.parallelism.tp = 8;
  plain.parallelism.sequence_parallel = true;
  Scenario fast = plain;
  fast.cluster.accelerator_spec.inter_node_gbps_per_gpu = 800;
  const Prediction a = PredictOk(plain), b = PredictOk(fast);
  EXPECT_LT(CommTotal(b), CommTotal(a));
  EXPECT_GE(b.tokens_per_s, a.tokens_per_s);
  EXPECT_EQ(b.uncertainty.basis, a.uncertainty.basis);  // its own efficiencies: no widening
}

TEST(AcceleratorSpec, OtherSiliconBorrowsEfficienciesAndWidensTheBand) {
  Scenario plain = Base();
  Scenario faster = plain;
  faster.cluster.accelerator_spec.peak_tflops_bf16 = 1500;
  const Prediction a = PredictOk(plain), b = PredictOk(faster);
  const double width_a = std::log(a.uncertainty.high / a.uncertainty.low);
  const double width_b = std::log(b.uncertainty.high / b.uncertainty.low);
  EXPECT_GT(width_b, 1.4 * width_a);
  EXPECT_NE(b.uncertainty.basis.find("efficiencies of h100-sxm-80gb"), std::string::npos)
      << b.uncertainty.basis;
}

TEST(AcceleratorSpec, ANewPartBorrowsTheNearestGeneration) {
  Scenario s = Base();
  s.cluster.accelerator = "vendor-quote-1";
  s.cluster.accelerator_spec.peak_tflops_bf16 = 2300;  // B200-class
  s.cluster.accelerator_spec.hbm_tb_s = 8;
  s.cluster.accelerator_spec.hbm_gb = 192;
  const Prediction p = PredictOk(s);
  ASSERT_GT(p.tokens_per_s, 0);
  EXPECT_NE(p.uncertainty.basis.find("nearest generation"), std::string::npos)
      << p.uncertainty.basis;
  bool warned = false;
  for (const std::string& w : p.warnings) {
    warned = warned || w.find("vendor-quote-1 is described") != std::string::npos;
  }
  EXPECT_TRUE(warned);
  // Without a bf16 peak or a base, there is nothing to start from.
  Scenario bare = Base();
  bare.cluster.accelerator = "vendor-quote-2";
  bare.cluster.accelerator_spec.hbm_gb = 192;
  absl::StatusOr<Prediction> refused = Predict(bare, Cat(), Profile::BuiltinDefault());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("accelerator_spec.peak_tflops_bf16"), std::string::npos)
      << refused.status();
}

TEST(AcceleratorSpec, BadSpecsNameTheirField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::function<void(AcceleratorSpec*)>, const char*>> cases = {
      {[](AcceleratorSpec* s) { s->peak_tflops_bf16 = -1; }, "peak_tflops_bf16"},
      {[nan](AcceleratorSpec* s) { s->peak_tflops_fp8 = nan; }, "peak_tflops_fp8"},
      {[inf](AcceleratorSpec* s) { s->peak_tflops_fp4 = inf; }, "peak_tflops_fp4"},
      {[](AcceleratorSpec* s) { s->hbm_gb = -80; }, "hbm_gb"},
      {[](AcceleratorSpec* s) { s->hbm_tb_s = 1e9; }, "hbm_tb_s"},
      {[](AcceleratorSpec* s) { s->nvlink_domain = -8; }, "nvlink_domain"},
      {[](AcceleratorSpec* s) { s->nvlink_gb_s = -1; }, "nvlink_gb_s"},
      {[](AcceleratorSpec* s) { s->inter_node_gbps_per_gpu = 1e12; }, "inter_node_gbps_per_gpu"},
      {[](AcceleratorSpec* s) { s->tdp_watts = 50; }, "tdp_watts"},  // below idle
      {[](AcceleratorSpec* s) { s->idle_watts = 800; }, "idle_watts"},
      {[](AcceleratorSpec* s) { s->tensor_flops_per_exp = -512; }, "tensor_flops_per_exp"},
      {[](AcceleratorSpec* s) { s->id = "bad id!"; }, "accelerator_spec.id"},
      {[](AcceleratorSpec* s) { s->like = "no-such-gpu"; }, "accelerator_spec.like"},
  };
  for (const auto& [set, field] : cases) {
    Scenario s = Base();
    set(&s.cluster.accelerator_spec);
    absl::StatusOr<Prediction> p = Predict(s, Cat(), Profile::BuiltinDefault());
    ASSERT_FALSE(p.ok()) << field;
    EXPECT_NE(p.status().message().find(absl::StrCat("scenario.cluster.accelerator_spec")),
              std::string::npos)
        << p.status();
    EXPECT_NE(p.status().message().find(field), std::string::npos) << p.status();
  }
}

TEST(AcceleratorSpec, DescribeKeepsTheBaseFamilyAndRatios) {
  const Accelerator& h100 = *Cat().FindAccelerator("h100-sxm-80gb");
  AcceleratorSpec spec;
  spec.id = "h100-next";
  spec.peak_tflops_fp8 = 2 * h100.peak_tflops_fp8;
  absl::StatusOr<Accelerator> a = DescribeAccelerator(h100, spec, "spec");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->id, "h100-next");
  EXPECT_EQ(a->family, h100.family);
  EXPECT_EQ(a->like, "h100-sxm-80gb");
  EXPECT_TRUE(a->borrowed);
  EXPECT_EQ(a->peak_tflops_bf16, h100.peak_tflops_bf16);
  EXPECT_EQ(a->peak_tflops_fp8, 2 * h100.peak_tflops_fp8);
  EXPECT_EQ(a->hbm_gib, h100.hbm_gib);
  // A network-only change is the same silicon.
  AcceleratorSpec net;
  net.inter_node_gbps_per_gpu = 800;
  absl::StatusOr<Accelerator> b = DescribeAccelerator(h100, net, "spec");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->borrowed);
  EXPECT_EQ(b->net_gbps, 800);
}

// --- MXFP4 -----------------------------------------------------------------------------------

TEST(Mxfp4, AnswersOnMi355xFasterThanFp8) {
  Scenario s = Base();
  s.cluster.accelerator = "mi355x-288gb";
  s.workload.precision = Precision::kFp8;
  const Prediction fp8 = PredictOk(s);
  s.workload.precision = Precision::kMxfp4;
  const Prediction fp4 = PredictOk(s);
  EXPECT_GT(fp4.tokens_per_s, fp8.tokens_per_s);
  EXPECT_EQ(fp4.stack.fp8_recipe, Fp8Recipe::kMxfp4);
  EXPECT_NE(fp4.uncertainty.basis.find("fp4"), std::string::npos);
  EXPECT_GT(Cat().FindAccelerator("mi350x-288gb")->PeakFlops(Precision::kMxfp4), 9e15);
}

TEST(Mxfp4, PartsWithoutItSayWhy) {
  const std::vector<std::pair<const char*, Precision>> cases = {
      {"h100-sxm-80gb", Precision::kMxfp4},   // no fp4 at all
      {"b200-sxm-180gb", Precision::kMxfp4},  // fp4 is nvfp4
      {"mi355x-288gb", Precision::kNvfp4},    // fp4 is mxfp4
      {"mi300x-192gb", Precision::kMxfp4},
  };
  for (const auto& [id, precision] : cases) {
    Scenario s = Base();
    s.cluster.accelerator = id;
    s.workload.precision = precision;
    absl::StatusOr<Prediction> p = Predict(s, Cat(), Profile::BuiltinDefault());
    ASSERT_FALSE(p.ok()) << id;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string msg(p.status().message());
    EXPECT_NE(msg.find("scenario.workload.precision"), std::string::npos) << msg;
    const bool has_other = std::string(id) == "b200-sxm-180gb" || std::string(id) == "mi355x-288gb";
    EXPECT_NE(msg.find(has_other ? "its fp4 format is" : "no fp4 tensor cores"), std::string::npos)
        << msg;
  }
}

TEST(Mxfp4, CastMovesHalfAByteAndABlockScale) {
  // bf16 in, both orientations out at 0.5 B an element plus 1 B of scale per 32 elements.
  EXPECT_DOUBLE_EQ(CastBytesPerElement(Fp8Recipe::kMxfp4), 2 + 2 * (0.5 + 1.0 / 32));
  EXPECT_LT(CastBytesPerElement(Fp8Recipe::kMxfp4), CastBytesPerElement(Fp8Recipe::kMxfp8));
}

// --- Headroom ----------------------------------------------------------------------------------

Scenario Unplanned(double headroom) {
  Scenario s = testing::StudyScenario("llama2-70b", "h100-sxm-80gb", 64);
  s.workload.global_batch = 512;
  s.cluster.hbm_headroom = headroom;
  return s;
}

TEST(Headroom, PlannerKeepsTheShareFree) {
  for (const double h : {0.0, 0.05, 0.15, 0.3}) {
    absl::StatusOr<Scenario> s = ResolveScenario(Unplanned(h), Cat());
    ASSERT_TRUE(s.ok()) << s.status();
    PlanOptions o;
    o.top_k = 20;
    absl::StatusOr<PlanResult> r = Plan(*s, Cat(), Profile::BuiltinDefault(), o);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_FALSE(r->top.empty()) << h;
    for (const Prediction& p : r->top) {
      EXPECT_LE(p.memory.total_bytes, (1 - h) * p.memory.capacity_bytes) << h;
    }
    if (h > 0) {
      EXPECT_GT(r->infeasible_reasons.count(HeadroomReason(h)), 0u) << h;
    }
  }
}

TEST(Headroom, DefaultIsAppliedAndRangeChecked) {
  Scenario s = Unplanned(0);
  s.cluster.hbm_headroom.reset();
  absl::StatusOr<Scenario> r = ResolveScenario(s, Cat());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cluster.hbm_headroom, kDefaultHbmHeadroom);
  for (const double bad : {-0.1, 0.9, std::numeric_limits<double>::quiet_NaN()}) {
    s.cluster.hbm_headroom = bad;
    absl::StatusOr<Scenario> e = ResolveScenario(s, Cat());
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("scenario.cluster.hbm_headroom"), std::string::npos);
  }
}

TEST(Headroom, AFixedLayoutIsWarnedNotRefused) {
  // The planner's own best layout at no headroom, fixed by the request with a headroom it
  // breaks: still predicted, with a warning.
  absl::StatusOr<Prediction> best = Predict(Unplanned(0), Cat(), Profile::BuiltinDefault());
  ASSERT_TRUE(best.ok());
  const double used = static_cast<double>(best->memory.total_bytes) / best->memory.capacity_bytes;
  Scenario fixed = Unplanned(std::min(kMaxHbmHeadroom, 1 - used + 0.05));
  fixed.parallelism = best->layout;
  absl::StatusOr<Prediction> p = Predict(fixed, Cat(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->memory.fits);
  bool warned = false;
  for (const std::string& w : p->warnings)
    warned = warned || w.find("headroom") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(Headroom, WhenNothingLeavesItFreeThePlannerStillAnswers) {
  // At the largest headroom some models only fit close to the capacity: the planner falls back
  // to the layouts that fit, and warns.
  // llama2-70b on 16 H100s: its layouts that fit use well over half the HBM.
  Scenario s = testing::StudyScenario("llama2-70b", "h100-sxm-80gb", 16);
  s.workload.global_batch = 48;
  s.cluster.hbm_headroom = kMaxHbmHeadroom;
  absl::StatusOr<Prediction> p = Predict(s, Cat(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->memory.fits);
  EXPECT_GT(p->memory.total_bytes, (1 - kMaxHbmHeadroom) * p->memory.capacity_bytes);
  bool warned = false;
  for (const std::string& w : p->warnings)
    warned = warned || w.find("headroom") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace scalecast
