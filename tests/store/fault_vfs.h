// FaultVfs: a SQLite VFS for tests that loses power and fills the disk on demand (the idea
// of SQLite's own test VFSes: a shim over the real one that remembers what a power cut would
// lose).
//
// It registers under its own name and wraps SQLite's default VFS ("unix"): every call goes
// to the real file, so the files on disk always hold what SQLite wrote, and other readers
// (an advisory lock, a header check, a second connection) see them as usual. For each main
// database, WAL and rollback journal file it also keeps the contents as of the last xSync
// and the writes (and truncations) made since, in order.
//  - power_cut(): every such file goes back to its synced contents: the writes since its
//    last sync are dropped (or, with `tear`, each is kept, dropped or kept in part: a prefix
//    of whole 512-byte sectors, chosen by the seed, as a disk that reorders writes between
//    syncs may leave them). Then every file handle open at the cut is dead: its writes,
//    truncations and syncs fail (SQLITE_IOERR_*) and change nothing, as if the process had
//    lost power with the machine, so a connection open across the cut can be closed and
//    the file opened again. A file is taken to be synced when first opened through the VFS,
//    and when opened again (no handle open) with contents other than the VFS left (it was
//    deleted, replaced or written by others meanwhile).
//  - cut_at_operation(n): the cut happens by itself at the n-th write, truncation or sync
//    from now (that operation is lost, or torn with `tear`), in whichever thread makes it.
//  - set_space(bytes): a disk that fills: writes succeed until `bytes` more bytes are
//    written (every byte written counts, an overwrite too); the write that crosses the
//    limit writes what fits and fails with SQLITE_FULL, as do later ones, until set_space
//    gives more (std::nullopt: unlimited).
// xSync only moves the model's synced contents (no fsync: test files need not reach the
// disk). SQLITE_FCNTL_SIZE_HINT is answered without growing the file (it is only a hint),
// so that every byte reaches the file through xWrite. Files without a name (temporary
// ones) and the -shm file (a wal-index SQLite rebuilds from the WAL when it opens a file no
// one has open) are passed through untouched. xDelete is passed through.
//
// make_default also makes it SQLite's default VFS while it lives, for code that opens files
// without naming a VFS (an Engine). Thread-safety: every method, and every open, close,
// write, truncation and sync of a file, takes one mutex, so a cut falls between two of
// them. Ownership: unregisters itself (and gives the default back) when destroyed; destroy
// it only once every connection through it is closed. One FaultVfs per name at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace flowrt::testing {

// How a power cut treats the writes not yet synced.
struct CutOptions {
  bool tear = false;   // keep, drop or tear each one (seeded) rather than drop them all
  uint64_t seed = 0;
};

class FaultVfs {
 public:
  explicit FaultVfs(std::string name = "flowrt-fault", bool make_default = false);
  ~FaultVfs();
  FaultVfs(const FaultVfs&) = delete;
  FaultVfs& operator=(const FaultVfs&) = delete;

  const std::string& name() const;

  // Cuts the power now (see the class comment).
  void power_cut(CutOptions options = {});
  // Cuts the power at the n-th write, truncation or sync from now (n >= 1); 0 disarms.
  void cut_at_operation(uint64_t n, CutOptions options = {});
  // Power cuts so far (power_cut and cut_at_operation).
  uint64_t cuts() const;
  // Writes, truncations and syncs so far (on live handles).
  uint64_t operations() const;
  // Syncs that succeeded so far.
  uint64_t syncs() const;
  // Bytes a power cut now would drop or tear: the writes not yet synced, over every file.
  uint64_t unsynced_bytes() const;

  // The bytes that may still be written (std::nullopt: unlimited, the default).
  void set_space(std::optional<uint64_t> bytes);
  // Writes refused with SQLITE_FULL so far.
  uint64_t full_failures() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace flowrt::testing
