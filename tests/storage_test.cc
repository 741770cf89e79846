// Tests of the store (storage/store.h) on both backends, SQLite-only behaviour, and the scenario
// codec.
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/measurements.h"
#include "model/profile.h"
#include "storage/migrations.h"
#include "storage/scenario_codec.h"
#include "storage/store.h"
#include "storage/store_internal.h"
#include "tests/pg_harness.h"
#include "tests/scratch_dir.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

using std::string_literals::operator""s;

// --- Helpers ---------------------------------------------------------------------------------

std::unique_ptr<Store> OpenOrDie(const std::string& path) {
  StoreOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// Every Scenario field set to a value other than its default; strings carry the codec's
// separators, escapes, a newline, a NUL byte and non-ASCII UTF-8.
Scenario FullScenario() {
  Scenario s;
  s.workload.model.name = "llama2-70b; v=2 %41\n";
  s.workload.model.layers = 80;
  s.workload.model.hidden = 8192;
  s.workload.model.heads = 64;
  s.workload.model.kv_heads = 8;
  s.workload.model.ffn_hidden = 28672;
  s.workload.model.mlp = Mlp::kGated;
  s.workload.model.vocab = 32000;
  s.workload.seq_len = 4096;
  s.workload.global_batch = (int64_t{1} << 40) + 3;
  s.workload.precision = Precision::kMxfp8;
  s.cluster.accelerator = "h100-sxm-80gb";
  s.cluster.num_gpus = 1024;
  s.cluster.gpus_per_node = 8;
  s.cluster.inter_node_gbps_per_gpu = 0.1 + 0.2;  // not representable in few digits
  s.parallelism.tp = 8;
  s.parallelism.pp = 4;
  s.parallelism.vpp = 2;
  s.parallelism.cp = 2;
  s.parallelism.dp = 8;
  s.parallelism.sharding = Sharding::kHsdp;
  s.parallelism.shard_group = 16;
  s.parallelism.micro_batch = 2;
  s.parallelism.recompute = Recompute::kSelective;
  s.parallelism.sequence_parallel = true;
  s.framework = "megatron";
  s.calibration = "fit=2026;a";
  s.label = "run \0 7 \xc3\xa9 \\"s;
  return s;
}

void ExpectSameScenario(const Scenario& a, const Scenario& b) {
  const ModelSpec &ma = a.workload.model, &mb = b.workload.model;
  EXPECT_EQ(ma.name, mb.name);
  EXPECT_EQ(ma.layers, mb.layers);
  EXPECT_EQ(ma.hidden, mb.hidden);
  EXPECT_EQ(ma.heads, mb.heads);
  EXPECT_EQ(ma.kv_heads, mb.kv_heads);
  EXPECT_EQ(ma.ffn_hidden, mb.ffn_hidden);
  EXPECT_EQ(ma.mlp, mb.mlp);
  EXPECT_EQ(ma.vocab, mb.vocab);
  EXPECT_EQ(a.workload.seq_len, b.workload.seq_len);
  EXPECT_EQ(a.workload.global_batch, b.workload.global_batch);
  EXPECT_EQ(a.workload.precision, b.workload.precision);
  EXPECT_EQ(a.cluster.accelerator, b.cluster.accelerator);
  EXPECT_EQ(a.cluster.num_gpus, b.cluster.num_gpus);
  EXPECT_EQ(a.cluster.gpus_per_node, b.cluster.gpus_per_node);
  EXPECT_EQ(a.cluster.inter_node_gbps_per_gpu, b.cluster.inter_node_gbps_per_gpu);
  EXPECT_EQ(a.cluster.in_network_reduction, b.cluster.in_network_reduction);
  const Parallelism &pa = a.parallelism, &pb = b.parallelism;
  EXPECT_EQ(pa.tp, pb.tp);
  EXPECT_EQ(pa.pp, pb.pp);
  EXPECT_EQ(pa.vpp, pb.vpp);
  EXPECT_EQ(pa.cp, pb.cp);
  EXPECT_EQ(pa.dp, pb.dp);
  EXPECT_EQ(pa.sharding, pb.sharding);
  EXPECT_EQ(pa.shard_group, pb.shard_group);
  EXPECT_EQ(pa.micro_batch, pb.micro_batch);
  EXPECT_EQ(pa.recompute, pb.recompute);
  EXPECT_EQ(pa.sequence_parallel, pb.sequence_parallel);
  EXPECT_EQ(a.framework, b.framework);
  EXPECT_EQ(a.calibration, b.calibration);
  EXPECT_EQ(a.label, b.label);
}

void ExpectSameMeasurement(const Measurement& a, const Measurement& b) {
  EXPECT_EQ(a.id, b.id);
  ExpectSameScenario(a.scenario, b.scenario);
  EXPECT_EQ(a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu);
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.watts_per_gpu, b.watts_per_gpu);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.recorded_at_unix_ms, b.recorded_at_unix_ms);
}

// A small valid measurement; `i` makes it distinguishable.
Measurement Sample(int i, const std::string& accelerator = "h100-sxm-80gb",
                   const std::string& framework = "megatron", const std::string& source = "test") {
  Measurement m;
  m.scenario.workload.model.name = "llama2-7b";
  m.scenario.workload.seq_len = 4096;
  m.scenario.workload.precision = Precision::kBf16;
  m.scenario.cluster.accelerator = accelerator;
  m.scenario.cluster.num_gpus = 8;
  m.scenario.framework = framework;
  m.tokens_per_s_per_gpu = 1000 + i;
  m.source = source;
  m.labels["i"] = std::to_string(i);
  return m;
}

std::vector<Measurement> Samples(int first, int n) {
  std::vector<Measurement> out;
  for (int i = first; i < first + n; ++i) out.push_back(Sample(i));
  return out;
}

int64_t CountAll(Store& store) {
  absl::StatusOr<int64_t> n = store.CountMeasurements({});
  EXPECT_TRUE(n.ok()) << n.status();
  return n.value_or(-1);
}

// Runs one SQL statement on the file directly (outside the store) and returns its first column.
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  const int rc = sqlite3_step(stmt);
  EXPECT_TRUE(rc == SQLITE_ROW || rc == SQLITE_DONE) << sqlite3_errmsg(db);
  if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

// --- The suite both backends run -----------------------------------------------------------

// One store suite, run against SQLite and against a real PostgreSQL (tests/pg_harness.h). Each
// test gets a database of its own: a file in a temporary directory, or a fresh PostgreSQL
// database.
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") SCALECAST_NEED_POSTGRES();
  }

  // The test's database address (the same on every call). `file` names the SQLite file under
  // the test's temporary directory.
  std::string Address(const std::string& file = "store.db") {
    if (address_.empty()) {
      address_ = GetParam() == "postgresql" ? testing::PgCluster::Get().NewDatabase()
                                            : dir_.path() + "/" + file;
    }
    return address_;
  }

  std::unique_ptr<Store> Open() { return OpenOrDie(Address()); }

 private:
  testing::ScratchDir dir_;
  std::string address_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// --- Scenario codec ----------------------------------------------------------------------------

TEST(ScenarioCodec, RoundTripsEveryFieldExactly) {
  const Scenario s = FullScenario();
  const std::string text = EncodeScenario(s);
  // Printable ASCII only, one line.
  for (char c : text) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << text;
  absl::StatusOr<Scenario> back = DecodeScenario(text);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameScenario(s, *back);

  // Defaults, extremes and non-finite doubles round-trip too.
  Scenario edge;
  edge.workload.global_batch = std::numeric_limits<int64_t>::min();
  edge.cluster.num_gpus = std::numeric_limits<int>::max();
  edge.cluster.inter_node_gbps_per_gpu = std::numeric_limits<double>::infinity();
  edge.parallelism.tp = -1;
  back = DecodeScenario(EncodeScenario(edge));
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameScenario(edge, *back);
  back = DecodeScenario(EncodeScenario(Scenario{}));
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameScenario(Scenario{}, *back);
}

// ScenarioFields lists every key whatever version a scenario would be written in: a default
// scenario (written as the oldest version) and a full one have the same keys in the same order,
// and the full one's values are its encoding's.
TEST(ScenarioCodec, FieldsListEveryKeyOfTheNewestVersion) {
  const std::vector<std::pair<std::string, std::string>> empty = ScenarioFields(Scenario{});
  const std::vector<std::pair<std::string, std::string>> full = ScenarioFields(FullScenario());
  ASSERT_EQ(empty.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) EXPECT_EQ(empty[i].first, full[i].first);
  EXPECT_LT(EncodeScenario(Scenario{}).size(), EncodeScenario(FullScenario()).size());
  const std::string text = EncodeScenario(FullScenario()) + ";";  // each field ends in ';'
  for (const auto& [key, value] : full) {
    if (text.find(";" + key + "=") == std::string::npos) continue;  // a newer version's key
    EXPECT_NE(text.find(";" + key + "=" + value + ";"), std::string::npos) << key << "=" << value;
  }
  EXPECT_EQ(full.front().first, "model.name");
}

TEST(ScenarioCodec, RejectsCorruptTextAsInternal) {
  const std::string good = EncodeScenario(FullScenario());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::string> corrupt = {
      "",
      "garbage",
      good.substr(0, good.size() / 2),                          // truncated
      good + ";extra=1",                                        // trailing field
      replace("scenario.v2", "scenario.v9"),                    // unknown version
      replace(";model.layers=80", ";model.layerz=80"),          // wrong key
      replace(";model.layers=80", ""),                          // missing field
      replace("model.layers=80", "model.layers=eighty"),        // not a number
      replace("model.layers=80", "model.layers=+80"),           // not canonical
      replace("model.layers=80", "model.layers=99999999999"),   // out of int range
      replace("workload.precision=4", "workload.precision=9"),  // enum out of range
      replace("parallelism.sequence_parallel=1", "parallelism.sequence_parallel=2"),
      replace("%3B", "%3"),   // broken escape
      replace("%3B", "%3b"),  // lower-case escape
  };
  for (const std::string& text : corrupt) {
    absl::StatusOr<Scenario> s = DecodeScenario(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInternal) << text;
  }
}

// A mixture-of-experts, latent-attention, hybrid scenario: every field only v3 text carries.
Scenario MoeScenario() {
  Scenario s = FullScenario();
  ModelSpec& m = s.workload.model;
  m.head_dim = 128;
  m.moe = {256, 8, 2048, 1, 2048, 3, 1.25};
  m.mla = {1536, 512, 128, 64, 128};
  m.attention_window = 8192;
  m.full_attention_every = 4;
  m.layers = 6;
  m.layer_pattern = "ME*E-M";
  m.mamba_heads = 64;
  m.mamba_head_dim = 64;
  m.mamba_state = 128;
  m.mamba_groups = 8;
  s.parallelism.ep = 64;
  s.parallelism.etp = 2;
  return s;
}

