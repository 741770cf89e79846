// Integration tests: a real scalecast server on port 0, called over gRPC for every RPC.
#include "server/server.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "jobs/calibration_job.h"
#include "jobs/import_job.h"
#include "jobs/sweep_job.h"
#include "model/calibration.h"
#include "model/measurements.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "model/version.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/grpc/reflection/v1alpha/reflection.pb.h"
#include "proto/scalecast_grpc.h"
#include "server/convert.h"
#include "storage/scenario_codec.h"
#include "tests/proto_scenarios.h"
#include "tests/scratch_dir.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

namespace pb = ::scalecast::v1;

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(const std::string& token = "") {
    ServerOptions o;
    o.listen_address = "127.0.0.1:0";
    o.db_path = ":memory:";
    o.metrics_address = "";
    o.worker_threads = 2;
    o.grace_period_ms = 1000;
    if (!token.empty()) {
      token_file_ = scratch_.File("token");
      std::ofstream(token_file_) << token << "\n";
      o.auth_token_file = token_file_;
    }
    auto s = Server::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = pb::Scalecast::NewStub(channel_);
  }
  void SetUp() override { StartServer(); }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  static pb::Scenario Preset(const std::string& model, int gpus) {
    return testing::PresetRequest(model, gpus);
  }
  static pb::Scenario Full(const std::string& model, int gpus) {
    return testing::FullLayoutRequest(model, gpus);
  }

  grpc::Status Predict(const pb::Scenario& s, pb::PredictResponse* out) {
    grpc::ClientContext ctx;
    pb::PredictRequest req;
    *req.mutable_scenario() = s;
    return stub_->Predict(&ctx, req, out);
  }

  // calibration.csv as its file has it; with `releases`, as a user who knows their releases
  // records it: each run with the release its source ran (data/source-releases.csv,
  // data/mosaicml-releases.csv), since without one a run is priced at today's software.
  std::vector<pb::Measurement> CalibrationSet(bool releases = false) {
    auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
    EXPECT_TRUE(runs.ok()) << runs.status();
    for (const char* f : {"data/source-releases.csv", "data/mosaicml-releases.csv"}) {
      if (!releases) break;
      EXPECT_TRUE(ApplyRunAnnotations(testing::ReadSource(f), &*runs).ok()) << f;
    }
    std::vector<pb::Measurement> out;
    for (const Measurement& m : *runs) {
      pb::Measurement pm;
      ToProto(m, &pm);
      pm.clear_recorded_at();
      out.push_back(pm);
    }
    return out;
  }

  grpc::Status Record(const std::vector<pb::Measurement>& ms, pb::RecordMeasurementsResponse* out,
                      const std::string& token = "") {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    pb::RecordMeasurementsRequest req;
    for (const auto& m : ms) *req.add_measurements() = m;
    return stub_->RecordMeasurements(&ctx, req, out);
  }

  int64_t Count() {
    grpc::ClientContext ctx;
    pb::ListMeasurementsRequest req;
    req.set_page_size(1);
    pb::ListMeasurementsResponse resp;
    EXPECT_TRUE(stub_->ListMeasurements(&ctx, req, &resp).ok());
    return resp.total_count();
  }

  testing::ScratchDir scratch_;
  std::string token_file_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Scalecast::Stub> stub_;
};

TEST_F(ServerTest, PredictsAPresetAndAnExplicitShapeAlike) {
  pb::PredictResponse a, b;
  ASSERT_TRUE(Predict(Full("llama2-7b", 64), &a).ok());
  pb::Scenario shape = Full("llama2-7b", 64);
  pb::ModelSpec* m = shape.mutable_workload()->mutable_model();
  m->set_name("my-7b");
  m->set_layers(32);
  m->set_hidden(4096);
  m->set_heads(32);
  m->set_kv_heads(32);
  m->set_ffn_hidden(11008);
  m->set_mlp(pb::MLP_GATED);
  m->set_vocab(32000);
  grpc::Status s = Predict(shape, &b);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_DOUBLE_EQ(a.prediction().step_time_s(), b.prediction().step_time_s());
  EXPECT_GT(a.prediction().tokens_per_s(), 0);
  EXPECT_EQ(a.model_version(), ModelVersion());
  EXPECT_EQ(a.calibration(), "default");
  EXPECT_EQ(a.prediction().layout().dp(), 64);
  EXPECT_FALSE(a.prediction().time().comm().empty());
  EXPECT_GT(a.prediction().memory().total_bytes(), 0);
  EXPECT_GT(a.prediction().power().watts_per_gpu(), 0);
  // The same answer the model gives in-process.
  auto direct = scalecast::Predict(*FromProto(Full("llama2-7b", 64), "scenario"),
                                   Catalog::Builtin(), Profile::BuiltinDefault());
  ASSERT_TRUE(direct.ok());
  EXPECT_DOUBLE_EQ(direct->tokens_per_s, a.prediction().tokens_per_s());
  // Blank layout: the planner fills it.
  pb::PredictResponse planned;
  ASSERT_TRUE(Predict(Preset("llama2-13b", 128), &planned).ok());
  EXPECT_GT(planned.prediction().layout().micro_batch(), 0);
}

TEST_F(ServerTest, ComparesScenariosWithDeltas) {
  grpc::ClientContext ctx;
  pb::CompareRequest req;
  *req.add_scenarios() = Full("llama2-7b", 128);
  *req.add_scenarios() = Full("llama2-7b", 512);
  pb::Scenario a100 = Full("llama2-7b", 128);
  a100.mutable_cluster()->set_accelerator("a100-sxm-80gb");
  *req.add_scenarios() = a100;
  pb::CompareResponse resp;
  grpc::Status s = stub_->Compare(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.predictions_size(), 3);
  ASSERT_EQ(resp.deltas_size(), 3);
  EXPECT_DOUBLE_EQ(resp.deltas(0).throughput_ratio(), 1.0);
  EXPECT_GT(resp.deltas(1).throughput_ratio(), 2.0);
  EXPECT_LT(resp.deltas(1).scaling_efficiency(), 1.0);
  EXPECT_NEAR(resp.deltas(1).scaling_efficiency(), resp.deltas(1).throughput_ratio() / 4, 1e-12);
  EXPECT_LT(resp.deltas(2).throughput_ratio(), 0.7);  // A100 is slower
  EXPECT_GT(resp.deltas(2).mfu_delta(), 0.05);        // but better used
}

// Plan: progress messages, then one last message with the ranked options; bad requests name
// the field; a cancelled plan ends CANCELLED.
TEST_F(ServerTest, PlanStreamsProgressThenOptions) {
  pb::PlanRequest req;
  req.mutable_workload()->mutable_model()->set_name("llama2-7b");
  req.mutable_workload()->set_seq_len(4096);
  req.set_tokens(1e12);
  for (const char* acc : {"h100-sxm-80gb", "a100-sxm-80gb"}) {
    pb::PlanCandidate* c = req.add_candidates();
    c->set_accelerator(acc);
    c->set_price_per_gpu_hour(2);
    for (int g : {16, 32, 64}) c->add_gpu_counts(g);
  }
  req.mutable_constraints()->set_deadline_days(40);
  auto run = [&](const pb::PlanRequest& r, int* progress, pb::PlanResponse* last) {
    grpc::ClientContext ctx;
    auto reader = stub_->Plan(&ctx, r);
    pb::PlanResponse msg;
    *progress = 0;
    int after_last = 0;
    while (reader->Read(&msg)) {
      if (msg.options_size() > 0) {
        *last = msg;
      } else {
        ++*progress;
        after_last += last->options_size() > 0;
        EXPECT_LE(msg.progress().evaluated_count(), msg.progress().total_count());
      }
    }
    EXPECT_EQ(after_last, 0) << "the options come last";
    return reader->Finish();
  };
  int progress = 0;
  pb::PlanResponse last;
  grpc::Status s = run(req, &progress, &last);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GE(progress, 1);
  ASSERT_EQ(last.options_size(), 6);
  EXPECT_TRUE(last.ranked_by_cost());
  EXPECT_EQ(last.stats().gpu_counts_total(), 6);
  EXPECT_GT(last.warnings_size(), 0);
  EXPECT_GT(last.doublings_size(), 0);
  for (const pb::PlanOption& o : last.options()) {
    EXPECT_NEAR(o.gpu_hours(), o.days() * 24 * o.num_gpus(), 1e-9 * o.gpu_hours());
    EXPECT_NEAR(o.cost(), o.gpu_hours() * 2, 1e-9 * o.cost());
    EXPECT_EQ(o.meets_constraints(), o.days() <= 40);
    EXPECT_EQ(o.scenario().cluster().num_gpus(), o.num_gpus());
    EXPECT_GT(o.prediction().tokens_per_s(), 0);
    EXPECT_GT(o.goodput_detail().mtbf_s(), 0);
  }
  pb::PlanRequest bad = req;
  bad.mutable_candidates(1)->set_accelerator("no-such-gpu");
  s = run(bad, &progress, &last);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "candidates[1].accelerator: "))
      << s.error_message();
  bad = req;
  bad.mutable_candidates(0)->mutable_layout()->set_sharding(static_cast<pb::Sharding>(77));
  s = run(bad, &progress, &last);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "candidates[0].layout.sharding"))
      << s.error_message();
  bad = req;
  bad.mutable_candidates(0)->mutable_layout()->add_recompute_modules("no_such_module");
  s = run(bad, &progress, &last);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(s.error_message(),
                               "candidates[0].layout.recompute_modules[0]: unknown module"))
      << s.error_message();
  bad = req;
  bad.mutable_workload()->set_seq_len(-1);
  s = run(bad, &progress, &last);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "workload.seq_len")) << s.error_message();
  // The request's own workload is named from its top, as the proto has it.
  bad = req;
  bad.mutable_workload()->set_precision(static_cast<pb::Precision>(99));
  s = run(bad, &progress, &last);
  EXPECT_EQ(s.error_message(), "workload.precision: unknown enum value 99");
  // A client that cancels at once gets CANCELLED, not options.
  grpc::ClientContext ctx;
  auto reader = stub_->Plan(&ctx, req);
  ctx.TryCancel();
  pb::PlanResponse msg;
  while (reader->Read(&msg)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(ServerTest, SweepStreamsProgressThenResultsAndIsCached) {
  pb::SweepRequest req;
  *req.mutable_base() = Preset("llama2-70b", 0);
  req.mutable_base()->mutable_workload()->set_global_batch(4096);
  for (int g : {256, 512, 1024, 2048}) req.add_gpu_counts(g);
  req.set_top_k(3);
  auto run = [&](bool refresh, int* progress, std::vector<pb::SweepResult>* results) {
    grpc::ClientContext ctx;
    pb::SweepRequest r = req;
    r.set_refresh(refresh);
    auto reader = stub_->Sweep(&ctx, r);
    pb::SweepResponse msg;
    *progress = 0;
    while (reader->Read(&msg)) {
      if (msg.has_progress()) {
        ++*progress;
        EXPECT_LE(msg.progress().evaluated_count(), msg.progress().total_count());
      } else {
        results->push_back(msg.result());
      }
    }
    return reader->Finish();
  };
  int progress = 0;
  std::vector<pb::SweepResult> first, second, third;
  grpc::Status s = run(false, &progress, &first);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GE(progress, 4);  // at least the start and end of each GPU count
  ASSERT_EQ(first.size(), 4u);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].gpu_count(), req.gpu_counts(i));
    EXPECT_FALSE(first[i].cached());
    EXPECT_EQ(first[i].top_size(), 3);
    EXPECT_GT(first[i].evaluated_count(), 100);
    EXPECT_GT(first[i].infeasible_count(), 0);
    EXPECT_GT(first[i].infeasible_reasons_size(), 0);
    EXPECT_DOUBLE_EQ(first[i].best().tokens_per_s(), first[i].top(0).tokens_per_s());
  }
  ASSERT_TRUE(run(false, &progress, &second).ok());
  ASSERT_EQ(second.size(), 4u);
  for (size_t i = 0; i < second.size(); ++i) {
    EXPECT_TRUE(second[i].cached());
    EXPECT_DOUBLE_EQ(second[i].best().tokens_per_s(), first[i].best().tokens_per_s());
  }
  ASSERT_TRUE(run(true, &progress, &third).ok());
  ASSERT_EQ(third.size(), 4u);
  for (const auto& r : third) EXPECT_FALSE(r.cached());
}

