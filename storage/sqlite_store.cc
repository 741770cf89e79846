#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/status_macros.h"
#include "storage/migrations.h"
#include "storage/scenario_codec.h"
#include "storage/store.h"
#include "storage/store_internal.h"

namespace scalecast {
namespace {

using store_internal::kCacheWriteTimeoutMs;
using store_internal::NowUnixMs;

absl::Status TooNewError(int version) {
  return store_internal::TooNewError(version, LatestSchemaVersion());
}

constexpr char kMemoryPath[] = ":memory:";
// Statements are cached by SQL text. Filters with labels make SQL of varying shape, so the cache
// is bounded; past the bound a statement is prepared for one use and finalized.
constexpr size_t kMaxCachedStatements = 64;

// SQLITE_BUSY/LOCKED (another process held the lock past the busy timeout) is UNAVAILABLE: the
// caller may retry. A full disk (or max_db_bytes reached) is RESOURCE_EXHAUSTED; a read-only
// database FAILED_PRECONDITION; a corrupt one DATA_LOSS. Everything else is INTERNAL.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message =
      absl::StrCat("sqlite: ", what, ": ", detail, " (", sqlite3_errstr(rc), ", code ", rc, ")");
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return absl::UnavailableError(message);
  }
  if (primary == SQLITE_FULL) return absl::ResourceExhaustedError(message);
  if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM) {
    return absl::FailedPreconditionError(message);
  }
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return absl::DataLossError(message);
  return absl::InternalError(message);
}

}  // namespace

// The SQLite backend: one connection, serialised by mu_.
class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* db, StoreOptions options);
  ~SqliteStore() override;

  const char* backend() const override { return "sqlite"; }
  std::string DisplayAddress() const override { return options_.path; }

  absl::Status RecordChunkLocked(std::vector<Measurement> batch, size_t first, int64_t now,
                                 const StoredSink& sink);
  absl::StatusOr<int64_t> RecordMeasurementStream(const RunSource& next,
                                                  const StoredSink& sink) override;
  absl::StatusOr<std::vector<Measurement>> ListMeasurements(const MeasurementFilter& filter,
                                                            int page_size,
                                                            const std::string& page_token,
                                                            std::string* next_page_token) override;
  absl::StatusOr<std::vector<Measurement>> AllMeasurements(const MeasurementFilter& filter,
                                                           int64_t limit) override;
  absl::StatusOr<std::vector<Measurement>> SampleMeasurements(const MeasurementFilter& filter,
                                                              int64_t max_runs,
                                                              int64_t* matching) override;
  absl::StatusOr<Measurement> GetMeasurement(const std::string& id) override;
  absl::Status DeleteMeasurement(const std::string& id) override;
  absl::StatusOr<int64_t> CountMeasurements(const MeasurementFilter& filter) override;
  absl::Status PutProfile(const StoredProfile& p, bool replace) override;
  absl::StatusOr<StoredProfile> GetProfile(const std::string& name) override;
  absl::StatusOr<std::vector<StoredProfile>> ListProfiles(int page_size,
                                                          const std::string& page_token,
                                                          std::string* next_page_token) override;
  absl::StatusOr<int64_t> CountProfiles() override;
  absl::Status DeleteProfile(const std::string& name) override;
  absl::Status PutAccelerator(const StoredAccelerator& a, bool replace, int64_t max_count) override;
  absl::StatusOr<std::vector<StoredAccelerator>> ListAccelerators() override;
  absl::Status DeleteAccelerator(const std::string& id) override;
  absl::StatusOr<std::optional<std::string>> GetCachedSweep(const std::string& key,
                                                            const std::string& model_version,
                                                            const std::string& profile) override;
  absl::Status PutCachedSweep(const std::string& key, const std::string& model_version,
                              const std::string& profile, const std::string& value) override;
  absl::StatusOr<int64_t> CachedSweepHits(const std::string& key, const std::string& model_version,
                                          const std::string& profile) override;
  absl::StatusOr<int64_t> SweepCacheBytes() override;
  absl::Status InvalidateSweepCache() override;
  absl::Status Ping(int timeout_ms) override;
  void Close() override;

  // Open's steps after the handle is made; mu_ held.
  absl::Status InitLocked(bool in_memory);

  // A second connection to the same file for the reads (WAL lets them run beside a write):
  // a long read — Validate's or Calibrate's whole filter — never holds up a write, nor a write a
  // read. Not for ":memory:", where a second connection would be another database.
  void set_reader(std::unique_ptr<SqliteStore> reader) {
    reader_ = std::move(reader);
    reader_->counts_to_ = this;  // its interrupted reads are this store's
  }

  std::timed_mutex& mu() { return mu_; }

 private:
  class Statement;  // a borrowed prepared statement
  class Transaction;

  // All of these expect mu_ held.
  absl::Status CheckOpenLocked() const;
  absl::StatusOr<Statement> PrepareLocked(absl::string_view sql);
  absl::Status ExecLocked(const char* sql);
  // Runs `sql` with `key` bound to its one parameter; returns the rows it changed.
  absl::StatusOr<int> RunKeyedLocked(const char* sql, const std::string& key);
  absl::StatusOr<int> SchemaVersionLocked();  // PRAGMA user_version
  absl::Status MigrateLocked();
  absl::StatusOr<std::vector<Measurement>> QueryMeasurementsLocked(const MeasurementFilter& filter,
                                                                   int64_t after_seq, int64_t limit,
                                                                   std::vector<int64_t>* seqs);
  absl::Status LoadLabelsLocked(Measurement* m);
  absl::Status EvictSweepsLocked();
  // A row of SELECT store_internal::kMeasurementSelect (labels not included) / of kProfileQuery.
  static absl::StatusOr<Measurement> ReadMeasurement(const Statement& row);
  static absl::StatusOr<StoredProfile> ReadProfile(const Statement& row);
  // Every stored profile's base ("" for a full one); mu_ held.
  absl::StatusOr<store_internal::ProfileBases> ProfileBasesLocked();

  // While alive (mu_ held), `read` may interrupt the statements run on db (ReadInterrupt).
  class InterruptGuard;
  // Runs `body` (an absl::StatusOr) with mu_ held and the store checked open, its statements
  // interruptible by the caller (ReadInterrupt, counted as an interrupted read); with
  // `snapshot`, inside one read transaction.
  template <typename F>
  auto InterruptibleReadLocked(bool snapshot, F&& body) -> decltype(body());
  // SELECT COUNT(*) of the measurements matching `where` (table alias m) with `values` bound.
  absl::StatusOr<int64_t> CountLocked(const std::string& where,
                                      const std::vector<std::string>& values);
  std::atomic<int64_t>* interrupted_counter() { return &counts_to_->interrupted_reads_; }

  const StoreOptions options_;
  SqliteStore* counts_to_ = this;
  std::unique_ptr<SqliteStore> reader_;  // may be null: reads then use this connection
  std::timed_mutex mu_;
  sqlite3* db_ = nullptr;  // guarded by mu_; null once closed
  // Prepared statements by SQL text, guarded by mu_. Bounded (see PrepareLocked).
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// ---------------------------------------------------------------------------------------------
// Statement: a prepared statement borrowed from the cache (reset and unbound when done) or owned
// for one use (finalized when done). Binding errors are kept and reported by the next Step.

