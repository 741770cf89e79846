#include "storage/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/status_macros.h"
#include "storage/migrations.h"
#include "storage/scenario_codec.h"

namespace scalecast {
namespace {

constexpr char kMemoryPath[] = ":memory:";
constexpr int kDefaultPageSize = 100;
constexpr int kMaxPageSize = 1000;
// Statements are cached by SQL text. Filters with labels make SQL of varying shape, so the cache
// is bounded; past the bound a statement is prepared for one use and finalized.
constexpr size_t kMaxCachedStatements = 64;
// A generated id that collides with a stored one (p = 2^-64 per pair) is drawn again.
constexpr int kIdAttempts = 4;
constexpr absl::string_view kPageTokenPrefix = "m1.";

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// SQLITE_BUSY/LOCKED (another process held the lock past the busy timeout) is UNAVAILABLE: the
// caller may retry. Everything else is INTERNAL.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message =
      absl::StrCat("sqlite: ", what, ": ", detail, " (", sqlite3_errstr(rc), ", code ", rc, ")");
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

absl::Status TooNewError(int version) {
  return absl::FailedPreconditionError(absl::StrCat("database schema version ", version,
                                                    " is newer than this build supports (",
                                                    LatestSchemaVersion(), "); upgrade scalecast"));
}

absl::Status ClosedError() { return absl::FailedPreconditionError("store is closed"); }

// SQLite's PRNG is seeded from the OS and reseeded when a forked child opens a database file, so
// processes sharing a database do not draw the same ids.
std::string NewMeasurementId() {
  unsigned char bytes[8];
  sqlite3_randomness(sizeof(bytes), bytes);
  return absl::StrCat("m-", absl::BytesToHexString(absl::string_view(
                                reinterpret_cast<const char*>(bytes), sizeof(bytes))));
}

absl::Status ValidateMeasurement(const Measurement& m, size_t index) {
  auto bad = [&](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("measurements[", index, "].", field, ": ", why));
  };
  if (!std::isfinite(m.tokens_per_s_per_gpu) || m.tokens_per_s_per_gpu <= 0) {
    return bad("tokens_per_s_per_gpu",
               absl::StrCat("must be a finite number > 0, got ", m.tokens_per_s_per_gpu));
  }
  if (!std::isfinite(m.step_time_s) || m.step_time_s < 0) {
    return bad("step_time_s", absl::StrCat("must be a finite number >= 0, got ", m.step_time_s));
  }
  if (!std::isfinite(m.watts_per_gpu) || m.watts_per_gpu < 0) {
    return bad("watts_per_gpu",
               absl::StrCat("must be a finite number >= 0, got ", m.watts_per_gpu));
  }
  if (m.recorded_at_unix_ms < 0) {
    return bad("recorded_at",
               absl::StrCat("must not be before 1970, got ", m.recorded_at_unix_ms, " ms"));
  }
  if (m.labels.count("") > 0) return bad("labels", "a label key is empty");
  return absl::OkStatus();
}

// The filter in an unambiguous spelling (each string length-prefixed), for page tokens.
std::string CanonicalFilter(const MeasurementFilter& f) {
  std::string out;
  auto add = [&out](absl::string_view s) { absl::StrAppend(&out, s.size(), ":", s); };
  add(f.accelerator);
  add(f.framework);
  add(f.source);
  for (const auto& [k, v] : f.labels) {
    add(k);
    add(v);
  }
  return out;
}

// 64-bit FNV-1a: a check that a token is ours and belongs to this filter, not a secret.
uint64_t Fnv1a(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A page token names the last row returned (its seq) and carries a checksum over it and the
// filter, so that a token from another filter, a truncated or an edited one is refused rather
// than silently paging through something else.
std::string PageTokenBody(int64_t last_seq) {
  return absl::StrCat(kPageTokenPrefix, last_seq, ".");
}

std::string PageTokenCheck(const MeasurementFilter& filter, absl::string_view body) {
  const uint64_t check = Fnv1a(absl::StrCat(CanonicalFilter(filter), "|", body));
  return absl::StrCat(absl::Hex(check, absl::kZeroPad16));
}

std::string EncodePageToken(const MeasurementFilter& filter, int64_t last_seq) {
  const std::string body = PageTokenBody(last_seq);
  return absl::WebSafeBase64Escape(absl::StrCat(body, PageTokenCheck(filter, body)));
}

absl::StatusOr<int64_t> DecodePageToken(const MeasurementFilter& filter, const std::string& token) {
  const absl::Status malformed = absl::InvalidArgumentError(
      "page_token: malformed (pass back a next_page_token unchanged, or \"\" for the first page)");
  std::string raw;
  if (!absl::WebSafeBase64Unescape(token, &raw)) return malformed;
  absl::string_view rest = raw;
  if (!absl::ConsumePrefix(&rest, kPageTokenPrefix)) return malformed;
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, '.');
  int64_t seq = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &seq) || seq <= 0) return malformed;
  const std::string body = PageTokenBody(seq);
  if (raw != absl::StrCat(body, parts[1])) return malformed;  // e.g. "+5" or "05"
  if (parts[1] != PageTokenCheck(filter, body)) {
    return absl::InvalidArgumentError(
        "page_token: not issued for this filter (the filter must not change between pages)");
  }
  return seq;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Statement: a prepared statement borrowed from the cache (reset and unbound when done) or owned
