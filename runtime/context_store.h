// ContextStore: every context the engine started (by seq), and every skipped start.
//
// Owns the contexts (shared). Contexts are added in seq order under the commit lock;
// readers may list and look them up at any time. With a retention limit, the oldest
// finished contexts are dropped and counted. Thread-safety: all methods take mu_.
#pragma once

#include <cstdint>
#include <deque>
#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "plans/value.h"
#include "runtime/context.h"
#include "runtime/thread_annotations.h"

namespace flowrt {

// A start that a runtime rule prevented (SPEC section 9).
struct SkippedStart {
  Value flow;
  Value reason;  // run_once, already_running, direct_recursion, indirect_recursion_limit
  Value event;   // the trigger event, as in a record's "trigger"
  Value cause;   // {"context", "flow"} or null
};

class ContextStore {
 public:
  // Appends a context; its seq must be the next one. REQUIRES: the commit lock (seq order).
  void add(std::shared_ptr<Context> ctx) EXCLUDES(mu_);
  std::shared_ptr<Context> find(std::string_view id) const EXCLUDES(mu_);
  std::shared_ptr<Context> find(uint64_t seq) const EXCLUDES(mu_);
  std::vector<std::shared_ptr<Context>> all() const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

  void add_skipped(SkippedStart s) EXCLUDES(mu_);
  std::vector<SkippedStart> skipped() const EXCLUDES(mu_);

  // Keep at most `n` finished contexts (0 = all); called as contexts finish.
  void set_retention(size_t n) EXCLUDES(mu_);
  void on_finished() EXCLUDES(mu_);
  uint64_t dropped() const EXCLUDES(mu_);

 private:
  void trim() REQUIRES(mu_);

  mutable Mutex mu_;
  std::deque<std::shared_ptr<Context>> contexts_ GUARDED_BY(mu_);  // contexts_[i] has seq first_seq_ + i
  uint64_t first_seq_ GUARDED_BY(mu_) = 1;
  std::vector<SkippedStart> skipped_ GUARDED_BY(mu_);
  std::atomic<size_t> retention_{0};  // written under mu_; read without it on the hot path
  size_t finished_ GUARDED_BY(mu_) = 0;
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
};

}  // namespace flowrt
