// ContextEndWatch: callbacks waiting for a context to end (Engine::on_context_end), so that
// a caller waiting on one (an HTTP call with ?wait=, a cancel) is told at once, not when it
// next looks.
//
// Contract: a callback added for a context is called once, on the thread that ends it,
// right after the context counts as ended (its record says so), unless it is removed
// first; callbacks for a context that already ended, or never will, are not called (the
// caller looks at the context after adding, and removes the callback when it stops
// waiting). The cost when nothing is watched is one atomic load per ended context.
//
// Thread-safety: every method from any thread. The callbacks are called without the
// watch's mutex held; remove() does not wait for a callback that is being called.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/thread_annotations.h"

namespace flowrt {

class ContextEndWatch {
 public:
  // Watches context `id`: `fn` is called once when it ends. Returns a token for remove().
  uint64_t add(std::string id, std::function<void()> fn) EXCLUDES(mu_);
  // Stops watching (nothing if the callback was called already).
  void remove(uint64_t token) EXCLUDES(mu_);
  // Context `id` ended: calls and forgets its callbacks.
  void ended(std::string_view id) EXCLUDES(mu_);
  // Callbacks waiting (for tests).
  size_t size() const { return count_.load(); }

 private:
  struct Watcher {
    std::string id;
    std::function<void()> fn;
  };
  Mutex mu_;
  uint64_t next_token_ GUARDED_BY(mu_) = 0;
  std::unordered_map<uint64_t, Watcher> by_token_ GUARDED_BY(mu_);
  std::unordered_multimap<std::string, uint64_t> by_id_ GUARDED_BY(mu_);
  // by_token_'s size; read without the mutex by ended(), written under it. Sequentially
  // consistent with the adder's later look at the context (add, then look; end, then load).
  std::atomic<size_t> count_{0};
};

}  // namespace flowrt
