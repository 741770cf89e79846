#include "model/catalog.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "model/embedded_data.h"
#include "model/fnv.h"
#include "model/hardware.h"
#include "model/model_fields_gen.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/version.h"
#include "model/workload.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

// The one FNV-1a the project hashes with (metric label digests, page tokens, the model version)
// gives the published test vectors (isthe.com/chongo/tech/comp/fnv, "FNV test vectors").
TEST(Fnv1a, GivesThePublishedTestVectors) {
  EXPECT_EQ(Fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968u);
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
  // A continued hash is the hash of the concatenation.
  EXPECT_EQ(Fnv1a64("bar", Fnv1a64("foo")), Fnv1a64("foobar"));
}

// The version the service reports and keys its sweep cache with is the release number and a
// digest of the built-in catalog, profile and recipes: a refit (any byte of them) changes it, the
// same files give the same digest in every process, and the release number is kept readable.
TEST(ModelVersion, IsTheReleaseAndADigestOfTheBuiltInData) {
  const std::string v = ModelVersion();
  ASSERT_EQ(v.rfind(SCALECAST_MODEL_VERSION "+", 0), 0u) << v;
  const std::string digest = v.substr(std::string(SCALECAST_MODEL_VERSION "+").size());
  EXPECT_EQ(digest.size(), 8u) << v;
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << v;
  EXPECT_EQ(ModelVersionOf("1", "catalog", "profile"), ModelVersionOf("1", "catalog", "profile"));
  EXPECT_NE(ModelVersionOf("1", "catalog", "profile"), ModelVersionOf("1", "catalog", "profilf"));
  EXPECT_NE(ModelVersionOf("1", "catalog", "profile"), ModelVersionOf("1", "catalo", "gprofile"));
  EXPECT_NE(ModelVersionOf("1", "catalog", "profile"), ModelVersionOf("2", "catalog", "profile"));
  // The release recipes too: a regenerated table changes what a release's requests run.
  EXPECT_NE(ModelVersionOf("1", "catalog", "profile", "presets"),
            ModelVersionOf("1", "catalog", "profile", "presetz"));
  EXPECT_NE(ModelVersionOf("1", "catalog", "profile", "presets"),
            ModelVersionOf("1", "catalog", "profilep", "resets"));
  EXPECT_NE(ModelVersionOf("1", "catalog", "profile", "presets"),
            ModelVersionOf("1", "catalog", "profile"));
  // Pinned (computed by hand from 64-bit FNV-1a, folded to 32 bits): the same on every platform
  // and in every process.
  EXPECT_EQ(ModelVersionOf("r", "", ""), "r+b3411f28");
  EXPECT_EQ(ModelVersionOf("1", "catalog", "profile"), "1+53f61c9e");
}

TEST(Catalog, BuiltinHasEveryAcceleratorAndPreset) {
  const Catalog& c = Catalog::Builtin();
  for (const char* id : {"v100-sxm2-32gb", "v100-sxm3-32gb",     "a100-sxm-40gb",  "a100-sxm-80gb",
                         "h100-sxm-80gb",  "h100-sxm-96gb-500w", "h100-pcie-80gb", "h200-sxm-141gb",
                         "b200-sxm-180gb", "gb200-nvl72",        "gb300-nvl72",    "mi300x-192gb",
                         "a800-sxm-80gb",  "h800-sxm-80gb",      "h20-sxm-96gb",   "b300-sxm-270gb",
                         "mi250x-128gb",   "mi325x-256gb",       "mi350x-288gb",   "mi355x-288gb",
                         "gh200-96gb",     "mi250-128gb",        "a100-pcie-40gb", "a100-pcie-80gb",
                         "v100-sxm2-16gb"}) {
    const Accelerator* a = c.FindAccelerator(id);
    ASSERT_NE(a, nullptr) << id;
    EXPECT_GT(a->PeakFlops(Precision::kFp16), 0) << id;
    EXPECT_LT(a->idle_w, a->power_limit_w) << id;
    EXPECT_LE(a->power_limit_w, a->tdp_w) << id;
    EXPECT_GT(a->sms, 0) << id;
  }
  for (const char* id : {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
                         "llama3-70b", "llama3-405b", "gpt3-175b", "mpt-7b", "mpt-30b", "mpt-70b",
                         "nemotron4-15b", "nemotron4-340b"}) {
    EXPECT_NE(c.FindModel(id), nullptr) << id;
  }
  EXPECT_EQ(c.FindAccelerator("tpu-v5"), nullptr);
  // Precision support follows the hardware generation.
  EXPECT_EQ(c.FindAccelerator("a100-sxm-80gb")->PeakFlops(Precision::kFp8), 0);
  EXPECT_EQ(c.FindAccelerator("v100-sxm2-32gb")->PeakFlops(Precision::kBf16), 0);
  EXPECT_GT(c.FindAccelerator("b200-sxm-180gb")->PeakFlops(Precision::kNvfp4), 0);
}

// Every physical number in the built-in catalog carries its source in a comment.
// Llama 2 7B (seq 4096, 64 sequences) on `gpus` of the part a request names `accelerator`,
// resolved as a prediction resolves it.
absl::StatusOr<Scenario> ResolveLlama2On(const Catalog& c, const char* accelerator, int gpus) {
  Scenario s;
  s.workload.model.name = "llama2-7b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 64;
  s.cluster.accelerator = accelerator;
  s.cluster.num_gpus = gpus;
  return ResolveScenario(s, c);
}

// Resolves llama2-7b on `gpus` of the part named `name`, expecting the part `id` and one warning on
// the field starting "accelerator '<name>' <reading>": the resolved scenario.
Scenario ReadWithWarning(const Catalog& c, const char* name, int gpus, const char* id,
                         absl::string_view reading) {
  absl::StatusOr<Scenario> r = ResolveLlama2On(c, name, gpus);
  EXPECT_TRUE(r.ok()) << name << ": " << r.status();
  if (!r.ok()) return Scenario();
  EXPECT_EQ(r->cluster.accelerator, id) << name;
  EXPECT_EQ(r->input_warnings.size(), 1u) << name;
  if (!r->input_warnings.empty()) {
    EXPECT_TRUE(absl::StartsWith(
        r->input_warnings[0],
        absl::StrCat("scenario.cluster.accelerator: accelerator '", name, "' ", reading)))
        << r->input_warnings[0];
  }
  return *std::move(r);
}

// Cloud TPU slice types name the part and the slice's size: the number counts TensorCores (two
// a chip on v3, v4 and v5p; one on v5e and v6e, whose number is their chips).
TEST(Catalog, CloudTpuSliceTypesNameTheirPartAndChips) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* id;
    const char* size;
  } slices[] = {{"v5p-128", "tpu-v5p", "128 TensorCores, 64 chips (2 a chip)"},
                {"TPU v4-512", "tpu-v4", "512 TensorCores, 256 chips (2 a chip)"},
                {"v3-8", "tpu-v3", "8 TensorCores, 4 chips (2 a chip)"},
                {"v5litepod-256", "tpu-v5e", "256 chips"},
                {"v5e-16", "tpu-v5e", "16 chips"},
                {"v6e-256", "tpu-v6e", "256 chips"}};
  for (const auto& t : slices) {
    EXPECT_EQ(c.FindAccelerator(t.query), nullptr) << t.query;
    std::string note;
    const Accelerator* a = c.FindSliceAccelerator(t.query, &note);
    ASSERT_NE(a, nullptr) << t.query;
    EXPECT_EQ(a->id, t.id) << t.query;
    EXPECT_EQ(note, absl::StrCat("accelerator '", t.query, "' is the Cloud TPU slice type of ",
                                 t.id, ": ", t.size, "; the cluster's GPU count counts chips"));
  }
  std::string note = "stale";
  for (const char* refused : {"v7-128", "h100-8", "v5p", "v5p-x", "v5p-0", "tpu-v5p"}) {
    EXPECT_EQ(c.FindSliceAccelerator(refused, &note), nullptr) << refused;
    EXPECT_TRUE(note.empty()) << refused;
  }
  // Through the predictor: answered, with the warning on the field.
  ReadWithWarning(c, "v5p-128", 64, "tpu-v5p", "is the Cloud TPU slice type");
}

// Systems (servers, cloud instance types, VM sizes) name a part and its node: the node's GPUs
// and the network a GPU has between nodes, which a cluster gets where it sets none; a name two
// systems fit names both; a system naming no part of the catalog is refused at load.
TEST(Catalog, SystemsNameAPartItsNodeAndItsNetwork) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* system;
    const char* part;
    int gpus_per_node;
    double net_gbps;
  } systems[] = {{"p4d.24xlarge", "p4d.24xlarge", "a100-sxm-40gb", 8, 50},
                 {"AWS p5.48xlarge", "p5.48xlarge", "h100-sxm-80gb", 8, 400},
                 {"a3-megagpu-8g", "a3-megagpu-8g", "h100-sxm-80gb", 8, 200},
                 {"Standard_ND96isr_H100_v5", "nd-h100-v5", "h100-sxm-80gb", 8, 400},
                 {"NVIDIA DGX A100 640GB", "dgx-a100-640gb", "a100-sxm-80gb", 8, 200},
                 {"DGX-2", "dgx-2", "v100-sxm3-32gb", 16, 50},
                 {"DGX GB200", "dgx-gb200", "gb200-nvl72", 4, 400},
                 {"BM.GPU.H100.8", "bm-gpu-h100-8", "h100-sxm-80gb", 8, 400}};
  for (const auto& t : systems) {
    absl::StatusOr<NamedPart> named = c.ResolveAccelerator(t.query, "cluster.accelerator");
    ASSERT_TRUE(named.ok()) << t.query << ": " << named.status();
    ASSERT_NE(named->system, nullptr) << t.query;
    EXPECT_EQ(named->system->id, t.system) << t.query;
    EXPECT_EQ(named->accelerator->id, t.part) << t.query;
    EXPECT_EQ(named->system->gpus_per_node, t.gpus_per_node) << t.query;
    EXPECT_EQ(named->system->net_gbps, t.net_gbps) << t.query;
    EXPECT_TRUE(absl::StrContains(named->note, absl::StrCat("x ", t.part, " a node")))
        << named->note;
  }
  // A part's own name is no system's; nor is an HGX baseboard's, whose network its builder picks.
  for (const char* board : {"HGX H100", "HGX B200", "HGX B300"}) {
    ASSERT_NE(c.FindAccelerator(board), nullptr) << board;
  }
  absl::StatusOr<NamedPart> part = c.ResolveAccelerator("h100-sxm-80gb", "a");
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->system, nullptr);
  EXPECT_TRUE(part->note.empty());
  // How each name was read, for callers that treat the ways apart (a stored run refuses a
  // usual-part name and keeps a system's node).
  using How = NamedPart::How;
  EXPECT_EQ(c.ReadAccelerator("h100-sxm-80gb")->how, How::kName);
  EXPECT_EQ(c.ReadAccelerator("H100")->how, How::kUsual);
  EXPECT_EQ(c.ReadAccelerator("v5p-128")->how, How::kSlice);
  EXPECT_EQ(c.ReadAccelerator("p4d.24xlarge")->how, How::kSystem);
  EXPECT_FALSE(c.ReadAccelerator("Ascend 910B").has_value());

  // The cluster gets the system's node and network, where it sets none.
  const Scenario r = ReadWithWarning(c, "p4d.24xlarge", 64, "a100-sxm-40gb", "is the ");
  EXPECT_EQ(r.cluster.gpus_per_node, 8);
  EXPECT_EQ(r.cluster.inter_node_gbps_per_gpu, 50);
  Scenario own;
  own.workload = r.workload;
  own.cluster.accelerator = "p4d.24xlarge";
  own.cluster.num_gpus = 4;                   // a node's GPUs, at most the cluster's
  own.cluster.inter_node_gbps_per_gpu = 100;  // the cluster's own network stands
  absl::StatusOr<Scenario> mine = ResolveScenario(own, c);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(mine->cluster.gpus_per_node, 4);
  EXPECT_EQ(mine->cluster.inter_node_gbps_per_gpu, 100);

  const std::string both = c.AcceleratorNotFound("DGX A100");
  EXPECT_TRUE(absl::StrContains(both, "ambiguous system 'DGX A100'")) << both;
  EXPECT_TRUE(absl::StrContains(both, "dgx-a100-320gb, dgx-a100-640gb")) << both;

  Catalog extra = c;
  const absl::Status bad = extra.MergeText(
      "system my-pod\n  accelerator = h900\n  gpus_per_node = 8\n  net_gbps = 400\nend\n");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.message(), "system my-pod: accelerator 'h900'")) << bad;
  ASSERT_TRUE(extra
                  .MergeText("system my-pod\n  accelerator = h100-sxm-80gb\n  gpus_per_node = 8\n"
                             "  net_gbps = 100\nend\n")
                  .ok());
  ASSERT_NE(extra.FindSystem("my-pod"), nullptr);
  EXPECT_EQ(extra.FindSystem("my-pod")->net_gbps, 100);
}

