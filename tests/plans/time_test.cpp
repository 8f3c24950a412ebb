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
  // The spellings docs/SPEC.md section 3 lists: no seconds, a space for T, +HHMM offsets.
  EXPECT_EQ(*parse_time("2026-01-01T09:00Z"), kDefaultVirtualStart + 9 * 3600000);
  EXPECT_EQ(*parse_time("2026-01-01 10:00+0100"), kDefaultVirtualStart + 9 * 3600000);
  EXPECT_EQ(*parse_time("2026-01-01t09:00:00.250z"), kDefaultVirtualStart + 9 * 3600000 + 250);
  EXPECT_FALSE(parse_time("2026-01-01T09:00").is_ok()) << "a time of day needs a zone";
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
  EXPECT_EQ(*parse_duration("30m1h"), 5400000) << "parts add up, in any order";
  EXPECT_EQ(*parse_duration("1d1d"), 172800000);
  EXPECT_EQ(*parse_duration(Value(1.9)), 1) << "a fraction of a millisecond is cut";
  EXPECT_FALSE(parse_duration("").is_ok());
  EXPECT_FALSE(parse_duration("5 minutes").is_ok());
  EXPECT_FALSE(parse_duration(Value(-1)).is_ok());
  EXPECT_FALSE(parse_duration(Value(true)).is_ok());
  EXPECT_EQ(format_duration(5400000), "1h30m");
  EXPECT_EQ(format_duration(250), "250ms");
}

// Every field is checked against the calendar: nothing is shifted into the next month,
// minute or day, and the offending text is in the message.
TEST(TimeTest, ParseTime_ImpossibleDatesAndTimes_AreRejectedWithTheText) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"2026-02-30T00:00:00Z", "\"2026-02-30T00:00:00Z\" is not a real date"},
      {"2026-04-31T00:00:00Z", "\"2026-04-31T00:00:00Z\" is not a real date"},
      {"2025-02-29", "\"2025-02-29\" is not a real date"},
      {"2026-00-10", "\"2026-00-10\" is not a real date"},
      {"2026-01-00T00:00:00Z", "\"2026-01-00T00:00:00Z\" is not a real date"},
      {"2026-01-01T23:59:60Z", "\"2026-01-01T23:59:60Z\" is not a real time of day"},
      {"2026-01-01T24:00:00Z", "\"2026-01-01T24:00:00Z\" is not a real time of day"},
      {"2026-01-01T12:60:00Z", "\"2026-01-01T12:60:00Z\" is not a real time of day"},
      {"2026-01-01T00:00:00+99:99", "\"2026-01-01T00:00:00+99:99\" has an offset that is not real"},
      {"2026-01-01T00:00:00+24:00", "\"2026-01-01T00:00:00+24:00\" has an offset that is not real"},
      {"2026-01-01T00:00:00-01:60", "\"2026-01-01T00:00:00-01:60\" has an offset that is not real"},
  };
  for (const Case& c : cases) {
    Result<TimeMs> t = parse_time(c.text);
    ASSERT_FALSE(t.is_ok()) << c.text << " was read as " << format_time(*t);
    EXPECT_EQ(t.message().rfind(c.message, 0), 0u) << t.message();
  }
  // What is real still parses, leap days and offsets included.
  EXPECT_EQ(format_time(*parse_time("2024-02-29T23:59:59.999Z")), "2024-02-29T23:59:59.999Z");
  EXPECT_EQ(format_time(*parse_time("2026-01-01T00:00:00-23:59")), "2026-01-01T23:59:00.000Z");
  EXPECT_EQ(format_time(*parse_time("2026-03-01T05:30:00+05:30")), "2026-03-01T00:00:00.000Z");
}

