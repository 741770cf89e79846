// ServerOptions: every knob of scalecast-server, with its default. Set from flags and
// environment variables (flags win): see ParseServerOptions and README "Configuration".
#ifndef SCALECAST_SERVER_OPTIONS_H_
#define SCALECAST_SERVER_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/planner.h"

namespace scalecast {

struct ServerOptions {
  // gRPC listen address (SCALECAST_LISTEN, --listen). Port 0 picks a free port.
  std::string listen_address = "127.0.0.1:50051";
  // The store (SCALECAST_DB, --db): a SQLite file (":memory:" for a throwaway store) or a
  // PostgreSQL URI "postgresql://user@host:port/dbname" shared by every replica.
  std::string db_path = "./var/scalecast.db";
  // File holding the PostgreSQL password (SCALECAST_DB_PASSWORD_FILE, --db-password-file); one
  // trailing newline is ignored. Empty = $PGPASSWORD or ~/.pgpass (libpq's own sources).
  std::string db_password_file;
  // PostgreSQL connections per replica (--db-pool-size).
  int db_pool_size = 8;
  // SQLite: the largest the database file may grow, 0 = no limit (--db-max-bytes); past it a
  // write is RESOURCE_EXHAUSTED, as on a full disk.
  int64_t db_max_bytes = 0;
  // Threads of the Boost.Asio pool that runs sweeps, validation and calibration
  // (SCALECAST_THREADS, --threads); 0 = one per core.
  int worker_threads = 0;
  // Threads that run writes and short store reads (--store-threads), apart from the compute
  // pool so that a one-row write never waits behind a calibration; 0 = the PostgreSQL pool size
  // (SQLite: 4).
  int store_threads = 0;
  // Threads that run long store reads (--read-threads): ListMeasurements and ListProfiles pages,
  // the runs Validate and Calibrate read. A lane of their own, so that writes and short reads
  // never wait behind them; 0 = the connections the PostgreSQL pool lends long reads (pool size
  // less a quarter, at least 1; SQLite: 2).
  int read_threads = 0;
  // Long reads one caller (one client connection) may have running or waiting at once
  // (--max-reads-per-caller); more is RESOURCE_EXHAUSTED, so that one caller cannot fill the
  // long-read lane for everyone.
  int max_reads_per_caller = 16;
  // Bytes the sweep cache may hold, least recently used evicted first (--sweep-cache-bytes).
  int64_t sweep_cache_bytes = 256 << 20;
  // Sweeps running or waiting for their reader at once (--max-sweeps); more is
  // RESOURCE_EXHAUSTED.
  int max_sweeps = 16;
  // Memory one sweep may hold for its layout spaces, every GPU count's axes together (listed
  // lazily: model/planner.h LayoutSpace) (--sweep-max-bytes).
  int64_t sweep_max_bytes = 64 << 20;
  // A sweep whose client has not taken a message for this long is cancelled
  // (--sweep-idle-timeout-ms), freeing its slot and memory.
  int sweep_idle_timeout_ms = 30'000;
  // Stored runs one Validate or Calibrate may read (--max-validate-runs); more is
  // RESOURCE_EXHAUSTED asking for a narrower filter.
  int64_t max_validate_runs = 1'000'000;
  // How long a calibration profile read from the store is trusted before it is read again
  // (--profile-refresh-ms): a profile replaced through one replica is seen by every replica
  // within this time.
  int profile_refresh_ms = 5'000;
  // Share of HBM the planner keeps free when a request leaves Cluster.hbm_headroom unset
  // (--hbm-headroom, 0..0.5); the default and its sources: model/planner.h.
  double hbm_headroom = kDefaultHbmHeadroom;
  // Accelerators RegisterAccelerator may store in all (--max-accelerators); more is
  // RESOURCE_EXHAUSTED.
  int max_registered_accelerators = 1000;
  // How long the registered accelerators read from the store are trusted before they are read
  // again (--accelerator-refresh-ms): a part registered or deleted through one replica is seen by
  // every replica within this time (at once for an id this replica has not seen).
  int accelerator_refresh_ms = 5'000;
  // Sweep limits (--sweep-max-layouts, --sweep-max-gpu-counts, --sweep-max-top-k): a request
  // over them is RESOURCE_EXHAUSTED.
  int64_t sweep_max_layouts = 1'000'000;  // per GPU count
  int sweep_max_gpu_counts = 64;
  int sweep_max_top_k = 100;
  // Compare takes at most this many scenarios (--max-compare).
  int max_compare_scenarios = 64;
  // RecordMeasurements takes at most this many measurements per batch (--max-batch).
  int max_record_batch = 100'000;
  // Memory the writes in progress (RecordMeasurements, ImportMeasurements) may hold together
  // (--max-write-bytes), estimated from each request's size and runs (kWriteBytesPerRun,
  // kWriteBytesPerChunk in server/service.h): a
  // write that would take the total past it is RESOURCE_EXHAUSTED (retry later), unless it is
  // the only one (a batch within --max-batch and --max-message-bytes always gets through alone).
  int64_t max_write_bytes = int64_t{512} << 20;
  // File holding the bearer token that writes must present (SCALECAST_AUTH_TOKEN_FILE,
  // --auth-token-file); empty = writes are open.
  std::string auth_token_file;
  // TLS certificate chain and private key, PEM (SCALECAST_TLS_CERT/_KEY, --tls-cert/--tls-key);
  // both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest message in either direction (--max-message-bytes).
  int max_message_bytes = 64 << 20;
  // gRPC's own bound (a grpc::ResourceQuota on the server), before write admission
  // (--max-write-bytes) sees a request: the memory its transport may hold for calls -- bytes
  // received and not yet delivered to a handler, the connections' buffers -- across all
  // connections (--grpc-memory-bytes); past it gRPC reads no more from the sockets (the senders
  // wait) and, under pressure, cancels calls RESOURCE_EXHAUSTED instead of allocating. And the
  // threads it may run for its synchronous services (reflection) (--grpc-max-threads). The
  // defaults fit the shipped 1 GiB limit: 256 MiB here, 512 MiB of admitted writes, the rest for
  // the process (README "Reliability").
  int64_t grpc_memory_bytes = int64_t{256} << 20;
  int grpc_max_threads = 64;
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

// The host of a "host:port" address (listen_address, metrics_address): what comes before its last
// ':' ("0.0.0.0:50051" -> "0.0.0.0", "[::]:50051" -> "[::]").
std::string AddressHost(const std::string& address);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_OPTIONS_H_
