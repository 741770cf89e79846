// scalecast's persistent state: measured training runs, named calibration profiles and the sweep
// cache, in SQLite (the embedded default) or PostgreSQL (one store shared by many replicas). The
// store knows model structs, not gRPC; the schemas and their migrations are private to it
// (storage/migrations.h).
//
// Durability: a write that returned OK survives a crash of the process or of the machine
// (SQLite: WAL journal with synchronous=FULL; PostgreSQL: a committed transaction with the
// server's synchronous_commit). Every write is one transaction: when an operation fails, nothing
// it would have written is visible.
//
// Thread safety: a Store may be used from any number of threads at once. SQLite serialises
// operations on one connection; several processes may open the same file (SQLite's locking,
// waiting up to busy_timeout_ms for a lock before failing with UNAVAILABLE). PostgreSQL runs
// them on a pool of pool_size connections; any number of processes may share the database.
// Long reads (ListMeasurements, AllMeasurements, CountMeasurements, ListProfiles) hold at most
// pool_size - max(1, pool_size / 4) of those connections at once (all of a pool of 1): writes
// and short reads always have a connection of their own, however many long reads wait.
#ifndef SCALECAST_STORAGE_STORE_H_
#define SCALECAST_STORAGE_STORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/limits.h"
#include "model/measurements.h"
#include "model/profile.h"

namespace scalecast {

struct StoreOptions {
  // The database: a SQLite file (its parent directory is created if missing; ":memory:" keeps
  // everything in memory for the life of the Store, for tests) or a PostgreSQL URI
  // "postgresql://user@host:port/dbname".
  std::string path = "./var/scalecast.db";
  // PostgreSQL password; empty = libpq's own sources ($PGPASSWORD, ~/.pgpass). Never logged.
  std::string password;
  // How long an operation waits for another process's lock (SQLite) or for a free pooled
  // connection (PostgreSQL) before failing with UNAVAILABLE.
  int busy_timeout_ms = 5000;
  // PostgreSQL: connections in the pool (each is one server backend).
  int pool_size = 8;
  // PostgreSQL: how long to wait for a connection to be made before UNAVAILABLE.
  int connect_timeout_s = 10;
  // Bytes the sweep cache may hold (keys and values); least recently used entries go first.
  int64_t sweep_cache_max_bytes = 256 << 20;
  // SQLite: the largest the database file may grow (0 = no limit); a write past it is
  // RESOURCE_EXHAUSTED, as a full disk is.
  int64_t max_db_bytes = 0;
};

// Which measurements a query returns. An empty field matches everything.
struct MeasurementFilter {
  std::string accelerator;                    // exact catalog id, e.g. "h100-sxm-80gb"
  std::string framework;                      // exact framework name
  std::string source;                         // exact source
  std::map<std::string, std::string> labels;  // every key must be present with this value
};

// A calibration profile as stored, with how it was fitted.
struct StoredProfile {
  Profile profile;        // keyed by profile.name
  std::string fitted_on;  // human description of the filter it was fitted on
  int fitted_count = 0;
  double mape_before = 0;
  double mape_after = 0;
  double cv_mape = 0;
  int64_t created_at_unix_ms = 0;  // 0 on PutProfile = now
};

// An accelerator a user registered (RegisterAccelerator): the spec as given, keyed by spec.id.
// It is resolved against the catalog when read (model/catalog.h, DescribeAccelerator), so a
// newer catalog's figures for its base part apply.
struct StoredAccelerator {
  AcceleratorSpec spec;
  int64_t created_at_unix_ms = 0;  // 0 on PutAccelerator = now
};

// Stops a long read whose caller gave up (issue 27: a Validate over 1M runs kept a core busy
// past its deadline, a Calibrate one for 70 s). While a ReadInterrupt lives on a thread, the long
// reads made on that thread (ListMeasurements, AllMeasurements, CountMeasurements,
// SampleMeasurements, ListProfiles; both backends) call `stop` while the database works on them:
// SQLite every kInterruptSteps virtual-machine steps of a statement (sqlite3_progress_handler),
// PostgreSQL every kInterruptPollMs of waiting for a pooled connection or for the server's answer.
// Once it says stop, the statement running is interrupted (SQLite: the progress handler aborts it;
// PostgreSQL: PQcancel, sent again every 200 ms until the server answers, waiting at most
// kInterruptWaitMs for it to confirm, and the connection is closed rather than reused), nothing
// more of the read runs, and the read returns CANCELLED ("store read interrupted: the caller gave
// up"), counted in Store::InterruptedReads and in interrupted(). `stop` is called only from the
// reading thread, only while a long read runs. Writes and short reads are never interrupted.
// Scopes nest; the innermost applies.
class ReadInterrupt {
 public:
  static constexpr int kInterruptSteps = 1000;
  static constexpr int kInterruptPollMs = 20;
  static constexpr int kInterruptWaitMs = 2000;

