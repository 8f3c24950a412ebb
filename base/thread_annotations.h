// Clang thread-safety annotations and an annotated mutex.
//
// With clang and -Wthread-safety the compiler checks that every member marked
// GUARDED_BY(mu_) is only touched with mu_ held, and that functions marked REQUIRES(mu_)
// are only called with it held. With other compilers the annotations compile to nothing.
#pragma once

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>

#if defined(__clang__)
#define FLOWRT_TSA(x) __attribute__((x))
#else
#define FLOWRT_TSA(x)
#endif

#define CAPABILITY(x) FLOWRT_TSA(capability(x))
#define SCOPED_CAPABILITY FLOWRT_TSA(scoped_lockable)
#define GUARDED_BY(x) FLOWRT_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) FLOWRT_TSA(pt_guarded_by(x))
#define REQUIRES(...) FLOWRT_TSA(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) FLOWRT_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FLOWRT_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) FLOWRT_TSA(try_acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) FLOWRT_TSA(acquire_shared_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) FLOWRT_TSA(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) FLOWRT_TSA(release_generic_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) FLOWRT_TSA(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) FLOWRT_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) FLOWRT_TSA(assert_capability(x))
#define ACQUIRED_BEFORE(...) FLOWRT_TSA(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) FLOWRT_TSA(acquired_after(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS FLOWRT_TSA(no_thread_safety_analysis)

namespace flowrt {

// std::mutex with capability annotations.
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the thread-safety analysis that the caller holds this (no check at run time).
  void assert_held() const ASSERT_CAPABILITY(this) {}
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A reader-writer lock for short critical sections (a record table: a hash lookup, a row
// copied or replaced). One atomic word holds a writer bit, a "writer waits" hint that holds
// new readers back, a "sleepers" bit and the count of readers. A waiter spins for about a
// microsecond, since the holder is usually about to let go, and then sleeps on the word
// (std::atomic::wait, a futex). Uncontended, lock and unlock are one atomic operation each;
// unlock makes a system call only when a thread sleeps. Not fair; not for sections that
// block or run long.
class CAPABILITY("mutex") SharedMutex {
 public:
  void lock() ACQUIRE() {
    uint32_t s = 0;
    if (!state_.compare_exchange_strong(s, kWriter, std::memory_order_acquire)) lock_contended();
  }
  void unlock() RELEASE() {
    if (state_.fetch_and(~(kWriter | kSleepers), std::memory_order_release) & kSleepers) state_.notify_all();
  }
  void lock_shared() ACQUIRE_SHARED() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if ((s & (kWriter | kWriterWaits)) ||
        !state_.compare_exchange_strong(s, s + kReader, std::memory_order_acquire)) {
      lock_shared_contended();
    }
  }
  void unlock_shared() RELEASE_SHARED() {
    const uint32_t before = state_.fetch_sub(kReader, std::memory_order_release);
    if ((before & kSleepers) && (before >> kReaderShift) == 1) {
      // The last reader out wakes the sleepers (a writer among them).
      state_.fetch_and(~kSleepers, std::memory_order_relaxed);
      state_.notify_all();
    }
  }

 private:
  static constexpr uint32_t kWriter = 1, kWriterWaits = 2, kSleepers = 4, kReaderShift = 3, kReader = 1u << kReaderShift;
  static constexpr int kSpins = 40;
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  // Sleeps until the word is no longer `seen` (with the sleepers bit set first).
  void sleep(uint32_t seen) {
    if (!(seen & kSleepers) &&
        !state_.compare_exchange_strong(seen, seen | kSleepers, std::memory_order_relaxed)) {
      return;  // changed meanwhile: look again
    }
    state_.wait(seen | kSleepers, std::memory_order_relaxed);
  }
  void lock_contended() {
    for (int spins = 0;; ++spins) {
      uint32_t s = state_.load(std::memory_order_relaxed);
      if (!(s & kWriter) && (s >> kReaderShift) == 0) {
        // Free: take it, dropping the hint (another waiting writer sets it again).
        if (state_.compare_exchange_weak(s, kWriter | (s & kSleepers), std::memory_order_acquire)) return;
        continue;
      }
      if (!(s & kWriterWaits)) {
        state_.fetch_or(kWriterWaits, std::memory_order_relaxed);
        continue;
      }
      if (spins < kSpins) {
        pause();
      } else {
        sleep(s);
      }
    }
  }
  void lock_shared_contended() {
    for (int spins = 0;; ++spins) {
      uint32_t s = state_.load(std::memory_order_relaxed);
      if (!(s & (kWriter | kWriterWaits))) {
        if (state_.compare_exchange_weak(s, s + kReader, std::memory_order_acquire)) return;
        continue;
      }
      if (spins < kSpins) {
        pause();
      } else {
        sleep(s);
      }
    }
  }
  std::atomic<uint32_t> state_{0};
};

// An exclusive lock that spins briefly and then sleeps, for hot locks that no condition
// variable waits on (the commit lock). A std::mutex sleeps at once, and waking a sleeper
// costs a system call and a context switch. The word is 0 (free), 1 (held) or 2 (held,
// perhaps with sleepers: "Futexes Are Tricky", Drepper, mutex 3): an unlock wakes one
// sleeper, and only when the word said 2, so many threads queued on a busy lock are not
// all woken by each unlock to find it taken again. Sleeps on a futex of its own on Linux
// (std::atomic::wait on others: libstdc++'s spins with sched_yield first). Not fair.
class CAPABILITY("mutex") SpinMutex {
 public:
  void lock() ACQUIRE() {
    uint32_t s = kFree;
    if (!state_.compare_exchange_strong(s, kHeld, std::memory_order_acquire)) lock_contended(s);
  }
  void unlock() RELEASE() {
    if (state_.exchange(kFree, std::memory_order_release) == kHeldWithSleepers) wake_one();
  }

