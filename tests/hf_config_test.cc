// Models from their config.json (ModelSpec.hf_config_json): every mapped family's published
// config (tests/data/hf, sources in its README.md) against its published parameter count, the
// ones with presets predicting as the preset, and bad configs refused naming the key.
#include "server/hf_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "model/catalog.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/workload.h"
#include "server/convert.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(SCALECAST_SOURCE_DIR) + "/tests/data/hf/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr char kPath[] = "scenario.workload.model.hf_config_json";

ModelSpec Parse(const std::string& file) {
  const std::string json = Fixture(file);
  EXPECT_FALSE(json.empty()) << file;
  absl::StatusOr<HfModel> m = ParseHfConfig(json, kPath);
  EXPECT_TRUE(m.ok()) << file << ": " << m.status();
  return m.ok() ? m->spec : ModelSpec();
}

// A request for the config's model, resolved as the server resolves it.
absl::StatusOr<Scenario> Resolve(const ModelSpec& m) {
  Scenario s;
  s.workload.model = m;
  s.workload.seq_len = 4096;
  s.workload.global_batch = 1024;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 64;
  return ResolveScenario(s, Catalog::Builtin());
}

// Published total and activated parameters (sources in tests/data/hf/README.md). `activated` 0 =
// not published; `without_embedding`: the publisher's activated count leaves the input
// embedding out.
struct Published {
  const char* file;
  double total, activated;
  bool without_embedding = false;
  double tolerance = 0.01;
};

const Published kPublished[] = {
    {"llama2-7b.json", 6.738e9, 0},
    {"llama3.1-8b.json", 8.030e9, 0},
    {"llama4-maverick.json", 400e9, 0},  // Meta's 400B (its 17B active: 1.1 % off)
    {"mistral-7b-v0.1.json", 7.242e9, 0},
    {"mixtral-8x7b.json", 46.70e9, 12.9e9},
    {"qwen2.5-7b.json", 7.616e9, 0},
    {"qwen3-8b.json", 8.191e9, 0},
    {"qwen3-30b-a3b.json", 30.5e9, 0},  // its 3.3B active: 1.6 % (catalog_test, 3 %)
    {"deepseek-v2-lite.json", 15.71e9, 0},
    {"deepseek-v3.json", 671e9, 0},  // its 37B activated: within 1.5 % (tests/catalog_test.cc)
    {"kimi-k2.json", 1.03e12, 0},
    {"gpt-oss-20b.json", 20.91e9, 3.61e9, true},
    {"gemma2-9b.json", 9.242e9, 0},
    {"gemma3-1b.json", 0.99989e9, 0},
    {"phi3-mini-4k.json", 3.821e9, 0},
    {"phi4.json", 14.66e9, 0},
    {"nemotron-h-8b.json", 8.1e9, 0},
    {"nemotron-3-nano-30b-a3b.json", 31.6e9, 3.2e9, true},
    {"nemotron-3-super-120b-a12b.json", 120e9, 12e9, true, 0.02},
    {"jamba-v0.1.json", 51.57e9, 0},
    {"glm-4.5-air.json", 106e9, 0},
    {"falcon-7b.json", 6.922e9, 0},
    {"gpt2.json", 124.4e6, 0},
    {"gpt-neox-20b.json", 20.55e9, 0},
    {"bloom-7b1.json", 7.069e9, 0},
    {"opt-1.3b.json", 1.316e9, 0},
};

TEST(HfConfig, EveryFamilyGivesItsPublishedParameterCount) {
  for (const Published& k : kPublished) {
    const ModelSpec m = Parse(k.file);
    absl::StatusOr<Scenario> s = Resolve(m);
    ASSERT_TRUE(s.ok()) << k.file << ": " << s.status();
    const ParamCount p = CountParams(Shape(s->workload.model));
    EXPECT_NEAR(p.total / k.total, 1.0, k.tolerance) << k.file << ": " << p.total;
    if (k.activated > 0) {
      const double activated =
          p.activated - (k.without_embedding ? static_cast<double>(m.vocab) * m.hidden : 0.0);
      EXPECT_NEAR(activated / k.activated, 1.0, k.tolerance) << k.file << ": " << activated;
    }
  }
}

