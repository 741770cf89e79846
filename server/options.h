// ServerOptions: every knob of scalecast-server, with its default. Set from flags and
// environment variables (flags win): see ParseServerOptions and README "Configuration".
#ifndef SCALECAST_SERVER_OPTIONS_H_
#define SCALECAST_SERVER_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace scalecast {

struct ServerOptions {
  // gRPC listen address (SCALECAST_LISTEN, --listen). Port 0 picks a free port.
  std::string listen_address = "127.0.0.1:50051";
  // SQLite database file (SCALECAST_DB, --db); ":memory:" for a throwaway store.
  std::string db_path = "./var/scalecast.db";
  // Threads of the Boost.Asio pool that runs sweeps, validation and calibration
  // (SCALECAST_THREADS, --threads); 0 = one per core.
  int worker_threads = 0;
  // Sweep limits (--sweep-max-layouts, --sweep-max-gpu-counts, --sweep-max-top-k): a request
  // over them is RESOURCE_EXHAUSTED.
  int64_t sweep_max_layouts = 1'000'000;  // per GPU count
  int sweep_max_gpu_counts = 64;
  int sweep_max_top_k = 100;
  // Compare takes at most this many scenarios (--max-compare).
  int max_compare_scenarios = 64;
  // RecordMeasurements takes at most this many measurements per batch (--max-batch).
  int max_record_batch = 100'000;
  // File holding the bearer token that writes must present (SCALECAST_AUTH_TOKEN_FILE,
  // --auth-token-file); empty = writes are open.
  std::string auth_token_file;
  // TLS certificate chain and private key, PEM (SCALECAST_TLS_CERT/_KEY, --tls-cert/--tls-key);
  // both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest message in either direction (--max-message-bytes).
  int max_message_bytes = 64 << 20;
  // HTTP/2 keepalive pings to idle clients (--keepalive-time-ms, --keepalive-timeout-ms).
  int keepalive_time_ms = 60'000;
  int keepalive_timeout_ms = 20'000;
  // Extra catalog entries (accelerators, presets) in catalog.txt format (SCALECAST_CATALOG,
  // --catalog); added to the built-in catalog at start.
  std::string catalog_file;
  // On SIGINT/SIGTERM, in-flight calls get this long to finish (--grace-period-ms).
  int grace_period_ms = 5'000;
  // Prometheus metrics endpoint (SCALECAST_METRICS_ADDRESS, --metrics-address); empty = off.
  std::string metrics_address = "127.0.0.1:9464";
};

// Parses argv (argv[0] skipped) over the environment (`getenv`). Unknown flags and bad values are
// INVALID_ARGUMENT naming the flag. `--help` returns NOT_FOUND carrying the usage text.
absl::StatusOr<ServerOptions> ParseServerOptions(
    const std::vector<std::string>& args, const std::function<const char*(const char*)>& getenv);

std::string ServerUsage();

}  // namespace scalecast

#endif  // SCALECAST_SERVER_OPTIONS_H_
