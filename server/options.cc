#include "server/options.h"

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace scalecast {
namespace {

struct Flag {
  const char* env;  // may be null
  const char* help;
  std::function<bool(const std::string&, ServerOptions*)> set;
};

template <typename T>
std::function<bool(const std::string&, ServerOptions*)> IntField(T ServerOptions::*field, T lo) {
  return [field, lo](const std::string& v, ServerOptions* o) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(v, &x) || x < lo || x > std::numeric_limits<T>::max()) return false;
    o->*field = static_cast<T>(x);
    return true;
  };
}

std::function<bool(const std::string&, ServerOptions*)> DoubleField(double ServerOptions::*f,
                                                                    double lo, double hi) {
  return [f, lo, hi](const std::string& v, ServerOptions* o) {
    double x = 0;
    if (!absl::SimpleAtod(v, &x) || !(x >= lo && x <= hi)) return false;
    o->*f = x;
    return true;
  };
}

std::function<bool(const std::string&, ServerOptions*)> StrField(std::string ServerOptions::*f) {
  return [f](const std::string& v, ServerOptions* o) {
    o->*f = v;
    return true;
  };
}

const std::map<std::string, Flag>& Flags() {
  static const auto* kFlags = new std::map<std::string, Flag>{
      {"listen",
       {"SCALECAST_LISTEN", "gRPC address (127.0.0.1:50051)",
        StrField(&ServerOptions::listen_address)}},
      {"db",
       {"SCALECAST_DB", "SQLite file (./var/scalecast.db) or postgresql://user@host:port/dbname",
        StrField(&ServerOptions::db_path)}},
      {"db-password-file",
       {"SCALECAST_DB_PASSWORD_FILE", "PostgreSQL password file ('' = $PGPASSWORD)",
        StrField(&ServerOptions::db_password_file)}},
      {"db-pool-size",
       {nullptr, "PostgreSQL connections (8)", IntField(&ServerOptions::db_pool_size, 1)}},
      {"db-max-bytes",
       {nullptr, "SQLite file size limit, 0 = none (0)",
        IntField<int64_t>(&ServerOptions::db_max_bytes, 0)}},
      {"threads",
       {"SCALECAST_THREADS", "worker pool threads, 0 = cores",
        IntField(&ServerOptions::worker_threads, 0)}},
      {"store-threads",
       {nullptr, "store call threads, 0 = pool size", IntField(&ServerOptions::store_threads, 0)}},
      {"read-threads",
       {nullptr, "long store read threads, 0 = 3/4 of the pool size",
        IntField(&ServerOptions::read_threads, 0)}},
      {"max-reads-per-caller",
       {nullptr, "long reads one client connection may have at once (16)",
        IntField(&ServerOptions::max_reads_per_caller, 1)}},
      {"sweep-cache-bytes",
       {nullptr, "sweep cache size bound (268435456)",
        IntField<int64_t>(&ServerOptions::sweep_cache_bytes, 0)}},
      {"max-sweeps", {nullptr, "concurrent sweeps (16)", IntField(&ServerOptions::max_sweeps, 1)}},
      {"sweep-max-bytes",
       {nullptr, "memory one sweep may hold (67108864)",
        IntField<int64_t>(&ServerOptions::sweep_max_bytes, 1024)}},
      {"sweep-idle-timeout-ms",
       {nullptr, "cancel a sweep whose reader stalls this long (30000)",
        IntField(&ServerOptions::sweep_idle_timeout_ms, 100)}},
      {"max-validate-runs",
       {nullptr, "stored runs per Validate/Calibrate (1000000)",
        IntField<int64_t>(&ServerOptions::max_validate_runs, 1)}},
      {"profile-refresh-ms",
       {nullptr, "re-read stored profiles after (5000)",
        IntField(&ServerOptions::profile_refresh_ms, 0)}},
      {"hbm-headroom",
       {nullptr, "share of HBM the planner keeps free, 0..0.5 (0.05)",
        DoubleField(&ServerOptions::hbm_headroom, 0, kMaxHbmHeadroom)}},
      {"max-accelerators",
       {nullptr, "registered accelerators at most (1000)",
        IntField(&ServerOptions::max_registered_accelerators, 0)}},
      {"accelerator-refresh-ms",
       {nullptr, "re-read registered accelerators after (5000)",
        IntField(&ServerOptions::accelerator_refresh_ms, 0)}},
      {"sweep-max-layouts",
       {nullptr, "layouts per GPU count a sweep may search (1000000)",
        IntField<int64_t>(&ServerOptions::sweep_max_layouts, 1)}},
      {"sweep-max-gpu-counts",
       {nullptr, "GPU counts per sweep (64)", IntField(&ServerOptions::sweep_max_gpu_counts, 1)}},
      {"sweep-max-top-k",
       {nullptr, "largest top_k (100)", IntField(&ServerOptions::sweep_max_top_k, 1)}},
      {"max-compare",
       {nullptr, "scenarios per Compare (64)", IntField(&ServerOptions::max_compare_scenarios, 1)}},
      {"max-batch",
       {nullptr, "measurements per RecordMeasurements (100000)",
        IntField(&ServerOptions::max_record_batch, 1)}},
      {"max-write-bytes",
       {nullptr, "memory writes in progress may hold together (536870912)",
        IntField<int64_t>(&ServerOptions::max_write_bytes, 1 << 20)}},
      {"auth-token-file",
       {"SCALECAST_AUTH_TOKEN_FILE", "bearer token file for writes",
        StrField(&ServerOptions::auth_token_file)}},
      {"tls-cert",
       {"SCALECAST_TLS_CERT", "PEM certificate chain", StrField(&ServerOptions::tls_cert_file)}},
      {"tls-key", {"SCALECAST_TLS_KEY", "PEM private key", StrField(&ServerOptions::tls_key_file)}},
      {"max-message-bytes",
       {nullptr, "largest message (67108864)", IntField(&ServerOptions::max_message_bytes, 1024)}},
      {"grpc-memory-bytes",
       {nullptr, "memory gRPC may hold for calls before the handlers see them (268435456)",
        IntField<int64_t>(&ServerOptions::grpc_memory_bytes, 1 << 20)}},
      {"grpc-max-threads",
       {nullptr, "threads gRPC may run for synchronous services (64)",
        IntField(&ServerOptions::grpc_max_threads, 4)}},
      {"keepalive-time-ms",
       {nullptr, "keepalive ping interval (60000)",
        IntField(&ServerOptions::keepalive_time_ms, 1000)}},
      {"keepalive-timeout-ms",
       {nullptr, "keepalive ping timeout (20000)",
        IntField(&ServerOptions::keepalive_timeout_ms, 1000)}},
      {"catalog",
       {"SCALECAST_CATALOG", "extra catalog file", StrField(&ServerOptions::catalog_file)}},
      {"grace-period-ms",
       {nullptr, "shutdown grace period (5000)", IntField(&ServerOptions::grace_period_ms, 0)}},
      {"metrics-address",
       {"SCALECAST_METRICS_ADDRESS", "Prometheus address (127.0.0.1:9464), '' = off",
        StrField(&ServerOptions::metrics_address)}},
  };
  return *kFlags;
}

}  // namespace

