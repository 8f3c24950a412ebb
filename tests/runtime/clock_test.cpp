#include "runtime/clock.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <future>
#include <thread>

namespace flowrt {
namespace {

TEST(ClockTest, VirtualClock_MovesOnlyForward) {
  EngineClock c(true, 1000);
  EXPECT_EQ(c.now(), 1000);
  c.set(5000);
  c.set(2000);
  EXPECT_EQ(c.now(), 5000);
}

TEST(TimerQueueTest, FiresInDeadlineThenInsertionOrder_CancelRemoves) {
  TimerQueue q;
  std::vector<int> fired;
  q.add(20, true, [&] { fired.push_back(1); });
  TimerHandle h = q.add(10, true, [&] { fired.push_back(2); });
  q.add(10, false, [&] { fired.push_back(3); });
  q.add(10, true, [&] { fired.push_back(4); });
  q.cancel(h);
  EXPECT_EQ(*q.next_deadline(false), 10);
  for (auto& f : q.take_due(15, true)) f();
  EXPECT_EQ(fired, (std::vector<int>{4}));
  EXPECT_EQ(*q.next_deadline(true), 20);
  EXPECT_EQ(*q.next_deadline(false), 10);
  for (auto& f : q.take_due(25, false)) f();
  EXPECT_EQ(fired, (std::vector<int>{4, 3, 1}));
  EXPECT_FALSE(q.next_deadline(false).has_value());
  q.cancel(h);  // cancelling twice is harmless
}

// The timer thread of a real clock (wait_due) sleeps until its earliest timer. These wait
// for it in real time, bounded: a broken wake-up fails them after 30 s instead of hanging.
size_t WaitDueReturns(TimerQueue& q, const EngineClock& clock, const std::function<void()>& meanwhile) {
  std::promise<size_t> fired;
  std::future<size_t> result = fired.get_future();
  std::thread sleeper([&] { fired.set_value(q.wait_due(clock).size()); });
  meanwhile();
  // The real clock is what is under test here: its timers are 0-200 ms away; 10 s bounds
  // a wedged wait.
  const bool returned = result.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  q.stop();
  sleeper.join();
  EXPECT_TRUE(returned) << "wait_due did not return";
  return result.get();
}

TEST(TimerQueueTest, WaitDue_WakesForATimerEarlierThanItsSleep) {
  EngineClock clock(false, 0);
  TimerQueue q;
  q.add(clock.now() + 3600000, true, [] {});
  EXPECT_EQ(WaitDueReturns(q, clock, [&] { q.add(clock.now(), true, [] {}); }), 1u);
}

TEST(TimerQueueTest, WaitDue_ATimerCancelledUnderItsSleep_StillFiresTheNextOne) {
  EngineClock clock(false, 0);
  TimerQueue q;
  const TimerHandle first = q.add(clock.now() + 100, true, [] {});
  // Later than the sleep: no wake-up; the sleeper finds nothing due at 100 ms and sleeps on.
  EXPECT_EQ(WaitDueReturns(q, clock, [&] {
              q.cancel(first);
              q.add(clock.now() + 200, true, [] {});
            }),
            1u);
}

TEST(TimerQueueTest, TimersTakenByWaitDue_CountAsFiringUntilReportedFired) {
  // settle on a real clock must not end while a due timer's effect has not happened yet.
  EngineClock clock(false, 0);
  TimerQueue q;
  q.add(clock.now(), true, [] {});
  q.add(clock.now() + 3600000, true, [] {});
  EXPECT_FALSE(q.pending(true).firing);
  ASSERT_EQ(q.wait_due(clock).size(), 1u);  // due now: returns at once
  TimerQueue::Pending p = q.pending(true);
  EXPECT_TRUE(p.firing);
  ASSERT_TRUE(p.next.has_value());
  EXPECT_GT(*p.next, clock.now()) << "the one left is the later timer";
  q.fired(1);
  EXPECT_FALSE(q.pending(true).firing);
}

// CPU time the thread `t` has used, in milliseconds.
double ThreadCpuMs(std::thread& t) {
  clockid_t id;
  if (pthread_getcpuclockid(t.native_handle(), &id) != 0) return -1;
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1000 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A timer centuries away (the latest engine time, or any deadline a caller passes) must
// not overflow the conversion to a steady-clock sleep: the timer thread sleeps, in
// bounded chunks, and uses next to no CPU. Real time is the thing under test here: the
// sleeper is watched for 300 ms.
TEST(TimerQueueTest, WaitDue_ATimerCenturiesAway_SleepsInsteadOfSpinning) {
  for (const TimeMs deadline : {TimeMs{253402300799999}, TimeMs{INT64_MAX - 1}}) {
    EngineClock clock(false, 0);
    TimerQueue q;
    q.add(deadline, true, [] {});
    std::thread sleeper([&] { EXPECT_TRUE(q.wait_due(clock).empty()) << "nothing is due: it returns only when stopped"; });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double cpu = ThreadCpuMs(sleeper);
    q.stop();
    sleeper.join();
    EXPECT_GE(cpu, 0);
    EXPECT_LT(cpu, 50) << "the timer thread spun for a deadline of " << deadline;
  }
}

}  // namespace
}  // namespace flowrt