// A config with a preset predicts as the preset: the same shape, key for key.
TEST(HfConfig, ConfigsOfPresetsPredictAsThePreset) {
  const struct {
    const char* file;
    const char* preset;
  } cases[] = {{"llama2-7b.json", "llama2-7b"},
               {"mixtral-8x7b.json", "mixtral-8x7b"},
               {"qwen3-30b-a3b.json", "qwen3-30b-a3b"},
               {"deepseek-v3.json", "deepseek-v3"},
               {"kimi-k2.json", "kimi-k2"},
               {"gpt-oss-20b.json", "gpt-oss-20b"},
               {"llama4-scout.json", "llama4-scout"},
               {"nemotron-3-nano-30b-a3b.json", "nemotron-3-nano-30b-a3b"},
               {"nemotron-3-super-120b-a12b.json", "nemotron-3-super-120b"}};
  for (const auto& c : cases) {
    Scenario from_config;
    from_config.workload.model = Parse(c.file);
    from_config.workload.model.name = "";
    Scenario preset;
    preset.workload.model.name = c.preset;
    for (Scenario* s : {&from_config, &preset}) {
      s->workload.seq_len = 4096;
      s->workload.global_batch = 1024;
      s->cluster.accelerator = "h100-sxm-80gb";
      s->cluster.num_gpus = 64;
      s->framework = "megatron";
      s->parallelism = testing::ExpertLayout(1, 1, 1, 8, Recompute::kSelective);
    }
    from_config.workload.model.name = std::string(c.file);
    const bool moe = from_config.workload.model.moe.enabled();
    if (!moe) preset.parallelism.ep = from_config.parallelism.ep = 1;
    absl::StatusOr<Scenario> a = ResolveScenario(from_config, Catalog::Builtin());
    absl::StatusOr<Scenario> b = ResolveScenario(preset, Catalog::Builtin());
    ASSERT_TRUE(a.ok() && b.ok()) << c.file << ": " << a.status() << " " << b.status();
    ModelSpec x = a->workload.model, y = b->workload.model;
    x.name = y.name = "";
    // Field for field, through the proto (every field compared).
    pb::ModelSpec px, py;
    ToProto(x, &px);
    ToProto(y, &py);
    EXPECT_EQ(px.SerializeAsString(), py.SerializeAsString()) << c.file << "\n"
                                                              << px.DebugString() << "\nvs preset\n"
                                                              << py.DebugString();
    absl::StatusOr<Prediction> pa =
        Predict(from_config, Catalog::Builtin(), Profile::BuiltinDefault());
    absl::StatusOr<Prediction> pp = Predict(preset, Catalog::Builtin(), Profile::BuiltinDefault());
    ASSERT_TRUE(pa.ok() && pp.ok()) << c.file << ": " << pa.status() << " " << pp.status();
    EXPECT_DOUBLE_EQ(pa->step_time_s, pp->step_time_s) << c.file;
    EXPECT_EQ(pa->memory.total_bytes, pp->memory.total_bytes) << c.file;
  }
}