class SqliteStore::Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, bool owned) : db_(db), stmt_(stmt), owned_(owned) {}
  Statement(Statement&& other) noexcept
      : db_(other.db_),
        stmt_(std::exchange(other.stmt_, nullptr)),
        owned_(other.owned_),
        bind_rc_(other.bind_rc_) {}
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement() {
    if (stmt_ == nullptr) return;
    if (owned_) {
      sqlite3_finalize(stmt_);
    } else {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
  }

  void BindText(int i, absl::string_view s) {
    // A null data pointer would bind NULL, not "".
    Check(sqlite3_bind_text(stmt_, i, s.data() != nullptr ? s.data() : "",
                            static_cast<int>(s.size()), SQLITE_TRANSIENT));
  }
  void BindBlob(int i, absl::string_view s) {
    Check(sqlite3_bind_blob(stmt_, i, s.data() != nullptr ? s.data() : "",
                            static_cast<int>(s.size()), SQLITE_TRANSIENT));
  }
  void BindInt64(int i, int64_t v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
  void BindDouble(int i, double v) { Check(sqlite3_bind_double(stmt_, i, v)); }

  // SQLITE_ROW, SQLITE_DONE or an error code (a bind error first).
  int StepRaw() { return bind_rc_ != SQLITE_OK ? bind_rc_ : sqlite3_step(stmt_); }

  // True with a row, false when done.
  absl::StatusOr<bool> Step() {
    const int rc = StepRaw();
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, rc, sqlite3_sql(stmt_));
  }
  // Runs a statement that returns no rows.
  absl::Status Run() {
    ASSIGN_OR_RETURN(const bool row, Step());
    if (row) return absl::InternalError(absl::StrCat("unexpected row from ", sqlite3_sql(stmt_)));
    return absl::OkStatus();
  }

  int64_t Int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p != nullptr ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }
  std::string Blob(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    return p != nullptr ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool owned_;
  int bind_rc_ = SQLITE_OK;
};

