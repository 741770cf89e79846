// Two scalecast-server replicas on one PostgreSQL (tests/pg_harness.h): what one records, the
// other lists, validates and calibrates on; a profile calibrated on one predicts on both; a
// replica killed with SIGKILL while recording loses no acknowledged batch and leaves no part of
// one.
#include <grpcpp/create_channel.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "model/measurements.h"
#include "proto/scalecast_grpc.h"
#include "server/convert.h"
#include "tests/pg_harness.h"
#include "tests/server_child.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

namespace pb = ::scalecast::v1;
using testing::PgCluster;
using testing::ServerChild;

// A channel with subchannels of its own: a replica started after another was killed may be
// given the dead one's port, and a subchannel shared through gRPC's process-wide pool would still
// hold the dead connection (the first call then fails "UNAVAILABLE: Broken pipe").
std::unique_ptr<pb::Scalecast::Stub> StubFor(const ServerChild& s) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return pb::Scalecast::NewStub(
      grpc::CreateCustomChannel(s.address(), grpc::InsecureChannelCredentials(), args));
}

std::vector<pb::Measurement> CalibrationSet() {
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  EXPECT_TRUE(runs.ok()) << runs.status();
  std::vector<pb::Measurement> out;
  for (const Measurement& m : *runs) {
    pb::Measurement pm;
    ToProto(m, &pm);
    pm.clear_recorded_at();
    out.push_back(pm);
  }
  return out;
}

pb::Scenario H100Llama(int gpus, const std::string& calibration) {
  pb::Scenario s;
  s.mutable_workload()->mutable_model()->set_name("llama2-70b");
  s.mutable_workload()->set_seq_len(4096);
  s.mutable_workload()->set_global_batch(1024);
  s.mutable_cluster()->set_accelerator("h100-sxm-80gb");
  s.mutable_cluster()->set_num_gpus(gpus);
  pb::Parallelism* p = s.mutable_parallelism();
  p->set_tp(8);
  p->set_pp(4);
  p->set_vpp(1);
  p->set_cp(1);
  p->set_sharding(pb::SHARDING_ZERO1);
  p->set_micro_batch(1);
  p->set_recompute(pb::RECOMPUTE_SELECTIVE);
  s.set_framework("megatron");
  s.set_calibration(calibration);
  return s;
}

absl::StatusOr<double> PredictTokens(pb::Scalecast::Stub* stub, const std::string& calibration) {
  grpc::ClientContext ctx;
  pb::PredictRequest req;
  *req.mutable_scenario() = H100Llama(256, calibration);
  pb::PredictResponse resp;
  const grpc::Status st = stub->Predict(&ctx, req, &resp);
  if (!st.ok()) return absl::UnknownError(st.error_message());
  return resp.prediction().tokens_per_s_per_gpu();
}

