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
  EXPECT_GT(parsed->size(), 500u);
  std::set<std::string> families;
  for (const auto& [id, a] : Catalog::Builtin().accelerators()) families.insert(a.family);
  for (const RecipePreset& p : *parsed) {
    const ModelPreset* model = Catalog::Builtin().FindModel(p.model);
    ASSERT_NE(model, nullptr) << p.name;
    EXPECT_TRUE(model->spec.moe.enabled()) << p.name;
    EXPECT_TRUE(families.count(p.family)) << p.name;
    EXPECT_FALSE(p.fp8_attention && p.precision == "bf16") << p.name;
    // The workload configs (to 0.5.0) are one preset for any count and are not read for
    // recompute or MTP; 0.6.0's recipes each name their count.
    const bool recipes = p.tag >= "v0.6.0";
    EXPECT_EQ(p.gpus > 0, recipes) << p.name;
    if (!recipes) {
      EXPECT_FALSE(p.settings.recompute.has_value() || p.settings.mtp_layers) << p.name;
    }
  }
}

TEST(RecipePresets, AMalformedLineIsRefusedByNumber) {
  const auto message = [](const char* text) {
    absl::StatusOr<std::vector<RecipePreset>> parsed = ParseRecipePresets(text);
    return parsed.ok() ? std::string("ok") : std::string(parsed.status().message());
  };
  EXPECT_EQ(message("# comment\nv0.5.0 deepseek-v3 gb300 mxfp8 - warp_drive - X_V2\n"),
            "bridge_presets line 2: unknown switch 'warp_drive'");
  EXPECT_EQ(message("v0.5.0 deepseek-v3 gb300 mxfp8 - -\n"),
            "bridge_presets line 1: expected 8 words (tag model family precision gpus switches "
            "settings name), got 6");
  EXPECT_EQ(message("v0.6.0 deepseek-v3 gb300 mxfp8 0 - - x_config\n"),
            "bridge_presets line 1: bad GPU count '0'");
  EXPECT_EQ(message("v0.6.0 deepseek-v3 gb300 mxfp8 64 - recompute=some x_config\n"),
            "bridge_presets line 1: bad setting 'recompute=some'");
  EXPECT_EQ(message("v0.6.0 deepseek-v3 gb300 mxfp8 64 - recompute=selective,modules=mlp+fins "
                    "x_config\n"),
            "bridge_presets line 1: bad setting 'modules=mlp+fins'");
  EXPECT_EQ(message("v0.6.0 deepseek-v3 gb300 mxfp8 64 - recompute=full,modules=mlp x_config\n"),
            "bridge_presets line 1: modules= needs recompute=selective");
  EXPECT_EQ(message("v0.6.0 deepseek-v3 gb300 mxfp8 64 - mtp=-1 x_config\n"),
            "bridge_presets line 1: bad setting 'mtp=-1'");
  EXPECT_EQ(message("v0.6.0 deepseek-v3 gb300 mxfp8 64 - warp=9 x_config\n"),
            "bridge_presets line 1: unknown setting 'warp=9'");
  absl::StatusOr<std::vector<RecipePreset>> good = ParseRecipePresets(
      "v0.6.0 deepseek-v3 gb300 mxfp8 64 cuda_graphs recompute=full,layers=2,mtp=1 x_config\n");
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->size(), 1u);
  const RecipePreset& p = good->front();
  EXPECT_EQ(p.gpus, 64);
  EXPECT_TRUE(p.cuda_graphs);
  EXPECT_EQ(p.settings.recompute, Recompute::kFull);
  EXPECT_EQ(p.settings.recompute_layers, 2);
  EXPECT_EQ(p.settings.mtp_layers, 1);
  EXPECT_EQ(p.name, "x_config");
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

// Nemotron 3 Super on 64 H100 in bf16 under NeMo `version`, layout left to the planner.
Scenario SuperOnH100(const char* version) {
  Scenario s = testing::StudyScenario("nemotron-3-super-120b", "h100-sxm-80gb", 64);
  s.workload.precision = Precision::kBf16;
  s.workload.seq_len = 4096;
  s.workload.global_batch = 1280;
  s.framework = "nemo";
  s.stack.version = version;
  return s;
}