TEST(HfConfig, KeysItDoesNotUseAreNamed) {
  std::string json = Fixture("llama3.1-8b.json");
  json.insert(json.find('{') + 1, "\"my_custom_width\": 77, ");
  absl::StatusOr<HfModel> m = ParseHfConfig(json, kPath);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string all = absl::StrJoin(m->warnings, "\n");
  EXPECT_NE(all.find("keys not recognised, not used: my_custom_width"), std::string::npos) << all;
  for (const char* key : {"rope_theta", "rope_scaling", "bos_token_id", "torch_dtype"}) {
    EXPECT_NE(all.find(key), std::string::npos) << key << " not named: " << all;
  }
  // Used keys are not named.
  for (const char* key : {"hidden_size", "intermediate_size", "num_key_value_heads"}) {
    EXPECT_EQ(all.find(key), std::string::npos) << key << " named: " << all;
  }
  // In key order, the same in every process (a protobuf map's own order is not).
  for (const std::string& w : m->warnings) {
    const size_t colon = w.rfind("): ");
    if (w.find("keys not used") == std::string::npos || colon == std::string::npos) continue;
    const std::vector<std::string> keys = absl::StrSplit(w.substr(colon + 3), ", ");
    EXPECT_GT(keys.size(), 10u) << w;
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end())) << w;
  }
  // Llama 4: the vision tower is named as not modelled; text keys carry their prefix.
  m = ParseHfConfig(Fixture("llama4-scout.json"), kPath);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string l4 = absl::StrJoin(m->warnings, "\n");
  EXPECT_NE(l4.find("vision_config"), std::string::npos) << l4;
  EXPECT_NE(l4.find("text_config.rope_theta"), std::string::npos) << l4;
  EXPECT_EQ(l4.find("tie_word_embeddings"), std::string::npos) << l4;  // read at the top level
}

TEST(HfConfig, BadConfigsNameTheKey) {
  auto error = [](const std::string& json) {
    absl::StatusOr<HfModel> m = ParseHfConfig(json, kPath);
    EXPECT_FALSE(m.ok()) << json;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(m.status().message());
  };
  const std::string llama = Fixture("llama2-7b.json");
  auto with = [&](const std::string& key, const std::string& value) {
    std::string j = llama;
    const size_t at = j.find("\"" + key + "\"");
    const size_t colon = j.find(':', at), end = j.find_first_of(",\n}", colon);
    return j.replace(colon + 1, end - colon - 1, " " + value);
  };
  EXPECT_EQ(error(with("num_attention_heads", "-1")),
            "scenario.workload.model.hf_config_json: num_attention_heads: -1 is out of range [1, "
            "16384]");
  EXPECT_EQ(error(with("hidden_size", "40.5")),
            "scenario.workload.model.hf_config_json: hidden_size: 40.5 is not an integer");
  EXPECT_EQ(error(with("vocab_size", "\"big\"")),
            "scenario.workload.model.hf_config_json: vocab_size: is not a number");
  EXPECT_EQ(error(with("tie_word_embeddings", "3")),
            "scenario.workload.model.hf_config_json: tie_word_embeddings: is not true or false");
  EXPECT_TRUE(absl::StartsWith(error("{\"hidden_size\": 4096,"),
                               "scenario.workload.model.hf_config_json: not a JSON object"));
  EXPECT_TRUE(absl::StartsWith(error("[1, 2]"),
                               "scenario.workload.model.hf_config_json: not a JSON object"));
  EXPECT_EQ(error("{\"hidden_size\": 4096}"),
            "scenario.workload.model.hf_config_json: model_type: is missing (it names the "
            "architecture whose keys are mapped)");
  EXPECT_EQ(error("{\"model_type\": \"llama\", \"hidden_size\": 4096}"),
            "scenario.workload.model.hf_config_json: num_hidden_layers: is missing");
  EXPECT_TRUE(absl::StrContains(error(std::string(kMaxHfConfigBytes + 1, ' ')), "over the limit"));
  std::string nan = with("num_hidden_layers", "1e400");
  EXPECT_TRUE(absl::StartsWith(error(nan), "scenario.workload.model.hf_config_json: "));
}

