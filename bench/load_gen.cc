// Load generator: N concurrent callers issue Predict over gRPC on loopback for a fixed time and
// report calls per second and latency percentiles; then the time of a cold and a cached Sweep;
// then RecordMeasurements (a store write each) from the same number of callers.
//
//   scalecast-loadgen [--server HOST:PORT | --db PATH-OR-URI] [--callers N] [--seconds S]
//                     [--sweep-repeats K] [--record-seconds S] [--record-batch B]
//
// Without --server it starts an in-process server on 127.0.0.1:0 over --db (default: an
// in-memory SQLite store; a postgresql:// URI measures the PostgreSQL store), so client and
// server share the machine's cores either way. --record-seconds 0 skips the write phase. Flags on
// CLI11 (tools/args.h), --help for the list.
#include <grpcpp/create_channel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "proto/scalecast_grpc.h"
#include "server/server.h"
#include "tools/args.h"

namespace {

namespace pb = ::scalecast::v1;
using Clock = std::chrono::steady_clock;

pb::Scenario PredictScenario() {
  pb::Scenario s;
  s.mutable_workload()->mutable_model()->set_name("llama2-70b");
  s.mutable_workload()->set_seq_len(4096);
  s.mutable_workload()->set_global_batch(4096);
  s.mutable_cluster()->set_accelerator("h100-sxm-80gb");
  s.mutable_cluster()->set_num_gpus(2048);
  pb::Parallelism* p = s.mutable_parallelism();
  p->set_tp(4);
  p->set_pp(4);
  p->set_vpp(2);
  p->set_cp(1);
  p->set_sharding(pb::SHARDING_FSDP);
  p->set_micro_batch(1);
  p->set_recompute(pb::RECOMPUTE_SELECTIVE);
  p->set_sequence_parallel(true);
  return s;
}

// One caller: a chain of asynchronous Predict calls, the next issued when one completes.
class Caller {
 public:
  Caller(pb::Scalecast::Stub* stub, Clock::time_point until, std::atomic<int>* running,
         std::mutex* mu, std::condition_variable* cv)
      : stub_(stub), until_(until), running_(running), mu_(mu), cv_(cv) {
    *req_.mutable_scenario() = PredictScenario();
    latencies_.reserve(1 << 16);
  }
  void Start() { Issue(); }
  const std::vector<double>& latencies() const { return latencies_; }
  int errors() const { return errors_; }

 private:
  void Issue() {
    ctx_ = std::make_unique<grpc::ClientContext>();
    resp_.Clear();
    started_ = Clock::now();
    stub_->async()->Predict(ctx_.get(), &req_, &resp_, [this](grpc::Status s) {
      const Clock::time_point now = Clock::now();
      if (s.ok()) {
        latencies_.push_back(std::chrono::duration<double>(now - started_).count());
      } else {
        ++errors_;
      }
      if (now < until_) {
        Issue();
        return;
      }
      std::lock_guard<std::mutex> l(*mu_);
      if (--*running_ == 0) cv_->notify_all();
    });
  }

