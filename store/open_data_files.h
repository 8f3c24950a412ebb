// OpenDataFiles: the data files this process has open through SqliteStore, by inode, and
// the descriptors of them it may not close yet.
//
// SQLite's locks on a data file are POSIX advisory locks, which belong to the process and
// the file: closing ANY descriptor of the file drops all of them, those of every SQLite
// connection in the process included (SQLite's "How To Corrupt An SQLite Database File",
// section 2.2). A writer whose locks were dropped can have its WAL checkpointed and deleted
// under it by another process's last connection. So SqliteStore closes a descriptor of a
// data file only through close_fd, which parks it while any store of that file is open in
// the process (or opening) and closes it when the last one leaves; and a second writer of a
// file in the process is refused by enter() before its open does anything more.
//
// Thread-safety: every function may be called from any thread (one process-wide mutex).
#pragma once

#include <sys/types.h>

#include <compare>
#include <string>

namespace flowrt {

class OpenDataFiles {
 public:
  struct Key {
    dev_t dev = 0;
    ino_t ino = 0;
    auto operator<=>(const Key&) const = default;
  };
  // The file a descriptor is open on.
  static Key key_of(int fd);

  // One store's membership of a file, left when it is destroyed. Move-only.
  class Entry {
   public:
    Entry() = default;
    Entry(Entry&& other) noexcept : key_(other.key_), writer_(other.writer_), entered_(other.entered_) {
      other.entered_ = false;
    }
    Entry& operator=(Entry&& other) noexcept;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() { leave(); }
    bool entered() const { return entered_; }
    // The file it is the entry of.
    const Key& key() const { return key_; }
    // Closes `fd` (a descriptor of this entry's file) now if no store of the file is
    // open, else when the last one leaves.
    void close_fd(int fd) const;
    // A descriptor of this entry's file that waits to be closed, handed back to be used
    // again (-1: none), so that stores opened and closed beside a long-lived one reuse
    // descriptors rather than pile them up. Only for an entry that entered.
    int take_parked_fd() const;
    // Leaves the file: the last to leave closes the descriptors parked for it.
    void leave();

   private:
    friend class OpenDataFiles;
    Key key_;
    bool writer_ = false;
    bool entered_ = false;
  };

  // A store begins to open the file `key`: a writer when `writer`. Not entered (check
  // entered()) when `writer` and a writer of the file is open, or opening, in this process.
  static Entry enter(Key key, bool writer);
  // Descriptors parked for `key`, for tests.
  static size_t parked(Key key);
};

}  // namespace flowrt
