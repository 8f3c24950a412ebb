#include "runtime/context_store.h"

#include <charconv>

namespace flowrt {

void ContextStore::add(std::shared_ptr<Context> ctx) {
  MutexLock lock(mu_);
  contexts_.push_back(std::move(ctx));
}

std::shared_ptr<Context> ContextStore::find(uint64_t seq) const {
  MutexLock lock(mu_);
  if (seq < first_seq_ || seq - first_seq_ >= contexts_.size()) return nullptr;
  return contexts_[seq - first_seq_];
}

std::shared_ptr<Context> ContextStore::find(std::string_view id) const {
  if (!id.starts_with("ctx-")) return nullptr;
  uint64_t seq = 0;
  auto r = std::from_chars(id.data() + 4, id.data() + id.size(), seq);
  if (r.ec != std::errc() || r.ptr != id.data() + id.size()) return nullptr;
  return find(seq);
}

std::vector<std::shared_ptr<Context>> ContextStore::all() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<Context>> out;
  out.reserve(contexts_.size());
  for (const auto& c : contexts_) {
    if (c) out.push_back(c);
  }
  return out;
}

size_t ContextStore::size() const {
  MutexLock lock(mu_);
  return contexts_.size();
}

void ContextStore::add_skipped(SkippedStart s) {
  MutexLock lock(mu_);
  skipped_.push_back(std::move(s));
}

std::vector<SkippedStart> ContextStore::skipped() const {
  MutexLock lock(mu_);
  return skipped_;
}

void ContextStore::set_retention(size_t n) {
  MutexLock lock(mu_);
  // Finished contexts are counted only while a limit is set: count them afresh.
  finished_ = 0;
  for (const auto& c : contexts_) finished_ += c && c->finished();
  retention_.store(n, std::memory_order_release);
  trim();
}

void ContextStore::on_finished() {
  // Without a retention limit there is nothing to count: no lock on the hot path.
  if (retention_.load(std::memory_order_acquire) == 0) return;
  MutexLock lock(mu_);
  ++finished_;
  if (finished_ > retention_.load(std::memory_order_relaxed)) trim();
}

uint64_t ContextStore::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

void ContextStore::trim() {
  const size_t retention = retention_.load(std::memory_order_relaxed);
  if (retention == 0) return;
  // Drop the oldest finished contexts; an unfinished one stops the trim at the front, and
  // finished ones behind it are dropped (left as holes) so that memory stays bounded.
  for (size_t i = 0; i < contexts_.size() && finished_ > retention; ++i) {
    std::shared_ptr<Context>& c = contexts_[i];
    if (c && c->finished()) {
      c.reset();
      --finished_;
      ++dropped_;
    }
  }
  while (!contexts_.empty() && !contexts_.front()) {
    contexts_.pop_front();
    ++first_seq_;
  }
}

}  // namespace flowrt