void ExpectSameV3Fields(const Scenario& a, const Scenario& b) {
  const ModelSpec &ma = a.workload.model, &mb = b.workload.model;
  EXPECT_EQ(ma.head_dim, mb.head_dim);
  EXPECT_EQ(ma.moe.num_experts, mb.moe.num_experts);
  EXPECT_EQ(ma.moe.experts_per_token, mb.moe.experts_per_token);
  EXPECT_EQ(ma.moe.expert_ffn_hidden, mb.moe.expert_ffn_hidden);
  EXPECT_EQ(ma.moe.shared_experts, mb.moe.shared_experts);
  EXPECT_EQ(ma.moe.shared_ffn_hidden, mb.moe.shared_ffn_hidden);
  EXPECT_EQ(ma.moe.dense_layers, mb.moe.dense_layers);
  EXPECT_EQ(ma.moe.capacity_factor, mb.moe.capacity_factor);
  EXPECT_EQ(ma.mla.q_lora_rank, mb.mla.q_lora_rank);
  EXPECT_EQ(ma.mla.kv_lora_rank, mb.mla.kv_lora_rank);
  EXPECT_EQ(ma.mla.qk_nope_head_dim, mb.mla.qk_nope_head_dim);
  EXPECT_EQ(ma.mla.qk_rope_head_dim, mb.mla.qk_rope_head_dim);
  EXPECT_EQ(ma.mla.v_head_dim, mb.mla.v_head_dim);
  EXPECT_EQ(ma.attention_window, mb.attention_window);
  EXPECT_EQ(ma.full_attention_every, mb.full_attention_every);
  EXPECT_EQ(ma.layer_pattern, mb.layer_pattern);
  EXPECT_EQ(ma.mamba_heads, mb.mamba_heads);
  EXPECT_EQ(ma.mamba_head_dim, mb.mamba_head_dim);
  EXPECT_EQ(ma.mamba_state, mb.mamba_state);
  EXPECT_EQ(ma.mamba_groups, mb.mamba_groups);
  EXPECT_EQ(a.parallelism.ep, b.parallelism.ep);
  EXPECT_EQ(a.parallelism.etp, b.parallelism.etp);
}

TEST(ScenarioCodec, MoeFieldsRoundTripAsV3) {
  const Scenario s = MoeScenario();
  const std::string text = EncodeScenario(s);
  EXPECT_TRUE(absl::StartsWith(text, "scenario.v3;")) << text;
  absl::StatusOr<Scenario> back = DecodeScenario(text);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameScenario(s, *back);
  ExpectSameV3Fields(s, *back);
  // One v3 field alone is enough to need v3 text.
  Scenario ep_only = FullScenario();
  ep_only.parallelism.ep = 8;
  EXPECT_TRUE(absl::StartsWith(EncodeScenario(ep_only), "scenario.v3;"));
  back = DecodeScenario(EncodeScenario(ep_only));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->parallelism.ep, 8);
  // v3 text that lost a field, or carries a bad one, is corrupt.
  const std::string truncated = text.substr(0, text.rfind(";parallelism.etp="));
  EXPECT_EQ(DecodeScenario(truncated).status().code(), absl::StatusCode::kInternal);
  std::string bad = text;
  bad.replace(bad.find("model.moe.capacity_factor=1.25"), 30, "model.moe.capacity_factor=x.25");
  EXPECT_EQ(DecodeScenario(bad).status().code(), absl::StatusCode::kInternal);
}

// stack.bf16_grads is the one v4 field: set (either way) it needs v4 text; unset, the text stays
// what a v3 (or v2) server wrote.
TEST(ScenarioCodec, Bf16GradsRoundTripsAsV4) {
  for (const bool v : {true, false}) {
    Scenario s = MoeScenario();
    s.stack.bf16_grads = v;
    const std::string text = EncodeScenario(s);
    EXPECT_TRUE(absl::StartsWith(text, "scenario.v4;")) << text;
    absl::StatusOr<Scenario> back = DecodeScenario(text);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSameScenario(s, *back);
    ExpectSameV3Fields(s, *back);
    EXPECT_EQ(back->stack.bf16_grads, std::optional<bool>(v));
    // Cut before the v4 field: corrupt, not silently unset.
    const std::string truncated = text.substr(0, text.rfind(";stack.bf16_grads="));
    EXPECT_EQ(DecodeScenario(truncated).status().code(), absl::StatusCode::kInternal);
  }
  Scenario dense = FullScenario();
  dense.stack.bf16_grads = true;
  EXPECT_TRUE(absl::StartsWith(EncodeScenario(dense), "scenario.v4;"));
  // Recompute modules are v4 too, and an unknown module bit is corrupt.
  Scenario modules = FullScenario();
  modules.parallelism.recompute_modules =
      Bit(RecomputeModule::kMlaUpProj) | Bit(RecomputeModule::kMoeAct);
  const std::string mtext = EncodeScenario(modules);
  EXPECT_TRUE(absl::StartsWith(mtext, "scenario.v4;")) << mtext;
  absl::StatusOr<Scenario> mback = DecodeScenario(mtext);
  ASSERT_TRUE(mback.ok()) << mback.status();
  EXPECT_EQ(mback->parallelism.recompute_modules, modules.parallelism.recompute_modules);
  std::string corrupt = mtext;
  corrupt.replace(corrupt.find("parallelism.recompute_modules=10"), 32,
                  "parallelism.recompute_modules=1024");
  EXPECT_EQ(DecodeScenario(corrupt).status().code(), absl::StatusCode::kInternal) << corrupt;
  EXPECT_TRUE(absl::StartsWith(EncodeScenario(MoeScenario()), "scenario.v3;"));
  absl::StatusOr<Scenario> v3 = DecodeScenario(EncodeScenario(MoeScenario()));
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_FALSE(v3->stack.bf16_grads.has_value());
}

// Each version's own field: set, it needs that version's text; unset, the text stays what the
// older server wrote (which still decodes). Cut before the field, or out of range: corrupt, not
// silently unset.
TEST(ScenarioCodec, NewestFieldsRoundTripInTheirVersion) {
  struct Case {
    const char* version;  // the text the field needs
    const char* field;    // its key, and a value out of its range
    const char* bad;
    void (*set)(Scenario*, bool);
    const char* without;  // the text without it
  };
  const Case cases[] = {
      {"scenario.v5;", "model.moe.expert_bias=1", "model.moe.expert_bias=2",
       [](Scenario* s, bool on) { s->workload.model.moe.expert_bias = on; }, "scenario.v4;"},
      {"scenario.v6;", "model.mtp_layers=1", "model.mtp_layers=x",
       [](Scenario* s, bool on) { s->workload.model.mtp_layers = on ? 1 : 0; }, "scenario.v4;"},
      {"scenario.v7;", "model.tie_embeddings=1", "model.tie_embeddings=2",
       [](Scenario* s, bool on) { s->workload.model.tie_embeddings = on; }, "scenario.v4;"},
      {"scenario.v7;", "model.moe.latent_size=1024", "model.moe.latent_size=x",
       [](Scenario* s, bool on) { s->workload.model.moe.latent_size = on ? 1024 : 0; },
       "scenario.v4;"},
      {"scenario.v7;", "model.moe.router_group_topk=4", "model.moe.router_group_topk=x",
       [](Scenario* s, bool on) {
         s->workload.model.moe.router_groups = on ? 8 : 0;
         s->workload.model.moe.router_group_topk = on ? 4 : 0;
       },
       "scenario.v4;"},
      {"scenario.v8;", "parallelism.recompute_layers=4", "parallelism.recompute_layers=x",
       [](Scenario* s, bool on) { s->parallelism.recompute_layers = on ? 4 : 0; }, "scenario.v4;"},
      {"scenario.v11;", "cluster.in_network_reduction=1", "cluster.in_network_reduction=2",
       [](Scenario* s, bool on) { s->cluster.in_network_reduction = on; }, "scenario.v4;"},
      {"scenario.v12;", "stack.full_step_graph=1", "stack.full_step_graph=3",
       [](Scenario* s, bool on) {
         s->stack.full_step_graph = on ? std::optional<bool>(true) : std::nullopt;
       },
       "scenario.v4;"},
      {"scenario.v13;", "stack.fp8_attention=1", "stack.fp8_attention=3",
       [](Scenario* s, bool on) {
         s->stack.fp8_attention = on ? std::optional<bool>(true) : std::nullopt;
       },
       "scenario.v4;"},
      {"scenario.v14;", "stack.fp32_params=1", "stack.fp32_params=3",
       [](Scenario* s, bool on) {
         s->stack.fp32_params = on ? std::optional<bool>(true) : std::nullopt;
       },
       "scenario.v4;"},
      {"scenario.v15;", "stack.fused_kernels=1", "stack.fused_kernels=3",
       [](Scenario* s, bool on) {
         s->stack.fused_kernels = on ? std::optional<bool>(true) : std::nullopt;
       },
       "scenario.v4;"},
      {"scenario.v16;", "cluster.inter_node_latency_us=40.5", "cluster.inter_node_latency_us=x",
       [](Scenario* s, bool on) { s->cluster.inter_node_latency_us = on ? 40.5 : 0; },
       "scenario.v4;"},
      {"scenario.v17;", "stack.cp_comm_type=a2a+p2p", "stack.cp_comm_type=%zz",
       [](Scenario* s, bool on) { s->stack.cp_comm_type = on ? "a2a+p2p" : ""; }, "scenario.v4;"},
      {"scenario.v18;", "parallelism.cp_a2a=4", "parallelism.cp_a2a=x",
       [](Scenario* s, bool on) { s->parallelism.cp_a2a = on ? 4 : 0; }, "scenario.v4;"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    Scenario s = MoeScenario();
    s.stack.bf16_grads = true;
    c.set(&s, true);
    const std::string text = EncodeScenario(s);
    EXPECT_TRUE(absl::StartsWith(text, c.version)) << text;
    absl::StatusOr<Scenario> back = DecodeScenario(text);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSameScenario(s, *back);
    EXPECT_EQ(back->workload.model.moe.expert_bias, s.workload.model.moe.expert_bias);
    EXPECT_EQ(back->workload.model.mtp_layers, s.workload.model.mtp_layers);
    EXPECT_EQ(back->workload.model.tie_embeddings, s.workload.model.tie_embeddings);
    EXPECT_EQ(back->workload.model.moe.latent_size, s.workload.model.moe.latent_size);
    EXPECT_EQ(back->workload.model.moe.router_groups, s.workload.model.moe.router_groups);
    EXPECT_EQ(back->workload.model.moe.router_group_topk, s.workload.model.moe.router_group_topk);
    EXPECT_EQ(back->parallelism.recompute_layers, s.parallelism.recompute_layers);
    EXPECT_EQ(back->cluster.in_network_reduction, s.cluster.in_network_reduction);
    EXPECT_EQ(back->stack.full_step_graph, s.stack.full_step_graph);
    EXPECT_EQ(back->stack.fp8_attention, s.stack.fp8_attention);
    EXPECT_EQ(back->stack.fp32_params, s.stack.fp32_params);
    EXPECT_EQ(back->stack.fused_kernels, s.stack.fused_kernels);
    EXPECT_EQ(back->cluster.inter_node_latency_us, s.cluster.inter_node_latency_us);
    EXPECT_EQ(back->stack.cp_comm_type, s.stack.cp_comm_type);
    EXPECT_EQ(back->parallelism.cp_a2a, s.parallelism.cp_a2a);
    EXPECT_EQ(back->stack.bf16_grads, std::optional<bool>(true));
    const std::string key = std::string(c.field).substr(0, std::string(c.field).find('=') + 1);
    const std::string truncated = text.substr(0, text.rfind(";" + key));
    EXPECT_EQ(DecodeScenario(truncated).status().code(), absl::StatusCode::kInternal);
    std::string bad = text;
    bad.replace(bad.find(c.field), std::string(c.field).size(), c.bad);
    EXPECT_EQ(DecodeScenario(bad).status().code(), absl::StatusCode::kInternal) << bad;
    c.set(&s, false);
    const std::string older = EncodeScenario(s);
    EXPECT_TRUE(absl::StartsWith(older, c.without)) << older;
    absl::StatusOr<Scenario> old = DecodeScenario(older);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_FALSE(old->workload.model.moe.expert_bias);
    EXPECT_EQ(old->workload.model.mtp_layers, 0);
  }
}

// A dense scenario is written as v2 text, byte for byte what the server wrote before v3, so the
// store's duplicate check (equal scenario text) still matches runs stored before the upgrade.
TEST(ScenarioCodec, DenseScenarioStaysV2Text) {
  EXPECT_TRUE(absl::StartsWith(EncodeScenario(FullScenario()), "scenario.v2;"));
  EXPECT_TRUE(absl::StartsWith(EncodeScenario(Scenario{}), "scenario.v2;"));
}

// Text a v2 (and a v1) server stored decodes, the fields added later left at their defaults.
TEST(ScenarioCodec, DecodesStoredV2AndV1Blobs) {
  const std::string v2 =
      "scenario.v2;model.name=llama2-7b;model.layers=0;model.hidden=0;model.heads=0;"
      "model.kv_heads=0;model.ffn_hidden=0;model.mlp=0;model.vocab=0;workload.seq_len=4096;"
      "workload.global_batch=256;workload.precision=1;cluster.accelerator=h100-sxm-80gb;"
      "cluster.num_gpus=64;cluster.gpus_per_node=8;cluster.inter_node_gbps_per_gpu=400;"
      "parallelism.tp=2;parallelism.pp=1;parallelism.vpp=1;parallelism.cp=1;parallelism.dp=32;"
      "parallelism.sharding=2;parallelism.shard_group=0;parallelism.micro_batch=1;"
      "parallelism.recompute=1;parallelism.sequence_parallel=1;framework=megatron;calibration=;"
      "label=run 7;parallelism.first_stage_layers=0;parallelism.last_stage_layers=0;"
      "parallelism.embedding_in_split=0;parallelism.loss_in_split=0;stack.version=24.09;"
      "stack.tp_comm_overlap=1;stack.dp_overlap=;stack.fp8_recipe=;stack.attention_kernel=;"
      "stack.cuda_graphs=;stack.compiled=";
  absl::StatusOr<Scenario> s = DecodeScenario(v2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->workload.model.name, "llama2-7b");
  EXPECT_EQ(s->cluster.inter_node_gbps_per_gpu, 400);
  EXPECT_EQ(s->parallelism.tp, 2);
  EXPECT_EQ(s->parallelism.sharding, Sharding::kZero1);
  EXPECT_EQ(s->stack.version, "24.09");
  EXPECT_EQ(s->stack.tp_comm_overlap, std::optional<bool>(true));
  EXPECT_FALSE(s->stack.dp_overlap.has_value());
  EXPECT_EQ(s->label, "run 7");
  ExpectSameV3Fields(*s, Scenario{});  // dense, no expert parallelism
  EXPECT_EQ(EncodeScenario(*s), v2);   // and written back the same

  const std::string v1 =
      "scenario.v1;model.name=llama2-7b;model.layers=0;model.hidden=0;model.heads=0;"
      "model.kv_heads=0;model.ffn_hidden=0;model.mlp=0;model.vocab=0;workload.seq_len=2048;"
      "workload.global_batch=128;workload.precision=1;cluster.accelerator=a100-sxm-80gb;"
      "cluster.num_gpus=16;cluster.gpus_per_node=8;cluster.inter_node_gbps_per_gpu=0;"
      "parallelism.tp=1;parallelism.pp=1;parallelism.vpp=1;parallelism.cp=1;parallelism.dp=16;"
      "parallelism.sharding=4;parallelism.shard_group=0;parallelism.micro_batch=2;"
      "parallelism.recompute=1;parallelism.sequence_parallel=0;framework=;calibration=;label=";
  s = DecodeScenario(v1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->parallelism.sharding, Sharding::kFsdp);
  EXPECT_EQ(s->workload.seq_len, 2048);
  ExpectSameV3Fields(*s, Scenario{});
}

// --- Measurements ----------------------------------------------------------------------------

TEST_P(StoreTest, MoeScenarioRoundTripsBesideADenseOne) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Measurement moe;
  moe.scenario = MoeScenario();
  moe.tokens_per_s_per_gpu = 3454;
  Measurement dense = moe;
  dense.scenario = FullScenario();
  auto stored = store->RecordMeasurements({moe, dense});
  ASSERT_TRUE(stored.ok()) << stored.status();
  std::string next;
  auto page = store->ListMeasurements({}, 10, "", &next);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->size(), 2u);
  int moe_rows = 0;
  for (const Measurement& got : *page) {
    if (got.scenario.workload.model.moe.num_experts == 0) continue;
    ++moe_rows;
    ExpectSameScenario(moe.scenario, got.scenario);
    ExpectSameV3Fields(moe.scenario, got.scenario);
  }
  EXPECT_EQ(moe_rows, 1);
}

