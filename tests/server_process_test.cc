// The scalecast-server binary as a process: SIGTERM during a long sweep ends it cleanly and the
// server exits 0; SIGKILL while a client is recording loses no acknowledged batch and leaves no
// partial one; a layered calibration profile reads back the same after a restart.
#include <fcntl.h>
#include <grpcpp/create_channel.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/scalecast_grpc.h"
#include "tests/proto_scenarios.h"
#include "tests/scratch_dir.h"

extern char** environ;

namespace scalecast {
namespace {

namespace pb = ::scalecast::v1;

// A server child process; the port is read from its start-up line.
class ServerProcess {
 public:
  explicit ServerProcess(const std::vector<std::string>& extra) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> args = {SCALECAST_SERVER_BIN, "--listen", "127.0.0.1:0",
                                     "--metrics-address", ""};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, SCALECAST_SERVER_BIN, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    // Read the start-up line (bounded: the server prints it once listening).
    std::string line;
    char c;
    while (line.size() < 4096 && read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    std::smatch m;
    const std::regex re("listening on ([0-9.]+):([0-9]+)");
    if (std::regex_search(line, m, re)) address_ = m[1].str() + ":" + m[2].str();
    EXPECT_FALSE(address_.empty()) << "start-up line: " << line;
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& address() const { return address_; }
  void Signal(int sig) { kill(pid_, sig); }
  // Waits up to `seconds` for the process to exit; returns its wait status or -1.
  int Wait(int seconds) {
    for (int i = 0; i < seconds * 20; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  std::string address_;
};

TEST(ServerProcess, SigtermDuringALongSweepEndsItCleanlyAndExitsZero) {
  testing::ScratchDir dir;
  // The sweep below holds a few hundred MB of layouts: this test is about SIGTERM, not the
  // per-sweep memory bound, so the bound is raised for it.
  ServerProcess server({"--db", dir.File("sigterm.db"), "--grace-period-ms", "0", "--threads", "2",
                        "--sweep-max-bytes", "1073741824"});
  auto stub = pb::Scalecast::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  pb::SweepRequest req;
  pb::Scenario* base = req.mutable_base();
  // Long context and a batch with many divisors (2^16 * 3^2 * 5 * 7 sequences): each of the
  // 64 GPU counts (multiples of 64) has tens of thousands of layouts, seconds of work in all.
  base->mutable_workload()->mutable_model()->set_name("llama2-7b");
  base->mutable_workload()->set_seq_len(131072);
  base->mutable_workload()->set_global_batch(65536 * 9 * 5 * 7);
  base->mutable_cluster()->set_accelerator("h100-sxm-80gb");
  for (int i = 1; i <= 64; ++i) req.add_gpu_counts(64 * i);
  grpc::ClientContext ctx;
  auto reader = stub->Sweep(&ctx, req);
  pb::SweepResponse msg;
  ASSERT_TRUE(reader->Read(&msg));  // the sweep is running: progress has started
  EXPECT_TRUE(msg.has_progress());
  server.Signal(SIGTERM);
  int results = 0;
  while (reader->Read(&msg)) results += msg.has_result();
  const grpc::Status s = reader->Finish();
  // Cut short (CANCELLED/UNAVAILABLE) or, if it raced to the end, complete: never a crash.
  EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::CANCELLED ||
              s.error_code() == grpc::StatusCode::UNAVAILABLE)
      << s.error_code() << " " << s.error_message();
  EXPECT_LT(results, 64);
  const int status = server.Wait(30);
  ASSERT_NE(status, -1) << "the server did not exit";
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

pb::RecordMeasurementsRequest Batch(int n, int tag) {
  pb::RecordMeasurementsRequest req;
  for (int i = 0; i < n; ++i) {
    pb::Measurement* m = req.add_measurements();
    pb::Scenario* s = m->mutable_scenario();
    s->mutable_workload()->mutable_model()->set_name("llama2-7b");
    s->mutable_workload()->set_seq_len(4096);
    s->mutable_workload()->set_global_batch(256);
    s->mutable_cluster()->set_accelerator("h100-sxm-80gb");
    s->mutable_cluster()->set_num_gpus(64);
    m->set_tokens_per_s_per_gpu(9000 + i + 0.001 * tag);  // distinct runs: no duplicates
    (*m->mutable_labels())["batch"] = std::to_string(tag);
  }
  return req;
}

TEST(ServerProcess, SigkillMidStreamKeepsEveryAcknowledgedBatchWhole) {
  testing::ScratchDir dir;
  const std::string db = dir.File("sigkill.db");
  constexpr int kBatch = 25;
  int acked = 0;
  {
    ServerProcess server({"--db", db});
    auto stub = pb::Scalecast::NewStub(
        grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    // A writer thread records batches back to back; the server is killed under it.
    std::atomic<int> acks{0};
    std::atomic<bool> stop{false};
    std::thread writer([&] {
      for (int b = 0; !stop; ++b) {
        grpc::ClientContext ctx;
        pb::RecordMeasurementsResponse resp;
        if (!stub->RecordMeasurements(&ctx, Batch(kBatch, b), &resp).ok()) break;
        ++acks;
      }
    });
    while (acks < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server.Signal(SIGKILL);
    writer.join();
    stop = true;
    acked = acks;
    server.Wait(10);
  }
  ServerProcess again({"--db", db});
  auto stub = pb::Scalecast::NewStub(
      grpc::CreateChannel(again.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  pb::ListMeasurementsRequest req;
  req.set_page_size(1000);
  pb::ListMeasurementsResponse resp;
  ASSERT_TRUE(stub->ListMeasurements(&ctx, req, &resp).ok());
  const int64_t stored = resp.total_count();
  EXPECT_GE(stored, int64_t{acked} * kBatch);      // nothing acknowledged is lost
  EXPECT_LE(stored, int64_t{acked + 1} * kBatch);  // at most the in-flight batch, if it committed
  EXPECT_EQ(stored % kBatch, 0);                   // no partial batch
  std::map<std::string, int> per_batch;
  std::string token;
  do {
    grpc::ClientContext c;
    pb::ListMeasurementsRequest r;
    r.set_page_size(1000);
    r.set_page_token(token);
    pb::ListMeasurementsResponse page;
    ASSERT_TRUE(stub->ListMeasurements(&c, r, &page).ok());
    for (const auto& m : page.measurements()) ++per_batch[m.labels().at("batch")];
    token = page.next_page_token();
  } while (!token.empty());
  for (const auto& [batch, n] : per_batch) EXPECT_EQ(n, kBatch) << "batch " << batch;
  again.Signal(SIGTERM);
  const int status = again.Wait(30);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

pb::Scenario H100Run(int gpus) { return testing::FullLayoutRequest("llama2-7b", gpus); }

double PredictedPerGpu(pb::Scalecast::Stub* stub, pb::Scenario s, const std::string& profile) {
  s.set_calibration(profile);
  grpc::ClientContext ctx;
  pb::PredictRequest req;
  *req.mutable_scenario() = s;
  pb::PredictResponse resp;
  const grpc::Status st = stub->Predict(&ctx, req, &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return resp.prediction().tokens_per_s_per_gpu();
}

TEST(ServerProcess, ALayeredProfileSurvivesARestart) {
  testing::ScratchDir dir;
  const std::string db = dir.File("layer.db");
  double before_restart = 0;
  pb::CalibrationProfile fitted;
  {
    ServerProcess server({"--db", db});
    auto stub = pb::Scalecast::NewStub(
        grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    // Two runs of a stack 15 % slower on H100 than the built-in profile predicts.
    pb::RecordMeasurementsRequest rec;
    for (int gpus : {64, 128}) {
      pb::Measurement* m = rec.add_measurements();
      *m->mutable_scenario() = H100Run(gpus);
      m->set_tokens_per_s_per_gpu(0.85 * PredictedPerGpu(stub.get(), H100Run(gpus), ""));
      m->set_source("lab");
    }
    grpc::ClientContext rc;
    pb::RecordMeasurementsResponse recorded;
    ASSERT_TRUE(stub->RecordMeasurements(&rc, rec, &recorded).ok());
    grpc::ClientContext cc;
    pb::CalibrateRequest req;
    req.set_name("lab");
    req.mutable_filter()->set_source("lab");
    pb::CalibrateResponse cal;
    const grpc::Status s = stub->Calibrate(&cc, req, &cal);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_TRUE(cal.accepted()) << cal.reason();
    fitted = cal.profile();
    before_restart = PredictedPerGpu(stub.get(), H100Run(256), "lab");
    EXPECT_LT(before_restart, PredictedPerGpu(stub.get(), H100Run(256), ""));
    server.Signal(SIGKILL);
    server.Wait(10);
  }
  ServerProcess again({"--db", db});
  auto stub = pb::Scalecast::NewStub(
      grpc::CreateChannel(again.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  pb::ListProfilesResponse listed;
  ASSERT_TRUE(stub->ListProfiles(&ctx, pb::ListProfilesRequest(), &listed).ok());
  ASSERT_EQ(listed.profiles_size(), 1);
  const pb::CalibrationProfile& p = listed.profiles(0);
  EXPECT_EQ(p.base(), "default");
  ASSERT_EQ(p.changes_size(), fitted.changes_size());
  ASSERT_GT(p.changes_size(), 0);
  for (int i = 0; i < p.changes_size(); ++i) {
    EXPECT_EQ(p.changes(i).key(), fitted.changes(i).key());
    EXPECT_EQ(p.changes(i).old_value(), fitted.changes(i).old_value());
    EXPECT_EQ(p.changes(i).new_value(), fitted.changes(i).new_value());
    EXPECT_EQ(p.changes(i).runs(), 2);
  }
  EXPECT_EQ(p.parameters_size(), p.changes_size());  // only what it changed
  EXPECT_EQ(PredictedPerGpu(stub.get(), H100Run(256), "lab"), before_restart);
  again.Signal(SIGTERM);
  EXPECT_NE(again.Wait(30), -1);
}

TEST(ServerProcess, HealthGoesNotServingOnShutdown) {
  testing::ScratchDir dir;
  ServerProcess server({"--db", dir.File("health.db"), "--grace-period-ms", "1500"});
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("scalecast.v1.Scalecast");
  auto watch = health->Watch(&ctx, req);
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(watch->Read(&resp));
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  server.Signal(SIGTERM);
  bool not_serving = false;
  while (watch->Read(&resp)) {
    if (resp.status() == grpc::health::v1::HealthCheckResponse::NOT_SERVING) {
      not_serving = true;
      break;
    }
  }
  ctx.TryCancel();
  watch->Finish().IgnoreError();
  EXPECT_TRUE(not_serving);
  const int status = server.Wait(30);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace scalecast
