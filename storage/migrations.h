// The schema of the store (SQLite, and PostgreSQL alike) as an ordered list of forward migrations.
// Migration i (1-based) takes a database from PRAGMA user_version i-1 to i; the store applies each
// pending step in a transaction of its own. Steps are append-only: never edit one that has shipped,
// add a new one.
#ifndef SCALECAST_STORAGE_MIGRATIONS_H_
#define SCALECAST_STORAGE_MIGRATIONS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace scalecast {

struct Migration {
  int version;  // the user_version the database has after this step
  absl::string_view description;
  absl::string_view sql;  // one or more statements, run with sqlite3_exec (no values)
};

// All SQLite migrations, in order; Migrations()[i].version == i + 1.
const std::vector<Migration>& Migrations();

// PostgreSQL's, in order, ending at the same LatestSchemaVersion(); the first may start above 1
// (its versions say which SQLite schema each matches). The version lives in
// scalecast_schema(version).
const std::vector<Migration>& PostgresMigrations();

// The schema version this build writes and understands (the last migration's version).
int LatestSchemaVersion();

}  // namespace scalecast

#endif  // SCALECAST_STORAGE_MIGRATIONS_H_