TEST_P(StoreTest, RecordRoundTripsEveryFieldAndAssignsUniqueIds) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Measurement m;
  m.scenario = FullScenario();
  m.tokens_per_s_per_gpu = 1234.5678901234567;
  m.step_time_s = 9.87654321;
  m.watts_per_gpu = 612.25;
  m.source = "MosaicML llm-foundry; table 3";
  m.labels = {{"csv_id", "17"}, {"note", "MFU=41%\nline two"}, {"empty", ""}};
  std::vector<Measurement> batch(3, m);
  batch[1].recorded_at_unix_ms = 1700000000123;
  for (size_t i = 0; i < batch.size(); ++i) batch[i].watts_per_gpu += i;  // not duplicates
  auto stored = store->RecordMeasurements(batch);
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 3u);

  std::set<std::string> ids;
  for (const Measurement& s : *stored) {
    EXPECT_EQ(s.id.size(), 18u) << s.id;
    EXPECT_TRUE(absl::StartsWith(s.id, "m-")) << s.id;
    EXPECT_EQ(s.id.find_first_not_of("0123456789abcdef", 2), std::string::npos) << s.id;
    ids.insert(s.id);
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_GT((*stored)[0].recorded_at_unix_ms, 1600000000000);  // now
  EXPECT_EQ((*stored)[1].recorded_at_unix_ms, 1700000000123);  // kept

  for (const Measurement& s : *stored) {
    absl::StatusOr<Measurement> got = store->GetMeasurement(s.id);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSameMeasurement(s, *got);
    ExpectSameScenario(m.scenario, got->scenario);
    EXPECT_EQ(got->labels, m.labels);
  }
}

TEST_P(StoreTest, RecordSkipsDuplicatesOfStoredRunsAndWithinTheBatch) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto first = store->RecordMeasurements(Samples(0, 3));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 3u);

  // The same three again (other labels and recorded_at do not make them new), one of them twice,
  // and one new run: only the new one is stored.
  std::vector<Measurement> again = Samples(0, 3);
  again.push_back(Sample(1));
  for (Measurement& m : again) {
    m.labels["import"] = "second";
    m.recorded_at_unix_ms = 1700000000000;
  }
  again.push_back(Sample(7));
  auto second = store->RecordMeasurements(again);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].tokens_per_s_per_gpu, 1007);
  EXPECT_EQ(CountAll(*store), 4);

  // A different measured value, source or scenario is a different run.
  std::vector<Measurement> different(3, Sample(0));
  different[0].step_time_s = 12.5;
  different[1].source = "another";
  different[2].scenario.cluster.num_gpus = 16;
  auto third = store->RecordMeasurements(different);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->size(), 3u);
  EXPECT_EQ(CountAll(*store), 7);

  // A batch made only of duplicates stores nothing and is not an error.
  auto fourth = store->RecordMeasurements(Samples(0, 2));
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  EXPECT_TRUE(fourth->empty());
  EXPECT_EQ(CountAll(*store), 7);
}

TEST_P(StoreTest, RecordKeepsCallerIds) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Measurement> batch = Samples(0, 2);
  batch[0].id = "import-42";
  auto stored = store->RecordMeasurements(batch);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)[0].id, "import-42");
  EXPECT_TRUE(absl::StartsWith((*stored)[1].id, "m-"));
  EXPECT_TRUE(store->GetMeasurement("import-42").ok());
}

// A streamed write: chunks of Store::kRecordChunk, one transaction. A run repeating one of an
// earlier chunk is a duplicate as within one batch; an id repeated across chunks is
// ALREADY_EXISTS with its index in the stream; an error from the source, or from the store
// after chunks were written, leaves nothing.
TEST_P(StoreTest, StreamedWritesAreOneTransactionAcrossChunks) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const int chunk = static_cast<int>(Store::kRecordChunk);
  auto stream = [&](int n, int fail_at, const std::function<void(int, Measurement*)>& edit) {
    int next = 0;
    std::vector<std::string> ids;
    absl::StatusOr<int64_t> given = store->RecordMeasurementStream(
        [&](std::vector<Measurement>* out) -> absl::Status {
          for (; next < n && out->size() < Store::kRecordChunk; ++next) {
            if (next == fail_at) return absl::DataLossError("the source broke");
            Measurement m = Sample(next % (chunk + 10));  // the last 10 of chunk 2 repeat chunk 1
            edit(next, &m);
            out->push_back(std::move(m));
          }
          return absl::OkStatus();
        },
        [&](Measurement&& m) { ids.push_back(m.id); });
    return std::make_pair(given, ids.size());
  };
  auto none = [](int, Measurement*) {};
  auto failed = stream(2 * chunk + 5, 2 * chunk + 2, none);
  EXPECT_EQ(failed.first.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(CountAll(*store), 0);
  auto dup_id = stream(chunk + 20, -1, [&](int i, Measurement* m) {
    if (i == 3 || i == chunk + 4) m->id = "same";
  });
  EXPECT_EQ(dup_id.first.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(absl::StrContains(dup_id.first.status().message(),
                                absl::StrCat("measurements[", chunk + 4, "].id")))
      << dup_id.first.status();
  EXPECT_EQ(CountAll(*store), 0);
  auto bad = stream(chunk + 20, -1, [&](int i, Measurement* m) {
    if (i == chunk + 7) m->tokens_per_s_per_gpu = -1;
  });
  EXPECT_EQ(bad.first.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.first.status().message(),
                                absl::StrCat("measurements[", chunk + 7, "].tokens_per_s_per_gpu")))
      << bad.first.status();
  EXPECT_EQ(CountAll(*store), 0);
  auto ok = stream(chunk + 20, -1, none);
  ASSERT_TRUE(ok.first.ok()) << ok.first.status();
  EXPECT_EQ(*ok.first, chunk + 20);
  EXPECT_EQ(ok.second, static_cast<size_t>(chunk + 10));  // 10 repeats across the chunks
  EXPECT_EQ(CountAll(*store), chunk + 10);
}

TEST_P(StoreTest, RecordIsAllOrNothing) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Measurement> first = Samples(0, 3);
  first[0].id = "existing";
  ASSERT_TRUE(store->RecordMeasurements(first).ok());
  ASSERT_EQ(CountAll(*store), 3);

  // Row 5 repeats row 0's id: rows 0-4 (and their labels) are inserted before the database
  // refuses row 5, and must all be rolled back.
  std::vector<Measurement> batch = Samples(10, 8);
  batch[0].id = "dup";
  batch[5].id = "dup";
  absl::StatusOr<std::vector<Measurement>> r = store->RecordMeasurements(batch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "measurements[5].id")) << r.status();
  EXPECT_EQ(CountAll(*store), 3);
  EXPECT_EQ(store->GetMeasurement("dup").status().code(), absl::StatusCode::kNotFound);
  MeasurementFilter by_label;
  by_label.labels["i"] = "10";
  EXPECT_EQ(store->CountMeasurements(by_label).value_or(-1), 0);

  // The same when the last row collides with an id stored earlier.
  batch = Samples(20, 4);
  batch[3].id = "existing";
  r = store->RecordMeasurements(batch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists) << r.status();
  EXPECT_EQ(CountAll(*store), 3);

  // And the store still works afterwards.
  ASSERT_TRUE(store->RecordMeasurements(Samples(30, 2)).ok());
  EXPECT_EQ(CountAll(*store), 5);
}

