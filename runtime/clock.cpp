#include "runtime/clock.h"

#include <time.h>

#include <chrono>

namespace flowrt {
namespace {

// Engine time has millisecond resolution; the coarse clock is read without a system call
// and is at most one kernel tick behind.
TimeMs system_now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<TimeMs>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

EngineClock::EngineClock(bool is_virtual, TimeMs start) : virtual_(is_virtual), now_(start) {}

TimeMs EngineClock::now() const { return virtual_ ? now_.load(std::memory_order_acquire) : system_now(); }

void EngineClock::set(TimeMs t) {
  TimeMs current = now_.load(std::memory_order_relaxed);
  while (t > current && !now_.compare_exchange_weak(current, t, std::memory_order_acq_rel)) {
  }
}

TimerHandle TimerQueue::add(TimeMs deadline, bool context_timer, Fire fire) {
  MutexLock lock(mu_);
  const Key key{deadline, next_seq_++};
  timers_.emplace(key, Entry{context_timer, std::move(fire)});
  // Wake the timer thread only if it sleeps past this deadline. (Not "if this is the
  // earliest timer": a lease granted as another is cancelled is nearly always the earliest,
  // and waking the thread for it cost a context switch per lock hand-off.)
  if (sleeper_wakes_at_ != kNoSleeper && deadline < sleeper_wakes_at_) {
    sleeper_wakes_at_ = deadline;
    changed_.notify_all();
  }
  return TimerHandle{key.first, key.second};
}

void TimerQueue::cancel(const TimerHandle& handle) {
  if (!handle.valid()) return;
  MutexLock lock(mu_);
  timers_.erase(Key{handle.deadline, handle.seq});
}

std::optional<TimeMs> TimerQueue::next_deadline(bool context_only) const {
  MutexLock lock(mu_);
  return next_deadline_locked(context_only);
}

std::optional<TimeMs> TimerQueue::next_deadline_locked(bool context_only) const {
  for (const auto& [key, entry] : timers_) {
    if (!context_only || entry.context_timer) return key.first;
  }
  return std::nullopt;
}

std::vector<TimerQueue::Fire> TimerQueue::take_due(TimeMs now, bool context_only) {
  MutexLock lock(mu_);
  std::vector<Fire> due;
  for (auto it = timers_.begin(); it != timers_.end() && it->first.first <= now;) {
    if (context_only && !it->second.context_timer) {
      ++it;
      continue;
    }
    due.push_back(std::move(it->second.fire));
    it = timers_.erase(it);
  }
  return due;
}

TimerQueue::Due TimerQueue::take_due_within(TimeMs now, size_t max_schedules) {
  MutexLock lock(mu_);
  Due due;
  for (auto it = timers_.begin(); it != timers_.end() && it->first.first <= now;) {
    if (!it->second.context_timer) {
      if (due.schedules == max_schedules) {
        due.schedules_left = true;
        ++it;
        continue;
      }
      ++due.schedules;
    }
    due.fires.push_back(std::move(it->second.fire));
    it = timers_.erase(it);
  }
  return due;
}

size_t TimerQueue::size() const {
  MutexLock lock(mu_);
  return timers_.size();
}

bool TimerQueue::contains(const TimerHandle& handle) const {
  MutexLock lock(mu_);
  return timers_.count(Key{handle.deadline, handle.seq}) > 0;
}

std::vector<TimerQueue::Fire> TimerQueue::wait_due(const EngineClock& clock) {
  MutexLock lock(mu_);
  while (!stopped_) {
    const TimeMs now = clock.now();
    if (!timers_.empty() && timers_.begin()->first.first <= now) {
      std::vector<Fire> due;
      for (auto it = timers_.begin(); it != timers_.end() && it->first.first <= now;) {
        due.push_back(std::move(it->second.fire));
        it = timers_.erase(it);
      }
      firing_ += due.size();
      return due;
    }
    // A timer cancelled meanwhile leaves this wait to end early and find nothing due.
    if (timers_.empty()) {
      sleeper_wakes_at_ = kSleepsForever;
      changed_.wait(mu_);
    } else {
      // Sleep until the earliest deadline, but at most kMaxSleepMs at a time: a deadline
      // centuries away would overflow the steady clock's time_point (and wake at once,
      // again and again), and the system clock may be set while it sleeps.
      const TimeMs deadline = timers_.begin()->first.first;
      const TimeMs wait = deadline > now + kMaxSleepMs ? kMaxSleepMs : deadline - now;
      sleeper_wakes_at_ = now + wait;
      changed_.wait_until(mu_, std::chrono::steady_clock::now() + std::chrono::milliseconds(wait));
    }
    sleeper_wakes_at_ = kNoSleeper;
  }
  return {};
}

void TimerQueue::fired(size_t n) {
  MutexLock lock(mu_);
  firing_ -= n;
}

TimerQueue::Pending TimerQueue::pending(bool context_only) const {
  MutexLock lock(mu_);
  Pending p;
  p.next = next_deadline_locked(context_only);
  p.firing = firing_ > 0;
  return p;
}

void TimerQueue::stop() {
  MutexLock lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

}  // namespace flowrt
