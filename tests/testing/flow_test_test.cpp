// The fixture and matchers of testing/flow_test.h, as a user's test sees them: projects
// opened as `flowrt run` opens them, Settle(until), events files, and what a failed matcher
// prints (records as JSON, never as bytes).
#include <gtest/gtest-spi.h>

#include <filesystem>
#include <fstream>

#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kEmbedding = std::string(FLOWRT_SOURCE_DIR) + "/examples/embedding";

constexpr const char* kApproval = R"({"id": "approve", "trigger": {"type": "record", "table": "req", "when": "created"},
  "actions": [
    {"id": "w", "action": "wait_for_condition", "inputs": {"table": "req", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "ok", "op": "eq", "value": true}, "timeout": "2h"}},
    {"action": "log", "inputs": {"message": "timed out: {{steps.w.timed_out}}"}}]})";

// The failures a statement reports, caught instead of failing this test (gtest-spi.h), so
// a test can check what the fixture or a matcher says when it fails.
class Failures {
 public:
  Failures() : reporter_(::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results_) {}
  // Every failure message so far, one after another.
  std::string text() const {
    std::string out;
    for (int i = 0; i < results_.size(); ++i) out += results_.GetTestPartResult(i).message() + std::string("\n");
    return out;
  }
  int count() const { return results_.size(); }

 private:
  ::testing::TestPartResultArray results_;
  ::testing::ScopedFakeTestPartResultReporter reporter_;
};

class FixtureTest : public FlowTest {};

TEST_F(FixtureTest, SettleUntil_StopsShortOfALaterTimer_ThenFiresIt) {
  ASSERT_TRUE(Load(kApproval));
  Insert("req", Json(R"({"ok": false})"));
  Settle("1h");
  EXPECT_THAT(OnlyContext("approve"), HasStatus("waiting"));
  EXPECT_EQ(engine().now(), kDefaultVirtualStart) << "no timer within the hour: the clock stays";
  Settle("3h");
  EXPECT_THAT(OnlyContext("approve"), HasLog("timed out: true"));
  EXPECT_EQ(Ms(OnlyContext("approve").value()["ended_at"]), 2 * 3600 * 1000);
}

TEST_F(FixtureTest, SettleUntil_ADurationThatDoesNotParse_FailsTheTestNamingIt) {
  std::string text;
  {
    Failures failures;
    Settle("soon");
    text = failures.text();
    EXPECT_EQ(failures.count(), 1);
  }
  EXPECT_THAT(text, HasSubstr("Settle(\"soon\")"));
}

TEST_F(FixtureTest, LoadProject_OpensItAsFlowrtRunDoes) {
  ASSERT_TRUE(LoadProject(kEmbedding));
  EXPECT_EQ(engine().now(), At("2026-03-02T09:00:00Z")) << "config.json's start_time";
  EXPECT_EQ(engine().properties().worker_threads, 2u);
  EXPECT_EQ(engine().properties().max_run_time, 5 * 60 * 1000);
  EXPECT_EQ(project().files.events, kEmbedding + "/events.jsonl");
  Insert("expense", Json(R"({"number": "X-1", "amount": 5})"));
  Settle();
  EXPECT_THAT(OnlyContext("auto_approve"), HasStatus("completed"));
}

TEST_F(FixtureTest, LoadProject_FromAnyWorkingDirectory) {
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(std::filesystem::temp_directory_path());
  const ::testing::AssertionResult loaded = LoadProject(kEmbedding);
  std::filesystem::current_path(before);
  EXPECT_TRUE(loaded);
}

TEST_F(FixtureTest, LoadProject_WhatIsWrong_EveryProblemInTheFailure) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("flowrt-fixture-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "flows");
  std::ofstream(dir / "config.json") << R"({"properties": {"max_actions": 0.5}, "locks": {"x": 1}})";
  const ::testing::AssertionResult config = LoadProject(dir.string());
  std::ofstream(dir / "config.json") << "{}";
  std::ofstream(dir / "flows" / "f.json") << R"({"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "nope"}]})";
  const ::testing::AssertionResult flows = LoadProject(dir.string());
  std::filesystem::remove_all(dir);

  EXPECT_FALSE(config);
  EXPECT_THAT(config.message(), HasSubstr("/properties/max_actions"));
  EXPECT_THAT(config.message(), HasSubstr("/locks/x"));
  EXPECT_FALSE(flows);
  EXPECT_THAT(flows.message(), HasSubstr("f.json: /actions/0/action: unknown action 'nope'"));
  EXPECT_FALSE(LoadProject(kEmbedding + "/no-such-dir"));
}

