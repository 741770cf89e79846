// Private to storage/: what both backends share (ids, page tokens, checks) and their openers.
#ifndef SCALECAST_STORAGE_STORE_INTERNAL_H_
#define SCALECAST_STORAGE_STORE_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/store.h"

namespace scalecast::store_internal {

// A sweep-cache write waits at most this long for a lock or a statement (a frozen database, a
// long import holding the connection): the cache is best-effort, and a write not kept only
// costs a recomputation later.
inline constexpr int kCacheWriteTimeoutMs = 2000;
// The measurements table's stored columns, one table for both backends (placeholders apart:
// "$n" for PostgreSQL, "?" for SQLite). A value is text, an integer or a real.
using SqlValue = std::variant<std::string, int64_t, double>;
struct MeasurementColumn {
  const char* name;
  // The column's value for run `m` whose encoded scenario is `scenario_text`.
  SqlValue (*value)(const Measurement& m, const std::string& scenario_text);
};
// In insert order: id, scenario, the filter columns, the measured values, source, recorded_at.
const std::vector<MeasurementColumn>& MeasurementColumns();
// "id, scenario, accelerator, ...": the insert's column list.
std::string MeasurementInsertColumns();
// What a read selects of a run (labels apart), and of a profile.
inline constexpr char kMeasurementSelect[] =
    "m.seq, m.id, m.scenario, m.tokens_per_s_per_gpu, m.step_time_s, m.watts_per_gpu, m.source, "
    "m.recorded_at_unix_ms";
inline constexpr char kProfileQuery[] =
    "SELECT name, profile_text, fitted_on, fitted_count, mape_before, mape_after, cv_mape, "
    "created_at_unix_ms FROM profiles";
// A page of `limit` from `rows`, fetched with limit + 1: the extra row is dropped and the token
// for the page's last row (token_of(its index)) returned; "" when this was the last page.
template <typename T, typename TokenOf>
std::string TrimPage(std::vector<T>* rows, int limit, TokenOf token_of) {
  if (rows->size() <= static_cast<size_t>(limit)) return "";
  rows->resize(limit);
  return token_of(static_cast<size_t>(limit) - 1);
}

// A long read's hold on the thread's ReadInterrupt (store.h), made at the read's start: the
// backend polls Stop() while a statement runs, and Outcome turns the read's result into
// CANCELLED, counted in `*counter` and the scope, when it stopped.
class InterruptibleRead {
 public:
  explicit InterruptibleRead(std::atomic<int64_t>* counter);
  ~InterruptibleRead();
  InterruptibleRead(const InterruptibleRead&) = delete;
  InterruptibleRead& operator=(const InterruptibleRead&) = delete;

  // Whether a scope applies at all (else Stop() is always false).
  bool active() const { return scope_ != nullptr; }
  // True once the caller said stop (asks it while not yet stopped).
  bool Stop();
  bool stopped() const { return stopped_; }
  // The read being made on this thread, or null.
  static InterruptibleRead* Current();

  absl::Status Outcome(absl::Status result) { return stopped_ ? Interrupted() : result; }
  template <typename T>
  absl::StatusOr<T> Outcome(absl::StatusOr<T> result) {
    if (!stopped_) return result;
    return Interrupted();
  }

 private:
  absl::Status Interrupted();

