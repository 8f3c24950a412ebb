#include "tests/store/fault_vfs.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <vector>

namespace flowrt::testing {

struct FaultFile;

namespace {

constexpr uint64_t kSector = 512;

// A write or truncation not yet synced.
struct Op {
  bool truncate = false;
  uint64_t offset = 0;  // a write's offset; a truncation's new size
  std::string data;     // a write's bytes
};

// One tracked file: its contents as of its last sync, and what came after.
struct FileState {
  std::string synced;
  std::vector<Op> pending;
  std::vector<FaultFile*> handles;  // open through the VFS
};

void apply(std::string& image, const Op& op, uint64_t keep) {
  if (op.truncate) {
    image.resize(op.offset);
    return;
  }
  const uint64_t n = std::min<uint64_t>(keep, op.data.size());
  if (n == 0) return;
  if (image.size() < op.offset + n) image.resize(op.offset + n, '\0');
  std::memcpy(image.data() + op.offset, op.data.data(), n);
}

std::string read_file(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace

// The sqlite3_file of the VFS; the real VFS's file follows it in the same allocation.
struct FaultFile {
  sqlite3_file base;
  FaultVfs::Impl* owner;
  std::string path;  // "" when not tracked
  uint64_t generation;
  sqlite3_file* real;
};

struct FaultVfs::Impl {
  std::string name;
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  sqlite3_vfs* previous_default = nullptr;
  bool made_default = false;
  sqlite3_io_methods methods{};

  mutable std::mutex mu;
  std::map<std::string, FileState> files;
  uint64_t generation = 0;  // handles of an older generation are dead
  uint64_t operations = 0;
  uint64_t syncs = 0;
  uint64_t cuts = 0;
  uint64_t cut_at = 0;      // the operation count at which to cut; 0: none
  CutOptions cut_options;
  std::optional<uint64_t> space;
  uint64_t full_failures = 0;

  // Counts an operation; true when the power fails at it (then it has cut).
  bool count_operation() {
    ++operations;
    if (cut_at == 0 || operations < cut_at) return false;
    cut_at = 0;
    cut(cut_options);
    return true;
  }

  void cut(const CutOptions& options) {
    std::mt19937_64 rng(options.seed);
    for (auto& [path, state] : files) {
      if (state.pending.empty()) continue;
      std::string image = state.synced;
      for (const Op& op : state.pending) {
        uint64_t keep = 0;
        if (options.tear) {
          switch (rng() % 3) {
            case 0: keep = 0; break;
            case 1: keep = UINT64_MAX; break;
            default: {
              const uint64_t sectors = (op.data.size() + kSector - 1) / kSector;
              keep = op.truncate ? UINT64_MAX : (rng() % (sectors + 1)) * kSector;
            }
          }
          if (op.truncate && keep == 0) continue;
          apply(image, op, keep);
        }
      }
      put(path, state, image);
      state.synced = std::move(image);
      state.pending.clear();
    }
    ++generation;
    ++cuts;
  }

  // Makes the file at `path` hold `image`: through an open handle (closing another
  // descriptor of the file would drop SQLite's POSIX locks on it), or else directly.
  static void put(const std::string& path, FileState& state, const std::string& image) {
    if (!state.handles.empty()) {
      sqlite3_file* f = state.handles.front()->real;
      if (!image.empty()) f->pMethods->xWrite(f, image.data(), static_cast<int>(image.size()), 0);
      f->pMethods->xTruncate(f, static_cast<sqlite3_int64>(image.size()));
      return;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t done = 0;
    while (done < image.size()) {
      const ssize_t n = ::pwrite(fd, image.data() + done, image.size() - done, static_cast<off_t>(done));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    (void)::ftruncate(fd, static_cast<off_t>(image.size()));
    ::close(fd);
  }

  FileState* state_of(FaultFile* f) {
    if (f->path.empty()) return nullptr;
    auto it = files.find(f->path);
    return it == files.end() ? nullptr : &it->second;
  }
  bool dead(const FaultFile* f) const { return f->generation < generation; }
};

namespace {

FaultFile* self(sqlite3_file* file) { return reinterpret_cast<FaultFile*>(file); }
sqlite3_file* real(sqlite3_file* file) { return self(file)->real; }

int f_close(sqlite3_file* file) {
  FaultFile* f = self(file);
  int rc;
  {
    std::lock_guard<std::mutex> lock(f->owner->mu);
    if (FileState* s = f->owner->state_of(f)) {
      s->handles.erase(std::remove(s->handles.begin(), s->handles.end(), f), s->handles.end());
    }
    rc = f->real->pMethods->xClose(f->real);
  }
  f->path.~basic_string();
  return rc;
}

int f_read(sqlite3_file* file, void* buf, int amount, sqlite3_int64 offset) {
  sqlite3_file* r = real(file);
  return r->pMethods->xRead(r, buf, amount, offset);
}

int f_write(sqlite3_file* file, const void* buf, int amount, sqlite3_int64 offset) {
  FaultFile* f = self(file);
  FaultVfs::Impl& v = *f->owner;
  std::lock_guard<std::mutex> lock(v.mu);
  if (v.dead(f)) return SQLITE_IOERR_WRITE;
  FileState* s = v.state_of(f);
  const char* bytes = static_cast<const char*>(buf);
  if (v.cut_at != 0 && v.operations + 1 >= v.cut_at) {
    // The power fails during this write: it is one more unsynced write, maybe torn.
    if (s) s->pending.push_back(Op{false, static_cast<uint64_t>(offset), std::string(bytes, static_cast<size_t>(amount))});
    v.count_operation();
    return SQLITE_IOERR_WRITE;
  }
  v.count_operation();
  int n = amount;
  bool full = false;
  if (v.space && static_cast<uint64_t>(amount) > *v.space) {
    n = static_cast<int>(*v.space);
    full = true;
  }
  int rc = SQLITE_OK;
  if (n > 0) rc = f->real->pMethods->xWrite(f->real, buf, n, offset);
  if (rc == SQLITE_OK && n > 0) {
    if (v.space) *v.space -= static_cast<uint64_t>(n);
    if (s) s->pending.push_back(Op{false, static_cast<uint64_t>(offset), std::string(bytes, static_cast<size_t>(n))});
  }
  if (full) {
    *v.space = 0;
    ++v.full_failures;
    return SQLITE_FULL;
  }
  return rc;
}

int f_truncate(sqlite3_file* file, sqlite3_int64 size) {
  FaultFile* f = self(file);
  FaultVfs::Impl& v = *f->owner;
  std::lock_guard<std::mutex> lock(v.mu);
  if (v.dead(f)) return SQLITE_IOERR_TRUNCATE;
  if (v.count_operation()) return SQLITE_IOERR_TRUNCATE;
  const int rc = f->real->pMethods->xTruncate(f->real, size);
  if (rc == SQLITE_OK) {
    if (FileState* s = v.state_of(f)) s->pending.push_back(Op{true, static_cast<uint64_t>(size), {}});
  }
  return rc;
}

int f_sync(sqlite3_file* file, int flags) {
  FaultFile* f = self(file);
  FaultVfs::Impl& v = *f->owner;
  std::lock_guard<std::mutex> lock(v.mu);
  if (v.dead(f)) return SQLITE_IOERR_FSYNC;
  if (v.count_operation()) return SQLITE_IOERR_FSYNC;
  // No real fsync: what a sync makes durable is this VFS's model (the synced contents), and
  // test files need not reach the disk.
  (void)flags;
  if (FileState* s = v.state_of(f)) {
    for (const Op& op : s->pending) apply(s->synced, op, UINT64_MAX);
    s->pending.clear();
  }
  ++v.syncs;
  return SQLITE_OK;
}

int f_file_size(sqlite3_file* file, sqlite3_int64* size) {
  sqlite3_file* r = real(file);
  return r->pMethods->xFileSize(r, size);
}
int f_lock(sqlite3_file* file, int level) {
  sqlite3_file* r = real(file);
  return r->pMethods->xLock(r, level);
}
int f_unlock(sqlite3_file* file, int level) {
  sqlite3_file* r = real(file);
  return r->pMethods->xUnlock(r, level);
}
int f_check_reserved_lock(sqlite3_file* file, int* out) {
  sqlite3_file* r = real(file);
  return r->pMethods->xCheckReservedLock(r, out);
}
int f_file_control(sqlite3_file* file, int op, void* arg) {
  if (op == SQLITE_FCNTL_SIZE_HINT) return SQLITE_OK;  // a hint: every byte comes through xWrite
  sqlite3_file* r = real(file);
  return r->pMethods->xFileControl(r, op, arg);
}
int f_sector_size(sqlite3_file* file) {
  sqlite3_file* r = real(file);
  return r->pMethods->xSectorSize(r);
}
int f_device_characteristics(sqlite3_file* file) {
  sqlite3_file* r = real(file);
  return r->pMethods->xDeviceCharacteristics(r);
}
int f_shm_map(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
  sqlite3_file* r = real(file);
  return r->pMethods->xShmMap(r, region, size, extend, out);
}
int f_shm_lock(sqlite3_file* file, int offset, int n, int flags) {
  sqlite3_file* r = real(file);
  return r->pMethods->xShmLock(r, offset, n, flags);
}
void f_shm_barrier(sqlite3_file* file) {
  sqlite3_file* r = real(file);
  r->pMethods->xShmBarrier(r);
}
int f_shm_unmap(sqlite3_file* file, int delete_flag) {
  sqlite3_file* r = real(file);
  return r->pMethods->xShmUnmap(r, delete_flag);
}

FaultVfs::Impl& impl_of(sqlite3_vfs* vfs) { return *static_cast<FaultVfs::Impl*>(vfs->pAppData); }

int v_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  FaultVfs::Impl& v = impl_of(vfs);
  FaultFile* f = self(file);
  f->base.pMethods = nullptr;
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  const int rc = v.real->xOpen(v.real, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    if (f->real->pMethods) f->real->pMethods->xClose(f->real);
    return rc;
  }
  f->owner = &v;
  new (&f->path) std::string();
  const bool tracked = name != nullptr && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL));
  std::lock_guard<std::mutex> lock(v.mu);
  f->generation = v.generation;
  if (tracked) {
    f->path = name;
    auto [it, added] = v.files.try_emplace(f->path);
    FileState& state = it->second;
    if (added) {
      state.synced = read_file(f->path);  // what is on disk when first seen counts as synced
    } else if (state.handles.empty()) {
      // Opened again: unless the file is what the VFS left (it may have been deleted or
      // written by others meanwhile), what is on disk now counts as synced.
      std::string expected = state.synced;
      for (const Op& op : state.pending) apply(expected, op, UINT64_MAX);
      std::string disk = read_file(f->path);
      if (disk != expected) {
        state.synced = std::move(disk);
        state.pending.clear();
      }
    }
    state.handles.push_back(f);
  }
  f->base.pMethods = &v.methods;
  return SQLITE_OK;
}

int v_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  FaultVfs::Impl& v = impl_of(vfs);
  std::lock_guard<std::mutex> lock(v.mu);
  const int rc = v.real->xDelete(v.real, name, sync_dir);
  if (rc == SQLITE_OK) {
    auto it = v.files.find(name);
    if (it != v.files.end() && it->second.handles.empty()) v.files.erase(it);
  }
  return rc;
}
int v_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xAccess(r, name, flags, out);
}
int v_full_pathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xFullPathname(r, name, n, out);
}
void* v_dl_open(sqlite3_vfs* vfs, const char* name) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xDlOpen(r, name);
}
void v_dl_error(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  r->xDlError(r, n, out);
}
void (*v_dl_sym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xDlSym(r, handle, symbol);
}
void v_dl_close(sqlite3_vfs* vfs, void* handle) {
  sqlite3_vfs* r = impl_of(vfs).real;
  r->xDlClose(r, handle);
}
int v_randomness(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xRandomness(r, n, out);
}
int v_sleep(sqlite3_vfs* vfs, int micros) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xSleep(r, micros);
}
int v_current_time(sqlite3_vfs* vfs, double* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xCurrentTime(r, out);
}
int v_get_last_error(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  return r->xGetLastError ? r->xGetLastError(r, n, out) : 0;
}
int v_current_time_int64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  sqlite3_vfs* r = impl_of(vfs).real;
  if (r->iVersion >= 2 && r->xCurrentTimeInt64) return r->xCurrentTimeInt64(r, out);
  double days = 0;
  const int rc = r->xCurrentTime(r, &days);
  *out = static_cast<sqlite3_int64>(days * 86400000.0);
  return rc;
}

}  // namespace

