// WorkerPool's run-next slot under real threads. The pool never looks inside a Context, so
// the contexts here are distinct addresses; the runner says what each one does. Every
// test waits on a latch the work itself opens, never on time.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/event_queue.h"
#include "runtime/watchdog.h"
#include "runtime/worker_pool.h"

namespace flowrt {
namespace {

class WorkerPoolTest : public ::testing::Test {
 protected:
  static constexpr int kContexts = 200;

  Context* ctx(int i) { return reinterpret_cast<Context*>(&slots_[static_cast<size_t>(i)]); }
  int index_of(Context* c) { return static_cast<int>(reinterpret_cast<char*>(c) - slots_.data()); }

  // Starts `threads` workers; `body(i)` runs context i on a worker.
  void Start(unsigned threads, std::function<void(int)> body) {
    body_ = std::move(body);
    pool_.start(threads);
  }

  // Two workers. Context 0 runs `context0`, which is given a function that returns once
  // context 1 has run; context 1 only marks that it ran. Returns when both have run and
  // the pool has stopped. Context 0 blocks its worker, so a test that makes context 1
  // ready from it learns where the pool put it: only the other worker can run it then.
  void RunZeroWaitingForOne(const std::function<void(const std::function<void()>&)>& context0) {
    std::latch one_ran(1);
    const std::function<void()> wait_for_one = [&] { one_ran.wait(); };
    Start(2, [&](int i) {
      Ran(i);
      if (i == 1) {
        one_ran.count_down();
        return;
      }
      context0(wait_for_one);
    });
    pool_.push_ready(ctx(0));
    one_ran.wait();
    pool_.stop();
  }

  void Ran(int i) {
    std::lock_guard<std::mutex> lock(mu_);
    ran_on_[i] = std::this_thread::get_id();
  }
  std::thread::id RanOn(int i) {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_on_.at(i);
  }

