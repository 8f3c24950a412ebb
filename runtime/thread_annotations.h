// Clang thread-safety annotations and an annotated mutex.
//
// With clang and -Wthread-safety the compiler checks that every member marked
// GUARDED_BY(mu_) is only touched with mu_ held, and that functions marked REQUIRES(mu_)
// are only called with it held. With other compilers the annotations compile to nothing.
#pragma once

#include <atomic>
#include <condition_variable>
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

// std::shared_mutex with capability annotations: many readers or one writer.
class CAPABILITY("mutex") SharedMutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
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