 private:
  static constexpr uint32_t kFree = 0, kHeld = 1, kHeldWithSleepers = 2;
  static constexpr int kSpins = 40, kYields = 12;
  void lock_contended(uint32_t s) {
    // Briefly: the holder is usually about to let go. Then a few turns of giving the core
    // away (the holder may be waiting for it: more runnable threads than cores). Not when
    // others sleep already: many waiters take turns, and spinning only burns their cores.
    for (int spins = 0; spins < kSpins + kYields; ++spins) {
      if (spins < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();
      }
      s = state_.load(std::memory_order_relaxed);
      if (s == kFree && state_.compare_exchange_weak(s, kHeld, std::memory_order_acquire)) return;
      if (s == kHeldWithSleepers) break;  // others sleep already: a queue, not a hand-off
    }
    // Then asleep, marking the word so that the unlock wakes one; whoever takes it from
    // here marks it too, since other sleepers may remain.
    if (s != kHeldWithSleepers) s = state_.exchange(kHeldWithSleepers, std::memory_order_acquire);
    while (s != kFree) {
      sleep_while_marked();
      s = state_.exchange(kHeldWithSleepers, std::memory_order_acquire);
    }
  }
#if defined(__linux__)
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
  uint32_t* word() { return reinterpret_cast<uint32_t*>(&state_); }
  // Returns at once when the word is no longer kHeldWithSleepers, and may return early.
  void sleep_while_marked() {
    syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, kHeldWithSleepers, nullptr, nullptr, 0);
  }
  void wake_one() { syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }
#else
  void sleep_while_marked() { state_.wait(kHeldWithSleepers, std::memory_order_relaxed); }
  void wake_one() { state_.notify_one(); }
#endif
  std::atomic<uint32_t> state_{kFree};
};

class SCOPED_CAPABILITY SpinMutexLock {
 public:
  explicit SpinMutexLock(SpinMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~SpinMutexLock() RELEASE() { mu_.unlock(); }
  SpinMutexLock(const SpinMutexLock&) = delete;
  SpinMutexLock& operator=(const SpinMutexLock&) = delete;

 private:
  SpinMutex& mu_;
};

// Holds a SharedMutex exclusively for its scope.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A small spin lock for short critical sections that are rarely contended (a context's
// record: its runner writes, readers take snapshots). Spins briefly, then yields.
class CAPABILITY("mutex") SpinLock {
 public:
  void lock() ACQUIRE() {
    for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() RELEASE() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

class SCOPED_CAPABILITY SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock& lock) ACQUIRE(lock) : lock_(lock) { lock_.lock(); }
  ~SpinLockGuard() RELEASE() { lock_.unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock& lock_;
};

// A condition variable that waits on a Mutex the caller holds.
class CondVar {
 public:
  void wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  template <class Clock, class Duration>
  void wait_until(Mutex& mu, const std::chrono::time_point<Clock, Duration>& t) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    cv_.wait_until(lock, t);
    lock.release();
  }
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace flowrt