// Every value of a system names where it comes from.
TEST(Catalog, EverySystemValueCitesItsSource) {
  bool in_system = false;
  int checked = 0;
  for (absl::string_view line : absl::StrSplit(embedded::kCatalogText, '\n')) {
    absl::string_view body = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(body, "system ")) {
      in_system = true;
      EXPECT_NE(body.find("# source: "), absl::string_view::npos) << line;
    }
    if (body == "end" || absl::StartsWith(body, "end ")) in_system = false;
    if (!in_system || body.find('=') == absl::string_view::npos || body[0] == '#') continue;
    if (absl::StartsWith(body, "name")) continue;
    EXPECT_NE(body.find('#'), absl::string_view::npos) << "no source comment: " << line;
    ++checked;
  }
  EXPECT_GE(checked, 30 * 3);
}

TEST(Catalog, EveryAcceleratorValueCitesItsSource) {
  bool in_accelerator = false;
  int checked = 0;
  for (absl::string_view line : absl::StrSplit(embedded::kCatalogText, '\n')) {
    absl::string_view body = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(body, "accelerator ")) in_accelerator = true;
    if (body == "end" || absl::StartsWith(body, "end ")) in_accelerator = false;
    if (!in_accelerator || body.find('=') == absl::string_view::npos || body[0] == '#') continue;
    if (absl::StartsWith(body, "name") || absl::StartsWith(body, "family")) continue;
    EXPECT_NE(body.find('#'), absl::string_view::npos) << "no source comment: " << line;
    ++checked;
  }
  EXPECT_GE(checked, 20 * 15);
}

TEST(Catalog, PresetShapesGiveTheirPublishedParameterCounts) {
  const Catalog& c = Catalog::Builtin();
  // Hugging Face parameter counts (embedding and output untied for Llama).
  struct Case {
    const char* id;
    double params;
  } cases[] = {{"llama2-7b", 6.738e9}, {"llama2-13b", 13.016e9}, {"llama2-70b", 68.977e9},
               {"llama3-8b", 8.030e9}, {"llama3-70b", 70.554e9}, {"llama3-405b", 405.85e9}};
  for (const Case& k : cases) {
    const ParamCount p = CountParams(Shape(c.FindModel(k.id)->spec));
    EXPECT_NEAR(p.total / k.params, 1.0, 0.005) << k.id;
  }
}

// The mixture-of-experts presets: present, valid, and their defining numbers as published (the
// comments in model/data/catalog.txt name each config.json field).
TEST(Catalog, MixtureOfExpertsPresetsCarryTheirConfigs) {
  const Catalog& c = Catalog::Builtin();
  struct Case {
    const char* id;
    int layers, experts, top_k, expert_ffn, shared, dense_layers, head_dim, kv_lora_rank;
  } cases[] = {
      {"deepseek-v3", 61, 256, 8, 2048, 1, 3, 0, 512},
      {"kimi-k2", 61, 384, 8, 2048, 1, 1, 0, 512},
      {"qwen3-30b-a3b", 48, 128, 8, 768, 0, 0, 128, 0},
      {"qwen3-235b-a22b", 94, 128, 8, 1536, 0, 0, 128, 0},
      {"gpt-oss-20b", 24, 32, 4, 2880, 0, 0, 64, 0},
      {"gpt-oss-120b", 36, 128, 4, 2880, 0, 0, 64, 0},
      {"mixtral-8x7b", 32, 8, 2, 14336, 0, 0, 0, 0},
      {"mixtral-8x22b", 56, 8, 2, 16384, 0, 0, 0, 0},
      {"llama4-scout", 48, 16, 1, 8192, 1, 0, 128, 0},
      {"llama4-maverick", 48, 128, 1, 8192, 1, 24, 128, 0},
      {"grok-1", 64, 8, 2, 32768, 0, 0, 0, 0},
      {"nemotron-3-nano-30b-a3b", 52, 128, 6, 1856, 1, 0, 128, 0},
      {"nemotron-3-super-120b", 88, 512, 22, 2688, 1, 0, 128, 0},
  };
  for (const Case& k : cases) {
    const ModelPreset* p = c.FindModel(k.id);
    ASSERT_NE(p, nullptr) << k.id;
    const ModelSpec& m = p->spec;
    EXPECT_EQ(m.layers, k.layers) << k.id;
    EXPECT_EQ(m.moe.num_experts, k.experts) << k.id;
    EXPECT_EQ(m.moe.experts_per_token, k.top_k) << k.id;
    EXPECT_EQ(m.moe.expert_ffn_hidden, k.expert_ffn) << k.id;
    EXPECT_EQ(m.moe.shared_experts, k.shared) << k.id;
    EXPECT_EQ(m.moe.dense_layers, k.dense_layers) << k.id;
    EXPECT_EQ(m.head_dim, k.head_dim) << k.id;
    EXPECT_EQ(m.mla.kv_lora_rank, k.kv_lora_rank) << k.id;
    EXPECT_EQ(m.moe.capacity_factor, 0) << k.id;  // dropless unless a request says otherwise
    // A preset is also a valid request shape, under the same rule as the server's.
    EXPECT_TRUE(CheckModelFields(m, "scenario.workload.model").ok()) << k.id;
    EXPECT_EQ(HasDenseFfn(m), m.ffn_hidden > 0) << k.id;
  }
  // Local attention as published: GPT-OSS 128-token windows on every other layer, Llama 4
  // 8192-token chunks on three of four layers, Mixtral full attention (sliding_window null).
  EXPECT_EQ(c.FindModel("gpt-oss-120b")->spec.attention_window, 128);
  EXPECT_EQ(c.FindModel("gpt-oss-120b")->spec.full_attention_every, 2);
  EXPECT_EQ(c.FindModel("llama4-maverick")->spec.attention_window, 8192);
  EXPECT_EQ(c.FindModel("llama4-maverick")->spec.full_attention_every, 4);
  EXPECT_EQ(c.FindModel("mixtral-8x7b")->spec.attention_window, 0);
  // Nemotron-3 Nano's hybrid pattern: 23 Mamba-2, 23 MoE and 6 attention layers.
  const ModelSpec& nano = c.FindModel("nemotron-3-nano-30b-a3b")->spec;
  EXPECT_EQ(std::count(nano.layer_pattern.begin(), nano.layer_pattern.end(), 'M'), 23);
  EXPECT_EQ(std::count(nano.layer_pattern.begin(), nano.layer_pattern.end(), 'E'), 23);
  EXPECT_EQ(std::count(nano.layer_pattern.begin(), nano.layer_pattern.end(), '*'), 6);
  EXPECT_EQ(nano.mamba_heads * nano.mamba_head_dim, 4096);
  EXPECT_EQ(nano.mamba_groups, 8);
  EXPECT_EQ(nano.moe.shared_ffn_hidden, 3712);
  EXPECT_EQ(nano.mlp, Mlp::kPlain);  // squared ReLU
  const ModelSpec& dsv3 = c.FindModel("deepseek-v3")->spec;
  EXPECT_EQ(dsv3.mla.q_lora_rank, 1536);
  EXPECT_EQ(dsv3.mla.qk_nope_head_dim, 128);
  EXPECT_EQ(dsv3.mla.qk_rope_head_dim, 64);
  EXPECT_EQ(dsv3.mla.v_head_dim, 128);
  EXPECT_EQ(dsv3.ffn_hidden, 18432);
}

// Every MoE preset value line cites its config field (or says how it was derived).
TEST(Catalog, EveryMixtureOfExpertsValueCitesItsSource) {
  bool in_moe = false;
  int checked = 0;
  std::string block;
  for (absl::string_view line : absl::StrSplit(embedded::kCatalogText, '\n')) {
    absl::string_view body = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(body, "model ")) {
      block = std::string(body);
      in_moe = false;
    }
    if (absl::StartsWith(body, "moe.num_experts")) in_moe = true;
    if (body == "end") {
      if (in_moe) {
        EXPECT_NE(block.find("# source:"), std::string::npos) << block;
      }
      in_moe = false;
    }
    if (body.empty() || body[0] == '#' || absl::StartsWith(body, "model ") || body == "end") {
      continue;
    }
    if (absl::StartsWith(body, "moe.") || absl::StartsWith(body, "mla.") ||
        absl::StartsWith(body, "head_dim") || absl::StartsWith(body, "layer_pattern") ||
        absl::StartsWith(body, "mamba_") || absl::StartsWith(body, "attention_window") ||
        absl::StartsWith(body, "full_attention_every")) {
      EXPECT_NE(body.find('#'), absl::string_view::npos) << "no source comment: " << line;
      ++checked;
    }
  }
  EXPECT_GE(checked, 12 * 4);
}

// The published parameter counts of the MoE presets, total and activated (what one token passes
// through), within 3 %. Published figures: DeepSeek-V3 report (671B / 37B), Kimi-K2 model card
// (1T / 32B), Qwen3 model cards (30.5B / 3.3B; 235B / 22B), OpenAI gpt-oss model card (21B /
// 3.6B and 117B / 5.1B; its active counts leave out the input embedding), Mixtral paper
// (46.7B / 12.9B) and Mistral's 8x22B announcement (141B / 39B), Meta's Llama 4 announcement
// (Scout 109B / 17B, Maverick 400B / 17B), xAI's Grok-1 README (314B; no activated count
// published), NVIDIA's Nemotron-3 Nano card (31.6B / 3.2B without the input embedding) and
// Nemotron-3 Super's (120B / 12B, A12B, counted the same way); and a few dense presets' names.

