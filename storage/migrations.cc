#include "storage/migrations.h"

namespace scalecast {

namespace {

// Version 1: measurements (one row per measured run, its labels in a child table), calibration
// profiles and the sweep cache.
//
// measurements.scenario holds the whole Scenario in the scenario codec's text
// (storage/scenario_codec.h) and is the source of truth; the columns beside it are copies of
// scenario fields, written once at insert, so that filters can use indexes. `seq` gives insertion
// order and is the keyset of pagination; `id` is the public identifier.
constexpr absl::string_view kV1 = R"sql(
CREATE TABLE measurements (
  seq                     INTEGER PRIMARY KEY AUTOINCREMENT,
  id                      TEXT    NOT NULL UNIQUE CHECK (length(id) > 0),
  scenario                TEXT    NOT NULL,
  accelerator             TEXT    NOT NULL,
  framework               TEXT    NOT NULL,
  model                   TEXT    NOT NULL,
  num_gpus                INTEGER NOT NULL,
  gpus_per_node           INTEGER NOT NULL,
  seq_len                 INTEGER NOT NULL,
  global_batch            INTEGER NOT NULL,
  precision               INTEGER NOT NULL,
  tp                      INTEGER NOT NULL,
  pp                      INTEGER NOT NULL,
  vpp                     INTEGER NOT NULL,
  cp                      INTEGER NOT NULL,
  dp                      INTEGER NOT NULL,
  sharding                INTEGER NOT NULL,
  micro_batch             INTEGER NOT NULL,
  recompute               INTEGER NOT NULL,
  sequence_parallel       INTEGER NOT NULL,
  tokens_per_s_per_gpu    REAL    NOT NULL CHECK (tokens_per_s_per_gpu > 0),
  step_time_s             REAL    NOT NULL CHECK (step_time_s >= 0),
  watts_per_gpu           REAL    NOT NULL CHECK (watts_per_gpu >= 0),
  source                  TEXT    NOT NULL,
  recorded_at_unix_ms     INTEGER NOT NULL CHECK (recorded_at_unix_ms >= 0)
);
CREATE INDEX measurements_by_accelerator ON measurements (accelerator, seq);
CREATE INDEX measurements_by_framework ON measurements (framework, seq);
CREATE INDEX measurements_by_source ON measurements (source, seq);

CREATE TABLE measurement_labels (
  measurement_id  TEXT NOT NULL REFERENCES measurements (id) ON DELETE CASCADE,
  key             TEXT NOT NULL CHECK (length(key) > 0),
  value           TEXT NOT NULL,
  PRIMARY KEY (measurement_id, key)
) WITHOUT ROWID;
CREATE INDEX measurement_labels_by_key_value ON measurement_labels (key, value);

CREATE TABLE profiles (
  name                TEXT    PRIMARY KEY CHECK (length(name) > 0),
  profile_text        TEXT    NOT NULL,
  fitted_on           TEXT    NOT NULL,
  fitted_count        INTEGER NOT NULL,
  mape_before         REAL    NOT NULL,
  mape_after          REAL    NOT NULL,
  cv_mape             REAL    NOT NULL,
  created_at_unix_ms  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE sweep_cache (
  request_key         BLOB    NOT NULL,
  model_version       TEXT    NOT NULL,
  profile             TEXT    NOT NULL,
  value               BLOB    NOT NULL,
  hit_count           INTEGER NOT NULL DEFAULT 0,
  created_at_unix_ms  INTEGER NOT NULL,
  PRIMARY KEY (request_key, model_version, profile)
) WITHOUT ROWID;
CREATE INDEX sweep_cache_by_profile ON sweep_cache (profile);
)sql";

// Version 2: the sweep cache's size accounting and recency (a logical clock: the largest
// last_used plus one at each use) for its byte bound, and store_meta, a key-value table the
// store writes at open to prove the database is writable.
constexpr absl::string_view kV2 = R"sql(
ALTER TABLE sweep_cache ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sweep_cache ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0;
UPDATE sweep_cache SET size_bytes = length(request_key) + length(value);
CREATE INDEX sweep_cache_by_last_used ON sweep_cache (last_used);
CREATE TABLE store_meta (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
) WITHOUT ROWID;
)sql";

// PostgreSQL: the same tables, columns and constraints as SQLite's version 2, in one step (there
// was no PostgreSQL version 1 in the field). Numbered alike so that one schema version means
// one data model on both backends. seq is an identity column; text is TEXT, bytes BYTEA.
constexpr absl::string_view kPgV1 = R"sql(
CREATE TABLE measurements (
  seq                     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id                      TEXT    NOT NULL UNIQUE CHECK (length(id) > 0),
  scenario                TEXT    NOT NULL,
  accelerator             TEXT    NOT NULL,
  framework               TEXT    NOT NULL,
  model                   TEXT    NOT NULL,
  num_gpus                BIGINT  NOT NULL,
  gpus_per_node           BIGINT  NOT NULL,
  seq_len                 BIGINT  NOT NULL,
  global_batch            BIGINT  NOT NULL,
  precision               BIGINT  NOT NULL,
  tp                      BIGINT  NOT NULL,
  pp                      BIGINT  NOT NULL,
  vpp                     BIGINT  NOT NULL,
  cp                      BIGINT  NOT NULL,
  dp                      BIGINT  NOT NULL,
  sharding                BIGINT  NOT NULL,
  micro_batch             BIGINT  NOT NULL,
  recompute               BIGINT  NOT NULL,
  sequence_parallel       BIGINT  NOT NULL,
  tokens_per_s_per_gpu    DOUBLE PRECISION NOT NULL CHECK (tokens_per_s_per_gpu > 0),
  step_time_s             DOUBLE PRECISION NOT NULL CHECK (step_time_s >= 0),
  watts_per_gpu           DOUBLE PRECISION NOT NULL CHECK (watts_per_gpu >= 0),
  source                  TEXT    NOT NULL,
  recorded_at_unix_ms     BIGINT  NOT NULL CHECK (recorded_at_unix_ms >= 0)
);
CREATE INDEX measurements_by_accelerator ON measurements (accelerator, seq);
CREATE INDEX measurements_by_framework ON measurements (framework, seq);
CREATE INDEX measurements_by_source ON measurements (source, seq);

CREATE TABLE measurement_labels (
  measurement_id  TEXT NOT NULL REFERENCES measurements (id) ON DELETE CASCADE,
  key             TEXT NOT NULL CHECK (length(key) > 0),
  value           TEXT NOT NULL,
  PRIMARY KEY (measurement_id, key)
);
CREATE INDEX measurement_labels_by_key_value ON measurement_labels (key, value);

CREATE TABLE profiles (
  name                TEXT    PRIMARY KEY CHECK (length(name) > 0),
  profile_text        TEXT    NOT NULL,
  fitted_on           TEXT    NOT NULL,
  fitted_count        BIGINT  NOT NULL,
  mape_before         DOUBLE PRECISION NOT NULL,
  mape_after          DOUBLE PRECISION NOT NULL,
  cv_mape             DOUBLE PRECISION NOT NULL,
  created_at_unix_ms  BIGINT  NOT NULL
);

CREATE TABLE sweep_cache (
  request_key         BYTEA   NOT NULL,
  model_version       TEXT    NOT NULL,
  profile             TEXT    NOT NULL,
  value               BYTEA   NOT NULL,
  hit_count           BIGINT  NOT NULL DEFAULT 0,
  created_at_unix_ms  BIGINT  NOT NULL,
  size_bytes          BIGINT  NOT NULL DEFAULT 0,
  last_used           BIGINT  NOT NULL DEFAULT 0,
  PRIMARY KEY (request_key, model_version, profile)
);
CREATE INDEX sweep_cache_by_profile ON sweep_cache (profile);
CREATE INDEX sweep_cache_by_last_used ON sweep_cache (last_used);

CREATE TABLE store_meta (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
);
)sql";

