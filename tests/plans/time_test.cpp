#include "plans/time.h"

#include <gtest/gtest.h>

namespace flowrt {
namespace {

TEST(TimeTest, FormatAndParse_AreInverse) {
  EXPECT_EQ(format_time(kDefaultVirtualStart), "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time(kDefaultVirtualStart + 90061001), "2026-01-02T01:01:01.001Z");
  EXPECT_EQ(*parse_time("2026-01-01T00:00:00Z"), kDefaultVirtualStart);
  EXPECT_EQ(*parse_time("2026-01-01T01:00:00+01:00"), kDefaultVirtualStart);
  EXPECT_EQ(*parse_time("2026-01-01"), kDefaultVirtualStart);
  EXPECT_EQ(*parse_time("2024-02-29T12:00:00.5Z"), *parse_time("2024-02-29T12:00:00.500Z"));
  EXPECT_EQ(format_time(0), "1970-01-01T00:00:00.000Z");
  EXPECT_FALSE(parse_time("2026-13-01T00:00:00Z").is_ok());
  EXPECT_FALSE(parse_time("2026-01-01T00:00:00").is_ok()) << "a time of day needs a zone";
  EXPECT_FALSE(parse_time("yesterday").is_ok());
}

TEST(TimeTest, Durations) {
  EXPECT_EQ(*parse_duration("250ms"), 250);
  EXPECT_EQ(*parse_duration("30s"), 30000);
  EXPECT_EQ(*parse_duration("5m"), 300000);
  EXPECT_EQ(*parse_duration("1h"), 3600000);
  EXPECT_EQ(*parse_duration("2d"), 172800000);
  EXPECT_EQ(*parse_duration("1h30m"), 5400000);
  EXPECT_EQ(*parse_duration("1500"), 1500);
  EXPECT_EQ(*parse_duration(Value(1500)), 1500);
  EXPECT_FALSE(parse_duration("").is_ok());
  EXPECT_FALSE(parse_duration("5 minutes").is_ok());
  EXPECT_FALSE(parse_duration(Value(-1)).is_ok());
  EXPECT_FALSE(parse_duration(Value(true)).is_ok());
  EXPECT_EQ(format_duration(5400000), "1h30m");
  EXPECT_EQ(format_duration(250), "250ms");
}

}  // namespace
}  // namespace flowrt