TEST(Catalog, PresetsGiveTheirPublishedParameterCounts) {
  const Catalog& c = Catalog::Builtin();
  struct Case {
    const char* id;
    double total, activated;           // 0 = not published
    bool activated_without_embedding;  // the publisher leaves the input embedding out
  } cases[] = {
      {"deepseek-v3", 671e9, 37e9, false},
      {"kimi-k2", 1000e9, 32e9, false},
      {"qwen3-30b-a3b", 30.5e9, 3.3e9, false},
      {"qwen3-235b-a22b", 235e9, 22e9, false},
      {"gpt-oss-20b", 21e9, 3.6e9, true},
      {"gpt-oss-120b", 117e9, 5.1e9, true},
      {"mixtral-8x7b", 46.7e9, 12.9e9, false},
      {"mixtral-8x22b", 141e9, 39e9, false},
      {"llama4-scout", 109e9, 17e9, false},
      {"llama4-maverick", 400e9, 17e9, false},
      {"grok-1", 314e9, 0, false},
      {"nemotron-3-nano-30b-a3b", 31.6e9, 3.2e9, true},
      {"nemotron-3-super-120b", 120e9, 12e9, true},
      {"deepseek-v2", 236e9, 21e9, false},  // DeepSeek-V2 paper (arXiv 2405.04434) abstract
      // Dense: BLOOM's paper (arXiv 2211.05100, "a 176B-parameter ... language model", with
      // its output layer tied), TII's Falcon-180B, the OPT paper's 175B (arXiv 2205.01068).
      {"bloom-176b", 176e9, 176e9, false},
      {"falcon-180b", 180e9, 180e9, false},
      {"opt-175b", 175e9, 175e9, false},
      // GPT-2 as nanoGPT's model.py counts it (tied, with its 1,024 learned positions, which
      // the model leaves out: 0.8M of 124M) and GPT-3's names for the Megatron shapes.
      {"gpt2", 124e6, 124e6, false},
      {"gpt2-xl", 1558e6, 1558e6, false},
      {"gpt3-125m", 125e6, 125e6, false},
      {"gpt3-1.3b", 1.3e9, 1.3e9, false},
      {"gpt3-13b", 13e9, 13e9, false},
      // Famous runs' models: LLaMA's Table 2 (6.7, 13.0, 32.5, 65.2B), PaLM's Table 1 (8.63,
      // 62.50, 540.35B), StarCoder's 15.5B, DBRX's model card (132B, 36B active), Gemma 7B's
      // 8.54B and 2B's 2.51B (embeddings included), GLM-130B, Falcon-7B.
      {"llama-7b", 6.7e9, 6.7e9, false},
      {"llama-13b", 13.0e9, 13.0e9, false},
      {"llama-33b", 32.5e9, 32.5e9, false},
      {"llama-65b", 65.2e9, 65.2e9, false},
      {"palm-8b", 8.63e9, 8.63e9, false},
      {"palm-62b", 62.50e9, 62.50e9, false},
      {"palm-540b", 540.35e9, 540.35e9, false},
      {"starcoder-15b", 15.5e9, 15.5e9, false},
      {"dbrx", 132e9, 36e9, false},
      {"gemma-7b", 8.54e9, 8.54e9, false},
      {"gemma-2b", 2.51e9, 2.51e9, false},
      {"glm-130b", 130e9, 130e9, false},
      {"falcon-7b", 7e9, 7e9, false},
      // Families by size: OPT's table (metaseq projects/OPT/README.md: 125M ... 66B, tied; the
      // model leaves out its learned positions), Pythia's and GPT-J's model cards (exact
      // counts), BLOOM's checkpoints (keras-hub bloom_presets.py), MT-NLG's 530B, Yi's 34B,
      // DeepSeek LLM's 67B, InternLM2's 20B, the Qwen2.5 and Qwen3 model cards, Mistral's
      // NeMo 12B and Large 2 123B, DeepSeek-V2-Lite (the V2 paper: 15.7B, 2.4B activated),
      // Gemma 3 27B's text decoder (its report's Table 1: 1,416M embedding + 25,600M), Phi-3's
      // model cards (3.8B, 14B) and SmolLM2-135M's printed count.
      {"opt-125m", 125e6, 125e6, false},
      {"opt-1.3b", 1.3e9, 1.3e9, false},
      {"opt-13b", 13e9, 13e9, false},
      {"opt-66b", 66e9, 66e9, false},
      {"pythia-70m", 70'426'624, 70'426'624, false},
      {"pythia-1b", 1'011'781'632, 1'011'781'632, false},
      {"pythia-2.8b", 2'775'208'960, 2'775'208'960, false},
      {"gpt-j-6b", 6'053'381'344, 6'053'381'344, false},
      {"bloom-560m", 559'214'592, 559'214'592, false},
      {"bloom-7b1", 7'069'016'064, 7'069'016'064, false},
      {"mt-nlg-530b", 530e9, 530e9, false},
      {"yi-34b", 34e9, 34e9, false},
      {"deepseek-llm-67b", 67e9, 67e9, false},
      {"internlm2-20b", 20e9, 20e9, false},
      {"qwen2.5-0.5b", 0.49e9, 0.49e9, false},
      {"qwen2.5-14b", 14.7e9, 14.7e9, false},
      {"qwen2.5-32b", 32.5e9, 32.5e9, false},
      {"qwen3-0.6b", 0.6e9, 0.6e9, false},
      {"qwen3-4b", 4.0e9, 4.0e9, false},
      {"qwen3-14b", 14.8e9, 14.8e9, false},
      {"mistral-nemo-12b", 12e9, 12e9, false},
      {"mistral-large-123b", 123e9, 123e9, false},
      {"deepseek-v2-lite", 15.7e9, 2.4e9, true},
      {"gemma3-27b", 27.016e9, 27.016e9, false},
      {"phi3-mini", 3.8e9, 3.8e9, false},
      {"phi3-medium", 14e9, 14e9, false},
      {"smollm2-135m", 134'515'008, 134'515'008, false},
      // The presets of 2026-12-06, each against the count its "# published:" line in the
      // catalog quotes: GLM-4.5's README (355B/32B, 106B/12B: the MTP layer counted, not
      // activated), OLMoE's README, Qwen's blog tables (14.3B/2.7B, 57.41B/14B), Phi-3.5-MoE's
      // card (41.9B/6.6B), Granite 3.0's card (3.3B), the exact counts of StableLM's READMEs and
      // BloombergGPT's appendix, Yi-9B's 8.83B and Code Llama's 70B, and the
      // Nemotron-H and Nano v2 cards (8B, 47B, 56B, 8.89B, 12.31B).
      {"glm-4.5", 355e9, 0, false},
      {"glm-4.5-air", 106e9, 0, false},
      {"olmoe-1b-7b", 6.9e9, 1.3e9, false},
      {"qwen1.5-moe-a2.7b", 14.3e9, 2.7e9, false},
      {"qwen2-57b-a14b", 57.41e9, 14e9, false},
      {"phi3.5-moe", 41.9e9, 6.6e9, false},
      {"granite3-3b-a800m", 3.3e9, 0, false},
      {"stablelm-3b-4e1t", 2'795'443'200, 2'795'443'200, false},
      {"stablelm2-1.6b", 1'644'417'024, 1'644'417'024, false},
      {"bloomberggpt-50b", 50'558'868'480, 50'558'868'480, false},
      {"yi-9b", 8.83e9, 8.83e9, false},
      {"codellama-70b", 70e9, 70e9, false},
      {"nemotron-h-8b", 8e9, 8e9, false},
      {"nemotron-h-47b", 47e9, 47e9, false},
      {"nemotron-h-56b", 56e9, 56e9, false},
      {"nemotron-nano-9b-v2", 8.89e9, 8.89e9, false},
      {"nemotron-nano-12b-v2", 12.31e9, 12.31e9, false},
      // The presets of the twenty-seventh session: Snowflake Arctic's README (480B total, 17B
      // active, its dense residual MLP as a shared expert), Llama 2's Table 1 (34B), Mistral
      // Small 3's card (24B), LLM360's Amber (6.7B) and K2 (65B), Phi-2 (2.7B) and SmolLM3
      // (3B). Aquila-7B (7.30B against "7B"), Phi-4 (14.66B against "14B"), Phi-1.5 (1.42B
      // against "1.3B", the untied head left out) and Persimmon-8B ("approximately 8 billion")
      // publish rounder counts than 3 %.
      {"arctic-480b", 480e9, 17e9, false},
      {"llama2-34b", 34e9, 34e9, false},
      {"mistral-small-24b", 24e9, 24e9, false},
      {"amber-7b", 6.7e9, 6.7e9, false},
      {"llm360-k2-65b", 65e9, 65e9, false},
      {"phi-2", 2.7e9, 2.7e9, false},
      {"smollm3-3b", 3e9, 3e9, false},
  };
  for (const Case& k : cases) {
    const ModelPreset* preset = c.FindModel(k.id);
    ASSERT_NE(preset, nullptr) << k.id;
    const ModelSpec& m = preset->spec;
    const ParamCount p = CountParams(Shape(m));
    EXPECT_NEAR(p.total / k.total, 1.0, 0.03) << k.id;
    if (k.activated == 0) continue;
    const double activated =
        p.activated -
        (k.activated_without_embedding ? static_cast<double>(m.vocab) * m.hidden : 0.0);
    EXPECT_NEAR(activated / k.activated, 1.0, 0.03) << k.id;
  }
}