TEST_P(StoreTest, RecordRejectsBadValuesNamingTheField) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->RecordMeasurements({}).status().code(), absl::StatusCode::kInvalidArgument);

  struct Case {
    void (*mutate)(Measurement*);
    const char* field;
  };
  const Case cases[] = {
      {[](Measurement* m) { m->tokens_per_s_per_gpu = 0; }, "measurements[2].tokens_per_s_per_gpu"},
      {[](Measurement* m) { m->tokens_per_s_per_gpu = std::nan(""); },
       "measurements[2].tokens_per_s_per_gpu"},
      {[](Measurement* m) { m->step_time_s = -1; }, "measurements[2].step_time_s"},
      {[](Measurement* m) { m->watts_per_gpu = INFINITY; }, "measurements[2].watts_per_gpu"},
      {[](Measurement* m) { m->labels[""] = "x"; }, "measurements[2].labels"},
  };
  for (const Case& c : cases) {
    std::vector<Measurement> batch = Samples(0, 4);
    c.mutate(&batch[2]);
    absl::StatusOr<std::vector<Measurement>> r = store->RecordMeasurements(batch);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_TRUE(absl::StartsWith(r.status().message(), c.field)) << r.status();
  }
  EXPECT_EQ(CountAll(*store), 0);
}

TEST_P(StoreTest, ListFiltersByAcceleratorFrameworkSourceAndLabels) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Measurement> batch = {
      Sample(0, "h100-sxm-80gb", "megatron", "paper-a"),
      Sample(1, "a100-sxm-80gb", "megatron", "paper-a"),
      Sample(2, "h100-sxm-80gb", "torchtitan", "paper-b"),
      Sample(3, "h100-sxm-80gb", "megatron", "paper-b"),
  };
  batch[0].labels["team"] = "x";
  batch[3].labels["team"] = "x";
  batch[3].labels["site"] = "eu";
  ASSERT_TRUE(store->RecordMeasurements(batch).ok());

  auto indices = [&](const MeasurementFilter& f) {
    std::vector<std::string> out;
    std::string next;
    auto page = store->ListMeasurements(f, 0, "", &next);
    EXPECT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(next, "");
    for (const Measurement& m : page.value_or(std::vector<Measurement>{})) {
      out.push_back(m.labels.at("i"));
    }
    EXPECT_EQ(store->CountMeasurements(f).value_or(-1), static_cast<int64_t>(out.size()));
    auto all = store->AllMeasurements(f);
    EXPECT_EQ(all.ok() ? all->size() : 0u, out.size());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(indices({}), (V{"0", "1", "2", "3"}));
  MeasurementFilter f;
  f.accelerator = "h100-sxm-80gb";
  EXPECT_EQ(indices(f), (V{"0", "2", "3"}));
  f.framework = "megatron";
  EXPECT_EQ(indices(f), (V{"0", "3"}));
  f.source = "paper-b";
  EXPECT_EQ(indices(f), (V{"3"}));
  f = {};
  f.framework = "torchtitan";
  EXPECT_EQ(indices(f), (V{"2"}));
  f = {};
  f.source = "paper-a";
  EXPECT_EQ(indices(f), (V{"0", "1"}));
  f = {};
  f.labels["team"] = "x";
  EXPECT_EQ(indices(f), (V{"0", "3"}));
  f.labels["site"] = "eu";  // every label must match
  EXPECT_EQ(indices(f), (V{"3"}));
  f.labels["site"] = "us";
  EXPECT_EQ(indices(f), V{});
  f = {};
  f.accelerator = "no-such-gpu";
  EXPECT_EQ(indices(f), V{});
}

TEST_P(StoreTest, ListPaginatesInInsertionOrder) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  // Several batches, so that insertion order is not just one batch's order.
  for (int b = 0; b < 5; ++b) ASSERT_TRUE(store->RecordMeasurements(Samples(b * 50, 50)).ok());

  std::vector<int> seen;
  std::vector<size_t> page_sizes;
  std::string token;
  do {
    std::string next;
    auto page = store->ListMeasurements({}, 100, token, &next);
    ASSERT_TRUE(page.ok()) << page.status();
    page_sizes.push_back(page->size());
    for (const Measurement& m : *page) seen.push_back(std::stoi(m.labels.at("i")));
    token = next;
    ASSERT_LE(page_sizes.size(), 3u);
  } while (!token.empty());
  EXPECT_EQ(page_sizes, (std::vector<size_t>{100, 100, 50}));
  ASSERT_EQ(seen.size(), 250u);
  for (int i = 0; i < 250; ++i) EXPECT_EQ(seen[i], i);
}

TEST_P(StoreTest, PaginationWithFilterSeesRowsAddedBetweenPages) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Measurement> batch;
  for (int i = 0; i < 10; ++i) {
    batch.push_back(Sample(i, i % 2 == 0 ? "h100-sxm-80gb" : "a100-sxm-80gb"));
  }
  ASSERT_TRUE(store->RecordMeasurements(batch).ok());
  MeasurementFilter f;
  f.accelerator = "h100-sxm-80gb";
  std::string next;
  auto page = store->ListMeasurements(f, 3, "", &next);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 3u);
  ASSERT_FALSE(next.empty());
  ASSERT_TRUE(store->RecordMeasurements({Sample(10, "h100-sxm-80gb")}).ok());
  // The first row is deleted behind the cursor: no effect on what follows.
  ASSERT_TRUE(store->DeleteMeasurement((*page)[0].id).ok());
  std::vector<std::string> rest;
  std::string token = next;
  while (!token.empty()) {
    page = store->ListMeasurements(f, 3, token, &next);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const Measurement& m : *page) rest.push_back(m.labels.at("i"));
    token = next;
  }
  EXPECT_EQ(rest, (std::vector<std::string>{"6", "8", "10"}));
}

TEST_P(StoreTest, ListPageSizeDefaultsTo100AndIsCappedAt1000) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordMeasurements(Samples(0, 1005)).ok());
  std::string next;
  auto page = store->ListMeasurements({}, 0, "", &next);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->size(), 100u);
  EXPECT_FALSE(next.empty());
  page = store->ListMeasurements({}, 5000, "", &next);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->size(), 1000u);
  page = store->ListMeasurements({}, 5000, next, &next);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->size(), 5u);
  EXPECT_EQ(next, "");
  EXPECT_EQ(store->ListMeasurements({}, -1, "", &next).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Exactly a page left: the last page says so without an extra empty page.
  page = store->ListMeasurements({}, 1005, "", &next);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->size(), 1000u);
  ASSERT_TRUE(store->AllMeasurements({}).ok());
  EXPECT_EQ(store->AllMeasurements({})->size(), 1005u);
}

TEST_P(StoreTest, ListRejectsMalformedOrForeignPageToken) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordMeasurements(Samples(0, 5)).ok());
  std::string next;
  ASSERT_TRUE(store->ListMeasurements({}, 2, "", &next).ok());
  ASSERT_FALSE(next.empty());
  MeasurementFilter other;
  other.source = "test";

  std::string edited = next;
  edited[edited.size() / 2] = edited[edited.size() / 2] == 'A' ? 'B' : 'A';
  const std::vector<std::pair<MeasurementFilter, std::string>> bad = {
      {{}, "not a token"}, {{}, "!!!!"},        {{}, next.substr(0, next.size() - 3)},
      {{}, edited},        {{}, next + "AAAA"}, {other, next},  // issued for another filter
  };
  for (const auto& [filter, token] : bad) {
    std::string ignored = "unchanged";
    auto r = store->ListMeasurements(filter, 2, token, &ignored);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_TRUE(absl::StartsWith(r.status().message(), "page_token: ")) << r.status();
  }
  // The genuine token still works.
  auto r = store->ListMeasurements({}, 2, next, &next);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 2u);
}

TEST_P(StoreTest, DeleteRemovesMeasurementAndItsLabels) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto stored = store->RecordMeasurements(Samples(0, 3));
  ASSERT_TRUE(stored.ok());
  const std::string id = (*stored)[1].id;
  ASSERT_TRUE(store->DeleteMeasurement(id).ok());
  EXPECT_EQ(store->GetMeasurement(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteMeasurement(id).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteMeasurement("never-was").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CountAll(*store), 2);
  // Its labels went with it: the label filter finds the other two only.
  for (const Measurement& m : *stored) {
    MeasurementFilter f;
    f.labels = m.labels;
    EXPECT_EQ(store->CountMeasurements(f).value_or(-1), m.id == id ? 0 : 1);
  }
}

TEST(SqliteStore, CorruptStoredScenarioIsInternal) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/corrupt.db";
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  auto stored = store->RecordMeasurements(Samples(0, 1));
  ASSERT_TRUE(stored.ok());
  RawQuery(path, "UPDATE measurements SET scenario = 'scenario.v1;model.name=x'");
  auto got = store->GetMeasurement((*stored)[0].id);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInternal) << got.status();
  EXPECT_EQ(store->AllMeasurements({}).status().code(), absl::StatusCode::kInternal);
}

// --- Profiles ----------------------------------------------------------------------------------

StoredProfile SampleProfile(const std::string& name, double gemm_eff) {
  StoredProfile p;
  p.profile.name = name;
  p.profile.description = "fitted to the H100 rows";
  p.profile.accelerators["h100"].gemm_eff = gemm_eff;
  p.profile.accelerators["h100"].attn_eff = 0.25;
  p.profile.stack.eager_traffic = 1.95;
  p.profile.global.comm_slowdown = 0.2;
  p.profile.info["fitted_rows"] = "42";
  p.fitted_on = "accelerator=h100-sxm-80gb";
  p.fitted_count = 42;
  p.mape_before = 0.12;
  p.mape_after = 0.05;
  p.cv_mape = 0.07;
  p.created_at_unix_ms = 1700000000000;
  return p;
}

void ExpectSameProfile(const StoredProfile& a, const StoredProfile& b) {
  EXPECT_EQ(a.profile.ToText(), b.profile.ToText());
  EXPECT_EQ(a.profile.name, b.profile.name);
  EXPECT_EQ(a.profile.description, b.profile.description);
  EXPECT_EQ(a.profile.info, b.profile.info);
  EXPECT_EQ(a.fitted_on, b.fitted_on);
  EXPECT_EQ(a.fitted_count, b.fitted_count);
  EXPECT_EQ(a.mape_before, b.mape_before);
  EXPECT_EQ(a.mape_after, b.mape_after);
  EXPECT_EQ(a.cv_mape, b.cv_mape);
  EXPECT_EQ(a.created_at_unix_ms, b.created_at_unix_ms);
}

// Every stored profile, read a page of 2 at a time.
absl::StatusOr<std::vector<StoredProfile>> AllProfiles(Store& store) {
  std::vector<StoredProfile> out;
  std::string token;
  do {
    std::string next;
    absl::StatusOr<std::vector<StoredProfile>> page = store.ListProfiles(2, token, &next);
    if (!page.ok()) return page.status();
    if (page->size() > 2) return absl::InternalError("a page longer than page_size");
    for (StoredProfile& p : *page) out.push_back(std::move(p));
    token = std::move(next);
  } while (!token.empty());
  return out;
}

// Medium (issue 27): 75k profiles made one ListProfiles exceed the message limit. Profiles come
// a page at a time, by name, with a token that carries on where the page ended.
TEST_P(StoreTest, ProfilesArePagedByName) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (const char* name : {"c", "a", "e", "b", "d"}) {
    ASSERT_TRUE(store->PutProfile(SampleProfile(name, 0.8), /*replace=*/false).ok());
  }
  std::string next;
  auto first = store->ListProfiles(2, "", &next);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].profile.name, "a");
  EXPECT_EQ((*first)[1].profile.name, "b");
  ASSERT_FALSE(next.empty());
  auto all = AllProfiles(*store);
  ASSERT_TRUE(all.ok()) << all.status();
  std::string names;
  for (const StoredProfile& p : *all) names += p.profile.name;
  EXPECT_EQ(names, "abcde");
  EXPECT_EQ(store->CountProfiles().value_or(-1), 5);
  auto whole = store->ListProfiles(0, "", &next);  // 0: up to 1000
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 5u);
  EXPECT_TRUE(next.empty());
  EXPECT_EQ(store->ListProfiles(-1, "", &next).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ListProfiles(2, "not-a-token", &next).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ProfilesUpsertGetAndList) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->GetProfile("h100-fit").status().code(), absl::StatusCode::kNotFound);
  auto list = AllProfiles(*store);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());

  const StoredProfile v1 = SampleProfile("h100-fit", 0.81);
  ASSERT_TRUE(store->PutProfile(v1, /*replace=*/true).ok());
  auto got = store->GetProfile("h100-fit");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameProfile(v1, *got);
  EXPECT_EQ(got->profile.accelerators.at("h100").gemm_eff, 0.81);
  EXPECT_EQ(got->profile.stack.eager_traffic, 1.95);

  StoredProfile v2 = SampleProfile("h100-fit", 0.79);
  v2.fitted_count = 50;
  v2.created_at_unix_ms = 0;  // now
  ASSERT_TRUE(store->PutProfile(v2, /*replace=*/true).ok());
  ASSERT_TRUE(store->PutProfile(SampleProfile("a-first", 0.9), /*replace=*/true).ok());
  got = store->GetProfile("h100-fit");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->profile.accelerators.at("h100").gemm_eff, 0.79);
  EXPECT_EQ(got->fitted_count, 50);
  EXPECT_GT(got->created_at_unix_ms, 1700000000000);

  list = AllProfiles(*store);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].profile.name, "a-first");
  EXPECT_EQ((*list)[1].profile.name, "h100-fit");
}

