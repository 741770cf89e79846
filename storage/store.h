// scalecast's persistent state in SQLite: measured training runs, named calibration profiles and
// the sweep cache. The store knows model structs, not gRPC; the schema and its migrations are
// private to it (storage/migrations.h).
//
// Durability: WAL journal with synchronous=FULL, so a write that returned OK survives a crash of
// the process or of the machine. Every write is one transaction: when an operation fails, nothing
// it would have written is visible.
//
// Thread safety: a Store may be used from any number of threads at once; operations are
// serialised on one connection. Several processes may open the same file (SQLite's locking,
// waiting up to busy_timeout_ms for a lock before failing with UNAVAILABLE).
#ifndef SCALECAST_STORAGE_STORE_H_
#define SCALECAST_STORAGE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/measurements.h"
#include "model/profile.h"

struct sqlite3;
struct sqlite3_stmt;

namespace scalecast {

struct StoreOptions {
  // The database file; its parent directory is created if missing. ":memory:" keeps everything in
  // memory for the life of the Store (tests).
  std::string path = "./var/scalecast.db";
  // How long an operation waits for another process's lock before failing with UNAVAILABLE.
  int busy_timeout_ms = 5000;
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

class Store {
 public:
  // Opens (creating if needed) the database and brings its schema up to date. A database written
  // by a newer scalecast (a higher schema version) is FAILED_PRECONDITION; opening the same
  // database again, from this or another process, is fine.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();  // Close()s

  // --- Measurements -------------------------------------------------------------------------

  // Records the whole batch in one transaction, or nothing. A measurement without an id gets a
  // fresh random one ("m-" and 16 hex digits); recorded_at_unix_ms 0 becomes now. Returns the
  // batch as stored. INVALID_ARGUMENT for an empty batch or a bad value (tokens_per_s_per_gpu
  // must be finite and > 0, step_time_s and watts_per_gpu finite and >= 0, label keys non-empty),
  // the message naming the field ("measurements[3].tokens_per_s_per_gpu: ..."); ALREADY_EXISTS
  // when a caller-supplied id is already stored or repeated in the batch.
  absl::StatusOr<std::vector<Measurement>> RecordMeasurements(std::vector<Measurement> batch);

  // One page of the measurements matching `filter`, in insertion order. page_size 0 means 100;
  // larger than 1000 means 1000; negative is INVALID_ARGUMENT. page_token "" starts at the
  // beginning; otherwise it must be a *next_page_token returned for the same filter, else
  // INVALID_ARGUMENT "page_token: ...". *next_page_token is "" on the last page. Pagination is
  // stable under concurrent inserts (new rows appear on later pages) and deletes.
  absl::StatusOr<std::vector<Measurement>> ListMeasurements(const MeasurementFilter& filter,
                                                            int page_size,
                                                            const std::string& page_token,
                                                            std::string* next_page_token);

  // Every measurement matching `filter`, in insertion order (validation, calibration).
  absl::StatusOr<std::vector<Measurement>> AllMeasurements(const MeasurementFilter& filter);

  absl::StatusOr<Measurement> GetMeasurement(const std::string& id);  // NOT_FOUND if absent
  absl::Status DeleteMeasurement(const std::string& id);              // NOT_FOUND if absent
  absl::StatusOr<int64_t> CountMeasurements(const MeasurementFilter& filter);

  // --- Calibration profiles -------------------------------------------------------------------

  // Inserts or replaces the profile named p.profile.name (non-empty). Replacing a profile also
  // drops the cached sweeps computed with it, in the same transaction. The profile is kept as
  // Profile::ToText; INVALID_ARGUMENT when its name, description or info would not read back
  // unchanged through Profile::FromText (e.g. a newline or '#' in them).
  absl::Status PutProfile(const StoredProfile& p);
  absl::StatusOr<StoredProfile> GetProfile(const std::string& name);  // NOT_FOUND if absent
  absl::StatusOr<std::vector<StoredProfile>> ListProfiles();          // by name

  // --- Sweep cache ----------------------------------------------------------------------------
  // An entry is keyed by (key, model_version, profile); key is the caller's canonical request
  // bytes (any bytes). Values are bytes too.

  // The cached value, or std::nullopt on a miss. A hit increments the entry's hit count.
  absl::StatusOr<std::optional<std::string>> GetCachedSweep(const std::string& key,
                                                            const std::string& model_version,
                                                            const std::string& profile);
  // Inserts or replaces an entry; a replaced entry's hit count starts again at 0.
  absl::Status PutCachedSweep(const std::string& key, const std::string& model_version,
                              const std::string& profile, const std::string& value);
  // How many times GetCachedSweep hit the entry; NOT_FOUND if there is no such entry.
  absl::StatusOr<int64_t> CachedSweepHits(const std::string& key, const std::string& model_version,
                                          const std::string& profile);
  // Drops every cached sweep.
  absl::Status InvalidateSweepCache();

  // Closes the database. Idempotent; every later operation is FAILED_PRECONDITION.
  void Close();

 private:
  class Statement;  // a borrowed prepared statement (store.cc)
  class Transaction;

  explicit Store(sqlite3* db);

  // All of these expect mu_ held.
  absl::Status CheckOpenLocked() const;
  absl::StatusOr<Statement> PrepareLocked(absl::string_view sql);
  absl::Status ExecLocked(const char* sql);
  absl::StatusOr<int> SchemaVersionLocked();  // PRAGMA user_version
  absl::Status MigrateLocked();
  absl::StatusOr<std::vector<Measurement>> QueryMeasurementsLocked(const MeasurementFilter& filter,
                                                                   int64_t after_seq, int limit,
                                                                   std::vector<int64_t>* seqs);
  absl::Status LoadLabelsLocked(Measurement* m);
  // A row of SELECT kMeasurementColumns (labels not included) / of kProfileQuery.
  static absl::StatusOr<Measurement> ReadMeasurement(const Statement& row);
  static absl::StatusOr<StoredProfile> ReadProfile(const Statement& row);

  std::mutex mu_;
  sqlite3* db_ = nullptr;  // guarded by mu_; null once closed
  // Prepared statements by SQL text, guarded by mu_. Bounded (see PrepareLocked).
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace scalecast

#endif  // SCALECAST_STORAGE_STORE_H_
