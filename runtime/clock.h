// EngineClock and TimerQueue: engine time, real or virtual, and the timers that run on it.
//
// A virtual clock moves only when the engine's advance/settle sets it, so waits, lock
// delays, schedules and timeouts are exact and cost no real time. A real clock follows the
// system clock (read coarsely: within a kernel tick). Both are safe for concurrent use.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "plans/time.h"
#include "base/thread_annotations.h"

namespace flowrt {

class EngineClock {
 public:
  EngineClock(bool is_virtual, TimeMs start);
  bool is_virtual() const { return virtual_; }
  TimeMs now() const;
  // Virtual clocks only; never moves backwards.
  void set(TimeMs t);
  // Virtual: sets the clock to `t`, earlier or later, before the engine starts (a store's
  // clock goes on from where it stood).
  void restore(TimeMs t) { now_.store(t, std::memory_order_release); }

 private:
  const bool virtual_;
  std::atomic<TimeMs> now_;
};

// Identifies a timer so that it can be cancelled.
struct TimerHandle {
  TimeMs deadline = -1;
  uint64_t seq = 0;
  bool valid() const { return deadline >= 0; }
};

// Timers ordered by deadline, then by the order they were added. "Context" timers are
// those a context waits on (waits, timeouts, lock retries and leases); settle moves the
// clock only to those. Schedule timers fire only when advance passes them.
class TimerQueue {
 public:
  using Fire = std::function<void()>;

  TimerHandle add(TimeMs deadline, bool context_timer, Fire fire) EXCLUDES(mu_);
  // Removes a timer that has not fired; harmless when it has.
  void cancel(const TimerHandle& handle) EXCLUDES(mu_);
  std::optional<TimeMs> next_deadline(bool context_only) const EXCLUDES(mu_);
  // Removes and returns the timers due at or before `now`, in order.
  std::vector<Fire> take_due(TimeMs now, bool context_only) EXCLUDES(mu_);
  // What take_due_within took: the timers to fire in order, how many of them are schedule
  // timers, and whether a schedule timer due by `now` was left queued for want of budget.
  struct Due {
    std::vector<Fire> fires;
    size_t schedules = 0;
    bool schedules_left = false;
  };
  // As take_due(now, false), but takes at most `max_schedules` schedule timers; the rest
  // stay queued, in order, and fire when taken later.
  Due take_due_within(TimeMs now, size_t max_schedules) EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);
  // Whether `handle` is still queued: added, and neither fired (taken) nor cancelled.
  bool contains(const TimerHandle& handle) const EXCLUDES(mu_);

  // For a real clock: blocks until a timer is due at `clock.now()` or stop() is called.
  // Sleeps (never spins), at most kMaxSleepMs at a time, whatever the deadlines.
  // The timers returned count as firing until the caller reports them fired().
  std::vector<Fire> wait_due(const EngineClock& clock) EXCLUDES(mu_);
  void fired(size_t n) EXCLUDES(mu_);
  // What a settle waits for, read in one step: the next deadline (as next_deadline), and
  // whether timers taken by wait_due have not been reported fired yet (their effects, a
  // wake-up or a lease ended, have not happened yet).
  struct Pending {
    std::optional<TimeMs> next;
    bool firing = false;
  };
  Pending pending(bool context_only) const EXCLUDES(mu_);
  void stop() EXCLUDES(mu_);

 private:
  struct Entry {
    bool context_timer;
    Fire fire;
  };
  using Key = std::pair<TimeMs, uint64_t>;
  std::optional<TimeMs> next_deadline_locked(bool context_only) const REQUIRES(mu_);

  mutable Mutex mu_;
  CondVar changed_;
  std::map<Key, Entry> timers_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;
  // When the thread in wait_due will wake by itself, or kNoSleeper.
  static constexpr TimeMs kNoSleeper = -1;
  static constexpr TimeMs kSleepsForever = INT64_MAX;
  static constexpr TimeMs kMaxSleepMs = 1000;
  TimeMs sleeper_wakes_at_ GUARDED_BY(mu_) = kNoSleeper;
  bool stopped_ GUARDED_BY(mu_) = false;
  size_t firing_ GUARDED_BY(mu_) = 0;
};

}  // namespace flowrt