// --- Registered accelerators -------------------------------------------------------------------

StoredAccelerator SampleAccelerator(const std::string& id) {
  StoredAccelerator a;
  a.spec.id = id;
  a.spec.like = "h100-sxm-80gb";
  a.spec.peak_tflops_bf16 = 1234.5678901234567;
  a.spec.hbm_gb = 96;
  a.spec.nvlink_domain = 16;
  a.spec.inter_node_gbps_per_gpu = 800;
  a.spec.idle_watts = 0.1;
  a.spec.tensor_flops_per_exp = 384;
  return a;
}

TEST_P(StoreTest, AcceleratorsRoundTripSurviveReopenAndAreBounded) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutAccelerator(SampleAccelerator("b-part"), false, 2).ok());
    ASSERT_TRUE(store->PutAccelerator(SampleAccelerator("a-part"), false, 2).ok());
    // A third is over the bound; the same id again needs replace.
    EXPECT_EQ(store->PutAccelerator(SampleAccelerator("c-part"), false, 2).code(),
              absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(store->PutAccelerator(SampleAccelerator("a-part"), false, 2).code(),
              absl::StatusCode::kAlreadyExists);
    StoredAccelerator changed = SampleAccelerator("a-part");
    changed.spec.hbm_gb = 141;
    ASSERT_TRUE(store->PutAccelerator(changed, true, 2).ok());  // replacing is within the bound
  }
  auto store = Open();  // a restart: what was stored is there
  ASSERT_NE(store, nullptr);
  auto list = store->ListAccelerators();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].spec.id, "a-part");
  EXPECT_EQ((*list)[0].spec.hbm_gb, 141);
  const AcceleratorSpec& b = (*list)[1].spec;
  const AcceleratorSpec want = SampleAccelerator("b-part").spec;
  EXPECT_EQ(b.id, want.id);
  EXPECT_EQ(b.like, want.like);
  EXPECT_EQ(b.peak_tflops_bf16, want.peak_tflops_bf16);  // exact
  EXPECT_EQ(b.nvlink_domain, want.nvlink_domain);
  EXPECT_EQ(b.inter_node_gbps_per_gpu, want.inter_node_gbps_per_gpu);
  EXPECT_EQ(b.idle_watts, want.idle_watts);
  EXPECT_EQ(b.tensor_flops_per_exp, want.tensor_flops_per_exp);
  EXPECT_GT((*list)[1].created_at_unix_ms, 0);
}

TEST_P(StoreTest, DeleteAcceleratorAndBadSpecsStoreNothing) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutCachedSweep("k", "v1", "default", "value").ok());
  ASSERT_TRUE(store->PutAccelerator(SampleAccelerator("gone"), false, 10).ok());
  ASSERT_TRUE(store->DeleteAccelerator("gone").ok());
  const absl::Status again = store->DeleteAccelerator("gone");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "accelerator 'gone' is not registered");
  // Its cached sweeps went with it.
  auto cached = store->GetCachedSweep("k", "v1", "default");
  ASSERT_TRUE(cached.ok());
  EXPECT_FALSE(cached->has_value());
  StoredAccelerator no_id = SampleAccelerator("");
  EXPECT_EQ(store->PutAccelerator(no_id, false, 10).code(), absl::StatusCode::kInvalidArgument);
  StoredAccelerator nan = SampleAccelerator("nan");
  nan.spec.hbm_tb_s = std::numeric_limits<double>::quiet_NaN();
  const absl::Status s = store->PutAccelerator(nan, false, 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("spec.hbm_tb_s"), absl::string_view::npos) << s;
  auto list = store->ListAccelerators();
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

TEST_P(StoreTest, DeleteProfileRemovesItAndItsCachedSweeps) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutProfile(SampleProfile("gone", 0.8), /*replace=*/true).ok());
  ASSERT_TRUE(store->PutProfile(SampleProfile("kept", 0.8), /*replace=*/true).ok());
  ASSERT_TRUE(store->PutCachedSweep("k", "v1", "gone", "value").ok());
  ASSERT_TRUE(store->PutCachedSweep("k", "v1", "kept", "value").ok());
  ASSERT_TRUE(store->DeleteProfile("gone").ok());
  EXPECT_EQ(store->GetProfile("gone").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store->GetProfile("kept").ok());
  auto list = AllProfiles(*store);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].profile.name, "kept");
  auto cached = store->GetCachedSweep("k", "v1", "gone");
  ASSERT_TRUE(cached.ok());
  EXPECT_FALSE(cached->has_value());
  cached = store->GetCachedSweep("k", "v1", "kept");
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached->has_value());
  const absl::Status again = store->DeleteProfile("gone");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "profile 'gone' not found");
}

TEST_P(StoreTest, PutProfileRejectsProfilesThatWouldNotReadBack) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  StoredProfile p = SampleProfile("", 0.8);
  EXPECT_EQ(store->PutProfile(p, /*replace=*/true).code(), absl::StatusCode::kInvalidArgument);
  p = SampleProfile("ok", 0.8);
  p.profile.description = "two\nlines";
  EXPECT_EQ(store->PutProfile(p, /*replace=*/true).code(), absl::StatusCode::kInvalidArgument);
  p = SampleProfile("ok", 0.8);
  p.profile.info["k"] = "value # with a comment sign";
  EXPECT_EQ(store->PutProfile(p, /*replace=*/true).code(), absl::StatusCode::kInvalidArgument);
  p = SampleProfile("ok", 0.8);
  p.cv_mape = std::nan("");
  EXPECT_EQ(store->PutProfile(p, /*replace=*/true).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(AllProfiles(*store)->empty());
}

// --- Sweep cache ------------------------------------------------------------------------------

TEST_P(StoreTest, SweepCacheMissHitAndHitCounts) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string key = "\x08\x01\x12\x00\xff request"s;  // bytes, with a NUL
  const std::string value = "result\0bytes"s;
  auto miss = store->GetCachedSweep(key, "2026.11.1", "default");
  ASSERT_TRUE(miss.ok()) << miss.status();
  EXPECT_FALSE(miss->has_value());
  EXPECT_EQ(store->CachedSweepHits(key, "2026.11.1", "default").status().code(),
            absl::StatusCode::kNotFound);

  ASSERT_TRUE(store->PutCachedSweep(key, "2026.11.1", "default", value).ok());
  EXPECT_EQ(store->CachedSweepHits(key, "2026.11.1", "default").value_or(-1), 0);
  for (int i = 1; i <= 3; ++i) {
    auto hit = store->GetCachedSweep(key, "2026.11.1", "default");
    ASSERT_TRUE(hit.ok()) << hit.status();
    ASSERT_TRUE(hit->has_value());
    EXPECT_EQ(**hit, value);
    EXPECT_EQ(store->CachedSweepHits(key, "2026.11.1", "default").value_or(-1), i);
  }
  // The model version, the profile and every byte of the key are part of the key.
  EXPECT_FALSE(store->GetCachedSweep(key, "2026.11.2", "default")->has_value());
  EXPECT_FALSE(store->GetCachedSweep(key, "2026.11.1", "h100-fit")->has_value());
  EXPECT_FALSE(store->GetCachedSweep(key.substr(0, 4), "2026.11.1", "default")->has_value());
  EXPECT_EQ(store->CachedSweepHits(key, "2026.11.1", "default").value_or(-1), 3);

  // Another entry under another profile is independent; replacing an entry resets its count.
  ASSERT_TRUE(store->PutCachedSweep(key, "2026.11.1", "h100-fit", "other").ok());
  EXPECT_EQ(store->GetCachedSweep(key, "2026.11.1", "h100-fit")->value_or(""), "other");
  ASSERT_TRUE(store->PutCachedSweep(key, "2026.11.1", "default", "new").ok());
  EXPECT_EQ(store->CachedSweepHits(key, "2026.11.1", "default").value_or(-1), 0);
  EXPECT_EQ(store->GetCachedSweep(key, "2026.11.1", "default")->value_or(""), "new");
}

TEST_P(StoreTest, InvalidateSweepCacheDropsEveryEntry) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutCachedSweep("a", "v1", "default", "1").ok());
  ASSERT_TRUE(store->PutCachedSweep("b", "v1", "fit", "2").ok());
  ASSERT_TRUE(store->InvalidateSweepCache().ok());
  EXPECT_FALSE(store->GetCachedSweep("a", "v1", "default")->has_value());
  EXPECT_FALSE(store->GetCachedSweep("b", "v1", "fit")->has_value());
  ASSERT_TRUE(store->InvalidateSweepCache().ok());  // on an empty cache too
}

TEST_P(StoreTest, ReplacingAProfileDropsItsCachedSweeps) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutProfile(SampleProfile("fit", 0.8), /*replace=*/true).ok());
  ASSERT_TRUE(store->PutCachedSweep("a", "v1", "fit", "stale").ok());
  ASSERT_TRUE(store->PutCachedSweep("a", "v1", "default", "fresh").ok());
  ASSERT_TRUE(store->PutProfile(SampleProfile("fit", 0.7), /*replace=*/true).ok());
  EXPECT_FALSE(store->GetCachedSweep("a", "v1", "fit")->has_value());
  EXPECT_TRUE(store->GetCachedSweep("a", "v1", "default")->has_value());
}

// Without replace, a profile write is insert-if-absent: a stored name is ALREADY_EXISTS and
// keeps what it held; two connections (two replicas) racing to create one name: exactly one
// wins, every time, and the stored profile is the winner's (issue 27: Calibrate without replace
// silently overwrote).
TEST_P(StoreTest, ProfileInsertWithoutReplaceIsAtomicAcrossConnections) {
  const std::string path = Address();
  auto a = OpenOrDie(path);
  auto b = OpenOrDie(path);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->PutProfile(SampleProfile("kept", 0.8), /*replace=*/false).ok());
  const absl::Status again = b->PutProfile(SampleProfile("kept", 0.5), /*replace=*/false);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  EXPECT_TRUE(absl::StrContains(again.message(), "'kept'")) << again;
  EXPECT_EQ(a->GetProfile("kept")->profile.accelerators.at("h100").gemm_eff, 0.8);
  ASSERT_TRUE(b->PutProfile(SampleProfile("kept", 0.5), /*replace=*/true).ok());
  EXPECT_EQ(a->GetProfile("kept")->profile.accelerators.at("h100").gemm_eff, 0.5);

  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    const std::string name = "race-" + std::to_string(round);
    std::atomic<int> ready{0};
    absl::Status sa, sb;
    auto put = [&](Store* store, double eff, absl::Status* out) {
      ++ready;
      while (ready.load() < 2) {
      }
      *out = store->PutProfile(SampleProfile(name, eff), /*replace=*/false);
    };
    std::thread ta(put, a.get(), 0.61, &sa), tb(put, b.get(), 0.62, &sb);
    ta.join();
    tb.join();
    ASSERT_NE(sa.ok(), sb.ok()) << "round " << round << ": " << sa << " / " << sb;
    const absl::Status& lost = sa.ok() ? sb : sa;
    EXPECT_EQ(lost.code(), absl::StatusCode::kAlreadyExists) << lost;
    EXPECT_EQ(a->GetProfile(name)->profile.accelerators.at("h100").gemm_eff, sa.ok() ? 0.61 : 0.62);
  }
}