  std::array<char, kContexts> slots_{};
  std::function<void(int)> body_;
  EventQueue events_;
  WorkerPool pool_{events_, [this](Context* c) { body_(index_of(c)); }};
  std::mutex mu_;
  std::map<int, std::thread::id> ran_on_;
};

TEST_F(WorkerPoolTest, ContextMadeReadyByARunningContext_RunsNextOnTheSameWorker) {
  std::latch done(1);
  Start(2, [&](int i) {
    Ran(i);
    if (i == 0) pool_.push_ready(ctx(1));  // like an unlock granting a waiter
    if (i == 1) done.count_down();
  });
  pool_.push_ready(ctx(0));
  done.wait();
  EXPECT_EQ(RanOn(0), RanOn(1));
  EXPECT_FALSE(pool_.has_queued());
  pool_.stop();
}

TEST_F(WorkerPoolTest, RunningContextGoesOnPastTheGrace_TheSlottedOneGoesToAnotherWorker) {
  RunZeroWaitingForOne([&](const std::function<void()>& wait_for_one) {
    pool_.push_ready(ctx(1));
    for (unsigned s = 0; s < WorkerPool::kRunNextGraceSteps; ++s) pool_.before_step();
    wait_for_one();
  });
  EXPECT_NE(RanOn(0), RanOn(1));
}

TEST_F(WorkerPoolTest, ContextMadeReadyFromUserCode_GoesToAnotherWorker) {
  RunZeroWaitingForOne([&](const std::function<void()>& wait_for_one) {
    WorkerPool::UserCodeScope user_code(pool_);
    pool_.push_ready(ctx(1));
    wait_for_one();  // user code that waits for the context it woke must not wedge
  });
  EXPECT_NE(RanOn(0), RanOn(1));
}

TEST_F(WorkerPoolTest, ContextSlottedBeforeUserCode_IsHandedToAnotherWorkerFirst) {
  RunZeroWaitingForOne([&](const std::function<void()>& wait_for_one) {
    pool_.push_ready(ctx(1));
    WorkerPool::UserCodeScope user_code(pool_);
    wait_for_one();
  });
  EXPECT_NE(RanOn(0), RanOn(1));
}

TEST_F(WorkerPoolTest, StopWhileAContextWaitsInASlot_LeavesItQueuedForARestart) {
  std::latch pushed(1);
  Start(1, [&](int i) {
    Ran(i);
    pool_.push_ready(ctx(1));
    pushed.count_down();
    while (!pool_.stopping()) std::this_thread::yield();  // until stop() has begun
  });
  pool_.push_ready(ctx(0));
  pushed.wait();
  pool_.stop();
  EXPECT_TRUE(pool_.has_queued()) << "still there, not run, not lost";
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(ran_on_.count(1), 0u);
  }
  // Restarted, the pool runs it, and stops again: a token left over by the first stop
  // would send a worker looking for an item that is not there, and this stop would hang.
  std::latch ran(1);
  Start(1, [&](int i) {
    Ran(i);
    ran.count_down();
  });
  ran.wait();
  pool_.stop();
  EXPECT_FALSE(pool_.has_queued());
}

// A worker stuck in user code when the pool stops is given up on (retired, as the
// watchdog does) and returns later as an abandoned thread: it takes no stop token. The
// stop must not wait for it, and must leave no token behind for a restarted pool, whose
// worker would otherwise wake for an item that is not there and spin, and whose next stop
// would hang.
TEST_F(WorkerPoolTest, WorkerRetiredDuringStop_StopDoesNotWait_AndARestartedPoolStopsAgain) {
  std::atomic<bool> release{false};
  std::atomic<bool> entered{false};
  std::atomic<bool> restarted{false};
  std::thread::id stuck;
  // One body for both pools (replacing it while the abandoned thread is still inside it
  // would be a race): the first run gets stuck, later ones only mark that they ran.
  Start(1, [&](int i) {
    Ran(i);
    if (restarted.load()) return;
    stuck = std::this_thread::get_id();
    entered.store(true);
    while (!release.load()) std::this_thread::yield();
    t_worker_abandoned = true;  // what the worker sees when its action returns too late
  });
  pool_.push_ready(ctx(0));
  while (!entered.load()) std::this_thread::yield();
  std::thread stopper([&] { pool_.stop(); });
  while (!pool_.stopping()) std::this_thread::yield();
  pool_.retire(stuck);  // the watchdog gives up on it
  stopper.join();       // returns without the stuck worker
  EXPECT_EQ(pool_.abandoned_threads(), 1u);
  release.store(true);  // it returns now, abandoned: it ends without touching the pool
  while (pool_.abandoned_threads() != 0) std::this_thread::yield();
  restarted.store(true);
  auto again = std::async(std::launch::async, [&] {
    pool_.start(1);
    pool_.stop();
  });
  ASSERT_EQ(again.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the restarted pool's stop hung: a token was left over";
  EXPECT_FALSE(pool_.has_queued());
}

TEST_F(WorkerPoolTest, LongChainOfHandOffs_WithNothingElseQueued_StaysOnItsWorker) {
  constexpr int kLast = kContexts - 1;
  static_assert(kLast > static_cast<int>(WorkerPool::kMaxRunNextStreak) + 1);
  std::latch done(1);
  int queued_hand_offs = 0;  // only the one worker writes it
  Start(1, [&](int i) {
    Ran(i);
    if (i == kLast) {
      done.count_down();
      return;
    }
    pool_.push_ready(ctx(i + 1));
    if (pool_.has_queued()) ++queued_hand_offs;
  });
  pool_.push_ready(ctx(0));
  done.wait();
  pool_.stop();
  EXPECT_EQ(queued_hand_offs, 0);
}

TEST_F(WorkerPoolTest, LongChainOfHandOffs_LetsQueuedWorkInAfterTheStreak) {
  // One worker: context i makes i + 1 ready; context 0 also has X queued from another
  // thread. After kMaxRunNextStreak slot runs in a row, X gets its turn.
  constexpr int kLast = kContexts - 2;
  constexpr int kX = kContexts - 1;
  std::latch done(1);
  std::vector<int> order;  // only the one worker writes it
  Start(1, [&](int i) {
    order.push_back(i);
    if (i == kX) return;
    if (i == 0) std::thread([&] { pool_.push_ready(ctx(kX)); }).join();
    if (i == kLast) {
      done.count_down();
      return;
    }
    pool_.push_ready(ctx(i + 1));
  });
  pool_.push_ready(ctx(0));
  done.wait();
  pool_.stop();
  ASSERT_EQ(order.size(), static_cast<size_t>(kContexts));
  const size_t x_at = WorkerPool::kMaxRunNextStreak + 1;  // context 0 came from the queue
  EXPECT_EQ(order[x_at], kX);
  for (size_t k = 0; k < order.size(); ++k) {
    if (k != x_at) {
      EXPECT_EQ(order[k], static_cast<int>(k < x_at ? k : k - 1)) << k;
    }
  }
}

}  // namespace
}  // namespace flowrt
