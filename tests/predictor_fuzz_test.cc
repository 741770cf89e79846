// Random scenarios over the whole catalog: every preset, accelerator, framework and release,
// with layout fields and stack options set at random. Each one is answered with a physical
// prediction (finite, positive, its parts within the step, HFU at least MFU, the value inside
// its band) or refused with a status that names the field or says no layout fits.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

class RandomScenarios {
 public:
  explicit RandomScenarios(uint32_t seed) : rng_(seed) {
    const Catalog& catalog = Catalog::Builtin();
    for (const auto& [id, m] : catalog.models()) models_.push_back(id);
    for (const auto& [id, a] : catalog.accelerators()) accelerators_.push_back(id);
    for (const Framework& f : Frameworks()) frameworks_.push_back(&f);
  }

  Scenario Next() {
    Scenario s;
    s.workload.model.name = models_[Pick(models_.size())];
    s.cluster.accelerator = accelerators_[Pick(accelerators_.size())];
    s.cluster.num_gpus = OneOf({1, 2, 8, 24, 64, 128, 512, 1000, 2048, 8192, 16384});
    s.workload.seq_len = OneOf({128, 1024, 2048, 4096, 8192, 32768, 131072});
    s.workload.global_batch =
        std::max<int64_t>(1, int64_t{s.cluster.num_gpus} * (1 << Pick(4)) / (1 << Pick(3)));
    s.workload.precision = static_cast<Precision>(Pick(5));  // unset, bf16, fp16, fp8, mxfp8
    PickFramework(&s);
    PickLayout(&s.parallelism);
    PickStack(&s.stack);
    return s;
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool Sometimes(size_t n) { return Pick(n) == 0; }
  int OneOf(std::initializer_list<int> values) { return values.begin()[Pick(values.size())]; }
  int Degree() { return OneOf({0, 0, 1, 2, 4, 8}); }

  // A framework of the table (or an unknown name), at one of its releases half the time.
  void PickFramework(Scenario* s) {
    if (Sometimes(frameworks_.size() + 1)) {
      s->framework = "an-unknown-framework";
      return;
    }
    const Framework& f = *frameworks_[Pick(frameworks_.size())];
    s->framework = f.name;
    if (!f.versions.empty() && Sometimes(2)) {
      s->stack.version = f.versions[Pick(f.versions.size())].version;
    }
  }

  void PickLayout(Parallelism* p) {
    if (Sometimes(4)) p->tp = Degree();
    if (Sometimes(4)) p->pp = Degree();
    if (Sometimes(6)) p->cp = Degree();
    if (Sometimes(6)) p->ep = Degree();
    if (Sometimes(8)) p->etp = Degree();
    if (Sometimes(6)) p->vpp = Degree();
    if (Sometimes(6)) p->micro_batch = Degree();
    if (Sometimes(5)) p->recompute = static_cast<Recompute>(Pick(4));
    if (Sometimes(5)) p->sharding = static_cast<Sharding>(Pick(6));
    if (Sometimes(8)) p->recompute_layers = static_cast<int>(Pick(4));
    if (Sometimes(10)) p->cpu_offload_layers = static_cast<int>(Pick(4));
    if (Sometimes(10)) p->cp_a2a = Degree();
    if (Sometimes(8)) p->sequence_parallel = Sometimes(2);
  }

  void PickStack(StackOptions* o) {
    static const char* const kKernels[] = {"math", "fa1", "triton", "fa2", "fa3", "cudnn", "sdpa"};
    static const char* const kRecipes[] = {"delayed", "tensorwise", "rowwise", "blockwise",
                                           "mxfp8"};
    if (Sometimes(5)) o->attention_kernel = kKernels[Pick(std::size(kKernels))];
    if (Sometimes(6)) o->fp8_recipe = kRecipes[Pick(std::size(kRecipes))];
    static const char* const kExchanges[] = {"p2p", "a2a", "allgather", "a2a+p2p", "ulysses"};
    if (Sometimes(10)) o->cp_comm_type = kExchanges[Pick(std::size(kExchanges))];
    for (std::optional<bool>* flag :
         {&o->tp_comm_overlap, &o->dp_overlap, &o->cuda_graphs, &o->compiled, &o->fused_dispatch,
          &o->ep_comm_overlap, &o->bf16_grads, &o->fp8_param_gather, &o->full_step_graph,
          &o->fp8_attention, &o->fp32_params, &o->fused_kernels}) {
      if (Sometimes(6)) *flag = Sometimes(2);
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> models_, accelerators_;
  std::vector<const Framework*> frameworks_;
};

std::string Describe(const Scenario& s) {
  const Parallelism& p = s.parallelism;
  return absl::StrCat(s.workload.model.name, " on ", s.cluster.num_gpus, " ", s.cluster.accelerator,
                      ", seq ", s.workload.seq_len, " batch ", s.workload.global_batch,
                      ", precision ", static_cast<int>(s.workload.precision), ", framework '",
                      s.framework, "' ", s.stack.version, ", tp ", p.tp, " pp ", p.pp, " cp ", p.cp,
                      " ep ", p.ep, " vpp ", p.vpp, " mb ", p.micro_batch);
}

TEST(PredictorFuzz, RandomScenariosAreAnsweredPhysicallyOrRefusedByField) {
  RandomScenarios random(20261206);
  const int kScenarios = 1500;
  int answered = 0;
  for (int i = 0; i < kScenarios; ++i) {
    const Scenario s = random.Next();
    const absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
    if (!p.ok()) {
      const absl::Status& st = p.status();
      EXPECT_TRUE(st.code() == absl::StatusCode::kInvalidArgument ||
                  st.code() == absl::StatusCode::kNotFound ||
                  st.code() == absl::StatusCode::kFailedPrecondition)
          << Describe(s) << ": " << st;
      EXPECT_TRUE(absl::StartsWith(st.message(), "scenario.") ||
                  absl::StartsWith(st.message(), "no layout fits"))
          << Describe(s) << ": " << st;
      continue;
    }
    ++answered;
    const std::vector<std::string> wrong = testing::Unphysical(*p);
    EXPECT_TRUE(wrong.empty()) << Describe(s) << ": " << absl::StrJoin(wrong, "; ");
  }
  // Both sides taken: most fixed fields at random make a layout no framework runs, but a
  // good share of the scenarios are answered.
  EXPECT_GT(answered, kScenarios / 5);
  EXPECT_LT(answered, kScenarios);
}

// Scenarios the random ones once found with HFU below MFU: the slowest pipeline stage, whose
// FLOPs HFU counted, held fewer FLOPs than the average stage.
TEST(PredictorFuzz, HfuIsNeverBelowMfu) {
  struct Case {
    const char* model;
    const char* accelerator;
    int gpus, seq, batch;
    Precision precision;
    const char* framework;
    Recompute recompute;
  };
  const Case cases[] = {
      {"pythia-70m", "rtx6000-ada-48gb", 96, 512, 96, Precision::kBf16, "megatron-deepspeed",
       Recompute::kNone},
      {"cerebras-gpt-111m", "gh200-96gb", 16384, 128, 65536, Precision::kUnspecified,
       "megatron-deepspeed", Recompute::kNone},
      {"gemma3-1b", "h100-nvl-94gb", 8192, 2048, 4096, Precision::kBf16, "paddlepaddle",
       Recompute::kUnspecified},
  };
  for (const Case& c : cases) {
    Scenario s;
    s.workload.model.name = c.model;
    s.cluster.accelerator = c.accelerator;
    s.cluster.num_gpus = c.gpus;
    s.workload.seq_len = c.seq;
    s.workload.global_batch = c.batch;
    s.workload.precision = c.precision;
    s.framework = c.framework;
    s.parallelism.recompute = c.recompute;
    const absl::StatusOr<Prediction> p = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
    ASSERT_TRUE(p.ok()) << Describe(s) << ": " << p.status();
    EXPECT_GE(p->hfu, p->mfu) << Describe(s);
  }
}

}  // namespace
}  // namespace scalecast
