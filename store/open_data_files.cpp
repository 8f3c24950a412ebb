#include "store/open_data_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "base/thread_annotations.h"

namespace flowrt {
namespace {

// What the process has of one data file: the stores open (or opening) and the descriptors
// waiting for the last of them to leave.
struct OpenFile {
  int stores = 0;
  bool writer = false;
  std::vector<int> parked;
};

struct OpenFiles {
  Mutex mu;
  std::map<OpenDataFiles::Key, OpenFile> files GUARDED_BY(mu);
};

OpenFiles& open_files() {
  static OpenFiles* files = new OpenFiles;  // never destroyed: stores may close at exit
  return *files;
}

}  // namespace

OpenDataFiles::Key OpenDataFiles::key_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return Key{st.st_dev, st.st_ino};
}

OpenDataFiles::Entry OpenDataFiles::enter(Key key, bool writer) {
  OpenFiles& all = open_files();
  MutexLock lock(all.mu);
  OpenFile& file = all.files[key];
  Entry entry;
  entry.key_ = key;
  if (writer && file.writer) {
    if (file.stores == 0) all.files.erase(key);
    return entry;
  }
  ++file.stores;
  file.writer = file.writer || writer;
  entry.writer_ = writer;
  entry.entered_ = true;
  return entry;
}

size_t OpenDataFiles::parked(Key key) {
  OpenFiles& all = open_files();
  MutexLock lock(all.mu);
  auto it = all.files.find(key);
  return it == all.files.end() ? 0 : it->second.parked.size();
}

OpenDataFiles::Entry& OpenDataFiles::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    leave();
    key_ = other.key_;
    writer_ = other.writer_;
    entered_ = other.entered_;
    other.entered_ = false;
  }
  return *this;
}

void OpenDataFiles::Entry::close_fd(int fd) const {
  if (fd < 0) return;
  OpenFiles& all = open_files();
  MutexLock lock(all.mu);
  auto it = all.files.find(key_);
  if (it != all.files.end() && it->second.stores > 0) {
    it->second.parked.push_back(fd);
    return;
  }
  ::close(fd);  // under the mutex: a store entering next opens its connection after this
}

int OpenDataFiles::Entry::take_parked_fd() const {
  if (!entered_) return -1;
  OpenFiles& all = open_files();
  MutexLock lock(all.mu);
  auto it = all.files.find(key_);
  if (it == all.files.end() || it->second.parked.empty()) return -1;
  const int fd = it->second.parked.back();
  it->second.parked.pop_back();
  return fd;
}

void OpenDataFiles::Entry::leave() {
  if (!entered_) return;
  entered_ = false;
  OpenFiles& all = open_files();
  MutexLock lock(all.mu);
  auto it = all.files.find(key_);
  if (it == all.files.end()) return;
  OpenFile& file = it->second;
  if (writer_) file.writer = false;
  if (--file.stores > 0) return;
  // Closed under the mutex: a store entering next opens its connection after these went.
  for (int fd : file.parked) ::close(fd);
  all.files.erase(it);
}

}  // namespace flowrt