// Transaction: BEGIN on Begin(), ROLLBACK on destruction unless Commit() succeeded. Write
// transactions take the write lock up front (BEGIN IMMEDIATE) so that lock waits go through the
// busy timeout instead of failing on upgrade.
class SqliteStore::Transaction {
 public:
  explicit Transaction(SqliteStore* store) : store_(store) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    // Some errors (SQLITE_FULL, IOERR, ...) roll back by themselves; then there is nothing left.
    if (active_ && sqlite3_get_autocommit(store_->db_) == 0) {
      sqlite3_exec(store_->db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }

  absl::Status BeginRead() { return Begin("BEGIN DEFERRED"); }
  absl::Status BeginWrite() { return Begin("BEGIN IMMEDIATE"); }
  absl::Status Commit() {
    RETURN_IF_ERROR(store_->ExecLocked("COMMIT"));
    active_ = false;
    return absl::OkStatus();
  }

 private:
  absl::Status Begin(const char* sql) {
    RETURN_IF_ERROR(store_->ExecLocked(sql));
    active_ = true;
    return absl::OkStatus();
  }

  SqliteStore* store_;
  bool active_ = false;
};

class SqliteStore::InterruptGuard {
 public:
  InterruptGuard(sqlite3* db, store_internal::InterruptibleRead* read) : db_(db), read_(read) {
    if (read_->active()) {
      sqlite3_progress_handler(db_, ReadInterrupt::kInterruptSteps, &InterruptGuard::Poll, read_);
    }
  }
  ~InterruptGuard() {
    if (read_->active()) sqlite3_progress_handler(db_, 0, nullptr, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  // Non-zero aborts the statement (SQLITE_INTERRUPT); once stopped, what follows (the
  // ROLLBACK) runs.
  static int Poll(void* arg) {
    auto* read = static_cast<store_internal::InterruptibleRead*>(arg);
    return !read->stopped() && read->Stop() ? 1 : 0;
  }
  sqlite3* db_;
  store_internal::InterruptibleRead* read_;
};

template <typename F>
auto SqliteStore::InterruptibleReadLocked(bool snapshot, F&& body) -> decltype(body()) {
  store_internal::InterruptibleRead read(interrupted_counter());
  return read.Outcome([&]() -> decltype(body()) {
    std::lock_guard<std::timed_mutex> lock(mu_);
    RETURN_IF_ERROR(CheckOpenLocked());
    InterruptGuard interrupt(db_, &read);
    if (!snapshot) return body();
    Transaction txn(this);
    RETURN_IF_ERROR(txn.BeginRead());
    auto result = body();
    if (!result.ok()) return result;
    RETURN_IF_ERROR(txn.Commit());
    return result;
  }());
}

absl::StatusOr<int64_t> SqliteStore::CountLocked(const std::string& where,
                                                 const std::vector<std::string>& values) {
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked(absl::StrCat(
                                       "SELECT COUNT(*) FROM measurements AS m WHERE ", where)));
  int c = 0;
  for (const std::string& v : values) stmt.BindText(++c, v);
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::InternalError("COUNT(*) returned no row");
  return stmt.Int64(0);
}

namespace {

// The WHERE clause of a measurement query (table alias m) and the values it binds, in order.
// Only the shape of the SQL depends on the filter; every value is bound.
struct FilterSql {
  std::string where;
  std::vector<std::string> values;
};

FilterSql BuildFilter(const MeasurementFilter& f) {
  FilterSql out;
  out.where = "m.seq > ?";
  auto add = [&out](absl::string_view column, const std::string& value) {
    if (value.empty()) return;
    absl::StrAppend(&out.where, " AND m.", column, " = ?");
    out.values.push_back(value);
  };
  add("accelerator", f.accelerator);
  add("framework", f.framework);
  add("source", f.source);
  for (const auto& [k, v] : f.labels) {
    absl::StrAppend(&out.where,
                    " AND EXISTS (SELECT 1 FROM measurement_labels AS l WHERE l.measurement_id = "
                    "m.id AND l.key = ? AND l.value = ?)");
    out.values.push_back(k);
    out.values.push_back(v);
  }
  return out;
}

// INSERT INTO measurements (...) VALUES (?, ?, ...): the shared column table's.
const std::string& InsertMeasurementSql() {
  static const auto* sql = [] {
    std::string values;
    for (size_t i = 0; i < store_internal::MeasurementColumns().size(); ++i) {
      absl::StrAppend(&values, i == 0 ? "?" : ", ?");
    }
    return new std::string(absl::StrCat("INSERT INTO measurements (",
                                        store_internal::MeasurementInsertColumns(), ") VALUES (",
                                        values, ")"));
  }();
  return *sql;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

SqliteStore::SqliteStore(sqlite3* db, StoreOptions options)
    : options_(std::move(options)), db_(db) {}

SqliteStore::~SqliteStore() { Close(); }

void SqliteStore::Close() {
  if (reader_) reader_->Close();
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (db_ == nullptr) return;
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  statements_.clear();
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

absl::Status SqliteStore::CheckOpenLocked() const {
  return db_ != nullptr ? absl::OkStatus() : store_internal::ClosedError();
}

absl::StatusOr<SqliteStore::Statement> SqliteStore::PrepareLocked(absl::string_view sql) {
  RETURN_IF_ERROR(CheckOpenLocked());
  std::string key(sql);
  if (auto it = statements_.find(key); it != statements_.end()) {
    return Statement(db_, it->second, /*owned=*/false);
  }
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, key.data(), static_cast<int>(key.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, absl::StrCat("prepare ", key));
  if (statements_.size() >= kMaxCachedStatements) return Statement(db_, stmt, /*owned=*/true);
  statements_.emplace(std::move(key), stmt);
  return Statement(db_, stmt, /*owned=*/false);
}

absl::StatusOr<int> SqliteStore::RunKeyedLocked(const char* sql, const std::string& key) {
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked(sql));
  stmt.BindText(1, key);
  RETURN_IF_ERROR(stmt.Run());
  return sqlite3_changes(db_);
}

absl::Status SqliteStore::ExecLocked(const char* sql) {
  RETURN_IF_ERROR(CheckOpenLocked());
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  sqlite3_free(error);  // sqlite3_errmsg has the same text
  return SqliteError(db_, rc, sql);
}

namespace {

// A SQLite file shorter than its header says is truncated (a 0-byte file included: SQLite would
// silently start an empty database in it). The header's page count is valid when its
// "version-valid-for" number equals the change counter (SQLite file format, section 1.3).
absl::Status CheckNotTruncated(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return absl::OkStatus();  // a new database
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path, "': cannot read its size: ", ec.message()));
  }
  const std::string truncated =
      absl::StrCat("'", path, "' is truncated (", size,
                   " bytes): restore it from a backup, or move it aside to start an empty store");
  if (size == 0) return absl::DataLossError(truncated);
  std::ifstream in(path, std::ios::binary);
  unsigned char h[100] = {};
  if (!in.read(reinterpret_cast<char*>(h), sizeof(h))) {
    if (size < 100) return absl::DataLossError(truncated);
    return absl::OkStatus();
  }
  if (std::memcmp(h, "SQLite format 3", 16) != 0) return absl::OkStatus();  // SQLite says so
  auto be32 = [&h](int at) {
    return (uint32_t{h[at]} << 24) | (uint32_t{h[at + 1]} << 16) | (uint32_t{h[at + 2]} << 8) |
           uint32_t{h[at + 3]};
  };
  uint64_t page_size = (uint64_t{h[16]} << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t pages = be32(28);
  if (be32(24) == be32(92) && pages > 0 && size < page_size * pages) {
    return absl::DataLossError(truncated);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SqliteStore::InitLocked(bool in_memory) {
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, options_.busy_timeout_ms);
  if (!in_memory && sqlite3_db_readonly(db_, "main") == 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the database file is read-only: give this process write access, or point --db "
        "elsewhere"));
  }
  RETURN_IF_ERROR(ExecLocked("PRAGMA foreign_keys = ON"));
  {
    ASSIGN_OR_RETURN(Statement check, PrepareLocked("PRAGMA foreign_keys"));
    ASSIGN_OR_RETURN(const bool row, check.Step());
    if (!row || check.Int64(0) != 1) {
      return absl::FailedPreconditionError("this SQLite build cannot enforce foreign keys");
    }
  }
  {
    // Refuse a database from a newer build before changing anything in it (the journal mode).
    ASSIGN_OR_RETURN(const int version, SchemaVersionLocked());
    if (version > LatestSchemaVersion()) return TooNewError(version);
  }
  {
    // An in-memory database has no file to log ahead of; it reports "memory".
    ASSIGN_OR_RETURN(Statement wal, PrepareLocked("PRAGMA journal_mode = WAL"));
    ASSIGN_OR_RETURN(const bool row, wal.Step());
    const std::string mode = row ? wal.Text(0) : "";
    if (mode != (in_memory ? "memory" : "wal")) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot use a write-ahead log (journal mode '", mode,
                       "'); is it on a network file system?"));
    }
  }
  // FULL: a commit is on stable storage before it is acknowledged (NORMAL in WAL mode may lose
  // the last commits on power loss).
  RETURN_IF_ERROR(ExecLocked("PRAGMA synchronous = FULL"));
  if (options_.max_db_bytes > 0) {
    ASSIGN_OR_RETURN(Statement ps, PrepareLocked("PRAGMA page_size"));
    ASSIGN_OR_RETURN(const bool row, ps.Step());
    const int64_t page_size = row && ps.Int64(0) > 0 ? ps.Int64(0) : 4096;
    const int64_t pages = std::max<int64_t>(1, options_.max_db_bytes / page_size);
    RETURN_IF_ERROR(ExecLocked(absl::StrCat("PRAGMA max_page_count = ", pages).c_str()));
  }
  RETURN_IF_ERROR(MigrateLocked());
  // Probe a write now, so that a database this process cannot write refuses to start instead
  // of failing every write later.
  ASSIGN_OR_RETURN(Statement probe,
                   PrepareLocked("INSERT INTO store_meta (key, value) VALUES ('last_open_unix_ms', "
                                 "?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"));
  probe.BindText(1, absl::StrCat(NowUnixMs()));
  if (absl::Status s = probe.Run(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot write to the database: ", s.message()));
  }
  return absl::OkStatus();
}

namespace store_internal {

namespace {

absl::StatusOr<std::unique_ptr<SqliteStore>> OpenConnection(const StoreOptions& options) {
  const bool in_memory = options.path == kMemoryPath;
  auto named = [&options](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("--db '", options.path, "': ", s.message()));
  };
  if (!in_memory) {
    const std::filesystem::path parent = std::filesystem::path(options.path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      return named(absl::FailedPreconditionError(
          absl::StrCat("cannot create directory '", parent.string(), "': ", ec.message())));
    }
    if (absl::Status s = CheckNotTruncated(options.path); !s.ok()) return named(s);
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(options.path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, rc, "open");
    sqlite3_close_v2(db);  // a handle comes back even on failure (or null, which is a no-op)
    return named(status);
  }
  auto store = std::make_unique<SqliteStore>(db, options);
  {
    std::lock_guard<std::timed_mutex> lock(store->mu());
    if (absl::Status s = store->InitLocked(in_memory); !s.ok()) return named(s);
  }
  return store;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqlite(const StoreOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, OpenConnection(options));
  if (options.path != kMemoryPath) {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> reader, OpenConnection(options));
    store->set_reader(std::move(reader));
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace store_internal

absl::StatusOr<int> SqliteStore::SchemaVersionLocked() {
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("PRAGMA user_version"));
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::InternalError("PRAGMA user_version returned no row");
  return static_cast<int>(stmt.Int64(0));
}

absl::Status SqliteStore::MigrateLocked() {
  const int latest = LatestSchemaVersion();
  ASSIGN_OR_RETURN(const int initial, SchemaVersionLocked());
  if (initial > latest) return TooNewError(initial);
  for (const Migration& migration : Migrations()) {
    if (migration.version <= initial) continue;
    Transaction txn(this);
    RETURN_IF_ERROR(txn.BeginWrite());
    // Another process may have migrated while we waited for the write lock.
    ASSIGN_OR_RETURN(const int current, SchemaVersionLocked());
    if (current > latest) return TooNewError(current);
    if (current >= migration.version) continue;
    if (current != migration.version - 1) {
      return absl::InternalError(absl::StrCat("schema version ", current, ", expected ",
                                              migration.version - 1, " before migration ",
                                              migration.version));
    }
    const std::string sql(migration.sql);
    if (absl::Status s = ExecLocked(sql.c_str()); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("schema migration ", migration.version, " (",
                                                 migration.description, "): ", s.message()));
    }
    // A PRAGMA takes no parameters; the value is the code's own constant.
    RETURN_IF_ERROR(ExecLocked(absl::StrCat("PRAGMA user_version = ", migration.version).c_str()));
    RETURN_IF_ERROR(txn.Commit());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Measurements

absl::StatusOr<int64_t> SqliteStore::RecordMeasurementStream(const RunSource& next,
                                                             const StoredSink& sink) {
  const int64_t now = NowUnixMs();
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  ASSIGN_OR_RETURN(
      const int64_t given,
      store_internal::ForEachChunk(next, [&](std::vector<Measurement> batch, size_t first) {
        return RecordChunkLocked(std::move(batch), first, now, sink);
      }));
  RETURN_IF_ERROR(txn.Commit());
  return given;
}

// One chunk of a streamed write inside its write transaction: checked, repeats within it and
// runs already stored (earlier chunks included) dropped, inserted with their labels, passed to
// `sink`.
absl::Status SqliteStore::RecordChunkLocked(std::vector<Measurement> batch, size_t first,
                                            int64_t now, const StoredSink& sink) {
  RETURN_IF_ERROR(store_internal::PrepareChunk(&batch, first, now));
  std::vector<std::string> scenarios;
  scenarios.reserve(batch.size());
  for (Measurement& m : batch) scenarios.push_back(EncodeScenario(m.scenario));
  std::vector<size_t> original;
  store_internal::DropRepeatsWithinBatch(&batch, &scenarios, &original);
  for (size_t& o : original) o += first;
  for (size_t i = 0; i < batch.size(); ++i) {
    Measurement& m = batch[i];
    {
      // Already stored (in this write transaction: no other writer can add it meanwhile).
      ASSIGN_OR_RETURN(
          Statement dup,
          PrepareLocked("SELECT 1 FROM measurements INDEXED BY measurements_by_rate WHERE "
                        "source = ? AND scenario = ? AND "
                        "tokens_per_s_per_gpu = ? AND step_time_s = ? AND watts_per_gpu = ? "
                        "LIMIT 1"));
      dup.BindText(1, m.source);
      dup.BindText(2, scenarios[i]);
      dup.BindDouble(3, m.tokens_per_s_per_gpu);
      dup.BindDouble(4, m.step_time_s);
      dup.BindDouble(5, m.watts_per_gpu);
      ASSIGN_OR_RETURN(const bool found, dup.Step());
      if (found) continue;
    }
    const bool generate_id = m.id.empty();
    for (int attempt = 1;; ++attempt) {
      if (generate_id) m.id = store_internal::NewMeasurementId();
      ASSIGN_OR_RETURN(Statement insert, PrepareLocked(InsertMeasurementSql()));
      int c = 0;
      for (const store_internal::MeasurementColumn& col : store_internal::MeasurementColumns()) {
        std::visit(
            [&](const auto& v) {
              using V = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<V, std::string>) {
                insert.BindText(++c, v);
              } else if constexpr (std::is_same_v<V, int64_t>) {
                insert.BindInt64(++c, v);
              } else {
                insert.BindDouble(++c, v);
              }
            },
            col.value(m, scenarios[i]));
      }
      const int rc = insert.StepRaw();
      if (rc == SQLITE_DONE) break;
      // The only UNIQUE constraint on measurements besides its rowid is id. A failed statement
      // undoes only itself, so the transaction can go on with a fresh id.
      if (rc == SQLITE_CONSTRAINT_UNIQUE) {
        if (generate_id && attempt < store_internal::kIdAttempts) continue;
        return absl::AlreadyExistsError(
            absl::StrCat("measurements[", original[i], "].id: '", m.id, "' already exists"));
      }
      return SqliteError(db_, rc, absl::StrCat("insert measurements[", original[i], "]"));
    }
    for (const auto& [key, value] : m.labels) {
      ASSIGN_OR_RETURN(Statement label,
                       PrepareLocked("INSERT INTO measurement_labels (measurement_id, key, value) "
                                     "VALUES (?, ?, ?)"));
      label.BindText(1, m.id);
      label.BindText(2, key);
      label.BindText(3, value);
      if (absl::Status status = label.Run(); !status.ok()) {
        return absl::Status(status.code(), absl::StrCat("measurements[", original[i],
                                                        "].labels: ", status.message()));
      }
    }
    sink(std::move(m));
  }
  return absl::OkStatus();
}

absl::StatusOr<Measurement> SqliteStore::ReadMeasurement(const Statement& row) {
  Measurement m;
  m.id = row.Text(1);
  absl::StatusOr<Scenario> scenario = DecodeScenario(row.Text(2));
  if (!scenario.ok()) {
    return absl::InternalError(
        absl::StrCat("measurement '", m.id, "': ", scenario.status().message()));
  }
  m.scenario = *std::move(scenario);
  m.tokens_per_s_per_gpu = row.Double(3);
  m.step_time_s = row.Double(4);
  m.watts_per_gpu = row.Double(5);
  m.source = row.Text(6);
  m.recorded_at_unix_ms = row.Int64(7);
  return m;
}

absl::Status SqliteStore::LoadLabelsLocked(Measurement* m) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      PrepareLocked("SELECT key, value FROM measurement_labels WHERE measurement_id = ?"));
  stmt.BindText(1, m->id);
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) break;
    m->labels.emplace(stmt.Text(0), stmt.Text(1));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Measurement>> SqliteStore::QueryMeasurementsLocked(
    const MeasurementFilter& filter, int64_t after_seq, int64_t limit, std::vector<int64_t>* seqs) {
  const FilterSql where = BuildFilter(filter);
  ASSIGN_OR_RETURN(Statement stmt,
                   PrepareLocked(absl::StrCat("SELECT ", store_internal::kMeasurementSelect,
                                              " FROM measurements AS m WHERE ", where.where,
                                              " ORDER BY m.seq LIMIT ?")));
  int c = 0;
  stmt.BindInt64(++c, after_seq);
  for (const std::string& v : where.values) stmt.BindText(++c, v);
  stmt.BindInt64(++c, limit);  // negative: no limit
  std::vector<Measurement> out;
  int64_t last_seq = after_seq;
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) break;
    last_seq = stmt.Int64(0);
    if (seqs != nullptr) seqs->push_back(last_seq);
    ASSIGN_OR_RETURN(Measurement m, ReadMeasurement(stmt));
    out.push_back(std::move(m));
  }
  if (out.empty()) return out;
  // The labels of exactly these rows in one query: the same filter over the same seq range
  // (the caller holds one read transaction, so the rows cannot change in between).
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) index[out[i].id] = i;
  ASSIGN_OR_RETURN(Statement labels,
                   PrepareLocked(absl::StrCat(
                       "SELECT l.measurement_id, l.key, l.value FROM measurement_labels AS l "
                       "JOIN measurements AS m ON m.id = l.measurement_id WHERE ",
                       where.where, " AND m.seq <= ?")));
  c = 0;
  labels.BindInt64(++c, after_seq);
  for (const std::string& v : where.values) labels.BindText(++c, v);
  labels.BindInt64(++c, last_seq);
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, labels.Step());
    if (!row) break;
    auto it = index.find(labels.Text(0));
    if (it != index.end()) out[it->second].labels.emplace(labels.Text(1), labels.Text(2));
  }
  return out;
}

