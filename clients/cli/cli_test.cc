// The scalecast CLI run in-process (RunCli) against a real server on port 0 with an in-memory
// store, plus unit tests of flag parsing and the sweep's diminishing-returns rule.
//
// `predict --json` prints the PredictResponse; the test parses it back and compares it, field by
// field, with the server's own answer to the same scenario over a gRPC stub.
#include "clients/cli/cli.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "clients/cli/flags.h"
#include "clients/cli/format.h"
#include "clients/cli/scenario_fields.h"
#include "clients/cli/table.h"
#include "gtest/gtest.h"
#include "model/measurements.h"
#include "model/types.h"
#include "proto/scalecast_grpc.h"
#include "server/server.h"
#include "tests/scratch_dir.h"

namespace scalecast::cli {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// Column `name` of a CSV line, given the header (no quoted commas in the checked columns).
std::string CsvCellNamed(const std::string& header, const std::string& row,
                         const std::string& name) {
  // The project's CSV reader: a quoted cell may hold commas (the band's basis does).
  absl::StatusOr<std::vector<std::vector<std::string>>> table =
      ParseCsv(absl::StrCat(header, "\n", row, "\n"));
  if (!table.ok() || table->size() != 2) {
    ADD_FAILURE() << "not a CSV header and row: " << table.status();
    return "";
  }
  const std::vector<std::string>&h = (*table)[0], &r = (*table)[1];
  for (size_t i = 0; i < h.size() && i < r.size(); ++i) {
    if (h[i] == name) return r[i];
  }
  ADD_FAILURE() << "no column " << name;
  return "";
}

// Start tags and end tags balance (enough XML well-formedness for the plot).
bool TagsBalance(const std::string& xml, std::string* why) {
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) {
      *why = "unterminated tag";
      return false;
    }
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag.back() == '/') continue;
    std::string name = tag.substr(tag[0] == '/' ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n"));
    if (tag[0] == '/') {
      if (open.empty() || open.back() != name) {
        *why = "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
        return false;
      }
      open.pop_back();
    } else {
      open.push_back(name);
    }
  }
  if (!open.empty()) *why = "<" + open.back() + "> is never closed";
  return open.empty();
}

// The <g id="..."> element's text, up to its matching </g>.
std::string Element(const std::string& svg, const std::string& id) {
  const size_t start = svg.find("<g id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  int depth = 0;
  size_t i = start;
  while ((i = svg.find('<', i)) != std::string::npos) {
    if (svg.compare(i, 3, "<g ") == 0 || svg.compare(i, 3, "<g>") == 0) ++depth;
    if (svg.compare(i, 4, "</g>") == 0 && --depth == 0) return svg.substr(start, i + 4 - start);
    ++i;
  }
  return "";
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t i = text.find(what); i != std::string::npos; i = text.find(what, i + 1)) ++n;
  return n;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(""); }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  void StartServer(const std::string& token) {
    if (server_) server_->Shutdown();
    ServerOptions o;
    o.listen_address = "127.0.0.1:0";
    o.db_path = ":memory:";
    o.metrics_address = "";
    o.worker_threads = 2;
    o.grace_period_ms = 200;
    if (!token.empty()) {
      o.auth_token_file = TempPath("token");
      std::ofstream(o.auth_token_file) << token << "\n";
    }
    auto s = Server::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    stub_ = v1::Scalecast::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  // Runs the CLI against the test server; stdout and stderr land in out_ and err_.
  int Run(std::vector<std::string> args, bool tty = false) {
    args.push_back("--server");
    args.push_back(server_->address());
    return RunRaw(args, tty);
  }
  int RunRaw(const std::vector<std::string>& args, bool tty = false) {
    std::ostringstream out, err;
    Env env;
    env.getenv = [this](const char* name) -> const char* {
      auto it = environment_.find(name);
      return it == environment_.end() ? nullptr : it->second.c_str();
    };
    env.stderr_is_tty = tty;
    const int rc = RunCli(args, out, err, env);
    out_ = out.str();
    err_ = err.str();
    return rc;
  }

  int64_t StoredCount() {
    grpc::ClientContext ctx;
    v1::ListMeasurementsRequest req;
    req.set_page_size(1);
    v1::ListMeasurementsResponse resp;
    EXPECT_TRUE(stub_->ListMeasurements(&ctx, req, &resp).ok());
    return resp.total_count();
  }

  // The fixed scenario of the predict tests: every layout field given.
  static std::vector<std::string> FixedScenarioFlags() {
    return {"--model",
            "llama2-70b",
            "--accelerator",
            "h100-sxm-80gb",
            "--gpus",
            "2048",
            "--gpus-per-node",
            "8",
            "--seq",
            "4096",
            "--global-batch",
            "1024",
            "--precision",
            "bf16",
            "--tp",
            "2",
            "--pp",
            "2",
            "--vpp",
            "1",
            "--cp",
            "1",
            "--sharding",
            "zero1",
            "--micro-batch",
            "1",
            "--recompute",
            "selective",
            "--sequence-parallel",
            "--framework",
            "megatron",
            "--label",
            "fixed"};
  }
  static v1::Scenario FixedScenario() {
    v1::Scenario s;
    s.mutable_workload()->mutable_model()->set_name("llama2-70b");
    s.mutable_workload()->set_seq_len(4096);
    s.mutable_workload()->set_global_batch(1024);
    s.mutable_workload()->set_precision(v1::PRECISION_BF16);
    s.mutable_cluster()->set_accelerator("h100-sxm-80gb");
    s.mutable_cluster()->set_num_gpus(2048);
    s.mutable_cluster()->set_gpus_per_node(8);
    v1::Parallelism* p = s.mutable_parallelism();
    p->set_tp(2);
    p->set_pp(2);
    p->set_vpp(1);
    p->set_cp(1);
    p->set_sharding(v1::SHARDING_ZERO1);
    p->set_micro_batch(1);
    p->set_recompute(v1::RECOMPUTE_SELECTIVE);
    p->set_sequence_parallel(true);
    s.set_framework("megatron");
    s.set_label("fixed");
    return s;
  }

  // A file of the test's own, removed with the fixture.
  std::string TempPath(const std::string& name) const { return scratch_.File(name); }

  scalecast::testing::ScratchDir scratch_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<v1::Scalecast::Stub> stub_;
  std::map<std::string, std::string> environment_;
  std::string out_, err_;
};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// `scalecast plan` for Llama 2 7B on 1e12 tokens of 4,096-token sequences, then `more`.
std::vector<std::string> SmallPlan(const std::vector<std::string>& more) {
  return Concat({"plan", "--model", "llama2-7b", "--seq", "4096", "--tokens", "1e12"}, more);
}

TEST_F(CliTest, CliPredictTableJsonAndCsvAgreeWithTheServer) {
  // The server's own answer, straight through a stub.
  v1::PredictRequest req;
  *req.mutable_scenario() = FixedScenario();
  v1::PredictResponse direct;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub_->Predict(&ctx, req, &direct).ok());

  ASSERT_EQ(Run(Concat({"predict"}, FixedScenarioFlags())), 0) << err_;
  for (const char* want : {"Label",
                           "fixed",
                           "Layout    tp2 pp2 dp512 zero1 mb1 rc=sel sp\n",
                           "step time",
                           "tokens/s per GPU",
                           "MFU / HFU",
                           "model TFLOP/s per GPU",
                           "compute",
                           "pipeline bubble",
                           "optimizer",
                           "Communication",
                           "bytes/GPU",
                           "ranks",
                           "Memory per GPU",
                           "GiB",
                           "activations",
                           "capacity",
                           "fits:",
                           "Power",
                           " W",
                           " kW",
                           "J/token"}) {
    EXPECT_TRUE(absl::StrContains(out_, want)) << want << "\n" << out_;
  }

  ASSERT_EQ(Run(Concat({"predict", "--json"}, FixedScenarioFlags())), 0) << err_;
  v1::PredictResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &parsed).ok()) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\"tokensPerSPerGpu\"")) << "lowerCamelCase names";
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(direct, parsed)) << diff;
  EXPECT_EQ(parsed.prediction().label(), "fixed");
  EXPECT_EQ(parsed.prediction().layout().tp(), 2);
  EXPECT_EQ(parsed.prediction().layout().dp(), 512);
  EXPECT_EQ(parsed.prediction().step_time_s(), direct.prediction().step_time_s());
  EXPECT_EQ(parsed.prediction().tokens_per_s(), direct.prediction().tokens_per_s());
  EXPECT_EQ(parsed.prediction().memory().total_bytes(), direct.prediction().memory().total_bytes());
  EXPECT_EQ(parsed.prediction().time().comm_size(), direct.prediction().time().comm_size());
  EXPECT_EQ(parsed.model_version(), direct.model_version());

  ASSERT_EQ(Run(Concat({"predict", "--csv"}, FixedScenarioFlags())), 0) << err_;
  const std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 2u) << out_;
  double tps = 0;
  ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[1], "tokens_per_s"), &tps));
  EXPECT_NEAR(tps, direct.prediction().tokens_per_s(), 0.5) << "whole tokens/s";
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "tp"), "2");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "sharding"), "zero1");
}

TEST_F(CliTest, CliPredictRequestFileWithFlagOverrides) {
  const std::string path = TempPath("request.json");
  std::ofstream(path) << R"({"scenario": {"workload": {"model": {"name": "llama2-70b"},
      "seqLen": 4096, "globalBatch": 1024}, "cluster": {"accelerator": "h100-sxm-80gb",
      "numGpus": 512}, "parallelism": {"tp": 8, "pp": 1}}})";
  ASSERT_EQ(Run({"predict", "--request", path, "--tp", "4", "--json"}), 0) << err_;
  v1::PredictResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &parsed).ok()) << out_;
  EXPECT_EQ(parsed.prediction().layout().tp(), 4);  // the flag wins
  EXPECT_EQ(parsed.prediction().layout().pp(), 1);  // the file's
  EXPECT_EQ(parsed.prediction().layout().dp() * 4, 512);

  // A bare Scenario is accepted too; a malformed file is a usage error.
  std::ofstream(path) << R"({"workload": {"model": {"name": "llama2-7b"}, "seqLen": 2048,
      "globalBatch": 256}, "cluster": {"accelerator": "a100-sxm-80gb", "numGpus": 64}})";
  EXPECT_EQ(Run({"predict", "--request", path}), 0) << err_;
  std::ofstream(path) << R"({"workload": {"bogus": 1}})";
  EXPECT_EQ(Run({"predict", "--request", path}), 2);
  EXPECT_TRUE(absl::StrContains(err_, path)) << err_;
}