std::string AddressHost(const std::string& address) {
  return address.substr(0, address.rfind(':'));
}

std::string ServerUsage() {
  std::string out = "usage: scalecast-server [--flag=value ...]\n";
  for (const auto& [name, f] : Flags()) {
    absl::StrAppend(&out, "  --", name, "  ", f.help, f.env ? absl::StrCat("  [$", f.env, "]") : "",
                    "\n");
  }
  return out;
}

absl::StatusOr<ServerOptions> ParseServerOptions(
    const std::vector<std::string>& args, const std::function<const char*(const char*)>& getenv) {
  ServerOptions o;
  for (const auto& [name, f] : Flags()) {
    if (f.env == nullptr) continue;
    const char* v = getenv(f.env);
    if (v != nullptr && !f.set(v, &o)) {
      return absl::InvalidArgumentError(absl::StrCat("$", f.env, ": bad value '", v, "'"));
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") return absl::NotFoundError(ServerUsage());
    if (a.rfind("--", 0) != 0)
      return absl::InvalidArgumentError(absl::StrCat("unexpected '", a, "'"));
    a = a.substr(2);
    std::string value;
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", a, ": needs a value"));
    }
    auto it = Flags().find(a);
    if (it == Flags().end()) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", a));
    if (!it->second.set(value, &o)) {
      return absl::InvalidArgumentError(absl::StrCat("--", a, ": bad value '", value, "'"));
    }
  }
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  return o;
}

}  // namespace scalecast
