// LockDeadlines: the times at which a lock lease runs out or a queued lock request gives
// up, in time order. The Dispatcher keeps one engine timer armed at the earliest of them
// instead of one timer per lease and per request: a lock hand-off replaces one holder's
// lease by the next one's, nearly always in the same millisecond, so the timer rarely
// needs re-arming (each timer add and cancel cost a lock, an allocation and a closure).
//
// Every hand-off cancels the next holder's give-up deadline, added long before: with a
// million requests queued, a search of any ordered structure of them is a walk through
// cold memory. So a cancel does not search. Deadlines live in a slab of nodes, reused; a
// handle names its node and the node's generation (bumped each time the node is freed),
// so a spent handle is recognised and ignored. The nodes of one millisecond form a list in
// the order added (ties come out first added first), and an ordered map holds one entry
// per millisecond that has any. The slab grows to the most deadlines pending at once; a
// slab of more than kKeptNodes is given back once none is pending (the end of a burst of
// queued requests), and new nodes then start at a generation above every one given out
// before. A smaller one is kept, so that taking and releasing one lock at a time does
// not allocate the slab anew each time.
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
  TimerHandle add(TimeMs at, LockDeadline deadline);
  // Harmless for a handle already taken, already cancelled or never valid.
  void cancel(const TimerHandle& h);
  std::optional<TimeMs> earliest() const {
    if (by_ms_.empty()) return std::nullopt;
    return by_ms_.begin()->first;
  }
  // Removes and returns the deadlines at or before `now`, earliest first, ties in the
  // order they were added.
  std::vector<LockDeadline> take_due(TimeMs now);
  size_t size() const { return live_; }
  // Nodes allocated, free ones included: the most deadlines pending at once since the
  // slab was last given back.
  size_t capacity() const { return nodes_.size(); }
  static constexpr size_t kKeptNodes = 1024;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    uint32_t generation = 0;  // bumped when freed: a handle matches only while it is live
    uint32_t prev = kNone;  // within its millisecond, in the order added
    uint32_t next = kNone;
    TimeMs at = 0;
    LockDeadline deadline;
  };
  struct Millisecond {
    uint32_t first = kNone;
    uint32_t last = kNone;
  };

  uint32_t allocate();
  void release(uint32_t index);
  // With nothing pending: lets go of a slab larger than kKeptNodes.
  void give_back();

  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  std::map<TimeMs, Millisecond> by_ms_;  // never holds an empty millisecond
  size_t live_ = 0;
  uint32_t fresh_generation_ = 0;  // above every generation of a slab given back
};

}  // namespace flowrt