TEST(Catalog, ModelFieldErrorsNameTheFieldAndNeverCrash) {
  ModelSpec base = Catalog::Builtin().FindModel("deepseek-v3")->spec;
  ASSERT_TRUE(CheckModelFields(base, "m").ok());
  auto error = [&](auto edit) {
    ModelSpec m = base;
    edit(&m);
    const absl::Status s = CheckModelFields(m, "scenario.workload.model");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  };
  EXPECT_EQ(error([](ModelSpec* m) { m->moe.experts_per_token = 300; }),
            "scenario.workload.model.moe.experts_per_token: 300 is more than num_experts 256");
  EXPECT_EQ(error([](ModelSpec* m) { m->moe.num_experts = 5000; }),
            "scenario.workload.model.moe.num_experts: 5000 is out of range [0, 4096]");
  EXPECT_EQ(error([](ModelSpec* m) { m->moe.dense_layers = 61; }),
            "scenario.workload.model.moe.dense_layers: 61 is out of range [0, layers 61): at least "
            "one layer must be MoE");
  for (double bad : {std::nan(""), -1.0, 0.99, 16.5, std::numeric_limits<double>::infinity()}) {
    EXPECT_TRUE(absl::StartsWith(error([&](ModelSpec* m) { m->moe.capacity_factor = bad; }),
                                 "scenario.workload.model.moe.capacity_factor: "))
        << bad;
  }
  EXPECT_EQ(error([](ModelSpec* m) { m->mla.v_head_dim = 0; }),
            "scenario.workload.model.mla.v_head_dim: 0 is out of range [1, 4096]");
  EXPECT_EQ(error([](ModelSpec* m) { m->head_dim = std::numeric_limits<int>::max(); }),
            "scenario.workload.model.head_dim: 2147483647 is out of range [0, 4096]");
  EXPECT_EQ(error([](ModelSpec* m) { m->ffn_hidden = 0; }),
            "scenario.workload.model.ffn_hidden: is required (> 0): some layers have a dense "
            "feed-forward block");
  EXPECT_EQ(error([](ModelSpec* m) { m->layer_pattern = std::string(61, 'E') + "\x01"; }),
            "scenario.workload.model.layer_pattern: 62 characters, but layers is 61 (one per "
            "layer)");
  EXPECT_EQ(error([](ModelSpec* m) {
              m->moe.dense_layers = 0;
              m->layer_pattern = std::string(60, 'E') + "\x01";
            }),
            "scenario.workload.model.layer_pattern: character 61 is byte 1; use 'M' (Mamba-2), "
            "'*' (attention), '-' (dense MLP), 'E' (MoE)");
  EXPECT_EQ(error([](ModelSpec* m) {
              m->moe.dense_layers = 0;
              m->layer_pattern = std::string(61, '*');
            }),
            "scenario.workload.model.moe.num_experts: 256 is set but layer_pattern has no 'E' "
            "(MoE) layer");
  EXPECT_EQ(error([](ModelSpec* m) { m->mamba_state = 16; }),
            "scenario.workload.model.mamba_state: 16 is set but layer_pattern has no 'M' "
            "(Mamba-2) layer");
  // The catalog file gets the same checks, naming the line.
  Catalog c = Catalog::Builtin();
  const absl::Status s = c.MergeText(
      "model bad-moe\n  layers = 4\n  hidden = 64\n  heads = 4\n  vocab = 10\n  mlp = gated\n"
      "  moe.num_experts = 4\n  moe.experts_per_token = 5\n  moe.expert_ffn_hidden = 32\nend\n");
  EXPECT_EQ(s.message(),
            "catalog line 1: model bad-moe: moe.experts_per_token: 5 is more than num_experts 4");
  EXPECT_EQ(c.FindModel("bad-moe"), nullptr);
}

// `m` with its `which`-th plain field (model/model_fields_gen.h's order) set to a value other
// than its default.
ModelSpec WithFieldSet(ModelSpec m, int which) {
  int at = 0;
  field_rules::VisitModelSpecFields(m, [&](const char*, auto& v) {
    if (at++ != which) return;
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::string>) {
      v = "x";
    } else {
      v = V{1};
    }
  });
  return m;
}

// A model that names a preset and sets nothing else takes the preset's shape as it was checked
// when the catalog was loaded; any other field set (every one of the proto's, and the MLP)
// makes it a changed shape that is checked again.
TEST(Catalog, NameOnlyMeansEveryOtherFieldIsUnset) {
  ModelSpec named;
  named.name = "llama2-7b";
  EXPECT_TRUE(NameOnly(named));
  EXPECT_TRUE(NameOnly(ModelSpec{}));
  int fields = 0;
  const ModelSpec blank;
  field_rules::VisitModelSpecFields(blank, [&](const char* path, const auto&) {
    const int index = fields++;
    if (absl::string_view(path) == "name") return;
    EXPECT_FALSE(NameOnly(WithFieldSet(named, index))) << path;
  });
  EXPECT_GT(fields, 30);
  ModelSpec mlp = named;
  mlp.mlp = Mlp::kPlain;
  EXPECT_FALSE(NameOnly(mlp));
  // The preset's shape, the name as the request spells it; a field set over it is checked.
  Scenario s;
  s.workload.model.name = "Llama2-7B";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 512;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 8;
  absl::StatusOr<Scenario> r = ResolveScenario(s, Catalog::Builtin());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->workload.model.name, "Llama2-7B");
  EXPECT_EQ(r->workload.model.layers, Catalog::Builtin().FindModel("llama2-7b")->spec.layers);
  s.workload.model.kv_heads = 3;  // does not divide 32 heads
  EXPECT_TRUE(absl::StrContains(ResolveScenario(s, Catalog::Builtin()).status().message(),
                                "scenario.workload.model.kv_heads"));
}

// HasShape is generated from the proto: every plain field is part of the shape except those the
// proto marks not_shape, which ride on a preset (a model setting only them still needs a name
// that is a preset).
TEST(Catalog, HasShapeIsEveryShapeFieldButThoseThatRideOnAPreset) {
  EXPECT_FALSE(HasShape(ModelSpec{}));
  const std::set<std::string> rides = {
      "name",           "kv_heads", "mtp_layers", "moe.capacity_factor", "moe.force_balance",
      "moe.expert_bias"};
  const ModelSpec blank;
  int index = 0;
  field_rules::VisitModelSpecFields(blank, [&](const char* path, const auto&) {
    EXPECT_EQ(HasShape(WithFieldSet(ModelSpec{}, index++)), rides.count(path) == 0) << path;
  });
  // A model that sets only such fields and no name is refused as naming neither.
  Scenario s;
  s.workload.model.kv_heads = 8;
  s.workload.model.mtp_layers = 1;
  s.workload.seq_len = 4096;
  s.workload.global_batch = 512;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 8;
  EXPECT_TRUE(absl::StrContains(ResolveScenario(s, Catalog::Builtin()).status().message(),
                                "give a preset name or a shape"));
}

TEST(Catalog, UserFileAddsAndOverridesWithoutRebuilding) {
  Catalog c = Catalog::Builtin();
  const std::string extra = R"(
accelerator my-gpu   # a lab's own part
  name = Lab GPU
  family = h100
  peak_tflops_bf16 = 500
  peak_tflops_fp16 = 500
  hbm_gib = 64
  hbm_tbps = 2
  tdp_w = 500
  idle_w = 50
  gpus_per_node = 4
  nvlink_domain = 4
  nvlink_gbps = 200
  net_gbps = 200
  sms = 100
end
model tiny
  layers = 2
  hidden = 256
  heads = 4
  ffn_hidden = 1024
  mlp = plain
  vocab = 1000
end
)";
  ASSERT_TRUE(c.MergeText(extra).ok());
  ASSERT_NE(c.FindAccelerator("my-gpu"), nullptr);
  EXPECT_EQ(c.FindAccelerator("my-gpu")->power_limit_w, 500);  // defaults to tdp
  EXPECT_EQ(c.FindModel("tiny")->spec.kv_heads, 4);            // defaults to heads
  EXPECT_NE(c.FindAccelerator("h100-sxm-80gb"), nullptr);      // built-ins stay
}

// A part no run was measured on names the part whose fitted efficiencies it takes (`like`): it
// gets that part's family and is marked as borrowing them; a `like` naming no part, or a family
// that contradicts it, is refused with the block's line.
TEST(Catalog, APartLikeAnotherTakesItsEfficienciesAndSaysSo) {
  Catalog c = Catalog::Builtin();
  const std::string part =
      "accelerator my-card\n  like = a100-pcie-80gb\n  peak_tflops_bf16 = 180\n"
      "  hbm_gib = 45\n  hbm_tbps = 0.86\n  tdp_w = 350\n  idle_w = 30\n"
      "  gpus_per_node = 8\n  nvlink_domain = 8\n  nvlink_gbps = 25\n  net_gbps = 50\nend\n";
  ASSERT_TRUE(c.MergeText(part).ok());
  const Accelerator* a = c.FindAccelerator("my-card");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->family, "a100");
  EXPECT_EQ(a->like, "a100-pcie-80gb");
  EXPECT_TRUE(a->borrowed);
  EXPECT_TRUE(absl::StrContains(a->like_basis, "efficiencies of a100-pcie-80gb")) << a->like_basis;
  EXPECT_FALSE(c.FindAccelerator("a100-pcie-80gb")->borrowed);

  const absl::Status unknown =
      c.MergeText(absl::StrReplaceAll(part, {{"a100-pcie-80gb", "no-such-part"}}));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(unknown.message(), "line 1")) << unknown.message();
  EXPECT_TRUE(absl::StrContains(unknown.message(), "'no-such-part' is no part of the catalog"))
      << unknown.message();
  const absl::Status family = c.MergeText(
      absl::StrReplaceAll(part, {{"my-card", "other"}, {"like = ", "family = h100\n  like = "}}));
  EXPECT_TRUE(absl::StrContains(family.message(), "family 'h100' differs")) << family.message();
  const absl::Status chained = c.MergeText(absl::StrReplaceAll(
      part, {{"accelerator my-card", "accelerator second"}, {"a100-pcie-80gb", "my-card"}}));
  EXPECT_TRUE(absl::StrContains(chained.message(), "'my-card' takes another part's efficiencies"))
      << chained.message();
}

// The PCIe, workstation and consumer parts no run was measured on take the efficiencies of the
// part whose kernels they run (GA10x and Ada: the A100's; Turing: the V100's) and say so; GeForce
// parts run 16-bit tensor math with FP32 accumulate at half rate, a tensor_flops_per_exp of 32.
// H100 NVL and MI300A, parts on a fitted die, are their die's family and borrow nothing.
TEST(Catalog, PartsNoRunWasMeasuredOnBorrowTheEfficienciesOfTheirKernels) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* id;
    const char* like;
    const char* family;
    double flops_per_exp;
  } parts[] = {{"l40s-48gb", "a100-pcie-80gb", "a100", 64},
               {"l40-48gb", "a100-pcie-80gb", "a100", 32},
               {"l4-24gb", "a100-pcie-80gb", "a100", 64},
               {"rtx6000-ada-48gb", "a100-pcie-80gb", "a100", 64},
               {"rtx4090-24gb", "a100-pcie-80gb", "a100", 32},
               {"a10-24gb", "a100-pcie-80gb", "a100", 64},
               {"a10g-24gb", "a100-pcie-80gb", "a100", 32},
               {"a40-48gb", "a100-pcie-80gb", "a100", 64},
               {"rtxa6000-48gb", "a100-pcie-80gb", "a100", 64},
               {"rtx3090-24gb", "a100-pcie-80gb", "a100", 32},
               {"a30-24gb", "a100-pcie-80gb", "a100", 128},
               {"t4-16gb", "v100-sxm2-16gb", "v100", 64}};
  for (const auto& p : parts) {
    const Accelerator* a = c.FindAccelerator(p.id);
    ASSERT_NE(a, nullptr) << p.id;
    EXPECT_EQ(a->like, p.like) << p.id;
    EXPECT_EQ(a->family, p.family) << p.id;
    EXPECT_TRUE(a->borrowed) << p.id;
    EXPECT_EQ(a->tensor_flops_per_exp, p.flops_per_exp) << p.id;
    // Peak over SMs is the tensor rate a clock the FLOPs per exponential say, at 1.4-2.6 GHz.
    const double ghz = a->PeakFlops(Precision::kFp16) / (a->sms * p.flops_per_exp * 16) / 1e9;
    EXPECT_GT(ghz, 1.4) << p.id;
    EXPECT_LT(ghz, 2.6) << p.id;
  }
  for (const char* own : {"h100-nvl-94gb", "mi300a-128gb"}) {
    ASSERT_NE(c.FindAccelerator(own), nullptr) << own;
    EXPECT_FALSE(c.FindAccelerator(own)->borrowed) << own;
  }
  EXPECT_EQ(c.FindAccelerator("h100-nvl-94gb")->family, "h100");
  EXPECT_EQ(c.FindAccelerator("mi300a-128gb")->family, "mi300x");
  EXPECT_EQ(c.FindAccelerator("t4-16gb")->PeakFlops(Precision::kBf16), 0);  // no bf16 on Turing
  // Intel's Max 1550 (Aurora's GPU, one package of two stacks): no Intel GPU has a run, so it
  // borrows MI300X's, whose MAMF share Argonne's all-node GEMM rate matches; no fp8 in Xe-HPC.
  const Accelerator* pvc = c.FindAccelerator("max1550-128gb");
  ASSERT_NE(pvc, nullptr);
  EXPECT_EQ(pvc->like, "mi300x-192gb");
  EXPECT_TRUE(pvc->borrowed);
  EXPECT_EQ(pvc->gpus_per_node, 6);
  EXPECT_EQ(pvc->PeakFlops(Precision::kFp8), 0);
  EXPECT_EQ(pvc->hbm_gib, 128);

  // A prediction on one says whose efficiencies it took, and its band is wider than on the part
  // it borrows from.
  absl::StatusOr<Scenario> l40s = ResolveLlama2On(c, "NVIDIA L40S", 8);
  ASSERT_TRUE(l40s.ok()) << l40s.status();
  absl::StatusOr<Prediction> p = Predict(*l40s, c, Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(
      absl::StrContains(p->uncertainty.basis, "l40s-48gb borrows: efficiencies of a100-pcie-80gb"))
      << p->uncertainty.basis;
  absl::StatusOr<Scenario> a100 = ResolveLlama2On(c, "a100-pcie-80gb", 8);
  ASSERT_TRUE(a100.ok()) << a100.status();
  absl::StatusOr<Prediction> q = Predict(*a100, c, Profile::BuiltinDefault());
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_GT(p->uncertainty.high / p->uncertainty.low, q->uncertainty.high / q->uncertainty.low);
}