// Odd values in real configs: every fixture with a few of its keys (nested ones too) set to an
// edge value, a value of another type, null, or removed, and some cut short. Each is parsed or
// refused naming the config; each parsed one predicts or is refused naming a field, never a
// crash or a value that is not a number.
TEST(HfConfig, MutatedConfigsAreReadOrRefusedByKey) {
  namespace gp = google::protobuf;
  std::mt19937 rng(20261206);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto odd = [&]() {
    static const double kNumbers[] = {0,      -1,    1,    3,     7,     0.5,
                                      1e-300, 1e300, 4097, 16385, 65536, 9.2e18};
    gp::Value v;
    switch (pick(6)) {
      case 0:
        v.set_null_value(gp::NULL_VALUE);
        break;
      case 1:
        v.set_string_value(pick(2) == 0 ? "" : "8");
        break;
      case 2:
        v.set_bool_value(pick(2) == 0);
        break;
      case 3:
        v.mutable_list_value()->add_values()->set_number_value(1);
        break;
      case 4:
        (*v.mutable_struct_value()->mutable_fields())["a"].set_number_value(1);
        break;
      default:
        v.set_number_value(kNumbers[pick(std::size(kNumbers))]);
        break;
    }
    return v;
  };
  std::function<void(gp::Struct*)> mutate = [&](gp::Struct* s) {
    auto* fields = s->mutable_fields();
    for (int n = 1 + static_cast<int>(pick(3)); n > 0 && !fields->empty(); --n) {
      std::vector<std::string> keys;
      for (const auto& [key, value] : *fields) keys.push_back(key);
      std::sort(keys.begin(), keys.end());
      auto it = fields->find(keys[pick(keys.size())]);
      if (pick(6) == 0) {
        fields->erase(it);
      } else if (it->second.has_struct_value() && pick(2) == 0) {
        mutate(it->second.mutable_struct_value());
      } else {
        it->second = odd();
      }
    }
  };
  int parsed = 0, predicted = 0, total = 0;
  // The fixtures and keys in name order (a directory's and a protobuf map's own orders change
  // from one machine or process to another): the same mutations wherever the test runs.
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SCALECAST_SOURCE_DIR) + "/tests/data/hf")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    gp::Struct base;
    ASSERT_TRUE(gp::util::JsonStringToMessage(Fixture(name), &base).ok()) << name;
    for (int i = 0; i < 12; ++i, ++total) {
      gp::Struct config = base;
      mutate(&config);
      std::string json;
      ASSERT_TRUE(gp::util::MessageToJsonString(config, &json).ok());
      if (pick(10) == 0) json.resize(pick(json.size()));
      const std::string what = name + " as " + json.substr(0, 2000);
      const absl::StatusOr<HfModel> m = ParseHfConfig(json, kPath);
      if (!m.ok()) {
        EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << what;
        EXPECT_TRUE(absl::StartsWith(m.status().message(), std::string(kPath) + ": ")) << what;
        continue;
      }
      ++parsed;
      Scenario s;
      s.workload.model = m->spec;
      s.workload.seq_len = 2048;
      s.workload.global_batch = 64;
      s.cluster.accelerator = "h100-sxm-80gb";
      s.cluster.num_gpus = 8;
      const absl::StatusOr<Prediction> p =
          Predict(s, Catalog::Builtin(), Profile::BuiltinDefault());
      if (!p.ok()) {
        EXPECT_TRUE(absl::StartsWith(p.status().message(), "scenario.workload.model.") ||
                    absl::StartsWith(p.status().message(), "no layout fits"))
            << what << ": " << p.status();
        continue;
      }
      ++predicted;
      const std::vector<std::string> wrong = testing::Unphysical(*p);
      EXPECT_TRUE(wrong.empty()) << what << ": " << absl::StrJoin(wrong, "; ");
    }
  }
  // Both sides of each question taken.
  EXPECT_GT(parsed, total / 5);
  EXPECT_LT(parsed, total);
  EXPECT_GT(predicted, parsed / 4);
  EXPECT_LT(predicted, parsed);
}