// for one use (finalized when done). Binding errors are kept and reported by the next Step.

class Store::Statement {
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
class Store::Transaction {
 public:
  explicit Transaction(Store* store) : store_(store) {}
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

  Store* store_;
  bool active_ = false;
};

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

constexpr char kMeasurementColumns[] =
    "m.seq, m.id, m.scenario, m.tokens_per_s_per_gpu, m.step_time_s, m.watts_per_gpu, m.source, "
    "m.recorded_at_unix_ms";

}  // namespace

// ---------------------------------------------------------------------------------------------

Store::Store(sqlite3* db) : db_(db) {}

Store::~Store() { Close(); }

void Store::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return;
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  statements_.clear();
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

absl::Status Store::CheckOpenLocked() const {
  return db_ != nullptr ? absl::OkStatus() : ClosedError();
}

absl::StatusOr<Store::Statement> Store::PrepareLocked(absl::string_view sql) {
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

absl::Status Store::ExecLocked(const char* sql) {
  RETURN_IF_ERROR(CheckOpenLocked());
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  sqlite3_free(error);  // sqlite3_errmsg has the same text
  return SqliteError(db_, rc, sql);
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  if (options.path.empty()) return absl::InvalidArgumentError("path: must not be empty");
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("busy_timeout_ms: must be >= 0, got ", options.busy_timeout_ms));
  }
  const bool in_memory = options.path == kMemoryPath;
  if (!in_memory) {
    const std::filesystem::path parent = std::filesystem::path(options.path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("path: cannot create directory '", parent.string(), "': ", ec.message()));
    }
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(options.path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, rc, absl::StrCat("open '", options.path, "'"));
    sqlite3_close_v2(db);  // a handle comes back even on failure (or null, which is a no-op)
    return status;
  }
  std::unique_ptr<Store> store(new Store(db));
  {
    std::lock_guard<std::mutex> lock(store->mu_);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, options.busy_timeout_ms);
    RETURN_IF_ERROR(store->ExecLocked("PRAGMA foreign_keys = ON"));
    {
      ASSIGN_OR_RETURN(Statement check, store->PrepareLocked("PRAGMA foreign_keys"));
      ASSIGN_OR_RETURN(const bool row, check.Step());
      if (!row || check.Int64(0) != 1) {
        return absl::FailedPreconditionError("this SQLite build cannot enforce foreign keys");
      }
    }
    {
      // Refuse a database from a newer build before changing anything in it (the journal mode).
      ASSIGN_OR_RETURN(const int version, store->SchemaVersionLocked());
      if (version > LatestSchemaVersion()) return TooNewError(version);
    }
    {
      // An in-memory database has no file to log ahead of; it reports "memory".
      ASSIGN_OR_RETURN(Statement wal, store->PrepareLocked("PRAGMA journal_mode = WAL"));
      ASSIGN_OR_RETURN(const bool row, wal.Step());
      const std::string mode = row ? wal.Text(0) : "";
      if (mode != (in_memory ? "memory" : "wal")) {
        return absl::FailedPreconditionError(
            absl::StrCat("path: cannot use a write-ahead log for '", options.path,
                         "' (journal mode '", mode, "'); is it on a network file system?"));
      }
    }
    // FULL: a commit is on stable storage before it is acknowledged (NORMAL in WAL mode may lose
    // the last commits on power loss).
    RETURN_IF_ERROR(store->ExecLocked("PRAGMA synchronous = FULL"));
    RETURN_IF_ERROR(store->MigrateLocked());
  }
  return store;
}