TEST(Catalog, BadFileIsRejectedWholeWithItsLine) {
  Catalog c = Catalog::Builtin();
  const size_t before = c.accelerators().size();
  const std::string bad =
      "model ok\n layers = 2\n hidden = 256\n heads = 4\n ffn_hidden = 1024\n mlp = plain\n"
      " vocab = 1000\nend\nmodel broken\n layers = two\nend\n";
  absl::Status s = c.MergeText(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("line 10"), absl::string_view::npos) << s;
  EXPECT_EQ(c.FindModel("ok"), nullptr);  // nothing merged
  EXPECT_EQ(c.accelerators().size(), before);
  EXPECT_FALSE(c.MergeText("accelerator x\n name = y\n").ok());  // no end
  EXPECT_FALSE(c.MergeText("model m\n heads = 3\n hidden = 10\n layers = 1\n ffn_hidden = 4\n"
                           " mlp = plain\n vocab = 5\nend\n")
                   .ok());  // heads do not divide hidden
  EXPECT_FALSE(c.MergeText("model m\n colour = red\nend\n").ok());
}

// The export variants keep their base part's compute and memory and lose interconnect.
TEST(Catalog, ExportVariantsShareComputeAndCutNvlink) {
  const Catalog& c = Catalog::Builtin();
  const Accelerator& a100 = *c.FindAccelerator("a100-sxm-80gb");
  const Accelerator& a800 = *c.FindAccelerator("a800-sxm-80gb");
  EXPECT_EQ(a800.family, "a100");
  EXPECT_EQ(a800.peak_tflops_bf16, a100.peak_tflops_bf16);
  EXPECT_EQ(a800.hbm_gib, a100.hbm_gib);
  EXPECT_EQ(a800.hbm_tbps, a100.hbm_tbps);
  EXPECT_DOUBLE_EQ(a800.nvlink_gbps / a100.nvlink_gbps, 400.0 / 600.0);  // 400 vs 600 GB/s bidi

  const Accelerator& h100 = *c.FindAccelerator("h100-sxm-80gb");
  const Accelerator& h800 = *c.FindAccelerator("h800-sxm-80gb");
  EXPECT_EQ(h800.family, "h100");
  EXPECT_EQ(h800.peak_tflops_bf16, h100.peak_tflops_bf16);
  EXPECT_EQ(h800.peak_tflops_fp8, h100.peak_tflops_fp8);
  EXPECT_EQ(h800.sms, h100.sms);
  EXPECT_DOUBLE_EQ(h800.nvlink_gbps / h100.nvlink_gbps, 400.0 / 900.0);  // 400 vs 900 GB/s bidi

  // H20: about 15 % of H100's tensor peak, more and faster HBM, full NVLink, 78 SMs.
  const Accelerator& h20 = *c.FindAccelerator("h20-sxm-96gb");
  EXPECT_EQ(h20.family, "h20");
  EXPECT_NEAR(h20.peak_tflops_bf16 / h100.peak_tflops_bf16, 0.15, 0.01);
  EXPECT_GT(h20.hbm_gib, h100.hbm_gib);
  EXPECT_GT(h20.hbm_tbps, h100.hbm_tbps);
  EXPECT_EQ(h20.nvlink_gbps, h100.nvlink_gbps);
  EXPECT_EQ(h20.sms, 78);
  EXPECT_LT(h20.tdp_w, h100.tdp_w);
}

TEST(Catalog, BlackwellUltraAndNewAmdPartsHavePlausibleValues) {
  const Catalog& c = Catalog::Builtin();
  // B300: B200's dense BF16/FP8, more dense FP4, 288 GB HBM3e, 800G per GPU.
  const Accelerator& b200 = *c.FindAccelerator("b200-sxm-180gb");
  const Accelerator& b300 = *c.FindAccelerator("b300-sxm-270gb");
  EXPECT_EQ(b300.family, "b300");
  EXPECT_EQ(b300.peak_tflops_bf16, b200.peak_tflops_bf16);
  EXPECT_EQ(b300.peak_tflops_fp8, b200.peak_tflops_fp8);
  EXPECT_GT(b300.peak_tflops_nvfp4, 1.4 * b200.peak_tflops_nvfp4);
  EXPECT_LT(b300.peak_tflops_nvfp4, c.FindAccelerator("gb300-nvl72")->peak_tflops_nvfp4);
  EXPECT_GT(b300.hbm_gib, 260);
  EXPECT_LT(b300.hbm_gib, 288);  // 288 GB vendor figure; the driver shows ~268.6 GiB
  EXPECT_GT(b300.tdp_w, b200.tdp_w);
  EXPECT_EQ(b300.net_gbps, 2 * b200.net_gbps);

  // MI250X is one whole package: two GCDs' compute, memory and CUs; no FP8.
  const Accelerator& mi250x = *c.FindAccelerator("mi250x-128gb");
  EXPECT_EQ(mi250x.family, "mi250x");
  EXPECT_EQ(mi250x.peak_tflops_bf16, 383);
  EXPECT_EQ(mi250x.peak_tflops_fp8, 0);
  EXPECT_EQ(mi250x.hbm_gib, 128);
  EXPECT_EQ(mi250x.sms, 2 * 110);
  // MI250 is the same package with 104 of each GCD's 110 CUs: the same memory, the compute in
  // proportion (362.1 / 383.0 = 208 / 220 at the same 1.7 GHz), the same calibration group.
  const Accelerator& mi250 = *c.FindAccelerator("mi250-128gb");
  EXPECT_EQ(mi250.family, mi250x.family);
  EXPECT_EQ(mi250.sms, 2 * 104);
  EXPECT_NEAR(mi250.peak_tflops_bf16 / mi250x.peak_tflops_bf16,
              static_cast<double>(mi250.sms) / mi250x.sms, 0.001);
  EXPECT_EQ(mi250.hbm_gib, mi250x.hbm_gib);
  EXPECT_EQ(mi250.hbm_tbps, mi250x.hbm_tbps);
  EXPECT_EQ(mi250.peak_tflops_fp8, 0);
  // MI210: one of those GCDs on a PCIe card (104 CUs, 64 GB, half the package's bandwidth), in
  // the same group; counted per card, as rocm-smi shows it.
  const Accelerator& mi210 = *c.FindAccelerator("mi210-64gb");
  EXPECT_EQ(mi210.family, mi250x.family);
  EXPECT_FALSE(mi210.borrowed);
  EXPECT_EQ(mi210.sms, 104);
  EXPECT_NEAR(mi210.peak_tflops_bf16, mi250.peak_tflops_bf16 / 2, 0.1);
  EXPECT_EQ(mi210.hbm_gib, mi250.hbm_gib / 2);
  EXPECT_NEAR(mi210.hbm_tbps, mi250.hbm_tbps / 2, 1e-6);

  // MI325X: MI300X compute with more, faster HBM.
  const Accelerator& mi300x = *c.FindAccelerator("mi300x-192gb");
  const Accelerator& mi325x = *c.FindAccelerator("mi325x-256gb");
  EXPECT_EQ(mi325x.family, "mi300x");
  EXPECT_EQ(mi325x.peak_tflops_bf16, mi300x.peak_tflops_bf16);
  EXPECT_EQ(mi325x.sms, mi300x.sms);
  EXPECT_GT(mi325x.hbm_gib, mi300x.hbm_gib);
  EXPECT_GT(mi325x.hbm_tbps, mi300x.hbm_tbps);

  // MI350X / MI355X: one CDNA 4 die at 2.2 and 2.4 GHz, 256 CUs, 288 GB, 1,000 and 1,400 W.
  const Accelerator& mi350x = *c.FindAccelerator("mi350x-288gb");
  const Accelerator& mi355x = *c.FindAccelerator("mi355x-288gb");
  EXPECT_EQ(mi350x.family, "mi355x");
  EXPECT_EQ(mi355x.family, "mi355x");
  EXPECT_NEAR(mi355x.peak_tflops_fp8 / mi350x.peak_tflops_fp8, 2.4 / 2.2, 1e-3);
  EXPECT_NEAR(mi355x.peak_tflops_fp8, 256 * 8192 * 2.4e9 / 1e12, 1);
  EXPECT_GT(mi355x.peak_tflops_bf16, 1.9 * mi300x.peak_tflops_bf16);
  EXPECT_EQ(mi350x.hbm_gib, mi355x.hbm_gib);
  EXPECT_EQ(mi350x.sms, 256);
  EXPECT_EQ(mi350x.power_limit_w, 1000);  // its board's TBP; tdp_w is the die's draw at 2.2 GHz
  EXPECT_EQ(mi355x.tdp_w, 1400);
}