TEST_F(CliTest, CliCompareGpuListGivesThreeRowsAgainstTheFirst) {
  const std::vector<std::string> base = {
      "compare", "--model",        "llama2-70b", "--accelerator", "h100-sxm-80gb", "--seq",
      "4096",    "--global-batch", "1024",       "--gpus",        "128,512,2048"};
  ASSERT_EQ(Run(Concat(base, {"--csv"})), 0) << err_;
  std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 4u) << out_;
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "num_gpus"), "128");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[2], "num_gpus"), "512");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[3], "num_gpus"), "2048");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "throughput_ratio"), "1");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "scaling_efficiency"), "") << "#1 against itself";
  EXPECT_NE(CsvCellNamed(lines[0], lines[2], "scaling_efficiency"), "");

  ASSERT_EQ(Run(Concat(base, {"--json"})), 0) << err_;
  v1::CompareResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &parsed).ok()) << out_;
  ASSERT_EQ(parsed.predictions_size(), 3);
  ASSERT_EQ(parsed.deltas_size(), 3);
  EXPECT_DOUBLE_EQ(parsed.deltas(0).throughput_ratio(), 1.0);
  EXPECT_GT(parsed.deltas(2).throughput_ratio(), 1.0);

  ASSERT_EQ(Run(base), 0) << err_;
  for (const char* want : {"Compared: llama2-70b, h100-sxm-80gb", "128 GPUs", "512 GPUs",
                           "2048 GPUs", "thru x", "scaling eff", "--wide adds: "}) {
    EXPECT_TRUE(absl::StrContains(out_, want)) << want << "\n" << out_;
  }
  for (const std::string& line : Lines(out_)) EXPECT_LE(line.size(), 120u) << line;
  ASSERT_EQ(Run(Concat(base, {"--wide"})), 0) << err_;
  for (const char* want : {"J/token x", "MFU delta", "per-GPU x", "W/GPU x"}) {
    EXPECT_TRUE(absl::StrContains(out_, want)) << want << "\n" << out_;
  }
}

TEST_F(CliTest, CliCompareShowsScalingEfficiencyOnlyAcrossGpuCounts) {
  const std::vector<std::string> args = {
      "compare", "--model", "llama2-70b",     "--accelerator", "a100-sxm-80gb,h100-sxm-80gb",
      "--seq",   "4096",    "--global-batch", "1024",          "--gpus",
      "512,1024"};
  ASSERT_EQ(Run(args), 0) << err_;
  const std::vector<std::string> lines = Lines(out_);
  // Header line, blank-free table: "#", "scenario", ... with rows 1..4 after the rule.
  int rows = 0;
  for (const std::string& line : lines) {
    if (!absl::StartsWith(line, "1 ") && !absl::StartsWith(line, "2 ") &&
        !absl::StartsWith(line, "3 ") && !absl::StartsWith(line, "4 ")) {
      continue;
    }
    ++rows;
    const bool same_count = absl::StrContains(line, " 512 GPUs ");
    // Scaling efficiency is the 8th column; a same-count row shows "-" there, others a percent.
    std::vector<std::string> cells = absl::StrSplit(line, "  ", absl::SkipWhitespace());
    ASSERT_GE(cells.size(), 8u) << line;
    EXPECT_EQ(absl::StripAsciiWhitespace(cells[7]) == "-", same_count) << line;
  }
  EXPECT_EQ(rows, 4) << out_;
  ASSERT_EQ(Run(Concat(args, {"--csv"})), 0) << err_;
  const std::vector<std::string> csv = Lines(out_);
  ASSERT_EQ(csv.size(), 5u);
  EXPECT_EQ(CsvCellNamed(csv[0], csv[1], "scaling_efficiency"), "") << "same GPU count as #1";
  EXPECT_EQ(CsvCellNamed(csv[0], csv[3], "scaling_efficiency"), "") << "a100 512 vs 512";
  EXPECT_NE(CsvCellNamed(csv[0], csv[2], "scaling_efficiency"), "");
}

TEST_F(CliTest, CliEchoesTheResolvedScenarioInTableJsonAndCsv) {
  // No precision, node size, network or framework given: the server's defaults come back.
  const std::vector<std::string> args = {
      "predict", "--model", "llama2-70b", "--accelerator",  "h100-sxm-80gb", "--gpus",
      "512",     "--seq",   "4096",       "--global-batch", "1024"};
  ASSERT_EQ(Run(args), 0) << err_;
  for (const char* want :
       {"llama2-70b (80 layers, hidden 8192", "bf16", "8 GPUs/node", "Gbit/s per GPU between nodes",
        "framework generic", "calibration default"}) {
    EXPECT_TRUE(absl::StrContains(out_, want)) << want << "\n" << out_;
  }
  // The server's 80 % band on tokens/s per GPU, with its basis in words.
  EXPECT_TRUE(absl::StrContains(out_, "80% band  ")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "band basis  ")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "default precision")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "the usual node size")) << out_;

  ASSERT_EQ(Run(Concat(args, {"--json"})), 0) << err_;
  v1::PredictResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &parsed).ok()) << out_;
  EXPECT_EQ(parsed.scenario().workload().model().layers(), 80);
  EXPECT_EQ(parsed.scenario().workload().precision(), v1::PRECISION_BF16);
  EXPECT_EQ(parsed.scenario().cluster().gpus_per_node(), 8);
  EXPECT_GT(parsed.scenario().cluster().inter_node_gbps_per_gpu(), 0);
  EXPECT_EQ(parsed.scenario().cluster().num_gpus(), 512);

  ASSERT_EQ(Run(Concat(args, {"--csv"})), 0) << err_;
  const std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 2u) << out_;
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "precision"), "bf16");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "framework"), "generic");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "calibration"), "default");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "gpus_per_node"), "8");
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "band_level"), "0.8");
  double low = 0, mid = 0, high = 0;
  ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[1], "tokens_per_s_per_gpu_low"), &low));
  ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[1], "tokens_per_s_per_gpu"), &mid));
  ASSERT_TRUE(
      absl::SimpleAtod(CsvCellNamed(lines[0], lines[1], "tokens_per_s_per_gpu_high"), &high));
  EXPECT_LT(low, mid);
  EXPECT_LT(mid, high);
  // Rounded to what the model carries: fractions to 4 significant digits (whole numbers, such
  // as tokens/s and bytes, have no fraction).
  int fractions = 0;
  for (absl::string_view cell : absl::StrSplit(lines[1], ',')) {
    double v;
    if (!absl::SimpleAtod(cell, &v) || !absl::StrContains(cell, '.')) continue;
    ++fractions;
    std::string digits;
    for (char c : cell) {
      if (absl::ascii_isdigit(static_cast<unsigned char>(c)) && !(digits.empty() && c == '0')) {
        digits += c;
      }
    }
    EXPECT_LE(digits.size(), 4u) << cell;
  }
  EXPECT_GT(fractions, 5);
}

