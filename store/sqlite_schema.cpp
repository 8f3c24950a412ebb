// SqliteStore's schema: the tables of a new file, the migrations that bring an older file
// to this version, and the indexes every writer makes (sqlite_store.h says what the tables
// hold). Run on open, before anything else reads or writes the file.
#include <sqlite3.h>

#include <cstdint>
#include <iterator>
#include <string>

#include "store/sqlite_rows.h"
#include "store/sqlite_store.h"

namespace flowrt {
namespace {

// PRAGMA application_id of a flowrt data file: "flrt".
constexpr int32_t kApplicationId = 0x666c7274;


const char* const kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE counters(id INTEGER PRIMARY KEY CHECK (id = 1), commit_seq INTEGER NOT NULL,
  context_seq INTEGER NOT NULL, fencing_token INTEGER NOT NULL, sys_id_seed INTEGER NOT NULL,
  sys_id_count INTEGER NOT NULL, clock INTEGER NOT NULL);
CREATE TABLE record_tables(name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE records(position INTEGER PRIMARY KEY, tbl TEXT NOT NULL, sys_id TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE definitions(type TEXT NOT NULL, id TEXT NOT NULL, draft TEXT, published TEXT, fingerprint TEXT,
  active INTEGER NOT NULL, activated_at INTEGER NOT NULL, last_tick INTEGER NOT NULL,
  PRIMARY KEY (type, id)) WITHOUT ROWID;
CREATE TABLE definition_versions(type TEXT NOT NULL, id TEXT NOT NULL, fingerprint TEXT NOT NULL,
  body TEXT NOT NULL, PRIMARY KEY (type, id, fingerprint)) WITHOUT ROWID;
CREATE TABLE contexts(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, flow TEXT NOT NULL, status TEXT NOT NULL,
  commit_seq INTEGER NOT NULL, trigger TEXT, inputs TEXT, cause TEXT, run_key TEXT,
  started INTEGER NOT NULL, ended INTEGER NOT NULL, record TEXT, checkpoint TEXT);
CREATE TABLE history(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, flow TEXT NOT NULL, status TEXT NOT NULL,
  commit_seq INTEGER NOT NULL, trigger TEXT, inputs TEXT, cause TEXT, run_key TEXT,
  started INTEGER NOT NULL, ended INTEGER NOT NULL, record TEXT NOT NULL);
CREATE TABLE locks(name TEXT PRIMARY KEY, state TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE run_once(tbl TEXT NOT NULL, sys_id TEXT NOT NULL, flow TEXT NOT NULL,
  PRIMARY KEY (tbl, sys_id, flow)) WITHOUT ROWID;
CREATE TABLE recoveries(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, report TEXT NOT NULL);
CREATE TABLE holder(id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL,
  since TEXT NOT NULL);
)sql";

// ---- The history step (issue 14, part 6), apart from the numbered migrations ----
// Run by every writer after the schema is ready (a new file, or one just migrated): the
// indexes that reading history and HistoryPrune use. CREATE ... IF NOT EXISTS, so it needs
// no schema version: a file without them is read correctly (only slower).
#define FLOWRT_ENDED "status IN ('completed', 'cancelled', 'error')"
const char* const kHistoryIndexes = R"sql(
CREATE INDEX IF NOT EXISTS history_by_flow ON history(flow, seq);
CREATE INDEX IF NOT EXISTS history_by_status ON history(status, seq);
CREATE INDEX IF NOT EXISTS history_by_ended ON history(ended);
)sql";

// ---- Keyed writes, also apart from the numbered migrations ----
// Made by every writer, as the history's indexes are: a table an older flowrt neither
// reads nor writes (it refuses keyed writes), so a file with or without it is the same
// layout to both, and a reader of a file without it finds no keyed writes (load()).
const char* const kKeyedWrites = R"sql(
CREATE TABLE IF NOT EXISTS keyed_writes(caller TEXT NOT NULL, key TEXT NOT NULL, request TEXT NOT NULL,
  status INTEGER NOT NULL, headers TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY (caller, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS keyed_writes_by_at ON keyed_writes(at);
)sql";


// What takes a file of version N - 1 to version N (kMigrations[N - 2]); each runs in the
// transaction that also sets the new version.
const char* const kMigrations[] = {
    // 2: who holds the file (the process that opened it for writing), for the message a
    // second opener gets.
    R"sql(CREATE TABLE holder(id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL,
  since TEXT NOT NULL);)sql",
    // 3: a live context's checkpoint, so that it resumes after a restart.
    R"sql(ALTER TABLE contexts ADD COLUMN checkpoint TEXT;)sql",
    // 4: ended contexts with their record move to a table of their own, `history`, written
    // once per context and only ever appended to; `contexts` keeps the live ones (and an
    // ended one still without its record), so that a context's row no longer grows in place
    // and the live rows' indexes go. Version 3's history indexes go with them. Records are
    // kept by position (the rowid), found by it (the engine knows each record's), with no
    // index by sys_id: an insert appends, an update of a recent record writes a recent page,
    // where a random sys_id put every write on a page of its own. The migrated records are
    // numbered 1, 2, ... in their order; new positions (commit seqs) are past them, as a
    // file has no more records than commits.
    R"sql(CREATE TABLE history(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, flow TEXT NOT NULL, status TEXT NOT NULL,
  commit_seq INTEGER NOT NULL, trigger TEXT, inputs TEXT, cause TEXT, run_key TEXT,
  started INTEGER NOT NULL, ended INTEGER NOT NULL, record TEXT NOT NULL);
INSERT INTO history SELECT seq, id, flow, status, commit_seq, )sql" FLOWRT_SQL_TRIGGER_SUMMARY R"sql(, inputs, cause, run_key, started, ended, record
  FROM contexts WHERE )sql" FLOWRT_ENDED R"sql( AND record IS NOT NULL;
DELETE FROM contexts WHERE )sql" FLOWRT_ENDED R"sql( AND record IS NOT NULL;
DROP INDEX IF EXISTS contexts_by_status;
DROP INDEX IF EXISTS contexts_by_flow;
DROP INDEX IF EXISTS contexts_ended;
DROP INDEX IF EXISTS contexts_ended_at;
DROP INDEX IF EXISTS contexts_unrecorded;
CREATE TABLE records_v4(position INTEGER PRIMARY KEY, tbl TEXT NOT NULL, sys_id TEXT NOT NULL, body TEXT NOT NULL);
INSERT INTO records_v4(tbl, sys_id, body) SELECT tbl, sys_id, body FROM records ORDER BY position, tbl, sys_id;
DROP TABLE records;
ALTER TABLE records_v4 RENAME TO records;)sql",
    // 5: the tables are as in version 4. A checkpoint now leaves out the fields of its
    // execution state that are at their defaults, and writes a wait's record version that is
    // its trigger's as {"seen_is_trigger": true}; this version reads both forms, an older
    // flowrt would read the new one wrongly, so the version says which it is.
    R"sql(-- no table changes)sql",
};
static_assert(std::size(kMigrations) == SqliteStore::kSchemaVersion - 1, "one migration per version after 1");

}  // namespace