// GH200 in the 4-superchip nodes of Alps and JUPITER: H100's die and peaks, 96 GB of HBM3, four
// GPUs all-to-all over NVLink without a switch (no NVLink SHARP), NVLink-C2C to the Grace.
TEST(Catalog, Gh200IsTheH100DieInFourGpuNodes) {
  const Catalog& c = Catalog::Builtin();
  const Accelerator& h100 = *c.FindAccelerator("h100-sxm-80gb");
  const Accelerator& gh200 = *c.FindAccelerator("gh200");
  EXPECT_EQ(gh200.id, "gh200-96gb");
  EXPECT_EQ(gh200.family, "h100");
  EXPECT_EQ(gh200.peak_tflops_bf16, h100.peak_tflops_bf16);
  EXPECT_EQ(gh200.peak_tflops_fp8, h100.peak_tflops_fp8);
  EXPECT_EQ(gh200.sms, h100.sms);
  EXPECT_GT(gh200.hbm_gib, h100.hbm_gib);
  EXPECT_GT(gh200.hbm_tbps, h100.hbm_tbps);
  EXPECT_EQ(gh200.gpus_per_node, 4);
  EXPECT_EQ(gh200.nvlink_domain, 4);
  EXPECT_FALSE(gh200.nvlink_sharp);
  EXPECT_GT(gh200.host_link_gbps, h100.host_link_gbps);  // NVLink-C2C against PCIe Gen5
}

// Wherever FP8 is supported its dense peak is twice BF16 (and MXFP8 runs at the FP8 rate).
// Google's TPUs are counted per chip, their slice (the ICI torus) is the fast domain and their
// published figures are the entries': v5p has 459 TFLOP/s, 95 GiB and 6,144-chip slices of
// 4-chip hosts; no TPU multiplies IEEE fp16; the names papers and the Cloud API use find them;
// only v3 and v4 have a published power.
TEST(Catalog, TpusAreChipsWithTheirSliceAsTheFastDomain) {
  const Catalog& c = Catalog::Builtin();
  const Accelerator* v5p = c.FindAccelerator("tpu-v5p");
  ASSERT_NE(v5p, nullptr);
  EXPECT_EQ(v5p->PeakFlops(Precision::kBf16), 459e12);
  EXPECT_EQ(v5p->hbm_gib, 95);
  EXPECT_EQ(v5p->nvlink_domain, 6144);
  EXPECT_EQ(v5p->gpus_per_node, 4);
  EXPECT_EQ(v5p->net_gbps, 50);
  for (const char* id : {"tpu-v3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"}) {
    const Accelerator* a = c.FindAccelerator(id);
    ASSERT_NE(a, nullptr) << id;
    EXPECT_EQ(a->peak_tflops_fp16, 0) << id;
    EXPECT_EQ(a->peak_tflops_fp8, 0) << id;
    EXPECT_FALSE(a->nvlink_sharp) << id;
    EXPECT_GT(a->nvlink_domain, a->gpus_per_node) << id;
    const bool published = std::string(id) == "tpu-v3" || std::string(id) == "tpu-v4";
    EXPECT_EQ(a->power_unpublished, !published) << id;
  }
  // TPU7x (Ironwood): fp8 in its MXUs at twice bf16, 192 GiB, no power published; no run on it,
  // so it borrows v5p's efficiencies (Google: it "shares many similarities with TPU v5p").
  const Accelerator* v7 = c.FindAccelerator("tpu-v7");
  ASSERT_NE(v7, nullptr);
  EXPECT_EQ(v7->PeakFlops(Precision::kBf16), 2307e12);
  EXPECT_EQ(v7->PeakFlops(Precision::kFp8), 2 * v7->PeakFlops(Precision::kBf16));
  EXPECT_EQ(v7->peak_tflops_fp16, 0);
  EXPECT_EQ(v7->hbm_gib, 192);
  EXPECT_TRUE(v7->power_unpublished);
  EXPECT_EQ(v7->like, "tpu-v5p");
  EXPECT_TRUE(v7->borrowed);
  for (const auto& [name, id] :
       std::vector<std::pair<std::string, std::string>>{{"TPU v5p", "tpu-v5p"},
                                                        {"tpuv4", "tpu-v4"},
                                                        {"v5litepod", "tpu-v5e"},
                                                        {"Trillium", "tpu-v6e"},
                                                        {"TPU v3", "tpu-v3"}}) {
    const Accelerator* a = c.FindAccelerator(name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_EQ(a->id, id) << name;
  }
}

TEST(Catalog, Fp8PeakIsTwiceBf16WhereSupported) {
  // Not on every vendor's part: Gaudi 3's MMEs and Trainium's tensor engines take fp8 at the
  // bf16 rate (Hot Chips 2024; aws-neuron-sdk trainium.rst), and AWS prints Trainium2's 1,299
  // fp8 against 667 bf16.
  const std::map<std::string, double> published = {
      {"gaudi3-128gb", 1.0},
      {"trn1", 1.0},
      {"trn2", 1299.0 / 667.0},
      // NVIDIA's L40S sheet prints fp8 at the 2,520 MHz boost and 16-bit at 2,490 MHz.
      {"l40s-48gb", 733.0 / 362.05}};
  for (const auto& [id, a] : Catalog::Builtin().accelerators()) {
    if (a.peak_tflops_fp8 > 0) {
      auto it = published.find(id);
      const double ratio = it == published.end() ? 2.0 : it->second;
      EXPECT_NEAR(a.peak_tflops_fp8 / a.peak_tflops_bf16, ratio, 0.01) << id;
    }
    if (a.peak_tflops_mxfp8 > 0) {
      EXPECT_EQ(a.peak_tflops_mxfp8, a.peak_tflops_fp8) << id;
    }
  }
}

// h100-sxm-96gb-500w runs at 500 W: its limit is 500 W and a prediction never shows more. Its
// tdp_w stays the board's 700 W design power, which the clock-throttle model needs.
TEST(Catalog, PowerCappedH100ReportsItsLimit) {
  const Catalog& c = Catalog::Builtin();
  const Accelerator& a = *c.FindAccelerator("h100-sxm-96gb-500w");
  EXPECT_EQ(a.power_limit_w, 500);
  EXPECT_EQ(a.tdp_w, 700);
  EXPECT_NE(a.name.find("500 W"), std::string::npos) << a.name;
  EXPECT_LT(ClockScale(a), 1.0);

  Scenario s;
  s.workload.model.name = "llama3-8b";
  s.workload.seq_len = 8192;
  s.workload.global_batch = 64;
  s.workload.precision = Precision::kBf16;
  s.cluster.accelerator = "h100-sxm-96gb-500w";
  s.cluster.num_gpus = 8;
  s.parallelism = testing::DataParallelLayout(Sharding::kFsdp, 1, Recompute::kSelective);
  absl::StatusOr<Prediction> p = Predict(s, c, Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LE(p->power.watts_per_gpu, 500);
  bool names_limit = false;
  for (const std::string& w : p->warnings) {
    EXPECT_EQ(w.find("700"), std::string::npos) << w;
    names_limit |= absl::StrContains(w, "500 W power limit");
  }
  EXPECT_TRUE(names_limit);
}

TEST(Catalog, IdsMatchIgnoringCaseAndSeparators) {
  const Catalog& c = Catalog::Builtin();
  const Accelerator* h100 = c.FindAccelerator("h100-sxm-80gb");
  ASSERT_NE(h100, nullptr);
  for (const char* q :
       {"H100-SXM-80GB", "h100_sxm_80gb", "H100 SXM 80GB", "h100.sxm.80gb", "H100SXM80GB"}) {
    EXPECT_EQ(c.FindAccelerator(q), h100) << q;
  }
  const ModelPreset* llama70 = c.FindModel("llama2-70b");
  ASSERT_NE(llama70, nullptr);
  for (const char* q : {"LLAMA2-70B", "llama-2-70b", "Llama 2 70B", "llama_2_70b", "llama2-.70b"}) {
    EXPECT_EQ(c.FindModel(q), llama70) << q;
  }
  EXPECT_EQ(c.FindModel("MPT_7B"), c.FindModel("mpt-7b"));
  // A '.' between digits is a number's: 1.3B is not 13B, whatever the case.
  EXPECT_EQ(c.FindModel("GPT-3 1.3B"), c.FindModel("gpt3-1.3b"));
  EXPECT_EQ(c.FindModel("GPT3-13B"), c.FindModel("gpt3-13b"));
  EXPECT_NE(c.FindModel("gpt3-1.3b"), c.FindModel("gpt3-13b"));
  EXPECT_EQ(c.FindAccelerator(""), nullptr);
  EXPECT_EQ(c.FindAccelerator("--"), nullptr);
}

TEST(Catalog, UnambiguousShortNamesAreAliases) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* id;
  } accelerators[] = {{"h200", "h200-sxm-141gb"}, {"H200", "h200-sxm-141gb"},
                      {"h20", "h20-sxm-96gb"},    {"b200", "b200-sxm-180gb"},
                      {"b300", "b300-sxm-270gb"}, {"gb300", "gb300-nvl72"},
                      {"mi355x", "mi355x-288gb"}, {"MI300X", "mi300x-192gb"},
                      {"a800", "a800-sxm-80gb"},  {"h100-pcie", "h100-pcie-80gb"}};
  for (const auto& k : accelerators) {
    const Accelerator* a = c.FindAccelerator(k.query);
    ASSERT_NE(a, nullptr) << k.query;
    EXPECT_EQ(a->id, k.id) << k.query;
  }
  ASSERT_NE(c.FindModel("gpt3"), nullptr);
  EXPECT_EQ(c.FindModel("GPT-3")->id, "gpt3-175b");
}

// The names nvidia-smi and rocm-smi print find their parts: an alias the catalog gives the part,
// after the vendor words a query leads with; a bare family stays ambiguous, and a described part
// does not inherit its base's aliases.
// Gaudi cards and Trainium chips: no NVLink, their own all-to-all RoCE or NeuronLink torus as
// the fast domain, no SMs (no shape knee), and hl-smi's / the Neuron tools' names find them.
TEST(Catalog, GaudiAndTrainiumAreTheirOwnFabricsAndFamilies) {
  const Catalog& c = Catalog::Builtin();
  const Accelerator* g2 = c.FindAccelerator("gaudi2-96gb");
  const Accelerator* g3 = c.FindAccelerator("gaudi3-128gb");
  const Accelerator* t1 = c.FindAccelerator("trn1");
  const Accelerator* t2 = c.FindAccelerator("trn2");
  ASSERT_TRUE(g2 && g3 && t1 && t2);
  EXPECT_EQ(g2->PeakFlops(Precision::kBf16), 432e12);
  EXPECT_EQ(g3->PeakFlops(Precision::kFp8), g3->PeakFlops(Precision::kBf16));  // fp8 at bf16's
  EXPECT_EQ(t1->PeakFlops(Precision::kFp8), t1->PeakFlops(Precision::kBf16));
  EXPECT_GT(t2->PeakFlops(Precision::kFp8), 1.9 * t2->PeakFlops(Precision::kBf16));
  // 21 of 24 Ethernet ports inside the box, 3 out: scale-up is 7x scale-out, per direction.
  EXPECT_DOUBLE_EQ(g2->nvlink_gbps * 8 / g2->net_gbps, 7.0);
  EXPECT_DOUBLE_EQ(g3->nvlink_gbps * 8 / g3->net_gbps, 7.0);
  for (const Accelerator* a : {g2, g3, t1, t2}) {
    EXPECT_EQ(a->sms, 0) << a->id;
    EXPECT_FALSE(a->nvlink_sharp) << a->id;
    EXPECT_EQ(a->nvlink_domain, a->gpus_per_node) << a->id;
    EXPECT_EQ(a->family, std::string(GenerationOf(a->family))) << a->id;  // their own groups
  }
  EXPECT_FALSE(g2->power_unpublished);
  EXPECT_FALSE(g3->power_unpublished);
  EXPECT_TRUE(t1->power_unpublished);  // AWS publishes no chip power
  EXPECT_TRUE(t2->power_unpublished);
  for (const auto& [name, id] :
       std::vector<std::pair<std::string, std::string>>{{"HL-225", "gaudi2-96gb"},
                                                        {"GAUDI3", "gaudi3-128gb"},
                                                        {"Intel Gaudi 3", "gaudi3-128gb"},
                                                        {"HL-325L", "gaudi3-128gb"},
                                                        {"Trainium2", "trn2"},
                                                        {"trn1.32xlarge", "trn1"}}) {
    const Accelerator* a = c.FindAccelerator(name);
    ASSERT_NE(a, nullptr) << name << ": " << c.AcceleratorNotFound(name);
    EXPECT_EQ(a->id, id) << name;
  }
}

