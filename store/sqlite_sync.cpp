// SqliteStore's durability: the sync mode (SQLite's `synchronous` pragma, on the writer's
// connection and its checkpointer's), set at open and again when the engine's `durability`
// property changes (the journal, before its next batch), and the files synced through
// SQLite's own handles when it leaves `off` (sqlite_store.h says what each mode syncs).
#include <sqlite3.h>

#include <string>

#include "store/sqlite_store.h"

namespace flowrt {

Status SqliteStore::set_sync_mode(SyncMode mode) {
  if (read_only_) return Status::ok();
  if (checkpointer_) checkpointer_->set_sync_mode(mode);
  FLOWRT_RETURN_IF_ERROR(exec(synchronous_pragma(mode)));
  const bool was_off = sync_ == SyncMode::kOff;
  sync_ = mode;
  if (was_off && mode != SyncMode::kOff) {
    // While off, checkpoints copied pages into the database file unsynced; the WAL, once
    // copied, starts over at the next batch and no longer holds them. Synced now, before
    // that batch (this is the writer's thread), and after a checkpoint still running off
    // has ended: a later batch, synced in the WAL alone, never rests on pages a power cut
    // could take.
    if (checkpointer_) checkpointer_->wait_idle();
    FLOWRT_RETURN_IF_ERROR(sync_files());
  }
  return Status::ok();
}

Status SqliteStore::sync_files() {
  for (const int op : {SQLITE_FCNTL_FILE_POINTER, SQLITE_FCNTL_JOURNAL_POINTER}) {
    sqlite3_file* file = nullptr;
    if (sqlite3_file_control(db_, "main", op, &file) != SQLITE_OK || !file || !file->pMethods) continue;
    if (file->pMethods->xSync(file, SQLITE_SYNC_NORMAL) != SQLITE_OK) {
      return Error{path_ + ": cannot sync the " + (op == SQLITE_FCNTL_FILE_POINTER ? "database file" : "WAL")};
    }
  }
  return Status::ok();
}

}  // namespace flowrt
