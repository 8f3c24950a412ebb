#include "store/sqlite_checkpointer.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <utility>

namespace flowrt {

const char* synchronous_pragma(SyncMode mode) {
  switch (mode) {
    case SyncMode::kFull: return "PRAGMA synchronous=FULL";
    case SyncMode::kNormal: return "PRAGMA synchronous=NORMAL";
    case SyncMode::kOff: return "PRAGMA synchronous=OFF";
  }
  return "PRAGMA synchronous=FULL";
}

Result<std::unique_ptr<SqliteCheckpointer>> SqliteCheckpointer::start(const std::string& path, const std::string& vfs,
                                                                      SyncMode sync, Limits limits,
                                                                      StoreReport report, int db_fd) {
  sqlite3* db = nullptr;
  if (const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                                     vfs.empty() ? nullptr : vfs.c_str());
      rc != SQLITE_OK) {
    std::string message = path + ": cannot open a connection to checkpoint it: " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return Error{message};
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);  // its first read may meet the writer opening the WAL
  // A read makes the connection open the WAL (a checkpoint on a connection that never read
  // the file finds no WAL to copy), and sets its synchronous setting.
  if (sqlite3_exec(db, synchronous_pragma(sync), nullptr, nullptr, nullptr) != SQLITE_OK ||
      sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, nullptr) != SQLITE_OK) {
    std::string message = path + ": cannot prepare a connection to checkpoint it: " + sqlite3_errmsg(db);
    sqlite3_close(db);
    return Error{message};
  }
  std::unique_ptr<SqliteCheckpointer> c(new SqliteCheckpointer(path, db, sync, limits, std::move(report)));
  c->db_fd_ = db_fd;
  c->thread_ = std::thread([p = c.get()] { p->run(); });
  return c;
}

SqliteCheckpointer::SqliteCheckpointer(std::string path, sqlite3* db, SyncMode sync, Limits limits,
                                       StoreReport report)
    : path_(std::move(path)), limits_(limits), report_(std::move(report)), db_(db), applied_(sync), sync_(sync) {}

SqliteCheckpointer::~SqliteCheckpointer() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  sqlite3_close(db_);
}

void SqliteCheckpointer::note_commit(int wal_frames) {
  if (wal_frames < wal_frames_) requested_at_ = 0;  // the WAL started over
  wal_frames_ = wal_frames;
  // Near the cap, after every commit: the checkpoints run back to back, so that when the
  // writer waits at the cap only the frames of the last few commits are left to copy.
  const int every = wal_frames_ >= limits_.catch_up_frames ? 1 : limits_.checkpoint_frames;
  if (wal_frames_ - requested_at_ < every) return;
  requested_at_ = wal_frames_;
  request();
}

void SqliteCheckpointer::request() {
  {
    MutexLock lock(mu_);
    ++wanted_;
  }
  wake_.notify_one();
}

void SqliteCheckpointer::wait_until_copied() {
  MutexLock lock(mu_);
  const uint64_t ticket = ++wanted_;
  wake_.notify_one();
  while (done_ < ticket && !stop_) idle_.wait(mu_);
}

void SqliteCheckpointer::set_sync_mode(SyncMode mode) {
  MutexLock lock(mu_);
  sync_ = mode;
}

void SqliteCheckpointer::wait_idle() {
  MutexLock lock(mu_);
  while ((running_ || done_ < wanted_) && !stop_) idle_.wait(mu_);
}

uint64_t SqliteCheckpointer::checkpoints() const {
  MutexLock lock(mu_);
  return checkpoints_;
}

uint64_t SqliteCheckpointer::failures() const {
  MutexLock lock(mu_);
  return failures_;
}

StoreHealth SqliteCheckpointer::health() const {
  MutexLock lock(mu_);
  return StoreHealth{checkpoints_, failures_};
}

std::string SqliteCheckpointer::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

void SqliteCheckpointer::run() {
  for (;;) {
    uint64_t ticket = 0;
    SyncMode mode = SyncMode::kFull;
    {
      MutexLock lock(mu_);
      while (!stop_ && done_ >= wanted_) wake_.wait(mu_);
      if (stop_) break;
      ticket = wanted_;
      mode = sync_;
      running_ = true;
    }
    const std::string failed = checkpoint(mode);
    // Told once per change, before the waiters go on (the report is the thread's alone).
    if (!failed.empty() && failing_++ == 0 && report_) {
      report_(failed + "; the WAL grows until a checkpoint succeeds (tried again at the next commits)");
    } else if (failed.empty() && failing_ > 0) {
      if (report_) report_(path_ + ": checkpoints succeed again, after " + std::to_string(failing_) + " failed");
      failing_ = 0;
    }
    {
      MutexLock lock(mu_);
      done_ = ticket;
      running_ = false;
      if (failed.empty()) {
        ++checkpoints_;
      } else {
        ++failures_;
        last_error_ = failed;
      }
    }
    idle_.notify_all();
  }
  idle_.notify_all();  // a writer waiting at stop goes on
}

std::string SqliteCheckpointer::checkpoint(SyncMode mode) {
  if (mode != applied_) {
    if (sqlite3_exec(db_, synchronous_pragma(mode), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return path_ + ": cannot set the checkpoint's sync mode: " + sqlite3_errmsg(db_);
    }
    applied_ = mode;
  }
  int frames = 0;
  int copied = 0;
  const int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);
  if (rc == SQLITE_OK && copied > 0 && db_fd_ >= 0) {
    // While the writer writes, a checkpoint leaves the database file unsynced (SQLite syncs
    // it only when every frame was copied): the pages it wrote wait in the page cache for
    // the one sync that ends the WAL's cycle, which the writer waits for at the cap. Their
    // write-back starts now instead, and near the cap this thread waits for it, so that
    // sync finds little left to write.
    const unsigned flags = frames >= limits_.catch_up_frames
                               ? SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
                               : SYNC_FILE_RANGE_WRITE;
    ::sync_file_range(db_fd_, 0, 0, flags);
  }
  if (rc == SQLITE_OK) return "";
  std::string message = path_ + ": cannot checkpoint its WAL: " + sqlite3_errmsg(db_);
  if ((sqlite3_extended_errcode(db_) & 0xff) == SQLITE_FULL) message += " (the disk is full)";
  return message;
}

}  // namespace flowrt