TEST_F(FixtureTest, RunEvents_AppliesTheFile_OrSaysWhichLineIsBad) {
  ASSERT_TRUE(LoadProject(kEmbedding));
  ASSERT_TRUE(RunEvents(project().files.events));
  EXPECT_EQ(Contexts("request_approval").size(), 2u);
  const ::testing::AssertionResult missing = RunEvents(kEmbedding + "/no-such.jsonl");
  EXPECT_FALSE(missing);
  EXPECT_THAT(missing.message(), HasSubstr("no-such.jsonl"));
}

// ---- how records print in a failure ----

TEST_F(FixtureTest, ContextRecord_PrintsAsIndentedJson) {
  ASSERT_TRUE(Load(kApproval));
  Insert("req", Json(R"({"ok": true})"));
  Settle();
  const std::string printed = ::testing::PrintToString(OnlyContext("approve"));
  EXPECT_THAT(printed, HasSubstr("{\n  \"id\": \"ctx-1\",\n"));
  EXPECT_THAT(printed, HasSubstr("\n  \"status\": \"completed\",\n"));
  EXPECT_THAT(printed, HasSubstr("\"message\": \"timed out: false\""));
  EXPECT_THAT(printed, Not(HasSubstr("-byte object")));
}

TEST_F(FixtureTest, FailedMatcher_ShowsTheRecord_NotBytes) {
  ASSERT_TRUE(Load(kApproval));
  Insert("req", Json(R"({"ok": true})"));
  Settle();
  const ContextRecord record = OnlyContext("approve");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(record, HasStatus("error")), "\n  \"status\": \"completed\",\n");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(record, HasLog("approved")), "\"message\": \"timed out: false\"");
  std::string text;
  {
    Failures failures;
    EXPECT_THAT(record, HasStep("w", "error"));
    text = failures.text();
  }
  EXPECT_THAT(text, HasSubstr("Expected: has step 'w' error"));
  EXPECT_THAT(text, HasSubstr("Actual: {\n  \"id\": \"ctx-1\""));
  EXPECT_THAT(text, Not(HasSubstr("-byte object")));
}

// A step that is not there never matches, not even an empty status (which its missing
// status read as until 2026-12-06), and the failure says it is missing.
TEST_F(FixtureTest, HasStep_OfAStepThatIsNotThere_NeverMatches) {
  ASSERT_TRUE(Load(kApproval));
  Insert("req", Json(R"({"ok": true})"));
  Settle();
  const ContextRecord record = OnlyContext("approve");
  EXPECT_THAT(record, Not(HasStep("nosuch", "")));
  EXPECT_THAT(record, Not(HasStep("nosuch", "completed")));
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(record, HasStep("nosuch", "")), "which has no step 'nosuch'");
}

TEST_F(FixtureTest, Value_PrintsCompactWhenShort_IndentedWhenLong) {
  EXPECT_EQ(::testing::PrintToString(Value("ada")), "\"ada\"");
  EXPECT_EQ(::testing::PrintToString(Json(R"({"a": [1, 2]})")), "{\"a\":[1,2]}");
  const Value record = Json(R"({"number": "INC0000001", "short_description": "the printer on floor 3 is on fire again"})");
  EXPECT_EQ(::testing::PrintToString(record),
            "{\n  \"number\": \"INC0000001\",\n  \"short_description\": \"the printer on floor 3 is on fire again\"\n}");
  EXPECT_NONFATAL_FAILURE(EXPECT_EQ(Value(1), Value("1")), "Which is: \"1\"");
}

TEST_F(FixtureTest, RecordsAndStats_PrintAsJson) {
  ASSERT_TRUE(Load(kApproval));
  Insert("req", Json(R"({"ok": true})"));
  Settle();
  EXPECT_THAT(::testing::PrintToString(Records("req")), HasSubstr("\"ok\": true"));
  EXPECT_THAT(::testing::PrintToString(engine().stats()), HasSubstr("\n  \"contexts_started\": 1,\n"));
}

}  // namespace
}  // namespace flowrt