// Version 3: an index for finding a stored run identical to one being recorded (duplicates are
// not stored again): the measured rate is nearly unique per run. Both backends alike.
constexpr absl::string_view kV3 = R"sql(
CREATE INDEX measurements_by_rate ON measurements (tokens_per_s_per_gpu);
)sql";

// Version 4: accelerators users register (RegisterAccelerator), shared by every replica of one
// store: the spec as given (storage/store_internal.h, AcceleratorText), resolved when read.
constexpr absl::string_view kV4 = R"sql(
CREATE TABLE accelerators (
  id                  TEXT    PRIMARY KEY CHECK (length(id) > 0),
  spec                TEXT    NOT NULL,
  created_at_unix_ms  INTEGER NOT NULL
) WITHOUT ROWID;
)sql";
constexpr absl::string_view kPgV4 = R"sql(
CREATE TABLE accelerators (
  id                  TEXT    PRIMARY KEY CHECK (length(id) > 0),
  spec                TEXT    NOT NULL,
  created_at_unix_ms  BIGINT  NOT NULL
);
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration>* const kMigrations = new std::vector<Migration>{
      {1, "measurements, labels, profiles, sweep cache", kV1},
      {2, "sweep cache size and recency, store_meta", kV2},
      {3, "index on the measured rate, for duplicates", kV3},
      {4, "registered accelerators", kV4},
  };
  return *kMigrations;
}

const std::vector<Migration>& PostgresMigrations() {
  static const std::vector<Migration>* const kMigrations = new std::vector<Migration>{
      {2, "measurements, labels, profiles, sweep cache with size and recency, store_meta", kPgV1},
      {3, "index on the measured rate, for duplicates", kV3},
      {4, "registered accelerators", kPgV4},
  };
  return *kMigrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

}  // namespace scalecast