TEST_F(ServerTest, RecordsListsValidatesAndCalibrates) {
  const std::vector<pb::Measurement> set = CalibrationSet(/*releases=*/true);
  ASSERT_EQ(set.size(), 280u);
  pb::RecordMeasurementsResponse rec;
  grpc::Status s = Record(set, &rec);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(rec.recorded_count(), 280);
  EXPECT_EQ(std::set<std::string>(rec.ids().begin(), rec.ids().end()).size(), 280u);

  // Page through everything.
  std::string token;
  std::set<std::string> seen;
  int pages = 0;
  do {
    grpc::ClientContext ctx;
    pb::ListMeasurementsRequest req;
    req.set_page_size(100);
    req.set_page_token(token);
    pb::ListMeasurementsResponse resp;
    ASSERT_TRUE(stub_->ListMeasurements(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.total_count(), 280);
    for (const auto& m : resp.measurements()) seen.insert(m.id());
    token = resp.next_page_token();
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen.size(), 280u);
  {
    grpc::ClientContext ctx;
    pb::ListMeasurementsRequest req;
    req.mutable_filter()->set_framework("megatron");
    pb::ListMeasurementsResponse resp;
    ASSERT_TRUE(stub_->ListMeasurements(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.measurements_size(), 8);
  }

  // Validate over gRPC reports what the offline validation reports.
  pb::ValidateResponse val;
  {
    grpc::ClientContext ctx;
    pb::ValidateRequest req;
    req.set_include_rows(true);
    s = stub_->Validate(&ctx, req, &val);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  for (const char* f : {"data/source-releases.csv", "data/mosaicml-releases.csv"}) {
    ASSERT_TRUE(ApplyRunAnnotations(testing::ReadSource(f), &*runs).ok()) << f;
  }
  const ValidationReport offline =
      scalecast::Validate(*runs, Catalog::Builtin(), Profile::BuiltinDefault());
  EXPECT_EQ(val.overall().count(), 280);
  EXPECT_NEAR(val.overall().mape(), offline.overall.mape, 1e-9);
  EXPECT_NEAR(val.overall().median_ape(), offline.overall.median_ape, 1e-9);
  EXPECT_EQ(val.rows_size(), 280);
  EXPECT_EQ(val.by_framework().size(), 4u);

  // Calibrate on the torchtitan runs on H100 96GB, which the built-in profile prices least well
  // (their asyncTP and rowwise float8 rows); the profile changes Predict's answer.
  pb::CalibrateResponse cal;
  {
    grpc::ClientContext ctx;
    pb::CalibrateRequest req;
    req.set_name("h100-96");
    req.mutable_filter()->set_accelerator("h100-sxm-96gb-500w");
    s = stub_->Calibrate(&ctx, req, &cal);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(cal.profile().name(), "h100-96");
  EXPECT_EQ(cal.profile().fitted_count(), 33);
  // The layer beats the built-in profile held out (FitLayer's tests cover when many runs carry
  // more than the level).
  ASSERT_TRUE(cal.accepted()) << cal.reason();
  EXPECT_EQ(cal.profile().base(), "default");
  EXPECT_GE(cal.profile().changes_size(), 1);
  EXPECT_LT(cal.held_out_after().mape(), cal.held_out_before().mape());
  // The fit starts from the built-in profile and minimises squared log error on these runs; their
  // MAPE stays at least as good (within rounding of the different objective).
  EXPECT_LE(cal.after().mape(), cal.before().mape() * 1.05);
  EXPECT_LT(cal.after().mape(), cal.before().mape());
  EXPECT_GT(cal.profile().parameters().count("stack.efficiency"), 0u) << cal.reason();
  pb::Scenario sc = Full("llama2-7b", 64);
  sc.mutable_cluster()->set_accelerator("h100-sxm-96gb-500w");
  pb::PredictResponse by_default, by_profile;
  ASSERT_TRUE(Predict(sc, &by_default).ok());
  sc.set_calibration("h100-96");
  ASSERT_TRUE(Predict(sc, &by_profile).ok());
  EXPECT_EQ(by_profile.calibration(), "h100-96");
  EXPECT_NE(by_default.prediction().tokens_per_s(), by_profile.prediction().tokens_per_s());

  // Delete one; it is gone.
  {
    grpc::ClientContext ctx;
    pb::DeleteMeasurementRequest req;
    req.set_id(*seen.begin());
    pb::DeleteMeasurementResponse resp;
    ASSERT_TRUE(stub_->DeleteMeasurement(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(Count(), 279);
}

TEST_F(ServerTest, ListsTheCatalog) {
  grpc::ClientContext c1, c2;
  pb::ListAcceleratorsResponse acc;
  ASSERT_TRUE(stub_->ListAccelerators(&c1, pb::ListAcceleratorsRequest(), &acc).ok());
  EXPECT_EQ(acc.accelerators_size(), static_cast<int>(Catalog::Builtin().accelerators().size()));
  pb::ListModelsResponse models;
  ASSERT_TRUE(stub_->ListModels(&c2, pb::ListModelsRequest(), &models).ok());
  EXPECT_EQ(models.models_size(), static_cast<int>(Catalog::Builtin().models().size()));
  EXPECT_EQ(models.models_size(), 171);  // 147 dense (5 of them hybrid), 24 mixture-of-experts
  ASSERT_EQ(models.sizes_size(), models.models_size());
  bool saw_deepseek = false;
  for (int i = 0; i < models.models_size(); ++i) {
    const pb::ModelSpec& m = models.models(i);
    // Dense presets leave the MoE and MLA messages absent on the wire, as before.
    EXPECT_EQ(m.has_moe(), Catalog::Builtin().FindModel(m.name())->spec.moe.enabled()) << m.name();
    if (!m.has_moe()) {
      EXPECT_GT(models.sizes(i).total_params(), 0) << m.name();
      EXPECT_EQ(models.sizes(i).activated_params(), models.sizes(i).total_params()) << m.name();
    }
    // A mixture-of-experts token passes through its top-k experts only.
    if (m.has_moe()) {
      EXPECT_GT(models.sizes(i).activated_params(), 0) << m.name();
      EXPECT_LT(models.sizes(i).activated_params(), models.sizes(i).total_params()) << m.name();
    }
    if (m.name() != "deepseek-v3") continue;
    saw_deepseek = true;
    EXPECT_NEAR(models.sizes(i).total_params() / 671e9, 1.0, 0.01);
    EXPECT_EQ(m.moe().num_experts(), 256);
    EXPECT_EQ(m.moe().experts_per_token(), 8);
    EXPECT_EQ(m.moe().dense_layers(), 3);
    EXPECT_EQ(m.mla().kv_lora_rank(), 512);
    EXPECT_EQ(m.mla().qk_rope_head_dim(), 64);
  }
  EXPECT_TRUE(saw_deepseek);
}

// ---------------------------------------------------------------------------------------------
// Malformed requests: the right code, a message naming the field, no crash, nothing written.

struct BadRequest {
  std::string name;
  std::function<grpc::Status(pb::Scalecast::Stub*)> call;
  grpc::StatusCode code;
  std::string field;
};

pb::Measurement GoodMeasurement() {
  pb::Measurement m;
  pb::Scenario* s = m.mutable_scenario();
  s->mutable_workload()->mutable_model()->set_name("llama2-7b");
  s->mutable_workload()->set_seq_len(4096);
  s->mutable_workload()->set_global_batch(256);
  s->mutable_cluster()->set_accelerator("h100-sxm-80gb");
  s->mutable_cluster()->set_num_gpus(64);
  m.set_tokens_per_s_per_gpu(9000);
  return m;
}

grpc::Status CallPredict(pb::Scalecast::Stub* stub, const pb::Scenario& s) {
  grpc::ClientContext ctx;
  pb::PredictRequest req;
  *req.mutable_scenario() = s;
  pb::PredictResponse resp;
  return stub->Predict(&ctx, req, &resp);
}

grpc::Status CallRecord(pb::Scalecast::Stub* stub, std::vector<pb::Measurement> ms) {
  grpc::ClientContext ctx;
  pb::RecordMeasurementsRequest req;
  for (auto& m : ms) *req.add_measurements() = m;
  pb::RecordMeasurementsResponse resp;
  return stub->RecordMeasurements(&ctx, req, &resp);
}

grpc::Status CallSweep(pb::Scalecast::Stub* stub, const pb::SweepRequest& req) {
  grpc::ClientContext ctx;
  auto reader = stub->Sweep(&ctx, req);
  pb::SweepResponse msg;
  int results = 0;
  while (reader->Read(&msg)) results += msg.has_result();
  grpc::Status s = reader->Finish();
  if (!s.ok() && results > 0) return grpc::Status(grpc::StatusCode::INTERNAL, "partial results");
  return s;
}

template <typename F>
pb::Scenario With(F f) {
  pb::Scenario s;
  s.mutable_workload()->mutable_model()->set_name("llama2-70b");
  s.mutable_workload()->set_seq_len(4096);
  s.mutable_workload()->set_global_batch(1024);
  s.mutable_cluster()->set_accelerator("h100-sxm-80gb");
  s.mutable_cluster()->set_num_gpus(256);
  f(&s);
  return s;
}

// A framework the table does not know is answered as plain PyTorch, with the warning; the echo
// keeps the name, so resending it predicts the same and warns again.
TEST_F(ServerTest, AnUnknownFrameworkIsAnsweredAsPlainPytorchWithAWarning) {
  auto predict = [&](const pb::Scenario& s, pb::PredictResponse* resp) {
    grpc::ClientContext ctx;
    pb::PredictRequest req;
    *req.mutable_scenario() = s;
    return stub_->Predict(&ctx, req, resp);
  };
  pb::PredictResponse unknown, echoed;
  grpc::Status st =
      predict(With([](pb::Scenario* s) { s->set_framework("tensorflow-mesh"); }), &unknown);
  ASSERT_TRUE(st.ok()) << st.error_message();
  bool warned = false;
  for (const std::string& w : unknown.prediction().warnings()) {
    warned |= absl::StrContains(w,
                                "scenario.framework: 'tensorflow-mesh' is not in the framework "
                                "table (known: megatron, ");
  }
  EXPECT_TRUE(warned);
  EXPECT_EQ(unknown.scenario().framework(), "tensorflow-mesh");
  st = predict(unknown.scenario(), &echoed);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(echoed.prediction().tokens_per_s(), unknown.prediction().tokens_per_s());
  EXPECT_EQ(echoed.prediction().warnings_size(), unknown.prediction().warnings_size());
  // The same prediction as naming no framework.
  pb::PredictResponse generic;
  st = predict(With([](pb::Scenario*) {}), &generic);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(generic.prediction().tokens_per_s(), unknown.prediction().tokens_per_s());
}

TEST_F(ServerTest, MalformedRequestsAreRefusedWithTheFieldAndWriteNothing) {
  using C = grpc::StatusCode;
  auto predict = [](std::function<void(pb::Scenario*)> f) {
    return [f](pb::Scalecast::Stub* stub) { return CallPredict(stub, With(f)); };
  };
  auto record = [](std::function<void(std::vector<pb::Measurement>*)> f) {
    return [f](pb::Scalecast::Stub* stub) {
      std::vector<pb::Measurement> ms = {GoodMeasurement(), GoodMeasurement(), GoodMeasurement()};
      f(&ms);
      return CallRecord(stub, ms);
    };
  };
  auto sweep = [](std::function<void(pb::SweepRequest*)> f) {
    return [f](pb::Scalecast::Stub* stub) {
      pb::SweepRequest req;
      *req.mutable_base() = With([](pb::Scenario*) {});
      f(&req);
      return CallSweep(stub, req);
    };
  };
  const std::vector<BadRequest> cases = {
      {"empty scenario", predict([](pb::Scenario* s) { s->Clear(); }), C::INVALID_ARGUMENT,
       "scenario.workload.model"},
      {"zero seq_len", predict([](pb::Scenario* s) { s->mutable_workload()->set_seq_len(0); }),
       C::INVALID_ARGUMENT, "scenario.workload.seq_len"},
      {"negative seq_len", predict([](pb::Scenario* s) { s->mutable_workload()->set_seq_len(-5); }),
       C::INVALID_ARGUMENT, "scenario.workload.seq_len"},
      {"absurd seq_len",
       predict([](pb::Scenario* s) { s->mutable_workload()->set_seq_len(1 << 30); }),
       C::INVALID_ARGUMENT, "scenario.workload.seq_len"},
      {"zero batch", predict([](pb::Scenario* s) { s->mutable_workload()->set_global_batch(0); }),
       C::INVALID_ARGUMENT, "scenario.workload.global_batch"},
      {"absurd batch",
       predict([](pb::Scenario* s) { s->mutable_workload()->set_global_batch(int64_t{1} << 50); }),
       C::INVALID_ARGUMENT, "scenario.workload.global_batch"},
      {"unknown preset",
       predict([](pb::Scenario* s) { s->mutable_workload()->mutable_model()->set_name("gpt-9"); }),
       C::NOT_FOUND, "scenario.workload.model.name"},
      {"negative layers", predict([](pb::Scenario* s) {
         auto* m = s->mutable_workload()->mutable_model();
         m->set_layers(-1);
         m->set_hidden(4096);
         m->set_heads(32);
         m->set_ffn_hidden(11008);
         m->set_vocab(32000);
       }),
       C::INVALID_ARGUMENT, "scenario.workload.model.layers"},
      {"heads not dividing hidden", predict([](pb::Scenario* s) {
         auto* m = s->mutable_workload()->mutable_model();
         m->set_name("my-shape");  // a label: a full shape, not a preset with changes
         m->set_layers(4);
         m->set_hidden(1000);
         m->set_heads(3);
         m->set_ffn_hidden(4000);
         m->set_vocab(100);
       }),
       C::INVALID_ARGUMENT, "scenario.workload.model.heads"},
      {"bad mlp enum", predict([](pb::Scenario* s) {
         s->mutable_workload()->mutable_model()->set_mlp(static_cast<pb::Mlp>(9));
       }),
       C::INVALID_ARGUMENT, "scenario.workload.model.mlp"},
      {"bad precision enum", predict([](pb::Scenario* s) {
         s->mutable_workload()->set_precision(static_cast<pb::Precision>(42));
       }),
       C::INVALID_ARGUMENT, "scenario.workload.precision"},
      {"fp8 on a100", predict([](pb::Scenario* s) {
         s->mutable_cluster()->set_accelerator("a100-sxm-80gb");
         s->mutable_workload()->set_precision(pb::PRECISION_FP8);
       }),
       C::INVALID_ARGUMENT, "scenario.workload.precision"},
      {"no accelerator", predict([](pb::Scenario* s) { s->mutable_cluster()->clear_accelerator(); }),
       C::INVALID_ARGUMENT, "scenario.cluster.accelerator"},
      {"unknown accelerator",
       predict([](pb::Scenario* s) { s->mutable_cluster()->set_accelerator("tpu-v9"); }),
       C::NOT_FOUND, "scenario.cluster.accelerator"},
      {"zero gpus", predict([](pb::Scenario* s) { s->mutable_cluster()->set_num_gpus(0); }),
       C::INVALID_ARGUMENT, "scenario.cluster.num_gpus"},
      {"negative gpus", predict([](pb::Scenario* s) { s->mutable_cluster()->set_num_gpus(-8); }),
       C::INVALID_ARGUMENT, "scenario.cluster.num_gpus"},
      {"absurd gpus",
       predict([](pb::Scenario* s) { s->mutable_cluster()->set_num_gpus(2000000000); }),
       C::INVALID_ARGUMENT, "scenario.cluster.num_gpus"},
      {"nan network", predict([](pb::Scenario* s) {
         s->mutable_cluster()->set_inter_node_gbps_per_gpu(std::nan(""));
       }),
       C::INVALID_ARGUMENT, "scenario.cluster.inter_node_gbps_per_gpu"},
      // Issue 27: predicted NaN tokens/s with OK.
      {"vanishing network", predict([](pb::Scenario* s) {
         s->mutable_cluster()->set_inter_node_gbps_per_gpu(1e-300);
       }),
       C::INVALID_ARGUMENT, "scenario.cluster.inter_node_gbps_per_gpu"},
      {"negative gpus per node",
       predict([](pb::Scenario* s) { s->mutable_cluster()->set_gpus_per_node(-1); }),
       C::INVALID_ARGUMENT, "scenario.cluster.gpus_per_node"},
      {"tp not dividing heads", predict([](pb::Scenario* s) { s->mutable_parallelism()->set_tp(3); }),
       C::INVALID_ARGUMENT, "scenario.parallelism.tp"},
      {"negative tp", predict([](pb::Scenario* s) { s->mutable_parallelism()->set_tp(-2); }),
       C::INVALID_ARGUMENT, "scenario.parallelism.tp"},
      {"gpus not divisible by layout", predict([](pb::Scenario* s) {
         s->mutable_parallelism()->set_tp(8);
         s->mutable_parallelism()->set_pp(4);
         s->mutable_cluster()->set_num_gpus(48);
       }),
       C::INVALID_ARGUMENT, "scenario.parallelism"},
      {"dp inconsistent", predict([](pb::Scenario* s) {
         auto* p = s->mutable_parallelism();
         p->set_tp(8);
         p->set_pp(1);
         p->set_cp(1);
         p->set_dp(7);
       }),
       C::INVALID_ARGUMENT, "scenario.parallelism.dp"},
      {"pp beyond layers", predict([](pb::Scenario* s) { s->mutable_parallelism()->set_pp(128); }),
       C::INVALID_ARGUMENT, "scenario.parallelism.pp"},
      {"vpp without pp", predict([](pb::Scenario* s) {
         s->mutable_parallelism()->set_pp(1);
         s->mutable_parallelism()->set_vpp(2);
       }),
       C::INVALID_ARGUMENT, "scenario.parallelism.vpp"},
      {"bad sharding enum", predict([](pb::Scenario* s) {
         s->mutable_parallelism()->set_sharding(static_cast<pb::Sharding>(77));
       }),
       C::INVALID_ARGUMENT, "scenario.parallelism.sharding"},
      {"micro batch not dividing", predict([](pb::Scenario* s) {
         auto* p = s->mutable_parallelism();
         p->set_tp(8);
         p->set_pp(1);
         p->set_cp(1);
         p->set_micro_batch(3);
       }),
       C::INVALID_ARGUMENT, "scenario.parallelism.micro_batch"},
      {"record unknown framework", record([](std::vector<pb::Measurement>* ms) {
         (*ms)[1].mutable_scenario()->set_framework("tensorflow-mesh");
       }),
       C::INVALID_ARGUMENT, "measurements[1].scenario.framework: unknown framework"},
      {"unknown profile", predict([](pb::Scenario* s) { s->set_calibration("no-such-profile"); }),
       C::NOT_FOUND, "scenario.calibration"},
      {"compare empty",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::CompareResponse resp;
         return stub->Compare(&ctx, pb::CompareRequest(), &resp);
       },
       C::INVALID_ARGUMENT, "scenarios"},
      {"compare bad second",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::CompareRequest req;
         *req.add_scenarios() = With([](pb::Scenario*) {});
         *req.add_scenarios() = With([](pb::Scenario* s) { s->mutable_parallelism()->set_tp(5); });
         pb::CompareResponse resp;
         return stub->Compare(&ctx, req, &resp);
       },
       C::INVALID_ARGUMENT, "scenarios[1].parallelism.tp"},
      {"record empty batch", record([](std::vector<pb::Measurement>* ms) { ms->clear(); }),
       C::INVALID_ARGUMENT, "measurements"},
      {"record bad third row", record([](std::vector<pb::Measurement>* ms) {
         (*ms)[2].set_tokens_per_s_per_gpu(-1);
       }),
       C::INVALID_ARGUMENT, "measurements[2].tokens_per_s_per_gpu"},
      {"record bad scenario", record([](std::vector<pb::Measurement>* ms) {
         (*ms)[1].mutable_scenario()->mutable_cluster()->set_accelerator("h900");
       }),
       C::NOT_FOUND, "measurements[1].scenario.cluster.accelerator"},
      {"record with id", record([](std::vector<pb::Measurement>* ms) { (*ms)[0].set_id("mine"); }),
       C::INVALID_ARGUMENT, "measurements[0].id"},
      {"list bad page token",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::ListMeasurementsRequest req;
         req.set_page_token("not-a-token");
         pb::ListMeasurementsResponse resp;
         return stub->ListMeasurements(&ctx, req, &resp);
       },
       C::INVALID_ARGUMENT, "page_token"},
      {"list negative page size",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::ListMeasurementsRequest req;
         req.set_page_size(-1);
         pb::ListMeasurementsResponse resp;
         return stub->ListMeasurements(&ctx, req, &resp);
       },
       C::INVALID_ARGUMENT, "page_size"},
      {"delete unknown",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::DeleteMeasurementRequest req;
         req.set_id("m-0000000000000000");
         pb::DeleteMeasurementResponse resp;
         return stub->DeleteMeasurement(&ctx, req, &resp);
       },
       C::NOT_FOUND, "id"},
      {"delete empty id",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::DeleteMeasurementResponse resp;
         return stub->DeleteMeasurement(&ctx, pb::DeleteMeasurementRequest(), &resp);
       },
       C::INVALID_ARGUMENT, "id"},
      {"sweep oversized", sweep([](pb::SweepRequest* r) { r->mutable_limits()->set_max_layouts(10); }),
       C::RESOURCE_EXHAUSTED, "limit"},
      {"sweep too many counts", sweep([](pb::SweepRequest* r) {
         for (int i = 1; i <= 100; ++i) r->add_gpu_counts(8 * i);
       }),
       C::RESOURCE_EXHAUSTED, "gpu_counts"},
      {"sweep repeated count", sweep([](pb::SweepRequest* r) {
         r->add_gpu_counts(64);
         r->add_gpu_counts(64);
       }),
       C::INVALID_ARGUMENT, "gpu_counts[1]"},
      {"sweep zero count", sweep([](pb::SweepRequest* r) { r->add_gpu_counts(0); }),
       C::INVALID_ARGUMENT, "gpu_counts[0]"},
      {"sweep negative top_k", sweep([](pb::SweepRequest* r) { r->set_top_k(-1); }),
       C::INVALID_ARGUMENT, "top_k"},
      {"sweep bad base", sweep([](pb::SweepRequest* r) {
         r->mutable_base()->mutable_workload()->set_seq_len(0);
       }),
       C::INVALID_ARGUMENT, "base.workload.seq_len"},
      {"sweep bad objective", sweep([](pb::SweepRequest* r) {
         r->set_objective(static_cast<pb::Objective>(12));
       }),
       C::INVALID_ARGUMENT, "objective"},
      {"validate unknown profile",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::ValidateRequest req;
         req.set_calibration("nope");
         pb::ValidateResponse resp;
         return stub->Validate(&ctx, req, &resp);
       },
       C::NOT_FOUND, "calibration"},
      {"calibrate no name",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::CalibrateResponse resp;
         return stub->Calibrate(&ctx, pb::CalibrateRequest(), &resp);
       },
       C::INVALID_ARGUMENT, "name"},
      {"calibrate default",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::CalibrateRequest req;
         req.set_name("default");
         pb::CalibrateResponse resp;
         return stub->Calibrate(&ctx, req, &resp);
       },
       C::INVALID_ARGUMENT, "name"},
      {"calibrate on nothing",
       [](pb::Scalecast::Stub* stub) {
         grpc::ClientContext ctx;
         pb::CalibrateRequest req;
         req.set_name("empty");
         req.mutable_filter()->set_framework("maxtext");
         pb::CalibrateResponse resp;
         return stub->Calibrate(&ctx, req, &resp);
       },
       C::FAILED_PRECONDITION, "filter"},
  };
  ASSERT_GE(cases.size(), 30u);
  // One good row stored first: nothing below may change it.
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record({GoodMeasurement()}, &rec).ok());
  for (const BadRequest& c : cases) {
    grpc::Status s = c.call(stub_.get());
    EXPECT_EQ(s.error_code(), c.code) << c.name << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(c.field), std::string::npos)
        << c.name << ": '" << s.error_message() << "' does not name " << c.field;
  }
  EXPECT_EQ(Count(), 1);
  pb::PredictResponse ok;
  EXPECT_TRUE(Predict(Full("llama2-7b", 64), &ok).ok());  // still serving
}

