// Megatron-Bridge's MoE performance presets (model/recipe_presets.h): a request that names a
// Bridge release runs the preset of its model, GPU and precision where it leaves a switch unset.
#include "model/recipe_presets.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/embedded_data.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

// DeepSeek-V3 on 256 GB300 in MXFP8 under `framework` `version`, layout left to the planner.
Scenario DeepSeekOnGb300(const char* framework, const char* version) {
  Scenario s = testing::StudyScenario("deepseek-v3", "gb300-nvl72", 256);
  s.cluster.gpus_per_node = 4;
  s.workload.precision = Precision::kMxfp8;
  s.framework = framework;
  s.stack.version = version;
  return s;
}

Stack StackOf(const Scenario& s) {
  absl::StatusOr<ResolvedScenario> r = Resolve(s, Catalog::Builtin());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->stack : Stack{};
}

TEST(RecipePresets, BuiltinTableParsesAndNamesCatalogParts) {
  absl::StatusOr<std::vector<RecipePreset>> parsed =
      ParseRecipePresets(embedded::kBridgePresetsText);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), BuiltinRecipePresets().size());
  EXPECT_GT(parsed->size(), 300u);
  std::set<std::string> families;
  for (const auto& [id, a] : Catalog::Builtin().accelerators()) families.insert(a.family);
  for (const RecipePreset& p : *parsed) {
    const ModelPreset* model = Catalog::Builtin().FindModel(p.model);
    ASSERT_NE(model, nullptr) << p.name;
    EXPECT_TRUE(model->spec.moe.enabled()) << p.name;
    EXPECT_TRUE(families.count(p.family)) << p.name;
    EXPECT_FALSE(p.fp8_attention && p.precision == "bf16") << p.name;
  }
}

TEST(RecipePresets, AMalformedLineIsRefusedByNumber) {
  absl::StatusOr<std::vector<RecipePreset>> bad =
      ParseRecipePresets("# comment\nv0.5.0 deepseek-v3 gb300 mxfp8 warp_drive X_V2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "bridge_presets line 2: unknown switch 'warp_drive'");
  bad = ParseRecipePresets("v0.5.0 deepseek-v3 gb300 mxfp8 -\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "bridge_presets line 1: expected 6 words (tag model family precision switches "
            "name), got 5");
}

TEST(RecipePresets, AReleaseRunsThePresetOfItsModelGpuAndPrecision) {
  // Megatron-Bridge 0.5.0 (the 26.06 container) runs DeepSeek-V3 on GB300 in MXFP8 as one CUDA
  // graph of the whole step with the all-to-alls overlapped and the attention in fp8
  // (DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2), which most of its presets do not.
  const Stack at_0_5 = StackOf(DeepSeekOnGb300("nemo", "26.06"));
  EXPECT_TRUE(at_0_5.full_step_graph);
  EXPECT_TRUE(at_0_5.ep_comm_overlap);
  EXPECT_TRUE(at_0_5.fp8_attention);
  EXPECT_TRUE(at_0_5.fused_dispatch);
  EXPECT_TRUE(absl::StrContains(at_0_5.release_note,
                                "scenario.stack: as Megatron-Bridge v0.5.0's preset "
                                "DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2 runs it"))
      << at_0_5.release_note;
  // Its own number takes the same presets; 0.4.0's preset had no graph and no overlap.
  EXPECT_TRUE(StackOf(DeepSeekOnGb300("megatron-bridge", "0.5")).full_step_graph);
  const Stack at_0_4 = StackOf(DeepSeekOnGb300("nemo", "26.04"));
  EXPECT_FALSE(at_0_4.full_step_graph);
  EXPECT_FALSE(at_0_4.ep_comm_overlap);
  EXPECT_TRUE(at_0_4.fused_dispatch);
  // A Megatron container number is the NeMo container of that number, presets included; a
  // Megatron-Core release has none, nor has 25.09 (whose presets were YAML files).
  EXPECT_TRUE(StackOf(DeepSeekOnGb300("megatron", "26.06")).full_step_graph);
  EXPECT_TRUE(StackOf(DeepSeekOnGb300("megatron", "0.18")).release_note.empty());
  EXPECT_FALSE(StackOf(DeepSeekOnGb300("nemo", "25.09")).full_step_graph);
}

TEST(RecipePresets, WhatTheRequestStatesWins) {
  Scenario s = DeepSeekOnGb300("nemo", "26.06");
  s.stack.full_step_graph = false;
  s.stack.fp8_attention = false;
  const Stack stack = StackOf(s);
  EXPECT_FALSE(stack.full_step_graph);
  EXPECT_FALSE(stack.fp8_attention);
  EXPECT_TRUE(stack.ep_comm_overlap);
  EXPECT_TRUE(absl::StrContains(stack.release_note,
                                "fused_dispatch, cuda_graphs, ep_comm_overlap on (the switches"))
      << stack.release_note;
}

TEST(RecipePresets, OnlyAPresetsModelGpuAndPrecisionTakeIt) {
  // No GB300 preset in bf16 captures the step; the dense Llama 3 70B and H200 have no preset.
  Scenario bf16 = DeepSeekOnGb300("nemo", "26.06");
  bf16.workload.precision = Precision::kBf16;
  EXPECT_FALSE(StackOf(bf16).full_step_graph);
  Scenario dense = DeepSeekOnGb300("nemo", "26.06");
  dense.workload.model.name = "llama3-70b";
  EXPECT_TRUE(StackOf(dense).release_note.empty());
  Scenario h200 = DeepSeekOnGb300("nemo", "26.06");
  h200.cluster.accelerator = "h200-sxm-141gb";
  h200.cluster.gpus_per_node = 8;
  h200.workload.precision = Precision::kFp8;
  EXPECT_TRUE(absl::StrContains(StackOf(h200).release_note, "H100_FP8_CS"))
      << "an H200 is an H100 die (family h100) and runs its presets";
}

TEST(RecipePresets, AModelDescribedByItsShapeIsTheCatalogModel) {
  ModelSpec described = Catalog::Builtin().FindModel("deepseek-v3")->spec;
  described.name = "DeepSeek-V3 (671B)";  // a measured run's CSV row names it in words
  EXPECT_EQ(CatalogModelOf(Catalog::Builtin(), described), "deepseek-v3");
  described.moe.num_experts = 128;
  EXPECT_EQ(CatalogModelOf(Catalog::Builtin(), described), "");
  EXPECT_EQ(RecipePrecision(Precision::kFp8, Fp8Recipe::kTensorwise), "fp8-tensorwise");
  EXPECT_EQ(RecipePrecision(Precision::kMxfp8, Fp8Recipe::kMxfp8), "mxfp8");
}

TEST(RecipePresets, ThePresetIsWhatThePredictionPrices) {
  // The preset's graph and overlap take the host and the all-to-alls off the step: faster than
  // the same request with them stated off, and the prediction says whose switches it ran.
  Scenario s = DeepSeekOnGb300("nemo", "26.06");
  s.parallelism = testing::ExpertLayout(1, 2, 8, 32, Recompute::kNone);
  s.parallelism.micro_batch = 1;
  absl::StatusOr<Prediction> preset = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(preset.ok()) << preset.status();
  s.stack.full_step_graph = s.stack.ep_comm_overlap = s.stack.fp8_attention = false;
  absl::StatusOr<Prediction> plain = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_GT(preset->tokens_per_s_per_gpu, 1.1 * plain->tokens_per_s_per_gpu);
  bool named = false;
  for (const std::string& w : preset->warnings) named |= absl::StrContains(w, "v0.5.0's preset");
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace scalecast
