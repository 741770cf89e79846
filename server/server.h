// scalecast-server as a library: builds the gRPC server (service, health, reflection, TLS,
// limits, keepalive) over the store and the worker pool, and shuts it down gracefully.
#ifndef SCALECAST_SERVER_SERVER_H_
#define SCALECAST_SERVER_SERVER_H_

#include <grpcpp/server.h>

#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "model/catalog.h"
#include "server/options.h"
#include "server/service.h"
#include "storage/store.h"

namespace prometheus {
class Registry;
}

namespace scalecast {

class Metrics;

class Server {
 public:
  // Opens the store, starts the pool and the gRPC server (and the metrics endpoint when
  // options.metrics_address is set). `registry` may be null: the server then makes its own.
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options, std::shared_ptr<prometheus::Registry> registry = nullptr);
  ~Server();

  int port() const { return port_; }                  // the bound gRPC port
  int metrics_port() const { return metrics_port_; }  // 0 when metrics are off
  std::string address() const;                        // host:port clients dial
  // The store's address as it may be logged (a PostgreSQL URI without its password).
  std::string db_display() const { return store_ ? store_->DisplayAddress() : ""; }

  // Health goes NOT_SERVING, new calls are refused, in-flight calls get the grace period, then
  // the rest are cancelled; the pool drains and the store closes. Idempotent.
  void Shutdown();
  // Blocks until the gRPC server has stopped.
  void Wait();

 private:
  Server() = default;

  ServerOptions options_;
  Catalog catalog_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
  std::unique_ptr<boost::asio::thread_pool> io_pool_;    // writes and short store reads
  std::unique_ptr<boost::asio::thread_pool> read_pool_;  // long store reads
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<ScalecastService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int metrics_port_ = 0;
  bool shut_down_ = false;
  // Readiness: the scalecast service is NOT_SERVING while the store does not answer (the
  // overall "" service, liveness, stays SERVING: the process is fine). Probed every
  // kStoreProbeMs by health_thread_, which also copies Store::InterruptedReads to the metrics.
  void ProbeStoreLoop();
  std::thread health_thread_;
  std::mutex health_mu_;
  std::condition_variable health_cv_;
  bool health_stop_ = false;  // guarded by health_mu_
};

}  // namespace scalecast

#endif  // SCALECAST_SERVER_SERVER_H_