absl::StatusOr<std::vector<Measurement>> SqliteStore::ListMeasurements(
    const MeasurementFilter& filter, int page_size, const std::string& page_token,
    std::string* next_page_token) {
  if (reader_) return reader_->ListMeasurements(filter, page_size, page_token, next_page_token);
  ASSIGN_OR_RETURN(const int limit, store_internal::PageLimit(page_size));
  ASSIGN_OR_RETURN(const int64_t after_seq, store_internal::DecodePageToken(filter, page_token));

  std::vector<int64_t> seqs;
  // One snapshot for the rows and their labels.
  absl::StatusOr<std::vector<Measurement>> rows = InterruptibleReadLocked(/*snapshot=*/true, [&] {
    return QueryMeasurementsLocked(filter, after_seq, limit + 1, &seqs);
  });
  if (!rows.ok()) return rows.status();
  std::vector<Measurement> page = *std::move(rows);
  std::string next = store_internal::TrimPage(&page, limit, [&](size_t last) {
    return store_internal::EncodePageToken(filter, seqs[last]);
  });
  if (next_page_token != nullptr) *next_page_token = std::move(next);
  return page;
}

absl::StatusOr<std::vector<Measurement>> SqliteStore::AllMeasurements(
    const MeasurementFilter& filter, int64_t limit) {
  if (reader_) return reader_->AllMeasurements(filter, limit);
  absl::StatusOr<std::vector<Measurement>> rows = InterruptibleReadLocked(/*snapshot=*/true, [&] {
    return QueryMeasurementsLocked(filter, /*after_seq=*/0, limit < 0 ? -1 : limit + 1, nullptr);
  });
  if (!rows.ok()) return rows.status();
  std::vector<Measurement> all = *std::move(rows);
  if (limit >= 0 && static_cast<int64_t>(all.size()) > limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat("filter: more than ", limit, " stored runs match; narrow the filter"));
  }
  return all;
}