// Engine time runs from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z; anything
// outside is refused with the range in the message (-1 means "no time" inside the engine).
TEST(TimeTest, ParseTime_OutsideTheSupportedRange_IsRejectedNamingIt) {
  const char* range = "the supported range is 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z";
  for (const char* text : {"1969-12-31T23:59:59.999Z", "1970-01-01T00:30:00+01:00", "0000-01-01", "1900-06-01",
                           "9999-12-31T23:00:00-01:00"}) {
    Result<TimeMs> t = parse_time(text);
    ASSERT_FALSE(t.is_ok()) << text << " was read as " << *t;
    EXPECT_NE(t.message().find(std::string("\"") + text + "\""), std::string::npos) << t.message();
    EXPECT_NE(t.message().find(range), std::string::npos) << t.message();
  }
  EXPECT_EQ(*parse_time("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_time("9999-12-31T23:59:59.999Z"), 253402300799999);
  EXPECT_EQ(format_time(253402300799999), "9999-12-31T23:59:59.999Z");
}

TEST(TimeTest, FormatTime_RoundTripsAcrossTheRange) {
  for (const char* text : {"1970-01-01T00:00:00.000Z", "2000-02-29T12:34:56.789Z", "2100-03-01T00:00:00.001Z",
                           "2400-02-29T23:59:59.999Z", "9999-12-31T23:59:59.999Z"}) {
    Result<TimeMs> t = parse_time(text);
    ASSERT_TRUE(t.is_ok()) << t.message();
    EXPECT_EQ(format_time(*t), text);
  }
}

// Every unit, compound durations and integer milliseconds are checked against one
// maximum (100 years) before any arithmetic, so nothing wraps around.
TEST(TimeTest, ParseDuration_TooLarge_IsAnErrorNamingTheMaximum) {
  EXPECT_EQ(*parse_duration("36500d"), 3153600000000);
  EXPECT_EQ(*parse_duration("876000h"), 3153600000000);
  EXPECT_EQ(*parse_duration("3153600000000"), 3153600000000);
  EXPECT_EQ(*parse_duration(Value(3153600000000LL)), 3153600000000);
  // The fraction is cut first: the maximum and a fraction is the maximum (until 2026-12-06
  // it was refused), one millisecond more is not.
  EXPECT_EQ(*parse_duration(Value(3153600000000.9)), 3153600000000);
  EXPECT_FALSE(parse_duration(Value(3153600000001.0)).is_ok());
  for (const char* text : {"1000000000000d", "36501d", "36500d1ms", "876001h", "52560001m", "3153600001s",
                           "3153600000001ms", "3153600000001", "106751991167d", "99999999999999999999d",
                           "9223372036854775807ms", "99999999999999999999", "36499d24h1ms", "1099511627776d"}) {
    Result<DurationMs> d = parse_duration(text);
    ASSERT_FALSE(d.is_ok()) << text << " was read as " << *d;
    EXPECT_EQ(d.message(), std::string("duration \"") + text + "\" is too large: the maximum is 36500d") << text;
  }
  Result<DurationMs> big = parse_duration(Value(3153600000001LL));
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.message(), "duration 3153600000001 is too large: the maximum is 36500d");
  Result<DurationMs> huge = parse_duration(Value(1e300));
  ASSERT_FALSE(huge.is_ok());
  EXPECT_NE(huge.message().find("the maximum is 36500d"), std::string::npos) << huge.message();
}

TEST(TimeTest, AddDuration_SaturatesAtTheLatestTime) {
  const TimeMs latest = 253402300799999;
  EXPECT_EQ(add_duration(kDefaultVirtualStart, 1000), kDefaultVirtualStart + 1000);
  EXPECT_EQ(add_duration(latest - 10, 5), latest - 5);
  EXPECT_EQ(add_duration(latest - 10, 3153600000000), latest);
  EXPECT_EQ(add_duration(latest, INT64_MAX), latest);
  EXPECT_EQ(add_duration(INT64_MAX - 1, INT64_MAX), latest);
  EXPECT_EQ(add_duration(kDefaultVirtualStart, -5), kDefaultVirtualStart) << "a negative duration adds nothing";
  EXPECT_EQ(kMaxTime, latest);
  EXPECT_EQ(kMinTime, 0);
  EXPECT_EQ(kMaxDuration, 3153600000000);
}

}  // namespace
}  // namespace flowrt
