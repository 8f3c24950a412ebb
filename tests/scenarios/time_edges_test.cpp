// Time at its edges: durations past the maximum (36500d) fail the step that reads them,
// deadlines near the latest engine time (9999-12-31T23:59:59.999Z) saturate there instead
// of wrapping around, and a start time outside the engine's range never yields null times.
#include <gtest/gtest-spi.h>

#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class TimeEdgesTest : public FlowTest {};

constexpr const char* kTooLarge = "is too large: the maximum is 36500d";

TEST_F(TimeEdgesTest, Wait_LongerThanTheMaximum_FailsItsStepNamingIt_TheMaximumItselfWaits) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "pause", "action": "wait", "inputs": {"duration": "{{inputs.d}}"}}]})"));
  const std::string huge = CallFlow("w", Json(R"({"d": "1000000000000d"})"));
  const std::string max = CallFlow("w", Json(R"({"d": "36500d"})"));
  engine().settle(0);
  EXPECT_THAT(ContextById(huge),
              FailedWith("input 'duration': duration \"1000000000000d\" is too large: the maximum is 36500d"));
  EXPECT_THAT(ContextById(max), HasStatus("waiting"));
  Advance("36499d");
  EXPECT_THAT(ContextById(max), HasStatus("waiting"));
  Advance("1d");
  EXPECT_THAT(ContextById(max), HasStatus("completed"));
  EXPECT_EQ(ContextById(max).value()["ended_at"], Value("2125-12-08T00:00:00.000Z"));
}

TEST_F(TimeEdgesTest, WaitForCondition_TimeoutLongerThanTheMaximum_FailsItsStep) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "done", "op": "eq", "value": true}, "timeout": "{{inputs.t}}"}}]})"));
  Insert("t", Json(R"({"sys_id": "r1"})"));
  const std::string id = CallFlow("w", Json(R"({"t": 9223372036854775807})"));
  engine().settle(0);
  EXPECT_THAT(ContextById(id), FailedWith(std::string("input 'timeout': duration 9223372036854775807 ") + kTooLarge));
}

TEST_F(TimeEdgesTest, Lock_MaxDurationLongerThanTheMaximum_FailsItsStep) {
  ASSERT_TRUE(Load(R"({"id": "l", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "k", "max_duration": "{{inputs.d}}"}}]})"));
  const std::string id = CallFlow("l", Json(R"({"d": "106751991167d"})"));
  Settle();
  EXPECT_THAT(ContextById(id), FailedWith(std::string("input 'max_duration': duration \"106751991167d\" ") + kTooLarge));
  EXPECT_EQ(engine().locks(), Value::empty_array());
}

// (max_attempts - 1) x delay is when a waiting request gives up; a product past the
// maximum duration is an error, whether or not the lock is free.
TEST_F(TimeEdgesTest, Lock_GiveUpFartherThanTheMaximum_FailsItsStepNamingIt) {
  ASSERT_TRUE(Load(R"([{"id": "hold", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "k"}}, {"action": "wait", "inputs": {"duration": "1h"}}]},
    {"id": "l", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "k", "max_attempts": "{{inputs.n}}", "delay": "1h"}}]}])"));
  CallFlow("hold");
  engine().settle(0);
  const std::string huge = CallFlow("l", Json(R"({"n": 1000000000000000})"));
  const std::string at_max = CallFlow("l", Json(R"({"n": 876001})"));  // 876000 x 1h = 36500d
  engine().settle(0);
  EXPECT_THAT(ContextById(huge),
              FailedWith("input 'max_attempts': 1000000000000000 attempts 1h apart would wait longer than the maximum "
                         "duration of 36500d ((max_attempts - 1) x delay)"));
  EXPECT_THAT(ContextById(at_max), HasStatus("waiting"));
  const Value waiters = engine().locks().at(0)["waiters"];
  ASSERT_EQ(waiters.size(), 1u);
  EXPECT_EQ(waiters.at(0)["gives_up_at"], Value("2125-12-08T00:00:00.000Z"));
}

TEST_F(TimeEdgesTest, Advance_LongerThanTheMaximum_IsRefused_TheClockDoesNotMove) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]})"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  Status s = engine().advance(int64_t{106751991167} * 86400000);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), std::string("advance of 9223372036828800000ms ") + kTooLarge);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart);
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  EXPECT_FALSE(engine().advance(-1).is_ok());
}

// Near the latest engine time every deadline (a wait, a lease, the advance itself) stops
// at 9999-12-31T23:59:59.999Z instead of running past what a time can say.
class LatestTimeTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.start_time = At("9999-12-31T00:00:00Z");
    return o;
  }
};

TEST_F(LatestTimeTest, DeadlinesPastTheLatestTime_SaturateThere) {
  ASSERT_TRUE(Load(R"([{"id": "w", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "k", "max_duration": "36500d"}},
      {"action": "wait", "inputs": {"duration": "36500d"}},
      {"action": "log", "inputs": {"message": "woke"}}]}])"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  const Value holders = engine().locks().at(0)["holders"];
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders.at(0)["expires_at"], Value("9999-12-31T23:59:59.999Z"));
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  Status s = engine().advance(int64_t{36500} * 86400000);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine().now(), At("9999-12-31T23:59:59.999Z"));
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(c, HasLog("woke"));
  EXPECT_EQ(c.value()["ended_at"], Value("9999-12-31T23:59:59.999Z"));
  // At the end of time the clock stays put.
  EXPECT_TRUE(engine().advance(1000).is_ok());
  EXPECT_EQ(engine().now(), At("9999-12-31T23:59:59.999Z"));
}

// A library caller's start time outside the range is brought into it, so no context ever
// has a null time (-1 means "no time" inside the engine); config.json and the fixture
// refuse such a start time outright.
TEST(StartTimeTest, BeforeNineteenSeventy_IsClampedToIt_ContextsHaveTimes) {
  EngineOptions o;
  o.start_time = -86400000;  // 1969-12-31
  o.properties.worker_threads = 1;
  Engine engine(o);
  EXPECT_EQ(engine.now(), 0);
  ASSERT_TRUE(engine.load_text(R"({"id": "a", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "hi"}}]})").empty());
  Result<std::string> id = engine.call_flow("a");
  ASSERT_TRUE(id.is_ok()) << id.message();
  engine.settle();
  const Value c = engine.context(*id)->value();
  EXPECT_EQ(c["started_at"], Value("1970-01-01T00:00:00.000Z"));
  EXPECT_EQ(c["ended_at"], Value("1970-01-01T00:00:00.000Z"));
}

TEST(StartTimeTest, PastTheLatestTime_IsClampedToIt) {
  EngineOptions o;
  o.start_time = INT64_MAX;
  o.properties.worker_threads = 1;
  Engine engine(o);
  EXPECT_EQ(engine.now(), 253402300799999);
}

class FixtureTimeTest : public FlowTest {};

TEST_F(FixtureTimeTest, TimeHelpers_RefuseTimesOutsideTheRange_NamingIt) {
  EXPECT_EQ(At("2026-01-01T00:00:01Z"), kDefaultVirtualStart + 1000);
  EXPECT_EQ(Ms(Value("2026-01-01T00:00:01Z")), 1000);
  EXPECT_NONFATAL_FAILURE(Ms(Value("1969-12-31T23:59:59Z")), "the supported range is 1970-01-01T00:00:00.000Z");
  EXPECT_NONFATAL_FAILURE(At("10000-01-01T00:00:00Z"), "is not a time");
  EXPECT_NONFATAL_FAILURE(At("2026-02-30T00:00:00Z"), "is not a real date");
}

}  // namespace
}  // namespace flowrt