FaultVfs::FaultVfs(std::string name, bool make_default) : impl_(std::make_unique<Impl>()) {
  Impl& v = *impl_;
  sqlite3_initialize();
  v.name = std::move(name);
  v.real = sqlite3_vfs_find("unix");
  if (v.real == nullptr) v.real = sqlite3_vfs_find(nullptr);
  if (v.real == nullptr) throw std::runtime_error("FaultVfs: SQLite has no default VFS");
  v.previous_default = sqlite3_vfs_find(nullptr);

  sqlite3_io_methods& m = v.methods;
  m.iVersion = 2;  // the WAL's shared memory; no memory-mapped reads (xFetch)
  m.xClose = f_close;
  m.xRead = f_read;
  m.xWrite = f_write;
  m.xTruncate = f_truncate;
  m.xSync = f_sync;
  m.xFileSize = f_file_size;
  m.xLock = f_lock;
  m.xUnlock = f_unlock;
  m.xCheckReservedLock = f_check_reserved_lock;
  m.xFileControl = f_file_control;
  m.xSectorSize = f_sector_size;
  m.xDeviceCharacteristics = f_device_characteristics;
  m.xShmMap = f_shm_map;
  m.xShmLock = f_shm_lock;
  m.xShmBarrier = f_shm_barrier;
  m.xShmUnmap = f_shm_unmap;

  sqlite3_vfs& x = v.vfs;
  x.iVersion = 2;
  x.szOsFile = static_cast<int>(sizeof(FaultFile)) + v.real->szOsFile;
  x.mxPathname = v.real->mxPathname;
  x.zName = v.name.c_str();
  x.pAppData = &v;
  x.xOpen = v_open;
  x.xDelete = v_delete;
  x.xAccess = v_access;
  x.xFullPathname = v_full_pathname;
  x.xDlOpen = v_dl_open;
  x.xDlError = v_dl_error;
  x.xDlSym = v_dl_sym;
  x.xDlClose = v_dl_close;
  x.xRandomness = v_randomness;
  x.xSleep = v_sleep;
  x.xCurrentTime = v_current_time;
  x.xGetLastError = v_get_last_error;
  x.xCurrentTimeInt64 = v_current_time_int64;
  if (sqlite3_vfs_register(&x, make_default ? 1 : 0) != SQLITE_OK) {
    throw std::runtime_error("FaultVfs: cannot register the VFS " + v.name);
  }
  v.made_default = make_default;
}

FaultVfs::~FaultVfs() {
  Impl& v = *impl_;
  sqlite3_vfs_unregister(&v.vfs);
  if (v.made_default && v.previous_default) sqlite3_vfs_register(v.previous_default, 1);
}

const std::string& FaultVfs::name() const { return impl_->name; }

void FaultVfs::power_cut(CutOptions options) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cut_at = 0;
  impl_->cut(options);
}

void FaultVfs::cut_at_operation(uint64_t n, CutOptions options) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cut_at = n == 0 ? 0 : impl_->operations + n;
  impl_->cut_options = options;
}

uint64_t FaultVfs::cuts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cuts;
}

uint64_t FaultVfs::operations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->operations;
}

uint64_t FaultVfs::syncs() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->syncs;
}

uint64_t FaultVfs::unsynced_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  uint64_t n = 0;
  for (const auto& [path, state] : impl_->files) {
    for (const Op& op : state.pending) n += op.data.size();
  }
  return n;
}

void FaultVfs::set_space(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->space = bytes;
}

uint64_t FaultVfs::full_failures() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->full_failures;
}

}  // namespace flowrt::testing