// A small mixture-of-experts shape every MoE case below starts from: valid as it is.
void MoeShape(pb::Scenario* s) {
  pb::ModelSpec* m = s->mutable_workload()->mutable_model();
  m->set_name("tiny-moe");
  m->set_layers(4);
  m->set_hidden(1024);
  m->set_heads(8);
  m->set_vocab(1000);
  m->mutable_moe()->set_num_experts(8);
  m->mutable_moe()->set_experts_per_token(2);
  m->mutable_moe()->set_expert_ffn_hidden(512);
}

TEST_F(ServerTest, MoeFieldsAreRefusedWithTheirPathAndWriteNothing) {
  using C = grpc::StatusCode;
  constexpr int kMax = std::numeric_limits<int32_t>::max();
  struct Case {
    std::string name;
    std::function<void(pb::ModelSpec*, pb::Parallelism*)> edit;
    std::string message;  // a substring of the error: the field path and why
  };
  const std::vector<Case> cases = {
      {"top-k above the experts",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_experts_per_token(9); },
       "scenario.workload.model.moe.experts_per_token: 9 is more than num_experts 8"},
      {"top-k zero",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_experts_per_token(0); },
       "scenario.workload.model.moe.experts_per_token: 0 is less than 1"},
      {"experts INT_MAX",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_num_experts(kMax); },
       "scenario.workload.model.moe.num_experts: 2147483647 is out of range [0, 4096]"},
      {"experts negative",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_num_experts(-8); },
       "scenario.workload.model.moe.num_experts: -8 is out of range"},
      {"expert ffn missing",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_expert_ffn_hidden(0); },
       "scenario.workload.model.moe.expert_ffn_hidden: 0 is out of range"},
      {"capacity NaN",
       [](pb::ModelSpec* m, pb::Parallelism*) {
         m->mutable_moe()->set_capacity_factor(std::nan(""));
       },
       "scenario.workload.model.moe.capacity_factor: not a number"},
      {"capacity infinite",
       [](pb::ModelSpec* m, pb::Parallelism*) {
         m->mutable_moe()->set_capacity_factor(std::numeric_limits<double>::infinity());
       },
       "scenario.workload.model.moe.capacity_factor"},
      {"capacity below one",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_capacity_factor(0.5); },
       "scenario.workload.model.moe.capacity_factor: 0.5 is neither 0 (dropless) nor in [1, 16]"},
      {"every layer dense",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_dense_layers(4); },
       "scenario.workload.model.moe.dense_layers: 4 is out of range [0, layers 4)"},
      {"dense layers without their width",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_moe()->set_dense_layers(1); },
       "scenario.workload.model.ffn_hidden: is required"},
      {"MoE fields on a dense model",
       [](pb::ModelSpec* m, pb::Parallelism*) {
         m->mutable_moe()->set_num_experts(0);
         m->set_ffn_hidden(4096);
       },
       "scenario.workload.model.moe.experts_per_token: 2 is set but moe.num_experts is 0"},
      {"expert biases on a dense model",
       [](pb::ModelSpec* m, pb::Parallelism*) {
         pb::MoeSpec* e = m->mutable_moe();
         *e = pb::MoeSpec();
         e->set_expert_bias(true);
         m->set_ffn_hidden(4096);
       },
       "scenario.workload.model.moe.expert_bias: is set but moe.num_experts is 0 (a dense model)"},
      {"MTP modules out of range",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->set_mtp_layers(-1); },
       "scenario.workload.model.mtp_layers: -1 is out of range [0, 16]"},
      {"MLA rank INT_MAX",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_mla()->set_kv_lora_rank(kMax); },
       "scenario.workload.model.mla.kv_lora_rank: 2147483647 is out of range"},
      {"MLA without value width",
       [](pb::ModelSpec* m, pb::Parallelism*) {
         m->mutable_mla()->set_kv_lora_rank(512);
         m->mutable_mla()->set_qk_nope_head_dim(128);
       },
       "scenario.workload.model.mla.v_head_dim: 0 is out of range [1, 4096]"},
      {"MLA dims without a rank",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->mutable_mla()->set_v_head_dim(128); },
       "scenario.workload.model.mla.v_head_dim: 128 is set but mla.kv_lora_rank is 0"},
      {"head_dim negative", [](pb::ModelSpec* m, pb::Parallelism*) { m->set_head_dim(-64); },
       "scenario.workload.model.head_dim: -64 is out of range [0, 4096]"},
      {"head_dim INT_MAX", [](pb::ModelSpec* m, pb::Parallelism*) { m->set_head_dim(kMax); },
       "scenario.workload.model.head_dim"},
      {"window negative", [](pb::ModelSpec* m, pb::Parallelism*) { m->set_attention_window(-1); },
       "scenario.workload.model.attention_window: -1 is out of range"},
      {"full every without a window",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->set_full_attention_every(2); },
       "scenario.workload.model.full_attention_every: 2 is set but attention_window is 0"},
      {"pattern bad character",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->set_layer_pattern("E*Ex"); },
       "scenario.workload.model.layer_pattern: character 4 is 'x'"},
      {"pattern wrong length",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->set_layer_pattern("E*E"); },
       "scenario.workload.model.layer_pattern: 3 characters, but layers is 4"},
      {"pattern of a megabyte",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->set_layer_pattern(std::string(1 << 20, 'E')); },
       "scenario.workload.model.layer_pattern: 1048576 bytes, over the limit of 4096"},
      {"pattern Mamba without its shape",
       [](pb::ModelSpec* m, pb::Parallelism*) { m->set_layer_pattern("M*ME"); },
       "scenario.workload.model.mamba_heads: 0 is out of range"},
      {"pattern MoE layers on a dense model",
       [](pb::ModelSpec* m, pb::Parallelism*) {
         m->clear_moe();
         m->set_layer_pattern("E*E*");
       },
       "scenario.workload.model.layer_pattern: has 'E' (MoE) layers but moe.num_experts is 0"},
      {"ep negative", [](pb::ModelSpec*, pb::Parallelism* p) { p->set_ep(-2); },
       "scenario.parallelism.ep: -2 is out of range [0, 4096]"},
      {"ep INT_MAX", [](pb::ModelSpec*, pb::Parallelism* p) { p->set_ep(kMax); },
       "scenario.parallelism.ep: 2147483647 is out of range"},
      {"etp INT_MAX", [](pb::ModelSpec*, pb::Parallelism* p) { p->set_etp(kMax); },
       "scenario.parallelism.etp: 2147483647 is out of range"},
      {"recompute module unknown",
       [](pb::ModelSpec*, pb::Parallelism* p) {
         p->add_recompute_modules("moe_act");
         p->add_recompute_modules("attention");
       },
       "scenario.parallelism.recompute_modules[1]: unknown module 'attention'"},
      {"recompute modules under full recompute",
       [](pb::ModelSpec*, pb::Parallelism* p) {
         p->add_recompute_modules("moe_act");
         p->set_recompute(pb::RECOMPUTE_FULL);
       },
       "scenario.parallelism.recompute_modules: need recompute selective, not full"},
  };
  for (const Case& c : cases) {
    pb::Scenario s = With([&](pb::Scenario* sc) {
      MoeShape(sc);
      c.edit(sc->mutable_workload()->mutable_model(), sc->mutable_parallelism());
    });
    grpc::Status st = CallPredict(stub_.get(), s);
    EXPECT_EQ(st.error_code(), C::INVALID_ARGUMENT) << c.name << ": " << st.error_message();
    EXPECT_NE(st.error_message().find(c.message), std::string::npos)
        << c.name << ": '" << st.error_message() << "'";
    // The same scenario is refused as a measurement, and nothing is stored.
    pb::Measurement m = GoodMeasurement();
    *m.mutable_scenario() = s;
    st = CallRecord(stub_.get(), {m});
    EXPECT_EQ(st.error_code(), C::INVALID_ARGUMENT) << c.name << ": " << st.error_message();
    EXPECT_NE(st.error_message().find("measurements[0]." + c.message), std::string::npos)
        << c.name << ": '" << st.error_message() << "'";
  }
  EXPECT_EQ(Count(), 0);
  pb::PredictResponse ok;
  EXPECT_TRUE(Predict(Full("llama2-7b", 64), &ok).ok());  // still serving
}

TEST_F(ServerTest, MoeScenarioRoundTripsThroughTheStore) {
  pb::Measurement m = GoodMeasurement();
  pb::Scenario* s = m.mutable_scenario();
  s->mutable_workload()->mutable_model()->set_name("deepseek-v3");
  s->mutable_workload()->mutable_model()->mutable_moe()->set_capacity_factor(1.25);
  s->mutable_cluster()->set_accelerator("gb200-nvl72");
  s->mutable_cluster()->set_num_gpus(256);
  s->mutable_parallelism()->set_ep(64);
  s->mutable_parallelism()->set_etp(1);
  pb::Measurement hybrid = GoodMeasurement();
  pb::ModelSpec* h = hybrid.mutable_scenario()->mutable_workload()->mutable_model();
  *h = pb::ModelSpec();
  h->set_name("my-hybrid");
  h->set_layers(6);
  h->set_hidden(2688);
  h->set_heads(32);
  h->set_kv_heads(2);
  h->set_head_dim(128);
  h->set_vocab(131072);
  h->set_mlp(pb::MLP_PLAIN);
  h->set_layer_pattern("ME*EM-");
  h->set_ffn_hidden(4096);
  h->set_mamba_heads(64);
  h->set_mamba_head_dim(64);
  h->set_mamba_state(128);
  h->set_mamba_groups(8);
  h->set_attention_window(4096);
  h->mutable_moe()->set_num_experts(128);
  h->mutable_moe()->set_experts_per_token(6);
  h->mutable_moe()->set_expert_ffn_hidden(1856);
  h->mutable_moe()->set_shared_experts(1);
  h->mutable_moe()->set_shared_ffn_hidden(3712);
  pb::RecordMeasurementsResponse rec;
  grpc::Status st = Record({m, hybrid}, &rec);
  ASSERT_TRUE(st.ok()) << st.error_message();
  grpc::ClientContext ctx;
  pb::ListMeasurementsResponse list;
  ASSERT_TRUE(stub_->ListMeasurements(&ctx, pb::ListMeasurementsRequest(), &list).ok());
  ASSERT_EQ(list.measurements_size(), 2);
  for (const pb::Measurement& got : list.measurements()) {
    const pb::Scenario& want = got.scenario().workload().model().name() == "deepseek-v3"
                                   ? m.scenario()
                                   : hybrid.scenario();
    // Field for field what was sent: the preset reference stays a reference, the custom
    // hybrid shape keeps every field.
    EXPECT_EQ(got.scenario().workload().model().SerializeAsString(),
              want.workload().model().SerializeAsString())
        << got.scenario().workload().model().DebugString();
    EXPECT_EQ(got.scenario().parallelism().ep(), want.parallelism().ep());
    EXPECT_EQ(got.scenario().parallelism().etp(), want.parallelism().etp());
  }
}

