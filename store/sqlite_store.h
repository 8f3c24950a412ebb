// SqliteStore: a Store in one SQLite file (Debian's libsqlite3), in WAL mode.
//
// Each batch is one transaction (BEGIN IMMEDIATE ... COMMIT), so a crash leaves the file as
// of the last batch that committed. The SyncMode is SQLite's `synchronous` pragma: kFull
// syncs the WAL at every commit, kNormal at checkpoints only, kOff never. Tables: meta
// (schema version), counters, record_tables and records (a table's records in insertion
// order), definitions and definition_versions (every published version ever stored),
// contexts (one row per context: identity, status, record), locks, run_once, recoveries,
// holder. meta.schema_version says which layout the file has (kSchemaVersion).
//
// Only one engine opens a file for writing at a time: open() takes an exclusive advisory
// lock (flock) on the file for the store's life and refuses when another holds it, naming
// the holder (its process id, host and since when, from the `holder` row it wrote); the OS
// drops the lock when the process ends, however it ends, and the next writer replaces the
// row. A read-only store (flowrt inspect)
// takes no lock and reads while an engine writes (WAL readers do not block the writer).
// A file that is not a SQLite database, or is truncated or corrupt, is refused with an
// error naming the file.
//
// Thread-safety: not for concurrent use; the engine's journal thread is its one writer
// after load(). Owns its connection and the lock, both let go by the destructor.
#pragma once

#include <memory>
#include <string>

#include "store/store.h"

struct sqlite3;

namespace flowrt {

class SqliteStore final : public Store {
 public:
  // The schema version this build writes (meta.schema_version). A writer opening an older
  // file migrates it (one transaction); a newer file is refused, unchanged.
  static constexpr int kSchemaVersion = 2;

  // Opens (creating when missing, unless read only) the file at `path`, through the SQLite
  // VFS named `vfs` ("": the default; tests pass a fault-injecting one).
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path, SyncMode sync, bool read_only = false,
                                                   const std::string& vfs = "");
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  std::string_view kind() const override { return "sqlite"; }
  std::string describe() const override { return "sqlite file " + path_; }
  bool durable() const override { return true; }
  std::string open_note() const override;

  Result<StoredState> load() override;
  Status write(const StoreBatch& batch) override;
  Status set_sync_mode(SyncMode mode) override;

  const std::string& path() const { return path_; }
  // The schema version the file had when this store migrated it on open; 0 when it did not.
  int migrated_from() const { return migrated_from_; }

 private:
  class Statements;  // the prepared statements of write()
  SqliteStore(std::string path, sqlite3* db, int lock_fd, bool read_only);
  // Creates the schema in a new file, or checks the version of an existing one.
  Status prepare_schema();
  // An error naming the file: "<path>: <what>: <sqlite's message>".
  Error error(std::string_view what) const;
  Status exec(const char* sql);

  const std::string path_;
  sqlite3* db_;
  int lock_fd_;  // holds the flock; -1 when read only
  const bool read_only_;
  int migrated_from_ = 0;
  std::unique_ptr<Statements> statements_;
};

}  // namespace flowrt
