// SqliteDataFile: the checks, lock and descriptors of a data file around SQLite's own.
#include "store/sqlite_data_file.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "store/sqlite_rows.h"

namespace flowrt {
namespace {

// "process P on HOST since T" from the holder row of the file at `path`, read through a
// read-only connection (a WAL reader does not wait for the writer); "" when unknown.
std::string describe_holder(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 1000);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT pid, host, since FROM holder WHERE id = 1", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      out = "process " + std::to_string(sqlite3_column_int64(s, 0)) + " on " + sqlite_rows::column_text(s, 1) +
            " since " + sqlite_rows::column_text(s, 2);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

}  // namespace

Result<int> SqliteDataFile::open_existing(const std::string& path, int flags, OpenDataFiles::Key expected) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return Error{std::strerror(errno)};
  const OpenDataFiles::Key found = OpenDataFiles::key_of(fd);
  if (found == expected) return fd;
  // Renamed or replaced since its stat: a descriptor of another file, which a store of that
  // file in this process may have open too, so it closes through that file's own entry.
  OpenDataFiles::enter(found, /*writer=*/false).close_fd(fd);
  return Error{"the file was replaced while it was being opened; open it again"};
}

SqliteDataFile& SqliteDataFile::operator=(SqliteDataFile&& other) noexcept {
  if (this != &other) {
    let_go();
    lock_fd_ = other.lock_fd_;
    other.lock_fd_ = -1;
    shared_fd_ = other.shared_fd_;
    other.shared_fd_ = -1;
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void SqliteDataFile::let_go() {
  if (lock_fd_ >= 0) {
    ::flock(lock_fd_, LOCK_UN);  // the descriptor may be kept a while (open_data_files.h): not its lock
    entry_.close_fd(lock_fd_);
    lock_fd_ = -1;
  }
  if (shared_fd_ >= 0) {
    ::flock(shared_fd_, LOCK_UN);
    entry_.close_fd(shared_fd_);
    shared_fd_ = -1;
  }
  entry_.leave();
}

Status SqliteDataFile::hold_shared(const std::string& path) {
  if (shared_fd_ >= 0) return Status::ok();
  int fd = entry_.take_parked_fd();
  if (fd < 0) {
    Result<int> opened = open_existing(path, O_RDONLY, entry_.key());
    if (!opened) return Error{path + ": cannot open: " + opened.error().message};
    fd = *opened;
  }
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    const int err = errno;
    entry_.close_fd(fd);
    if (err == EWOULDBLOCK) {
      return Error{path + ": an engine is opening it for writing; read it again once it has opened"};
    }
    return Error{path + ": cannot lock: " + std::strerror(err)};
  }
  shared_fd_ = fd;
  return Status::ok();
}

Result<SqliteDataFile> SqliteDataFile::take(const std::string& path, bool read_only) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (read_only && !exists) return Error{path + ": no such data file"};
  if (exists && !S_ISREG(st.st_mode)) return Error{path + ": not a regular file"};
  SqliteDataFile file;
  if (read_only) {
    file.entry_ = OpenDataFiles::enter(OpenDataFiles::Key{st.st_dev, st.st_ino}, /*writer=*/false);
  } else {
    // The lock comes first, before SQLite reads or recovers anything. A file that exists
    // is entered before any descriptor of it is opened: a second writer in this process
    // is refused without one, and a descriptor parked by an earlier store is used again
    // (a flock belongs to its open file description, which the earlier one let go).
    int fd = -1;
    if (exists) {
      file.entry_ = OpenDataFiles::enter(OpenDataFiles::Key{st.st_dev, st.st_ino}, /*writer=*/true);
      if (file.entry_.entered()) fd = file.entry_.take_parked_fd();
    }
    if (fd < 0 && exists && file.entry_.entered()) {
      Result<int> opened = open_existing(path, O_RDWR, OpenDataFiles::Key{st.st_dev, st.st_ino});
      if (!opened) return Error{path + ": cannot open for writing: " + opened.error().message};
      fd = *opened;
    } else if (fd < 0 && !exists) {
      fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return Error{path + ": cannot open for writing: " + std::strerror(errno)};
      file.entry_ = OpenDataFiles::enter(OpenDataFiles::key_of(fd), /*writer=*/true);
    }
    const bool locked = file.entry_.entered() && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked) {
      const int err = file.entry_.entered() ? errno : EWOULDBLOCK;  // not entered: a writer in this process has it
      if (fd >= 0) file.entry_.close_fd(fd);  // not locked by this open
      if (err == EWOULDBLOCK) {
        const std::string holder = describe_holder(path);
        return Error{path + ": the data file is in use by another engine (" +
                     (holder.empty() ? std::string("another flowrt process, or another engine in this one") : holder) +
                     "); only one may open it at a time (flowrt inspect can read it meanwhile)"};
      }
      return Error{path + ": cannot lock: " + std::strerror(err)};
    }
    file.lock_fd_ = fd;
  }
  if (exists && st.st_size > 0) {
    // Anything but a SQLite database is refused before SQLite touches it.
    char header[16] = {};
    int fd = file.lock_fd_;
    if (read_only) {
      fd = file.entry_.take_parked_fd();
      if (fd < 0) {
        Result<int> opened = open_existing(path, O_RDONLY, OpenDataFiles::Key{st.st_dev, st.st_ino});
        if (!opened) return Error{path + ": cannot open: " + opened.error().message};
        fd = *opened;
      }
    }
    const ssize_t n = ::pread(fd, header, sizeof header, 0);
    if (read_only) file.entry_.close_fd(fd);
    if (n != static_cast<ssize_t>(sizeof header) || std::memcmp(header, "SQLite format 3", 16) != 0) {
      return Error{path + ": not a flowrt data file (it is not a SQLite database, or its first page is damaged)"};
    }
  }
  return file;
}

}  // namespace flowrt
