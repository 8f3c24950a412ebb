// SqliteCheckpointer: copies a SQLite file's WAL into the database file on a thread and a
// connection of its own, so that the writer's commits never wait for a checkpoint's copying
// and syncs.
//
// The writer's connection has SQLite's automatic checkpoint off: its WAL hook (installed
// by SqliteStore) calls note_commit(wal_frames) after each commit instead. Once
// Limits::checkpoint_frames frames have been added since the last request, the thread
// runs a passive checkpoint (SQLITE_CHECKPOINT_PASSIVE: it takes no lock a writer or a
// reader waits for). A passive checkpoint copies the frames committed before it began. The
// WAL starts over from its beginning only when a writer begins a transaction with every
// frame copied, which under steady writes seldom happens by itself; so once the WAL holds
// Limits::wal_cap_frames frames, the writer calls wait_until_copied() before its next
// transaction: it waits, holding no SQLite lock, for a checkpoint that begins after its
// last commit. Nothing is written meanwhile, so that checkpoint copies every frame (unless
// a reader's snapshot still needs some), and the next transaction starts the WAL over.
// That bounds the WAL at about wal_cap_frames pages plus one batch.
//
// That wait is kept short: from Limits::catch_up_frames on, a checkpoint is requested
// after every commit, so only the last commits' frames are left to copy; and since SQLite
// syncs the database file only in a checkpoint that copied every frame (the one the writer
// waits for), this thread starts the write-back of the pages each checkpoint copied at once
// (sync_file_range), and near the cap waits for it, so that the last sync has little
// left to write. (`scripts/bench-http.sh --store sqlite --connections 8`: the writer's
// wait at the cap is 3-4 ms on a quiet disk, once per 64 MiB of WAL, where SQLite's own
// checkpoint ran inside a commit every 4 MiB for 10-16 ms; docs/PERFORMANCE.md,
// "Checkpoints on a thread of their own, built".)
//
// Syncs: a checkpoint syncs the WAL and then the database file as its connection's
// `synchronous` setting says, which set_sync_mode keeps equal to the writer's. With
// SyncMode::kNormal the checkpoint is what makes the batches before it durable
// (docs/DURABILITY.md, "Durability levels").
//
// A failed checkpoint (a full disk, an I/O error) is counted and kept (failures,
// last_error); the next request tries again. The first failure after a success is
// reported (StoreReport: the engine logs it as a warning), and so is the first success
// after failures, with how many failed: an operator learns that the WAL grows past its
// cap, once, not once per commit.
//
// Thread-safety: note_commit (from the WAL hook), wait_until_copied and set_sync_mode are
// called by the one writer thread; wait_idle and the figures from any thread. The checkpoint thread is the
// only user of its connection. Ownership: owns the thread and the connection; the
// destructor stops the thread (after the checkpoint in progress, if any) and closes the
// connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "base/thread_annotations.h"
#include "store/store.h"

struct sqlite3;

namespace flowrt {

// "PRAGMA synchronous=..." for `mode`: the writer's connection and the checkpointer's.
const char* synchronous_pragma(SyncMode mode);

// When a SqliteCheckpointer checkpoints, in WAL frames (one page each: 4 KiB).
struct SqliteCheckpointLimits {
  // Frames added to the WAL after which a checkpoint is requested (SQLite's own default
  // for its automatic checkpoint: about 4 MiB).
  int checkpoint_frames = 1000;
  // Frames in the WAL from which a checkpoint is requested after every commit.
  int catch_up_frames = 14000;
  // Frames in the WAL at which the writer waits for every frame to be copied (64 MiB).
  int wal_cap_frames = 16000;
};

class SqliteCheckpointer {
 public:
  using Limits = SqliteCheckpointLimits;

  // Opens a connection to the file at `path` through the SQLite VFS `vfs` ("": the
  // default) and starts the thread. `path` is named in errors.
  // `report` (may be empty) is called on the thread, as the class comment says.
  // `db_fd` (-1: none) is a descriptor of the database file that the caller keeps open
  // for the checkpointer's life, to start write-backs through: the checkpointer opens none
  // of its own, whose close would drop SQLite's locks (store/open_data_files.h).
  static Result<std::unique_ptr<SqliteCheckpointer>> start(const std::string& path, const std::string& vfs,
                                                           SyncMode sync, Limits limits = {}, StoreReport report = {},
                                                           int db_fd = -1);
  ~SqliteCheckpointer();
  SqliteCheckpointer(const SqliteCheckpointer&) = delete;
  SqliteCheckpointer& operator=(const SqliteCheckpointer&) = delete;

  // The writer committed; the WAL now holds `wal_frames` frames (fewer than before: it
  // started over). Requests a checkpoint when enough were added since the last request.
  void note_commit(int wal_frames) EXCLUDES(mu_);
  // Whether the writer must call wait_until_copied before its next transaction.
  bool wal_full() const { return wal_frames_ >= limits_.wal_cap_frames; }
  // Frames in the WAL after the writer's last commit (the writer's thread).
  int wal_frames() const { return wal_frames_; }
  // Waits for a checkpoint that begins after this call (see the class comment).
  void wait_until_copied() EXCLUDES(mu_);
  // The `synchronous` setting of later checkpoints.
  void set_sync_mode(SyncMode mode) EXCLUDES(mu_);
  // Waits until no checkpoint is requested or running. Tests call it after a write, so
  // that what a checkpoint synced is known when they check the file.
  void wait_idle() EXCLUDES(mu_);

  // Checkpoints done, and failed, so far; the last failure's message ("" none).
  uint64_t checkpoints() const EXCLUDES(mu_);
  uint64_t failures() const EXCLUDES(mu_);
  std::string last_error() const EXCLUDES(mu_);
  // Both counts, as of one moment.
  StoreHealth health() const EXCLUDES(mu_);

 private:
  SqliteCheckpointer(std::string path, sqlite3* db, SyncMode sync, Limits limits, StoreReport report);
  void run() EXCLUDES(mu_);
  // One passive checkpoint with `mode` as the connection's setting; "" or what failed.
  std::string checkpoint(SyncMode mode);
  void request() EXCLUDES(mu_);

  const std::string path_;
  const Limits limits_;
  const StoreReport report_;
  uint64_t failing_ = 0;       // the thread's: failures since the last success
  sqlite3* const db_;          // the thread's connection (the constructor's until the thread starts)
  SyncMode applied_;           // the connection's setting (the thread's)
  int db_fd_ = -1;             // the database file, to start its write-back (the store's; not closed here)
  int wal_frames_ = 0;         // the writer's: frames in the WAL after its last commit
  int requested_at_ = 0;       // the writer's: wal_frames_ when it last requested

  mutable Mutex mu_;
  CondVar wake_;               // the thread waits for a request or stop
  CondVar idle_;               // waiters for a checkpoint to end
  uint64_t wanted_ GUARDED_BY(mu_) = 0;   // requests so far
  uint64_t done_ GUARDED_BY(mu_) = 0;     // the highest request a finished checkpoint began after
  bool running_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  SyncMode sync_ GUARDED_BY(mu_);
  uint64_t checkpoints_ GUARDED_BY(mu_) = 0;
  uint64_t failures_ GUARDED_BY(mu_) = 0;
  std::string last_error_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace flowrt