TEST(RecipePresets, ARecipeSetsTheRecomputeAndMtpTheRequestLeavesUnset) {
  // From 0.6.0 (the 26.08 container) Megatron-Bridge writes a recipe per GPU count. Super's on
  // 64 H100 recomputes four modules and trains 2 MTP modules
  // (recipes/nemotronh/h100/nemotron_3_super.py), where the catalog's Super has its config's 1.
  // Its layout left to the planner, the planner picks the recompute with it; the MTP passes are
  // the recipe's either way.
  Scenario s = SuperOnH100("26.08");
  absl::StatusOr<ResolvedScenario> r = Resolve(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->scenario.parallelism.recompute, Recompute::kUnspecified);
  EXPECT_EQ(r->scenario.workload.model.mtp_layers, 2);
  // At the recipe's layout (TP 1, PP 2, EP 32) the recipe's recompute too.
  s.parallelism = testing::ExpertLayout(1, 2, 1, 32, Recompute::kUnspecified);
  r = Resolve(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->scenario.parallelism.recompute, Recompute::kSelective);
  EXPECT_EQ(r->scenario.parallelism.recompute_modules,
            Bit(RecomputeModule::kLayernorm) | Bit(RecomputeModule::kMoeAct) |
                Bit(RecomputeModule::kMoe) | Bit(RecomputeModule::kCoreAttn));
  EXPECT_EQ(r->scenario.workload.model.mtp_layers, 2);
  EXPECT_TRUE(absl::StrContains(r->stack.release_note,
                                "the same recipe sets recompute selective "
                                "(core_attn,layernorm,moe_act,moe) and 2 MTP modules"))
      << r->stack.release_note;
  // What the request states wins.
  s.parallelism.recompute = Recompute::kNone;
  s.parallelism.recompute_modules = 0;
  s.workload.model.mtp_layers = 1;
  r = Resolve(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->scenario.parallelism.recompute, Recompute::kNone);
  EXPECT_EQ(r->scenario.workload.model.mtp_layers, 1);
  EXPECT_FALSE(absl::StrContains(r->stack.release_note, "recipe sets")) << r->stack.release_note;
  // 0.5.0's presets (workload configs) say neither: the catalog's MTP module stays.
  r = Resolve(SuperOnH100("26.06"), Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->scenario.workload.model.mtp_layers, 1);
  EXPECT_FALSE(absl::StrContains(r->stack.release_note, "recipe sets")) << r->stack.release_note;
}

TEST(RecipePresets, TheRecipeIsTheOneForTheNearestGpuCount) {
  // 0.6.0 has DeepSeek-V3 recipes for 64 and 1,024 H100 in bf16; 0.5.0 one preset for any count.
  const auto gpus = [](int n) {
    const RecipePreset* p = FindRecipePreset("v0.6.0", "deepseek-v3", "h100", "bf16", n);
    return p == nullptr ? -1 : p->gpus;
  };
  EXPECT_EQ(gpus(64), 64);
  EXPECT_EQ(gpus(16), 64);
  EXPECT_EQ(gpus(256), 64) << "4x from both: the smaller";
  EXPECT_EQ(gpus(512), 1024);
  EXPECT_EQ(gpus(8192), 1024);
  const RecipePreset* any = FindRecipePreset("v0.5.0", "deepseek-v3", "h100", "bf16", 512);
  ASSERT_NE(any, nullptr);
  EXPECT_EQ(any->gpus, 0);
  EXPECT_EQ(FindRecipePreset("v0.6.0", "deepseek-v3", "h200", "bf16", 64), nullptr);
}

TEST(RecipePresets, ARecipesRecomputeIsWhatThePredictionPrices) {
  // Super's 0.6.0 recipe on 64 H100 recomputes four modules: slower than the same request with
  // no recompute stated.
  Scenario s = SuperOnH100("26.08");
  s.parallelism = testing::ExpertLayout(1, 2, 1, 32, Recompute::kUnspecified);
  s.parallelism.micro_batch = 1;
  absl::StatusOr<Prediction> recipe = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  s.parallelism.recompute = Recompute::kNone;
  absl::StatusOr<Prediction> none = Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_GT(recipe->time.recompute_s, 0.0);
  EXPECT_EQ(none->time.recompute_s, 0.0);
  EXPECT_LT(recipe->tokens_per_s_per_gpu, none->tokens_per_s_per_gpu);
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