// Through the server's conversion: the config's shape with the request's set fields over it,
// its warnings in every prediction, and values the model refuses named by the model's field.
TEST(HfConfig, RequestFieldsOverrideTheConfig) {
  pb::Scenario req;
  req.mutable_workload()->mutable_model()->set_hf_config_json(Fixture("llama3.1-8b.json"));
  req.mutable_workload()->mutable_model()->set_layers(40);
  req.mutable_workload()->set_seq_len(4096);
  req.mutable_workload()->set_global_batch(512);
  req.mutable_cluster()->set_accelerator("h100-sxm-80gb");
  req.mutable_cluster()->set_num_gpus(64);
  absl::StatusOr<Scenario> s = FromProto(req, "scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->workload.model.layers, 40);
  EXPECT_EQ(s->workload.model.hidden, 4096);
  EXPECT_EQ(s->workload.model.name, "llama (config.json)");
  s->parallelism = testing::DataParallelLayout(Sharding::kFsdp, 1, Recompute::kSelective);
  absl::StatusOr<Prediction> p = Predict(*s, Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(absl::StrJoin(p->warnings, "\n").find("rope_theta"), std::string::npos);

  req.mutable_workload()->mutable_model()->set_hf_config_json("{\"model_type\": 7}");
  absl::StatusOr<Scenario> bad = FromProto(req, "scenario");
  EXPECT_EQ(bad.status().message(),
            "scenario.workload.model.hf_config_json: model_type: is not a string");
}

TEST(HfConfig, TiedEmbeddingsCountOnce) {
  const ModelSpec gpt2 = Parse("gpt2.json");
  EXPECT_TRUE(gpt2.tie_embeddings);  // GPT-2 leaves the key out: transformers' default
  EXPECT_FALSE(Parse("llama2-7b.json").tie_embeddings);
  ModelSpec untied = gpt2;
  untied.tie_embeddings = false;
  const double v = gpt2.vocab, h = gpt2.hidden;
  EXPECT_DOUBLE_EQ(CountParams(Shape(untied)).total - CountParams(Shape(gpt2)).total, v * h);
  // The logits GEMM is there either way.
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(Shape(untied), 1024), ModelFlopsPerToken(Shape(gpt2), 1024));
}

TEST(HfConfig, FamiliesMapTheirArchitecture) {
  const ModelSpec jamba = Parse("jamba-v0.1.json");
  EXPECT_EQ(jamba.layers, 64);  // a mixer and a feed-forward entry per Jamba layer
  EXPECT_EQ(jamba.layer_pattern.substr(0, 16), "M-MEM-ME*-MEM-ME");
  const ModelSpec gemma3 = Parse("gemma3-1b.json");
  EXPECT_EQ(gemma3.attention_window, 512);
  EXPECT_EQ(gemma3.full_attention_every, 6);
  EXPECT_TRUE(gemma3.tie_embeddings);
  const ModelSpec mistral = Parse("mistral-7b-v0.1.json");
  EXPECT_EQ(mistral.attention_window, 4096);
  EXPECT_EQ(mistral.full_attention_every, 0);               // every layer windowed
  EXPECT_EQ(Parse("qwen2.5-7b.json").attention_window, 0);  // use_sliding_window false
  EXPECT_EQ(Parse("falcon-7b.json").kv_heads, 1);           // multi_query
  const ModelSpec v3 = Parse("deepseek-v3.json");
  EXPECT_EQ(v3.moe.router_groups, 8);
  EXPECT_EQ(v3.moe.router_group_topk, 4);
  EXPECT_EQ(v3.mtp_layers, 1);
  EXPECT_EQ(Parse("deepseek-v2-lite.json").moe.router_groups, 0);  // n_group 1: no limit
  const ModelSpec super = Parse("nemotron-3-super-120b-a12b.json");
  EXPECT_EQ(super.moe.latent_size, 1024);
  EXPECT_EQ(super.mlp, Mlp::kPlain);
  const ModelSpec air = Parse("glm-4.5-air.json");
  EXPECT_EQ(air.moe.dense_layers, 1);
  EXPECT_EQ(air.ffn_hidden, 10944);
}

}  // namespace
}  // namespace scalecast