absl::StatusOr<std::vector<Measurement>> SqliteStore::SampleMeasurements(
    const MeasurementFilter& filter, int64_t max_runs, int64_t* matching) {
  if (reader_) return reader_->SampleMeasurements(filter, max_runs, matching);
  if (max_runs < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_runs: must be >= 1, got ", max_runs));
  }
  FilterSql where = BuildFilter(filter);
  where.where.replace(0, std::string("m.seq > ?").size(), "1");  // as CountMeasurements
  int64_t count = 0;
  // The count and the sample of one snapshot.
  absl::StatusOr<std::vector<Measurement>> rows =
      InterruptibleReadLocked(/*snapshot=*/true, [&]() -> absl::StatusOr<std::vector<Measurement>> {
        ASSIGN_OR_RETURN(count, CountLocked(where.where, where.values));
        const int64_t stride = std::max<int64_t>(1, (count + max_runs - 1) / max_runs);
        ASSIGN_OR_RETURN(
            Statement stmt,
            PrepareLocked(absl::StrCat(
                "SELECT ", store_internal::kMeasurementSelect,
                " FROM measurements AS m WHERE m.seq IN (SELECT s.seq FROM (SELECT m.seq AS seq, "
                "ROW_NUMBER() OVER (ORDER BY m.seq) AS n FROM measurements AS m WHERE ",
                where.where, ") AS s WHERE (s.n - 1) % ? = 0) ORDER BY m.seq LIMIT ?")));
        int c = 0;
        for (const std::string& v : where.values) stmt.BindText(++c, v);
        stmt.BindInt64(++c, stride);
        stmt.BindInt64(++c, max_runs);
        std::vector<Measurement> out;
        for (;;) {
          ASSIGN_OR_RETURN(const bool row, stmt.Step());
          if (!row) break;
          ASSIGN_OR_RETURN(Measurement m, ReadMeasurement(stmt));
          out.push_back(std::move(m));
        }
        return out;
      });
  if (rows.ok() && matching != nullptr) *matching = count;
  return rows;
}

