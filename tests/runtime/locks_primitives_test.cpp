// The engine's own lock types (base/thread_annotations.h) under real threads: no lost
// update, no reader seeing a half-done write, no lost wake-up of a sleeping waiter. Every
// thread runs to completion whatever the interleaving; ThreadSanitizer checks the ordering.
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"

namespace flowrt {
namespace {

// Runs body(0) .. body(n - 1) on n threads and waits for them all.
void OnThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(body, t);
  for (std::thread& t : threads) t.join();
}

// Keeps the lock past a waiter's spin: the holder gives its core away a few times.
void HoldAWhile() {
  for (int i = 0; i < 3; ++i) std::this_thread::yield();
}

TEST(LockPrimitivesTest, SharedMutex_WritersAndReaders_SeeOnlyWholeWrites) {
  struct {
    SharedMutex mu;
    // Written together under mu; readers must never see them differ.
    long a GUARDED_BY(mu) = 0;
    long b GUARDED_BY(mu) = 0;
  } p;
  constexpr int kWriters = 3, kReaders = 3, kRounds = 20000;
  std::vector<long> torn(kReaders, 0);
  OnThreads(kWriters + kReaders, [&](int t) {
    for (int i = 0; i < kRounds; ++i) {
      if (t < kWriters) {
        WriterLock lock(p.mu);
        ++p.a;
        ++p.b;
      } else {
        ReaderLock lock(p.mu);
        if (p.a != p.b) ++torn[static_cast<size_t>(t - kWriters)];
      }
    }
  });
  WriterLock lock(p.mu);
  EXPECT_EQ(p.a, long{kWriters} * kRounds);
  EXPECT_EQ(p.b, long{kWriters} * kRounds);
  for (long n : torn) EXPECT_EQ(n, 0);
}

TEST(LockPrimitivesTest, SharedMutex_AHolderThatKeepsItLong_LetsSleepersIn) {
  // Waiters outlast their spin and sleep; every release must wake them.
  struct {
    SharedMutex mu;
    long done GUARDED_BY(mu) = 0;
  } s;
  OnThreads(4, [&](int t) {
    for (int i = 0; i < 200; ++i) {
      if (t % 2 == 0) {
        WriterLock lock(s.mu);
        HoldAWhile();
        ++s.done;
      } else {
        ReaderLock lock(s.mu);
        HoldAWhile();
      }
    }
  });
  WriterLock lock(s.mu);
  EXPECT_EQ(s.done, 400);
}

TEST(LockPrimitivesTest, SpinMutex_NoLostUpdate) {
  struct {
    SpinMutex mu;
    long n GUARDED_BY(mu) = 0;
  } s;
  OnThreads(4, [&](int) {
    for (int i = 0; i < 50000; ++i) {
      SpinMutexLock lock(s.mu);
      ++s.n;
    }
  });
  SpinMutexLock lock(s.mu);
  EXPECT_EQ(s.n, 200000);
}

TEST(LockPrimitivesTest, SpinMutex_ManyWaitersOfAHolderThatKeepsItLong_AreEachLetIn) {
  // More threads than cores, each holding past the others' spin: most waiters sleep, and
  // each unlock wakes one of them; a wake-up lost there leaves a thread asleep for ever
  // (the test's timeout).
  struct {
    SpinMutex mu;
    long n GUARDED_BY(mu) = 0;
  } s;
  constexpr int kThreads = 16, kRounds = 300;
  OnThreads(kThreads, [&](int) {
    for (int i = 0; i < kRounds; ++i) {
      SpinMutexLock lock(s.mu);
      const long before = s.n;
      HoldAWhile();
      s.n = before + 1;
    }
  });
  SpinMutexLock lock(s.mu);
  EXPECT_EQ(s.n, long{kThreads} * kRounds);
}

}  // namespace
}  // namespace flowrt