TEST_F(CliTest, CliModelsListsTheMoePresetsWithTheirSize) {
  ASSERT_EQ(Run({"models"}), 0) << err_;
  for (const char* id : {"deepseek-v3", "kimi-k2", "qwen3-30b-a3b", "qwen3-235b-a22b",
                         "gpt-oss-20b", "gpt-oss-120b", "mixtral-8x7b", "mixtral-8x22b",
                         "llama4-scout", "llama4-maverick", "grok-1", "nemotron-3-nano-30b-a3b"}) {
    EXPECT_TRUE(absl::StrContains(out_, id)) << id;
  }
  for (const char* header : {"params", "active", "experts", "expert ffn"}) {
    EXPECT_TRUE(absl::StrContains(out_, header)) << header;
  }
  EXPECT_TRUE(absl::StrContains(out_, "256/8+1")) << out_;  // DeepSeek-V3: routed/top-k+shared
  for (absl::string_view line : absl::StrSplit(out_, '\n')) {
    EXPECT_LE(line.size(), 120u) << line;
  }
  ASSERT_EQ(Run({"models", "--csv"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "num_experts,experts_per_token,expert_ffn_hidden")) << out_;
  EXPECT_TRUE(absl::StrContains(
      out_, "\ndeepseek-v3,61,7168,128,128,18432,gated,129280,0,256,8,2048,1,0,3,"))
      << out_;
}

TEST_F(CliTest, CliMoeFieldErrorFromTheServerNamesThePath) {
  const std::vector<std::string> args = {"predict",
                                         "--model",
                                         "tiny-moe",
                                         "--layers",
                                         "4",
                                         "--hidden",
                                         "1024",
                                         "--heads",
                                         "8",
                                         "--vocab",
                                         "1000",
                                         "--experts",
                                         "8",
                                         "--experts-per-token",
                                         "9",
                                         "--expert-ffn",
                                         "512",
                                         "--accelerator",
                                         "h100-sxm-80gb",
                                         "--gpus",
                                         "8",
                                         "--seq",
                                         "4096",
                                         "--global-batch",
                                         "64"};
  EXPECT_EQ(Run(args), 3);  // the server's INVALID_ARGUMENT
  EXPECT_TRUE(absl::StrContains(
      err_, "scenario.workload.model.moe.experts_per_token: 9 is more than num_experts 8"))
      << err_;
}

TEST_F(CliTest, CliInfeasibleScenarioNamesTheNearestThatWork) {
  // 7 sequences split over no layout of 500 GPUs, and the nearest batch that does (25) is not
  // near it: refused with the nearest that work.
  ASSERT_EQ(Run({"predict", "--model", "llama2-70b", "--accelerator", "h100-sxm-80gb", "--gpus",
                 "500", "--seq", "4096", "--global-batch", "7"}),
            3);
  EXPECT_TRUE(absl::StrContains(err_, "\nNearest that work: ")) << err_;
  EXPECT_TRUE(absl::StrContains(err_, " GPUs (global batch 7)")) << err_;
  EXPECT_TRUE(absl::StrContains(err_, "(500 GPUs)")) << err_;
  // In a comparison, the scenario that has no layout gets them too.
  ASSERT_EQ(Run({"compare", "--model", "llama2-70b", "--accelerator", "h100-sxm-80gb", "--gpus",
                 "512,500", "--seq", "4096", "--global-batch", "7"}),
            3);
  EXPECT_TRUE(absl::StrContains(err_, "scenarios[1]")) << err_;
  EXPECT_TRUE(absl::StrContains(err_, "\nNearest that work: ")) << err_;
}

// A batch one step from one that splits is answered at it, with a warning: a fixed layout whose
// data-parallel degree (12) does not divide 1,024, and 1,024 on 500 GPUs (in a comparison too).
TEST_F(CliTest, CliBatchThatDoesNotSplitIsAnsweredAtTheNearestThatDoes) {
  ASSERT_EQ(
      Run({"predict", "--model", "llama2-7b", "--accelerator", "h100-sxm-80gb", "--gpus", "96",
           "--seq", "4096", "--global-batch", "1024", "--tp", "2", "--pp", "4", "--cp", "1"}),
      0)
      << err_;
  EXPECT_TRUE(absl::StrContains(out_, "global batch 1020 sequences")) << out_;
  EXPECT_TRUE(absl::StrContains(
      out_,
      "scenario.workload.global_batch: 1024 sequences split evenly over no layout of 96 "
      "GPUs here; predicted for 1020, the nearest global batch that does (1032 also "
      "does)"))
      << out_;
  ASSERT_EQ(Run({"compare", "--model", "llama2-70b", "--accelerator", "h100-sxm-80gb", "--gpus",
                 "512,500", "--seq", "4096", "--global-batch", "1024"}),
            0)
      << err_;
  EXPECT_TRUE(absl::StrContains(out_, "#2: scenarios[1].workload.global_batch: 1024 sequences"))
      << out_;
}

// A sweep says once, under its table, what every count's best layout warns about the request:
// here the shared name "H100" taken as h100-sxm-80gb.
TEST_F(CliTest, CliSweepSaysOnceWhatEveryCountWarns) {
  ASSERT_EQ(Run({"sweep", "--model", "llama2-7b", "--accelerator", "H100", "--gpus", "8,16",
                 "--seq", "4096", "--global-batch", "256"}),
            0)
      << err_;
  EXPECT_TRUE(absl::StrContains(out_, "llama2-7b on h100-sxm-80gb")) << out_;
  const std::string note =
      "  - base.cluster.accelerator: accelerator 'H100' is taken as h100-sxm-80gb";
  EXPECT_TRUE(absl::StrContains(out_, absl::StrCat("\nWarnings (every GPU count)\n", note)))
      << out_;
  EXPECT_EQ(out_.find(note), out_.rfind(note)) << "said once";
}

TEST_F(CliTest, CliChecksRequiredFlagsBeforeCalling) {
  const std::vector<std::string> full = {
      "--model", "llama2-70b", "--accelerator", "h100-sxm-80gb",  "--gpus",
      "512",     "--seq",      "4096",          "--global-batch", "1024"};
  // Each required flag left out in turn.
  for (size_t i = 0; i < full.size(); i += 2) {
    std::vector<std::string> args = {"predict"};
    for (size_t j = 0; j < full.size(); j += 2) {
      if (j == i) continue;
      args.push_back(full[j]);
      args.push_back(full[j + 1]);
    }
    EXPECT_EQ(Run(args), 2) << full[i];
    EXPECT_TRUE(absl::StrContains(err_, "error: " + full[i] + " is required\n")) << err_;
    EXPECT_TRUE(absl::StrContains(err_, "usage: scalecast predict --model NAME")) << err_;
    EXPECT_TRUE(out_.empty());
  }
  EXPECT_EQ(Run({"predict", "--model", "llama2-70b"}), 2);
  EXPECT_TRUE(
      absl::StrContains(err_, "--accelerator, --gpus, --seq and --global-batch are required"))
      << err_;
  EXPECT_EQ(Run({"compare", "--model", "llama2-70b", "--gpus", "8,16"}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "usage: scalecast compare")) << err_;
  EXPECT_EQ(Run({"sweep", "--model", "llama2-70b", "--accelerator", "h100-sxm-80gb", "--seq",
                 "4096", "--global-batch", "1024"}),
            2);
  EXPECT_TRUE(absl::StrContains(err_, "--gpus is required")) << err_;
  // Ranges are checked here too, before any call.
  EXPECT_EQ(Run(Concat(Concat({"predict"}, full), {"--seq", "0"})), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--seq: 0 is out of range")) << err_;
  // A flag missing its value does not swallow the next flag.
  EXPECT_EQ(Run({"predict", "--gpus", "--seq", "4096"}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--gpus needs a value")) << err_;
}

TEST_F(CliTest, CliSweepWritesAPlotWithBothPanelsAndAPointPerGpuCount) {
  const std::string path = TempPath("plot.svg");
  ASSERT_EQ(Run({"sweep", "--model", "llama2-7b", "--accelerator", "h100-sxm-80gb", "--seq", "4096",
                 "--global-batch", "512", "--gpus", "64,128,256,512", "--plot", path}),
            0)
      << err_;
  EXPECT_TRUE(err_.empty()) << "no progress bar when stderr is not a terminal: " << err_;
  for (const char* want : {"tokens/s", "tok/s/GPU", "J/token", "cached", "evaluated", "infeasible",
                           "  64  ", " 512  "}) {
    EXPECT_TRUE(absl::StrContains(out_, want)) << want << "\n" << out_;
  }
  const std::string svg = ReadFile(path);
  ASSERT_TRUE(absl::StartsWith(svg, "<svg")) << svg.substr(0, 100);
  ASSERT_TRUE(absl::EndsWith(svg, "</svg>\n"));
  std::string why;
  EXPECT_TRUE(TagsBalance(svg, &why)) << why;
  const std::string top = Element(svg, "panel-throughput");
  const std::string bottom = Element(svg, "panel-energy");
  ASSERT_FALSE(top.empty());
  ASSERT_FALSE(bottom.empty());
  EXPECT_EQ(Count(top, "class=\"point\""), 4);
  EXPECT_EQ(Count(bottom, "class=\"point\""), 4);
  EXPECT_EQ(Count(top, "class=\"layout\""), 8) << "two label lines per point";
  for (const char* want :
       {"GPUs (log2 scale)", "total tokens/s", "tokens/s per GPU", "joules per token"}) {
    EXPECT_TRUE(absl::StrContains(svg, want)) << want;
  }

  // On a terminal the progress bar goes to stderr; the second run is answered from the cache.
  ASSERT_EQ(Run({"sweep", "--model", "llama2-7b", "--accelerator", "h100-sxm-80gb", "--seq", "4096",
                 "--global-batch", "512", "--gpus", "64,128", "--refresh"},
                true),
            0)
      << err_;
  EXPECT_TRUE(absl::StrContains(err_, "layouts")) << err_;
  ASSERT_EQ(Run({"sweep", "--model", "llama2-7b", "--accelerator", "h100-sxm-80gb", "--seq", "4096",
                 "--global-batch", "512", "--gpus", "64,128", "--csv"}),
            0)
      << err_;
  const std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 3u) << out_;
  EXPECT_EQ(CsvCellNamed(lines[0], lines[1], "cached"), "true");
}

TEST_F(CliTest, CliPlanTableCsvJsonAndSvg) {
  const std::string path = TempPath("plan.svg");
  const std::vector<std::string> base = {
      "plan",   "--model",        "llama2-7b",
      "--seq",  "4096",           "--tokens",
      "1e12",   "--accelerators", "h100-sxm-80gb=2.5,a100-sxm-80gb=1.5",
      "--gpus", "16,32,64",       "--deadline-days",
      "30"};
  ASSERT_EQ(Run(Concat(base, {"--svg", path})), 0) << err_;
  for (const char* want :
       {"ranked by cost", "h100-sxm-80gb", "a100-sxm-80gb", "goodput", "GPU-hours", "Each doubling",
        "Assumptions:", "reliability.interruptions_per_1000_gpu_days", "searched 6 of 6"}) {
    EXPECT_TRUE(absl::StrContains(out_, want)) << want << "\n" << out_;
  }
  const std::string svg = ReadFile(path);
  ASSERT_TRUE(absl::StartsWith(svg, "<svg")) << svg.substr(0, 100);
  std::string why;
  EXPECT_TRUE(TagsBalance(svg, &why)) << why;
  EXPECT_EQ(Count(svg, "class=\"option\""), 6);
  EXPECT_TRUE(absl::StrContains(svg, "id=\"pareto\""));
  EXPECT_TRUE(absl::StrContains(svg, "days of wall clock"));

  // CSV: one row per option; GPU-hours = days x 24 x GPUs and cost = GPU-hours x price.
  ASSERT_EQ(Run(Concat(base, {"--csv"})), 0) << err_;
  const std::vector<std::string> lines = Lines(out_);
  ASSERT_EQ(lines.size(), 7u) << out_;
  for (size_t i = 1; i < lines.size(); ++i) {
    double days = 0, gpu_hours = 0, cost = 0, gpus = 0;
    ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[i], "days"), &days));
    ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[i], "gpu_hours"), &gpu_hours));
    ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[i], "cost"), &cost));
    ASSERT_TRUE(absl::SimpleAtod(CsvCellNamed(lines[0], lines[i], "gpus"), &gpus));
    const double price =
        CsvCellNamed(lines[0], lines[i], "accelerator") == "h100-sxm-80gb" ? 2.5 : 1.5;
    EXPECT_NEAR(gpu_hours, days * 24 * gpus, 1e-6 * gpu_hours);
    EXPECT_NEAR(cost, gpu_hours * price, 1e-6 * cost);
    EXPECT_EQ(CsvCellNamed(lines[0], lines[i], "meets_constraints"), days <= 30 ? "true" : "false");
  }
  // The scenario's network flags reach every candidate (the options echo them).
  ASSERT_EQ(Run(SmallPlan({"--accelerator", "h100-sxm-80gb", "--price", "2", "--gpus", "64",
                           "--network-latency-us", "500", "--network-gbps", "200", "--json"})),
            0)
      << err_;
  EXPECT_TRUE(absl::StrContains(out_, "\"interNodeLatencyUs\": 500")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\"interNodeGbpsPerGpu\": 200")) << out_;
  // The options' own warnings are printed once each: how the framework was read, for all.
  ASSERT_EQ(Run(Concat(base, {"--framework", "PyTorch FSDP2", "--framework-version", "2.4"})), 0)
      << err_;
  EXPECT_EQ(Count(out_, "'PyTorch FSDP2' is read as fsdp"), 1) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\nWarnings\n")) << out_;
  ASSERT_EQ(Run(Concat(base, {"--json"})), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "\"options\"")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\"goodputDetail\"")) << out_;

  // Usage errors before any call, and the server's field paths after.
  EXPECT_EQ(Run({"plan", "--model", "llama2-7b", "--seq", "4096"}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--tokens, --accelerators are required")) << err_;
  EXPECT_EQ(Run(SmallPlan({"--accelerators", "h100-sxm-80gb=cheap"})), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--accelerators: price 'cheap'")) << err_;
  EXPECT_EQ(Run(SmallPlan({"--accelerators", "no-such-gpu", "--gpus", "64"})), 3);
  EXPECT_TRUE(absl::StrContains(err_, "candidates[0].accelerator")) << err_;
}

TEST_F(CliTest, CliMeasurementsImportIsAllOrNothing) {
  const std::string good = std::string(SCALECAST_SHARED_DATA) + "/calibration.csv";
  ASSERT_EQ(Run({"measurements", "import", good}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Recorded 280 measurements")) << out_;
  EXPECT_EQ(StoredCount(), 280);

  // Line 5 (the fourth data row) gets a bad mlp.
  std::vector<std::string> lines = absl::StrSplit(ReadFile(good), '\n');
  ASSERT_GT(lines.size(), 5u);
  ASSERT_TRUE(absl::StrContains(lines[4], ",plain,"));
  lines[4] = absl::StrReplaceAll(lines[4], {{",plain,", ",squiggly,"}});
  const std::string bad = TempPath("bad.csv");
  std::ofstream(bad) << absl::StrJoin(lines, "\n");
  EXPECT_EQ(Run({"measurements", "import", bad}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "line 5")) << err_;
  EXPECT_TRUE(absl::StrContains(err_, "mlp")) << err_;
  EXPECT_TRUE(absl::StrContains(err_, "nothing was recorded")) << err_;
  EXPECT_EQ(StoredCount(), 280);

  // list follows pages with --all; --json carries the total.
  ASSERT_EQ(Run({"measurements", "list", "--page-size", "100", "--all", "--csv"}), 0) << err_;
  EXPECT_EQ(Lines(out_).size(), 281u);
  ASSERT_EQ(Run({"measurements", "list", "--framework", "megatron", "--json"}), 0) << err_;
  v1::ListMeasurementsResponse listed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &listed).ok()) << out_;
  EXPECT_EQ(listed.total_count(), 8);
  ASSERT_GT(listed.measurements_size(), 0);
  ASSERT_EQ(Run({"measurements", "delete", listed.measurements(0).id()}), 0) << err_;
  EXPECT_EQ(StoredCount(), 279);

  EXPECT_EQ(Run({"validate", "--framework", "maxtext"}), 3);
  EXPECT_TRUE(absl::StrContains(
      err_, "FAILED_PRECONDITION: filter: no stored runs match (framework=maxtext)"))
      << err_;
  EXPECT_FALSE(absl::StrContains(out_, "0.0")) << out_;
  ASSERT_EQ(Run({"validate", "--framework", "megatron"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "MAPE")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "megatron")) << out_;
}

// `measurements list --csv` writes every column the CSV reader takes, so its file imports back
// into the same runs: on a fresh store, the same scenario, source, measured values, note and CSV
// id for every run; on the store it came from, every row a duplicate. The files: MoE and latent
// attention (moe.csv), the stack columns (calibration-stacks.csv), and a project file whose
// sources and notes are long citations (MLPerf's DeepSeek-V3 runs: sources over 200 bytes, notes
// over 6 KB).
TEST_F(CliTest, AListedCsvImportsBackIntoTheSameRuns) {
  const std::string shared = SCALECAST_SHARED_DATA;
  for (const std::string& f :
       {shared + "/moe.csv", shared + "/calibration-stacks.csv",
        std::string(SCALECAST_SOURCE_DIR) + "/data/mlperf-deepseekv3-v6.0.csv"}) {
    ASSERT_EQ(Run({"measurements", "import", f}), 0) << err_;
  }
  const int stored = StoredCount();
  ASSERT_EQ(stored, 130 + 102 + 10);
  auto list_all = [&](v1::ListMeasurementsResponse* out) {
    ASSERT_EQ(Run({"measurements", "list", "--all", "--page-size", "1000", "--json"}), 0) << err_;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, out).ok()) << out_;
  };
  v1::ListMeasurementsResponse first;
  list_all(&first);
  ASSERT_EQ(Run({"measurements", "list", "--all", "--page-size", "1000", "--csv"}), 0) << err_;
  const std::string listed = TempPath("listed.csv");
  std::ofstream(listed) << out_;
  const std::string header = Lines(out_).front();
  for (const char* c : {",num_experts,", ",kv_lora_rank,", ",fp8_recipe,", ",csv_id"}) {
    EXPECT_TRUE(absl::StrContains(header, c)) << c << " not in " << header;
  }

  StartServer("");  // a fresh, empty store
  ASSERT_EQ(Run({"measurements", "import", listed}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, absl::StrCat("Recorded ", stored, " measurements"))) << out_;
  v1::ListMeasurementsResponse second;
  list_all(&second);
  std::map<std::pair<std::string, std::string>, const v1::Measurement*> by_key;
  for (const v1::Measurement& m : second.measurements()) {
    by_key[{m.source(), m.labels().at("csv_id")}] = &m;
  }
  ASSERT_EQ(by_key.size(), static_cast<size_t>(stored));
  for (const v1::Measurement& m : first.measurements()) {
    const std::string id = m.labels().at("csv_id");
    auto it = by_key.find({m.source(), id});
    ASSERT_NE(it, by_key.end()) << id;
    const v1::Measurement& back = *it->second;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(m.scenario(), back.scenario()))
        << id << ": " << m.scenario().ShortDebugString() << " vs "
        << back.scenario().ShortDebugString();
    EXPECT_EQ(m.tokens_per_s_per_gpu(), back.tokens_per_s_per_gpu()) << id;
    EXPECT_EQ(m.step_time_s(), back.step_time_s()) << id;
    EXPECT_EQ(m.watts_per_gpu(), back.watts_per_gpu()) << id;
    EXPECT_EQ(m.labels().at("note"), back.labels().at("note")) << id;
  }
  // Imported again where it now is, every row is a duplicate.
  ASSERT_EQ(Run({"measurements", "import", listed}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, absl::StrCat(stored, " duplicates skipped"))) << out_;
}

