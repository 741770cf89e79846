// Issue 27: a replica never stalls on its store. Real scalecast-server processes on a real
// PostgreSQL (tests/pg_harness.h); a second connection opened by the test holds a lock, the way
// a bulk import on another replica or a frozen database does, and the test checks what must
// still answer while it is held. No wall-clock bounds: "answers while the lock is held" and
// "finishes before the slow reads do" are the behaviours.
#include <grpcpp/create_channel.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/measurements.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/scalecast_grpc.h"
#include "server/convert.h"
#include "server/service.h"
#include "tests/pg_harness.h"
#include "tests/proto_scenarios.h"
#include "tests/server_child.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

namespace pb = ::scalecast::v1;
using testing::PgCluster;
using testing::PgLockHolder;
using testing::PgQueryInt;
using testing::ServerChild;

std::shared_ptr<grpc::Channel> NewChannel(const ServerChild& s, int n) {
  grpc::ChannelArguments args;
  args.SetInt("scalecast.channel", n);  // a connection of its own
  return grpc::CreateCustomChannel(s.address(), grpc::InsecureChannelCredentials(), args);
}

grpc::Status HealthCheck(grpc::health::v1::Health::Stub* health, const std::string& service) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status st = health->Check(&ctx, req, &resp);
  if (st.ok() && resp.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not serving");
  }
  return st;
}

grpc::Status PredictOnce(pb::Scalecast::Stub* stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::PredictRequest req;
  *req.mutable_scenario() = testing::FullLayoutRequest("llama2-7b", 64);
  pb::PredictResponse resp;
  return stub->Predict(&ctx, req, &resp);
}

