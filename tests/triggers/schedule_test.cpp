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

// Near the end of engine time (9999-12-31T23:59:59.999Z) an occurrence past it is none,
// never a time that wrapped around or that no clock can reach.
TEST(ScheduleTest, NearTheLatestTime_AnOccurrencePastItIsNone) {
  const TimeMs latest = 253402300799999;
  const DurationMs century = 3153600000000;  // 36500d, the longest duration
  TriggerSpec with_start = every(century, true, latest - 1000);
  EXPECT_EQ(*next_occurrence(with_start, 0, latest - 1000), latest - 1000);
  EXPECT_FALSE(next_occurrence(with_start, 0, latest - 999).has_value());
  EXPECT_FALSE(next_occurrence(with_start, 0, latest).has_value());
  TriggerSpec from_activation = every(century, false, 0);
  EXPECT_FALSE(next_occurrence(from_activation, latest - 5, latest - 5).has_value());
  TriggerSpec ms = every(1, true, 0);
  EXPECT_EQ(*next_occurrence(ms, 0, latest), latest);
  EXPECT_FALSE(next_occurrence(ms, 0, latest + 1).has_value());
  // Whatever a caller passes, the arithmetic does not overflow.
  TriggerSpec wide = every(INT64_MAX / 2, true, INT64_MAX / 2);
  EXPECT_FALSE(next_occurrence(wide, 0, INT64_MAX - 1).has_value());
  TriggerSpec late_start = every(1000, false, 0);
  EXPECT_FALSE(next_occurrence(late_start, INT64_MAX - 10, 0).has_value());
}

}  // namespace
}  // namespace flowrt
