// The PostgreSQL backend: libpq, a small pool of connections, the same schema and guarantees as
// SQLite's (storage/store.h). Every operation runs on one pooled connection; writes are one
// transaction each; reads that need one snapshot (a page and its labels) run at REPEATABLE READ.
#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/status_macros.h"
#include "storage/migrations.h"
#include "storage/scenario_codec.h"
#include "storage/store.h"
#include "storage/store_internal.h"

namespace scalecast {
namespace {

using store_internal::ClosedError;
using store_internal::kCacheWriteTimeoutMs;
using store_internal::NewMeasurementId;
using store_internal::NowUnixMs;

// Advisory lock keys (pg_advisory_xact_lock), each its own: a lock held for one purpose never
// makes another wait. Schema migration:
constexpr int64_t kMigrationLock = 0x5ca1eca57001;
// Held by RecordMeasurements while it looks for duplicates and inserts (a 100k-row import holds
// it for seconds).
constexpr int64_t kRecordLock = 0x5ca1eca57002;
// Sweep-cache eviction, taken with pg_try_advisory_xact_lock: a cache write that would wait is
// skipped (the cache is best-effort).
constexpr int64_t kCacheLock = 0x5ca1eca57004;
// Held by profile writes (put, delete) while they check layers against the stored profiles, so
// that a layer is never stored over a base deleted at the same moment.
constexpr int64_t kProfileLock = 0x5ca1eca57003;
// Held by a registration while it counts and inserts.
constexpr int64_t kAcceleratorLock = 0x5ca1eca57004;
// Rows per multi-row INSERT (24 parameters a row, under PostgreSQL's 65535).
constexpr size_t kInsertChunk = 500;

// The URI as it may be logged: a password in the user-info part or in a "password=" parameter
// is replaced by "***".
std::string RedactUri(const std::string& uri) {
  std::string out = uri;
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t at = out.find('@', start);
    const size_t slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const size_t end = out.find('&', p);
    out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "***");
  }
  return out;
}

// SQLSTATE classes (PostgreSQL appendix A) to status codes: 53 insufficient resources (disk
// full, out of memory, too many connections) RESOURCE_EXHAUSTED; 08 connection and 57P admin
// shutdown/crash and 57014 statement timeout UNAVAILABLE; 40 rollbacks ABORTED; 25006 read-only
// transaction and 42501 privileges FAILED_PRECONDITION; 23505 ALREADY_EXISTS; 22/23 other data
// errors INVALID_ARGUMENT; everything else INTERNAL.
}  // namespace

absl::Status store_internal::PostgresStatus(const std::string& sqlstate,
                                            absl::string_view message) {
  const std::string msg = absl::StrCat("postgresql: ", message);
  auto cls = [&sqlstate](const char* c) { return sqlstate.compare(0, 2, c) == 0; };
  if (sqlstate.empty() || cls("08") || sqlstate.compare(0, 3, "57P") == 0 ||
      sqlstate == "57014") {  // 57014: statement_timeout
    return absl::UnavailableError(msg);
  }
  if (cls("53")) return absl::ResourceExhaustedError(msg);
  if (cls("40")) return absl::AbortedError(msg);
  if (sqlstate == "25006" || sqlstate == "42501") return absl::FailedPreconditionError(msg);
  if (sqlstate == "23505") return absl::AlreadyExistsError(msg);
  if (cls("22") || cls("23")) return absl::InvalidArgumentError(msg);
  return absl::InternalError(msg);
}

namespace {

absl::Status PgStatus(const std::string& sqlstate, absl::string_view message) {
  return store_internal::PostgresStatus(sqlstate, message);
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// A query parameter: text, or bytes sent in binary format (BYTEA).
struct Param {
  std::string value;
  bool binary = false;
};
Param Text(std::string s) { return Param{std::move(s), false}; }
Param Int(int64_t v) { return Param{absl::StrCat(v), false}; }
Param Real(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);  // exact for every finite double
  return Param{buf, false};
}
Param Bytes(std::string s) { return Param{std::move(s), true}; }

// No statement runs past this on the server (statement_timeout, 57014: UNAVAILABLE).
constexpr int kStatementTimeoutMs = 30'000;
// And no call waits past this for the server's answer, even when the server cannot say so (a
// frozen or partitioned database): the connection is then dropped and the call is UNAVAILABLE.
constexpr int kClientWaitMs = kStatementTimeoutMs + 5'000;

// Whether the long read being made on this thread was stopped: it runs no further statement (its
// connection, which a cancel may still reach, is dropped on release, never reused).
bool ReadStopped() {
  const store_internal::InterruptibleRead* read = store_internal::InterruptibleRead::Current();
  return read != nullptr && read->stopped();
}
absl::Status StoppedError() { return absl::CancelledError("postgresql: the read was stopped"); }

// Cancel requests in flight (PQcancel blocks until the server closes the request's connection,
// so it runs on a thread of its own, and a frozen server must not pile such threads up).
constexpr int kMaxCancelsInFlight = 4;
std::atomic<int> cancels_in_flight{0};

// Asks the server to cancel the statement running on `conn`, from a thread of its own; false when
// it could not be asked (then the caller drops the connection instead).
bool SendCancel(PGconn* conn) {
  if (cancels_in_flight.fetch_add(1) >= kMaxCancelsInFlight) {
    --cancels_in_flight;
    return false;
  }
  PGcancel* cancel = PQgetCancel(conn);
  if (cancel == nullptr) {
    --cancels_in_flight;
    return false;
  }
  std::thread([cancel] {
    char error[256];
    (void)PQcancel(cancel, error, sizeof(error));  // the statement's own result says the rest
    PQfreeCancel(cancel);
    --cancels_in_flight;
  }).detach();
  return true;
}

// Waits for the results of the query sent on `conn`, at most `timeout_ms`; the last result (or
// the first error). On timeout the connection is left mid-query, so Release drops it. Inside a
// long read (store_internal::InterruptibleRead) whose caller says stop, the statement is
// cancelled and waited for at most ReadInterrupt::kInterruptWaitMs more.
absl::StatusOr<Result> Await(PGconn* conn, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  store_internal::InterruptibleRead* read = store_internal::InterruptibleRead::Current();
  if (read != nullptr && (!read->active() || read->stopped())) read = nullptr;
  // A cancel that reaches the server before the statement starts is dropped (the server only
  // cancels what runs), so it is sent again every kCancelResendMs until the answer comes.
  constexpr auto kCancelResendMs = std::chrono::milliseconds(200);
  std::chrono::steady_clock::time_point resend_at{};
  Result last, error;
  for (;;) {
    while (PQisBusy(conn)) {
      const auto now = std::chrono::steady_clock::now();
      if (read != nullptr && resend_at == std::chrono::steady_clock::time_point{} && read->Stop()) {
        deadline =
            std::min(deadline, now + std::chrono::milliseconds(ReadInterrupt::kInterruptWaitMs));
        resend_at = now;
      }
      const bool stopping = resend_at != std::chrono::steady_clock::time_point{};
      if (stopping && now >= resend_at) {
        (void)SendCancel(conn);  // when it cannot be sent now, at the next turn
        resend_at = now + kCancelResendMs;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) {
        // Once more: by now the statement runs, and the server cancels it after the connection
        // is dropped (a statement waiting for a lock would not notice the drop).
        if (stopping) (void)SendCancel(conn);
        return absl::UnavailableError(
            absl::StrCat("postgresql: no answer within ", timeout_ms, " ms"));
      }
      // While stopping or stoppable, turns of kInterruptPollMs (the resends go at those turns).
      const int64_t slice = read != nullptr || stopping ? ReadInterrupt::kInterruptPollMs : 1000;
      pollfd p{PQsocket(conn), POLLIN, 0};
      const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, slice)));
      if (ready < 0 && errno != EINTR) return PgStatus("", "poll failed");
      if (ready > 0 && PQconsumeInput(conn) == 0) return PgStatus("", PQerrorMessage(conn));
    }
    Result r(PQgetResult(conn));
    if (r == nullptr) break;
    const ExecStatusType st = PQresultStatus(r.get());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && error == nullptr) {
      error = std::move(r);
    } else {
      last = std::move(r);
    }
  }
  if (error != nullptr) {
    const char* state = PQresultErrorField(error.get(), PG_DIAG_SQLSTATE);
    const char* primary = PQresultErrorField(error.get(), PG_DIAG_MESSAGE_PRIMARY);
    return PgStatus(state != nullptr ? state : "",
                    primary != nullptr ? primary : PQresultErrorMessage(error.get()));
  }
  if (last == nullptr) return PgStatus("", PQerrorMessage(conn));
  return last;
}

