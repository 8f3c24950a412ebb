// SqliteDataFile: a data file as a SqliteStore holds it beside its SQLite connections.
// For a writer, the exclusive advisory lock (flock) that makes it the file's one writer;
// for a reader that reads the file as immutable, a shared one that keeps writers out;
// for every store, its place among the process's users of the file (OpenDataFiles),
// through which each descriptor of the file closes, so that none drops SQLite's locks.
// take() checks the file before SQLite touches it.
//
// Move-only. Not synchronized: its store's. Letting go (let_go, or destruction) comes
// after the store's connections closed.
#pragma once

#include <string>

#include "plans/result.h"
#include "store/open_data_files.h"

namespace flowrt {

class SqliteDataFile {
 public:
  // The file at `path`, checked (a regular file, empty or a SQLite database; for a
  // reader, one that exists) and, for a writer, locked: otherwise an error naming it,
  // and for a file another engine writes, who ("process P on HOST since T").
  static Result<SqliteDataFile> take(const std::string& path, bool read_only);

  SqliteDataFile() = default;
  SqliteDataFile(SqliteDataFile&& other) noexcept
      : lock_fd_(other.lock_fd_), shared_fd_(other.shared_fd_), entry_(std::move(other.entry_)) {
    other.lock_fd_ = -1;
    other.shared_fd_ = -1;
  }
  SqliteDataFile& operator=(SqliteDataFile&& other) noexcept;
  SqliteDataFile(const SqliteDataFile&) = delete;
  SqliteDataFile& operator=(const SqliteDataFile&) = delete;
  ~SqliteDataFile() { let_go(); }

  // A new descriptor of the file at `path` (open(2) `flags`), which a stat found to be
  // `expected`; an error when the path names another file by now (it was renamed or
  // replaced in between: a descriptor filed under the wrong file's entry would close
  // unguarded, dropping SQLite's locks on its real file).
  static Result<int> open_existing(const std::string& path, int flags, OpenDataFiles::Key expected);

  // For a reader (taken read only) that reads the file as immutable, SQLite taking no locks
  // then: a shared lock, held until let_go, so that no writer (whose exclusive lock take()
  // asks for) opens the file while it is read. An error naming the file when a writer
  // holds it.
  Status hold_shared(const std::string& path);

  // The locked descriptor (-1: read only); the checkpointer starts write-backs through it.
  int fd() const { return lock_fd_; }
  // Lets go of the lock at once; the descriptor closes once no store of the file is left
  // in the process. Then leaves the file's users.
  void let_go();

 private:
  int lock_fd_ = -1;
  int shared_fd_ = -1;  // hold_shared's
  OpenDataFiles::Entry entry_;
};

}  // namespace flowrt
