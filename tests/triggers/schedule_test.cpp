#include "triggers/schedule.h"

#include <gtest/gtest.h>

namespace flowrt {
namespace {

TriggerSpec every(DurationMs d, bool has_start, TimeMs start) {
  TriggerSpec s;
  s.type = TriggerType::kSchedule;
  s.repeating = true;
  s.every = d;
  s.has_start = has_start;
  s.start = start;
  return s;
}

TEST(ScheduleTest, EveryWithStart_AlignsToTheStartGrid) {
  TriggerSpec s = every(1000, true, 5000);
  EXPECT_EQ(*next_occurrence(s, 0, 0), 5000);
  EXPECT_EQ(*next_occurrence(s, 0, 5000), 5000);
  EXPECT_EQ(*next_occurrence(s, 0, 5001), 6000);
  EXPECT_EQ(*next_occurrence(s, 0, 9999), 10000);
}

TEST(ScheduleTest, EveryWithoutStart_CountsFromActivation) {
  TriggerSpec s = every(600, false, 0);
  EXPECT_EQ(*next_occurrence(s, 100, 100), 700);
  EXPECT_EQ(*next_occurrence(s, 100, 701), 1300);
}

TEST(ScheduleTest, At_FiresOnceAndNeverInThePast) {
  TriggerSpec s;
  s.type = TriggerType::kSchedule;
  s.has_start = true;
  s.start = 3000;
  EXPECT_EQ(*next_occurrence(s, 0, 1000), 3000);
  EXPECT_EQ(*next_occurrence(s, 0, 3000), 3000);
  EXPECT_FALSE(next_occurrence(s, 0, 3001).has_value());
}

}  // namespace
}  // namespace flowrt