TEST(Catalog, DriverAndVendorNamesFindTheirParts) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* id;
  } names[] = {{"NVIDIA H100 80GB HBM3", "h100-sxm-80gb"},
               {"H100 SXM5 80GB", "h100-sxm-80gb"},
               {"NVIDIA H100 PCIe", "h100-pcie-80gb"},
               {"NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"},
               {"NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"},
               {"A100 80GB", "a100-sxm-80gb"},
               {"Tesla V100-SXM2-32GB", "v100-sxm2-32gb"},
               {"Tesla V100-SXM3-32GB", "v100-sxm3-32gb"},
               {"NVIDIA A800-SXM4-80GB", "a800-sxm-80gb"},
               {"NVIDIA H200", "h200-sxm-141gb"},
               {"NVIDIA B300 SXM6 AC", "b300-sxm-270gb"},
               {"NVIDIA GB200", "gb200-nvl72"},
               {"AMD Instinct MI300X", "mi300x-192gb"},
               {"  nvidia  b200", "b200-sxm-180gb"},
               {"Intel Gaudi 2", "gaudi2-96gb"},
               {"AWS Trainium2", "trn2"},
               {"NVIDIA L40S", "l40s-48gb"},
               {"NVIDIA L4", "l4-24gb"},
               {"NVIDIA A10G", "a10g-24gb"},
               {"NVIDIA A10", "a10-24gb"},
               {"NVIDIA GeForce RTX 4090", "rtx4090-24gb"},
               {"NVIDIA RTX A6000", "rtxa6000-48gb"},
               {"NVIDIA RTX 6000 Ada Generation", "rtx6000-ada-48gb"},
               {"Tesla T4", "t4-16gb"},
               {"NVIDIA H100 NVL", "h100-nvl-94gb"},
               {"AMD Instinct MI300A", "mi300a-128gb"},
               {"AMD Instinct MI210", "mi210-64gb"},
               {"NVIDIA A30", "a30-24gb"},
               {"Intel(R) Data Center GPU Max 1550", "max1550-128gb"},
               {"Ironwood", "tpu-v7"},
               {"TPU7x", "tpu-v7"}};
  for (const auto& n : names) {
    const Accelerator* a = c.FindAccelerator(n.query);
    ASSERT_NE(a, nullptr) << n.query << ": " << c.AcceleratorNotFound(n.query);
    EXPECT_EQ(a->id, n.id) << n.query;
  }
  EXPECT_EQ(c.FindAccelerator("NVIDIA H100"), nullptr);
  const std::string m = c.AcceleratorNotFound("NVIDIA H100");
  EXPECT_TRUE(absl::StartsWith(m, "ambiguous accelerator 'NVIDIA H100'; it matches 4")) << m;
  EXPECT_EQ(c.FindAccelerator("NVIDIA"), nullptr);
  ASSERT_NE(c.FindAccelerator("NVIDIA A100 80GB PCIe"), nullptr);
  EXPECT_EQ(c.FindAccelerator("NVIDIA A100 80GB PCIe")->id, "a100-pcie-80gb");
  ASSERT_NE(c.FindAccelerator("A100-PCIE-40GB"), nullptr);
  EXPECT_EQ(c.FindAccelerator("A100-PCIE-40GB")->id, "a100-pcie-40gb");
  EXPECT_EQ(c.FindAccelerator("NVIDIA B100"), nullptr);  // not in the catalog

  AcceleratorSpec spec;
  spec.id = "my-h100";
  spec.hbm_tb_s = 3.0;
  absl::StatusOr<Accelerator> described =
      DescribeAccelerator(*c.FindAccelerator("h100-sxm-80gb"), spec, "spec");
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_TRUE(described->aliases.empty());
}

// Models answer to their Hugging Face repository names, organisation and all.
TEST(Catalog, HuggingFaceRepositoryNamesFindTheirPresets) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* id;
  } names[] = {{"meta-llama/Llama-2-70b-hf", "llama2-70b"},
               {"Llama-2-7b-hf", "llama2-7b"},
               {"meta-llama/Meta-Llama-3-8B", "llama3-8b"},
               {"meta-llama/Llama-3.1-70B", "llama3-70b"},
               {"meta-llama/Llama-3.1-405B", "llama3-405b"},
               {"mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"},
               {"meta-llama/Llama-4-Scout-17B-16E", "llama4-scout"},
               {"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
               {"Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"},
               {"openai/gpt-oss-120b", "gpt-oss-120b"},
               {"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B", "nemotron-3-super-120b"},
               // Presets named after their repositories find them without an alias.
               {"meta-llama/Llama-3.1-8B", "llama3-8b"},
               {"huggyllama/llama-30b", "llama-33b"},
               {"tiiuae/falcon-7b", "falcon-7b"},
               {"bigcode/starcoderbase", "starcoder-15b"},
               {"databricks/dbrx-base", "dbrx"},
               {"mistralai/Mistral-7B-v0.1", "mistral-7b"},
               {"Qwen/Qwen2.5-72B", "qwen2.5-72b"},
               {"Qwen/Qwen3-8B", "qwen3-8b"},
               {"meta-llama/Llama-3.2-1B", "llama3.2-1b"},
               {"google/gemma-2-9b", "gemma2-9b"},
               {"tiiuae/falcon-180B", "falcon-180b"},
               {"bigscience/bloom", "bloom-176b"},
               {"facebook/opt-175b", "opt-175b"},
               {"EleutherAI/gpt-neox-20b", "gpt-neox-20b"},
               {"EleutherAI/pythia-12b", "pythia-12b"},
               {"allenai/OLMo-2-1124-7B", "olmo2-7b"},
               {"codellama/CodeLlama-34b-hf", "codellama-34b"},
               {"deepseek-ai/DeepSeek-V2", "deepseek-v2"},
               {"openai-community/gpt2", "gpt2"},
               {"openai-community/gpt2-xl", "gpt2-xl"},
               // "GPT-3" alone is the 175B, beside the smaller shapes its paper names.
               {"GPT-3", "gpt3-175b"},
               {"GPT-3 XL", "gpt3-1.3b"},
               {"gpt3-6.7b", "gpt3-6.7b"},
               // Post-trained variants are their base model's shape.
               {"meta-llama/Llama-3.1-70B-Instruct", "llama3-70b"},
               {"meta-llama/Llama-2-70b-chat-hf", "llama2-70b"},
               {"Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"},
               {"google/gemma-2-9b-it", "gemma2-9b"},
               {"meta-llama/Llama-3.3-70B-Instruct", "llama3-70b"},
               {"meta-llama/Meta-Llama-3.1-8B", "llama3-8b"},
               {"TinyLlama/TinyLlama-1.1B", "llama2-1b"},
               // The variant word mid-name, and the words that name the base.
               {"mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"},
               {"mistralai/Mistral-Nemo-Base-2407", "mistral-nemo-12b"},
               {"mistralai/Mistral-Large-Instruct-2407", "mistral-large-123b"},
               {"internlm/internlm2-chat-20b", "internlm2-20b"},
               {"google/gemma-3-27b-pt", "gemma3-27b"},
               {"allenai/OLMo-2-1124-7B-SFT", "olmo2-7b"},
               {"microsoft/Phi-3-mini-4k-instruct", "phi3-mini"},
               {"deepseek-ai/DeepSeek-V2-Lite-Chat", "deepseek-v2-lite"},
               // Families by size, as their repositories and papers name them.
               {"facebook/opt-1.3b", "opt-1.3b"},
               {"OPT-1.3B", "opt-1.3b"},
               {"OPT-13B", "opt-13b"},
               {"EleutherAI/pythia-410m-deduped", "pythia-410m"},
               {"EleutherAI/gpt-j-6b", "gpt-j-6b"},
               {"bigscience/bloomz-7b1-mt", "bloom-7b1"},
               {"Megatron-Turing NLG 530B", "mt-nlg-530b"},
               {"MT-NLG", "mt-nlg-530b"},
               {"01-ai/Yi-34B-Chat", "yi-34b"},
               {"deepseek-ai/deepseek-llm-67b-base", "deepseek-llm-67b"},
               {"Qwen/Qwen2-1.5B", "qwen2.5-1.5b"},
               {"Qwen/Qwen2.5-32B-Instruct", "qwen2.5-32b"},
               {"Qwen/Qwen3-14B", "qwen3-14b"},
               {"allenai/OLMo-2-0325-32B", "olmo2-32b"},
               {"HuggingFaceTB/SmolLM2-1.7B", "smollm2-1.7b"}};
  for (const auto& n : names) {
    const ModelPreset* m = c.FindModel(n.query);
    ASSERT_NE(m, nullptr) << n.query << ": " << c.ModelNotFound(n.query);
    EXPECT_EQ(m->id, n.id) << n.query;
  }
  EXPECT_EQ(c.FindModel("acme/llama-9"), nullptr);
  EXPECT_TRUE(
      absl::StartsWith(c.ModelNotFound("acme/llama-9"), "unknown model preset 'acme/llama-9'"))
      << c.ModelNotFound("acme/llama-9");
  EXPECT_EQ(c.FindModel("meta-llama/"), nullptr);
  EXPECT_EQ(c.FindModel("acme/llama-9-Instruct"), nullptr);
  EXPECT_EQ(c.FindModel("-instruct"), nullptr);
}

// A name that is no part's but whose every word is in some parts' names suggests those parts:
// "H100 80GB" is the SXM and the PCIe part, not the 96 GB one.
TEST(Catalog, UnknownNamesSuggestThePartsThatHaveEachOfTheirWords) {
  const Catalog& c = Catalog::Builtin();
  EXPECT_EQ(c.FindAccelerator("H100 80GB"), nullptr);
  EXPECT_EQ(c.AcceleratorNotFound("H100 80GB"),
            "unknown accelerator 'H100 80GB'; did you mean: h100-pcie-80gb, h100-sxm-80gb? (run "
            "'scalecast accelerators' to list all)");
  const std::string v100 = c.AcceleratorNotFound("v100_32gb");
  EXPECT_TRUE(absl::StrContains(v100, "did you mean: v100-sxm2-32gb, v100-sxm3-32gb?")) << v100;
  // A word in an alias counts: "SXM5" is in the 80 GB part's "H100 SXM5 80GB".
  const std::string sxm5 = c.AcceleratorNotFound("H100 SXM5");
  EXPECT_TRUE(absl::StrContains(sxm5, "did you mean: h100-sxm-80gb,")) << sxm5;
  EXPECT_TRUE(absl::StartsWith(c.AcceleratorNotFound("Ascend 910B"),
                               "unknown accelerator 'Ascend 910B' ("));
}