absl::StatusOr<int> Store::SchemaVersionLocked() {
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("PRAGMA user_version"));
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::InternalError("PRAGMA user_version returned no row");
  return static_cast<int>(stmt.Int64(0));
}

absl::Status Store::MigrateLocked() {
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

absl::StatusOr<std::vector<Measurement>> Store::RecordMeasurements(std::vector<Measurement> batch) {
  if (batch.empty()) return absl::InvalidArgumentError("measurements: the batch is empty");
  for (size_t i = 0; i < batch.size(); ++i) RETURN_IF_ERROR(ValidateMeasurement(batch[i], i));
  const int64_t now = NowUnixMs();
  std::vector<std::string> scenarios;
  scenarios.reserve(batch.size());
  for (Measurement& m : batch) {
    if (m.recorded_at_unix_ms == 0) m.recorded_at_unix_ms = now;
    scenarios.push_back(EncodeScenario(m.scenario));
  }

  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  for (size_t i = 0; i < batch.size(); ++i) {
    Measurement& m = batch[i];
    const Scenario& s = m.scenario;
    const bool generate_id = m.id.empty();
    for (int attempt = 1;; ++attempt) {
      if (generate_id) m.id = NewMeasurementId();
      ASSIGN_OR_RETURN(
          Statement insert,
          PrepareLocked(
              "INSERT INTO measurements (id, scenario, accelerator, framework, model, num_gpus, "
              "gpus_per_node, seq_len, global_batch, precision, tp, pp, vpp, cp, dp, sharding, "
              "micro_batch, recompute, sequence_parallel, tokens_per_s_per_gpu, step_time_s, "
              "watts_per_gpu, source, recorded_at_unix_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
              "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
      int c = 0;
      insert.BindText(++c, m.id);
      insert.BindText(++c, scenarios[i]);
      insert.BindText(++c, s.cluster.accelerator);
      insert.BindText(++c, s.framework);
      insert.BindText(++c, s.workload.model.name);
      insert.BindInt64(++c, s.cluster.num_gpus);
      insert.BindInt64(++c, s.cluster.gpus_per_node);
      insert.BindInt64(++c, s.workload.seq_len);
      insert.BindInt64(++c, s.workload.global_batch);
      insert.BindInt64(++c, static_cast<int>(s.workload.precision));
      insert.BindInt64(++c, s.parallelism.tp);
      insert.BindInt64(++c, s.parallelism.pp);
      insert.BindInt64(++c, s.parallelism.vpp);
      insert.BindInt64(++c, s.parallelism.cp);
      insert.BindInt64(++c, s.parallelism.dp);
      insert.BindInt64(++c, static_cast<int>(s.parallelism.sharding));
      insert.BindInt64(++c, s.parallelism.micro_batch);
      insert.BindInt64(++c, static_cast<int>(s.parallelism.recompute));
      insert.BindInt64(++c, s.parallelism.sequence_parallel.value_or(false) ? 1 : 0);
      insert.BindDouble(++c, m.tokens_per_s_per_gpu);
      insert.BindDouble(++c, m.step_time_s);
      insert.BindDouble(++c, m.watts_per_gpu);
      insert.BindText(++c, m.source);
      insert.BindInt64(++c, m.recorded_at_unix_ms);
      const int rc = insert.StepRaw();
      if (rc == SQLITE_DONE) break;
      // The only UNIQUE constraint on measurements besides its rowid is id. A failed statement
      // undoes only itself, so the transaction can go on with a fresh id.
      if (rc == SQLITE_CONSTRAINT_UNIQUE) {
        if (generate_id && attempt < kIdAttempts) continue;
        return absl::AlreadyExistsError(
            absl::StrCat("measurements[", i, "].id: '", m.id, "' already exists"));
      }
      return SqliteError(db_, rc, absl::StrCat("insert measurements[", i, "]"));
    }
    for (const auto& [key, value] : m.labels) {
      ASSIGN_OR_RETURN(Statement label,
                       PrepareLocked("INSERT INTO measurement_labels (measurement_id, key, value) "
                                     "VALUES (?, ?, ?)"));
      label.BindText(1, m.id);
      label.BindText(2, key);
      label.BindText(3, value);
      if (absl::Status status = label.Run(); !status.ok()) {
        return absl::Status(status.code(),
                            absl::StrCat("measurements[", i, "].labels: ", status.message()));
      }
    }
  }
  RETURN_IF_ERROR(txn.Commit());
  return batch;
}

absl::StatusOr<Measurement> Store::ReadMeasurement(const Statement& row) {
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

absl::Status Store::LoadLabelsLocked(Measurement* m) {
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

absl::StatusOr<std::vector<Measurement>> Store::QueryMeasurementsLocked(
    const MeasurementFilter& filter, int64_t after_seq, int limit, std::vector<int64_t>* seqs) {
  const FilterSql where = BuildFilter(filter);
  ASSIGN_OR_RETURN(
      Statement stmt,
      PrepareLocked(absl::StrCat("SELECT ", kMeasurementColumns, " FROM measurements AS m WHERE ",
                                 where.where, " ORDER BY m.seq LIMIT ?")));
  int c = 0;
  stmt.BindInt64(++c, after_seq);
  for (const std::string& v : where.values) stmt.BindText(++c, v);
  stmt.BindInt64(++c, limit);  // negative: no limit
  std::vector<Measurement> out;
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) break;
    if (seqs != nullptr) seqs->push_back(stmt.Int64(0));
    ASSIGN_OR_RETURN(Measurement m, ReadMeasurement(stmt));
    out.push_back(std::move(m));
  }
  for (Measurement& m : out) RETURN_IF_ERROR(LoadLabelsLocked(&m));
  return out;
}

absl::StatusOr<std::vector<Measurement>> Store::ListMeasurements(const MeasurementFilter& filter,
                                                                 int page_size,
                                                                 const std::string& page_token,
                                                                 std::string* next_page_token) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: must be >= 0, got ", page_size));
  }
  const int limit = page_size == 0 ? kDefaultPageSize : std::min(page_size, kMaxPageSize);
  int64_t after_seq = 0;
  if (!page_token.empty()) {
    ASSIGN_OR_RETURN(after_seq, DecodePageToken(filter, page_token));
  }

  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);  // one snapshot for the rows and their labels
  RETURN_IF_ERROR(txn.BeginRead());
  std::vector<int64_t> seqs;
  ASSIGN_OR_RETURN(std::vector<Measurement> page,
                   QueryMeasurementsLocked(filter, after_seq, limit + 1, &seqs));
  RETURN_IF_ERROR(txn.Commit());
  std::string next;
  if (page.size() > static_cast<size_t>(limit)) {
    page.resize(limit);
    next = EncodePageToken(filter, seqs[limit - 1]);
  }
  if (next_page_token != nullptr) *next_page_token = std::move(next);
  return page;
}