StoredProfile SampleLayer(const std::string& name, const std::string& base, double gemm_eff) {
  StoredProfile p;
  p.profile.name = name;
  p.profile.description = "layer over " + base;
  p.profile.base = base;
  p.profile.changes = {{"accel.h100.gemm_eff", 0.71, gemm_eff, 2, "2 runs (source=lab)"},
                       {"stack.overlap_eff", 0.9, 0.8, 1, ""}};
  p.fitted_on = "source=lab";
  p.fitted_count = 2;
  p.created_at_unix_ms = 1700000000000;
  return p;
}

TEST_P(StoreTest, LayersStoreOnlyTheirChangesAndKeepTheirBases) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutProfile(SampleProfile("full", 0.8), /*replace=*/true).ok());
  const StoredProfile lab = SampleLayer("lab", "full", 0.6);
  ASSERT_TRUE(store->PutProfile(lab, /*replace=*/true).ok());
  ASSERT_TRUE(store->PutProfile(SampleLayer("lab2", "lab", 0.5), /*replace=*/true).ok());
  ASSERT_TRUE(store->PutProfile(SampleLayer("on-default", "default", 0.7), /*replace=*/true).ok());
  auto got = store->GetProfile("lab");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameProfile(lab, *got);
  EXPECT_EQ(got->profile.base, "full");
  EXPECT_EQ(got->profile.changes, lab.profile.changes);
  EXPECT_EQ(got->profile.ToText().find("global."), std::string::npos);  // changes only

  // A base must be stored, and must not lead back to the layer.
  absl::Status s = store->PutProfile(SampleLayer("orphan", "nowhere", 0.6), /*replace=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "profile.base: profile 'nowhere' is not stored");
  s = store->PutProfile(SampleLayer("lab", "lab2", 0.6), /*replace=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lab -> lab2 -> lab"), std::string::npos) << s;
  EXPECT_EQ(store->GetProfile("lab")->profile.base, "full");  // unchanged
  EXPECT_EQ(store->GetProfile("orphan").status().code(), absl::StatusCode::kNotFound);

  // A profile a layer stands on cannot be deleted; its layers can, then it can.
  s = store->DeleteProfile("lab");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "profile 'lab' is the base of profile 'lab2'; delete or replace it first");
  s = store->DeleteProfile("full");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(AllProfiles(*store)->size(), 4u);

  // Replacing a base drops the cached sweeps of every layer on it, and keeps other entries.
  ASSERT_TRUE(store->PutCachedSweep("k", "v1", "lab2", "stale").ok());
  ASSERT_TRUE(store->PutCachedSweep("k", "v1", "on-default", "fresh").ok());
  ASSERT_TRUE(store->PutProfile(SampleProfile("full", 0.75), /*replace=*/true).ok());
  EXPECT_FALSE(store->GetCachedSweep("k", "v1", "lab2")->has_value());
  EXPECT_TRUE(store->GetCachedSweep("k", "v1", "on-default")->has_value());

  ASSERT_TRUE(store->DeleteProfile("lab2").ok());
  ASSERT_TRUE(store->DeleteProfile("lab").ok());
  ASSERT_TRUE(store->DeleteProfile("full").ok());
  EXPECT_EQ(AllProfiles(*store)->size(), 1u);
}

// --- Lifecycle, schema, durability -------------------------------------------------------------

TEST_P(StoreTest, PersistsAcrossCloseAndReopen) {
  // SQLite: the parent directories do not exist yet.
  const std::string path = Address("var/nested/scalecast.db");
  std::vector<Measurement> stored;
  {
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    Measurement m = Sample(1);
    m.scenario = FullScenario();
    auto r = store->RecordMeasurements({m, Sample(2)});
    ASSERT_TRUE(r.ok()) << r.status();
    stored = *r;
    ASSERT_TRUE(store->PutProfile(SampleProfile("fit", 0.8), /*replace=*/true).ok());
    ASSERT_TRUE(store->PutCachedSweep("k", "v", "fit", "value").ok());
    store->Close();
    store->Close();  // idempotent
    EXPECT_EQ(store->GetMeasurement(stored[0].id).status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(store->InvalidateSweepCache().code(), absl::StatusCode::kFailedPrecondition);
  }
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  auto all = store->AllMeasurements({});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  ExpectSameMeasurement(stored[0], (*all)[0]);
  ExpectSameMeasurement(stored[1], (*all)[1]);
  auto profile = store->GetProfile("fit");
  ASSERT_TRUE(profile.ok()) << profile.status();
  ExpectSameProfile(SampleProfile("fit", 0.8), *profile);
  EXPECT_EQ(store->GetCachedSweep("k", "v", "fit")->value_or(""), "value");
}

TEST(SqliteStore, FreshDatabaseIsAtLatestSchemaVersionInWalMode) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/fresh.db";
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_GE(LatestSchemaVersion(), 1);
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(LatestSchemaVersion()));
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  for (size_t i = 0; i < Migrations().size(); ++i) {
    EXPECT_EQ(Migrations()[i].version, static_cast<int>(i) + 1);
  }
}

TEST_P(StoreTest, OpeningTwiceIsIdempotent) {
  const std::string path = Address();
  auto a = OpenOrDie(path);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->RecordMeasurements(Samples(0, 2)).ok());
  auto b = OpenOrDie(path);  // while the first is open
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->RecordMeasurements(Samples(2, 2)).ok());
  EXPECT_EQ(CountAll(*a), 4);
  b.reset();
  a.reset();
  auto c = OpenOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(CountAll(*c), 4);
  if (GetParam() == "sqlite") {
    EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(LatestSchemaVersion()));
  }
}

TEST(SqliteStore, RefusesDatabaseFromANewerVersion) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/newer.db";
  {
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->RecordMeasurements(Samples(0, 1)).ok());
  }
  RawQuery(path, "PRAGMA journal_mode = DELETE");
  RawQuery(path, "PRAGMA user_version = " + std::to_string(LatestSchemaVersion() + 1));
  StoreOptions options;
  options.path = path;
  auto store = Store::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "newer")) << store.status();
  // Refusing wrote nothing.
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(LatestSchemaVersion() + 1));
  EXPECT_EQ(RawQuery(path, "SELECT COUNT(*) FROM measurements"), "1");
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "delete");
}

TEST(SqliteStore, OpenFailsCleanlyOnAFileThatIsNotADatabase) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/not.db";
  {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("this is not an SQLite database, just some text long enough to have a header.....\n", f);
    fclose(f);
  }
  StoreOptions options;
  options.path = path;
  auto store = Store::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), path)) << store.status();
  EXPECT_EQ(
      Store::Open(StoreOptions{.path = "", .password = "", .busy_timeout_ms = 1}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// A child process records batches of 50 in a loop and acknowledges each one through a pipe after
// RecordMeasurements returns; it is killed with SIGKILL mid-stream. Every acknowledged batch must
// be there whole and no batch may be there in part.
TEST_P(StoreTest, AcknowledgedBatchesSurviveKill) {
  const std::string path = Address();
  constexpr int kBatch = 50;
  constexpr int kAcksBeforeKill = 4;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: no gtest assertions here; report trouble through the exit code.
    close(fds[0]);
    StoreOptions options;
    options.path = path;
    auto store = Store::Open(options);
    if (!store.ok()) _exit(2);
    for (int32_t b = 1; b <= 100000; ++b) {
      std::vector<Measurement> batch = Samples(b * kBatch, kBatch);  // no duplicates
      for (Measurement& m : batch) m.labels["batch"] = std::to_string(b);
      if (!(*store)->RecordMeasurements(std::move(batch)).ok()) _exit(3);
      if (write(fds[1], &b, sizeof(b)) != static_cast<ssize_t>(sizeof(b))) _exit(4);
    }
    _exit(0);
  }
  close(fds[1]);
  int32_t acked = 0, b = 0;
  auto first_ack = std::chrono::steady_clock::now();
  while (acked < kAcksBeforeKill && read(fds[0], &b, sizeof(b)) == sizeof(b)) {
    acked = b;
    if (acked == 1) first_ack = std::chrono::steady_clock::now();
  }
  // Kill halfway through a batch rather than right after an acknowledgement, when the child has
  // most likely written part of the next batch.
  const auto batch_time = (std::chrono::steady_clock::now() - first_ack) / (kAcksBeforeKill - 1);
  std::this_thread::sleep_for(
      std::max<std::chrono::nanoseconds>(batch_time / 2, std::chrono::microseconds(200)));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  // Acknowledgements sent before the kill landed count too.
  while (read(fds[0], &b, sizeof(b)) == sizeof(b)) acked = b;
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_GE(acked, kAcksBeforeKill);

  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  const int64_t count = CountAll(*store);
  EXPECT_EQ(count % kBatch, 0) << count;
  EXPECT_GE(count, int64_t{kBatch} * acked);
  EXPECT_LE(count, int64_t{kBatch} * (acked + 1));  // at most one committed, not yet acknowledged
  auto all = store->AllMeasurements({});
  ASSERT_TRUE(all.ok()) << all.status();
  std::map<int, int> per_batch;
  for (const Measurement& m : *all) ++per_batch[std::stoi(m.labels.at("batch"))];
  int expected_batch = 1;
  for (const auto& [batch, n] : per_batch) {
    EXPECT_EQ(batch, expected_batch++);
    EXPECT_EQ(n, kBatch) << "batch " << batch;
  }
}

TEST_P(StoreTest, ConcurrentRecordAndListFromManyThreads) {
  auto store = OpenOrDie(Address());
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8, kBatches = 20, kPerBatch = 5;
  constexpr size_t kTotal = kThreads * kBatches * kPerBatch;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Measurement> batch = Samples((t * kBatches + b) * kPerBatch, kPerBatch);
        for (Measurement& m : batch) m.labels["thread"] = std::to_string(t);
        if (!store->RecordMeasurements(std::move(batch)).ok()) ++failures;
        std::string next;
        MeasurementFilter mine;
        mine.labels["thread"] = std::to_string(t);
        auto page = store->ListMeasurements(mine, 1000, "", &next);
        if (!page.ok() || page->size() != static_cast<size_t>((b + 1) * kPerBatch)) ++failures;
        if (!store->ListMeasurements({}, 7, "", &next).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(CountAll(*store), static_cast<int64_t>(kTotal));
  auto all = store->AllMeasurements({});
  ASSERT_TRUE(all.ok());
  std::set<std::string> ids;
  for (const Measurement& m : *all) ids.insert(m.id);
  EXPECT_EQ(ids.size(), kTotal);
}

TEST_P(StoreTest, TwoConnectionsToOneFileWriteConcurrently) {
  const std::string path = Address();
  auto a = OpenOrDie(path);
  auto b = OpenOrDie(path);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::atomic<int> failures{0};
  auto work = [&](Store* store, int first) {
    for (int i = 0; i < 15; ++i) {
      if (!store->RecordMeasurements(Samples(first + 3 * i, 3)).ok()) ++failures;
      if (!store->CountMeasurements({}).ok()) ++failures;
    }
  };
  std::thread ta(work, a.get(), 0), tb(work, b.get(), 1000);
  ta.join();
  tb.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(CountAll(*a), 2 * 15 * 3);
  EXPECT_EQ(CountAll(*b), 2 * 15 * 3);
}

// The real calibration set, imported the way `scalecast measurements import` will: one batch.
TEST_P(StoreTest, ImportsTheCalibrationSetWhole) {
  const std::string csv = testing::ReadShared("calibration.csv");
  ASSERT_FALSE(csv.empty());
  auto parsed = ParseMeasurementsCsv(csv);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 280u);
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto stored = store->RecordMeasurements(*parsed);
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto all = store->AllMeasurements({});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), parsed->size());
  std::map<std::string, int64_t> per_accelerator;
  for (size_t i = 0; i < all->size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "row " << i);
    const Measurement &in = (*parsed)[i], &out = (*all)[i];
    ExpectSameScenario(in.scenario, out.scenario);
    EXPECT_EQ(in.tokens_per_s_per_gpu, out.tokens_per_s_per_gpu);
    EXPECT_EQ(in.step_time_s, out.step_time_s);
    EXPECT_EQ(in.watts_per_gpu, out.watts_per_gpu);
    EXPECT_EQ(in.source, out.source);
    EXPECT_EQ(in.labels, out.labels);
    EXPECT_EQ((*stored)[i].id, out.id);
    ++per_accelerator[in.scenario.cluster.accelerator];
  }
  for (const auto& [accelerator, n] : per_accelerator) {
    MeasurementFilter f;
    f.accelerator = accelerator;
    EXPECT_EQ(store->CountMeasurements(f).value_or(-1), n) << accelerator;
  }
  MeasurementFilter by_csv_id;
  by_csv_id.labels["csv_id"] = "1";
  auto first = store->AllMeasurements(by_csv_id);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].scenario.workload.model.name, "MPT-70b");
}