TEST(Catalog, AmbiguousShortNameListsTheChoices) {
  const Catalog& c = Catalog::Builtin();
  EXPECT_EQ(c.FindAccelerator("h100"), nullptr);
  const std::string m = c.AcceleratorNotFound("h100");
  for (const char* id : {"h100-sxm-80gb", "h100-sxm-96gb-500w", "h100-pcie-80gb"}) {
    EXPECT_TRUE(absl::StrContains(m, id)) << m;
  }
  EXPECT_TRUE(absl::StrContains(m, "ambiguous")) << m;
  EXPECT_TRUE(absl::StrContains(m, "scalecast accelerators")) << m;
  EXPECT_FALSE(absl::StrContains(m, "h200")) << m;

  EXPECT_EQ(c.FindAccelerator("h100-sxm"), nullptr);  // still two parts
  EXPECT_FALSE(absl::StrContains(c.AcceleratorNotFound("h100-sxm"), "pcie"));

  EXPECT_EQ(c.FindModel("llama3"), nullptr);
  const std::string models = c.ModelNotFound("Llama-3");
  for (const char* id : {"llama3-8b", "llama3-70b", "llama3-405b"}) {
    EXPECT_TRUE(absl::StrContains(models, id)) << models;
  }
  EXPECT_TRUE(absl::StrContains(models, "scalecast models")) << models;

  // Through the predictor: a shared name no part is the usual one for is NOT_FOUND with the
  // field path and the choices; an alias resolves to the canonical id.
  Scenario s;
  s.workload.model.name = "llama2-7b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 64;
  s.cluster.accelerator = "V100 SXM2";  // the 16 GB and the 32 GB part alike
  s.cluster.num_gpus = 8;
  absl::StatusOr<Scenario> r = ResolveScenario(s, c);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StartsWith(r.status().message(),
                               "scenario.cluster.accelerator: ambiguous accelerator 'V100 SXM2'"))
      << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "v100-sxm2-16gb, v100-sxm2-32gb"))
      << r.status();
  s.cluster.accelerator = "H200";
  r = ResolveScenario(s, c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cluster.accelerator, "h200-sxm-141gb");
  s.workload.model.name = "Llama-2-7B";
  EXPECT_TRUE(ResolveScenario(s, c).ok());
}

// A name several parts share is answered for the part most public runs so named used (its
// catalog entry's usual_for), never refused, and every prediction says which part it took and
// which others the name fits; an exact name never warns.
TEST(Catalog, SharedNamesAreTakenAsTheirUsualPartWithAWarning) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* id;
    std::vector<const char*> others;
  } names[] = {{"H100", "h100-sxm-80gb", {"h100-pcie-80gb", "h100-sxm-96gb-500w"}},
               {"NVIDIA H100", "h100-sxm-80gb", {"h100-pcie-80gb", "h100-sxm-96gb-500w"}},
               {"h100_sxm", "h100-sxm-80gb", {"h100-sxm-96gb-500w"}},
               {"H100 80GB", "h100-sxm-80gb", {"h100-pcie-80gb"}},
               {"A100", "a100-sxm-80gb", {"a100-sxm-40gb", "a100-pcie-40gb", "a100-pcie-80gb"}},
               {"Tesla V100", "v100-sxm3-32gb", {"v100-sxm2-16gb", "v100-sxm2-32gb"}},
               {"V100 32GB", "v100-sxm3-32gb", {"v100-sxm2-32gb"}}};
  Scenario s;
  s.workload.model.name = "llama2-7b";
  s.workload.seq_len = 4096;
  s.workload.global_batch = 64;
  s.workload.precision = Precision::kFp16;  // V100 has no bf16
  s.cluster.num_gpus = 8;
  for (const auto& n : names) {
    EXPECT_EQ(c.FindAccelerator(n.query), nullptr) << n.query;  // the strict lookup stays strict
    std::string note;
    const Accelerator* a = c.FindUsualAccelerator(n.query, &note);
    ASSERT_NE(a, nullptr) << n.query;
    EXPECT_EQ(a->id, n.id) << n.query;
    EXPECT_TRUE(absl::StartsWith(
        note, absl::StrCat("accelerator '", n.query, "' is taken as ", n.id,
                           ", the part most public runs so named used; it also fits ")))
        << note;
    for (const char* other : n.others) EXPECT_TRUE(absl::StrContains(note, other)) << note;

    s.cluster.accelerator = n.query;
    absl::StatusOr<Scenario> r = ResolveScenario(s, c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->cluster.accelerator, n.id);
    ASSERT_EQ(r->input_warnings.size(), 1u) << n.query;
    EXPECT_EQ(r->input_warnings[0], absl::StrCat("scenario.cluster.accelerator: ", note));
    const absl::StatusOr<Prediction> p = Predict(*r, c, Profile::BuiltinDefault());
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_NE(std::find(p->warnings.begin(), p->warnings.end(), r->input_warnings[0]),
              p->warnings.end())
        << n.query;
    // The resolved scenario names its part: resolving it again warns no more.
    absl::StatusOr<Scenario> again = ResolveScenario(*r, c);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->input_warnings.size(), 1u);
  }
  s.cluster.accelerator = "h100-sxm-80gb";
  absl::StatusOr<Scenario> exact = ResolveScenario(s, c);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_TRUE(exact->input_warnings.empty());
  std::string note = "stale";
  EXPECT_EQ(c.FindUsualAccelerator("B100", &note), nullptr);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(c.FindUsualAccelerator("V100 SXM2", &note), nullptr);  // no part is the usual one

  // Each usual name is one part's, and one no lookup finds by itself (else it would never be
  // used, or would contradict the part it names).
  std::map<std::string, std::string> claimed;
  for (const auto& [id, a] : c.accelerators()) {
    for (const std::string& name : a.usual_for) {
      EXPECT_TRUE(claimed.emplace(absl::AsciiStrToLower(name), id).second) << name;
      EXPECT_EQ(c.FindAccelerator(name), nullptr) << name << " finds a part by itself";
    }
  }
  EXPECT_GE(claimed.size(), 3u);
}

// A name no lookup finds and no part lists as usual, but that one part's name holds (whole, or
// word by word), is taken as that part with a warning; several or none holding it, or a query
// too short to mean much, stay refused with the choices.
TEST(Catalog, ANameOnePartHoldsIsTakenAsItWithAWarning) {
  const Catalog& c = Catalog::Builtin();
  const struct {
    const char* query;
    const char* id;
  } held[] = {{"MI325", "mi325x-256gb"},
              {"AMD MI355", "mi355x-288gb"},
              {"V100 16GB", "v100-sxm2-16gb"},
              {"A100 SXM4 80", "a100-sxm-80gb"}};
  for (const auto& h : held) {
    EXPECT_EQ(c.FindAccelerator(h.query), nullptr) << h.query;  // the strict lookup stays strict
    std::string note;
    const Accelerator* a = c.FindUsualAccelerator(h.query, &note);
    ASSERT_NE(a, nullptr) << h.query;
    EXPECT_EQ(a->id, h.id) << h.query;
    EXPECT_EQ(note, absl::StrCat("accelerator '", h.query, "' is taken as ", h.id,
                                 ", the one part whose name holds it: name the part to be sure"));
  }
  std::string note = "stale";
  // MI300 is held by MI300X and MI300A alike.
  for (const char* refused :
       {"A100-40G", "V100 SXM2", "V100 PCIe", "MI3", "GB2", "B100", "MI300"}) {
    EXPECT_EQ(c.FindUsualAccelerator(refused, &note), nullptr) << refused;
    EXPECT_TRUE(note.empty()) << refused;
  }

  // Through the predictor: answered, with the warning on the field.
  ReadWithWarning(c, "MI325", 8, "mi325x-256gb", "is taken as mi325x-256gb");
  // the SXM4 and the PCIe 40 GB part alike
  EXPECT_EQ(ResolveLlama2On(c, "A100-40G", 8).status().code(), absl::StatusCode::kNotFound);
}

TEST(Catalog, UnknownNamesSuggestTheClosest) {
  const Catalog& c = Catalog::Builtin();
  const std::string typo = c.AcceleratorNotFound("h100-sxm-80bg");
  EXPECT_TRUE(absl::StartsWith(typo,
                               "unknown accelerator 'h100-sxm-80bg'; did you mean: "
                               "h100-sxm-80gb"))
      << typo;
  EXPECT_TRUE(absl::StrContains(typo, "(run 'scalecast accelerators' to list all)")) << typo;

  EXPECT_TRUE(absl::StrContains(c.AcceleratorNotFound("mi300"), "mi300x-192gb"));
  EXPECT_TRUE(absl::StrContains(c.AcceleratorNotFound("h2000"), "h200-sxm-141gb"));
  EXPECT_TRUE(absl::StrContains(c.ModelNotFound("lama2-7b"), "did you mean: llama2-7b"));
  EXPECT_TRUE(absl::StrContains(c.ModelNotFound("gtp2"), "gpt2")) << c.ModelNotFound("gtp2");

  // At most five suggestions.
  const std::string many = c.AcceleratorNotFound("h900");
  ASSERT_TRUE(absl::StrContains(many, "did you mean")) << many;
  EXPECT_LE(std::count(many.begin(), many.end(), ','), 4) << many;

  // Nothing close: no guess, still the pointer to the full list.
  const std::string none = c.AcceleratorNotFound("wse-3");
  EXPECT_FALSE(absl::StrContains(none, "did you mean")) << none;
  EXPECT_TRUE(absl::StrContains(none, "scalecast accelerators")) << none;
  EXPECT_TRUE(absl::StrContains(c.ModelNotFound("zzzzzzzzzz"), "scalecast models"));

  // A huge query is echoed shortened.
  EXPECT_LT(c.AcceleratorNotFound(std::string(100000, 'x')).size(), 300u);
}

TEST(Catalog, ExactIdWinsOverCaseInsensitiveMatch) {
  Catalog c = Catalog::Builtin();
  ASSERT_TRUE(c.MergeText(R"(
accelerator H100-SXM-80GB
  name = Lab-tuned H100
  family = h100
  peak_tflops_bf16 = 900
  hbm_gib = 80
  hbm_tbps = 3
  tdp_w = 700
  idle_w = 70
  gpus_per_node = 8
  nvlink_domain = 8
  nvlink_gbps = 450
  net_gbps = 400
end
)")
                  .ok());
  EXPECT_EQ(c.FindAccelerator("H100-SXM-80GB")->name, "Lab-tuned H100");
  EXPECT_EQ(c.FindAccelerator("h100-sxm-80gb")->name, "NVIDIA H100 SXM5 80GB");
  EXPECT_EQ(c.FindAccelerator("h100_sxm_80gb"), nullptr);  // two entries now match
  EXPECT_TRUE(absl::StrContains(c.AcceleratorNotFound("h100_sxm_80gb"), "H100-SXM-80GB"));
}

}  // namespace
}  // namespace scalecast