absl::StatusOr<std::vector<Measurement>> Store::AllMeasurements(const MeasurementFilter& filter) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginRead());
  ASSIGN_OR_RETURN(std::vector<Measurement> all,
                   QueryMeasurementsLocked(filter, /*after_seq=*/0, /*limit=*/-1, nullptr));
  RETURN_IF_ERROR(txn.Commit());
  return all;
}

absl::StatusOr<Measurement> Store::GetMeasurement(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginRead());
  Measurement m;
  {
    ASSIGN_OR_RETURN(Statement stmt,
                     PrepareLocked(absl::StrCat("SELECT ", kMeasurementColumns,
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

absl::Status Store::DeleteMeasurement(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  {
    // Its labels go with it (ON DELETE CASCADE).
    ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("DELETE FROM measurements WHERE id = ?"));
    stmt.BindText(1, id);
    RETURN_IF_ERROR(stmt.Run());
  }
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("measurement '", id, "' not found"));
  }
  return txn.Commit();
}

absl::StatusOr<int64_t> Store::CountMeasurements(const MeasurementFilter& filter) {
  const FilterSql where = BuildFilter(filter);
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(
      Statement stmt,
      PrepareLocked(absl::StrCat("SELECT COUNT(*) FROM measurements AS m WHERE ", where.where)));
  int c = 0;
  stmt.BindInt64(++c, 0);
  for (const std::string& v : where.values) stmt.BindText(++c, v);
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::InternalError("COUNT(*) returned no row");
  return stmt.Int64(0);
}

// ---------------------------------------------------------------------------------------------
// Profiles

absl::Status Store::PutProfile(const StoredProfile& p) {
  const Profile& profile = p.profile;
  if (profile.name.empty()) return absl::InvalidArgumentError("profile.name: must not be empty");
  for (const auto& [field, value] : {std::pair<const char*, double>{"mape_before", p.mape_before},
                                     {"mape_after", p.mape_after},
                                     {"cv_mape", p.cv_mape}}) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be finite, got ", value));
    }
  }
  const std::string text = profile.ToText();
  absl::StatusOr<Profile> reread = Profile::FromText(text);
  if (!reread.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("profile: ", reread.status().message()));
  }
  const char* changed = reread->name != profile.name                 ? "name"
                        : reread->description != profile.description ? "description"
                        : reread->info != profile.info               ? "info"
                                                                     : nullptr;
  if (changed != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile.", changed,
                     ": would not read back unchanged (no newlines, '#', '=' in keys, or leading "
                     "or trailing spaces)"));
  }
  const int64_t created = p.created_at_unix_ms != 0 ? p.created_at_unix_ms : NowUnixMs();

  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  Transaction txn(this);
  RETURN_IF_ERROR(txn.BeginWrite());
  {
    ASSIGN_OR_RETURN(
        Statement stmt,
        PrepareLocked("INSERT INTO profiles (name, profile_text, fitted_on, fitted_count, "
                      "mape_before, mape_after, cv_mape, created_at_unix_ms) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                      "profile_text = excluded.profile_text, fitted_on = excluded.fitted_on, "
                      "fitted_count = excluded.fitted_count, mape_before = excluded.mape_before, "
                      "mape_after = excluded.mape_after, cv_mape = excluded.cv_mape, "
                      "created_at_unix_ms = excluded.created_at_unix_ms"));
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
  {
    // Sweeps computed with the old parameters are stale.
    ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("DELETE FROM sweep_cache WHERE profile = ?"));
    stmt.BindText(1, profile.name);
    RETURN_IF_ERROR(stmt.Run());
  }
  return txn.Commit();
}