absl::StatusOr<Measurement> SqliteStore::GetMeasurement(const std::string& id) {
  if (reader_) return reader_->GetMeasurement(id);
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginRead());
  Measurement m;
  {
    ASSIGN_OR_RETURN(Statement stmt,
                     PrepareLocked(absl::StrCat("SELECT ", store_internal::kMeasurementSelect,
                                                " FROM measurements AS m WHERE m.id = ?")));
    stmt.BindText(1, id);
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) return absl::NotFoundError(absl::StrCat("measurement '", id, "' not found"));
    ASSIGN_OR_RETURN(m, ReadMeasurement(stmt));
  }
  RETURN_IF_ERROR(LoadLabelsLocked(&m));
  RETURN_IF_ERROR(txn.Commit());
  return m;
}

absl::Status SqliteStore::DeleteMeasurement(const std::string& id) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  // Its labels go with it (ON DELETE CASCADE).
  ASSIGN_OR_RETURN(const int deleted, RunKeyedLocked("DELETE FROM measurements WHERE id = ?", id));
  if (deleted == 0) return absl::NotFoundError(absl::StrCat("measurement '", id, "' not found"));
  return txn.Commit();
}

absl::StatusOr<int64_t> SqliteStore::CountMeasurements(const MeasurementFilter& filter) {
  if (reader_) return reader_->CountMeasurements(filter);
  FilterSql where = BuildFilter(filter);
  // Without the keyset condition ("m.seq > ?"), an unfiltered count reads the smallest index
  // rather than every row of the table (rows are ~1 KB: 400 MB at 400k rows).
  where.where.replace(0, std::string("m.seq > ?").size(), "1");
  return InterruptibleReadLocked(/*snapshot=*/false,
                                 [&] { return CountLocked(where.where, where.values); });
}

// ---------------------------------------------------------------------------------------------
// Profiles

absl::Status SqliteStore::PutProfile(const StoredProfile& p, bool replace) {
  const Profile& profile = p.profile;
  ASSIGN_OR_RETURN(const std::string text, store_internal::ProfileText(p));
  const int64_t created = p.created_at_unix_ms != 0 ? p.created_at_unix_ms : NowUnixMs();

  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  // A layer's base must be stored and must not lead back to it; read under the write lock.
  ASSIGN_OR_RETURN(const store_internal::ProfileBases bases, ProfileBasesLocked());
  RETURN_IF_ERROR(store_internal::CheckLayerWrite(profile, bases));
  {
    ASSIGN_OR_RETURN(
        Statement stmt,
        PrepareLocked(absl::StrCat(
            "INSERT INTO profiles (name, profile_text, fitted_on, fitted_count, mape_before, "
            "mape_after, cv_mape, created_at_unix_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) ",
            replace ? "DO UPDATE SET profile_text = excluded.profile_text, fitted_on = "
                      "excluded.fitted_on, fitted_count = excluded.fitted_count, mape_before = "
                      "excluded.mape_before, mape_after = excluded.mape_after, cv_mape = "
                      "excluded.cv_mape, created_at_unix_ms = excluded.created_at_unix_ms"
                    : "DO NOTHING")));
    int c = 0;
    stmt.BindText(++c, profile.name);
    stmt.BindText(++c, text);
    stmt.BindText(++c, p.fitted_on);
    stmt.BindInt64(++c, p.fitted_count);
    stmt.BindDouble(++c, p.mape_before);
    stmt.BindDouble(++c, p.mape_after);
    stmt.BindDouble(++c, p.cv_mape);
    stmt.BindInt64(++c, created);
    RETURN_IF_ERROR(stmt.Run());
  }
  // Without replace, the insert under the write lock (BEGIN IMMEDIATE: one writer across
  // processes) decides: nothing inserted means the name was taken.
  if (sqlite3_changes(db_) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("profile '", profile.name, "' already exists"));
  }
  // Sweeps computed with the old parameters are stale, and so are those of every profile
  // layered on this one.
  std::vector<std::string> stale = store_internal::DependantsOf(profile.name, bases, true);
  stale.push_back(profile.name);
  for (const std::string& name : stale) {
    RETURN_IF_ERROR(RunKeyedLocked("DELETE FROM sweep_cache WHERE profile = ?", name).status());
  }
  return txn.Commit();
}

absl::StatusOr<store_internal::ProfileBases> SqliteStore::ProfileBasesLocked() {
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("SELECT name, profile_text FROM profiles"));
  std::vector<std::pair<std::string, std::string>> rows;
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) break;
    rows.emplace_back(stmt.Text(0), stmt.Text(1));
  }
  return store_internal::ReadProfileBases(rows);
}