TEST_F(CliTest, CliValidatePrintsPerSourceAndPerLabelTablesWithinTheWidth) {
  const std::string good = std::string(SCALECAST_SHARED_DATA) + "/calibration.csv";
  ASSERT_EQ(Run({"measurements", "import", good}), 0) << err_;
  // The calibration set's longest source (107 bytes) is cut in tables, whole in CSV and JSON.
  const std::string longest =
      "Korthikanti et al. 2022 'Reducing Activation Recomputation' Table 5 (via calculon "
      "validation transcription)";
  ASSERT_EQ(Run({"validate"}), 0) << err_;
  for (const std::string& line : Lines(out_)) EXPECT_LE(line.size(), kTableWidth) << line;
  EXPECT_TRUE(absl::StrContains(out_, "\nsource ")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\nlabel ")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, longest)) << out_;
  EXPECT_TRUE(absl::StrContains(out_, longest.substr(0, 77) + "...")) << out_;
  // Most runs first: the 216 llm-foundry runs head the source table.
  const size_t table = out_.find("\nsource ");
  ASSERT_NE(table, std::string::npos);
  const std::vector<std::string> source_lines = Lines(out_.substr(table));
  ASSERT_GT(source_lines.size(), 3u);
  EXPECT_TRUE(absl::StartsWith(source_lines[2], "MosaicML llm-foundry MPT training benchmarks"))
      << source_lines[2];
  EXPECT_TRUE(absl::StrContains(source_lines[2], " 216 ")) << source_lines[2];
  // 280 csv_id labels and the notes: over the server's 100, so the rest are counted.
  v1::ValidateResponse resp;
  ASSERT_EQ(Run({"validate", "--json"}), 0) << err_;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &resp).ok()) << out_;
  EXPECT_EQ(resp.by_source().size(), 15u);
  EXPECT_EQ(resp.by_source().at(longest).count(), 8);
  EXPECT_EQ(resp.by_label().size(), 100u);
  EXPECT_GT(resp.by_label_omitted_count(), 280 - 100);
  // The text tables show the 20 groups with the most runs; --wide all the server sent.
  const int labels = 100 + resp.by_label_omitted_count();
  ASSERT_EQ(Run({"validate"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(
      out_, absl::StrCat("(20 of ", labels,
                         " labels shown, most runs first; --wide or --csv list the 100 the "
                         "server sends)")))
      << out_;
  EXPECT_FALSE(absl::StrContains(out_, "sources shown")) << out_;  // 15: all shown
  EXPECT_EQ(out_.find("csv_id=20 "), std::string::npos) << out_;
  ASSERT_EQ(Run({"validate", "--csv"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "\nsource," + longest + ",8,")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\nlabel,csv_id=1,1,")) << out_;
  ASSERT_EQ(Run({"validate", "--wide"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, longest)) << out_;
  EXPECT_TRUE(
      absl::StrContains(out_, absl::StrCat("(100 of ", labels,
                                           " labels shown: the server sends the 100 with the "
                                           "most runs)")))
      << out_;
  // A filter on one source: one source row, and its label groups.
  ASSERT_EQ(Run({"validate", "--source", longest}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Validation of 8 stored runs")) << out_;
  // Its 8 csv_id labels and 2 notes: every group shown, no note.
  EXPECT_FALSE(absl::StrContains(out_, "labels shown")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "\nnote=End-to-end iteration time with full")) << out_;
}

TEST_F(CliTest, CliProfilesListShowDeleteAndCalibrateReplace) {
  StartServer("s3cret");
  const std::string good = std::string(SCALECAST_SHARED_DATA) + "/calibration.csv";
  ASSERT_EQ(Run({"measurements", "import", good, "--token", "s3cret"}), 0) << err_;
  ASSERT_EQ(Run({"profiles", "list"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "No stored calibration profiles")) << out_;
  const std::vector<std::string> calibrate = {
      "calibrate", "--name", "a100-40", "--accelerator", "a100-sxm-40gb", "--token", "s3cret"};
  ASSERT_EQ(Run(calibrate), 0) << err_;
  // A layer over the built-in profile: only what changed, old -> new, and the error on the
  // fitted runs and on the other stored runs, before and after.
  EXPECT_TRUE(absl::StrContains(out_, "Calibration profile 'a100-40': a layer over 'default'"))
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "Accepted and stored: ")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "Changed parameters (the rest is 'default')")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "stack.efficiency")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "fitted runs held out, after")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "other stored runs, before        202")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "accel.h100")) << out_;
  EXPECT_EQ(Run(calibrate), 3);
  EXPECT_TRUE(absl::StrContains(err_, "ALREADY_EXISTS: name: profile 'a100-40' already exists"))
      << err_;
  ASSERT_EQ(Run(Concat(calibrate, {"--replace"})), 0) << err_;

  ASSERT_EQ(Run({"profiles", "list"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "a100-40")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "78")) << out_;
  ASSERT_EQ(Run({"profiles", "list", "--json"}), 0) << err_;
  v1::ListProfilesResponse listed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &listed).ok()) << out_;
  ASSERT_EQ(listed.profiles_size(), 1);
  EXPECT_EQ(listed.profiles(0).fitted_count(), 78);
  ASSERT_EQ(Run({"profiles", "show", "a100-40"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Calibration profile 'a100-40' fitted on 78 runs")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "A layer over 'default'; ")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "stack.efficiency")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "global.comm_slowdown")) << out_;
  EXPECT_EQ(Run({"profiles", "show", "nope"}), 3);
  EXPECT_TRUE(absl::StrContains(err_, "NOT_FOUND: name: profile 'nope' not found")) << err_;
  EXPECT_EQ(Run({"profiles"}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "profiles needs a command")) << err_;

  EXPECT_EQ(Run({"profiles", "delete", "a100-40"}), 3);
  EXPECT_TRUE(absl::StrContains(err_, "UNAUTHENTICATED")) << err_;
  ASSERT_EQ(Run({"profiles", "delete", "a100-40", "--token", "s3cret"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Deleted profile a100-40.")) << out_;
  EXPECT_EQ(Run({"profiles", "delete", "a100-40", "--token", "s3cret"}), 3);
  EXPECT_TRUE(absl::StrContains(err_, "NOT_FOUND: name: profile 'a100-40' not found")) << err_;
}

TEST_F(CliTest, CliTokenFromFlagOrEnvironment) {
  StartServer("s3cret");
  const std::string good = std::string(SCALECAST_SHARED_DATA) + "/calibration.csv";
  EXPECT_EQ(Run({"measurements", "import", good}), 3);
  EXPECT_TRUE(absl::StrContains(err_, "UNAUTHENTICATED")) << err_;
  EXPECT_TRUE(absl::StrContains(err_, "nothing was recorded")) << err_;
  EXPECT_EQ(Run({"measurements", "import", good, "--token", "s3cret"}), 0) << err_;
  environment_["SCALECAST_TOKEN"] = "s3cret";
  // The same file again: every run is a duplicate, counted and not stored.
  EXPECT_EQ(Run({"measurements", "import", good}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Recorded 0 measurements")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "280 duplicates skipped")) << out_;
  EXPECT_EQ(StoredCount(), 280);
}

TEST_F(CliTest, CliAcceleratorsAddUseAndDelete) {
  StartServer("s3cret");
  const std::string spec = TempPath("h100-800g.json");
  std::ofstream(spec) << R"({"id": "h100-800g", "like": "h100-sxm-80gb",
                            "inter_node_gbps_per_gpu": 800})";
  EXPECT_EQ(Run({"accelerators", "add", spec}), 3) << "a write needs the token";
  EXPECT_EQ(Run({"accelerators", "add", spec, "--token", "s3cret"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Registered h100-800g.")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "registered")) << out_;
  EXPECT_EQ(Run({"accelerators", "--csv"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "h100-800g")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, ",registered,h100-sxm-80gb")) << out_;
  // The table lists the systems after the parts: a part and its node each.
  EXPECT_EQ(Run({"accelerators", "--wide"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "Systems (a part and its node")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "p4d.24xlarge")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "Standard_ND96isr_H100_v5")) << out_;
  // A part on another's fitted efficiencies says whose: the registered one, and a catalog part
  // no run is on.
  EXPECT_TRUE(absl::StrContains(out_, "registered, like h100-sxm-80gb")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "catalog, like a100-pcie-80gb")) << out_;
  // Its id works as any accelerator's; a request's own spec too.
  const std::vector<std::string> scenario = {"--model", "llama2-7b",      "--gpus", "64",   "--seq",
                                             "4096",    "--global-batch", "512",    "--tp", "8"};
  EXPECT_EQ(Run(Concat({"predict", "--accelerator", "h100-800g", "--json"}, scenario)), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "h100-800g")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "tokensPerSPerGpu")) << out_;
  const std::string quote = TempPath("quote.json");
  std::ofstream(quote) << R"({"hbm_tb_s": 4.8, "hbm_gb": 141})";
  EXPECT_EQ(Run(Concat({"predict", "--accelerator", "h100-sxm-80gb", "--accelerator-spec", quote,
                        "--hbm-headroom", "0.1", "--json"},
                       scenario)),
            0)
      << err_;
  EXPECT_TRUE(absl::StrContains(out_, "hbmTbS")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "hbmHeadroom")) << out_;
  // A bad spec names its field and stores nothing; a bad file is a usage error.
  const std::string bad = TempPath("bad.json");
  std::ofstream(bad) << R"({"id": "broken", "like": "h100-sxm-80gb", "hbm_gb": -1})";
  EXPECT_EQ(Run({"accelerators", "add", bad, "--token", "s3cret"}), 3);
  EXPECT_TRUE(absl::StrContains(err_, "spec.hbm_gb")) << err_;
  const std::string junk = TempPath("junk.json");
  std::ofstream(junk) << R"({"hbm": 1})";
  EXPECT_EQ(Run({"accelerators", "add", junk, "--token", "s3cret"}), 2);
  EXPECT_EQ(Run({"accelerators", "delete", "h100-800g", "--token", "s3cret"}), 0) << err_;
  EXPECT_EQ(Run({"accelerators", "delete", "h100-800g", "--token", "s3cret"}), 3);
  EXPECT_TRUE(absl::StrContains(err_, "not registered")) << err_;
  EXPECT_EQ(Run({"accelerators", "--csv"}), 0) << err_;
  EXPECT_FALSE(absl::StrContains(out_, "h100-800g")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "broken")) << out_;
}

TEST_F(CliTest, CliExitCodes) {
  EXPECT_EQ(Run({"accelerators"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "h100-sxm-80gb"));
  EXPECT_EQ(Run({"models", "--csv"}), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "llama2-70b"));

  EXPECT_EQ(Run({"predict", "--no-such-flag"}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--no-such-flag")) << err_;
  EXPECT_EQ(Run(Concat({"predict", "--precision", "fp32"}, {"--model", "llama2-70b"})), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--precision")) << err_;
  EXPECT_EQ(Run({"predict", "--tp", "two"}), 2);
  EXPECT_EQ(Run({"predict", "--gpus", "128,256"}), 2) << "lists are for compare";
  EXPECT_EQ(Run({"frobnicate"}), 2);
  EXPECT_EQ(Run({"measurements"}), 2);
  EXPECT_EQ(Run({"measurements", "import"}), 2);
  EXPECT_EQ(Run({"measurements", "import", TempPath("missing.csv")}), 2);
  EXPECT_EQ(RunRaw({}), 2);
  EXPECT_EQ(Run(SmallPlan({"--accelerators", "h100-sxm-80gb", "--price", "2"})), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--price: applies to --accelerator")) << err_;
  // An output file: an empty name is refused before the call, one that cannot be written after.
  EXPECT_EQ(Run(SmallPlan({"--accelerator", "h100-sxm-80gb", "--svg", ""})), 2);
  EXPECT_TRUE(absl::StrContains(err_, "error: --svg: needs a file name")) << err_;
  const std::string unwritable = TempPath("no-such-dir/plot.svg");
  EXPECT_EQ(Run(Concat({"sweep", "--plot", unwritable}, FixedScenarioFlags())), 2);
  EXPECT_TRUE(absl::StrContains(err_, absl::StrCat("error: --plot: cannot write '", unwritable)))
      << err_;
  EXPECT_EQ(Run({"health", "--tls-ca", TempPath("missing.pem")}), 2);
  EXPECT_TRUE(absl::StrContains(err_, "--tls-ca")) << err_;

  std::vector<std::string> refused = FixedScenarioFlags();
  refused[14 + 1] = "3";  // --tp 3
  ASSERT_EQ(refused[14], "--tp");
  EXPECT_EQ(Run(Concat({"predict"}, refused)), 3);
  EXPECT_TRUE(absl::StrContains(
      err_, "error: INVALID_ARGUMENT: scenario.parallelism.tp: 3 does not divide heads=64"))
      << err_;

  EXPECT_EQ(RunRaw(Concat({"predict", "--server", "127.0.0.1:1", "--timeout", "10"},
                          FixedScenarioFlags())),
            3);
  EXPECT_TRUE(absl::StrContains(err_, "UNAVAILABLE")) << err_;
  EXPECT_EQ(RunRaw({"health", "--server", "127.0.0.1:1", "--timeout", "10"}), 3);
}

TEST_F(CliTest, CliHealthPrintsServing) {
  ASSERT_EQ(Run({"health"}), 0) << err_;
  EXPECT_EQ(out_, "SERVING\n");
  EXPECT_EQ(Run({"health", "--service", "scalecast.v1.Scalecast"}), 0) << err_;
  EXPECT_EQ(out_, "SERVING\n");
}

TEST_F(CliTest, CliHelpPrintsUsage) {
  ASSERT_EQ(RunRaw({"--help"}), 0);
  for (const char* c :
       {"predict", "compare", "sweep", "plan", "measurements", "validate", "calibrate",
        "accelerators", "models", "health", "--server", "--json", "--wide"}) {
    EXPECT_TRUE(absl::StrContains(out_, c)) << c;
  }
  ASSERT_EQ(RunRaw({"measurements", "--help"}), 0);
  for (const char* c : {"import", "list", "delete"}) EXPECT_TRUE(absl::StrContains(out_, c)) << c;
  ASSERT_EQ(RunRaw({"sweep", "--help"}), 0);
  EXPECT_TRUE(absl::StrContains(out_, "Diminishing returns")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "--plot")) << out_;
  ASSERT_EQ(RunRaw({"help", "measurements", "list"}), 0);
  EXPECT_TRUE(absl::StrContains(out_, "--page-token")) << out_;
  // The glossary: in the overall help and in every scenario command's.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"predict", "--help"}, {"compare", "-h"}, {"sweep", "--help"}}) {
    ASSERT_EQ(RunRaw(args), 0) << args[0];
    for (const char* term : {"Glossary", "  mb ", "  rc ", "  sp ", "  vpp ", "  MFU ", "  HFU ",
                             "  exposed ", "rc=none"}) {
      EXPECT_TRUE(absl::StrContains(out_, term)) << args[0] << ": " << term;
    }
  }
  ASSERT_EQ(RunRaw({"predict", "--help"}), 0);
  for (const char* flag :
       {"--tp-comm-overlap", "--dp-overlap", "--fp8-recipe", "--attention-kernel", "--cuda-graphs",
        "--compiled", "--framework-version", "usage: scalecast predict --model NAME"}) {
    EXPECT_TRUE(absl::StrContains(out_, flag)) << flag;
  }
}

TEST(CliFlags, StackFlagsSetOnlyWhatIsGiven) {
  auto parsed =
      ParseArgs({"predict", "--tp-comm-overlap=false", "--cuda-graphs", "--fp8-recipe", "delayed",
                 "--attention-kernel", "fa3", "--framework-version", "24.09", "--bf16-grads"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto scenarios = BuildScenarios(*parsed, false);
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  const v1::Stack& st = scenarios->front().stack();
  EXPECT_TRUE(st.has_tp_comm_overlap());
  EXPECT_FALSE(st.tp_comm_overlap());
  EXPECT_TRUE(st.has_cuda_graphs());
  EXPECT_TRUE(st.cuda_graphs());
  EXPECT_FALSE(st.has_dp_overlap()) << "unset: the framework's default";
  EXPECT_FALSE(st.has_compiled());
  EXPECT_EQ(st.fp8_recipe(), "delayed");
  EXPECT_EQ(st.attention_kernel(), "fa3");
  EXPECT_EQ(st.version(), "24.09");
  EXPECT_TRUE(st.has_bf16_grads());
  EXPECT_TRUE(st.bf16_grads());
  EXPECT_FALSE(st.has_fused_dispatch());
  EXPECT_FALSE(ParseArgs({"predict", "--cuda-graphs=maybe"}).ok());
  EXPECT_FALSE(ParseArgs({"predict", "--bf16-grads=sometimes"}).ok());
}

TEST(CliFormat, LayoutNotationIsTheGlossarys) {
  v1::Parallelism p;
  p.set_tp(2);
  p.set_pp(4);
  p.set_vpp(4);
  p.set_cp(2);
  p.set_dp(64);
  p.set_sharding(v1::SHARDING_ZERO1);
  p.set_micro_batch(1);
  p.set_recompute(v1::RECOMPUTE_NONE);
  p.set_sequence_parallel(true);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 vpp4 cp2 dp64 zero1 mb1 rc=none sp");
  // A two-level exchange's all-to-all group right after cp.
  p.set_cp(16);
  p.set_cp_a2a(4);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 vpp4 cp16 a2a4 dp64 zero1 mb1 rc=none sp");
  p.set_cp_a2a(0);
  p.set_vpp(1);
  p.set_cp(1);
  p.set_sharding(v1::SHARDING_HSDP);
  p.set_shard_group(8);
  p.set_recompute(v1::RECOMPUTE_SELECTIVE);
  p.set_sequence_parallel(false);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 dp64 hsdp8 mb1 rc=sel");
  // Expert and expert-tensor parallel degrees, after dp, only above 1 (as vpp and cp).
  p.set_ep(8);
  p.set_etp(2);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 dp64 ep8 etp2 hsdp8 mb1 rc=sel");
  p.set_etp(1);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 dp64 ep8 hsdp8 mb1 rc=sel");
  // Selective recompute by module names the modules.
  p.add_recompute_modules("mla_up_proj");
  p.add_recompute_modules("moe_act");
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 dp64 ep8 hsdp8 mb1 rc=mla_up_proj+moe_act");
  // Full recompute on some layers of each stage says how many.
  p.clear_recompute_modules();
  p.set_recompute(v1::RECOMPUTE_FULL);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 dp64 ep8 hsdp8 mb1 rc=full");
  p.set_recompute_layers(4);
  EXPECT_EQ(LayoutShort(p), "tp2 pp4 dp64 ep8 hsdp8 mb1 rc=full:4");
}

// The Stack line names bf16 gradients only when the scenario has them on.
TEST(CliFormat, StackLineNamesBf16GradientsWhenOn) {
  v1::Scenario s;
  s.mutable_workload()->mutable_model()->set_name("llama2-7b");
  s.mutable_stack()->set_dp_overlap(true);
  v1::PredictResponse r;
  EXPECT_FALSE(absl::StrContains(FormatPredictTable(s, r), "gradients in bf16"));
  s.mutable_stack()->set_bf16_grads(false);
  EXPECT_FALSE(absl::StrContains(FormatPredictTable(s, r), "gradients in bf16"));
  s.mutable_stack()->set_bf16_grads(true);
  EXPECT_TRUE(absl::StrContains(FormatPredictTable(s, r), "DP overlap on, gradients in bf16"))
      << FormatPredictTable(s, r);
}

// The Stack line names the MoE dispatcher and its overlap where the echo has them (a MoE model's),
// and fp8 parameter gathering when on.
TEST(CliFormat, StackLineNamesTheMoeDispatcherWhenEchoed) {
  v1::Scenario s;
  s.mutable_workload()->mutable_model()->set_name("deepseek-v3");
  s.mutable_stack()->set_dp_overlap(true);
  v1::PredictResponse r;
  EXPECT_FALSE(absl::StrContains(FormatPredictTable(s, r), "MoE dispatch"));
  EXPECT_FALSE(absl::StrContains(FormatPredictTable(s, r), "EP all-to-all"));
  s.mutable_stack()->set_fused_dispatch(false);
  s.mutable_stack()->set_ep_comm_overlap(false);
  EXPECT_TRUE(absl::StrContains(FormatPredictTable(s, r),
                                "MoE dispatch all-to-all, EP all-to-all overlap off"))
      << FormatPredictTable(s, r);
  s.mutable_stack()->set_fused_dispatch(true);
  s.mutable_stack()->set_ep_comm_overlap(true);
  s.mutable_stack()->set_fp8_param_gather(true);
  EXPECT_TRUE(absl::StrContains(
      FormatPredictTable(s, r),
      "parameters gathered in fp8, MoE dispatch fused (DeepEP/HybridEP), EP all-to-all overlap on"))
      << FormatPredictTable(s, r);
}

TEST(CliFlags, RecomputeModulesAreNamedOrRefused) {
  auto parsed = ParseArgs({"predict", "--recompute-modules", "mla_up_proj,moe_act"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto scenarios = BuildScenarios(*parsed, false);
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  const v1::Parallelism& p = scenarios->front().parallelism();
  ASSERT_EQ(p.recompute_modules_size(), 2);
  EXPECT_EQ(p.recompute_modules(0), "mla_up_proj");
  EXPECT_EQ(p.recompute_modules(1), "moe_act");
  for (const char* bad : {"attention", ","}) {
    auto b = ParseArgs({"predict", "--recompute-modules", bad});
    absl::Status st = b.ok() ? BuildScenarios(*b, false).status() : b.status();
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_TRUE(absl::StrContains(st.message(), "--recompute-modules")) << st;
  }
}

// Latent MoE, group-limited routing, tied embeddings and a config.json (its bytes, sent as they
// are: the server parses them) from their flags; a model from a config.json needs no --model.
TEST(CliFlags, LatentRoutingAndConfigFlagsFillTheModel) {
  const std::string path = std::string(SCALECAST_SOURCE_DIR) + "/tests/data/hf/gpt2.json";
  auto parsed =
      ParseArgs({"predict", "--hf-config", path, "--latent-size", "1024", "--router-groups", "8",
                 "--router-group-topk", "4", "--tie-embeddings", "--accelerator", "h100-sxm-80gb",
                 "--gpus", "8", "--seq", "1024", "--global-batch", "64"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto scenarios = BuildScenarios(*parsed, false);
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  const v1::ModelSpec& m = scenarios->front().workload().model();
  EXPECT_NE(m.hf_config_json().find("\"model_type\": \"gpt2\""), std::string::npos);
  EXPECT_EQ(m.moe().latent_size(), 1024);
  EXPECT_EQ(m.moe().router_groups(), 8);
  EXPECT_EQ(m.moe().router_group_topk(), 4);
  EXPECT_TRUE(m.tie_embeddings());
  auto missing = ParseArgs({"predict", "--hf-config", "/nonexistent/config.json"});
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(absl::StrContains(BuildScenarios(*missing, false).status().message(),
                                "--hf-config: cannot read '/nonexistent/config.json'"));
}

TEST(CliFlags, MoeFlagsFillTheModelAndLayout) {
  // clang-format off
  auto parsed = ParseArgs({"predict",
                           "--model", "my-moe", "--layers", "4", "--hidden", "1024",
                           "--heads", "8", "--vocab", "1000", "--head-dim", "128",
                           "--experts", "64", "--experts-per-token", "6", "--expert-ffn", "512",
                           "--shared-experts", "2", "--shared-ffn", "1024", "--dense-layers", "1",
                           "--ffn-hidden", "4096", "--capacity-factor", "1.25",
                           "--mla-q-lora-rank", "1536", "--mla-kv-lora-rank", "512",
                           "--mla-qk-nope-head-dim", "128", "--mla-qk-rope-head-dim", "64",
                           "--mla-v-head-dim", "128", "--attention-window", "4096",
                           "--full-attention-every", "2", "--ep", "8", "--etp", "auto",
                           "--expert-bias", "--mtp-layers", "1"});
  // clang-format on
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto scenarios = BuildScenarios(*parsed, false);
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  const v1::ModelSpec& m = scenarios->front().workload().model();
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_EQ(m.moe().num_experts(), 64);
  EXPECT_EQ(m.moe().experts_per_token(), 6);
  EXPECT_EQ(m.moe().expert_ffn_hidden(), 512);
  EXPECT_EQ(m.moe().shared_experts(), 2);
  EXPECT_EQ(m.moe().shared_ffn_hidden(), 1024);
  EXPECT_EQ(m.moe().dense_layers(), 1);
  EXPECT_EQ(m.moe().capacity_factor(), 1.25);
  EXPECT_TRUE(m.moe().expert_bias());
  EXPECT_NE(MoeWords(m).find("biased experts"), std::string::npos) << MoeWords(m);
  EXPECT_EQ(m.mtp_layers(), 1);
  EXPECT_EQ(m.mla().q_lora_rank(), 1536);
  EXPECT_EQ(m.mla().kv_lora_rank(), 512);
  EXPECT_EQ(m.mla().qk_nope_head_dim(), 128);
  EXPECT_EQ(m.mla().qk_rope_head_dim(), 64);
  EXPECT_EQ(m.mla().v_head_dim(), 128);
  EXPECT_EQ(m.attention_window(), 4096);
  EXPECT_EQ(m.full_attention_every(), 2);
  EXPECT_EQ(scenarios->front().parallelism().ep(), 8);
  EXPECT_EQ(scenarios->front().parallelism().etp(), 0);  // auto: the planner's
  // Without MoE flags the messages stay absent on the wire, as an old client sent them.
  parsed = ParseArgs({"predict", "--model", "llama2-7b"});
  ASSERT_TRUE(parsed.ok());
  scenarios = BuildScenarios(*parsed, false);
  ASSERT_TRUE(scenarios.ok());
  EXPECT_FALSE(scenarios->front().workload().model().has_moe());
  EXPECT_FALSE(scenarios->front().workload().model().has_mla());
  // The hybrid flags.
  parsed = ParseArgs({"predict", "--layer-pattern", "MEM*EM", "--mamba-heads", "64",
                      "--mamba-head-dim", "64", "--mamba-state", "128", "--mamba-groups", "8"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  scenarios = BuildScenarios(*parsed, false);
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  EXPECT_EQ(scenarios->front().workload().model().layer_pattern(), "MEM*EM");
  EXPECT_EQ(scenarios->front().workload().model().mamba_groups(), 8);
}

TEST(CliFlags, MoeFlagValuesOutOfRangeAreUsageErrorsNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--experts", "-1"}, "--experts: -1 is out of range"},
      {{"--experts", "many"}, "--experts: 'many' is not an integer"},
      {{"--experts-per-token", "99999999999"}, "--experts-per-token: 99999999999 is out of range"},
      {{"--capacity-factor", "nan"}, "--capacity-factor: 'nan' is not a number"},
      {{"--capacity-factor", "-1"}, "--capacity-factor: -1 is out of range"},
      {{"--mla-kv-lora-rank", "x"}, "--mla-kv-lora-rank: 'x' is not an integer"},
      {{"--ep", "-8"}, "--ep: -8 is out of range"},
      {{"--etp", "two"}, "--etp: 'two' is not an integer"},
      {{"--layer-pattern", ""}, "--layer-pattern: needs a non-empty value"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args{"predict"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto parsed = ParseArgs(args);
    absl::Status st = parsed.status();
    if (parsed.ok()) st = BuildScenarios(*parsed, false).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << flags[0];
    EXPECT_TRUE(absl::StrContains(st.message(), message)) << st.message();
  }
}

TEST(CliFormat, CsvNumbersCarryFourSignificantDigitsOrWholeNumbers) {
  EXPECT_EQ(CsvNumber(514611.99593028525), "514612");
  EXPECT_EQ(CsvNumber(1005.1017763963433), "1005");
  EXPECT_EQ(CsvNumber(0.43531234), "0.4353");
  EXPECT_EQ(CsvNumber(2.2791234), "2.279");
  EXPECT_EQ(CsvNumber(0.0000123456), "0.00001235");
  EXPECT_EQ(CsvNumber(0), "0");
  EXPECT_EQ(CsvNumber(-0.25), "-0.25");
}

TEST(CliFormat, CsvHasColumnsForEveryCommunicationKindTheProtoDeclares) {
  pb::Scenario s;
  pb::Prediction p;
  p.mutable_layout()->set_ep(8);
  pb::CommTime* a2a = p.mutable_time()->add_comm();
  a2a->set_kind("ep_alltoall");
  a2a->set_total_s(1.5);
  a2a->set_exposed_s(0.25);
  a2a->set_bytes_per_gpu(123456789);
  pb::CommTime* tp = p.mutable_time()->add_comm();
  tp->set_kind("tp");
  tp->set_total_s(0.5);
  const std::vector<std::string> header = PredictionCsvHeader();
  const std::vector<std::string> row = PredictionCsvRow(s, p);
  ASSERT_EQ(header.size(), row.size());
  auto cell = [&](const std::string& name) {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? std::string("(no column)") : row[it - header.begin()];
  };
  const google::protobuf::EnumDescriptor* kinds = pb::CommKind_descriptor();
  for (int i = 0; i < kinds->value_count(); ++i) {
    if (kinds->value(i)->number() == pb::COMM_KIND_UNSPECIFIED) continue;
    const std::string word =
        absl::AsciiStrToLower(absl::StripPrefix(kinds->value(i)->name(), "COMM_KIND_"));
    for (const char* suffix : {"_total_s", "_exposed_s", "_bytes_per_gpu"}) {
      EXPECT_NE(cell(word + suffix), "(no column)") << word << suffix;
    }
  }
  EXPECT_EQ(cell("ep_alltoall_total_s"), "1.5");
  EXPECT_EQ(cell("ep_alltoall_exposed_s"), "0.25");
  EXPECT_EQ(cell("ep_alltoall_bytes_per_gpu"), "123456789");
  EXPECT_EQ(cell("tp_total_s"), "0.5");
  EXPECT_EQ(cell("cp_total_s"), "0");
  EXPECT_EQ(cell("comm_total_s"), "2");
  EXPECT_EQ(cell("ep"), "8");
  // The columns the CSV always had keep their positions; later kinds come after them.
  EXPECT_EQ(header[39], "dp_allgather_total_s");
  EXPECT_EQ(header[57], "weights_bytes");
  EXPECT_EQ(header[70], "etp");
  EXPECT_EQ(header[71], "ep_alltoall_total_s");
}

TEST(CliFormat, TablesDropOptionalColumnsFromTheRightToFit) {
  Table t({{"a"}, {"b", true, true}, {"c", false, true}, {"d"}});
  t.AddRow({"1", std::string(30, 'x'), std::string(30, 'y'), "4"});
  std::vector<std::string> dropped{"x"};
  const std::string all = t.Render("", 0, &dropped);
  EXPECT_TRUE(dropped.empty());
  EXPECT_TRUE(absl::StrContains(all, "yyy"));
  const std::string narrow = t.Render("", 40, &dropped);
  EXPECT_EQ(dropped, std::vector<std::string>{"c"}) << narrow;
  EXPECT_FALSE(absl::StrContains(narrow, "yyy")) << "the rightmost optional column goes first";
  EXPECT_TRUE(absl::StrContains(narrow, "xxx"));
  for (const std::string& line : Lines(narrow)) EXPECT_LE(line.size(), 40u) << line;
}

TEST(CliFlags, GlobalFlagsGoAnywhereAndListsMakeACartesianProduct) {
  auto parsed = ParseArgs({"--json", "compare", "--accelerator", "a100-sxm-80gb,h100-sxm-80gb",
                           "--server=host:1", "--gpus", "8,16", "--model", "llama2-7b"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, "compare");
  Env env;
  auto global = GetGlobalOptions(*parsed, env);
  ASSERT_TRUE(global.ok());
  EXPECT_EQ(global->server, "host:1");
  EXPECT_EQ(global->format, OutputFormat::kJson);
  auto scenarios = BuildScenarios(*parsed, true);
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  ASSERT_EQ(scenarios->size(), 4u);
  const std::vector<std::pair<std::string, int>> want = {
      {"a100-sxm-80gb", 8}, {"a100-sxm-80gb", 16}, {"h100-sxm-80gb", 8}, {"h100-sxm-80gb", 16}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*scenarios)[i].cluster().accelerator(), want[i].first);
    EXPECT_EQ((*scenarios)[i].cluster().num_gpus(), want[i].second);
    EXPECT_EQ((*scenarios)[i].workload().model().name(), "llama2-7b");
  }
  // Environment: the flag wins over SCALECAST_SERVER.
  env.getenv = [](const char* name) -> const char* {
    return std::string(name) == "SCALECAST_SERVER" ? "env-host:2" : nullptr;
  };
  EXPECT_EQ(GetGlobalOptions(*parsed, env)->server, "host:1");
  auto bare = ParseArgs({"health"});
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(GetGlobalOptions(*bare, env)->server, "env-host:2");
  EXPECT_FALSE(ParseArgs({"health", "--gpus", "8"}).ok()) << "not a flag of health";
  auto both = ParseArgs({"predict", "--json", "--csv"});
  ASSERT_TRUE(both.ok());
  EXPECT_FALSE(GetGlobalOptions(*both, env).ok()) << "--json and --csv are exclusive";
  auto tls = ParseArgs({"health", "--tls-server-name", "scalecast.internal"});
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(GetGlobalOptions(*tls, env)->tls) << "a server name implies TLS";
}

// The scenario flags are the proto's: every field under Scenario whose (scalecast.v1.field)
// option names a flag is one, in the command's help, and no other scenario flag exists.
TEST(CliFlags, ScenarioFlagsAreTheProtosAnnotatedFields) {
  std::vector<std::string> annotated;
  std::function<void(const google::protobuf::Descriptor*)> walk =
      [&](const google::protobuf::Descriptor* d) {
        for (int i = 0; i < d->field_count(); ++i) {
          const google::protobuf::FieldDescriptor* f = d->field(i);
          const v1::FieldUi& ui = f->options().GetExtension(v1::field);
          if (!ui.flag().empty()) annotated.push_back(ui.flag());
          if (f->message_type() != nullptr && !f->is_repeated()) walk(f->message_type());
        }
      };
  walk(v1::Scenario::descriptor());
  ASSERT_EQ(annotated.size(), ScenarioFields().size());
  const std::string usage = CommandUsage("predict");
  for (const std::string& flag : annotated) {
    EXPECT_TRUE(IsScenarioFlag(flag)) << flag;
    EXPECT_TRUE(absl::StrContains(usage, absl::StrCat("--", flag, " "))) << flag;
  }
  EXPECT_TRUE(IsScenarioFlag("request"));
  EXPECT_FALSE(IsScenarioFlag("top-k"));  // sweep's own, not a field
  // compare's help names the flags that take lists: those with the proto's `list` option.
  const std::string compare = CommandUsage("compare");
  const std::string lists = compare.substr(0, compare.find("; several lists"));
  for (const FieldFlag& f : ScenarioFields()) {
    EXPECT_EQ(absl::StrContains(lists, absl::StrCat("--", f.ui->flag(), " ")) ||
                  absl::StrContains(lists, absl::StrCat("--", f.ui->flag(), "\n")) ||
                  absl::EndsWith(lists, absl::StrCat("--", f.ui->flag())),
              f.ui->list())
        << f.ui->flag();
  }
}

// Plan's own flags are PlanRequest's and PlanCandidate's annotated fields (the workload and
// stack being Scenario's flags), each setting the field it is declared on.
TEST(CliFlags, PlanFlagsAreThePlanMessagesAnnotatedFields) {
  namespace gp = ::google::protobuf;
  std::set<const gp::Descriptor*> scenario;
  std::function<void(const gp::Descriptor*)> reach = [&](const gp::Descriptor* d) {
    if (!scenario.insert(d).second) return;
    for (int i = 0; i < d->field_count(); ++i) {
      if (d->field(i)->message_type() != nullptr) reach(d->field(i)->message_type());
    }
  };
  reach(v1::Scenario::descriptor());
  std::vector<std::string> annotated;
  std::function<void(const gp::Descriptor*)> walk = [&](const gp::Descriptor* d) {
    for (int i = 0; i < d->field_count(); ++i) {
      const gp::FieldDescriptor* f = d->field(i);
      const v1::FieldUi& ui = f->options().GetExtension(v1::field);
      if (!ui.flag().empty()) annotated.push_back(ui.flag());
      if (f->message_type() != nullptr && !f->is_repeated() &&
          scenario.count(f->message_type()) == 0) {
        walk(f->message_type());
      }
    }
  };
  walk(v1::PlanRequest::descriptor());
  walk(v1::PlanCandidate::descriptor());
  ASSERT_EQ(annotated.size(), PlanFields().size() + PlanCandidateFields().size());
  EXPECT_GE(annotated.size(), 14u);  // tokens, 5 constraints, 4 reliability, 3 more, price
  const std::string usage = CommandUsage("plan");
  for (const std::string& flag : annotated) {
    EXPECT_TRUE(absl::StrContains(usage, absl::StrCat("--", flag, " "))) << flag;
  }
  // Each sets its own field, found by the path it was collected with.
  auto value_at = [](const gp::Message& root, const FieldFlag& f) {
    const gp::Message* m = &root;
    for (size_t i = 0; i + 1 < f.path.size(); ++i) {
      m = &m->GetReflection()->GetMessage(*m, f.path[i]);
    }
    const gp::FieldDescriptor* fd = f.path.back();
    const gp::Reflection* r = m->GetReflection();
    switch (fd->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_INT32:
        return static_cast<double>(r->GetInt32(*m, fd));
      case gp::FieldDescriptor::CPPTYPE_INT64:
        return static_cast<double>(r->GetInt64(*m, fd));
      default:
        return r->GetDouble(*m, fd);
    }
  };
  for (const FieldFlag& f : PlanFields()) {
    v1::PlanRequest req;
    ASSERT_TRUE(ApplyField(f, "2", &req).ok()) << f.ui->flag();
    EXPECT_EQ(value_at(req, f), 2) << f.ui->flag();
  }
  for (const FieldFlag& f : PlanCandidateFields()) {
    v1::PlanCandidate c;
    ASSERT_TRUE(ApplyField(f, "2", &c).ok()) << f.ui->flag();
    EXPECT_EQ(value_at(c, f), 2) << f.ui->flag();
  }
  // An integer field takes a whole number written as a double; the proto's range is the flag's.
  const auto find = [](const std::string& flag) {
    for (const FieldFlag& f : PlanFields()) {
      if (f.ui->flag() == flag) return &f;
    }
    return static_cast<const FieldFlag*>(nullptr);
  };
  v1::PlanRequest req;
  ASSERT_NE(find("max-batch-tokens"), nullptr);
  ASSERT_TRUE(ApplyField(*find("max-batch-tokens"), "16e6", &req).ok());
  EXPECT_EQ(req.constraints().max_global_batch_tokens(), 16000000);
  EXPECT_EQ(ApplyField(*find("max-batch-tokens"), "16.5e0", &req).message(),
            "--max-batch-tokens: '16.5e0' is not an integer");
  EXPECT_EQ(ApplyField(*find("top-k"), "1001", &req).message(),
            "--top-k: 1001 is out of range [0, 1000]");
  EXPECT_EQ(ApplyField(*find("tokens"), "0.5", &req).message(),
            "--tokens: 0.5 is out of range [1, 1e+30]");
}

// Every flag name the CLI had before the flags came from the proto still sets the same field.
// Every CSV column a Scenario field's option names is one CsvCell writes (a number, a bool or a
// string, not repeated), named once, and none of the columns the CSV reader names itself.
TEST(CliFlags, ScenarioCsvColumnsAreWritable) {
  using FD = google::protobuf::FieldDescriptor;
  std::set<std::string> seen = {"id",        "source",   "framework", "mlp",
                                "precision", "sharding", "recompute", "attention"};
  ASSERT_GT(ScenarioCsvColumns().size(), 60u);
  for (const CsvColumn& c : ScenarioCsvColumns()) {
    const FD* f = c.path.back();
    EXPECT_FALSE(f->is_repeated()) << c.column;
    EXPECT_TRUE(f->cpp_type() == FD::CPPTYPE_INT32 || f->cpp_type() == FD::CPPTYPE_INT64 ||
                f->cpp_type() == FD::CPPTYPE_UINT32 || f->cpp_type() == FD::CPPTYPE_UINT64 ||
                f->cpp_type() == FD::CPPTYPE_DOUBLE || f->cpp_type() == FD::CPPTYPE_BOOL ||
                f->cpp_type() == FD::CPPTYPE_STRING)
        << c.column << " is a " << f->cpp_type_name();
    EXPECT_TRUE(seen.insert(c.column).second) << c.column << " named twice";
  }
  // A plain field at its default is blank; a present optional one is written, false included.
  v1::Scenario s;
  s.mutable_parallelism()->set_tp(4);
  s.mutable_stack()->set_cuda_graphs(false);
  std::map<std::string, std::string> cells;
  for (const CsvColumn& c : ScenarioCsvColumns()) cells[c.column] = CsvCell(c, s);
  EXPECT_EQ(cells["tp"], "4");
  EXPECT_EQ(cells["pp"], "");
  EXPECT_EQ(cells["cuda_graphs"], "false");
  EXPECT_EQ(cells["compiled"], "");
}

TEST(CliFlags, EveryScenarioFlagSetsTheFieldItAlwaysDid) {
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"model", "workload.model.name"},
      {"layers", "workload.model.layers"},
      {"hidden", "workload.model.hidden"},
      {"heads", "workload.model.heads"},
      {"kv-heads", "workload.model.kv_heads"},
      {"ffn-hidden", "workload.model.ffn_hidden"},
      {"mlp", "workload.model.mlp"},
      {"vocab", "workload.model.vocab"},
      {"head-dim", "workload.model.head_dim"},
      {"tie-embeddings", "workload.model.tie_embeddings"},
      {"mtp-layers", "workload.model.mtp_layers"},
      {"experts", "workload.model.moe.num_experts"},
      {"experts-per-token", "workload.model.moe.experts_per_token"},
      {"expert-ffn", "workload.model.moe.expert_ffn_hidden"},
      {"shared-experts", "workload.model.moe.shared_experts"},
      {"shared-ffn", "workload.model.moe.shared_ffn_hidden"},
      {"dense-layers", "workload.model.moe.dense_layers"},
      {"capacity-factor", "workload.model.moe.capacity_factor"},
      {"force-balance", "workload.model.moe.force_balance"},
      {"expert-bias", "workload.model.moe.expert_bias"},
      {"latent-size", "workload.model.moe.latent_size"},
      {"router-groups", "workload.model.moe.router_groups"},
      {"router-group-topk", "workload.model.moe.router_group_topk"},
      {"mla-q-lora-rank", "workload.model.mla.q_lora_rank"},
      {"mla-kv-lora-rank", "workload.model.mla.kv_lora_rank"},
      {"mla-qk-nope-head-dim", "workload.model.mla.qk_nope_head_dim"},
      {"mla-qk-rope-head-dim", "workload.model.mla.qk_rope_head_dim"},
      {"mla-v-head-dim", "workload.model.mla.v_head_dim"},
      {"attention-window", "workload.model.attention_window"},
      {"full-attention-every", "workload.model.full_attention_every"},
      {"layer-pattern", "workload.model.layer_pattern"},
      {"mamba-heads", "workload.model.mamba_heads"},
      {"mamba-head-dim", "workload.model.mamba_head_dim"},
      {"mamba-state", "workload.model.mamba_state"},
      {"mamba-groups", "workload.model.mamba_groups"},
      {"seq", "workload.seq_len"},
      {"global-batch", "workload.global_batch"},
      {"precision", "workload.precision"},
      {"accelerator", "cluster.accelerator"},
      {"gpus", "cluster.num_gpus"},
      {"gpus-per-node", "cluster.gpus_per_node"},
      {"network-gbps", "cluster.inter_node_gbps_per_gpu"},
      {"tp", "parallelism.tp"},
      {"pp", "parallelism.pp"},
      {"vpp", "parallelism.vpp"},
      {"cp", "parallelism.cp"},
      {"dp", "parallelism.dp"},
      {"ep", "parallelism.ep"},
      {"etp", "parallelism.etp"},
      {"sharding", "parallelism.sharding"},
      {"shard-group", "parallelism.shard_group"},
      {"micro-batch", "parallelism.micro_batch"},
      {"recompute", "parallelism.recompute"},
      {"recompute-modules", "parallelism.recompute_modules"},
      {"sequence-parallel", "parallelism.sequence_parallel"},
      {"framework", "framework"},
      {"framework-version", "stack.version"},
      {"tp-comm-overlap", "stack.tp_comm_overlap"},
      {"dp-overlap", "stack.dp_overlap"},
      {"fp8-recipe", "stack.fp8_recipe"},
      {"attention-kernel", "stack.attention_kernel"},
      {"cuda-graphs", "stack.cuda_graphs"},
      {"compiled", "stack.compiled"},
      {"fused-dispatch", "stack.fused_dispatch"},
      {"ep-comm-overlap", "stack.ep_comm_overlap"},
      {"bf16-grads", "stack.bf16_grads"},
      {"calibration", "calibration"},
      {"label", "label"},
  };
  for (const auto& [flag, path] : flags) {
    const FieldFlag* f = FindScenarioField(flag);
    ASSERT_NE(f, nullptr) << flag;
    std::vector<std::string> names;
    for (const google::protobuf::FieldDescriptor* d : f->path) names.push_back(d->name());
    EXPECT_EQ(absl::StrJoin(names, "."), path) << flag;
  }
}

// The values each field type takes from the command line, and the errors naming the flag.
TEST(CliFlags, FieldTypesParseFromTheirOptions) {
  v1::Scenario s;
  auto apply = [&](const std::string& flag, const std::string& value) {
    return ApplyField(*FindScenarioField(flag), value, &s);
  };
  ASSERT_TRUE(apply("tp", "auto").ok());                  // auto_zero
  ASSERT_TRUE(apply("global-batch", "4294967296").ok());  // int64, its proto max 2^32
  EXPECT_EQ(s.workload().global_batch(), 4294967296);
  EXPECT_EQ(apply("global-batch", "4294967297").message(),
            "--global-batch: 4294967297 is out of range [1, 4294967296]");
  EXPECT_EQ(apply("layers", "0").message(), "--layers: 0 is out of range [1, 4096]");
  EXPECT_EQ(apply("model", "").message(), "--model: needs a non-empty value");
  ASSERT_TRUE(apply("sequence-parallel", "false").ok());  // optional bool: set to false
  EXPECT_TRUE(s.parallelism().has_sequence_parallel());
  ASSERT_TRUE(apply("sharding", "auto").ok());
  EXPECT_EQ(apply("recompute", "some").message(),
            "--recompute: 'some' is not one of none, selective, full");
  EXPECT_EQ(apply("capacity-factor", "-1").message(),
            "--capacity-factor: -1 is out of range [0, 16]");
  EXPECT_EQ(apply("gpus-per-node", "2000").message(),  // an int without min: [0, its max]
            "--gpus-per-node: 2000 is out of range [0, 1024]");
  EXPECT_EQ(apply("hf-config", "/nonexistent/config.json").message(),
            "--hf-config: cannot read '/nonexistent/config.json'");
}

// Enum values on the command line are the model's names (model/types.h), for the proto enum of
// the same numbers: the two agree name for name.
template <NamedEnum E>
void ExpectModelTableMatchesProto(const google::protobuf::EnumDescriptor* e) {
  const std::string unspecified = e->FindValueByNumber(0)->name();
  const std::string prefix = unspecified.substr(0, unspecified.rfind('_') + 1);
  for (const EnumName<E>& n : EnumNames(E{})) {
    const google::protobuf::EnumValueDescriptor* v =
        e->FindValueByNumber(static_cast<int>(n.value));
    ASSERT_NE(v, nullptr) << n.name;
    EXPECT_EQ(absl::AsciiStrToLower(v->name().substr(prefix.size())), n.name);
  }
  EXPECT_EQ(EnumKnownNames(e), KnownNames<E>(", "));
}

TEST(CliFlags, EnumNamesAreTheModelsTables) {
  ExpectModelTableMatchesProto<Mlp>(v1::Mlp_descriptor());
  ExpectModelTableMatchesProto<Precision>(v1::Precision_descriptor());
  ExpectModelTableMatchesProto<Sharding>(v1::Sharding_descriptor());
  ExpectModelTableMatchesProto<Recompute>(v1::Recompute_descriptor());
}

TEST(CliSweepRule, DiminishingReturnsIsTheFirstCountBelowEitherThreshold) {
  auto result = [](int gpus, double tps) {
    v1::SweepResult r;
    r.set_gpu_count(gpus);
    r.mutable_best()->set_tokens_per_s(tps);
    return r;
  };
  // Perfect scaling: none.
  EXPECT_EQ(DiminishingReturnsIndex({result(8, 80), result(16, 160), result(32, 320)}), -1);
  // 8 -> 16 adds 10/GPU; 16 -> 32 adds 4/GPU (< 5): marked at 32 GPUs.
  EXPECT_EQ(DiminishingReturnsIndex({result(8, 80), result(16, 160), result(32, 224)}), 2);
  // 8 -> 16 GPUs: scaling efficiency (100/80)/(16/8) = 62.5% < 70%.
  EXPECT_EQ(
      DiminishingReturnsIndex({result(8, 80), result(16, 100), result(32, 200), result(64, 300)}),
      1);
  // A count without a feasible layout is skipped; one feasible count is no curve.
  v1::SweepResult none;
  none.set_gpu_count(4);
  EXPECT_EQ(DiminishingReturnsIndex({none, result(8, 80)}), -1);
  EXPECT_EQ(DiminishingReturnsIndex({none, result(8, 80), result(16, 100)}), 2);
}

}  // namespace
}  // namespace scalecast::cli