Status SqliteStore::prepare_schema() {
  // Reading the application id reads the first page: a file that is not a database, or
  // whose first page is damaged, fails here.
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA application_id", -1, &s, nullptr) != SQLITE_OK) {
    return error("cannot read the file");
  }
  int32_t app_id = 0;
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) app_id = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW) return error("cannot read the file");

  int tables = 0;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_master", -1, &s, nullptr) != SQLITE_OK) {
    return error("cannot read the file");
  }
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) tables = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW) return error("cannot read its schema");

  if (app_id != kApplicationId) {
    if (tables > 0 || app_id != 0) return Error{path_ + ": not a flowrt data file (a SQLite database of something else)"};
    if (read_only_) return Error{path_ + ": an empty file, not yet a flowrt data file"};
    // A new file: the schema, in WAL mode. auto_vacuum can only be chosen before the first
    // table: pages freed by history_retention go back to the file system (the history step).
    FLOWRT_RETURN_IF_ERROR(exec("PRAGMA auto_vacuum=INCREMENTAL"));
    FLOWRT_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
    FLOWRT_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    if (sqlite3_exec(db_, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = error("cannot create the schema");
      (void)exec("ROLLBACK");
      return e;
    }
    const std::string meta = "INSERT INTO meta(key, value) VALUES('schema_version', " + std::to_string(kSchemaVersion) +
                             "); PRAGMA application_id=" + std::to_string(kApplicationId) + ";";
    if (sqlite3_exec(db_, meta.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = error("cannot create the schema");
      (void)exec("ROLLBACK");
      return e;
    }
    return exec("COMMIT");
  }

  int version = 0;
  if (sqlite3_prepare_v2(db_, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &s, nullptr) != SQLITE_OK) {
    return error("cannot read its schema version");
  }
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) version = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (rc == SQLITE_DONE) {
    // A flowrt file (its application id) whose meta table has lost its row: a power cut
    // that kept some of the file's unsynced writes and not others (durability off).
    return Error{path_ + ": cannot read its schema version: its meta table holds none" + kDamaged};
  }
  if (rc != SQLITE_ROW) return error("cannot read its schema version");
  if (version > kSchemaVersion) {
    return Error{path_ + ": written by a newer flowrt (data schema version " + std::to_string(version) +
                 "; this flowrt reads versions up to " + std::to_string(kSchemaVersion) +
                 "): refused, the file was not changed"};
  }
  if (version < 1) return Error{path_ + ": not a flowrt data file (schema version " + std::to_string(version) + ")"};
  schema_version_ = version;
  if (read_only_) return Status::ok();  // an older file reads as it is; only a writer migrates it
  FLOWRT_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
  if (version == kSchemaVersion) return Status::ok();
  // An older file: every migration after its version, and the new version, in one transaction.
  FLOWRT_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
  for (int v = version + 1; v <= kSchemaVersion; ++v) {
    if (sqlite3_exec(db_, kMigrations[v - 2], nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = error("cannot migrate it from schema version " + std::to_string(v - 1) + " to " + std::to_string(v));
      (void)exec("ROLLBACK");
      return e;
    }
  }
  const std::string set_version = "UPDATE meta SET value = " + std::to_string(kSchemaVersion) +
                                  " WHERE key = 'schema_version'";
  if (sqlite3_exec(db_, set_version.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    Error e = error("cannot migrate it");
    (void)exec("ROLLBACK");
    return e;
  }
  FLOWRT_RETURN_IF_ERROR(exec("COMMIT"));
  migrated_from_ = version;
  schema_version_ = kSchemaVersion;
  return Status::ok();
}

Status SqliteStore::prepare_history() {
  if (sqlite3_exec(db_, kHistoryIndexes, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return error("cannot create the indexes of its history");
  }
  if (sqlite3_exec(db_, kKeyedWrites, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return error("cannot create its table of keyed writes");
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA auto_vacuum", -1, &s, nullptr) != SQLITE_OK) return error("cannot read it");
  if (sqlite3_step(s) == SQLITE_ROW) incremental_vacuum_ = sqlite3_column_int(s, 0) == 2;
  sqlite3_finalize(s);
  return Status::ok();
}

}  // namespace flowrt
#undef FLOWRT_ENDED