absl::Status SqliteStore::DeleteProfile(const std::string& name) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  {
    // A profile another one layers on stays (the layer would lose its base).
    ASSIGN_OR_RETURN(const store_internal::ProfileBases bases, ProfileBasesLocked());
    if (bases.count(name) != 0) RETURN_IF_ERROR(store_internal::CheckNoDependants(name, bases));
  }
  ASSIGN_OR_RETURN(const int deleted, RunKeyedLocked("DELETE FROM profiles WHERE name = ?", name));
  if (deleted == 0) return absl::NotFoundError(absl::StrCat("profile '", name, "' not found"));
  RETURN_IF_ERROR(RunKeyedLocked("DELETE FROM sweep_cache WHERE profile = ?", name).status());
  return txn.Commit();
}

// ---------------------------------------------------------------------------------------------
// Registered accelerators

absl::Status SqliteStore::PutAccelerator(const StoredAccelerator& a, bool replace,
                                         int64_t max_count) {
  ASSIGN_OR_RETURN(const std::string text, store_internal::AcceleratorText(a));
  const int64_t created = a.created_at_unix_ms != 0 ? a.created_at_unix_ms : NowUnixMs();
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  bool exists = false;
  int64_t count = 0;
  {
    ASSIGN_OR_RETURN(Statement stmt,
                     PrepareLocked("SELECT COUNT(*), COALESCE(SUM(id = ?), 0) FROM accelerators"));
    stmt.BindText(1, a.spec.id);
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (row) {
      count = stmt.Int64(0);
      exists = stmt.Int64(1) > 0;
    }
  }
  if (exists && !replace) {
    return absl::AlreadyExistsError(absl::StrCat(
        "spec.id: accelerator '", a.spec.id, "' is registered already (set replace to change it)"));
  }
  if (!exists && count >= max_count) {
    return absl::ResourceExhaustedError(
        absl::StrCat("accelerators: ", count, " registered, the limit; delete one first"));
  }
  {
    ASSIGN_OR_RETURN(Statement stmt,
                     PrepareLocked("INSERT INTO accelerators (id, spec, created_at_unix_ms) "
                                   "VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                                   "spec = excluded.spec, "
                                   "created_at_unix_ms = excluded.created_at_unix_ms"));
    stmt.BindText(1, a.spec.id);
    stmt.BindText(2, text);
    stmt.BindInt64(3, created);
    RETURN_IF_ERROR(stmt.Run());
  }
  if (exists) RETURN_IF_ERROR(ExecLocked("DELETE FROM sweep_cache"));
  return txn.Commit();
}

absl::StatusOr<std::vector<StoredAccelerator>> SqliteStore::ListAccelerators() {
  if (reader_) return reader_->ListAccelerators();
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("SELECT id, spec, created_at_unix_ms FROM "
                                                 "accelerators ORDER BY id"));
  std::vector<StoredAccelerator> out;
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) break;
    StoredAccelerator a;
    ASSIGN_OR_RETURN(a.spec, store_internal::ParseAcceleratorText(stmt.Text(0), stmt.Text(1)));
    a.created_at_unix_ms = stmt.Int64(2);
    out.push_back(std::move(a));
  }
  return out;
}

absl::Status SqliteStore::DeleteAccelerator(const std::string& id) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  ASSIGN_OR_RETURN(const int deleted, RunKeyedLocked("DELETE FROM accelerators WHERE id = ?", id));
  if (deleted == 0) {
    return absl::NotFoundError(absl::StrCat("accelerator '", id, "' is not registered"));
  }
  RETURN_IF_ERROR(ExecLocked("DELETE FROM sweep_cache"));
  return txn.Commit();
}

namespace {

using store_internal::kProfileQuery;

}  // namespace

absl::StatusOr<StoredProfile> SqliteStore::ReadProfile(const Statement& row) {
  absl::StatusOr<Profile> profile = Profile::FromText(row.Text(1));
  if (!profile.ok()) {
    return absl::InternalError(absl::StrCat("stored profile '", row.Text(0),
                                            "' is corrupt: ", profile.status().message()));
  }
  StoredProfile p;
  p.profile = *std::move(profile);
  p.fitted_on = row.Text(2);
  p.fitted_count = static_cast<int>(row.Int64(3));
  p.mape_before = row.Double(4);
  p.mape_after = row.Double(5);
  p.cv_mape = row.Double(6);
  p.created_at_unix_ms = row.Int64(7);
  return p;
}

absl::StatusOr<StoredProfile> SqliteStore::GetProfile(const std::string& name) {
  if (reader_) return reader_->GetProfile(name);
  std::lock_guard<std::timed_mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked(absl::StrCat(kProfileQuery, " WHERE name = ?")));
  stmt.BindText(1, name);
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("profile '", name, "' not found"));
  return ReadProfile(stmt);
}

absl::StatusOr<std::vector<StoredProfile>> SqliteStore::ListProfiles(int page_size,
                                                                     const std::string& page_token,
                                                                     std::string* next_page_token) {
  if (reader_) return reader_->ListProfiles(page_size, page_token, next_page_token);
  ASSIGN_OR_RETURN(const int limit, store_internal::ProfilePageLimit(page_size));
  ASSIGN_OR_RETURN(const std::string after, store_internal::DecodeProfileToken(page_token));
  absl::StatusOr<std::vector<StoredProfile>> rows = InterruptibleReadLocked(
      /*snapshot=*/false, [&]() -> absl::StatusOr<std::vector<StoredProfile>> {
        ASSIGN_OR_RETURN(
            Statement stmt,
            PrepareLocked(absl::StrCat(kProfileQuery, " WHERE name > ? ORDER BY name LIMIT ?")));
        stmt.BindText(1, after);
        stmt.BindInt64(2, limit + 1);
        std::vector<StoredProfile> page;
        for (;;) {
          ASSIGN_OR_RETURN(const bool row, stmt.Step());
          if (!row) break;
          ASSIGN_OR_RETURN(StoredProfile p, ReadProfile(stmt));
          page.push_back(std::move(p));
        }
        return page;
      });
  if (!rows.ok()) return rows.status();
  std::vector<StoredProfile> out = *std::move(rows);
  std::string next = store_internal::TrimPage(&out, limit, [&](size_t last) {
    return store_internal::EncodeProfileToken(out[last].profile.name);
  });
  if (next_page_token != nullptr) *next_page_token = std::move(next);
  return out;
}

