// The engine's own lock types (runtime/thread_annotations.h) under real threads: no lost
// update, no reader seeing a half-done write, no lost wake-up of a sleeping waiter. Every
// thread runs to completion whatever the interleaving; ThreadSanitizer checks the ordering.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/thread_annotations.h"

namespace flowrt {
namespace {

struct Pair {
  SharedMutex mu;
  // Written together under mu; readers must never see them differ.
  long a GUARDED_BY(mu) = 0;
  long b GUARDED_BY(mu) = 0;
};

TEST(LockPrimitivesTest, SharedMutex_WritersAndReaders_SeeOnlyWholeWrites) {
  Pair p;
  constexpr int kWriters = 3, kReaders = 3, kRounds = 20000;
  std::vector<std::thread> threads;
  std::vector<long> torn(kReaders, 0);
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        WriterLock lock(p.mu);
        ++p.a;
        ++p.b;
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < kRounds; ++i) {
        ReaderLock lock(p.mu);
        if (p.a != p.b) ++torn[static_cast<size_t>(r)];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  WriterLock lock(p.mu);
  EXPECT_EQ(p.a, long{kWriters} * kRounds);
  EXPECT_EQ(p.b, long{kWriters} * kRounds);
  for (long n : torn) EXPECT_EQ(n, 0);
}

// Keeps the lock past a waiter's spin: the holder gives its core away a few times.
void HoldAWhile() {
  for (int i = 0; i < 3; ++i) std::this_thread::yield();
}

TEST(LockPrimitivesTest, SharedMutex_AHolderThatKeepsItLong_LetsSleepersIn) {
  // Waiters outlast their spin and sleep; every release must wake them.
  struct {
    SharedMutex mu;
    long done GUARDED_BY(mu) = 0;
  } s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
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
  }
  for (std::thread& t : threads) t.join();
  WriterLock lock(s.mu);
  EXPECT_EQ(s.done, 400);
}

TEST(LockPrimitivesTest, SpinMutex_NoLostUpdate) {
  struct {
    SpinMutex mu;
    long n GUARDED_BY(mu) = 0;
  } s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50000; ++i) {
        SpinMutexLock lock(s.mu);
        ++s.n;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  SpinMutexLock lock(s.mu);
  EXPECT_EQ(s.n, 200000);
}

}  // namespace
}  // namespace flowrt