  ReadInterrupt* scope_;
  std::atomic<int64_t>* counter_;
  InterruptibleRead* outer_;
  bool stopped_ = false;
};

// A generated id that collides with a stored one (p = 2^-64 per pair) is drawn again.
inline constexpr int kIdAttempts = 4;

int64_t NowUnixMs();
// "m-" and 16 random hex digits, from the OS's random source (distinct across processes).
std::string NewMeasurementId();

absl::Status TooNewError(int version, int latest);
absl::Status ClosedError();

// page_size validated and clamped: 0 -> 100, > 1000 -> 1000, negative INVALID_ARGUMENT.
absl::StatusOr<int> PageLimit(int page_size);
// A page token names the last row returned (its seq) and carries a checksum over it and the
// filter, so that a token from another filter, a truncated or an edited one is refused.
std::string EncodePageToken(const MeasurementFilter& filter, int64_t last_seq);
// The seq after which the page starts; "" is 0.
absl::StatusOr<int64_t> DecodePageToken(const MeasurementFilter& filter, const std::string& token);

// Profile pages: page_size validated and clamped (0 and > 1000 -> 1000, negative
// INVALID_ARGUMENT); a token names the last profile returned.
absl::StatusOr<int> ProfilePageLimit(int page_size);
std::string EncodeProfileToken(const std::string& last_name);
// The name after which the page starts; "" for the first page.
absl::StatusOr<std::string> DecodeProfileToken(const std::string& token);

// Checks a chunk of a write (every measurement valid; `first` is the index of its first run in
// the whole write, for error paths) and fills recorded_at 0 with `now_ms`.
absl::Status PrepareChunk(std::vector<Measurement>* chunk, size_t first, int64_t now_ms);
// The streamed write's loop, both backends': reads `next` a chunk at a time until it gives none,
// passing each chunk and the index of its first run in the whole write to `record` (each
// chunk's memory goes before the next is read). The runs given, or INVALID_ARGUMENT when none.
absl::StatusOr<int64_t> ForEachChunk(
    const Store::RunSource& next,
    const std::function<absl::Status(std::vector<Measurement> chunk, size_t first)>& record);

// Drops each measurement identical to an earlier one of the batch in scenario (`scenarios[i]`
// is batch[i]'s codec text, kept in step), source and measured values (tokens/s per GPU, step
// time, watts). `original` (resized alike) keeps each one's index in the batch as given, for
// error messages. Returns how many were dropped.
size_t DropRepeatsWithinBatch(std::vector<Measurement>* batch, std::vector<std::string>* scenarios,
                              std::vector<size_t>* original);

// A registered accelerator's spec as stored: "key = value" lines, numbers exact (%.17g).
// INVALID_ARGUMENT when the id is empty or too long, or a value is not finite.
absl::StatusOr<std::string> AcceleratorText(const StoredAccelerator& a);
// The spec back from its text; INTERNAL naming the id when the text is corrupt.
absl::StatusOr<AcceleratorSpec> ParseAcceleratorText(const std::string& id,
                                                     const std::string& text);

// Checks a profile before it is stored and returns its text (Profile::ToText).
absl::StatusOr<std::string> ProfileText(const StoredProfile& p);

// Layered profiles in the store. `bases` maps each stored profile's name to its base ("" for a
// full profile), read from the stored texts by ProfileBases.
using ProfileBases = std::map<std::string, std::string>;
ProfileBases ReadProfileBases(const std::vector<std::pair<std::string, std::string>>& name_text);
// Whether `p` may be written over the stored profiles: a layer's base must be "default" or
// stored (else FAILED_PRECONDITION "profile.base: ..."), and must not layer, through any
// number of profiles, on p itself (INVALID_ARGUMENT naming the chain), nor be more than
// kMaxProfileDepth layers deep.
absl::Status CheckLayerWrite(const Profile& p, const ProfileBases& bases);
// The stored profiles layered on `name`: directly (`transitive` false) or through others too.
std::vector<std::string> DependantsOf(const std::string& name, const ProfileBases& bases,
                                      bool transitive);
// FAILED_PRECONDITION naming a profile layered on `name`, which therefore cannot be deleted.
absl::Status CheckNoDependants(const std::string& name, const ProfileBases& bases);

// A PostgreSQL error as a status: SQLSTATE class 53 (disk full, out of memory, too many
// connections) RESOURCE_EXHAUSTED; 08, 57P and 57014 UNAVAILABLE; 40 ABORTED; 25006 and 42501
// FAILED_PRECONDITION; 23505 ALREADY_EXISTS; other 22/23 INVALID_ARGUMENT; else INTERNAL.
absl::Status PostgresStatus(const std::string& sqlstate, absl::string_view message);

absl::StatusOr<std::unique_ptr<Store>> OpenSqlite(const StoreOptions& options);
absl::StatusOr<std::unique_ptr<Store>> OpenPostgres(const StoreOptions& options);

}  // namespace scalecast::store_internal

#endif  // SCALECAST_STORAGE_STORE_INTERNAL_H_