  explicit ReadInterrupt(std::function<bool()> stop);
  ~ReadInterrupt();
  ReadInterrupt(const ReadInterrupt&) = delete;
  ReadInterrupt& operator=(const ReadInterrupt&) = delete;

  // The reads this scope interrupted.
  int64_t interrupted() const { return interrupted_; }
  // The thread's innermost scope, or null (for the backends).
  static ReadInterrupt* Current();
  // For the backends: whether the caller says stop now; and that a read was interrupted.
  bool ShouldStop() const { return stop_ && stop_(); }
  void CountInterrupted() { ++interrupted_; }

 private:
  std::function<bool()> stop_;
  ReadInterrupt* outer_;
  int64_t interrupted_ = 0;
};

// The store's interface. Store::Open picks the backend from the address: a PostgreSQL URI
// ("postgresql://user@host:port/dbname") or a SQLite file path (everything else).
class Store {
 public:
  // Opens (creating if needed) the database and brings its schema up to date. A database written
  // by a newer scalecast (a higher schema version) is FAILED_PRECONDITION; opening the same
  // database again, from this or another process, is fine. Every error names the file or the
  // URI (without its password). A database that cannot be written (a read-only file, a read-only
  // server) is FAILED_PRECONDITION: the open probes a write. A SQLite file shorter than its
  // header says (truncated, 0 bytes included) is DATA_LOSS.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;  // Close()s

  // Which backend this is: "sqlite" or "postgresql".
  virtual const char* backend() const = 0;
  // The address as it may be logged: the path, or the URI without a password.
  virtual std::string DisplayAddress() const = 0;

  // --- Measurements -------------------------------------------------------------------------

  // Records the whole batch in one transaction, or nothing. A measurement without an id gets a
  // fresh random one ("m-" and 16 hex digits); recorded_at_unix_ms 0 becomes now. A duplicate (a
  // run identical in scenario, source and measured values -- tokens/s per GPU, step time, watts
  // -- to one already stored or to an earlier one of the batch; labels, id and recorded_at do
  // not count) is not stored. Returns the measurements stored, in batch order, duplicates left
  // out (so batch.size() minus the result's size is the duplicates' count). INVALID_ARGUMENT
  // for an empty batch or a bad value (see ValidateMeasurement), the message naming the field
  // ("measurements[3].tokens_per_s_per_gpu: ..."); ALREADY_EXISTS when a caller-supplied id is
  // already stored or repeated in the batch; RESOURCE_EXHAUSTED when the disk (or max_db_bytes)
  // is full.
  absl::StatusOr<std::vector<Measurement>> RecordMeasurements(std::vector<Measurement> batch);

  // The runs of a streamed write, a chunk at a time: fills *chunk (empty on entry) with the next
  // runs, at most kRecordChunk of them, and leaves it empty when there are no more. An error
  // ends the write, and nothing of it is stored.
  using RunSource = std::function<absl::Status(std::vector<Measurement>* chunk)>;
  // Each run a streamed write stores (its id and recorded_at filled in), in order, as the write
  // goes; duplicates are not passed. What it was given counts only when the write returns OK.
  using StoredSink = std::function<void(Measurement&& stored)>;
  static constexpr size_t kRecordChunk = 1000;