TEST_F(ServerTest, WritesNeedTheTokenWhenOneIsConfigured) {
  server_->Shutdown();
  StartServer("s3cret-token");
  pb::RecordMeasurementsResponse rec;
  grpc::Status s = Record({GoodMeasurement()}, &rec);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("authorization"), std::string::npos);
  EXPECT_EQ(Record({GoodMeasurement()}, &rec, "wrong").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Record({GoodMeasurement()}, &rec, "s3cret-token").ok());
  {
    grpc::ClientContext ctx;
    pb::DeleteMeasurementRequest req;
    req.set_id(rec.ids(0));
    pb::DeleteMeasurementResponse resp;
    EXPECT_EQ(stub_->DeleteMeasurement(&ctx, req, &resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    pb::CalibrateRequest req;
    req.set_name("x");
    pb::CalibrateResponse resp;
    EXPECT_EQ(stub_->Calibrate(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Reads stay open.
  pb::PredictResponse p;
  EXPECT_TRUE(Predict(Full("llama2-7b", 64), &p).ok());
  EXPECT_EQ(Count(), 1);
}

TEST_F(ServerTest, RegisteredAcceleratorsAreUsableWhereverAnIdIsAndBadSpecsStoreNothing) {
  server_->Shutdown();
  StartServer("tok");
  auto reg = [&](const pb::AcceleratorSpec& spec, const std::string& token, bool replace,
                 pb::RegisterAcceleratorResponse* resp) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    pb::RegisterAcceleratorRequest req;
    *req.mutable_spec() = spec;
    req.set_replace(replace);
    return stub_->RegisterAccelerator(&ctx, req, resp);
  };
  auto listed = [&](const std::string& id) {
    grpc::ClientContext ctx;
    pb::ListAcceleratorsResponse resp;
    EXPECT_TRUE(stub_->ListAccelerators(&ctx, pb::ListAcceleratorsRequest(), &resp).ok());
    for (const pb::Accelerator& a : resp.accelerators()) {
      if (a.id() == id) return a.origin();
    }
    return std::string();
  };
  pb::AcceleratorSpec spec;
  spec.set_id("b200-next");
  spec.set_like("b200-sxm-180gb");
  spec.set_peak_tflops_bf16(3000);
  spec.set_hbm_gb(288);
  pb::RegisterAcceleratorResponse resp;
  EXPECT_EQ(reg(spec, "", false, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Bad specs: the field is named and nothing is stored.
  for (const auto& [mutate, field] :
       std::vector<std::pair<std::function<void(pb::AcceleratorSpec*)>, const char*>>{
           {[](pb::AcceleratorSpec* s) { s->set_hbm_gb(-1); }, "spec.hbm_gb"},
           {[](pb::AcceleratorSpec* s) { s->set_like("nope-gpu"); }, "spec.like"},
           {[](pb::AcceleratorSpec* s) { s->set_id("h100-sxm-80gb"); }, "spec.id"},
           {[](pb::AcceleratorSpec* s) { s->clear_id(); }, "spec.id"},
           {[](pb::AcceleratorSpec* s) { s->set_idle_watts(5000); }, "spec.idle_watts"},
           {[](pb::AcceleratorSpec* s) { s->set_tensor_flops_per_exp(1e9); },
            "spec.tensor_flops_per_exp"},
           {[](pb::AcceleratorSpec* s) { s->set_tdp_watts(std::nan("")); }, "spec.tdp_watts"}}) {
    pb::AcceleratorSpec bad = spec;
    mutate(&bad);
    const grpc::Status st = reg(bad, "tok", false, &resp);
    EXPECT_FALSE(st.ok()) << field;
    EXPECT_NE(st.error_message().find(field), std::string::npos) << st.error_message();
  }
  EXPECT_EQ(listed("b200-next"), "");
  ASSERT_TRUE(reg(spec, "tok", false, &resp).ok());
  EXPECT_EQ(resp.accelerator().origin(), "registered");
  EXPECT_EQ(resp.accelerator().like(), "b200-sxm-180gb");
  EXPECT_EQ(resp.accelerator().family(), "b200");
  EXPECT_NE(resp.accelerator().like_basis().find("efficiencies of b200-sxm-180gb"),
            std::string::npos);
  EXPECT_EQ(reg(spec, "tok", false, &resp).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(listed("b200-next"), "registered");
  EXPECT_EQ(listed("h100-sxm-80gb"), "catalog");
  // Predict, Compare and Sweep take the id; the band says the efficiencies are borrowed.
  pb::Scenario s = Preset("llama2-70b", 64);
  s.mutable_cluster()->set_accelerator("b200-next");
  pb::PredictResponse p;
  const grpc::Status pst = Predict(s, &p);
  ASSERT_TRUE(pst.ok()) << pst.error_message();
  EXPECT_NE(p.prediction().uncertainty().basis().find("b200-next is described"), std::string::npos)
      << p.prediction().uncertainty().basis();
  EXPECT_EQ(p.scenario().cluster().accelerator(), "b200-next");
  {
    grpc::ClientContext ctx;
    pb::CompareRequest req;
    *req.add_scenarios() = Preset("llama2-70b", 64);
    req.mutable_scenarios(0)->mutable_cluster()->set_accelerator("b200-sxm-180gb");
    *req.add_scenarios() = s;
    pb::CompareResponse cr;
    const grpc::Status st = stub_->Compare(&ctx, req, &cr);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_GT(cr.deltas(1).throughput_ratio(), 1.0);  // more bf16 TFLOP/s
  }
  {
    grpc::ClientContext ctx;
    pb::SweepRequest req;
    *req.mutable_base() = s;
    req.add_gpu_counts(64);
    auto reader = stub_->Sweep(&ctx, req);
    pb::SweepResponse msg;
    bool result = false;
    while (reader->Read(&msg)) result = result || msg.has_result();
    const grpc::Status st = reader->Finish();
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_TRUE(result);
  }
  // Plan takes the registered id as a candidate, and a candidate's own spec over it.
  {
    pb::PlanRequest req;
    *req.mutable_workload() = s.workload();
    req.set_tokens(1e12);
    pb::PlanCandidate* c = req.add_candidates();
    c->set_accelerator("b200-next");
    c->set_price_per_gpu_hour(5);
    c->add_gpu_counts(64);
    pb::PlanCandidate* d = req.add_candidates();
    *d = req.candidates(0);
    d->mutable_accelerator_spec()->set_id("b200-next-1600");
    d->mutable_accelerator_spec()->set_inter_node_gbps_per_gpu(1600);
    grpc::ClientContext ctx;
    auto reader = stub_->Plan(&ctx, req);
    pb::PlanResponse msg, last;
    while (reader->Read(&msg)) {
      if (msg.options_size() > 0) last = msg;
    }
    const grpc::Status st = reader->Finish();
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(last.options_size(), 2);
    std::map<std::string, double> tps;
    for (const pb::PlanOption& o : last.options())
      tps[o.accelerator()] = o.prediction().tokens_per_s();
    ASSERT_EQ(tps.count("b200-next"), 1u);
    ASSERT_EQ(tps.count("b200-next-1600"), 1u);
    EXPECT_GT(tps["b200-next"], 0);
    EXPECT_GE(tps["b200-next-1600"], tps["b200-next"] * (1 - 1e-12));
  }
  // A request's own spec over the registered part, and the headroom echoed.
  s.mutable_cluster()->mutable_accelerator_spec()->set_inter_node_gbps_per_gpu(1600);
  ASSERT_TRUE(Predict(s, &p).ok());
  EXPECT_EQ(p.scenario().cluster().accelerator_spec().inter_node_gbps_per_gpu(), 1600);
  EXPECT_EQ(p.scenario().cluster().hbm_headroom(), kDefaultHbmHeadroom);
  // Deleted: gone, and a second delete is NOT_FOUND.
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer tok");
    pb::DeleteAcceleratorRequest req;
    req.set_id("b200-next");
    pb::DeleteAcceleratorResponse dr;
    ASSERT_TRUE(stub_->DeleteAccelerator(&ctx, req, &dr).ok());
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer tok");
    pb::DeleteAcceleratorRequest req;
    req.set_id("b200-next");
    pb::DeleteAcceleratorResponse dr;
    EXPECT_EQ(stub_->DeleteAccelerator(&ctx, req, &dr).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  s.mutable_cluster()->clear_accelerator_spec();
  EXPECT_EQ(Predict(s, &p).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServerTest, ProfilesListReplaceAndDeleteWithTheToken) {
  server_->Shutdown();
  StartServer("s3cret-token");
  auto with_token = [](grpc::ClientContext* ctx) {
    ctx->AddMetadata("authorization", "Bearer s3cret-token");
  };
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(CalibrationSet(), &rec, "s3cret-token").ok());
  auto calibrate = [&](bool replace, bool token) {
    grpc::ClientContext ctx;
    if (token) with_token(&ctx);
    pb::CalibrateRequest req;
    req.set_name("a100-40");
    req.mutable_filter()->set_accelerator("a100-sxm-40gb");
    req.set_replace(replace);
    pb::CalibrateResponse resp;
    return stub_->Calibrate(&ctx, req, &resp);
  };
  auto list = [&]() {
    grpc::ClientContext ctx;
    pb::ListProfilesResponse resp;
    EXPECT_TRUE(stub_->ListProfiles(&ctx, pb::ListProfilesRequest(), &resp).ok());
    return resp;
  };
  auto remove = [&](const std::string& name, bool token) {
    grpc::ClientContext ctx;
    if (token) with_token(&ctx);
    pb::DeleteProfileRequest req;
    req.set_name(name);
    pb::DeleteProfileResponse resp;
    return stub_->DeleteProfile(&ctx, req, &resp);
  };

  EXPECT_EQ(list().profiles_size(), 0);
  grpc::Status s = calibrate(false, true);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The name is taken: without replace that is ALREADY_EXISTS, naming the field.
  s = calibrate(false, true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(s.error_message().find("name: profile 'a100-40' already exists"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(calibrate(true, false).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  s = calibrate(true, true);
  ASSERT_TRUE(s.ok()) << s.error_message();

  pb::ListProfilesResponse all = list();
  ASSERT_EQ(all.profiles_size(), 1);
  EXPECT_EQ(all.profiles(0).name(), "a100-40");
  EXPECT_EQ(all.profiles(0).fitted_count(), 78);
  EXPECT_GT(all.profiles(0).mape_before(), 0);
  EXPECT_GT(all.profiles(0).mape_after(), 0);
  EXPECT_GT(all.profiles(0).created_at().seconds(), 1700000000);
  EXPECT_GT(all.profiles(0).parameters().count("stack.efficiency"), 0u);
  EXPECT_NE(all.profiles(0).fitted_on().find("a100-sxm-40gb"), std::string::npos);

  // Deleting is a write: the token is needed.
  EXPECT_EQ(remove("a100-40", false).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list().profiles_size(), 1);
  s = remove("default", true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(remove("", true).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  s = remove("a100-40", true);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(list().profiles_size(), 0);
  s = remove("a100-40", true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "name: profile 'a100-40' not found");
  // Predict no longer finds it (the server's cache of it went with it).
  pb::Scenario sc = Full("llama2-7b", 64);
  sc.set_calibration("a100-40");
  pb::PredictResponse p;
  EXPECT_EQ(Predict(sc, &p).error_code(), grpc::StatusCode::NOT_FOUND);
  // The name is free again: no replace needed.
  s = calibrate(false, true);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

class LayerTest : public ServerTest {
 protected:
  // A run of scenario `s` measured at `factor` times what profile `calibration` predicts.
  pb::Measurement RunAt(pb::Scenario s, double factor, const std::string& source,
                        const std::string& calibration = "") {
    s.set_calibration(calibration);
    pb::PredictResponse p;
    EXPECT_TRUE(Predict(s, &p).ok());
    s.clear_calibration();
    pb::Measurement m;
    *m.mutable_scenario() = s;
    m.set_tokens_per_s_per_gpu(p.prediction().tokens_per_s_per_gpu() * factor);
    m.set_source(source);
    return m;
  }
  // Two H100 runs of one stack (Llama-2 7B FSDP on 64 and 128 GPUs).
  std::vector<pb::Measurement> TwoH100Runs(double factor, const std::string& source,
                                           const std::string& calibration = "") {
    return {RunAt(Full("llama2-7b", 64), factor, source, calibration),
            RunAt(Full("llama2-7b", 128), factor, source, calibration)};
  }
  grpc::Status Calibrate(const std::string& name, const std::string& source,
                         const std::string& start_from, pb::CalibrateResponse* out,
                         bool replace = false) {
    grpc::ClientContext ctx;
    pb::CalibrateRequest req;
    req.set_name(name);
    req.mutable_filter()->set_source(source);
    req.set_start_from(start_from);
    req.set_replace(replace);
    return stub_->Calibrate(&ctx, req, out);
  }
  grpc::Status DeleteProfile(const std::string& name) {
    grpc::ClientContext ctx;
    pb::DeleteProfileRequest req;
    req.set_name(name);
    pb::DeleteProfileResponse resp;
    return stub_->DeleteProfile(&ctx, req, &resp);
  }
  pb::ListProfilesResponse Profiles() {
    grpc::ClientContext ctx;
    pb::ListProfilesResponse resp;
    EXPECT_TRUE(stub_->ListProfiles(&ctx, pb::ListProfilesRequest(), &resp).ok());
    return resp;
  }
  double TokensPerGpu(pb::Scenario s, const std::string& calibration) {
    s.set_calibration(calibration);
    pb::PredictResponse p;
    const grpc::Status st = Predict(s, &p);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return p.prediction().tokens_per_s_per_gpu();
  }
};

TEST_F(LayerTest, TwoRunsThatAgreeMoveTheStacksLevelStoredAsALayerWithItsEvidence) {
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(CalibrationSet(), &rec).ok());
  ASSERT_TRUE(Record(TwoH100Runs(0.85, "my-lab"), &rec).ok());
  pb::CalibrateResponse cal;
  grpc::Status s = Calibrate("lab", "my-lab", "", &cal);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(cal.accepted()) << cal.reason();
  EXPECT_TRUE(cal.validated());
  EXPECT_EQ(cal.before().count(), 2);
  EXPECT_LT(cal.after().mape(), cal.before().mape());
  EXPECT_LT(cal.held_out_after().mape(), cal.held_out_before().mape());
  // Only the changed parameter, old -> new, with the runs behind it.
  const pb::CalibrationProfile& p = cal.profile();
  EXPECT_EQ(p.base(), "default");
  ASSERT_EQ(p.changes_size(), 1) << cal.reason();
  const pb::ParameterChange& c = p.changes(0);
  EXPECT_EQ(c.key(), "stack.efficiency");
  EXPECT_EQ(c.old_value(), 1);
  EXPECT_NEAR(c.new_value(), 0.85, 0.01);  // the two agree: their offset is taken
  EXPECT_EQ(c.runs(), 2);
  EXPECT_NE(c.evidence().find("source=my-lab"), std::string::npos) << c.evidence();
  ASSERT_EQ(p.parameters_size(), 1);
  EXPECT_EQ(p.parameters().at(c.key()), c.new_value());
  // The error on the 280 other stored runs, before and after (none of them sampled out).
  EXPECT_EQ(cal.others_stored(), 280);
  EXPECT_FALSE(cal.others_sampled());
  EXPECT_EQ(cal.others_before().count() + 0, cal.others_after().count());
  EXPECT_GT(cal.others_before().count(), 270);
  EXPECT_GT(cal.others_before().mape(), 0);

  // Stored as a layer: base and changes, nothing else.
  pb::ListProfilesResponse all = Profiles();
  ASSERT_EQ(all.profiles_size(), 1);
  EXPECT_EQ(all.profiles(0).base(), "default");
  ASSERT_EQ(all.profiles(0).changes_size(), 1);
  EXPECT_EQ(all.profiles(0).changes(0).new_value(), c.new_value());
  EXPECT_EQ(all.profiles(0).parameters_size(), 1);
  // The stack's other configurations move by about the offset.
  EXPECT_NEAR(
      TokensPerGpu(Full("llama2-7b", 256), "lab") / TokensPerGpu(Full("llama2-7b", 256), ""), 0.85,
      0.01);

  // A layer over the layer: runs slower still, fitted from "lab".
  ASSERT_TRUE(Record(TwoH100Runs(0.8, "my-lab-2", "lab"), &rec).ok());
  pb::CalibrateResponse cal2;
  s = Calibrate("lab2", "my-lab-2", "lab", &cal2);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(cal2.accepted()) << cal2.reason();
  EXPECT_EQ(cal2.profile().base(), "lab");
  ASSERT_EQ(cal2.profile().changes_size(), 1);
  EXPECT_EQ(cal2.profile().changes(0).key(), c.key());
  EXPECT_EQ(cal2.profile().changes(0).old_value(), c.new_value());  // lab's value
  EXPECT_EQ(cal2.others_stored(), 282);
  EXPECT_NEAR(
      TokensPerGpu(Full("llama2-7b", 256), "lab2") / TokensPerGpu(Full("llama2-7b", 256), ""),
      0.85 * 0.8, 0.015);

  // "lab" carries "lab2": it cannot go, nor start from its own layer.
  s = DeleteProfile("lab");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            "name: profile 'lab' is the base of profile 'lab2'; delete or replace it first");
  EXPECT_EQ(Profiles().profiles_size(), 2);
  pb::CalibrateResponse cycle;
  s = Calibrate("lab", "my-lab", "lab2", &cycle, /*replace=*/true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("start_from: 'lab2' layers on 'lab'"), std::string::npos)
      << s.error_message();
  s = Calibrate("lab", "my-lab", "lab", &cycle, /*replace=*/true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Replacing "lab" keeps "lab2" on it, resolved over the new "lab".
  ASSERT_TRUE(Record(TwoH100Runs(0.7, "my-lab-3"), &rec).ok());
  pb::CalibrateResponse again;
  s = Calibrate("lab", "my-lab-3", "", &again, /*replace=*/true);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(again.accepted()) << again.reason();
  EXPECT_LT(TokensPerGpu(Full("llama2-7b", 256), "lab2"),
            TokensPerGpu(Full("llama2-7b", 256), "default"));
  ASSERT_TRUE(DeleteProfile("lab2").ok());
  ASSERT_TRUE(DeleteProfile("lab").ok());
  EXPECT_EQ(Profiles().profiles_size(), 0);
}

TEST_F(LayerTest, ADeclinedCalibrationStoresItsStartUnderTheNameWithTheReason) {
  pb::RecordMeasurementsResponse rec;
  // Runs the built-in profile already predicts within half a percent.
  std::vector<pb::Measurement> close = TwoH100Runs(1.004, "close");
  close.push_back(RunAt(Full("llama2-7b", 256), 0.996, "close"));
  ASSERT_TRUE(Record(close, &rec).ok());
  pb::CalibrateResponse cal;
  grpc::Status s = Calibrate("close", "close", "", &cal);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(cal.accepted());
  EXPECT_NE(cal.reason().find("already predicts these 3 runs within 2.0 %"), std::string::npos)
      << cal.reason();
  EXPECT_EQ(cal.profile().changes_size(), 0);
  EXPECT_EQ(cal.profile().base(), "default");
  EXPECT_EQ(cal.profile().declined_reason(), cal.reason());
  EXPECT_EQ(cal.others_stored(), 0);
  // Stored all the same, saying why; Calibrate-then-Predict works and predicts as the start.
  pb::ListProfilesResponse all = Profiles();
  ASSERT_EQ(all.profiles_size(), 1);
  EXPECT_EQ(all.profiles(0).name(), "close");
  EXPECT_EQ(all.profiles(0).declined_reason(), cal.reason());
  EXPECT_EQ(TokensPerGpu(Full("llama2-7b", 64), "close"), TokensPerGpu(Full("llama2-7b", 64), ""));
  // Runs that contradict each other: no level they share.
  ASSERT_TRUE(
      Record({RunAt(Full("llama2-7b", 64), 0.8, "odd"), RunAt(Full("llama2-7b", 128), 1.25, "odd")},
             &rec)
          .ok());
  s = Calibrate("odd", "odd", "", &cal);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(cal.accepted());
  EXPECT_NE(cal.reason().find("they disagree"), std::string::npos) << cal.reason();
  EXPECT_EQ(cal.others_stored(), 3);
  EXPECT_EQ(cal.others_before().mape(), cal.others_after().mape());
  EXPECT_EQ(Profiles().profiles_size(), 2);
  EXPECT_EQ(TokensPerGpu(Full("llama2-7b", 256), "odd"), TokensPerGpu(Full("llama2-7b", 256), ""));
  // A name taken by a declined calibration is taken: replace to fit again.
  s = Calibrate("odd", "odd", "", &cal);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
}

TEST_F(LayerTest, ACalibrationNeverRaisesTheErrorOnTheStacksOtherStoredRunsByMoreThanAPoint) {
  // Two runs of "lab-x" labelled for calibration agree on 25 % faster; the stack's four other
  // stored runs are where the start puts them.
  std::vector<pb::Measurement> runs = TwoH100Runs(1.25, "lab-x");
  for (pb::Measurement& m : runs) (*m.mutable_labels())["pick"] = "yes";
  for (int gpus : {32, 256, 512, 1024})
    runs.push_back(RunAt(Full("llama2-7b", gpus), 1.0, "lab-x"));
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(runs, &rec).ok());
  grpc::ClientContext ctx;
  pb::CalibrateRequest req;
  req.set_name("x");
  (*req.mutable_filter()->mutable_labels())["pick"] = "yes";
  pb::CalibrateResponse cal;
  const grpc::Status s = stub_->Calibrate(&ctx, req, &cal);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(cal.accepted()) << cal.reason();
  EXPECT_NE(cal.reason().find("4 other stored runs"), std::string::npos) << cal.reason();
  EXPECT_EQ(cal.others_stored(), 4);
  EXPECT_LE(cal.others_after().mape(), cal.others_before().mape() + 0.01);
  EXPECT_EQ(TokensPerGpu(Full("llama2-7b", 256), "x"), TokensPerGpu(Full("llama2-7b", 256), ""));
}

TEST_F(LayerTest, NewRunsThatDisagreeWithAProfileBeyondItsBandAreDrift) {
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(TwoH100Runs(0.85, "drifty"), &rec).ok());
  pb::CalibrateResponse cal;
  grpc::Status s = Calibrate("d", "drifty", "", &cal);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(cal.accepted()) << cal.reason();
  pb::ListProfilesResponse all = Profiles();
  ASSERT_EQ(all.profiles_size(), 1);
  EXPECT_EQ(all.profiles(0).drift_runs(), 0);
  EXPECT_EQ(all.profiles(0).drift(), "");
  // Two newer runs of the stack where the profile puts them: tracked, no drift.
  ASSERT_TRUE(Record({RunAt(Full("llama2-7b", 256), 1.0, "drifty", "d"),
                      RunAt(Full("llama2-7b", 512), 1.02, "drifty", "d")},
                     &rec)
                  .ok());
  all = Profiles();
  EXPECT_EQ(all.profiles(0).drift_runs(), 2);
  EXPECT_NEAR(all.profiles(0).drift_ratio(), 1.01, 0.005);
  EXPECT_EQ(all.profiles(0).drift(), "");
  // Three more 40 % slower (a new container, say): the median leaves the band.
  ASSERT_TRUE(Record({RunAt(Full("llama2-7b", 32), 0.6, "drifty", "d"),
                      RunAt(Full("llama2-7b", 1024), 0.6, "drifty", "d"),
                      RunAt(Full("llama2-7b", 128), 0.6, "drifty", "d")},
                     &rec)
                  .ok());
  all = Profiles();
  EXPECT_EQ(all.profiles(0).drift_runs(), 5);
  EXPECT_NEAR(all.profiles(0).drift_ratio(), 0.6, 0.005);
  EXPECT_NE(all.profiles(0).drift().find("drifted: the 5 runs of source=drifty"), std::string::npos)
      << all.profiles(0).drift();
  // Validate with the profile says so too.
  grpc::ClientContext ctx;
  pb::ValidateRequest req;
  req.set_calibration("d");
  req.mutable_filter()->set_source("drifty");
  pb::ValidateResponse v;
  s = stub_->Validate(&ctx, req, &v);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(v.profile_drift(), all.profiles(0).drift());
}

TEST_F(LayerTest, TheErrorOnOtherRunsIsABoundedEvenSample) {
  // 1,500 other runs: more than Calibrate evaluates (1,000), so it samples and says so.
  std::vector<pb::Measurement> others;
  const pb::Measurement base = RunAt(Full("llama2-7b", 64), 1.0, "others");
  for (int i = 0; i < 1500; ++i) {
    pb::Measurement m = base;
    m.set_tokens_per_s_per_gpu(base.tokens_per_s_per_gpu() * (0.9 + 0.0001 * i));
    others.push_back(m);
  }
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(others, &rec).ok());
  ASSERT_EQ(rec.recorded_count(), 1500);
  ASSERT_TRUE(Record(TwoH100Runs(0.85, "my-lab"), &rec).ok());
  pb::CalibrateResponse cal;
  const grpc::Status s = Calibrate("lab", "my-lab", "", &cal);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(cal.accepted()) << cal.reason();
  EXPECT_EQ(cal.others_stored(), 1500);
  EXPECT_TRUE(cal.others_sampled());
  EXPECT_EQ(cal.others_before().count(), 750);  // every 2nd of 1,500 (stride from 1,502 stored)
  EXPECT_EQ(cal.others_after().count(), 750);
  // The sample is runs 0, 2, 4, ... of the whole store, not its first 1,000: the start's error
  // on run i is 1 / (0.9 + 0.0001 i) - 1.
  double expected = 0;
  for (int i = 0; i < 1500; i += 2) expected += std::fabs(1 / (0.9 + 0.0001 * i) - 1);
  EXPECT_NEAR(cal.others_before().mape(), expected / 750, 1e-6);
}

TEST_F(ServerTest, ReimportingTheSameRunsCountsDuplicatesAndStoresNothing) {
  const std::vector<pb::Measurement> set = CalibrationSet();
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(set, &rec).ok());
  EXPECT_EQ(rec.recorded_count(), 280);
  EXPECT_EQ(rec.duplicate_count(), 0);
  pb::RecordMeasurementsResponse again;
  grpc::Status s = Record(set, &again);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(again.recorded_count(), 0);
  EXPECT_EQ(again.duplicate_count(), 280);
  EXPECT_EQ(again.ids_size(), 0);
  EXPECT_EQ(Count(), 280);
  // A batch with one new run among repeats stores just that one.
  std::vector<pb::Measurement> mixed = {set[0], set[0], set[1]};
  mixed[2].set_tokens_per_s_per_gpu(set[1].tokens_per_s_per_gpu() * 1.01);
  s = Record(mixed, &again);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(again.recorded_count(), 1);
  EXPECT_EQ(again.duplicate_count(), 2);
  EXPECT_EQ(again.ids_size(), 1);
  EXPECT_EQ(Count(), 281);
}

// ImportMeasurements: the server reads the CSV (the one reader the CLI and Python send bytes to).
grpc::Status Import(pb::Scalecast::Stub* stub, const std::string& csv,
                    pb::RecordMeasurementsResponse* out, const std::string& token = "",
                    const std::string& source = "",
                    const std::map<std::string, std::string>& labels = {}) {
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  pb::ImportMeasurementsRequest req;
  req.set_csv(csv);
  req.set_source(source);
  for (const auto& [k, v] : labels) (*req.mutable_labels())[k] = v;
  return stub->ImportMeasurements(&ctx, req, out);
}

TEST_F(ServerTest, ImportedCsvStoresTheRunsRecordWouldWithItsDuplicateRules) {
  pb::RecordMeasurementsResponse rec;
  grpc::Status s = Import(stub_.get(), testing::ReadShared("calibration.csv"), &rec);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(rec.recorded_count(), 280);
  EXPECT_EQ(rec.ids_size(), 280);
  // The same runs parsed here and recorded one by one are the imported ones: all duplicates.
  pb::RecordMeasurementsResponse again;
  ASSERT_TRUE(Record(CalibrationSet(), &again).ok());
  EXPECT_EQ(again.recorded_count(), 0);
  EXPECT_EQ(again.duplicate_count(), 280);
  ASSERT_TRUE(Import(stub_.get(), testing::ReadShared("calibration.csv"), &again).ok());
  EXPECT_EQ(again.duplicate_count(), 280);
  EXPECT_EQ(Count(), 280);
}

TEST_F(ServerTest, ImportAddsTheRequestsSourceAndLabels) {
  const std::string csv =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,global_batch,"
      "recompute,tokens_per_s_per_gpu\n"
      "7,megatron,m,32,4096,32,8,14336,gated,128256,8192,H100-SXM-80GB,8,8,bf16,1,1,1,1,8,zero1,1,"
      "8,"
      "none,5000\n";
  pb::RecordMeasurementsResponse rec;
  grpc::Status s = Import(stub_.get(), csv, &rec, "", "lab runs", {{"batch", "b1"}});
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(rec.ids_size(), 1);
  grpc::ClientContext ctx;
  pb::ListMeasurementsRequest req;
  pb::ListMeasurementsResponse listed;
  ASSERT_TRUE(stub_->ListMeasurements(&ctx, req, &listed).ok());
  ASSERT_EQ(listed.measurements_size(), 1);
  const pb::Measurement& m = listed.measurements(0);
  EXPECT_EQ(m.source(), "lab runs");
  EXPECT_EQ(m.labels().at("batch"), "b1");
  EXPECT_EQ(m.labels().at("csv_id"), "7");
  EXPECT_EQ(m.scenario().cluster().accelerator(), "h100-sxm-80gb");  // the canonical id
}

TEST_F(ServerTest, ABadImportNamesLineAndColumnAndStoresNothing) {
  const std::string good = testing::ReadShared("calibration.csv");
  std::vector<std::string> lines = absl::StrSplit(good, '\n');
  ASSERT_GT(lines.size(), 5u);
  auto with_line5 = [&](const std::string& from, const std::string& to) {
    std::vector<std::string> copy = lines;
    EXPECT_TRUE(absl::StrContains(copy[4], from)) << copy[4];
    copy[4] = absl::StrReplaceAll(copy[4], {{from, to}});
    return absl::StrJoin(copy, "\n");
  };
  const struct {
    std::string csv;
    const char* where;
  } cases[] = {
      {with_line5(",plain,", ",squiggly,"), "line 5, column mlp: 'squiggly' is not gated or plain"},
      {with_line5(",h100-sxm-80gb,", ",h900,"), "line 5: scenario.cluster.accelerator"},
      {with_line5(",bf16,", ",bf17,"), "line 5, column precision"},
      {lines[0] + "\n", "line 2: no rows after the header"},
      {"", "line 1: empty file"},
      {std::string(kMaxImportCsvBytes + 1, 'x'), "csv: 33554433 bytes, over the limit of"},
      // Bytes that are not UTF-8 (they were UNIMPLEMENTED without a message): named, never
      // echoed, nothing stored.
      {with_line5(",bf16,",
                  ",bf\xff"
                  "16,"),
       "line 5, column precision: not valid UTF-8 (byte 0xFF at offset 2)"},
      {with_line5(",plain,", ",pl\xc3(ain,"),
       "line 5, column mlp: not valid UTF-8 (byte 0xC3 at offset 2)"},
      {absl::StrReplaceAll(good, {{"id,source,", "id,sou\xed\xa0\x80rce,"}}),
       "line 1, column 2: not valid UTF-8 (byte 0xED at offset 3)"},
  };
  for (const auto& c : cases) {
    pb::RecordMeasurementsResponse rec;
    grpc::Status s = Import(stub_.get(), c.csv, &rec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.where;
    EXPECT_TRUE(absl::StrContains(s.error_message(), c.where)) << s.error_message();
  }
  EXPECT_EQ(Count(), 0);
  // A bad row after the first chunks (Store::kRecordChunk runs) were written: the import is one
  // transaction, so they go too.
  std::string big = lines[0];
  for (int copy = 0; copy < 5; ++copy) {
    for (size_t i = 1; i < lines.size(); ++i) {
      if (!lines[i].empty()) absl::StrAppend(&big, "\n", lines[i]);
    }
  }
  const size_t rows = std::count(big.begin(), big.end(), '\n');
  ASSERT_GT(rows, 1200u);
  absl::StrAppend(&big, "\n", absl::StrReplaceAll(lines[1], {{",bf16,", ",bf\x80,"}}));
  pb::RecordMeasurementsResponse rec;
  grpc::Status s = Import(stub_.get(), big, &rec);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(),
                                absl::StrCat("line ", rows + 2, ", column precision: not valid")))
      << s.error_message();
  EXPECT_EQ(Count(), 0);
}

// A Scenario field whose proto option (scalecast.v1.field) gives a range or a CSV column, with
// its path from Scenario ("workload.model.moe.num_experts").
struct ProtoRule {
  std::vector<const google::protobuf::FieldDescriptor*> path;
  const pb::FieldUi* ui;
  std::string Path() const {
    std::vector<std::string> names;
    for (const auto* f : path) names.push_back(f->name());
    return absl::StrJoin(names, ".");
  }
};

std::vector<ProtoRule> ProtoRules(
    const google::protobuf::Descriptor* d = pb::Scenario::descriptor(),
    std::vector<const google::protobuf::FieldDescriptor*> prefix = {}) {
  std::vector<ProtoRule> out;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    std::vector<const google::protobuf::FieldDescriptor*> path = prefix;
    path.push_back(f);
    if (f->message_type() != nullptr && !f->is_repeated()) {
      for (ProtoRule& r : ProtoRules(f->message_type(), path)) out.push_back(std::move(r));
    } else if (f->options().HasExtension(pb::field)) {
      out.push_back({path, &f->options().GetExtension(pb::field)});
    }
  }
  return out;
}

// Sets a numeric field (at `path` under `s`) to `v`.
void SetNumber(const ProtoRule& r, double v, pb::Scenario* s) {
  google::protobuf::Message* m = s;
  for (size_t i = 0; i + 1 < r.path.size(); ++i) {
    m = m->GetReflection()->MutableMessage(m, r.path[i]);
  }
  const google::protobuf::FieldDescriptor* f = r.path.back();
  using FD = google::protobuf::FieldDescriptor;
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32:
      m->GetReflection()->SetInt32(m, f, static_cast<int32_t>(v));
      break;
    case FD::CPPTYPE_INT64:
      m->GetReflection()->SetInt64(m, f, static_cast<int64_t>(v));
      break;
    case FD::CPPTYPE_DOUBLE:
      m->GetReflection()->SetDouble(m, f, v);
      break;
    default:
      ADD_FAILURE() << r.Path() << " is not a number";
  }
}

// "V is out of range [lo, hi]" as the server words it for the field's type.
std::string OutOfRangeText(const ProtoRule& r, double v) {
  const bool integer =
      r.path.back()->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE;
  auto num = [&](double x) {
    return integer ? absl::StrCat(static_cast<int64_t>(x)) : absl::StrCat(x);
  };
  return absl::StrCat(num(v), " is out of range [", num(r.ui->has_min() ? r.ui->min() : 0), ", ",
                      num(r.ui->max()), "]");
}

// Every range the proto states is the server's, with no other copy: one past each field's max
// (set on a valid scenario) is refused naming the field's path and the proto's range, and so is
// one below a positive min.
TEST_F(ServerTest, EveryProtoRangeIsCheckedByTheServerNamingTheFieldPath) {
  // The preset's shape spelled out under another name, so that a 0 is the request's own value.
  pb::PredictResponse resolved;
  ASSERT_TRUE(Predict(Full("llama3-8b", 8), &resolved).ok());
  pb::Scenario base = Full("llama3-8b", 8);
  *base.mutable_workload()->mutable_model() = resolved.scenario().workload().model();
  base.mutable_workload()->mutable_model()->set_name("m");
  pb::PredictResponse ok;
  ASSERT_TRUE(Predict(base, &ok).ok());
  int checked = 0;
  for (const ProtoRule& r : ProtoRules()) {
    if (!r.ui->has_max()) continue;
    std::vector<double> bad = {r.ui->max() + 1};
    if (r.ui->has_min() && r.ui->min() > 0) bad.push_back(r.ui->min() - 1);
    for (double v : bad) {
      pb::Scenario s = base;
      SetNumber(r, v, &s);
      pb::PredictResponse resp;
      const grpc::Status st = Predict(s, &resp);
      EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << r.Path() << " = " << v;
      // (The batch's error goes on with the nearest batches that work.)
      EXPECT_TRUE(absl::StartsWith(st.error_message(),
                                   absl::StrCat("scenario.", r.Path(), ": ", OutOfRangeText(r, v))))
          << st.error_message();
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);  // layers, hidden, ..., mtp_layers, num_gpus, ep, etp, hbm_headroom
}

// The CSV import reads each range from the proto too: a cell one past a field's max is refused
// naming its line and column.
TEST_F(ServerTest, CsvCellsOutsideTheProtosRangeAreRefusedNamingTheColumn) {
  const std::string header =
      "id,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,accelerator,"
      "num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,global_batch,"
      "recompute,tokens_per_s_per_gpu";
  const std::string row =
      "7,megatron,m,32,4096,32,8,14336,gated,128256,8192,h100-sxm-80gb,8,8,bf16,1,1,1,1,8,zero1,1,"
      "8,none,5000";
  int checked = 0;
  for (const ProtoRule& r : ProtoRules()) {
    if (!r.ui->has_max() || r.ui->csv().empty()) continue;
    std::vector<std::string> names = absl::StrSplit(header, ',');
    std::vector<std::string> cells = absl::StrSplit(row, ',');
    auto it = std::find(names.begin(), names.end(), r.ui->csv());
    const double v = r.ui->max() + 1;
    if (it == names.end()) {
      names.push_back(r.ui->csv());
      cells.push_back(absl::StrCat(static_cast<int64_t>(v)));
    } else {
      cells[it - names.begin()] = absl::StrCat(static_cast<int64_t>(v));
    }
    pb::RecordMeasurementsResponse rec;
    const grpc::Status st = Import(
        stub_.get(), absl::StrCat(absl::StrJoin(names, ","), "\n", absl::StrJoin(cells, ","), "\n"),
        &rec);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << r.Path();
    EXPECT_TRUE(absl::StrContains(st.error_message(), absl::StrCat("line 2, column ", r.ui->csv(),
                                                                   ": ", OutOfRangeText(r, v))))
        << st.error_message();
    ++checked;
  }
  EXPECT_GE(checked, 20);
  EXPECT_EQ(Count(), 0);
}

// Every switch of the proto's Stack (an optional bool) is echoed as resolved, and a request that
// flips each from its default gets a prediction run with the flipped value: ResolveStack and the
// echo walk the generated VisitStackSwitches, so a switch added to the proto and the model's
// Stack needs no line in either.
TEST_F(ServerTest, EveryStackSwitchIsResolvedAndEchoed) {
  using FD = google::protobuf::FieldDescriptor;
  std::vector<const FD*> switches;
  const google::protobuf::Descriptor* d = pb::Stack::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    if (f->cpp_type() == FD::CPPTYPE_BOOL && f->has_presence()) switches.push_back(f);
  }
  EXPECT_GE(switches.size(), 7u);
  pb::Scenario s = Full("mixtral-8x7b", 64);
  s.mutable_parallelism()->set_ep(8);
  s.mutable_parallelism()->set_etp(1);
  s.mutable_workload()->set_precision(pb::PRECISION_FP8);  // fp8_attention needs fp8 training
  pb::PredictResponse defaults;
  ASSERT_TRUE(Predict(s, &defaults).ok());
  const pb::Stack& resolved = defaults.scenario().stack();
  pb::Stack* asked = s.mutable_stack();
  for (const FD* f : switches) {
    EXPECT_TRUE(resolved.GetReflection()->HasField(resolved, f)) << f->name() << " not echoed";
    asked->GetReflection()->SetBool(asked, f, !resolved.GetReflection()->GetBool(resolved, f));
  }
  pb::PredictResponse flipped;
  const grpc::Status status = Predict(s, &flipped);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const pb::Stack& echoed = flipped.scenario().stack();
  for (const FD* f : switches) {
    EXPECT_NE(echoed.GetReflection()->GetBool(echoed, f),
              resolved.GetReflection()->GetBool(resolved, f))
        << f->name() << " not resolved as asked";
  }
}

// Context parallelism's exchange is echoed by its Megatron-Core name where context parallelism
// runs or the request named one, and a name the model does not know is refused by its path.
TEST_F(ServerTest, ContextParallelExchangeIsEchoedByItsName) {
  pb::Scenario s = Full("llama2-7b", 64);
  s.set_framework("megatron");
  pb::PredictResponse plain;
  ASSERT_TRUE(Predict(s, &plain).ok());
  EXPECT_EQ(plain.scenario().stack().cp_comm_type(), "") << "cp 1: no exchange to name";
  s.mutable_parallelism()->set_cp(2);
  pb::PredictResponse ring;
  ASSERT_TRUE(Predict(s, &ring).ok());
  EXPECT_EQ(ring.scenario().stack().cp_comm_type(), "p2p");
  s.mutable_stack()->set_cp_comm_type("ULYSSES");
  pb::PredictResponse a2a;
  const grpc::Status asked = Predict(s, &a2a);
  ASSERT_TRUE(asked.ok()) << asked.error_message();
  EXPECT_EQ(a2a.scenario().stack().cp_comm_type(), "a2a");
  // The two-level exchange echoes its all-to-all group, the model's or the one asked for.
  s.mutable_stack()->set_cp_comm_type("a2a+p2p");
  pb::PredictResponse two;
  ASSERT_TRUE(Predict(s, &two).ok());
  EXPECT_EQ(two.prediction().layout().cp_a2a(), 2);
  s.mutable_parallelism()->set_cp_a2a(4);
  pb::PredictResponse wide;
  const grpc::Status refused = Predict(s, &wide);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(), "scenario.parallelism.cp_a2a: 4 does not divide cp=2");
  s.mutable_parallelism()->set_cp_a2a(0);
  s.mutable_stack()->set_cp_comm_type("rings");
  pb::PredictResponse none;
  const grpc::Status bad = Predict(s, &none);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(bad.error_message(),
                               "scenario.stack.cp_comm_type: unknown exchange 'rings'"))
      << bad.error_message();
}

// Every column a proto field declares (its option's `csv`) is read into that field: one row
// naming them all, each value found again in the parsed scenario.
TEST(Csv, EveryColumnTheProtoDeclaresIsReadIntoItsField) {
  const std::map<std::string, std::string> values = {{"framework", "megatron"},
                                                     {"mlp", "gated"},
                                                     {"precision", "fp8"},
                                                     {"sharding", "hsdp"},
                                                     {"shard_group", "2"},
                                                     {"recompute", "full"},
                                                     {"recompute_layers", "2"},
                                                     {"cpu_offload_layers", "3"},
                                                     {"tokens_per_s_per_gpu", "5000"},
                                                     {"attention", "mla"},
                                                     {"model", "m"},
                                                     {"layers", "8"},
                                                     {"hidden", "1024"},
                                                     {"heads", "16"},
                                                     {"kv_heads", "4"},
                                                     {"ffn_hidden", "4096"},
                                                     {"vocab", "32000"},
                                                     {"seq_len", "4096"},
                                                     {"accelerator", "h100-sxm-80gb"},
                                                     {"num_gpus", "64"},
                                                     {"gpus_per_node", "8"},
                                                     {"inter_node_gbps_per_gpu", "100"},
                                                     {"inter_node_latency_us", "41"},
                                                     {"tp", "2"},
                                                     {"pp", "2"},
                                                     {"vpp", "2"},
                                                     {"cp", "2"},
                                                     {"dp", "4"},
                                                     {"micro_batch", "1"},
                                                     {"global_batch", "256"},
                                                     {"num_experts", "8"},
                                                     {"top_k", "2"},
                                                     {"moe_ffn_hidden", "512"},
                                                     {"shared_experts", "1"},
                                                     {"shared_ffn_hidden", "768"},
                                                     {"dense_layers", "1"},
                                                     {"head_dim", "128"},
                                                     {"q_lora_rank", "256"},
                                                     {"kv_lora_rank", "128"},
                                                     {"qk_nope_head_dim", "64"},
                                                     {"qk_rope_head_dim", "32"},
                                                     {"v_head_dim", "48"},
                                                     {"mtp_layers", "1"},
                                                     {"ep", "4"},
                                                     {"etp", "1"},
                                                     {"framework_version", "core_r0.12.0"},
                                                     {"fp8_recipe", "blockwise"},
                                                     {"attention_kernel", "fa3"},
                                                     {"cp_comm_type", "a2a"},
                                                     {"cp_a2a", "2"},
                                                     {"compiled", "true"},
                                                     {"tp_comm_overlap", "false"},
                                                     {"dp_overlap", "true"},
                                                     {"cuda_graphs", "false"},
                                                     {"capacity_factor", "1.5"},
                                                     {"force_balance", "true"},
                                                     {"expert_bias", "true"},
                                                     {"moe_latent_size", "256"},
                                                     {"router_groups", "4"},
                                                     {"router_group_topk", "2"},
                                                     {"attention_window", "128"},
                                                     {"full_attention_every", "2"},
                                                     {"layer_pattern", "M*M*M*M*"},
                                                     {"mamba_heads", "32"},
                                                     {"mamba_head_dim", "64"},
                                                     {"mamba_state", "128"},
                                                     {"mamba_groups", "8"},
                                                     {"fused_dispatch", "true"},
                                                     {"ep_comm_overlap", "false"},
                                                     {"bf16_grads", "true"},
                                                     {"fp8_param_gather", "true"},
                                                     {"full_step_graph", "true"},
                                                     {"fp8_attention", "true"},
                                                     {"fp32_params", "true"},
                                                     {"fused_kernels", "true"},
                                                     {"sequence_parallel", "false"},
                                                     {"first_stage_layers", "3"},
                                                     {"last_stage_layers", "5"}};
  std::vector<std::string> names, cells;
  for (const auto& [k, v] : values) {
    names.push_back(k);
    cells.push_back(v);
  }
  absl::StatusOr<std::vector<Measurement>> runs = ParseMeasurementsCsv(
      absl::StrCat(absl::StrJoin(names, ","), "\n", absl::StrJoin(cells, ","), "\n"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  pb::Scenario read;
  ToProto((*runs)[0].scenario, &read);
  int declared = 0;
  using FD = google::protobuf::FieldDescriptor;
  for (const ProtoRule& r : ProtoRules()) {
    if (r.ui->csv().empty()) continue;
    ++declared;
    auto want = values.find(r.ui->csv());
    ASSERT_NE(want, values.end()) << "give column " << r.ui->csv() << " a value in this test";
    const google::protobuf::Message* m = &read;
    for (size_t i = 0; i + 1 < r.path.size(); ++i) {
      m = &m->GetReflection()->GetMessage(*m, r.path[i]);
    }
    const FD* f = r.path.back();
    const google::protobuf::Reflection* refl = m->GetReflection();
    std::string got;
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32:
        got = absl::StrCat(refl->GetInt32(*m, f));
        break;
      case FD::CPPTYPE_INT64:
        got = absl::StrCat(refl->GetInt64(*m, f));
        break;
      case FD::CPPTYPE_DOUBLE:
        got = absl::StrCat(refl->GetDouble(*m, f));
        break;
      case FD::CPPTYPE_BOOL:
        EXPECT_TRUE(refl->HasField(*m, f)) << r.Path();
        got = refl->GetBool(*m, f) ? "true" : "false";
        break;
      case FD::CPPTYPE_STRING:
        got = refl->GetString(*m, f);
        break;
      default:
        ADD_FAILURE() << r.Path() << ": no CSV column of this type";
    }
    EXPECT_EQ(got, want->second) << r.Path() << " from column " << r.ui->csv();
  }
  EXPECT_GE(declared, 40);
}

// Every field of a scenario, however it was added, survives proto -> model -> proto: the plain
// ones are copied by code generated from the proto (server/convert_gen.h), the rest by hand.
void FillEveryField(google::protobuf::Message* m) {
  using FD = google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m->GetReflection();
  const google::protobuf::Descriptor* d = m->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    const bool file =
        f->options().HasExtension(pb::field) && f->options().GetExtension(pb::field).file();
    if (f->is_repeated()) {
      if (f->name() == "recompute_modules") r->AddString(m, f, "moe_act");
      continue;
    }
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32:
        r->SetInt32(m, f, 3 + i);
        break;
      case FD::CPPTYPE_INT64:
        r->SetInt64(m, f, 3 + i);
        break;
      case FD::CPPTYPE_DOUBLE:
        r->SetDouble(m, f, 0.25 + i);
        break;
      case FD::CPPTYPE_BOOL:
        r->SetBool(m, f, true);
        break;
      case FD::CPPTYPE_ENUM:
        r->SetEnumValue(m, f, 1);
        break;
      case FD::CPPTYPE_STRING:
        if (!file) r->SetString(m, f, absl::StrCat("v", i));  // a config.json would be parsed
        break;
      case FD::CPPTYPE_MESSAGE:
        FillEveryField(r->MutableMessage(m, f));
        break;
      default:
        ADD_FAILURE() << f->full_name();
    }
  }
}

TEST(Convert, EveryScenarioFieldRoundTripsThroughTheModel) {
  pb::Scenario in;
  FillEveryField(&in);
  absl::StatusOr<Scenario> model = FromProto(in, "scenario");
  ASSERT_TRUE(model.ok()) << model.status();
  pb::Scenario out;
  ToProto(*model, &out);
  EXPECT_EQ(out.DebugString(), in.DebugString());
}

// The stored text (storage/scenario_codec.cc, whose field list is kept by hand: its order and
// versions are a persisted format's history) keeps every field of a run's scenario the proto
// has: a field added to the proto without its codec line fails here. Not stored, by design: an
// accelerator spec (a stored run names a catalog part; the import refuses one), the HBM headroom
// (a planning margin, not a fact of the run) and a config.json's bytes (resolved into the shape).
TEST(Convert, EveryScenarioFieldSurvivesTheStoredText) {
  pb::Scenario in;
  FillEveryField(&in);
  in.mutable_cluster()->clear_accelerator_spec();
  in.mutable_cluster()->clear_hbm_headroom();
  absl::StatusOr<Scenario> model = FromProto(in, "scenario");
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<Scenario> stored = DecodeScenario(EncodeScenario(*model));
  ASSERT_TRUE(stored.ok()) << stored.status();
  pb::Scenario out;
  ToProto(*stored, &out);
  EXPECT_EQ(out.DebugString(), in.DebugString());
}

// A request's shape field over a preset's, and a catalog key, for every plain ModelSpec field
// the proto has (model/model_fields_gen.h): none needs a line of its own.
TEST(Convert, EveryModelFieldOverlaysAPresetAndIsACatalogKey) {
  pb::Scenario in;
  FillEveryField(&in);
  absl::StatusOr<Scenario> request = FromProto(in, "scenario");
  ASSERT_TRUE(request.ok()) << request.status();
  const ModelSpec& asked = request->workload.model;
  const ModelSpec over =
      OverlayShape(Catalog::Builtin().FindModel("deepseek-v3")->spec, request->workload.model);
  pb::ModelSpec want, got;
  ToProto(asked, &want);
  ToProto(over, &got);
  EXPECT_EQ(got.DebugString(), want.DebugString());
  int keys = 0;
  for (const ProtoRule& r : ProtoRules(pb::ModelSpec::descriptor())) {
    const google::protobuf::FieldDescriptor* f = r.path.back();
    if (r.ui->file() || f->name() == "name" || f->enum_type() != nullptr || f->is_repeated()) {
      continue;
    }
    Catalog c = Catalog::Builtin();
    const absl::Status st = c.MergeText(absl::StrCat(
        "model t\n  layers = 2\n  hidden = 256\n  heads = 4\n  ffn_hidden = 1024\n  vocab = 1000\n",
        "  ", r.Path(), " = ",
        f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL ? "true" : "1",
        "\nend\n"));
    EXPECT_FALSE(absl::StrContains(st.message(), "unknown key")) << r.Path() << ": " << st;
    ++keys;
  }
  EXPECT_GE(keys, 30);
}

// Predict's codec (proto/scalecast_grpc.h) writes the bytes protobuf writes, and reads a request
// in one slice, in several (gRPC's own path) and a malformed one (INTERNAL) as gRPC's would.
TEST(PredictCodec, SameBytesAsProtobufAndTheSameParse) {
  using Traits = grpc::SerializationTraits<pb::PredictResponse>;
  static_assert(
      std::is_base_of_v<proto_internal::FlatSerializationTraits<pb::PredictResponse>, Traits>);
  pb::PredictResponse resp;
  FillEveryField(resp.mutable_scenario());
  resp.mutable_prediction()->set_step_time_s(1.5);
  resp.mutable_prediction()->add_warnings("w");
  resp.set_model_version("v");
  grpc::ByteBuffer bb;
  bool own = false;
  ASSERT_TRUE(Traits::Serialize(resp, &bb, &own).ok());
  EXPECT_TRUE(own);
  grpc::Slice flat;
  ASSERT_TRUE(bb.DumpToSingleSlice(&flat).ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(flat.begin()), flat.size()),
            resp.SerializeAsString());

  using In = grpc::SerializationTraits<pb::PredictRequest>;
  pb::PredictRequest req;
  FillEveryField(req.mutable_scenario());
  const std::string bytes = req.SerializeAsString();
  grpc::Slice one(bytes.data(), bytes.size());
  grpc::ByteBuffer single(&one, 1);
  pb::PredictRequest got;
  ASSERT_TRUE(In::Deserialize(&single, &got).ok());
  EXPECT_EQ(got.SerializeAsString(), bytes);
  const size_t half = bytes.size() / 2;
  std::vector<grpc::Slice> two = {grpc::Slice(bytes.data(), half),
                                  grpc::Slice(bytes.data() + half, bytes.size() - half)};
  grpc::ByteBuffer split(two.data(), two.size());
  pb::PredictRequest got2;
  ASSERT_TRUE(In::Deserialize(&split, &got2).ok());
  EXPECT_EQ(got2.SerializeAsString(), bytes);
  const std::string junk = "\xff\xff\xff";
  grpc::Slice bad(junk.data(), junk.size());
  grpc::ByteBuffer malformed(&bad, 1);
  EXPECT_EQ(In::Deserialize(&malformed, &got).error_code(), grpc::StatusCode::INTERNAL);
}

TEST(Csv, FirstInvalidUtf8FindsTheFirstByteOfABadSequence) {
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), absl::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("\xe2\x82\xac and \xf0\x9f\x98\x80"), absl::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\xff"), 2u);            // never a UTF-8 byte
  EXPECT_EQ(FirstInvalidUtf8("a\xc0\xaf"), 1u);         // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xe0\x80\xaf"), 0u);      // overlong, 3 bytes
  EXPECT_EQ(FirstInvalidUtf8("x\xed\xa0\x80"), 1u);     // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("ok\xe2\x82"), 2u);        // cut short
  EXPECT_EQ(FirstInvalidUtf8("\x80"), 0u);              // a lone continuation byte
}

TEST_F(ServerTest, ImportIsAWriteThatNeedsTheToken) {
  server_->Shutdown();
  StartServer("s3cret-token");
  const std::string csv = testing::ReadShared("calibration.csv");
  pb::RecordMeasurementsResponse rec;
  EXPECT_EQ(Import(stub_.get(), csv, &rec).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Import(stub_.get(), csv, &rec, "wrong").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Count(), 0);
  ASSERT_TRUE(Import(stub_.get(), csv, &rec, "s3cret-token").ok());
  EXPECT_EQ(rec.recorded_count(), 280);
}

// A measured run names its part: a name several parts share, which a prediction answers for the
// usual part with a warning, is refused for a stored run with the choices; nothing is stored.
TEST(ImportJob, AStoredRunNamesItsPart) {
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  Measurement m = runs->front();
  m.scenario.cluster.accelerator = "H100";
  const absl::Status st = PrepareToStore(Catalog::Builtin(), &m);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_TRUE(
      absl::StartsWith(st.message(), "scenario.cluster.accelerator: ambiguous accelerator 'H100'"))
      << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "h100-sxm-80gb")) << st;
  EXPECT_TRUE(absl::EndsWith(st.message(), "; a stored run names its part")) << st;
  m.scenario.cluster.accelerator = "NVIDIA H100 80GB HBM3";  // an alias of one part: stored as it
  ASSERT_TRUE(PrepareToStore(Catalog::Builtin(), &m).ok());
  EXPECT_EQ(m.scenario.cluster.accelerator, "h100-sxm-80gb");
  // A system's name: its part, with its node and network kept.
  m.scenario.cluster.accelerator = "p5.48xlarge";
  m.scenario.cluster.gpus_per_node = 0;
  m.scenario.cluster.inter_node_gbps_per_gpu = 0;
  ASSERT_TRUE(PrepareToStore(Catalog::Builtin(), &m).ok());
  EXPECT_EQ(m.scenario.cluster.accelerator, "h100-sxm-80gb");
  EXPECT_EQ(m.scenario.cluster.gpus_per_node, std::min(8, m.scenario.cluster.num_gpus));
  EXPECT_EQ(m.scenario.cluster.inter_node_gbps_per_gpu, 400);
}