namespace {

constexpr char kProfileQuery[] =
    "SELECT name, profile_text, fitted_on, fitted_count, mape_before, mape_after, cv_mape, "
    "created_at_unix_ms FROM profiles";

}  // namespace

absl::StatusOr<StoredProfile> Store::ReadProfile(const Statement& row) {
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

absl::StatusOr<StoredProfile> Store::GetProfile(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked(absl::StrCat(kProfileQuery, " WHERE name = ?")));
  stmt.BindText(1, name);
  ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("profile '", name, "' not found"));
  return ReadProfile(stmt);
}

absl::StatusOr<std::vector<StoredProfile>> Store::ListProfiles() {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked(absl::StrCat(kProfileQuery, " ORDER BY name")));
  std::vector<StoredProfile> out;
  for (;;) {
    ASSIGN_OR_RETURN(const bool row, stmt.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(StoredProfile p, ReadProfile(stmt));
    out.push_back(std::move(p));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sweep cache

absl::StatusOr<std::optional<std::string>> Store::GetCachedSweep(const std::string& key,
                                                                 const std::string& model_version,
                                                                 const std::string& profile) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement: the lookup and the hit count are one atomic write.
  ASSIGN_OR_RETURN(Statement stmt,
                   PrepareLocked("UPDATE sweep_cache SET hit_count = hit_count + 1 WHERE "
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

absl::Status Store::PutCachedSweep(const std::string& key, const std::string& model_version,
                                   const std::string& profile, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(
      Statement stmt,
      PrepareLocked("INSERT INTO sweep_cache (request_key, model_version, profile, value, "
                    "hit_count, created_at_unix_ms) VALUES (?, ?, ?, ?, 0, ?) "
                    "ON CONFLICT (request_key, model_version, profile) DO UPDATE SET "
                    "value = excluded.value, hit_count = 0, "
                    "created_at_unix_ms = excluded.created_at_unix_ms"));
  stmt.BindBlob(1, key);
  stmt.BindText(2, model_version);
  stmt.BindText(3, profile);
  stmt.BindBlob(4, value);
  stmt.BindInt64(5, NowUnixMs());
  return stmt.Run();
}

absl::StatusOr<int64_t> Store::CachedSweepHits(const std::string& key,
                                               const std::string& model_version,
                                               const std::string& profile) {
  std::lock_guard<std::mutex> lock(mu_);
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

absl::Status Store::InvalidateSweepCache() {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(Statement stmt, PrepareLocked("DELETE FROM sweep_cache"));
  return stmt.Run();
}

}  // namespace scalecast
