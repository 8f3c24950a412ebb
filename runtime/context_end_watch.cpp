#include "runtime/context_end_watch.h"

#include <utility>
#include <vector>

namespace flowrt {

uint64_t ContextEndWatch::add(std::string id, std::function<void()> fn) {
  MutexLock lock(mu_);
  const uint64_t token = ++next_token_;
  by_id_.emplace(id, token);
  by_token_.emplace(token, Watcher{std::move(id), std::move(fn)});
  count_.store(by_token_.size());
  return token;
}

void ContextEndWatch::remove(uint64_t token) {
  MutexLock lock(mu_);
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return;
  auto [first, last] = by_id_.equal_range(it->second.id);
  for (auto i = first; i != last; ++i) {
    if (i->second == token) {
      by_id_.erase(i);
      break;
    }
  }
  by_token_.erase(it);
  count_.store(by_token_.size());
}

void ContextEndWatch::ended(std::string_view id) {
  if (count_.load() == 0) return;
  std::vector<std::function<void()>> due;
  {
    MutexLock lock(mu_);
    auto [first, last] = by_id_.equal_range(std::string(id));
    for (auto i = first; i != last; ++i) {
      auto w = by_token_.find(i->second);
      due.push_back(std::move(w->second.fn));
      by_token_.erase(w);
    }
    by_id_.erase(first, last);
    count_.store(by_token_.size());
  }
  for (auto& fn : due) fn();
}

}  // namespace flowrt