  // RecordMeasurements for a write too large to hold at once: the same rules, the whole stream
  // one transaction (all or nothing: an error from the source or the store leaves nothing of
  // it), one chunk of runs held at a time. A run identical to one earlier in the stream is a
  // duplicate as in one batch; error paths count from the stream's first run
  // ("measurements[4711].source: ..."). An empty stream is INVALID_ARGUMENT. Returns how many
  // runs the source gave.
  virtual absl::StatusOr<int64_t> RecordMeasurementStream(const RunSource& next,
                                                          const StoredSink& sink) = 0;

  // One page of the measurements matching `filter`, in insertion order. page_size 0 means 100;
  // larger than 1000 means 1000; negative is INVALID_ARGUMENT. page_token "" starts at the
  // beginning; otherwise it must be a *next_page_token returned for the same filter, else
  // INVALID_ARGUMENT "page_token: ...". *next_page_token is "" on the last page. Pagination is
  // stable under concurrent inserts (new rows appear on later pages) and deletes.
  virtual absl::StatusOr<std::vector<Measurement>> ListMeasurements(
      const MeasurementFilter& filter, int page_size, const std::string& page_token,
      std::string* next_page_token) = 0;

  // Every measurement matching `filter`, in insertion order (validation, calibration). At most
  // `limit` rows (negative: no limit); more is RESOURCE_EXHAUSTED naming the limit.
  virtual absl::StatusOr<std::vector<Measurement>> AllMeasurements(const MeasurementFilter& filter,
                                                                   int64_t limit = -1) = 0;

  // At most `max_runs` (>= 1, else INVALID_ARGUMENT) of the measurements matching `filter`,
  // evenly spaced in insertion order -- the 1st, (k+1)-th, (2k+1)-th, ... with k =
  // ceil(matching / max_runs), so all of them when max_runs or fewer match -- without their
  // labels, and in *matching (may be null) how many match, of the same snapshot. The database
  // numbers the matching rows' keys and returns the sample only: a sample of a large store costs
  // a walk of its keys, not a read of every run (Calibrate's check on other runs).
  virtual absl::StatusOr<std::vector<Measurement>> SampleMeasurements(
      const MeasurementFilter& filter, int64_t max_runs, int64_t* matching) = 0;

  virtual absl::StatusOr<Measurement> GetMeasurement(const std::string& id) = 0;  // NOT_FOUND
  virtual absl::Status DeleteMeasurement(const std::string& id) = 0;              // NOT_FOUND
  virtual absl::StatusOr<int64_t> CountMeasurements(const MeasurementFilter& filter) = 0;

  // --- Calibration profiles -------------------------------------------------------------------

  // Stores the profile named p.profile.name (non-empty). With `replace` false the write is an
  // atomic insert-if-absent: when a profile of that name is stored (by this or any other
  // process, however close together the calls) it is ALREADY_EXISTS ("profile 'x' already
  // exists") and nothing changes, so of two callers racing to create one name exactly one
  // succeeds. With `replace` true an existing profile is replaced; replacing also drops the
  // cached sweeps computed with it, in the same transaction. The profile is kept as
  // Profile::ToText; INVALID_ARGUMENT when its name, description or info would not read back
  // unchanged through Profile::FromText (e.g. a newline or '#' in them).
  virtual absl::Status PutProfile(const StoredProfile& p, bool replace) = 0;
  virtual absl::StatusOr<StoredProfile> GetProfile(const std::string& name) = 0;  // NOT_FOUND
  // One page of the profiles, by name (byte order). page_size 0 means 1000; larger than 1000
  // means 1000; negative is INVALID_ARGUMENT. page_token "" starts at the beginning; otherwise
  // it must be a *next_page_token returned before, else INVALID_ARGUMENT "page_token: ...".
  // *next_page_token is "" on the last page.
  virtual absl::StatusOr<std::vector<StoredProfile>> ListProfiles(int page_size,
                                                                  const std::string& page_token,
                                                                  std::string* next_page_token) = 0;
  virtual absl::StatusOr<int64_t> CountProfiles() = 0;
  // Removes the profile and the cached sweeps computed with it, in one transaction. NOT_FOUND
  // ("profile 'x' not found") when there is no such profile.
  virtual absl::Status DeleteProfile(const std::string& name) = 0;

