// SqliteStore: a Store in one SQLite file (Debian's libsqlite3), in WAL mode.
//
// Each batch is one transaction (BEGIN IMMEDIATE ... COMMIT), so a crash leaves the file as
// of the last batch that committed. The SyncMode is SQLite's `synchronous` pragma: kFull
// syncs the WAL at every commit, kNormal at checkpoints only, kOff never. Tables: meta
// (schema version), counters, record_tables and records (every record, its rowid its
// position, so in insertion order; found by (table, sys_id) through an index),
// definitions and definition_versions (every published version ever stored), contexts
// (the live ones: queued, running, waiting, or ended without a record yet, with their
// checkpoints), history (the ended ones with their record: a row written once, when the
// record is, and appended in seq order), locks, run_once, recoveries, holder, keyed_writes
// (made by every writer when missing: an older file without it reads as having none). A
// context is in exactly one of contexts and history. meta.schema_version says which layout
// the file has (kSchemaVersion).
//
// Only one engine opens a file for writing at a time: open() takes an exclusive advisory
// lock (flock) on the file for the store's life and refuses when another holds it, naming
// the holder (its process id, host and since when, from the `holder` row it wrote); the OS
// drops the lock when the process ends, however it ends, and the next writer replaces the
// row. A read-only store (flowrt inspect)
// takes no lock and reads while an engine writes (WAL readers do not block the writer).
// SQLite reads a WAL-mode file through a -shm file beside it, which a reader makes when
// none is there (no engine has the file open): in a directory the user may not write, such
// a file is read as immutable instead, under a shared lock that keeps writers out while it
// is open, when its -wal holds nothing (a file closed cleanly); with commits in its -wal,
// the open is an error saying why.
// A file that is not a SQLite database, or is truncated or corrupt, is refused with an
// error naming the file.
//
// History (ended contexts) is not loaded: load_context and list_contexts read it (merged
// with the live rows by seq, in one read transaction) through a second, read-only connection of their own (WAL: a reader sees the last batch committed
// and never waits for the writer), one reader at a time under read_mu_. A HistoryPrune
// deletes ended contexts in the batch's transaction and, when the file has
// auto_vacuum=INCREMENTAL (every file this build creates), gives the freed pages back to
// the file system in the same transaction (PRAGMA incremental_vacuum). An existing file
// made without it keeps its size (freed pages are reused, the file does not shrink); see
// docs/DURABILITY.md.
//
// Checkpoints (copying the WAL into the file) run on a thread and a connection of their own
// (SqliteCheckpointer, store/sqlite_checkpointer.h), never inside a batch's commit; a
// writer's batch waits for one only when the WAL has grown to its cap.
//
// Thread-safety: load() and write() are not for concurrent use (the engine's journal
// thread is the one writer after load()); load_context and list_contexts may be called
// from any thread, also while write() runs (a writer's store); on a read-only store they
// must not run while load() does. Owns its connections and the lock, all let go by the
// destructor.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"

#include "store/sqlite_data_file.h"
#include "store/sqlite_checkpointer.h"
#include "store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace flowrt {
namespace sqlite_rows {
struct RawContextRow;
}

class SqliteStore final : public Store {
 public:
  // The schema version this build writes (meta.schema_version). A writer opening an older
  // file migrates it (one transaction); a newer file is refused, unchanged.
  static constexpr int kSchemaVersion = 5;
  // The writing connection's page cache (PRAGMA cache_size), KiB.
  static constexpr int kWriterCacheKiB = 16 * 1024;