  pb::Scalecast::Stub* stub_;
  Clock::time_point until_;
  std::atomic<int>* running_;
  std::mutex* mu_;
  std::condition_variable* cv_;
  pb::PredictRequest req_;
  pb::PredictResponse resp_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  Clock::time_point started_;
  std::vector<double> latencies_;
  int errors_ = 0;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

double TimeSweep(pb::Scalecast::Stub* stub, bool refresh, int* results, bool* cached) {
  pb::SweepRequest req;
  pb::Scenario* base = req.mutable_base();
  base->mutable_workload()->mutable_model()->set_name("llama2-70b");
  base->mutable_workload()->set_seq_len(4096);
  base->mutable_workload()->set_global_batch(4096);
  base->mutable_cluster()->set_accelerator("h100-sxm-80gb");
  for (int g : {256, 512, 1024, 2048}) req.add_gpu_counts(g);
  req.set_top_k(5);
  req.set_refresh(refresh);
  const Clock::time_point t0 = Clock::now();
  grpc::ClientContext ctx;
  auto reader = stub->Sweep(&ctx, req);
  pb::SweepResponse msg;
  *results = 0;
  *cached = true;
  while (reader->Read(&msg)) {
    if (msg.has_result()) {
      ++*results;
      *cached &= msg.result().cached();
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "sweep failed: %s\n", s.error_message().c_str());
    std::exit(1);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// RecordMeasurements from `callers` threads for `seconds`, `batch` runs a call; each call's
// latency. Every run is a distinct, valid measurement.
void RecordPhase(const std::shared_ptr<grpc::Channel>& channel, int callers, int seconds,
                 int batch) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point until = start + std::chrono::seconds(seconds);
  std::vector<std::vector<double>> lat(callers);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      auto stub = pb::Scalecast::NewStub(channel);
      pb::RecordMeasurementsRequest req;
      for (int i = 0; i < batch; ++i) {
        pb::Measurement* m = req.add_measurements();
        *m->mutable_scenario() = PredictScenario();
        m->set_tokens_per_s_per_gpu(900 + i);
        m->set_source("loadgen");
        (*m->mutable_labels())["caller"] = std::to_string(t);
      }
      while (Clock::now() < until) {
        grpc::ClientContext ctx;
        pb::RecordMeasurementsResponse resp;
        const Clock::time_point t0 = Clock::now();
        if (stub->RecordMeasurements(&ctx, req, &resp).ok()) {
          lat[t].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        } else {
          ++errors;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (const auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::printf(
      "RecordMeasurements (%d runs a call, %d callers): %zu calls in %.2f s = %.0f calls/s "
      "(%.0f runs/s), errors %d\n",
      batch, callers, all.size(), elapsed, all.size() / elapsed, batch * all.size() / elapsed,
      errors.load());
  std::printf("RecordMeasurements latency: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
              1e3 * Percentile(all, 0.50), 1e3 * Percentile(all, 0.90), 1e3 * Percentile(all, 0.99),
              1e3 * Percentile(all, 1.0));
}

// The command line's settings.
struct Options {
  std::string server_addr;
  std::string db = ":memory:";
  int callers = 16, seconds = 10, sweep_repeats = 20, record_seconds = 5, record_batch = 10;
};

void AddOptions(CLI::App* app, Options* o) {
  app->add_option("--server", o->server_addr, "a running server (default: one in-process)")
      ->type_name("HOST:PORT");
  app->add_option("--db", o->db,
                  "the in-process server's store: a SQLite path or a postgresql:// URI")
      ->type_name("PATH-OR-URI")
      ->capture_default_str();
  app->add_option("--callers", o->callers, "concurrent callers")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--seconds", o->seconds, "length of the Predict phase")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app->add_option("--sweep-repeats", o->sweep_repeats, "cached sweeps timed")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--record-seconds", o->record_seconds,
                  "length of the RecordMeasurements phase (0: none)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app->add_option("--record-batch", o->record_batch, "runs a RecordMeasurements call carries")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
}

// An in-process server on 127.0.0.1:0 over `db`, or null (said on stderr).
std::unique_ptr<scalecast::Server> StartLocalServer(const std::string& db) {
  scalecast::ServerOptions o;
  o.listen_address = "127.0.0.1:0";
  o.db_path = db;
  o.metrics_address = "";
  auto s = scalecast::Server::Start(o);
  if (!s.ok()) {
    std::fprintf(stderr, "cannot start a server: %s\n", std::string(s.status().message()).c_str());
    return nullptr;
  }
  return *std::move(s);
}

// Connection and caches: 200 predictions; false (said on stderr) when one fails.
bool WarmUp(pb::Scalecast::Stub* stub) {
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    pb::PredictRequest req;
    *req.mutable_scenario() = PredictScenario();
    pb::PredictResponse resp;
    grpc::Status s = stub->Predict(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "predict failed: %s\n", s.error_message().c_str());
      return false;
    }
  }
  return true;
}

// `callers` callers predicting for `seconds`: calls a second and latency percentiles; returns
// the failed calls.
int PredictPhase(pb::Scalecast::Stub* stub, int callers, int seconds) {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> running{callers};
  const Clock::time_point start = Clock::now();
  const Clock::time_point until = start + std::chrono::seconds(seconds);
  std::vector<std::unique_ptr<Caller>> pool;
  for (int i = 0; i < callers; ++i) {
    pool.push_back(std::make_unique<Caller>(stub, until, &running, &mu, &cv));
  }
  for (auto& c : pool) c->Start();
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return running.load() == 0; });
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  int errors = 0;
  for (auto& c : pool) {
    all.insert(all.end(), c->latencies().begin(), c->latencies().end());
    errors += c->errors();
  }
  std::printf("Predict: %zu calls in %.2f s = %.0f calls/s, errors %d\n", all.size(), elapsed,
              all.size() / elapsed, errors);
  std::printf("Predict latency: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n",
              1e3 * Percentile(all, 0.50), 1e3 * Percentile(all, 0.90), 1e3 * Percentile(all, 0.99),
              1e3 * Percentile(all, 1.0));
  return errors;
}

// One cold sweep, then `repeats` cached ones; false (said on stderr) when one is not cached.
bool SweepPhase(pb::Scalecast::Stub* stub, int repeats) {
  int results = 0;
  bool cached = false;
  const double cold = TimeSweep(stub, true, &results, &cached);
  std::printf(
      "Sweep (llama2-70b, H100, 4 GPU counts, every layout): cold %.1f ms (%d results, "
      "cached=%s)\n",
      1e3 * cold, results, cached ? "true" : "false");
  std::vector<double> warm;
  for (int i = 0; i < repeats; ++i) {
    warm.push_back(TimeSweep(stub, false, &results, &cached));
    if (!cached) {
      std::fprintf(stderr, "expected a cached sweep\n");
      return false;
    }
  }
  std::printf("Sweep cached: p50 %.2f ms, max %.2f ms over %d repeats\n",
              1e3 * Percentile(warm, 0.5), 1e3 * Percentile(warm, 1.0), repeats);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "Load generator: concurrent callers predict over gRPC for a fixed time (calls a second, "
      "latency percentiles), then a cold and a cached sweep, then RecordMeasurements writes.",
      "scalecast-loadgen");
  Options o;
  AddOptions(&app, &o);
  if (std::optional<int> exit = scalecast::tools::ParseCommandLine(&app, argc, argv)) return *exit;
  std::unique_ptr<scalecast::Server> server;
  if (o.server_addr.empty()) {
    server = StartLocalServer(o.db);
    if (server == nullptr) return 1;
    o.server_addr = server->address();
  }
  auto channel = grpc::CreateChannel(o.server_addr, grpc::InsecureChannelCredentials());
  auto stub = pb::Scalecast::NewStub(channel);
  std::printf("server %s%s, %d callers, %d s\n", o.server_addr.c_str(),
              server ? (" (in-process, store " + server->db_display() + ")").c_str() : "",
              o.callers, o.seconds);
  if (!WarmUp(stub.get())) return 1;
  const int errors = PredictPhase(stub.get(), o.callers, o.seconds);
  if (!SweepPhase(stub.get(), o.sweep_repeats)) return 1;
  if (o.record_seconds > 0) RecordPhase(channel, o.callers, o.record_seconds, o.record_batch);
  if (server) server->Shutdown();
  return errors == 0 ? 0 : 1;
}
