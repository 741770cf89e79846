// The server's bounds, in process: metrics for served methods only, the sweep cache's key and
// byte bound, per-field length limits, implausible values, the token file, full disks.
#include <grpcpp/create_channel.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <grpcpp/security/credentials.h>
#include <prometheus/registry.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/measurements.h"
#include "proto/scalecast_grpc.h"
#include "server/server.h"
#include "storage/store.h"

namespace scalecast {
namespace {

namespace pb = ::scalecast::v1;

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/limits-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.listen_address = "127.0.0.1:0";
    options_.db_path = dir_ + "/scalecast.db";
    options_.metrics_address = "";
    options_.worker_threads = 2;
    options_.grace_period_ms = 1000;
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Start() {
    registry_ = std::make_shared<prometheus::Registry>();
    auto s = Server::Start(options_, registry_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = pb::Scalecast::NewStub(channel_);
  }

  static pb::Scenario Preset(int gpus) {
    pb::Scenario s;
    s.mutable_workload()->mutable_model()->set_name("llama2-7b");
    s.mutable_workload()->set_seq_len(4096);
    s.mutable_workload()->set_global_batch(512);
    s.mutable_cluster()->set_accelerator("h100-sxm-80gb");
    s.mutable_cluster()->set_num_gpus(gpus);
    s.mutable_parallelism()->set_pp(1);
    s.mutable_parallelism()->set_cp(1);
    s.mutable_parallelism()->set_vpp(1);
    return s;
  }

  static pb::Measurement Run(double tokens) {
    pb::Measurement m;
    *m.mutable_scenario() = Preset(8);
    m.set_tokens_per_s_per_gpu(tokens);
    m.set_source("test");
    return m;
  }

  grpc::Status Sweep(const pb::SweepRequest& req, std::vector<pb::SweepResult>* results,
                     const std::string& token = "") {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    auto reader = stub_->Sweep(&ctx, req);
    pb::SweepResponse msg;
    while (reader->Read(&msg)) {
      if (msg.has_result() && results != nullptr) results->push_back(msg.result());
    }
    return reader->Finish();
  }

  grpc::Status Record(const std::vector<pb::Measurement>& ms, const std::string& token = "") {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    pb::RecordMeasurementsRequest req;
    for (const auto& m : ms) *req.add_measurements() = m;
    pb::RecordMeasurementsResponse resp;
    return stub_->RecordMeasurements(&ctx, req, &resp);
  }

  size_t Series() {
    size_t n = 0;
    for (const auto& family : registry_->Collect()) n += family.metric.size();
    return n;
  }

  std::string dir_;
  ServerOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Scalecast::Stub> stub_;
};

// 2,000 calls to made-up method names leave /metrics as it was; served methods still count.
TEST_F(LimitsTest, UnknownMethodsAddNoSeries) {
  Start();
  pb::PredictResponse presp;
  {
    grpc::ClientContext ctx;
    pb::PredictRequest req;
    *req.mutable_scenario() = Preset(8);
    ASSERT_TRUE(stub_->Predict(&ctx, req, &presp).ok());
  }
  const size_t before = Series();
  for (int i = 0; i < 2000; ++i) {
    const grpc::internal::RpcMethod method(
        absl::StrCat(i % 2 ? "/scalecast.v1.Scalecast/Nope" : "/made.up.Service", i, "/M").c_str(),
        grpc::internal::RpcMethod::NORMAL_RPC, channel_);
    grpc::ClientContext ctx;
    pb::PredictRequest req;
    pb::PredictResponse resp;
    const grpc::Status st =
        grpc::internal::BlockingUnaryCall(channel_.get(), method, &ctx, req, &resp);
    ASSERT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  EXPECT_EQ(Series(), before);
  grpc::ClientContext ctx;
  pb::ListModelsRequest req;
  pb::ListModelsResponse resp;
  ASSERT_TRUE(stub_->ListModels(&ctx, req, &resp).ok());
  EXPECT_GT(Series(), before);  // a served method's first call adds its series
}

// The cache key is canonical: GPU counts in any order and any label hit the same entry, and the
// answer carries the caller's label and order.
TEST_F(LimitsTest, SweepCacheKeyIgnoresLabelAndGpuCountOrder) {
  Start();
  pb::SweepRequest a;
  *a.mutable_base() = Preset(0);
  a.mutable_base()->set_label("first");
  a.add_gpu_counts(256);
  a.add_gpu_counts(512);
  std::vector<pb::SweepResult> ra, rb;
  ASSERT_TRUE(Sweep(a, &ra).ok());
  ASSERT_EQ(ra.size(), 2u);
  EXPECT_FALSE(ra[0].cached());

  pb::SweepRequest b = a;
  b.clear_gpu_counts();
  b.add_gpu_counts(512);
  b.add_gpu_counts(256);
  b.mutable_base()->set_label(std::string(1000, 'L'));
  ASSERT_TRUE(Sweep(b, &rb).ok());
  ASSERT_EQ(rb.size(), 2u);
  EXPECT_TRUE(rb[0].cached());
  EXPECT_TRUE(rb[1].cached());
  EXPECT_EQ(rb[0].gpu_count(), 512);
  EXPECT_EQ(rb[1].gpu_count(), 256);
  EXPECT_EQ(rb[0].best().label(), std::string(1000, 'L'));
  EXPECT_EQ(rb[1].best().tokens_per_s(), ra[0].best().tokens_per_s());
  EXPECT_EQ(ra[0].best().label(), "first");
}

// Many distinct sweeps: the cache never holds more than --sweep-cache-bytes.
TEST_F(LimitsTest, SweepCacheStaysUnderItsByteBound) {
  options_.sweep_cache_bytes = 30'000;
  Start();
  for (int i = 0; i < 24; ++i) {
    pb::SweepRequest req;
    *req.mutable_base() = Preset(0);
    req.mutable_base()->mutable_workload()->set_seq_len(1024 + 128 * i);
    req.add_gpu_counts(64);
    req.add_gpu_counts(128);
    req.set_top_k(10);
    ASSERT_TRUE(Sweep(req, nullptr).ok()) << i;
  }
  StoreOptions so;
  so.path = options_.db_path;
  auto store = Store::Open(so);
  ASSERT_TRUE(store.ok()) << store.status();
  const int64_t bytes = (*store)->SweepCacheBytes().value_or(-1);
  EXPECT_GT(bytes, 0);
  EXPECT_LE(bytes, 30'000);
}

// With a token configured, a tokenless sweep is answered but does not fill the shared cache.
TEST_F(LimitsTest, TokenlessSweepsDoNotFillTheCache) {
  const std::string token_file = dir_ + "/token";
  std::ofstream(token_file) << "s3cret\n";  // an editor's newline: trimmed
  options_.auth_token_file = token_file;
  Start();
  pb::SweepRequest req;
  *req.mutable_base() = Preset(0);
  req.add_gpu_counts(64);
  std::vector<pb::SweepResult> r1, r2, r3;
  ASSERT_TRUE(Sweep(req, &r1).ok());
  ASSERT_TRUE(Sweep(req, &r2).ok());
  EXPECT_FALSE(r2[0].cached());
  ASSERT_TRUE(Sweep(req, nullptr, "s3cret").ok());
  ASSERT_TRUE(Sweep(req, &r3).ok());
  EXPECT_TRUE(r3[0].cached());
  // The token file's newline is not part of the token: the write works.
  EXPECT_TRUE(Record({Run(1000)}, "s3cret").ok());
  EXPECT_EQ(Record({Run(1000)}, "s3cret ").error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// Oversized strings are refused naming the field, without echoing them; implausible values
// and a recorded_at that would overflow are refused; nothing is written.
TEST_F(LimitsTest, LengthLimitsAndImplausibleValuesAreRefusedNamingTheField) {
  Start();
  const std::string huge(1 << 20, 'x');
  struct Case {
    pb::Measurement m;
    const char* field;
  };
  std::vector<Case> cases;
  auto add = [&](const char* field, auto mutate) {
    pb::Measurement m = Run(1000);
    mutate(&m);
    cases.push_back({m, field});
  };
  add("measurements[1].scenario.label",
      [&](pb::Measurement* m) { m->mutable_scenario()->set_label(huge); });
  add("measurements[1].scenario.workload.model.name", [&](pb::Measurement* m) {
    m->mutable_scenario()->mutable_workload()->mutable_model()->set_name(huge);
  });
  add("measurements[1].scenario.framework",
      [&](pb::Measurement* m) { m->mutable_scenario()->set_framework(huge); });
  add("measurements[1].source", [&](pb::Measurement* m) { m->set_source(huge); });
  add("measurements[1].labels", [&](pb::Measurement* m) { (*m->mutable_labels())["k"] = huge; });
  add("measurements[1].tokens_per_s_per_gpu",
      [](pb::Measurement* m) { m->set_tokens_per_s_per_gpu(1e308); });
  add("measurements[1].step_time_s", [](pb::Measurement* m) { m->set_step_time_s(1e300); });
  add("measurements[1].watts_per_gpu", [](pb::Measurement* m) { m->set_watts_per_gpu(1e12); });
  add("measurements[1].recorded_at",
      [](pb::Measurement* m) { m->mutable_recorded_at()->set_seconds(int64_t{1} << 62); });
  add("measurements[1].recorded_at",
      [](pb::Measurement* m) { m->mutable_recorded_at()->set_seconds(-1); });
  for (const Case& c : cases) {
    const grpc::Status st = Record({Run(1000), c.m});
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_TRUE(absl::StartsWith(st.error_message(), c.field)) << st.error_message();
    EXPECT_LT(st.error_message().size(), 400u) << c.field;
  }
  // Filters and names too.
  grpc::ClientContext ctx;
  pb::ListMeasurementsRequest list;
  list.mutable_filter()->set_framework(huge);
  pb::ListMeasurementsResponse lresp;
  const grpc::Status st = stub_->ListMeasurements(&ctx, list, &lresp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(st.error_message(), "filter.framework")) << st.error_message();
  {
    grpc::ClientContext pctx;
    pb::PredictRequest preq;
    *preq.mutable_scenario() = Preset(8);
    preq.mutable_scenario()->set_calibration(huge);
    pb::PredictResponse presp;
    const grpc::Status pst = stub_->Predict(&pctx, preq, &presp);
    EXPECT_EQ(pst.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_LT(pst.error_message().size(), 400u);
  }
  grpc::ClientContext cctx;
  pb::ListMeasurementsRequest all;
  EXPECT_TRUE(stub_->ListMeasurements(&cctx, all, &lresp).ok());
  EXPECT_EQ(lresp.total_count(), 0);
}

// A full database (here: --db-max-bytes) is RESOURCE_EXHAUSTED, not INTERNAL, and the failed
// batch leaves nothing.
TEST_F(LimitsTest, FullDatabaseIsResourceExhausted) {
  options_.db_max_bytes = 256 << 10;
  Start();
  grpc::Status last;
  int stored = 0;
  for (int i = 0; i < 500 && last.ok(); ++i) {
    std::vector<pb::Measurement> batch;
    for (int k = 0; k < 50; ++k) batch.push_back(Run(1000 + 50 * i + k));  // no duplicates
    last = Record(batch);
    if (last.ok()) stored += 50;
  }
  EXPECT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << last.error_message();
  grpc::ClientContext ctx;
  pb::ListMeasurementsRequest req;
  pb::ListMeasurementsResponse resp;
  ASSERT_TRUE(stub_->ListMeasurements(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.total_count(), stored);
}

// One sweep may hold at most --sweep-max-bytes of layout spaces: past it, RESOURCE_EXHAUSTED naming
// the bound, before anything is computed.
TEST_F(LimitsTest, ASweepOverItsMemoryBoundIsResourceExhausted) {
  options_.sweep_max_bytes = 64 << 10;
  Start();
  pb::SweepRequest req;
  *req.mutable_base() = Preset(0);
  req.mutable_base()->clear_parallelism();  // every layout open: many thousands
  req.mutable_base()->mutable_workload()->mutable_model()->set_name("llama2-70b");
  req.mutable_base()->mutable_workload()->set_global_batch(4096);
  for (int g : {512, 1024, 2048}) req.add_gpu_counts(g);
  const grpc::Status st = Sweep(req, nullptr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "65536 bytes of layouts"))
      << st.error_message();
}

// A Validate past its deadline is reported (and counted in /metrics) as DEADLINE_EXCEEDED, not OK.
TEST_F(LimitsTest, AbandonedValidateIsCountedAsDeadlineExceeded) {
  {
    StoreOptions so;
    so.path = options_.db_path;
    auto store = Store::Open(so);
    ASSERT_TRUE(store.ok()) << store.status();
    std::vector<Measurement> runs;
    for (int i = 0; i < 2000; ++i) {
      Measurement m;
      m.scenario.workload.model.name = "llama2-70b";
      m.scenario.workload.seq_len = 4096;
      m.scenario.workload.global_batch = 1024;
      m.scenario.cluster.accelerator = "h100-sxm-80gb";
      m.scenario.cluster.num_gpus = 256;
      m.tokens_per_s_per_gpu = 800 + 0.001 * i;  // distinct runs: no duplicates
      runs.push_back(m);
    }
    ASSERT_TRUE((*store)->RecordMeasurements(runs).ok());
  }
  Start();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  pb::ValidateRequest req;
  pb::ValidateResponse resp;
  EXPECT_EQ(stub_->Validate(&ctx, req, &resp).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's own count: wait for the pool to notice (one slice of 8 runs at most; each run
  // plans its blank layout, so on 2 cores shared with the stress tests a slice can take
  // seconds: wait up to 30 s for it, the behaviour asserted is the count, not the time).
  double deadline_exceeded = 0, ok = 0;
  for (int i = 0; i < 600 && deadline_exceeded == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const auto& family : registry_->Collect()) {
      if (family.name != "grpc_server_handled_total") continue;
      for (const auto& metric : family.metric) {
        std::map<std::string, std::string> labels;
        for (const auto& l : metric.label) labels[l.name] = l.value;
        if (labels["grpc_method"] != "Validate") continue;
        if (labels["grpc_code"] == "DeadlineExceeded") deadline_exceeded = metric.counter.value;
        if (labels["grpc_code"] == "OK") ok = metric.counter.value;
      }
    }
  }
  EXPECT_EQ(deadline_exceeded, 1);
  EXPECT_EQ(ok, 0);
}

// A run stored before the bounds existed (here written into the file directly) is named by
// Calibrate, which refuses rather than fitting to Inf; Validate reports that row as failed.
TEST_F(LimitsTest, ImplausibleStoredRunIsNamedNotFitted) {
  {
    StoreOptions so;
    so.path = options_.db_path;
    auto store = Store::Open(so);
    ASSERT_TRUE(store.ok()) << store.status();
    Measurement m;
    m.scenario.workload.model.name = "llama2-7b";
    m.scenario.workload.seq_len = 4096;
    m.scenario.workload.global_batch = 512;
    m.scenario.cluster.accelerator = "h100-sxm-80gb";
    m.scenario.cluster.num_gpus = 8;
    m.tokens_per_s_per_gpu = 1000;
    m.id = "old-run";
    ASSERT_TRUE((*store)->RecordMeasurements({m}).ok());
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(options_.db_path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE measurements SET tokens_per_s_per_gpu = 1e308", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  Start();
  grpc::ClientContext ctx;
  pb::CalibrateRequest req;
  req.set_name("fit");
  pb::CalibrateResponse resp;
  const grpc::Status st = stub_->Calibrate(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "'old-run'")) << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "tokens_per_s_per_gpu")) << st.error_message();
  grpc::ClientContext vctx;
  pb::ValidateRequest vreq;
  pb::ValidateResponse vresp;
  ASSERT_TRUE(stub_->Validate(&vctx, vreq, &vresp).ok());
  EXPECT_EQ(vresp.failed_count(), 1);
  EXPECT_TRUE(std::isfinite(vresp.overall().mape()));
}

// The server does not start on a database it cannot open, and says which.
TEST_F(LimitsTest, OpenErrorsNameTheFile) {
  std::ofstream(dir_ + "/file") << "x";
  options_.db_path = dir_ + "/file/sub/scalecast.db";
  auto s = Server::Start(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), options_.db_path)) << s.status();
}

}  // namespace
}  // namespace scalecast