absl::StatusOr<int64_t> SqliteStore::CountProfiles() {
  if (reader_) return reader_->CountProfiles();
  std::lock_guard<std::timed_mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("SELECT COUNT(*) FROM profiles"));
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::InternalError("COUNT(*) returned no row");
  return stmt.Int64(0);
}

// ---------------------------------------------------------------------------------------------
// Sweep cache

absl::StatusOr<std::optional<std::string>> SqliteStore::GetCachedSweep(
    const std::string& key, const std::string& model_version, const std::string& profile) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  // One statement: the lookup, the hit count and the recency are one atomic write. last_used is
  // a logical clock (the largest stored plus one), so the order of uses is exact.
  ASSIGN_OR_RETURN(Statement stmt,
                   PrepareLocked("UPDATE sweep_cache SET hit_count = hit_count + 1, last_used = "
                                 "(SELECT COALESCE(MAX(last_used), 0) + 1 FROM sweep_cache) WHERE "
                                 "request_key = ? AND model_version = ? AND profile = ? "
                                 "RETURNING value"));
  stmt.BindBlob(1, key);
  stmt.BindText(2, model_version);
  stmt.BindText(3, profile);
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return std::optional<std::string>();
  std::string value = stmt.Blob(0);
  RETURN_IF_ERROR(stmt.Run());  // finish the statement, which commits
  return std::optional<std::string>(std::move(value));
}

absl::Status SqliteStore::Ping(int timeout_ms) {
  std::unique_lock<std::timed_mutex> lock(mu_, std::defer_lock);
  // A connection busy with a long write is a database that answers.
  if (!lock.try_lock_for(std::chrono::milliseconds(timeout_ms))) return absl::OkStatus();
  RETURN_IF_ERROR(CheckOpenLocked());
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("SELECT COUNT(*) FROM sqlite_master"));
  absl::StatusOr<bool> row = stmt.Step();
  if (!row.ok())
    return absl::UnavailableError(absl::StrCat(options_.path, ": ", row.status().message()));
  return absl::OkStatus();
}

absl::Status SqliteStore::PutCachedSweep(const std::string& key, const std::string& model_version,
                                         const std::string& profile, const std::string& value) {
  const int64_t size = static_cast<int64_t>(key.size() + value.size());
  if (size > options_.sweep_cache_max_bytes) return absl::OkStatus();  // would evict everything
  // Best-effort and bounded in time: behind a long write of this process (an import holds the
  // connection for seconds) or another process's lock, the entry is not kept rather than wait.
  std::unique_lock<std::timed_mutex> lock(mu_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(kCacheWriteTimeoutMs))) {
    return absl::UnavailableError("sweep cache: the database is busy; entry not kept");
  }
  RETURN_IF_ERROR(CheckOpenLocked());
  sqlite3_busy_timeout(db_, std::min(options_.busy_timeout_ms, kCacheWriteTimeoutMs));
  struct RestoreBusyTimeout {
    sqlite3* db;
    int ms;
    ~RestoreBusyTimeout() { sqlite3_busy_timeout(db, ms); }
  } restore{db_, options_.busy_timeout_ms};
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  {
    ASSIGN_OR_RETURN(
        Statement stmt,
        PrepareLocked("INSERT INTO sweep_cache (request_key, model_version, profile, value, "
                      "hit_count, created_at_unix_ms, size_bytes, last_used) "
                      "VALUES (?, ?, ?, ?, 0, ?, ?, "
                      "(SELECT COALESCE(MAX(last_used), 0) + 1 FROM sweep_cache)) "
                      "ON CONFLICT (request_key, model_version, profile) DO UPDATE SET "
                      "value = excluded.value, hit_count = 0, "
                      "created_at_unix_ms = excluded.created_at_unix_ms, "
                      "size_bytes = excluded.size_bytes, last_used = excluded.last_used"));
    stmt.BindBlob(1, key);
    stmt.BindText(2, model_version);
    stmt.BindText(3, profile);
    stmt.BindBlob(4, value);
    stmt.BindInt64(5, NowUnixMs());
    stmt.BindInt64(6, size);
    RETURN_IF_ERROR(stmt.Run());
  }
  RETURN_IF_ERROR(EvictSweepsLocked());
  return txn.Commit();
}

absl::Status SqliteStore::EvictSweepsLocked() {
  int64_t total = 0;
  {
    ASSIGN_OR_RETURN(Statement sum,
                     PrepareLocked("SELECT COALESCE(SUM(size_bytes), 0) FROM sweep_cache"));
    ASSIGN_OR_RETURN(const bool row, sum.Step());
    if (row) total = sum.Int64(0);
  }
  while (total > options_.sweep_cache_max_bytes) {
    ASSIGN_OR_RETURN(Statement oldest,
                     PrepareLocked("DELETE FROM sweep_cache WHERE (request_key, model_version, "
                                   "profile) IN (SELECT request_key, model_version, profile FROM "
                                   "sweep_cache ORDER BY last_used LIMIT 1) RETURNING size_bytes"));
    ASSIGN_OR_RETURN(const bool row, oldest.Step());
    if (!row) break;
    total -= oldest.Int64(0);
    RETURN_IF_ERROR(oldest.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteStore::SweepCacheBytes() {
  std::lock_guard<std::timed_mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement sum,
                   PrepareLocked("SELECT COALESCE(SUM(size_bytes), 0) FROM sweep_cache"));
  ASSIGN_OR_RETURN(const bool row, sum.Step());
  return row ? sum.Int64(0) : 0;
}

absl::StatusOr<int64_t> SqliteStore::CachedSweepHits(const std::string& key,
                                                     const std::string& model_version,
                                                     const std::string& profile) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement stmt,
                   PrepareLocked("SELECT hit_count FROM sweep_cache WHERE request_key = ? AND "
                                 "model_version = ? AND profile = ?"));
  stmt.BindBlob(1, key);
  stmt.BindText(2, model_version);
  stmt.BindText(3, profile);
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::NotFoundError("no such cached sweep");
  return stmt.Int64(0);
}

absl::Status SqliteStore::InvalidateSweepCache() {
  std::lock_guard<std::timed_mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("DELETE FROM sweep_cache"));
  return stmt.Run();
}

}  // namespace scalecast
