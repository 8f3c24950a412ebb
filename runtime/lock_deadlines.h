// LockDeadlines: the times at which a lock lease runs out or a queued lock request gives
// up, in time order. The Dispatcher keeps one engine timer armed at the earliest of them
// instead of one timer per lease and per request: a lock hand-off replaces one holder's
// lease by the next one's, nearly always in the same millisecond, so the timer rarely
// needs re-arming (each timer add and cancel cost a lock, an allocation and a closure).
// Plain data: not thread-safe; the Dispatcher guards it with its commit lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/clock.h"

namespace flowrt {

class Context;

struct LockDeadline {
  enum class Kind { kLease, kGiveUp };
  Kind kind = Kind::kLease;
  std::shared_ptr<Context> context;
  std::string name;  // the lock
  int64_t id = 0;    // kLease: the grant's token; kGiveUp: the request's wait id
};

class LockDeadlines {
 public:
  // The handle identifies the deadline for cancel (as a TimerHandle identifies a timer).
  TimerHandle add(TimeMs at, LockDeadline deadline) {
    const TimerHandle h{at, next_seq_++};
    by_time_.emplace(std::make_pair(h.deadline, h.seq), std::move(deadline));
    return h;
  }
  // Harmless for a handle already taken or never valid.
  void cancel(const TimerHandle& h) {
    if (h.valid()) by_time_.erase(std::make_pair(h.deadline, h.seq));
  }
  std::optional<TimeMs> earliest() const {
    if (by_time_.empty()) return std::nullopt;
    return by_time_.begin()->first.first;
  }
  // Removes and returns the deadlines at or before `now`, earliest first.
  std::vector<LockDeadline> take_due(TimeMs now) {
    std::vector<LockDeadline> due;
    while (!by_time_.empty() && by_time_.begin()->first.first <= now) {
      due.push_back(std::move(by_time_.begin()->second));
      by_time_.erase(by_time_.begin());
    }
    return due;
  }
  size_t size() const { return by_time_.size(); }

 private:
  std::map<std::pair<TimeMs, uint64_t>, LockDeadline> by_time_;
  uint64_t next_seq_ = 0;
};

}  // namespace flowrt