absl::StatusOr<Result> Exec(PGconn* conn, const std::string& sql,
                            const std::vector<Param>& params = {}, int timeout_ms = kClientWaitMs) {
  if (ReadStopped()) return StoppedError();
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const Param& p : params) {
    values.push_back(p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  if (PQsendQueryParams(conn, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                        lengths.data(), formats.data(), /*resultFormat=*/0) == 0) {
    return PgStatus("", PQerrorMessage(conn));
  }
  return Await(conn, timeout_ms);
}

// Runs SQL of several statements and no parameters (migrations, BEGIN with its settings).
absl::Status ExecScript(PGconn* conn, const std::string& sql) {
  if (ReadStopped()) return StoppedError();
  if (PQsendQuery(conn, sql.c_str()) == 0) return PgStatus("", PQerrorMessage(conn));
  return Await(conn, kClientWaitMs).status();
}

std::string Cell(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), PQgetlength(r, row, col));
}
int64_t CellInt(const PGresult* r, int row, int col) {
  int64_t v = 0;
  (void)absl::SimpleAtoi(absl::string_view(PQgetvalue(r, row, col), PQgetlength(r, row, col)), &v);
  return v;
}
double CellReal(const PGresult* r, int row, int col) {
  double v = 0;
  (void)absl::SimpleAtod(absl::string_view(PQgetvalue(r, row, col), PQgetlength(r, row, col)), &v);
  return v;
}
std::string CellBytes(const PGresult* r, int row, int col) {
  size_t n = 0;
  unsigned char* raw =
      PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r, row, col)), &n);
  if (raw == nullptr) return std::string();
  std::string out(reinterpret_cast<const char*>(raw), n);
  PQfreemem(raw);
  return out;
}

// The WHERE clause of a measurement query (alias m) with $n placeholders numbered from
// *next, and the values to bind.
std::string FilterWhere(const MeasurementFilter& f, int* next, std::vector<Param>* params) {
  std::string where;
  auto add = [&](absl::string_view column, const std::string& value) {
    if (value.empty()) return;
    absl::StrAppend(&where, " AND m.", column, " = $", (*next)++);
    params->push_back(Text(value));
  };
  add("accelerator", f.accelerator);
  add("framework", f.framework);
  add("source", f.source);
  for (const auto& [k, v] : f.labels) {
    const int key_param = (*next)++;
    const int value_param = (*next)++;
    absl::StrAppend(&where,
                    " AND EXISTS (SELECT 1 FROM measurement_labels AS l WHERE l.measurement_id = "
                    "m.id AND l.key = $",
                    key_param, " AND l.value = $", value_param, ")");
    params->push_back(Text(k));
    params->push_back(Text(v));
  }
  return where;
}

using store_internal::kProfileQuery;

absl::StatusOr<Measurement> ReadMeasurement(const PGresult* r, int row) {
  Measurement m;
  m.id = Cell(r, row, 1);
  absl::StatusOr<Scenario> scenario = DecodeScenario(Cell(r, row, 2));
  if (!scenario.ok()) {
    return absl::InternalError(
        absl::StrCat("measurement '", m.id, "': ", scenario.status().message()));
  }
  m.scenario = *std::move(scenario);
  m.tokens_per_s_per_gpu = CellReal(r, row, 3);
  m.step_time_s = CellReal(r, row, 4);
  m.watts_per_gpu = CellReal(r, row, 5);
  m.source = Cell(r, row, 6);
  m.recorded_at_unix_ms = CellInt(r, row, 7);
  return m;
}

absl::StatusOr<StoredProfile> ReadProfile(const PGresult* r, int row) {
  absl::StatusOr<Profile> profile = Profile::FromText(Cell(r, row, 1));
  if (!profile.ok()) {
    return absl::InternalError(absl::StrCat("stored profile '", Cell(r, row, 0),
                                            "' is corrupt: ", profile.status().message()));
  }
  StoredProfile p;
  p.profile = *std::move(profile);
  p.fitted_on = Cell(r, row, 2);
  p.fitted_count = static_cast<int>(CellInt(r, row, 3));
  p.mape_before = CellReal(r, row, 4);
  p.mape_after = CellReal(r, row, 5);
  p.cv_mape = CellReal(r, row, 6);
  p.created_at_unix_ms = CellInt(r, row, 7);
  return p;
}

class PgStore final : public Store {
 public:
  explicit PgStore(StoreOptions options)
      : options_(std::move(options)), display_(RedactUri(options_.path)) {}
  ~PgStore() override { Close(); }

  const char* backend() const override { return "postgresql"; }
  std::string DisplayAddress() const override { return display_; }

  // Which operations a connection is lent to. Long reads (a page of measurements, a count, the
  // profiles, every run of a filter) may hold at most LongReadConnections() at once, so that
  // writes and short reads always find a connection however many long reads wait.
  enum class Lane { kShort, kLong };

  // The pool less a quarter (at least one kept back when the pool has two or more).
  int LongReadConnections() const {
    const int n = std::max(1, options_.pool_size);
    return n == 1 ? 1 : n - std::max(1, n / 4);
  }

  // A pooled connection, returned to the pool (or dropped if broken) when destroyed.
  class Lease {
   public:
    Lease(PgStore* store, PGconn* conn, Lane lane) : store_(store), conn_(conn), lane_(lane) {}
    Lease(Lease&& o) noexcept
        : store_(o.store_), conn_(std::exchange(o.conn_, nullptr)), lane_(o.lane_) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (conn_ != nullptr) store_->Release(conn_, lane_);
    }
    PGconn* get() const { return conn_; }