// High 2: sweeps finishing while their cache writes cannot get through (the cache table locked,
// as a frozen database or a lock held by another replica would leave it). The cache write used
// to run under the sweep's mutex, which gRPC's threads take in OnWriteDone: each such sweep held
// a worker thread and a gRPC thread for as long as the lock was held (up to the 30 s statement
// timeout), its result stuck behind its own mutex (before: 2 of 16 sweeps delivered their
// result while the lock was held, 1 of 16 finished OK). Now the write runs apart, bounded and
// best-effort: every sweep delivers and finishes, and health and Predict answer throughout.
TEST(Reliability, SweepsHealthAndPredictAnswerWhileSweepCacheWritesCannotGetThrough) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild server({"--db", uri, "--threads", "16", "--db-pool-size", "20"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  PgLockHolder lock(uri, "BEGIN; LOCK TABLE sweep_cache IN ACCESS EXCLUSIVE MODE");
  ASSERT_EQ(lock.error(), "");

  constexpr int kSweeps = 16;
  std::atomic<int> with_result{0}, finished_ok{0};
  std::vector<std::thread> sweeps;
  for (int i = 0; i < kSweeps; ++i) {
    sweeps.emplace_back([&, i] {
      auto stub = pb::Scalecast::NewStub(NewChannel(server, i));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
      pb::SweepRequest req;
      pb::Scenario* s = req.mutable_base();
      s->mutable_workload()->mutable_model()->set_name("llama2-7b");
      s->mutable_workload()->set_seq_len(4096);
      s->mutable_workload()->set_global_batch(512 + 8 * i);  // distinct requests
      s->mutable_cluster()->set_accelerator("h100-sxm-80gb");
      req.add_gpu_counts(64);
      req.set_refresh(true);  // computed, then written to the cache
      auto reader = stub->Sweep(&ctx, req);
      pb::SweepResponse msg;
      while (reader->Read(&msg)) {
        if (msg.has_result()) ++with_result;
      }
      if (reader->Finish().ok()) ++finished_ok;
    });
  }
  // Every sweep has sent its result: each is at its cache write now.
  for (int i = 0; i < 1200 && with_result.load() < kSweeps; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(with_result.load(), kSweeps);
  auto health = grpc::health::v1::Health::NewStub(NewChannel(server, 100));
  auto stub = pb::Scalecast::NewStub(NewChannel(server, 101));
  for (int i = 0; i < 5; ++i) {
    const grpc::Status h = HealthCheck(health.get(), "");
    EXPECT_TRUE(h.ok()) << "health " << i << ": " << h.error_message();
    const grpc::Status p = PredictOnce(stub.get());
    EXPECT_TRUE(p.ok()) << "predict " << i << ": " << p.error_message();
  }
  lock.Release();
  for (std::thread& t : sweeps) t.join();
  EXPECT_EQ(finished_ok.load(), kSweeps);  // a cache write not kept fails no sweep
}

// High 3: one-row writes finish while slow long reads fill the store threads and connections.
// The reads are made slow by a lock on the labels table (every label-filtered read needs it;
// a write of a run without labels does not). Reads and writes used to share one queue on the
// store threads and one connection pool: the writes waited for the reads.
TEST(Reliability, OneRowWritesFinishWhileLongReadsWait) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild server({"--db", uri, "--threads", "2", "--db-pool-size", "2"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  PgLockHolder lock(uri, "BEGIN; LOCK TABLE measurement_labels IN ACCESS EXCLUSIVE MODE");
  ASSERT_EQ(lock.error(), "");

  constexpr int kReads = 8;
  std::atomic<int> reads_done{0}, reads_ok{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kReads; ++i) {
    readers.emplace_back([&, i] {
      auto stub = pb::Scalecast::NewStub(NewChannel(server, i));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
      pb::ListMeasurementsRequest req;
      (*req.mutable_filter()->mutable_labels())["run"] = "x";
      pb::ListMeasurementsResponse resp;
      if (stub->ListMeasurements(&ctx, req, &resp).ok()) ++reads_ok;
      ++reads_done;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let them take the lanes

  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  auto stub = pb::Scalecast::NewStub(NewChannel(server, 100));
  constexpr int kWrites = 4;
  for (int i = 0; i < kWrites; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    pb::RecordMeasurementsRequest req;
    pb::Measurement* m = req.add_measurements();
    ToProto((*runs)[i], m);
    m->clear_recorded_at();
    m->clear_labels();
    pb::RecordMeasurementsResponse resp;
    const grpc::Status st = stub->RecordMeasurements(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << "write " << i << ": " << st.error_message();
  }
  EXPECT_EQ(reads_done.load(), 0);  // the writes finished before any of the slow reads
  lock.Release();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(reads_ok.load(), kReads);
}

// Distinct runs (distinct measured values: no duplicates), labelled, as a request.
pb::RecordMeasurementsRequest ManyRuns(const Measurement& run, int n, int salt) {
  pb::RecordMeasurementsRequest req;
  for (int i = 0; i < n; ++i) {
    pb::Measurement* m = req.add_measurements();
    ToProto(run, m);
    m->clear_recorded_at();
    m->set_tokens_per_s_per_gpu(run.tokens_per_s_per_gpu + salt * n + i);
  }
  return req;
}

// High 4: a write held ~20x its request, and nothing bounded how many ran at once (three 100k-
// row imports killed a server in 1 GiB). Writes are admitted against --max-write-bytes (at
// WriteHoldsBytes each): while one large batch is in progress (held here by a lock on the
// measurements table), a second is RESOURCE_EXHAUSTED at once instead of adding its memory; once
// the first is done it goes in. (tests/server_memory_test: what writes hold, in 1 GiB.)
TEST(Reliability, WritesPastTheMemoryBoundAreRefusedWhileOneIsInProgress) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild server({"--db", uri, "--threads", "2", "--max-write-bytes", "67108864"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  auto runs = ParseMeasurementsCsv(testing::ReadShared("calibration.csv"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  constexpr int kRows = 10'000;  // ~6 MB a request: ~45 MB held, two do not fit in 64 MiB
  const pb::RecordMeasurementsRequest first = ManyRuns(runs->front(), kRows, 0);
  const pb::RecordMeasurementsRequest second = ManyRuns(runs->front(), kRows, 1);
  const int64_t held = WriteHoldsBytes(static_cast<int64_t>(first.ByteSizeLong()),
                                       kRecordBytesPerRequestByte, kRows);
  ASSERT_GT(held, int64_t{32} << 20);
  ASSERT_LT(held, int64_t{64} << 20);

  auto lock = std::make_unique<PgLockHolder>(
      uri, "BEGIN; LOCK TABLE measurements IN ACCESS EXCLUSIVE MODE");
  ASSERT_EQ(lock->error(), "");
  grpc::Status first_status;
  std::thread writer([&] {
    auto stub = pb::Scalecast::NewStub(NewChannel(server, 0));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    pb::RecordMeasurementsResponse resp;
    first_status = stub->RecordMeasurements(&ctx, first, &resp);
  });
  // The first is admitted and waits on the lock (its statement shows waiting in PostgreSQL).
  const std::string waiting =
      "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '" +
      uri.substr(uri.rfind('/') + 1) + "'";
  for (int i = 0; i < 1200 && PgQueryInt(uri, waiting) < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(PgQueryInt(uri, waiting), 1);
  // The second is refused, at once.
  auto stub = pb::Scalecast::NewStub(NewChannel(server, 1));
  grpc::Status refused;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    pb::RecordMeasurementsResponse resp;
    refused = stub->RecordMeasurements(&ctx, second, &resp);
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_TRUE(absl::StrContains(refused.error_message(), "--max-write-bytes"))
      << refused.error_message();
  lock.reset();
  writer.join();
  EXPECT_TRUE(first_status.ok()) << first_status.error_message();
  grpc::ClientContext ctx;
  pb::RecordMeasurementsResponse resp;
  const grpc::Status again = stub->RecordMeasurements(&ctx, second, &resp);
  EXPECT_TRUE(again.ok()) << again.error_message();
  EXPECT_EQ(resp.recorded_count(), kRows);
}

// Medium: health said SERVING while PostgreSQL could not be reached. The scalecast service now
// goes NOT_SERVING while the store does not answer, and back to SERVING when it does; the
// process stays up (the overall service, liveness, stays SERVING) and Predict still answers.
TEST(Reliability, HealthSaysNotServingWhileTheStoreIsUnreachable) {
  SCALECAST_NEED_POSTGRES();
  auto& pg = PgCluster::Get();
  const std::string uri = pg.NewDatabase();
  const std::string db = uri.substr(uri.rfind('/') + 1);
  ServerChild server({"--db", uri, "--threads", "2"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  auto health = grpc::health::v1::Health::NewStub(NewChannel(server, 0));
  auto stub = pb::Scalecast::NewStub(NewChannel(server, 1));
  const std::string service = "scalecast.v1.Scalecast";
  ASSERT_TRUE(HealthCheck(health.get(), service).ok());
  auto wait_for = [&](bool serving) {
    for (int i = 0; i < 600; ++i) {
      if (HealthCheck(health.get(), service).ok() == serving) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  // The database refuses connections, and the server's are cut.
  ASSERT_EQ(
      PgCluster::Exec(pg.Uri("postgres"), "ALTER DATABASE " + db + " WITH ALLOW_CONNECTIONS false"),
      "");
  ASSERT_EQ(PgCluster::Exec(pg.Uri("postgres"),
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                            "datname = '" +
                                db + "'"),
            "");
  EXPECT_TRUE(wait_for(false)) << "still SERVING with the store unreachable";
  EXPECT_TRUE(HealthCheck(health.get(), "").ok());  // alive: not to be restarted
  EXPECT_TRUE(PredictOnce(stub.get()).ok());
  ASSERT_EQ(
      PgCluster::Exec(pg.Uri("postgres"), "ALTER DATABASE " + db + " WITH ALLOW_CONNECTIONS true"),
      "");
  EXPECT_TRUE(wait_for(true)) << "not SERVING again with the store back";
}

// Medium: work went on after its caller gave up (a Validate over 1M runs used 11 more
// CPU-seconds past its deadline, a Calibrate a core for 70 s): the store read running is now
// interrupted in the database (PQcancel) when the call's deadline passes or its client cancels.
// The reads are made to wait by a lock on the labels table (every label-filtered read needs it).
// On a pool of 2 the long-read lane has one connection and one thread, so a read left running
// held it until the 30 s statement timeout. After each call below ends, with the lock still
// held, no statement of the server's waits for the lock any more, and an unfiltered
// ListMeasurements (which needs no labels) gets the lane.
TEST(Reliability, AStoreReadWhoseCallerGivesUpStopsInTheDatabase) {
  SCALECAST_NEED_POSTGRES();
  const std::string uri = PgCluster::Get().NewDatabase();
  ServerChild server({"--db", uri, "--threads", "2", "--db-pool-size", "2"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  auto stub = pb::Scalecast::NewStub(NewChannel(server, 0));
  PgLockHolder lock(uri, "BEGIN; LOCK TABLE measurement_labels IN ACCESS EXCLUSIVE MODE");
  ASSERT_EQ(lock.error(), "");
  const std::string waiting_sql =
      "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'scalecast-server' AND "
      "wait_event_type = 'Lock'";
  // Up to 20 s (the statement timeout, 30 s, would end it anyway): a bound on behaviour, not
  // on speed; it takes milliseconds.
  auto wait_for_waiting = [&](int64_t n) {
    for (int i = 0; i < 400; ++i) {
      if (PgQueryInt(uri, waiting_sql) == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  auto lane_is_free = [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::ListMeasurementsRequest req;
    pb::ListMeasurementsResponse resp;
    return stub->ListMeasurements(&ctx, req, &resp);
  };
  auto deadline_in = [](grpc::ClientContext* ctx, int ms) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
  };

  {  // Validate past its deadline (its count waits)
    grpc::ClientContext ctx;
    deadline_in(&ctx, 1000);
    pb::ValidateRequest req;
    (*req.mutable_filter()->mutable_labels())["run"] = "x";
    pb::ValidateResponse resp;
    const grpc::Status st = stub->Validate(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
    EXPECT_TRUE(wait_for_waiting(0)) << "Validate's read still waits in the database";
    const grpc::Status next = lane_is_free();
    EXPECT_TRUE(next.ok()) << "after Validate: " << next.error_message();
  }
  {  // ListMeasurements cancelled by its client while its page waits
    grpc::ClientContext ctx;
    deadline_in(&ctx, 120'000);
    grpc::Status st;
    std::thread call([&] {
      pb::ListMeasurementsRequest req;
      (*req.mutable_filter()->mutable_labels())["run"] = "x";
      pb::ListMeasurementsResponse resp;
      st = stub->ListMeasurements(&ctx, req, &resp);
    });
    EXPECT_TRUE(wait_for_waiting(1)) << "the page never waited for the lock";
    ctx.TryCancel();
    call.join();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED) << st.error_message();
    EXPECT_TRUE(wait_for_waiting(0)) << "ListMeasurements' read still waits in the database";
    const grpc::Status next = lane_is_free();
    EXPECT_TRUE(next.ok()) << "after ListMeasurements: " << next.error_message();
  }
  {  // Calibrate past its deadline (its count waits)
    grpc::ClientContext ctx;
    deadline_in(&ctx, 1000);
    pb::CalibrateRequest req;
    req.set_name("site");
    (*req.mutable_filter()->mutable_labels())["run"] = "x";
    pb::CalibrateResponse resp;
    const grpc::Status st = stub->Calibrate(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
    EXPECT_TRUE(wait_for_waiting(0)) << "Calibrate's read still waits in the database";
    const grpc::Status next = lane_is_free();
    EXPECT_TRUE(next.ok()) << "after Calibrate: " << next.error_message();
  }
  lock.Release();
}

// Medium (what remained open): gRPC holds a request whole before a handler, and write
// admission, see it. Its memory for calls is bounded by a grpc::ResourceQuota on the server
// (--grpc-memory-bytes, 256 MiB by default, and --grpc-max-threads), reported at start. With the
// quota at 1 MiB a 20 MB import is refused by gRPC itself, RESOURCE_EXHAUSTED, before any handler
// holds it; a small request still reaches its handler, and the server stays up.
TEST(Reliability, GrpcHoldsCallsWithinItsMemoryQuota) {
  ServerChild defaults({"--db", ":memory:"});
  ASSERT_TRUE(defaults.ok()) << defaults.Stderr();
  EXPECT_TRUE(
      absl::StrContains(defaults.startup_line(), "gRPC memory quota 256 MiB and 64 threads"))
      << defaults.startup_line();

  ServerChild server({"--db", ":memory:", "--grpc-memory-bytes", "1048576"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  EXPECT_TRUE(absl::StrContains(server.startup_line(), "gRPC memory quota 1 MiB and 64 threads"))
      << server.startup_line();
  auto stub = pb::Scalecast::NewStub(NewChannel(server, 0));
  auto import = [&](std::string csv) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    pb::ImportMeasurementsRequest req;
    req.set_csv(std::move(csv));
    pb::RecordMeasurementsResponse resp;
    return stub->ImportMeasurements(&ctx, req, &resp);
  };
  const grpc::Status large = import(std::string(20'000'000, 'x'));
  EXPECT_EQ(large.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << large.error_message();
  EXPECT_FALSE(absl::StrContains(large.error_message(), "line 1"))  // no handler read it
      << large.error_message();
  const grpc::Status small = import("x\n");
  EXPECT_EQ(small.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << small.error_message();
  EXPECT_TRUE(absl::StrContains(small.error_message(), "line 1")) << small.error_message();
  EXPECT_TRUE(server.Alive());

  ServerChild bad({"--db", ":memory:", "--grpc-memory-bytes", "1000"});
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.Stderr(), "--grpc-memory-bytes")) << bad.Stderr();
}

}  // namespace
}  // namespace scalecast