TEST(ImportJob, MoreRowsThanOneBatchHoldsAreRefused) {
  StoreOptions so;
  so.path = ":memory:";
  auto store = Store::Open(so);
  ASSERT_TRUE(store.ok()) << store.status();
  CsvImport in;
  const std::string csv = testing::ReadShared("calibration.csv");
  in.csv = csv;
  in.max_runs = 279;
  absl::StatusOr<RecordOutcome> out = ImportCsv(store->get(), in, Catalog::Builtin(), {});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(out.status().message(),
                                "csv: 280 rows, over the limit of 279 runs in one batch"))
      << out.status();
  EXPECT_EQ(*(*store)->CountMeasurements({}), 0);
  // A stop asked for ends the import before any run is checked.
  in.max_runs = 280;
  JobControl stopped;
  stopped.cancelled = [] { return true; };
  EXPECT_EQ(ImportCsv(store->get(), in, Catalog::Builtin(), stopped).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(*(*store)->CountMeasurements({}), 0);
  out = ImportCsv(store->get(), in, Catalog::Builtin(), {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->ids.size(), 280u);
  EXPECT_EQ(*(*store)->CountMeasurements({}), 280);
}

// Calibrate counts before it reads: a filter past max_runs is refused from the count, naming
// how many match; and a stored run the model cannot read (an input past a bound added after it
// was stored: here inter_node_gbps_per_gpu 1e-300, recorded around the checks) is named.
TEST(CalibrationJob, CountsFirstAndNamesAStoredRunItCannotEvaluate) {
  StoreOptions so;
  so.path = ":memory:";
  auto store = Store::Open(so);
  ASSERT_TRUE(store.ok()) << store.status();
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  std::vector<Measurement> five(runs->begin(), runs->begin() + 5);
  for (Measurement& m : five) ASSERT_TRUE(PrepareToStore(Catalog::Builtin(), &m).ok());
  ASSERT_TRUE((*store)->RecordMeasurements(five).ok());
  const auto builtin = std::make_shared<const Profile>(Profile::BuiltinDefault());
  CalibrationJob job;
  job.name = "site";
  job.max_runs = 4;
  absl::StatusOr<CalibrationJobResult> r =
      RunCalibration(job, store->get(), Catalog::Builtin(), builtin, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_TRUE(
      absl::StrContains(r.status().message(), "filter: 5 stored runs match, over the limit of 4"))
      << r.status();
  Measurement odd = five[0];
  odd.id.clear();
  odd.tokens_per_s_per_gpu += 1;  // not a duplicate
  odd.scenario.cluster.inter_node_gbps_per_gpu = 1e-300;
  auto stored = (*store)->RecordMeasurements({odd});
  ASSERT_TRUE(stored.ok()) << stored.status();
  job.max_runs = -1;
  r = RunCalibration(job, store->get(), Catalog::Builtin(), builtin, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_TRUE(absl::StrContains(
      r.status().message(),
      absl::StrCat("filter: stored run '", (*stored)[0].id,
                   "' cannot be evaluated (scenario.cluster.inter_node_gbps_per_gpu")))
      << r.status();
}

// Issue 27, medium: one stored run the model cannot read (an input past a bound added after it
// was stored: inter_node_gbps_per_gpu 1e-300) among the *other* runs -- of the fitted runs'
// stack, or anywhere in the store -- made Calibrate fail without naming it, or dropped it
// silently. It is left out of the checks and named, and the calibration goes on.
TEST(CalibrationJob, NamesAnOtherStoredRunItCannotEvaluateAndGoesOn) {
  StoreOptions so;
  so.path = ":memory:";
  auto store = Store::Open(so);
  ASSERT_TRUE(store.ok()) << store.status();
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  std::vector<Measurement> fitted(runs->begin(), runs->begin() + 5);
  for (Measurement& m : fitted) {
    ASSERT_TRUE(PrepareToStore(Catalog::Builtin(), &m).ok());
    m.labels["fit"] = "yes";
  }
  ASSERT_TRUE((*store)->RecordMeasurements(fitted).ok());
  Measurement odd = fitted[0];  // of the first fitted run's stack (its source), not fitted on
  odd.id.clear();
  odd.labels.clear();
  odd.tokens_per_s_per_gpu += 1;  // not a duplicate
  odd.scenario.cluster.inter_node_gbps_per_gpu = 1e-300;
  auto stored = (*store)->RecordMeasurements({odd});
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 1u);
  CalibrationJob job;
  job.name = "site";
  job.filter.labels["fit"] = "yes";
  const auto builtin = std::make_shared<const Profile>(Profile::BuiltinDefault());
  absl::StatusOr<CalibrationJobResult> r =
      RunCalibration(job, store->get(), Catalog::Builtin(), builtin, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->written);
  EXPECT_EQ(r->others.stored, 1);
  EXPECT_EQ(r->others.skipped, 1);
  ASSERT_EQ(r->others.skipped_named.size(), 1u);
  EXPECT_TRUE(absl::StrContains(
      r->others.skipped_named[0],
      absl::StrCat("stored run '", (*stored)[0].id,
                   "' cannot be evaluated (scenario.cluster.inter_node_gbps_per_gpu")))
      << r->others.skipped_named[0];
  EXPECT_EQ(r->others.before.count, 0);  // left out of the check
}

// Issue 27, medium: the check on other runs read every stored run (14 s with 1M stored); it is
// evaluated on the store's sample (Store::SampleMeasurements), at most max_other_runs.
TEST(CalibrationJob, ChecksTheOtherRunsOnABoundedSample) {
  StoreOptions so;
  so.path = ":memory:";
  auto store = Store::Open(so);
  ASSERT_TRUE(store.ok()) << store.status();
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  for (size_t i = 0; i < runs->size(); ++i) {
    Measurement& m = (*runs)[i];
    ASSERT_TRUE(PrepareToStore(Catalog::Builtin(), &m).ok());
    if (i < 5) m.labels["fit"] = "yes";
  }
  ASSERT_TRUE((*store)->RecordMeasurements(*runs).ok());
  const int64_t stored = *(*store)->CountMeasurements({});
  CalibrationJob job;
  job.name = "site";
  job.filter.labels["fit"] = "yes";
  job.max_other_runs = 20;
  const auto builtin = std::make_shared<const Profile>(Profile::BuiltinDefault());
  absl::StatusOr<CalibrationJobResult> r =
      RunCalibration(job, store->get(), Catalog::Builtin(), builtin, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->others.stored, stored - 5);
  EXPECT_TRUE(r->others.sampled);
  EXPECT_GT(r->others.before.count + r->others.skipped, 10);
  EXPECT_LE(r->others.before.count + r->others.skipped, 20);
}

TEST_F(ServerTest, ValidateAndCalibrateOnAFilterMatchingNoRunAreRefusedNamingIt) {
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record({GoodMeasurement()}, &rec).ok());
  const std::string expected =
      "filter: no stored runs match (framework=maxtext, source=nowhere, label.site=x)";
  {
    grpc::ClientContext ctx;
    pb::ValidateRequest req;
    req.mutable_filter()->set_framework("maxtext");
    req.mutable_filter()->set_source("nowhere");
    (*req.mutable_filter()->mutable_labels())["site"] = "x";
    pb::ValidateResponse resp;
    const grpc::Status s = stub_->Validate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(s.error_message(), expected);
  }
  {
    grpc::ClientContext ctx;
    pb::CalibrateRequest req;
    req.set_name("nothing");
    req.mutable_filter()->set_framework("maxtext");
    req.mutable_filter()->set_source("nowhere");
    (*req.mutable_filter()->mutable_labels())["site"] = "x";
    pb::CalibrateResponse resp;
    const grpc::Status s = stub_->Calibrate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(s.error_message(), expected);
  }
  // The stored run itself still validates.
  grpc::ClientContext ctx;
  pb::ValidateResponse resp;
  ASSERT_TRUE(stub_->Validate(&ctx, pb::ValidateRequest(), &resp).ok());
  EXPECT_EQ(resp.overall().count(), 1);
}

// Runs of one scenario measured at known ratios to its prediction: each run's error is exactly
// 1 / factor - 1, so every group's MAPE and median are known.
class ValidateGroupsTest : public ServerTest {
 protected:
  pb::Measurement Run(double factor, const std::string& source,
                      const std::map<std::string, std::string>& labels) {
    if (predicted_ == 0) {
      pb::PredictResponse p;
      EXPECT_TRUE(Predict(Scenario(), &p).ok());
      predicted_ = p.prediction().tokens_per_s_per_gpu();
    }
    pb::Measurement m;
    *m.mutable_scenario() = Scenario();
    m.set_tokens_per_s_per_gpu(predicted_ * factor);
    m.set_source(source);
    for (const auto& [k, v] : labels) (*m.mutable_labels())[k] = v;
    return m;
  }
  static pb::Scenario Scenario() {
    pb::Scenario s = Full("llama2-7b", 64);
    s.mutable_parallelism()->set_dp(64);
    s.set_framework("megatron");
    return s;
  }
  pb::ValidateResponse Validate(const pb::MeasurementFilter& filter = {}) {
    grpc::ClientContext ctx;
    pb::ValidateRequest req;
    *req.mutable_filter() = filter;
    pb::ValidateResponse resp;
    const grpc::Status s = stub_->Validate(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  double predicted_ = 0;
};

TEST_F(ValidateGroupsTest, ErrorPerSourceAndPerLabelOnAKnownSet) {
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record({Run(0.8, "alpha", {{"site", "a"}}), Run(1.25, "alpha", {{"site", "a"}}),
                      Run(1.0, "beta", {{"site", "a"}, {"run", "r1"}}), Run(0.5, "", {})},
                     &rec)
                  .ok());
  ASSERT_EQ(rec.recorded_count(), 4);
  const pb::ValidateResponse v = Validate();
  EXPECT_EQ(v.failed_count(), 0);
  EXPECT_EQ(v.overall().count(), 4);
  ASSERT_EQ(v.by_source().size(), 3u);
  // alpha: errors +25 % and -20 %.
  EXPECT_EQ(v.by_source().at("alpha").count(), 2);
  EXPECT_NEAR(v.by_source().at("alpha").mape(), 0.225, 1e-9);
  EXPECT_NEAR(v.by_source().at("alpha").median_ape(), 0.225, 1e-9);
  EXPECT_EQ(v.by_source().at("beta").count(), 1);
  EXPECT_NEAR(v.by_source().at("beta").mape(), 0, 1e-9);
  EXPECT_EQ(v.by_source().at("").count(), 1);  // no source is a group of its own
  EXPECT_NEAR(v.by_source().at("").mape(), 1.0, 1e-9);
  // Labels: "key=value"; a run counts in each of its labels, a run without labels in none.
  ASSERT_EQ(v.by_label().size(), 2u);
  EXPECT_EQ(v.by_label().at("site=a").count(), 3);
  EXPECT_NEAR(v.by_label().at("site=a").mape(), (0.25 + 0.2 + 0) / 3, 1e-9);
  EXPECT_NEAR(v.by_label().at("site=a").median_ape(), 0.2, 1e-9);
  EXPECT_EQ(v.by_label().at("run=r1").count(), 1);
  EXPECT_NEAR(v.by_label().at("run=r1").mape(), 0, 1e-9);
  EXPECT_EQ(v.by_source_omitted_count(), 0);
  EXPECT_EQ(v.by_label_omitted_count(), 0);
  // A filter narrows the groups with it.
  pb::MeasurementFilter f;
  f.set_source("alpha");
  const pb::ValidateResponse alpha = Validate(f);
  ASSERT_EQ(alpha.by_source().size(), 1u);
  EXPECT_NEAR(alpha.by_source().at("alpha").mape(), 0.225, 1e-9);
  ASSERT_EQ(alpha.by_label().size(), 1u);
  EXPECT_EQ(alpha.by_label().at("site=a").count(), 2);
}

TEST_F(ValidateGroupsTest, SourceAndLabelGroupsAreCappedLargestFirstAndTheRestCounted) {
  // 130 sources of one run each, and src-129 with a second run: 130 sources, 132 labels.
  const int n = 130;
  ASSERT_GT(n, static_cast<int>(kMaxValidateGroups));
  std::vector<pb::Measurement> ms;
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "src-%03d", i);
    ms.push_back(Run(1.0 + 0.001 * i, name, {{"i", std::to_string(i)}, {"shared", "x"}}));
  }
  ms.push_back(Run(0.5, "src-129", {{"shared", "x"}, {"extra", "y"}}));
  pb::RecordMeasurementsResponse rec;
  ASSERT_TRUE(Record(ms, &rec).ok());
  ASSERT_EQ(rec.recorded_count(), n + 1);
  const pb::ValidateResponse v = Validate();
  EXPECT_EQ(v.overall().count(), n + 1);
  EXPECT_EQ(v.by_source().size(), kMaxValidateGroups);
  EXPECT_EQ(v.by_source_omitted_count(), n - static_cast<int>(kMaxValidateGroups));
  // The largest (two runs) is kept though it sorts last by name; the rest by name.
  ASSERT_EQ(v.by_source().count("src-129"), 1u);
  EXPECT_EQ(v.by_source().at("src-129").count(), 2);
  EXPECT_NEAR(v.by_source().at("src-129").mape(), (std::fabs(1 / 1.129 - 1) + 1.0) / 2, 1e-9);
  EXPECT_EQ(v.by_source().count("src-000"), 1u);
  EXPECT_EQ(v.by_source().count("src-098"), 1u);
  EXPECT_EQ(v.by_source().count("src-099"), 0u);
  // Labels: shared=x (131 runs) first; 130 "i=..." and extra=y compete for the other 99.
  EXPECT_EQ(v.by_label().size(), kMaxValidateGroups);
  EXPECT_EQ(v.by_label_omitted_count(), n + 2 - static_cast<int>(kMaxValidateGroups));
  ASSERT_EQ(v.by_label().count("shared=x"), 1u);
  EXPECT_EQ(v.by_label().at("shared=x").count(), n + 1);
  EXPECT_NEAR(v.by_label().at("shared=x").mape(), v.overall().mape(), 1e-12);
  // The counts per group add up to what was kept, the overall count to every run.
  int source_runs = 0;
  for (const auto& [k, s] : v.by_source()) source_runs += s.count();
  EXPECT_EQ(source_runs, 2 + static_cast<int>(kMaxValidateGroups) - 1);
}