TEST(Replicas, WhatOneRecordsTheOtherListsValidatesAndCalibratesOn) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild a({"--db", uri, "--threads", "2", "--profile-refresh-ms", "500"});
  ServerChild b({"--db", uri, "--threads", "2", "--profile-refresh-ms", "500"});
  ASSERT_TRUE(a.ok()) << a.Stderr();
  ASSERT_TRUE(b.ok()) << b.Stderr();
  EXPECT_TRUE(absl::StrContains(a.startup_line(), "database postgresql://")) << a.startup_line();
  auto sa = StubFor(a), sb = StubFor(b);

  const std::vector<pb::Measurement> runs = CalibrationSet();
  {
    grpc::ClientContext ctx;
    pb::RecordMeasurementsRequest req;
    for (const auto& m : runs) *req.add_measurements() = m;
    pb::RecordMeasurementsResponse resp;
    ASSERT_TRUE(sa->RecordMeasurements(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.ids_size(), static_cast<int>(runs.size()));
  }
  {
    grpc::ClientContext ctx;
    pb::ListMeasurementsRequest req;
    req.set_page_size(1000);
    pb::ListMeasurementsResponse resp;
    ASSERT_TRUE(sb->ListMeasurements(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.total_count(), static_cast<int64_t>(runs.size()));
    EXPECT_EQ(resp.measurements_size(), static_cast<int>(runs.size()));
  }
  {
    grpc::ClientContext ctx;
    pb::ValidateRequest req;
    pb::ValidateResponse resp;
    ASSERT_TRUE(sb->Validate(&ctx, req, &resp).ok());
    EXPECT_GT(resp.overall().count(), 200);
  }
  // Calibrate on B, then predict with the new profile on both replicas.
  const absl::StatusOr<double> before = PredictTokens(sa.get(), "");
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(PredictTokens(sa.get(), "shared-fit").ok());  // not there yet
  {
    grpc::ClientContext ctx;
    pb::CalibrateRequest req;
    req.set_name("shared-fit");
    req.mutable_filter()->set_accelerator("h100-sxm-80gb");
    pb::CalibrateResponse resp;
    const grpc::Status st = sb->Calibrate(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  const absl::StatusOr<double> on_b = PredictTokens(sb.get(), "shared-fit");
  const absl::StatusOr<double> on_a = PredictTokens(sa.get(), "shared-fit");
  ASSERT_TRUE(on_b.ok()) << on_b.status();
  ASSERT_TRUE(on_a.ok()) << on_a.status();
  EXPECT_EQ(*on_a, *on_b);
  EXPECT_NE(*on_a, *before);

  // Replaced on B (a fit on another subset): A sees the new one within --profile-refresh-ms.
  {
    grpc::ClientContext ctx;
    pb::CalibrateRequest req;
    req.set_name("shared-fit");
    // CalibrateRequest.replace (api.md "Additions"), when this build's proto has it.
    if (const auto* f = req.GetDescriptor()->FindFieldByName("replace")) {
      req.GetReflection()->SetBool(&req, f, true);
    }
    req.mutable_filter()->set_framework("megatron");
    pb::CalibrateResponse resp;
    const grpc::Status st = sb->Calibrate(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  const absl::StatusOr<double> replaced = PredictTokens(sb.get(), "shared-fit");
  ASSERT_TRUE(replaced.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(PredictTokens(sa.get(), "shared-fit").value_or(-1), *replaced);
}

// Two callers on two replicas calibrate one new name at once, without replace: exactly one
// gets OK, the other ALREADY_EXISTS, every round (issue 27: the name was checked before the fit
// and stored after it with an upsert, so both got OK and the first fit was silently lost).
TEST(Replicas, RacingCalibratesWithoutReplaceNeverOverwrite) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild a({"--db", uri, "--threads", "2"});
  ServerChild b({"--db", uri, "--threads", "2"});
  ASSERT_TRUE(a.ok()) << a.Stderr();
  ASSERT_TRUE(b.ok()) << b.Stderr();
  auto sa = StubFor(a), sb = StubFor(b);
  {
    grpc::ClientContext ctx;
    pb::RecordMeasurementsRequest req;
    for (const auto& m : CalibrationSet()) *req.add_measurements() = m;
    pb::RecordMeasurementsResponse resp;
    ASSERT_TRUE(sa->RecordMeasurements(&ctx, req, &resp).ok());
  }
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    const std::string name = "race-" + std::to_string(round);
    std::atomic<int> ready{0};
    grpc::Status st[2];
    auto calibrate = [&](pb::Scalecast::Stub* stub, grpc::Status* out) {
      pb::CalibrateRequest req;
      req.set_name(name);
      req.mutable_filter()->set_accelerator("h100-sxm-80gb");
      pb::CalibrateResponse resp;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
      ++ready;
      while (ready.load() < 2) {
      }
      *out = stub->Calibrate(&ctx, req, &resp);
      if (out->ok() && !resp.accepted()) *out = grpc::Status(grpc::StatusCode::UNKNOWN, "rejected");
    };
    std::thread ta(calibrate, sa.get(), &st[0]), tb(calibrate, sb.get(), &st[1]);
    ta.join();
    tb.join();
    ASSERT_NE(st[0].ok(), st[1].ok())
        << "round " << round << ": " << st[0].error_message() << " / " << st[1].error_message();
    const grpc::Status& lost = st[0].ok() ? st[1] : st[0];
    EXPECT_EQ(lost.error_code(), grpc::StatusCode::ALREADY_EXISTS) << lost.error_message();
    EXPECT_TRUE(absl::StrContains(lost.error_message(), "name: profile '" + name + "'"))
        << lost.error_message();
  }
}

// A replica killed with SIGKILL while a client records through it: every acknowledged batch is
// in the shared store whole (read through the other replica), and no batch is there in part.
// A Predict of H100Llama on `accelerator`, its tokens/s per GPU.
absl::StatusOr<double> PredictOn(pb::Scalecast::Stub* stub, const std::string& accelerator) {
  grpc::ClientContext ctx;
  pb::PredictRequest req;
  *req.mutable_scenario() = H100Llama(256, "");
  req.mutable_scenario()->mutable_cluster()->set_accelerator(accelerator);
  pb::PredictResponse resp;
  const grpc::Status st = stub->Predict(&ctx, req, &resp);
  if (!st.ok())
    return absl::Status(static_cast<absl::StatusCode>(st.error_code()), st.error_message());
  return resp.prediction().tokens_per_s_per_gpu();
}

bool Lists(pb::Scalecast::Stub* stub, const std::string& id, std::string* origin) {
  grpc::ClientContext ctx;
  pb::ListAcceleratorsResponse resp;
  if (!stub->ListAccelerators(&ctx, pb::ListAcceleratorsRequest(), &resp).ok()) return false;
  for (const pb::Accelerator& a : resp.accelerators()) {
    if (a.id() != id) continue;
    *origin = a.origin();
    return true;
  }
  return false;
}

TEST(Replicas, AcceleratorRegisteredOnOneIsUsedByTheOtherAndSurvivesARestart) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  const std::vector<std::string> flags = {"--db", uri, "--threads", "2"};
  ServerChild a(flags);
  ServerChild b(flags);
  ASSERT_TRUE(a.ok()) << a.Stderr();
  ASSERT_TRUE(b.ok()) << b.Stderr();
  auto sa = StubFor(a), sb = StubFor(b);
  // B reads the registry before the part exists: it does not know it.
  EXPECT_EQ(PredictOn(sb.get(), "h100-800g").status().code(), absl::StatusCode::kNotFound);
  const absl::StatusOr<double> catalog_part = PredictOn(sb.get(), "h100-sxm-80gb");
  ASSERT_TRUE(catalog_part.ok()) << catalog_part.status();
  {
    grpc::ClientContext ctx;
    pb::RegisterAcceleratorRequest req;
    req.mutable_spec()->set_id("h100-800g");
    req.mutable_spec()->set_like("h100-sxm-80gb");
    req.mutable_spec()->set_inter_node_gbps_per_gpu(800);
    pb::RegisterAcceleratorResponse resp;
    const grpc::Status st = sa->RegisterAccelerator(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.accelerator().origin(), "registered");
    EXPECT_EQ(resp.accelerator().network_gbps_per_gpu(), 800);
  }
  // B sees it at once (an id it has not seen sends it to the store), without a restart.
  const absl::StatusOr<double> registered = PredictOn(sb.get(), "h100-800g");
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_GT(*registered, *catalog_part);  // the faster network
  std::string origin;
  ASSERT_TRUE(Lists(sb.get(), "h100-800g", &origin));
  EXPECT_EQ(origin, "registered");
  // Both replicas restart: the part is in the store.
  a.Kill();
  b.Kill();
  ServerChild c(flags);
  ASSERT_TRUE(c.ok()) << c.Stderr();
  auto sc = StubFor(c);
  const absl::StatusOr<double> again = PredictOn(sc.get(), "h100-800g");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *registered);
  // Deleted through it, then gone.
  {
    grpc::ClientContext ctx;
    pb::DeleteAcceleratorRequest req;
    req.set_id("h100-800g");
    pb::DeleteAcceleratorResponse resp;
    ASSERT_TRUE(sc->DeleteAccelerator(&ctx, req, &resp).ok());
  }
  EXPECT_FALSE(Lists(sc.get(), "h100-800g", &origin));
}

TEST(Replicas, KillMinus9DuringWritesLosesNoAcknowledgedBatch) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild a({"--db", uri, "--threads", "2"});
  ServerChild b({"--db", uri, "--threads", "2"});
  ASSERT_TRUE(a.ok()) << a.Stderr();
  ASSERT_TRUE(b.ok()) << b.Stderr();
  constexpr int kBatch = 40;
  std::atomic<int> acked{0};
  std::atomic<bool> stop{false}, writer_done{false};
  pb::Measurement run = CalibrationSet().front();
  std::thread writer([&] {
    auto sa = StubFor(a);
    for (int batch = 1; !stop; ++batch) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      pb::RecordMeasurementsRequest req;
      for (int i = 0; i < kBatch; ++i) {
        pb::Measurement* m = req.add_measurements();
        *m = run;
        // Distinct runs: identical ones would be duplicates, stored once.
        m->set_tokens_per_s_per_gpu(run.tokens_per_s_per_gpu() + batch * kBatch + i);
        (*m->mutable_labels())["batch"] = std::to_string(batch);
      }
      pb::RecordMeasurementsResponse resp;
      if (!sa->RecordMeasurements(&ctx, req, &resp).ok()) break;
      acked = batch;
    }
    writer_done = true;
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (acked < 10 && !writer_done && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (acked < 10) {
    stop = true;
    writer.join();
    FAIL() << "the writer did not get going";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3));  // mid-batch, most likely
  a.Kill();
  stop = true;
  writer.join();
  const int acknowledged = acked.load();

  auto sb = StubFor(b);
  std::map<int, int> per_batch;
  std::string token;
  do {
    grpc::ClientContext ctx;
    pb::ListMeasurementsRequest req;
    req.set_page_size(1000);
    req.set_page_token(token);
    pb::ListMeasurementsResponse resp;
    ASSERT_TRUE(sb->ListMeasurements(&ctx, req, &resp).ok());
    for (const auto& m : resp.measurements()) ++per_batch[std::stoi(m.labels().at("batch"))];
    token = resp.next_page_token();
  } while (!token.empty());
  ASSERT_GE(static_cast<int>(per_batch.size()), acknowledged);
  for (int batch = 1; batch <= acknowledged; ++batch) {
    EXPECT_EQ(per_batch[batch], kBatch) << "acknowledged batch " << batch;
  }
  for (const auto& [batch, n] : per_batch) EXPECT_EQ(n, kBatch) << "batch " << batch;
  // At most the one batch in flight committed without its acknowledgement.
  EXPECT_LE(static_cast<int>(per_batch.size()), acknowledged + 1);
}

TEST(Replicas, PasswordComesFromAFileAndNeverShowsInLogs) {
  SCALECAST_NEED_POSTGRES();
  auto& pg = PgCluster::Get();
  ASSERT_EQ(PgCluster::Exec(pg.Uri("postgres"),
                            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                            "'app') THEN CREATE ROLE app LOGIN PASSWORD 'pw-secret'; END IF; "
                            "END $$"),
            "");
  const std::string uri = pg.NewDatabase();
  const std::string db = uri.substr(uri.rfind('/') + 1);
  ASSERT_EQ(PgCluster::Exec(pg.Uri("postgres"), "ALTER DATABASE " + db + " OWNER TO app"), "");
  const std::string file = "/tmp/scalecast-pw-" + std::to_string(getpid());
  std::ofstream(file) << "pw-secret\n";
  const std::string app_uri = "postgresql://app@127.0.0.1:" + std::to_string(pg.port()) + "/" + db;
  // trust authentication accepts any password; the point is that it is passed and not shown.
  ServerChild s({"--db", app_uri, "--db-password-file", file});
  ASSERT_TRUE(s.ok()) << s.Stderr();
  EXPECT_FALSE(absl::StrContains(s.startup_line(), "pw-secret"));
  // A password in the URI itself is not echoed either, even when the start fails.
  ServerChild bad({"--db", "postgresql://app:uri-secret@127.0.0.1:1/nothing"});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.WaitExit(20), 1);
  EXPECT_FALSE(absl::StrContains(bad.Stderr(), "uri-secret")) << bad.Stderr();
  EXPECT_TRUE(absl::StrContains(bad.Stderr(), "127.0.0.1:1/nothing")) << bad.Stderr();
  std::remove(file.c_str());
}

}  // namespace
}  // namespace scalecast