// --- Bounds every backend enforces ------------------------------------------------------------

TEST_P(StoreTest, RecordRefusesImplausibleValuesAndOverlongFields) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  struct Case {
    void (*mutate)(Measurement*);
    const char* field;
  };
  const Case cases[] = {
      {[](Measurement* m) { m->tokens_per_s_per_gpu = 1e308; }, "tokens_per_s_per_gpu"},
      {[](Measurement* m) { m->step_time_s = 1e300; }, "step_time_s"},
      {[](Measurement* m) { m->watts_per_gpu = 1e9; }, "watts_per_gpu"},
      {[](Measurement* m) { m->recorded_at_unix_ms = int64_t{1} << 62; }, "recorded_at"},
      {[](Measurement* m) { m->source = std::string(kMaxSourceBytes + 1, 's'); }, "source"},
      {[](Measurement* m) { m->labels["k"] = std::string(kMaxLabelValueBytes + 1, 'v'); },
       "labels[k]"},
      {[](Measurement* m) {
         m->labels.emplace(std::string(kMaxLabelKeyBytes + 1, 'k'), std::string(1, 'v'));
       },
       "labels"},
      {[](Measurement* m) {
         for (size_t i = 0; i <= kMaxLabels; ++i)
           m->labels.emplace(absl::StrCat("k", i), std::string(1, 'v'));
       },
       "labels"},
  };
  for (const Case& c : cases) {
    std::vector<Measurement> batch = Samples(0, 3);
    c.mutate(&batch[2]);
    auto r = store->RecordMeasurements(batch);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_TRUE(absl::StrContains(r.status().message(), absl::StrCat("measurements[2].", c.field)))
        << r.status();
    // The message does not echo the long value.
    EXPECT_LT(r.status().message().size(), 300u) << c.field;
  }
  EXPECT_EQ(CountAll(*store), 0);
  // The largest plausible values are stored.
  std::vector<Measurement> batch = Samples(0, 1);
  batch[0].tokens_per_s_per_gpu = kMaxTokensPerSPerGpu;
  batch[0].recorded_at_unix_ms = kMaxRecordedAtUnixMs;
  batch[0].labels["k"] = std::string(kMaxLabelValueBytes, 'v');
  auto ok = store->RecordMeasurements(batch);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(store->GetMeasurement((*ok)[0].id)->recorded_at_unix_ms, kMaxRecordedAtUnixMs);
}

// Medium (issue 27): PostgreSQL cut text at a NUL byte silently (SQLite kept it); both refuse it
// now, naming the field, and store nothing of the batch.
TEST_P(StoreTest, RecordRefusesNulBytesNamingTheField) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto refused = [&](const std::function<void(Measurement*)>& edit) {
    std::vector<Measurement> batch = Samples(0, 2);
    edit(&batch[1]);
    return store->RecordMeasurements(batch).status();
  };
  const std::string nul("a\0b", 3);
  absl::Status s = refused([&](Measurement* m) { m->labels["k"] = nul; });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "measurements[1].labels[k]: contains a NUL byte"))
      << s;
  s = refused([&](Measurement* m) { m->labels[nul] = "v"; });
  EXPECT_TRUE(absl::StrContains(s.message(), "measurements[1].labels: a key contains a NUL")) << s;
  s = refused([&](Measurement* m) { m->source = nul; });
  EXPECT_TRUE(absl::StrContains(s.message(), "measurements[1].source: contains a NUL byte")) << s;
  s = refused([&](Measurement* m) { m->scenario.workload.model.name = nul; });
  EXPECT_TRUE(absl::StrContains(s.message(),
                                "measurements[1].scenario.workload.model.name: contains a NUL"))
      << s;
  EXPECT_EQ(CountAll(*store), 0);
}

TEST_P(StoreTest, AllMeasurementsRefusesMoreThanItsLimit) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordMeasurements(Samples(0, 5)).ok());
  EXPECT_EQ(store->AllMeasurements({}, 5)->size(), 5u);
  auto over = store->AllMeasurements({}, 4);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_TRUE(absl::StrContains(over.status().message(), "filter")) << over.status();
}

// Issue 27, medium: Calibrate's check on other runs read every stored run (8 fitted runs with 1M
// stored took 14 s). The store samples: every k-th matching run in insertion order, at most
// max_runs, and how many match.
TEST_P(StoreTest, SampleMeasurementsIsEvenlySpacedAndBounded) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordMeasurements(Samples(0, 50)).ok());
  auto indexes = [](const std::vector<Measurement>& runs) {
    std::vector<int> out;
    for (const Measurement& m : runs)
      out.push_back(static_cast<int>(m.tokens_per_s_per_gpu) - 1000);
    return out;
  };
  int64_t matching = -1;
  auto ten = store->SampleMeasurements({}, 10, &matching);
  ASSERT_TRUE(ten.ok()) << ten.status();
  EXPECT_EQ(matching, 50);
  EXPECT_EQ(indexes(*ten), (std::vector<int>{0, 5, 10, 15, 20, 25, 30, 35, 40, 45}));
  EXPECT_TRUE((*ten)[1].labels.empty());  // a sample carries no labels
  EXPECT_FALSE((*ten)[1].id.empty());
  auto seven = store->SampleMeasurements({}, 7, &matching);  // every 8th
  ASSERT_TRUE(seven.ok()) << seven.status();
  EXPECT_EQ(indexes(*seven), (std::vector<int>{0, 8, 16, 24, 32, 40, 48}));
  auto all = store->SampleMeasurements({}, 100, nullptr);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 50u);
  MeasurementFilter one;
  one.labels["i"] = "7";
  auto seventh = store->SampleMeasurements(one, 10, &matching);
  ASSERT_TRUE(seventh.ok()) << seventh.status();
  EXPECT_EQ(matching, 1);
  EXPECT_EQ(indexes(*seventh), (std::vector<int>{7}));
  EXPECT_EQ(store->SampleMeasurements({}, 0, &matching).status().code(),
            absl::StatusCode::kInvalidArgument);
}

std::string PgQueryText(const std::string& uri, const std::string& sql) {
  PGconn* c = PQconnectdb(uri.c_str());
  std::string out;
  PGresult* r = PQexec(c, sql.c_str());
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) out = PQgetvalue(r, 0, 0);
  PQclear(r);
  PQfinish(c);
  return out;
}

// Issue 27, medium: work went on after its caller gave up (a Validate over 1M runs used 11 more
// CPU-seconds past its deadline, a Calibrate a core for 70 s): a long read now stops in the
// database when its caller says so (ReadInterrupt). Each read is made long deterministically --
// SQLite: 3000 labelled runs scanned for the last one's label, many progress-handler polls;
// PostgreSQL: the tables it needs locked by another connection, so its statement waits -- and
// the caller says stop from its second poll on, so that the stop lands while the read runs.
// Before, the reads ran to their end (PostgreSQL: the 30 s statement timeout, UNAVAILABLE).
TEST_P(StoreTest, LongReadsStopInTheDatabaseWhenTheirCallerGivesUp) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const bool pg = GetParam() == "postgresql";
  const int runs = pg ? 10 : 3000;
  ASSERT_TRUE(store->RecordMeasurements(Samples(0, runs)).ok());
  MeasurementFilter last;  // the last run only: every run is looked at
  last.labels["i"] = std::to_string(runs - 1);
  std::unique_ptr<testing::PgLockHolder> lock;
  if (pg) {
    lock = std::make_unique<testing::PgLockHolder>(
        Address(), "BEGIN; LOCK TABLE measurement_labels, profiles IN ACCESS EXCLUSIVE MODE");
    ASSERT_EQ(lock->error(), "");
  }
  struct Read {
    const char* what;
    std::function<absl::Status()> run;
  };
  std::vector<Read> reads = {
      {"CountMeasurements", [&] { return store->CountMeasurements(last).status(); }},
      {"ListMeasurements",
       [&] {
         std::string next;
         return store->ListMeasurements(last, 1000, "", &next).status();
       }},
      {"AllMeasurements", [&] { return store->AllMeasurements(last).status(); }},
  };
  reads.push_back({"SampleMeasurements", [&] {
                     int64_t matching = 0;
                     return store->SampleMeasurements(last, 10, &matching).status();
                   }});
  if (pg) {  // (SQLite reads a page of profiles in fewer steps than one poll)
    reads.push_back({"ListProfiles", [&] {
                       std::string next;
                       return store->ListProfiles(0, "", &next).status();
                     }});
  }
  int64_t interrupted = 0;
  for (const Read& read : reads) {
    int polls = 0;
    ReadInterrupt interrupt([&polls] { return ++polls >= 2; });
    const absl::Status s = read.run();
    EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << read.what << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "store read interrupted: the caller gave up"))
        << read.what << ": " << s;
    EXPECT_GE(polls, 2) << read.what;
    EXPECT_EQ(interrupt.interrupted(), 1) << read.what;
    EXPECT_EQ(store->InterruptedReads(), ++interrupted) << read.what;
  }
  if (pg) {
    // Nothing of them is left on the server: no statement of the store's waits for the lock. (The
    // cancel reaches the server from a thread of its own; under load the postmaster may take a
    // while to fork its handler. Up to 20 s, below the 30 s statement timeout that ended such a
    // statement before: a bound on behaviour, not on speed.)
    bool none_waiting = false;
    for (int i = 0; i < 400 && !none_waiting; ++i) {
      none_waiting =
          testing::PgQueryInt(Address(),
                              "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = "
                              "'scalecast-server' AND wait_event_type = 'Lock'") == 0;
      if (!none_waiting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(none_waiting) << "a statement of the store's still waits for the lock: "
                              << PgQueryText(Address(),
                                             "SELECT string_agg(query || ' [' || state || ']', "
                                             "' | ') FROM pg_stat_activity WHERE "
                                             "application_name = 'scalecast-server'");
    lock->Release();
  }
  // A write is never interrupted, whatever the scope says; and the store serves reads as before.
  {
    ReadInterrupt always([] { return true; });
    EXPECT_TRUE(store->RecordMeasurements({Sample(runs)}).ok());
  }
  auto count = store->CountMeasurements(last);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 1);
  std::string next;
  auto page = store->ListMeasurements(last, 10, "", &next);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->size(), 1u);
  EXPECT_EQ(store->InterruptedReads(), interrupted);
}

