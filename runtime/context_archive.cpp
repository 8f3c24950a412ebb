#include "runtime/context_archive.h"
#include "store/store.h"


namespace flowrt {

void ContextArchive::add(uint64_t seq, std::string flow, Value record) {
  MutexLock lock(mu_);
  by_seq_[seq] = Entry{std::move(flow), std::move(record)};
}

void ContextArchive::remove(uint64_t seq) {
  MutexLock lock(mu_);
  by_seq_.erase(seq);
}

std::optional<Value> ContextArchive::find(std::string_view id) const {
  const std::optional<uint64_t> seq = context_seq_of(id);
  if (!seq) return std::nullopt;
  MutexLock lock(mu_);
  auto it = by_seq_.find(*seq);
  if (it == by_seq_.end()) return std::nullopt;
  return it->second.record;
}

std::vector<std::pair<uint64_t, Value>> ContextArchive::list(std::string_view flow) const {
  MutexLock lock(mu_);
  std::vector<std::pair<uint64_t, Value>> out;
  for (const auto& [seq, e] : by_seq_) {
    if (flow.empty() || e.flow == flow) out.emplace_back(seq, e.record);
  }
  return out;
}

size_t ContextArchive::size() const {
  MutexLock lock(mu_);
  return by_seq_.size();
}

}  // namespace flowrt