  // --- Registered accelerators --------------------------------------------------------------

  // Stores a.spec under a.spec.id (non-empty). An id already stored is ALREADY_EXISTS unless
  // `replace`; a new id when `max_count` are stored already is RESOURCE_EXHAUSTED. Replacing an
  // accelerator drops every cached sweep (their keys name it by id), in the same transaction.
  virtual absl::Status PutAccelerator(const StoredAccelerator& a, bool replace,
                                      int64_t max_count) = 0;
  virtual absl::StatusOr<std::vector<StoredAccelerator>> ListAccelerators() = 0;  // by id
  // NOT_FOUND ("accelerator 'x' is not registered") when there is no such id.
  virtual absl::Status DeleteAccelerator(const std::string& id) = 0;

  // --- Sweep cache ----------------------------------------------------------------------------
  // An entry is keyed by (key, model_version, profile); key is the caller's canonical request
  // bytes (any bytes). Values are bytes too. The entries together hold at most
  // StoreOptions::sweep_cache_max_bytes (key + value bytes); a put past that evicts the least
  // recently used entries first, and an entry larger than the whole bound is not kept.

  // The cached value, or std::nullopt on a miss. A hit increments the entry's hit count and
  // makes it the most recently used.
  virtual absl::StatusOr<std::optional<std::string>> GetCachedSweep(
      const std::string& key, const std::string& model_version, const std::string& profile) = 0;
  // Inserts or replaces an entry; a replaced entry's hit count starts again at 0. Best-effort
  // and bounded in time (store_internal::kCacheWriteTimeoutMs, 2 s): behind a lock held
  // elsewhere (another process evicting, a long import, a frozen database) the entry may not be
  // kept (OK, or UNAVAILABLE past the bound); it never waits longer than that.
  virtual absl::Status PutCachedSweep(const std::string& key, const std::string& model_version,
                                      const std::string& profile, const std::string& value) = 0;
  // How many times GetCachedSweep hit the entry; NOT_FOUND if there is no such entry.
  virtual absl::StatusOr<int64_t> CachedSweepHits(const std::string& key,
                                                  const std::string& model_version,
                                                  const std::string& profile) = 0;
  // Bytes the cache holds now (keys and values).
  virtual absl::StatusOr<int64_t> SweepCacheBytes() = 0;
  // Drops every cached sweep.
  virtual absl::Status InvalidateSweepCache() = 0;

  // Whether the database answers now: a trivial query on a connection of its own, waiting at
  // most timeout_ms for the answer (PostgreSQL: plus the connect timeout when it must
  // reconnect). OK, or UNAVAILABLE saying why. For health checks; never waits behind other
  // operations (a busy SQLite connection counts as answering).
  virtual absl::Status Ping(int timeout_ms) = 0;

  // Closes the database. Idempotent; every later operation is FAILED_PRECONDITION.
  virtual void Close() = 0;

  // Long reads a ReadInterrupt stopped, since the store was opened.
  int64_t InterruptedReads() const { return interrupted_reads_.load(); }

 protected:
  std::atomic<int64_t> interrupted_reads_{0};
};

// True when `address` names a PostgreSQL database rather than a SQLite file.
bool IsPostgresAddress(absl::string_view address);
}  // namespace scalecast

#endif  // SCALECAST_STORAGE_STORE_H_