// The cache holds at most its byte bound, dropping the least recently used entries first; an
// entry larger than the bound is not kept at all.
TEST_P(StoreTest, SweepCacheStaysUnderItsByteBoundEvictingLeastRecentlyUsed) {
  StoreOptions options;
  options.path = Address();
  options.sweep_cache_max_bytes = 10'000;
  auto opened = Store::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  const std::string value(1'000 - 2, 'v');  // 1000 bytes with its 2-byte key
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(store.PutCachedSweep(absl::StrCat("k", i), "v1", "default", value).ok());
  }
  EXPECT_EQ(store.SweepCacheBytes().value_or(-1), 10'000);
  // Use k0: k1 is now the least recently used.
  EXPECT_TRUE(store.GetCachedSweep("k0", "v1", "default")->has_value());
  ASSERT_TRUE(store.PutCachedSweep("ka", "v1", "default", value).ok());
  EXPECT_LE(store.SweepCacheBytes().value_or(-1), 10'000);
  EXPECT_TRUE(store.GetCachedSweep("k0", "v1", "default")->has_value());
  EXPECT_FALSE(store.GetCachedSweep("k1", "v1", "default")->has_value());
  EXPECT_TRUE(store.GetCachedSweep("k2", "v1", "default")->has_value());
  EXPECT_TRUE(store.GetCachedSweep("ka", "v1", "default")->has_value());
  // Many puts later the bound still holds.
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(
        store.PutCachedSweep(absl::StrCat("x", i), "v1", "default", std::string(100 + 37 * i, 'x'))
            .ok());
    ASSERT_LE(store.SweepCacheBytes().value_or(-1), 10'000) << i;
  }
  // Too large for the whole cache: not kept, nothing else evicted for it.
  const int64_t before = store.SweepCacheBytes().value_or(-1);
  ASSERT_TRUE(store.PutCachedSweep("huge", "v1", "default", std::string(20'000, 'h')).ok());
  EXPECT_FALSE(store.GetCachedSweep("huge", "v1", "default")->has_value());
  EXPECT_EQ(store.SweepCacheBytes().value_or(-1), before);
}

// --- Operator errors: SQLite ------------------------------------------------------------------

TEST(SqliteStore, OpenErrorsNameTheFile) {
  testing::ScratchDir dir;
  const std::string blocker = dir.path() + "/a-file";
  { std::ofstream(blocker) << "x"; }
  StoreOptions options;
  options.path = blocker + "/sub/scalecast.db";  // its parent is a file
  auto store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::StrContains(store.status().message(), options.path)) << store.status();
}

TEST(SqliteStore, EmptyOrTruncatedFileIsDataLossNotANewStore) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/t.db";
  {
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->RecordMeasurements(Samples(0, 200)).ok());
  }
  RawQuery(path, "PRAGMA wal_checkpoint(TRUNCATE)");
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 8192u);
  std::filesystem::resize_file(path, size - 4096);
  StoreOptions options;
  options.path = path;
  auto store = Store::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), path)) << store.status();
  std::filesystem::resize_file(path, 0);
  std::filesystem::remove(path + "-wal");
  store = Store::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "truncated")) << store.status();
  EXPECT_EQ(std::filesystem::file_size(path), 0u);  // left as it was
}

// A database file this process may not write refuses to open (rather than serving and failing
// every write). Run in a child as `nobody` when the tests run as root, since root writes any file.
TEST(SqliteStore, UnwritableDatabaseRefusesToOpen) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/ro.db";
  {
    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
  }
  RawQuery(path, "PRAGMA wal_checkpoint(TRUNCATE)");
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (getuid() == 0) {
      const passwd* pw = getpwnam("nobody");
      if (pw == nullptr || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(10);
    }
    StoreOptions options;
    options.path = path;
    auto store = Store::Open(options);
    if (store.ok()) _exit(1);
    if (store.status().code() != absl::StatusCode::kFailedPrecondition) _exit(2);
    if (!absl::StrContains(store.status().message(), path)) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: opened; 2: wrong code; 3: path not named";
}

TEST(SqliteStore, FullDatabaseIsResourceExhaustedAndKeepsWhatWasThere) {
  testing::ScratchDir dir;
  StoreOptions options;
  options.path = dir.path() + "/full.db";
  options.max_db_bytes = 256 << 10;
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status last;
  int64_t stored = 0;
  for (int i = 0; i < 1000 && last.ok(); ++i) {
    auto r = (*store)->RecordMeasurements(Samples(50 * i, 50));  // distinct: no duplicates
    last = r.status();
    if (r.ok()) stored += 50;
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_GT(stored, 0);
  EXPECT_EQ(CountAll(**store), stored);  // the failed batch left nothing
}

// A database written by the previous release (schema version 1) is brought up to date on open,
// keeping its rows and sizing its cached sweeps for the byte bound.
TEST(SqliteStore, MigratesAVersion1Database) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/v1.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string v1(Migrations()[0].sql);
    ASSERT_EQ(sqlite3_exec(db, v1.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "INSERT INTO sweep_cache (request_key, model_version, profile, value, "
                           "hit_count, created_at_unix_ms) VALUES (x'0102', 'v', 'default', "
                           "'12345', 3, 1); PRAGMA user_version = 1;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(LatestSchemaVersion()));
  EXPECT_EQ(store->SweepCacheBytes().value_or(-1), 7);
  EXPECT_EQ(store->CachedSweepHits("\x01\x02", "v", "default").value_or(-1), 3);
  EXPECT_EQ(store->GetCachedSweep("\x01\x02", "v", "default")->value_or(""), "12345");
  EXPECT_TRUE(store->RecordMeasurements(Samples(0, 2)).ok());
}

// --- Operator errors: PostgreSQL --------------------------------------------------------------

// A session of the test's own that holds an advisory lock, as another replica's transaction
// would (RecordMeasurements holds one for a whole import).
class AdvisoryLockHolder {
 public:
  AdvisoryLockHolder(const std::string& uri, int64_t key) : conn_(PQconnectdb(uri.c_str())) {
    PGresult* r = PQexec(conn_, absl::StrCat("SELECT pg_advisory_lock(", key, ")").c_str());
    ok_ = PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
  }
  ~AdvisoryLockHolder() { PQfinish(conn_); }
  bool ok() const { return ok_; }

 private:
  PGconn* conn_;
  bool ok_ = false;
};

// Issue 27, high 2: the record lock and the sweep-cache lock were one advisory lock, so a bulk
// import on one replica made every sweep-cache write on the others wait (up to the statement
// timeout). They are distinct now, and a cache write never waits for the cache lock either.
TEST(PostgresStore, SweepCacheWritesDoNotWaitForOtherLocks) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = testing::PgCluster::Get().NewDatabase();
  auto store = OpenOrDie(uri);
  ASSERT_NE(store, nullptr);
  {
    AdvisoryLockHolder record(uri, 0x5ca1eca57002);  // RecordMeasurements' lock
    ASSERT_TRUE(record.ok());
    const absl::Status put = store->PutCachedSweep("k", "v1", "default", "value");
    EXPECT_TRUE(put.ok()) << put;
    auto got = store->GetCachedSweep("k", "v1", "default");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->value_or(""), "value");  // kept: that lock is not the cache's
  }
  {
    AdvisoryLockHolder cache(uri, 0x5ca1eca57004);  // another replica evicting
    ASSERT_TRUE(cache.ok());
    const absl::Status put = store->PutCachedSweep("k2", "v1", "default", "value");
    EXPECT_TRUE(put.ok()) << put;  // skipped, not waited for
    auto got = store->GetCachedSweep("k2", "v1", "default");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->has_value());
  }
}

// Medium: a store call is bounded in time by the store itself; Ping answers while the pool is
// taken, and says UNAVAILABLE (not a hang) when the database refuses connections.
TEST(PostgresStore, PingAnswersAndSaysUnavailableWhenTheDatabaseIsGone) {
  SCALECAST_NEED_POSTGRES();
  auto& pg = testing::PgCluster::Get();
  const std::string uri = pg.NewDatabase();
  const std::string db = uri.substr(uri.rfind('/') + 1);
  auto store = OpenOrDie(uri);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Ping(2000).ok());
  ASSERT_EQ(testing::PgCluster::Exec(pg.Uri("postgres"),
                                     "ALTER DATABASE " + db + " WITH ALLOW_CONNECTIONS false"),
            "");
  ASSERT_EQ(
      testing::PgCluster::Exec(
          pg.Uri("postgres"),
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'"),
      "");
  const absl::Status gone = store->Ping(2000);
  EXPECT_EQ(gone.code(), absl::StatusCode::kUnavailable) << gone;
  ASSERT_EQ(testing::PgCluster::Exec(pg.Uri("postgres"),
                                     "ALTER DATABASE " + db + " WITH ALLOW_CONNECTIONS true"),
            "");
  EXPECT_TRUE(store->Ping(2000).ok());
}

TEST(PostgresStore, ErrorsMapToStatusCodes) {
  using store_internal::PostgresStatus;
  EXPECT_EQ(PostgresStatus("53100", "could not extend file: No space left on device").code(),
            absl::StatusCode::kResourceExhausted);  // disk full
  EXPECT_EQ(PostgresStatus("53200", "out of memory").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PostgresStatus("53300", "too many connections").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(PostgresStatus("08006", "connection failure").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(PostgresStatus("57P01", "admin shutdown").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(PostgresStatus("57014", "statement timeout").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(PostgresStatus("", "server closed the connection").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(PostgresStatus("40001", "serialization failure").code(), absl::StatusCode::kAborted);
  EXPECT_EQ(PostgresStatus("25006", "read-only transaction").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PostgresStatus("23505", "duplicate key").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(PostgresStatus("22021", "invalid byte sequence").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PostgresStatus("XX000", "internal").code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(PostgresStatus("53100", "No space").message(), "No space"));
}

TEST(PostgresStore, OpenErrorsNameTheUriButNeverThePassword) {
  StoreOptions options;
  // Nothing listens on port 1.
  options.path = "postgresql://alice:s3cret@127.0.0.1:1/scalecast";
  options.connect_timeout_s = 2;
  auto store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "127.0.0.1:1/scalecast"))
      << store.status();
  EXPECT_FALSE(absl::StrContains(store.status().message(), "s3cret")) << store.status();
}

TEST(PostgresStore, ReadOnlyDatabaseRefusesToOpen) {
  SCALECAST_NEED_POSTGRES();
  auto& pg = testing::PgCluster::Get();
  const std::string uri = pg.NewDatabase();
  { ASSERT_NE(OpenOrDie(uri), nullptr); }
  const std::string db = uri.substr(uri.rfind('/') + 1);
  ASSERT_EQ(
      testing::PgCluster::Exec(pg.Uri("postgres"),
                               "ALTER DATABASE " + db + " SET default_transaction_read_only = on"),
      "");
  StoreOptions options;
  options.path = uri;
  auto store = Store::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "cannot write")) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), db)) << store.status();
}

TEST(PostgresStore, RefusesDatabaseFromANewerVersion) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = testing::PgCluster::Get().NewDatabase();
  { ASSERT_NE(OpenOrDie(uri), nullptr); }
  ASSERT_EQ(testing::PgCluster::Exec(uri, "UPDATE scalecast_schema SET version = " +
                                              std::to_string(LatestSchemaVersion() + 1)),
            "");
  StoreOptions options;
  options.path = uri;
  auto store = Store::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "newer")) << store.status();
}

// Replicas starting together migrate once (the advisory lock), and all of them open.
TEST(PostgresStore, ConcurrentFirstOpensMigrateOnce) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = testing::PgCluster::Get().NewDatabase();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      StoreOptions options;
      options.path = uri;
      auto store = Store::Open(options);
      if (!store.ok() || !(*store)->RecordMeasurements(Samples(2 * i, 2)).ok()) ++failures;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(CountAll(*OpenOrDie(uri)), 8);
}

}  // namespace
}  // namespace scalecast
