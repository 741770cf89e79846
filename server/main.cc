// scalecast-server: the gRPC prediction service. Options from flags and environment
// (server/options.h); SIGINT/SIGTERM shut it down gracefully and it exits 0.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "model/version.h"
#include "server/options.h"
#include "server/server.h"

int main(int argc, char** argv) {
#ifdef NDEBUG
  // Abseil's mutex deadlock detection (on unless Abseil itself is built with NDEBUG, as
  // Debian's is not) records every lock's acquisition order, gRPC's locks included: ~7,000
  // instructions a call in callgrind, 6.4 % of a Predict and 11 % of a Health/Check (README,
  // "Predict vs Health"). Debug builds and the tests, which start servers in-process, keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<scalecast::ServerOptions> options =
      scalecast::ParseServerOptions(args, [](const char* name) { return std::getenv(name); });
  if (!options.ok()) {
    if (options.status().code() == absl::StatusCode::kNotFound) {
      std::fputs(std::string(options.status().message()).c_str(), stdout);
      return 0;
    }
    std::fprintf(stderr, "scalecast-server: %s\n%s",
                 std::string(options.status().message()).c_str(), scalecast::ServerUsage().c_str());
    return 2;
  }
  // Signals are handled on their own io_context thread (Boost.Asio), before any other thread
  // starts, so every thread inherits the default disposition and the signal_set receives them.
  boost::asio::io_context signals_io;
  boost::asio::signal_set signals(signals_io, SIGINT, SIGTERM);

  absl::StatusOr<std::unique_ptr<scalecast::Server>> server = scalecast::Server::Start(*options);
  if (!server.ok()) {
    std::fprintf(stderr, "scalecast-server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  scalecast::Server* s = server->get();
  // The bound address as configured (0.0.0.0 stays 0.0.0.0), with the port actually bound.
  const std::string host = scalecast::AddressHost(options->listen_address);
  std::printf("scalecast-server %s (model %s) listening on %s:%d, database %s", SCALECAST_VERSION,
              scalecast::ModelVersion().c_str(), host.c_str(), s->port(), s->db_display().c_str());
  if (s->metrics_port() > 0) {
    std::printf(", metrics on http://%s:%d/metrics",
                scalecast::AddressHost(options->metrics_address).c_str(), s->metrics_port());
  }
  // The bounds gRPC itself holds calls to, before the server's own admission sees them.
  std::printf(", gRPC memory quota %lld MiB and %d threads\n",
              static_cast<long long>(options->grpc_memory_bytes >> 20), options->grpc_max_threads);
  std::fflush(stdout);

  signals.async_wait([s](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    std::fprintf(stderr, "scalecast-server: signal %d, shutting down\n", signo);
    s->Shutdown();
  });
  std::thread signal_thread([&signals_io] { signals_io.run(); });
  s->Wait();
  signals_io.stop();
  signal_thread.join();
  server->reset();
  std::fprintf(stderr, "scalecast-server: stopped\n");
  return 0;
}
