#include "runtime/clock.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace flowrt