   private:
    PgStore* store_;
    PGconn* conn_;
    Lane lane_;
  };

  absl::StatusOr<PGconn*> Connect() {
    // No statement waits for ever (a lock held by a stuck session, a runaway query): past
    // 30 s it fails (57014), and the call with it.
    std::vector<const char*> keys = {"dbname", "connect_timeout", "application_name", "options"};
    const std::string timeout = absl::StrCat(std::max(1, options_.connect_timeout_s));
    const std::string statement_timeout =
        absl::StrCat("-c statement_timeout=", kStatementTimeoutMs);
    std::vector<const char*> values = {options_.path.c_str(), timeout.c_str(), "scalecast-server",
                                       statement_timeout.c_str()};
    if (!options_.password.empty()) {
      keys.push_back("password");
      values.push_back(options_.password.c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
    if (conn == nullptr) return absl::ResourceExhaustedError("postgresql: out of memory");
    if (PQstatus(conn) != CONNECTION_OK) {
      std::string why = PQerrorMessage(conn);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      PQfinish(conn);
      return absl::UnavailableError(
          absl::StrCat("postgresql: cannot connect to ", display_, ": ", why));
    }
    return conn;
  }

  absl::StatusOr<Lease> Acquire(Lane lane = Lane::kShort) {
    std::unique_lock<std::mutex> l(mu_);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.busy_timeout_ms);
    // A long read whose caller gives up while it waits stops waiting (ReadInterrupt).
    store_internal::InterruptibleRead* read = store_internal::InterruptibleRead::Current();
    if (read != nullptr && !read->active()) read = nullptr;
    const auto slice = std::chrono::milliseconds(read != nullptr ? ReadInterrupt::kInterruptPollMs
                                                                 : options_.busy_timeout_ms + 1);
    for (bool timed_out = false;;) {
      if (closed_) return ClosedError();
      if (read != nullptr && read->Stop()) {
        return absl::CancelledError("postgresql: gave up waiting for a connection");
      }
      const bool lane_free = lane == Lane::kShort || long_leased_ < LongReadConnections();
      if (lane_free && !idle_.empty()) {
        PGconn* c = idle_.back();
        idle_.pop_back();
        if (lane == Lane::kLong) ++long_leased_;
        return Lease(this, c, lane);
      }
      if (lane_free && open_ < std::max(1, options_.pool_size)) {
        ++open_;
        if (lane == Lane::kLong) ++long_leased_;
        l.unlock();
        absl::StatusOr<PGconn*> c = Connect();
        if (!c.ok()) {
          l.lock();
          --open_;
          if (lane == Lane::kLong) --long_leased_;
          cv_.notify_all();
          return c.status();
        }
        return Lease(this, *c, lane);
      }
      if (timed_out) {
        return absl::UnavailableError(absl::StrCat("postgresql: no free connection to ", display_,
                                                   " within ", options_.busy_timeout_ms, " ms",
                                                   lane == Lane::kLong ? " (for long reads)" : ""));
      }
      cv_.wait_until(l, std::min(deadline, std::chrono::steady_clock::now() + slice));
      timed_out = std::chrono::steady_clock::now() >= deadline;
    }
  }

  void Release(PGconn* conn, Lane lane) {
    // A broken connection, one left inside a transaction, or one a stopped read's cancel may
    // still reach, is not reused.
    const bool good = PQstatus(conn) == CONNECTION_OK &&
                      PQtransactionStatus(conn) == PQTRANS_IDLE && !ReadStopped();
    std::lock_guard<std::mutex> l(mu_);
    if (lane == Lane::kLong) --long_leased_;
    if (good && !closed_) {
      idle_.push_back(conn);
    } else {
      PQfinish(conn);
      --open_;
    }
    cv_.notify_all();  // waiters of both lanes
  }

  // Runs fn(conn) in one transaction: BEGIN, fn, COMMIT; ROLLBACK when anything fails.
  template <typename Fn>
  absl::Status InTransaction(const char* begin, Fn fn, Lane lane = Lane::kShort) {
    ASSIGN_OR_RETURN(Lease lease, Acquire(lane));
    PGconn* c = lease.get();
    RETURN_IF_ERROR(ExecScript(c, begin));
    absl::Status s = fn(c);
    if (s.ok()) s = Exec(c, "COMMIT").status();
    if (!s.ok() && PQtransactionStatus(c) != PQTRANS_IDLE) {
      (void)Exec(c, "ROLLBACK");
    }
    return s;
  }

  absl::Status Init() {
    // Migrations: one replica at a time (an advisory lock held to the end of the transaction).
    RETURN_IF_ERROR(InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      RETURN_IF_ERROR(Exec(c, "SET LOCAL client_min_messages = warning").status());
      RETURN_IF_ERROR(Exec(c, "SELECT pg_advisory_xact_lock($1)", {Int(kMigrationLock)}).status());
      ASSIGN_OR_RETURN(Result exists,
                       Exec(c, "SELECT to_regclass('scalecast_schema') IS NOT NULL"));
      if (Cell(exists.get(), 0, 0) != "t") {
        if (absl::Status s =
                Exec(c, "CREATE TABLE scalecast_schema (version INTEGER NOT NULL)").status();
            !s.ok()) {
          return absl::Status(s.code(),
                              absl::StrCat("cannot write to the database: ", s.message()));
        }
      }
      ASSIGN_OR_RETURN(Result r, Exec(c, "SELECT version FROM scalecast_schema"));
      int version = PQntuples(r.get()) > 0 ? static_cast<int>(CellInt(r.get(), 0, 0)) : 0;
      if (PQntuples(r.get()) == 0) {
        RETURN_IF_ERROR(Exec(c, "INSERT INTO scalecast_schema (version) VALUES (0)").status());
      }
      if (version > LatestSchemaVersion()) {
        return store_internal::TooNewError(version, LatestSchemaVersion());
      }
      for (const Migration& m : PostgresMigrations()) {
        if (m.version <= version) continue;
        if (absl::Status s = ExecScript(c, std::string(m.sql)); !s.ok()) {
          return absl::Status(s.code(), absl::StrCat("schema migration ", m.version, " (",
                                                     m.description, "): ", s.message()));
        }
        RETURN_IF_ERROR(
            Exec(c, "UPDATE scalecast_schema SET version = $1", {Int(m.version)}).status());
        version = m.version;
      }
      return absl::OkStatus();
    }));
    // Probe a write: a read-only server or a role without rights refuses to start.
    absl::Status probe = InTransaction("BEGIN", [&](PGconn* c) {
      return Exec(c,
                  "INSERT INTO store_meta (key, value) VALUES ('last_open_unix_ms', $1) "
                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                  {Int(NowUnixMs())})
          .status();
    });
    if (!probe.ok()) {
      return absl::Status(probe.code(),
                          absl::StrCat("cannot write to the database: ", probe.message()));
    }
    return absl::OkStatus();
  }

  // --- Measurements -----------------------------------------------------------------------

  absl::StatusOr<int64_t> RecordMeasurementStream(const RunSource& next,
                                                  const StoredSink& sink) override {
    const int64_t now = NowUnixMs();
    int64_t given = 0;
    RETURN_IF_ERROR(InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      // Runs already stored are duplicates. Writes are recorded one at a time (an advisory
      // lock to the end of the transaction), so two replicas recording the same run at once
      // store it once.
      if (absl::Status s = Exec(c, "SELECT pg_advisory_xact_lock($1)", {Int(kRecordLock)}).status();
          !s.ok()) {
        return absl::Status(s.code(), absl::StrCat("waiting for the store's write lock (held by a "
                                                   "write from another replica): ",
                                                   s.message()));
      }
      // The duplicate checks look runs up by their rate (measurements_by_rate). The planner's
      // statistics predate the rows this transaction adds: left to them it scans the table for
      // every chunk, and a 100k-row write takes minutes instead of seconds.
      RETURN_IF_ERROR(Exec(c, "SET LOCAL enable_seqscan = off").status());
      ASSIGN_OR_RETURN(given, store_internal::ForEachChunk(
                                  next, [&](std::vector<Measurement> chunk, size_t first) {
                                    return RecordChunk(c, std::move(chunk), first, now, sink);
                                  }));
      return absl::OkStatus();
    }));
    return given;
  }

  // A chunk's runs on their way in, each with its encoded scenario, its index in the whole write
  // (for errors) and whether its id was drawn here (a drawn id that collides is drawn again).
  struct ChunkRows {
    std::vector<Measurement> batch;
    std::vector<std::string> scenarios;
    std::vector<size_t> original;
    std::vector<bool> generated;

    // Keeps the rows `drop` does not mark, in order.
    void Keep(const std::vector<bool>& drop) {
      size_t kept = 0;
      for (size_t i = 0; i < batch.size(); ++i) {
        if (drop[i]) continue;
        if (kept != i) {
          batch[kept] = std::move(batch[i]);
          scenarios[kept] = std::move(scenarios[i]);
          original[kept] = original[i];
          generated[kept] = generated[i];
        }
        ++kept;
      }
      batch.resize(kept);
      scenarios.resize(kept);
      original.resize(kept);
      generated.resize(kept);
    }

    absl::Status IdExists(size_t i) const {
      return absl::AlreadyExistsError(
          absl::StrCat("measurements[", original[i], "].id: '", batch[i].id, "' already exists"));
    }
  };

  // One chunk of a streamed write, on connection c inside its transaction (the record lock
  // held): checked, repeats within it and runs already stored (earlier chunks included)
  // dropped, inserted with their labels, passed to `sink`.
  absl::Status RecordChunk(PGconn* c, std::vector<Measurement> batch, size_t first, int64_t now,
                           const StoredSink& sink) {
    RETURN_IF_ERROR(store_internal::PrepareChunk(&batch, first, now));
    ChunkRows rows;
    rows.batch = std::move(batch);
    rows.scenarios.reserve(rows.batch.size());
    for (const Measurement& m : rows.batch) rows.scenarios.push_back(EncodeScenario(m.scenario));
    store_internal::DropRepeatsWithinBatch(&rows.batch, &rows.scenarios, &rows.original);
    for (size_t& o : rows.original) o += first;
    RETURN_IF_ERROR(AssignIds(&rows));
    ASSIGN_OR_RETURN(const std::vector<bool> stored, AlreadyStored(c, rows));
    rows.Keep(stored);
    for (size_t begin = 0; begin < rows.batch.size(); begin += kInsertChunk) {
      RETURN_IF_ERROR(
          InsertRows(c, begin, std::min(rows.batch.size(), begin + kInsertChunk), &rows));
    }
    RETURN_IF_ERROR(InsertLabels(c, rows.batch));
    for (Measurement& m : rows.batch) sink(std::move(m));
    return absl::OkStatus();
  }

  // An id for each run without one; an id repeated within the chunk is drawn again if drawn
  // here, else ALREADY_EXISTS (repeats across the write are found by the insert).
  static absl::Status AssignIds(ChunkRows* rows) {
    std::vector<Measurement>& batch = rows->batch;
    rows->generated.assign(batch.size(), false);
    for (size_t i = 0; i < batch.size(); ++i) {
      rows->generated[i] = batch[i].id.empty();
      if (rows->generated[i]) batch[i].id = NewMeasurementId();
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (seen.insert(batch[i].id).second) continue;
      if (!rows->generated[i]) return rows->IdExists(i);
      batch[i].id = NewMeasurementId();
      --i;
    }
    return absl::OkStatus();
  }

  // Which of the chunk's runs are stored already (the same source, scenario and figures), looked
  // up kInsertChunk rows a statement.
  absl::StatusOr<std::vector<bool>> AlreadyStored(PGconn* c, const ChunkRows& rows) {
    const std::vector<Measurement>& batch = rows.batch;
    std::vector<bool> duplicate(batch.size());
    for (size_t begin = 0; begin < batch.size(); begin += kInsertChunk) {
      const size_t end = std::min(batch.size(), begin + kInsertChunk);
      std::vector<Param> params;
      std::string sql = "SELECT v.i FROM (VALUES ";
      int n = 1;
      for (size_t i = begin; i < end; ++i) {
        absl::StrAppend(&sql, i == begin ? "" : ", ", "($", n, "::bigint, $", n + 1, "::text, $",
                        n + 2, "::text, $", n + 3, "::float8, $", n + 4, "::float8, $", n + 5,
                        "::float8)");
        n += 6;
        params.push_back(Int(static_cast<int64_t>(i)));
        params.push_back(Text(rows.scenarios[i]));
        params.push_back(Text(batch[i].source));
        params.push_back(Real(batch[i].tokens_per_s_per_gpu));
        params.push_back(Real(batch[i].step_time_s));
        params.push_back(Real(batch[i].watts_per_gpu));
      }
      sql +=
          ") AS v (i, sc, src, t, st, w) WHERE EXISTS (SELECT 1 FROM measurements AS m WHERE "
          "m.source = v.src AND m.scenario = v.sc AND m.tokens_per_s_per_gpu = v.t AND "
          "m.step_time_s = v.st AND m.watts_per_gpu = v.w)";
      ASSIGN_OR_RETURN(Result r, Exec(c, sql, params));
      for (int row = 0; row < PQntuples(r.get()); ++row) {
        duplicate[static_cast<size_t>(CellInt(r.get(), row, 0))] = true;
      }
    }
    return duplicate;
  }

  // Rows [begin, end) inserted in one statement. A conflicting id is skipped by the insert and
  // found missing from RETURNING: a caller's id is ALREADY_EXISTS; a generated one (2^-64) is
  // drawn again and the statement retried, the rows it inserted deleted first so that the
  // batch stays in order.
  absl::Status InsertRows(PGconn* c, size_t begin, size_t end, ChunkRows* rows) {
    std::vector<Measurement>& batch = rows->batch;
    for (int attempt = 1;; ++attempt) {
      ASSIGN_OR_RETURN(const std::set<std::string> stored, InsertOnce(c, begin, end, *rows));
      if (stored.size() == end - begin) return absl::OkStatus();
      for (size_t i = begin; i < end; ++i) {
        if (stored.count(batch[i].id) > 0) continue;
        if (!rows->generated[i] || attempt >= store_internal::kIdAttempts) {
          return rows->IdExists(i);
        }
        batch[i].id = NewMeasurementId();
      }
      std::vector<Param> ids;
      std::string del = "DELETE FROM measurements WHERE id IN (";
      int k = 1;
      for (const std::string& id : stored) {
        absl::StrAppend(&del, k == 1 ? "$" : ", $", k);
        ++k;
        ids.push_back(Text(id));
      }
      del += ")";
      if (!ids.empty()) RETURN_IF_ERROR(Exec(c, del, ids).status());
    }
  }

  // INSERT ... ON CONFLICT (id) DO NOTHING of rows [begin, end): the ids it stored.
  absl::StatusOr<std::set<std::string>> InsertOnce(PGconn* c, size_t begin, size_t end,
                                                   const ChunkRows& rows) {
    std::vector<Param> params;
    std::string sql = absl::StrCat("INSERT INTO measurements (",
                                   store_internal::MeasurementInsertColumns(), ") VALUES ");
    int n = 1;
    for (size_t i = begin; i < end; ++i) {
      absl::StrAppend(&sql, i == begin ? "" : ", ", "(");
      for (const store_internal::MeasurementColumn& col : store_internal::MeasurementColumns()) {
        absl::StrAppend(&sql, sql.back() == '(' ? "$" : ", $", n);
        ++n;
        params.push_back(std::visit(
            [](const auto& v) -> Param {
              using V = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<V, std::string>) {
                return Text(v);
              } else if constexpr (std::is_same_v<V, int64_t>) {
                return Int(v);
              } else {
                return Real(v);
              }
            },
            col.value(rows.batch[i], rows.scenarios[i])));
      }
      sql += ")";
    }
    sql += " ON CONFLICT (id) DO NOTHING RETURNING id";
    ASSIGN_OR_RETURN(Result r, Exec(c, sql, params));
    std::set<std::string> stored;
    for (int row = 0; row < PQntuples(r.get()); ++row) stored.insert(Cell(r.get(), row, 0));
    return stored;
  }

  // The runs' labels, many rows a statement.
  absl::Status InsertLabels(PGconn* c, const std::vector<Measurement>& batch) {
    std::vector<Param> params;
    std::string sql;
    auto flush = [&]() -> absl::Status {
      if (params.empty()) return absl::OkStatus();
      absl::Status s = Exec(c,
                            "INSERT INTO measurement_labels (measurement_id, key, value) "
                            "VALUES " +
                                sql,
                            params)
                           .status();
      params.clear();
      sql.clear();
      return s;
    };
    for (const Measurement& m : batch) {
      for (const auto& [key, value] : m.labels) {
        const size_t n = params.size();
        absl::StrAppend(&sql, n == 0 ? "" : ", ", "($", n + 1, ", $", n + 2, ", $", n + 3, ")");
        params.push_back(Text(m.id));
        params.push_back(Text(key));
        params.push_back(Text(value));
        if (params.size() >= 3 * 4000) RETURN_IF_ERROR(flush());
      }
    }
    return flush();
  }

  // Rows of `filter` with seq in (after_seq, ...], at most `limit` (negative: all), with their
  // labels; on connection c inside a REPEATABLE READ transaction.
  absl::StatusOr<std::vector<Measurement>> Query(PGconn* c, const MeasurementFilter& filter,
                                                 int64_t after_seq, int64_t limit,
                                                 std::vector<int64_t>* seqs) {
    std::vector<Param> params = {Int(after_seq)};
    int next = 2;
    const std::string where = FilterWhere(filter, &next, &params);
    std::string sql =
        absl::StrCat("SELECT ", store_internal::kMeasurementSelect,
                     " FROM measurements AS m WHERE m.seq > $1", where, " ORDER BY m.seq");
    if (limit >= 0) {
      absl::StrAppend(&sql, " LIMIT $", next);
      params.push_back(Int(limit));
    }
    ASSIGN_OR_RETURN(Result r, Exec(c, sql, params));
    std::vector<Measurement> out;
    const int rows = PQntuples(r.get());
    out.reserve(rows);
    std::map<std::string, size_t> index;
    for (int row = 0; row < rows; ++row) {
      if (seqs != nullptr) seqs->push_back(CellInt(r.get(), row, 0));
      ASSIGN_OR_RETURN(Measurement m, ReadMeasurement(r.get(), row));
      index[m.id] = out.size();
      out.push_back(std::move(m));
    }
    if (out.empty()) return out;
    // The labels of exactly these rows: the same filter over the same seq range, in the same
    // snapshot.
    std::vector<Param> lp = {Int(after_seq), Int(CellInt(r.get(), rows - 1, 0))};
    int lnext = 3;
    const std::string lwhere = FilterWhere(filter, &lnext, &lp);
    ASSIGN_OR_RETURN(
        Result labels,
        Exec(c,
             absl::StrCat("SELECT x.measurement_id, x.key, x.value FROM measurement_labels AS x "
                          "JOIN measurements AS m ON m.id = x.measurement_id "
                          "WHERE m.seq > $1 AND m.seq <= $2",
                          lwhere),
             lp));
    for (int row = 0; row < PQntuples(labels.get()); ++row) {
      auto it = index.find(Cell(labels.get(), row, 0));
      if (it == index.end()) continue;
      out[it->second].labels.emplace(Cell(labels.get(), row, 1), Cell(labels.get(), row, 2));
    }
    return out;
  }

  absl::StatusOr<std::vector<Measurement>> ListMeasurements(const MeasurementFilter& filter,
                                                            int page_size,
                                                            const std::string& page_token,
                                                            std::string* next_page_token) override {
    ASSIGN_OR_RETURN(const int limit, store_internal::PageLimit(page_size));
    ASSIGN_OR_RETURN(const int64_t after_seq, store_internal::DecodePageToken(filter, page_token));
    std::vector<Measurement> page;
    std::vector<int64_t> seqs;
    store_internal::InterruptibleRead read(&interrupted_reads_);
    RETURN_IF_ERROR(read.Outcome(InTransaction(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        [&](PGconn* c) -> absl::Status {
          ASSIGN_OR_RETURN(page, Query(c, filter, after_seq, limit + 1, &seqs));
          return absl::OkStatus();
        },
        Lane::kLong)));
    std::string next = store_internal::TrimPage(&page, limit, [&](size_t last) {
      return store_internal::EncodePageToken(filter, seqs[last]);
    });
    if (next_page_token != nullptr) *next_page_token = std::move(next);
    return page;
  }

  absl::StatusOr<std::vector<Measurement>> AllMeasurements(const MeasurementFilter& filter,
                                                           int64_t limit) override {
    std::vector<Measurement> all;
    store_internal::InterruptibleRead read(&interrupted_reads_);
    RETURN_IF_ERROR(read.Outcome(InTransaction(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        [&](PGconn* c) -> absl::Status {
          ASSIGN_OR_RETURN(all, Query(c, filter, 0, limit < 0 ? -1 : limit + 1, nullptr));
          return absl::OkStatus();
        },
        Lane::kLong)));
    if (limit >= 0 && static_cast<int64_t>(all.size()) > limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("filter: more than ", limit, " stored runs match; narrow the filter"));
    }
    return all;
  }

  absl::StatusOr<std::vector<Measurement>> SampleMeasurements(const MeasurementFilter& filter,
                                                              int64_t max_runs,
                                                              int64_t* matching) override {
    if (max_runs < 1) {
      return absl::InvalidArgumentError(absl::StrCat("max_runs: must be >= 1, got ", max_runs));
    }
    std::vector<Measurement> out;
    int64_t count = 0;
    store_internal::InterruptibleRead read(&interrupted_reads_);
    RETURN_IF_ERROR(read.Outcome(InTransaction(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",  // the count and the sample alike
        [&](PGconn* c) -> absl::Status {
          std::vector<Param> params;
          int next = 1;
          const std::string where = FilterWhere(filter, &next, &params);
          ASSIGN_OR_RETURN(
              Result n,
              Exec(c, absl::StrCat("SELECT COUNT(*) FROM measurements AS m WHERE TRUE", where),
                   params));
          if (PQntuples(n.get()) != 1) return absl::InternalError("COUNT(*) returned no row");
          count = CellInt(n.get(), 0, 0);
          const int64_t stride = std::max<int64_t>(1, (count + max_runs - 1) / max_runs);
          const int stride_param = next++;
          const int limit_param = next++;
          params.push_back(Int(stride));
          params.push_back(Int(max_runs));
          ASSIGN_OR_RETURN(
              Result r,
              Exec(c,
                   absl::StrCat("SELECT ", store_internal::kMeasurementSelect,
                                " FROM measurements AS m WHERE m.seq IN (SELECT s.seq FROM "
                                "(SELECT m.seq AS seq, ROW_NUMBER() OVER (ORDER BY m.seq) AS n "
                                "FROM measurements AS m WHERE TRUE",
                                where, ") AS s WHERE (s.n - 1) % $", stride_param,
                                " = 0) ORDER BY m.seq LIMIT $", limit_param),
                   params));
          for (int row = 0; row < PQntuples(r.get()); ++row) {
            ASSIGN_OR_RETURN(Measurement m, ReadMeasurement(r.get(), row));
            out.push_back(std::move(m));
          }
          return absl::OkStatus();
        },
        Lane::kLong)));
    if (matching != nullptr) *matching = count;
    return out;
  }

  absl::StatusOr<Measurement> GetMeasurement(const std::string& id) override {
    Measurement m;
    RETURN_IF_ERROR(InTransaction(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [&](PGconn* c) -> absl::Status {
          ASSIGN_OR_RETURN(Result r,
                           Exec(c,
                                absl::StrCat("SELECT ", store_internal::kMeasurementSelect,
                                             " FROM measurements AS m WHERE m.id = $1"),
                                {Text(id)}));
          if (PQntuples(r.get()) == 0) {
            return absl::NotFoundError(absl::StrCat("measurement '", id, "' not found"));
          }
          ASSIGN_OR_RETURN(m, ReadMeasurement(r.get(), 0));
          ASSIGN_OR_RETURN(
              Result labels,
              Exec(c, "SELECT key, value FROM measurement_labels WHERE measurement_id = $1",
                   {Text(id)}));
          for (int row = 0; row < PQntuples(labels.get()); ++row) {
            m.labels.emplace(Cell(labels.get(), row, 0), Cell(labels.get(), row, 1));
          }
          return absl::OkStatus();
        }));
    return m;
  }

  absl::Status DeleteMeasurement(const std::string& id) override {
    return InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      ASSIGN_OR_RETURN(Result r, Exec(c, "DELETE FROM measurements WHERE id = $1", {Text(id)}));
      if (std::string(PQcmdTuples(r.get())) == "0") {
        return absl::NotFoundError(absl::StrCat("measurement '", id, "' not found"));
      }
      return absl::OkStatus();
    });
  }

  absl::StatusOr<int64_t> CountMeasurements(const MeasurementFilter& filter) override {
    store_internal::InterruptibleRead read(&interrupted_reads_);
    return read.Outcome([&]() -> absl::StatusOr<int64_t> {
      ASSIGN_OR_RETURN(Lease lease, Acquire(Lane::kLong));
      std::vector<Param> params;
      int next = 1;
      const std::string where = FilterWhere(filter, &next, &params);
      ASSIGN_OR_RETURN(
          Result r,
          Exec(lease.get(),
               absl::StrCat("SELECT COUNT(*) FROM measurements AS m WHERE TRUE", where), params));
      if (PQntuples(r.get()) != 1) return absl::InternalError("COUNT(*) returned no row");
      return CellInt(r.get(), 0, 0);
    }());
  }

  // --- Profiles -----------------------------------------------------------------------------

  absl::Status PutProfile(const StoredProfile& p, bool replace) override {
    ASSIGN_OR_RETURN(const std::string text, store_internal::ProfileText(p));
    const int64_t created = p.created_at_unix_ms != 0 ? p.created_at_unix_ms : NowUnixMs();
    return InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      ASSIGN_OR_RETURN(const store_internal::ProfileBases bases, LockedProfileBases(c));
      RETURN_IF_ERROR(store_internal::CheckLayerWrite(p.profile, bases));
      // Without replace, the insert itself decides (the primary key): of two racing callers,
      // on any replicas, one inserts and the other finds no row returned.
      ASSIGN_OR_RETURN(
          Result r,
          Exec(c,
               absl::StrCat(
                   "INSERT INTO profiles (name, profile_text, fitted_on, fitted_count, "
                   "mape_before, mape_after, cv_mape, created_at_unix_ms) VALUES ($1, $2, $3, "
                   "$4, $5, $6, $7, $8) ON CONFLICT (name) ",
                   replace ? "DO UPDATE SET profile_text = excluded.profile_text, "
                             "fitted_on = excluded.fitted_on, fitted_count = "
                             "excluded.fitted_count, mape_before = excluded.mape_before, "
                             "mape_after = excluded.mape_after, cv_mape = excluded.cv_mape, "
                             "created_at_unix_ms = excluded.created_at_unix_ms"
                           : "DO NOTHING",
                   " RETURNING name"),
               {Text(p.profile.name), Text(text), Text(p.fitted_on), Int(p.fitted_count),
                Real(p.mape_before), Real(p.mape_after), Real(p.cv_mape), Int(created)}));
      if (PQntuples(r.get()) == 0) {
        return absl::AlreadyExistsError(
            absl::StrCat("profile '", p.profile.name, "' already exists"));
      }
      // Sweeps computed with the old parameters are stale, and so are those of every profile
      // layered on this one.
      std::vector<std::string> stale = store_internal::DependantsOf(p.profile.name, bases, true);
      stale.push_back(p.profile.name);
      for (const std::string& name : stale) {
        RETURN_IF_ERROR(
            Exec(c, "DELETE FROM sweep_cache WHERE profile = $1", {Text(name)}).status());
      }
      return absl::OkStatus();
    });
  }

  // Takes the profile-write lock for the transaction and reads every stored profile's base.
  absl::StatusOr<store_internal::ProfileBases> LockedProfileBases(PGconn* c) {
    RETURN_IF_ERROR(Exec(c, "SELECT pg_advisory_xact_lock($1)", {Int(kProfileLock)}).status());
    ASSIGN_OR_RETURN(Result r, Exec(c, "SELECT name, profile_text FROM profiles", {}));
    std::vector<std::pair<std::string, std::string>> rows;
    for (int row = 0; row < PQntuples(r.get()); ++row) {
      rows.emplace_back(Cell(r.get(), row, 0), Cell(r.get(), row, 1));
    }
    return store_internal::ReadProfileBases(rows);
  }

  absl::StatusOr<StoredProfile> GetProfile(const std::string& name) override {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    ASSIGN_OR_RETURN(
        Result r, Exec(lease.get(), absl::StrCat(kProfileQuery, " WHERE name = $1"), {Text(name)}));
    if (PQntuples(r.get()) == 0) {
      return absl::NotFoundError(absl::StrCat("profile '", name, "' not found"));
    }
    return ReadProfile(r.get(), 0);
  }

  absl::StatusOr<std::vector<StoredProfile>> ListProfiles(int page_size,
                                                          const std::string& page_token,
                                                          std::string* next_page_token) override {
    ASSIGN_OR_RETURN(const int limit, store_internal::ProfilePageLimit(page_size));
    ASSIGN_OR_RETURN(const std::string after, store_internal::DecodeProfileToken(page_token));
    store_internal::InterruptibleRead read(&interrupted_reads_);
    ASSIGN_OR_RETURN(std::vector<StoredProfile> out,
                     read.Outcome([&]() -> absl::StatusOr<std::vector<StoredProfile>> {
                       ASSIGN_OR_RETURN(Lease lease, Acquire(Lane::kLong));
                       ASSIGN_OR_RETURN(Result r,
                                        Exec(lease.get(),
                                             absl::StrCat(kProfileQuery,
                                                          " WHERE name COLLATE \"C\" > $1 ORDER BY "
                                                          "name COLLATE \"C\" LIMIT $2"),
                                             {Text(after), Int(limit + 1)}));
                       std::vector<StoredProfile> page;
                       for (int row = 0; row < PQntuples(r.get()); ++row) {
                         ASSIGN_OR_RETURN(StoredProfile p, ReadProfile(r.get(), row));
                         page.push_back(std::move(p));
                       }
                       return page;
                     }()));
    std::string next = store_internal::TrimPage(&out, limit, [&](size_t last) {
      return store_internal::EncodeProfileToken(out[last].profile.name);
    });
    if (next_page_token != nullptr) *next_page_token = std::move(next);
    return out;
  }

  absl::StatusOr<int64_t> CountProfiles() override {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    ASSIGN_OR_RETURN(Result r, Exec(lease.get(), "SELECT COUNT(*) FROM profiles"));
    return CellInt(r.get(), 0, 0);
  }

  absl::Status DeleteProfile(const std::string& name) override {
    return InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      // A profile another one layers on stays (the layer would lose its base).
      ASSIGN_OR_RETURN(const store_internal::ProfileBases bases, LockedProfileBases(c));
      if (bases.count(name) != 0) RETURN_IF_ERROR(store_internal::CheckNoDependants(name, bases));
      ASSIGN_OR_RETURN(Result r, Exec(c, "DELETE FROM profiles WHERE name = $1", {Text(name)}));
      if (std::string(PQcmdTuples(r.get())) == "0") {
        return absl::NotFoundError(absl::StrCat("profile '", name, "' not found"));
      }
      // Sweeps computed with it are no use any more.
      return Exec(c, "DELETE FROM sweep_cache WHERE profile = $1", {Text(name)}).status();
    });
  }

  // --- Registered accelerators ------------------------------------------------------------

  absl::Status PutAccelerator(const StoredAccelerator& a, bool replace,
                              int64_t max_count) override {
    ASSIGN_OR_RETURN(const std::string text, store_internal::AcceleratorText(a));
    const int64_t created = a.created_at_unix_ms != 0 ? a.created_at_unix_ms : NowUnixMs();
    return InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      // One registration at a time across replicas: the count and the insert agree.
      RETURN_IF_ERROR(
          Exec(c, "SELECT pg_advisory_xact_lock($1)", {Int(kAcceleratorLock)}).status());
      ASSIGN_OR_RETURN(Result r,
                       Exec(c, "SELECT COUNT(*), COUNT(*) FILTER (WHERE id = $1) FROM accelerators",
                            {Text(a.spec.id)}));
      const int64_t count = CellInt(r.get(), 0, 0);
      const bool exists = CellInt(r.get(), 0, 1) > 0;
      if (exists && !replace) {
        return absl::AlreadyExistsError(
            absl::StrCat("spec.id: accelerator '", a.spec.id,
                         "' is registered already (set replace to change it)"));
      }
      if (!exists && count >= max_count) {
        return absl::ResourceExhaustedError(
            absl::StrCat("accelerators: ", count, " registered, the limit; delete one first"));
      }
      RETURN_IF_ERROR(Exec(c,
                           "INSERT INTO accelerators (id, spec, created_at_unix_ms) VALUES ($1, "
                           "$2, $3) ON CONFLICT (id) DO UPDATE SET spec = excluded.spec, "
                           "created_at_unix_ms = excluded.created_at_unix_ms",
                           {Text(a.spec.id), Text(text), Int(created)})
                          .status());
      if (exists) return Exec(c, "DELETE FROM sweep_cache").status();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::vector<StoredAccelerator>> ListAccelerators() override {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    ASSIGN_OR_RETURN(Result r, Exec(lease.get(),
                                    "SELECT id, spec, created_at_unix_ms FROM accelerators "
                                    "ORDER BY id COLLATE \"C\""));
    std::vector<StoredAccelerator> out;
    for (int row = 0; row < PQntuples(r.get()); ++row) {
      StoredAccelerator a;
      ASSIGN_OR_RETURN(a.spec, store_internal::ParseAcceleratorText(Cell(r.get(), row, 0),
                                                                    Cell(r.get(), row, 1)));
      a.created_at_unix_ms = CellInt(r.get(), row, 2);
      out.push_back(std::move(a));
    }
    return out;
  }

  absl::Status DeleteAccelerator(const std::string& id) override {
    return InTransaction("BEGIN", [&](PGconn* c) -> absl::Status {
      ASSIGN_OR_RETURN(Result r, Exec(c, "DELETE FROM accelerators WHERE id = $1", {Text(id)}));
      if (std::string(PQcmdTuples(r.get())) == "0") {
        return absl::NotFoundError(absl::StrCat("accelerator '", id, "' is not registered"));
      }
      return Exec(c, "DELETE FROM sweep_cache").status();
    });
  }

  // --- Sweep cache --------------------------------------------------------------------------

  absl::StatusOr<std::optional<std::string>> GetCachedSweep(const std::string& key,
                                                            const std::string& model_version,
                                                            const std::string& profile) override {
    std::optional<std::string> value;
    // A hit's count and recency are bookkeeping, not acknowledged data: their commit does not
    // wait for the disk (a crash may lose the last few counts, never an entry).
    RETURN_IF_ERROR(
        InTransaction("BEGIN; SET LOCAL synchronous_commit TO OFF", [&](PGconn* c) -> absl::Status {
          ASSIGN_OR_RETURN(
              Result r,
              Exec(c,
                   "UPDATE sweep_cache SET hit_count = hit_count + 1, last_used = (SELECT "
                   "COALESCE(MAX(last_used), 0) + 1 FROM sweep_cache) WHERE request_key = $1 AND "
                   "model_version = $2 AND profile = $3 RETURNING value",
                   {Bytes(key), Text(model_version), Text(profile)}));
          if (PQntuples(r.get()) > 0) value = CellBytes(r.get(), 0, 0);
          return absl::OkStatus();
        }));
    return value;
  }

  absl::Status PutCachedSweep(const std::string& key, const std::string& model_version,
                              const std::string& profile, const std::string& value) override {
    const int64_t size = static_cast<int64_t>(key.size() + value.size());
    if (size > options_.sweep_cache_max_bytes) return absl::OkStatus();
    const std::string begin =
        absl::StrCat("BEGIN; SET LOCAL statement_timeout = ", kCacheWriteTimeoutMs,
                     "; SET LOCAL lock_timeout = ", kCacheWriteTimeoutMs);
    return InTransaction(begin.c_str(), [&](PGconn* c) -> absl::Status {
      // Replicas evict one at a time, so that their sums do not race; a replica that finds
      // another evicting skips its write rather than wait.
      ASSIGN_OR_RETURN(Result locked,
                       Exec(c, "SELECT pg_try_advisory_xact_lock($1)", {Int(kCacheLock)}));
      if (Cell(locked.get(), 0, 0) != "t") return absl::OkStatus();
      RETURN_IF_ERROR(
          Exec(c,
               "INSERT INTO sweep_cache (request_key, model_version, profile, value, hit_count, "
               "created_at_unix_ms, size_bytes, last_used) VALUES ($1, $2, $3, $4, 0, $5, $6, "
               "(SELECT COALESCE(MAX(last_used), 0) + 1 FROM sweep_cache)) "
               "ON CONFLICT (request_key, model_version, profile) DO UPDATE SET "
               "value = excluded.value, hit_count = 0, "
               "created_at_unix_ms = excluded.created_at_unix_ms, "
               "size_bytes = excluded.size_bytes, last_used = excluded.last_used",
               {Bytes(key), Text(model_version), Text(profile), Bytes(value), Int(NowUnixMs()),
                Int(size)})
              .status());
      // Keep the most recently used entries that fit; drop the rest.
      return Exec(c,
                  "DELETE FROM sweep_cache WHERE (request_key, model_version, profile) IN ("
                  "SELECT request_key, model_version, profile FROM (SELECT request_key, "
                  "model_version, profile, SUM(size_bytes) OVER (ORDER BY last_used DESC "
                  "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS kept FROM sweep_cache) "
                  "AS t WHERE t.kept > $1)",
                  {Int(options_.sweep_cache_max_bytes)})
          .status();
    });
  }

  absl::StatusOr<int64_t> CachedSweepHits(const std::string& key, const std::string& model_version,
                                          const std::string& profile) override {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    ASSIGN_OR_RETURN(Result r, Exec(lease.get(),
                                    "SELECT hit_count FROM sweep_cache WHERE request_key = $1 AND "
                                    "model_version = $2 AND profile = $3",
                                    {Bytes(key), Text(model_version), Text(profile)}));
    if (PQntuples(r.get()) == 0) return absl::NotFoundError("no such cached sweep");
    return CellInt(r.get(), 0, 0);
  }

  absl::StatusOr<int64_t> SweepCacheBytes() override {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    ASSIGN_OR_RETURN(Result r,
                     Exec(lease.get(), "SELECT COALESCE(SUM(size_bytes), 0) FROM sweep_cache"));
    return CellInt(r.get(), 0, 0);
  }

  absl::Status InvalidateSweepCache() override {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    return Exec(lease.get(), "DELETE FROM sweep_cache").status();
  }

  absl::Status Ping(int timeout_ms) override {
    std::lock_guard<std::mutex> l(ping_mu_);
    {
      std::lock_guard<std::mutex> pool(mu_);
      if (closed_) return ClosedError();
    }
    if (ping_conn_ != nullptr && (PQstatus(ping_conn_) != CONNECTION_OK ||
                                  PQtransactionStatus(ping_conn_) != PQTRANS_IDLE)) {
      PQfinish(ping_conn_);
      ping_conn_ = nullptr;
    }
    if (ping_conn_ == nullptr) {
      ASSIGN_OR_RETURN(ping_conn_, Connect());
    }
    absl::Status s = Exec(ping_conn_, "SELECT 1", {}, timeout_ms).status();
    if (!s.ok()) {
      PQfinish(ping_conn_);
      ping_conn_ = nullptr;
    }
    return s;
  }

  void Close() override {
    {
      std::lock_guard<std::mutex> l(ping_mu_);
      if (ping_conn_ != nullptr) PQfinish(ping_conn_);
      ping_conn_ = nullptr;
    }
    std::vector<PGconn*> idle;
    {
      std::lock_guard<std::mutex> l(mu_);
      closed_ = true;
      idle.swap(idle_);
      open_ -= static_cast<int>(idle.size());
    }
    for (PGconn* c : idle) PQfinish(c);
    cv_.notify_all();
    // Leased connections are finished by Release (closed_ is set). Close waits for them, so
    // that no connection outlives the store.
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return open_ == 0; });
  }

 private:
  const StoreOptions options_;
  const std::string display_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PGconn*> idle_;  // guarded by mu_
  int open_ = 0;               // connections made and not finished, guarded by mu_
  int long_leased_ = 0;        // connections lent to long reads, guarded by mu_
  std::mutex ping_mu_;
  PGconn* ping_conn_ = nullptr;  // Ping's own connection, guarded by ping_mu_
  bool closed_ = false;          // guarded by mu_
};

}  // namespace

namespace store_internal {

absl::StatusOr<std::unique_ptr<Store>> OpenPostgres(const StoreOptions& options) {
  if (options.pool_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool_size: must be >= 1, got ", options.pool_size));
  }
  auto store = std::make_unique<PgStore>(options);
  if (absl::Status s = store->Init(); !s.ok()) {
    const std::string where = store->DisplayAddress();
    const std::string msg(s.message());
    // Connection errors already name the address.
    if (msg.find(where) != std::string::npos) return absl::Status(s.code(), "--db: " + msg);
    return absl::Status(s.code(), absl::StrCat("--db '", where, "': ", msg));
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace store_internal
}  // namespace scalecast