TEST_F(ServerTest, HealthAndReflectionWork) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "scalecast.v1.Scalecast"}) {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    ASSERT_TRUE(health->Check(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  namespace refl = ::scalecast::testing::reflection;
  const grpc::internal::RpcMethod method(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING, channel_);
  grpc::ClientContext ctx;
  std::unique_ptr<
      grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             refl::ServerReflectionRequest, refl::ServerReflectionResponse>::Create(channel_.get(),
                                                                                    method, &ctx));
  refl::ServerReflectionRequest req;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  refl::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::set<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.insert(s.name());
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(names.count("scalecast.v1.Scalecast")) << names.size();
  EXPECT_TRUE(names.count("grpc.health.v1.Health"));
  // Shutdown turns health to NOT_SERVING before the port closes; covered by the process test.
}

TEST_F(ServerTest, EightConcurrentClientsLoseNothing) {
  constexpr int kClients = 8, kBatches = 10, kPerBatch = 5;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = pb::Scalecast::NewStub(
          grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
      for (int b = 0; b < kBatches; ++b) {
        grpc::ClientContext ctx;
        pb::RecordMeasurementsRequest req;
        for (int i = 0; i < kPerBatch; ++i) {
          pb::Measurement m = GoodMeasurement();
          (*m.mutable_labels())["client"] = std::to_string(c);
          // Distinct runs (identical ones would be duplicates, stored once).
          m.set_tokens_per_s_per_gpu(m.tokens_per_s_per_gpu() + (c * kBatches + b) * kPerBatch + i);
          *req.add_measurements() = m;
        }
        pb::RecordMeasurementsResponse resp;
        if (!stub->RecordMeasurements(&ctx, req, &resp).ok()) ++failures;
        grpc::ClientContext lctx;
        pb::ListMeasurementsRequest lreq;
        (*lreq.mutable_filter()->mutable_labels())["client"] = std::to_string(c);
        pb::ListMeasurementsResponse lresp;
        if (!stub->ListMeasurements(&lctx, lreq, &lresp).ok() ||
            lresp.total_count() != (b + 1) * kPerBatch) {
          ++failures;
        }
        grpc::ClientContext pctx;
        pb::PredictRequest preq;
        *preq.mutable_scenario() = Full("llama2-7b", 64);
        pb::PredictResponse presp;
        if (!stub->Predict(&pctx, preq, &presp).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Count(), kClients * kBatches * kPerBatch);
}

}  // namespace
}  // namespace scalecast

namespace scalecast {
namespace {

TEST_F(ServerTest, SweepStopsAtItsDeadlineAndFreesThePool) {
  pb::SweepRequest req;
  pb::Scenario* base = req.mutable_base();
  base->mutable_workload()->mutable_model()->set_name("llama2-7b");
  base->mutable_workload()->set_seq_len(131072);
  base->mutable_workload()->set_global_batch(65536 * 9 * 5 * 7);
  base->mutable_cluster()->set_accelerator("h100-sxm-80gb");
  for (int i = 1; i <= 64; ++i) req.add_gpu_counts(64 * i);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  auto reader = stub_->Sweep(&ctx, req);
  pb::SweepResponse msg;
  int results = 0;
  while (reader->Read(&msg)) results += msg.has_result();
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_LT(results, 64);
  // The pool's workers stopped: a planner search right after is answered.
  pb::PredictResponse p;
  grpc::ClientContext pctx;
  pctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  pb::PredictRequest preq;
  *preq.mutable_scenario() = Preset("llama2-13b", 128);
  EXPECT_TRUE(stub_->Predict(&pctx, preq, &p).ok());
}

}  // namespace
}  // namespace scalecast

namespace scalecast {
namespace {

// The sweep's checks and memory policy, called below gRPC as a tool would.
TEST(SweepJob, ChecksTheAskAndBoundsEachCountsLayouts) {
  const SweepBounds bounds{4, 10, 1'000'000, 64 << 20};
  SweepAsk ask;
  ask.base.workload.model.name = "llama2-7b";
  ask.base.workload.seq_len = 4096;
  ask.base.workload.global_batch = 512;
  ask.base.cluster.accelerator = "h100-sxm-80gb";
  ask.gpu_counts = {64, 128};
  absl::StatusOr<SweepPlan> plan = PlanSweep(ask, bounds, Catalog::Builtin());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->counts.size(), 2u);
  EXPECT_EQ(plan->counts[1].resolved.scenario.cluster.num_gpus, 128);
  EXPECT_EQ(plan->options.top_k, 5);
  std::map<std::string, int64_t> rejected;
  absl::StatusOr<LayoutSpace> layouts =
      SweepLayouts(plan->counts[0], *plan, bounds, Catalog::Builtin(), &rejected);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  EXPECT_GT(layouts->size(), 10u);
  plan->options.max_layouts = 10;
  EXPECT_EQ(
      SweepLayouts(plan->counts[0], *plan, bounds, Catalog::Builtin(), &rejected).status().code(),
      absl::StatusCode::kResourceExhausted);
  const SweepBounds tiny{4, 10, 1'000'000, 64};
  EXPECT_TRUE(absl::StrContains(
      SweepLayouts(plan->counts[0], *plan, tiny, Catalog::Builtin(), &rejected).status().message(),
      "the search for 64 GPUs holds over 64 bytes of layouts"));

  const struct {
    void (*mutate)(SweepAsk*);
    absl::StatusCode code;
    const char* message;
  } cases[] = {
      {[](SweepAsk* a) {
         a->gpu_counts = {1, 2, 4, 8, 16};
       },
       absl::StatusCode::kResourceExhausted, "gpu_counts: 5 GPU counts, over the limit of 4"},
      {[](SweepAsk* a) { a->max_gpu_counts = 1; }, absl::StatusCode::kResourceExhausted,
       "over the limit of 1"},
      {[](SweepAsk* a) {
         a->gpu_counts = {64, 0};
       },
       absl::StatusCode::kInvalidArgument, "gpu_counts[1]: 0 is out of range"},
      {[](SweepAsk* a) {
         a->gpu_counts = {64, 64};
       },
       absl::StatusCode::kInvalidArgument, "gpu_counts[1]: 64 is repeated"},
      {[](SweepAsk* a) { a->top_k = 11; }, absl::StatusCode::kInvalidArgument,
       "top_k: 11 is out of range [0, 10]"},
      {[](SweepAsk* a) { a->max_layouts = -1; }, absl::StatusCode::kInvalidArgument,
       "limits: must be >= 0"},
      {[](SweepAsk* a) { a->base.parallelism.tp = 3; }, absl::StatusCode::kInvalidArgument,
       "base.parallelism.tp: "},
  };
  for (const auto& c : cases) {
    SweepAsk bad = ask;
    c.mutate(&bad);
    absl::StatusOr<SweepPlan> p = PlanSweep(bad, bounds, Catalog::Builtin());
    EXPECT_EQ(p.status().code(), c.code) << c.message;
    EXPECT_TRUE(absl::StrContains(p.status().message(), c.message)) << p.status();
  }
}

}  // namespace
}  // namespace scalecast