  // Opens (creating when missing, unless read only) the file at `path`, through the SQLite
  // VFS named `vfs` ("": the default; tests pass a fault-injecting one).
  // `checkpoints`: when the writer's checkpointer runs (tests make them small); `report`:
  // where it reports failed checkpoints.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path, SyncMode sync, bool read_only = false,
                                                   const std::string& vfs = "",
                                                   SqliteCheckpointer::Limits checkpoints = {},
                                                   StoreReport report = {});
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  std::string_view kind() const override { return "sqlite"; }
  std::string describe() const override { return "sqlite file " + path_; }
  bool durable() const override { return true; }
  std::string open_note() const override;

  using Store::load;
  Result<StoredState> load(bool with_contexts) override;
  Result<std::optional<StoredContext>> load_context(uint64_t seq) override EXCLUDES(read_mu_);
  Result<std::vector<StoredContext>> list_contexts(const ContextQuery& query) override EXCLUDES(read_mu_);
  Result<Value> load_definition_version(std::string_view type, std::string_view id,
                                        std::string_view fingerprint) override EXCLUDES(read_mu_);
  Status write(const StoreBatch& batch) override;
  Status set_sync_mode(SyncMode mode) override;
  StoreHealth health() const override;

  const std::string& path() const { return path_; }
  // The schema version the file had when this store migrated it on open; 0 when it did not.
  int migrated_from() const { return migrated_from_; }
  // The file's size in pages and its pages on the free list (PRAGMA page_count,
  // freelist_count), as of the last batch written; for tests and figures.
  Result<std::pair<int64_t, int64_t>> page_counts() EXCLUDES(read_mu_);
  // Whether the file gives freed pages back (auto_vacuum=INCREMENTAL).
  bool incremental_vacuum() const { return incremental_vacuum_; }
  // A writer's checkpointer; null when read only. Tests wait for it to be idle after a
  // write (SqliteCheckpointer::wait_idle) to know what its checkpoints synced.
  SqliteCheckpointer* checkpointer() const { return checkpointer_.get(); }

 private:
  // What an error about a damaged file adds to SQLite's message (error()).
  static constexpr const char* kDamaged = " (the data file is damaged: truncated or overwritten; restore it from a copy)";
  class Statements;  // the prepared statements of write()
  SqliteStore(std::string path, sqlite3* db, SqliteDataFile file, bool read_only);
  // Creates the schema in a new file, or checks the version of an existing one.
  Status prepare_schema();
  // A reader's connection that cannot make the -shm file it reads through (class comment):
  // replaced by an immutable one under a shared lock when the -wal holds nothing, else an
  // error saying why; nothing when its first read works or fails for another reason.
  Status read_without_a_shm(const std::string& vfs);
  // The history step (a writer, after the schema is ready): the indexes history reads and
  // HistoryPrune use, the keyed writes' table, and whether the file vacuums incrementally.
  Status prepare_history();
  // A writer's statements learn the record tables a load found (the file's own).
  void know_tables(const StoredState& state);
  // ", checkpoint", or ", NULL" for a file older than the column (read as it is).
  const char* checkpoint_column() const;
  // The raw rows `sql` selects (kContextColumns and a checkpoint), its parameters bound by
  // `bind`; `what` names the read in an error. REQUIRES read_mu_ when `db` is the reader.
  Result<std::vector<sqlite_rows::RawContextRow>> read_rows(sqlite3* db, const std::string& sql,
                                                            const std::function<void(sqlite3_stmt*)>& bind,
                                                            std::string_view what) const;
  // The contexts of raw rows; any thread, no lock (JSON parsing, apart from the connection).
  Result<std::vector<StoredContext>> parse_rows(std::vector<sqlite_rows::RawContextRow>&& rows) const;
  // The connection history is read through (REQUIRES read_mu_).
  sqlite3* reader() const { return reader_ ? reader_ : db_; }
  // An error naming the file: "<path>: <what>: <sqlite's message>" (of `db`, or db_).
  Error error(std::string_view what, sqlite3* db = nullptr) const;
  Status exec(const char* sql);
  // Syncs the database file and the WAL through SQLite's own handles (the VFS in use; never
  // a descriptor of the store's own, whose close would drop SQLite's locks).
  Status sync_files();

  const std::string path_;
  sqlite3* db_;
  SqliteDataFile file_;  // a writer's lock; let go of last, after the connections closed
  const bool read_only_;
  // This writer noted itself in the holder row (open() got that far): it clears the row,
  // and syncs the WAL, as it closes. A refused open touches nothing.
  bool holds_ = false;
  SyncMode sync_ = SyncMode::kNormal;  // as last set (the journal's thread)
  int migrated_from_ = 0;
  int schema_version_ = kSchemaVersion;  // of the file as opened (a reader leaves an older one as it is)
  std::unique_ptr<Statements> statements_;
  bool incremental_vacuum_ = false;
  int64_t ended_count_ = -1;  // ended contexts in the file (-1: not counted yet); the writer's
  Mutex read_mu_;             // one history reader at a time
  sqlite3* reader_ = nullptr; // a writer's read-only connection for history; null: db_ reads
  std::unique_ptr<SqliteCheckpointer> checkpointer_;  // a writer's; told of each commit by db_'s WAL hook
};

}  // namespace flowrt
