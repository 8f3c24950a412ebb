// Harness scenarios for every trigger kind and condition op (SPEC sections 3 and 4).
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class TriggersTest : public FlowTest {};

TEST_F(TriggersTest, RecordWhen_CreatedUpdatedBothDeleted_FireOnTheirOperations) {
  ASSERT_TRUE(Load(R"([
    {"id": "c", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []},
    {"id": "u", "trigger": {"type": "record", "table": "t", "when": "updated"}, "actions": []},
    {"id": "cu", "trigger": {"type": "record", "table": "t", "when": "created_or_updated"}, "actions": []},
    {"id": "d", "trigger": {"type": "record", "table": "t", "when": "deleted"}, "actions": []},
    {"id": "other", "trigger": {"type": "record", "table": "elsewhere", "when": "created"}, "actions": []}])"));
  Value r = Insert("t", Json(R"({"v": 1})"));
  Settle();
  Update("t", r["sys_id"].as_string(), Json(R"({"v": 2})"));
  Settle();
  ASSERT_TRUE(engine().remove("t", r["sys_id"].as_string()).is_ok());
  Settle();
  EXPECT_EQ(Contexts("c").size(), 1u);
  EXPECT_EQ(Contexts("u").size(), 1u);
  EXPECT_EQ(Contexts("cu").size(), 2u);
  EXPECT_EQ(Contexts("d").size(), 1u);
  EXPECT_EQ(Contexts("other").size(), 0u);
  EXPECT_EQ(Contexts("u")[0].value()["trigger"]["operation"], Value("update"));
}

struct OpCase {
  const char* condition;
  const char* record;
  bool fires;
};

class ConditionOpTest : public FlowTest, public ::testing::WithParamInterface<OpCase> {};

TEST_P(ConditionOpTest, CreatedTriggerCondition) {
  const OpCase& c = GetParam();
  ASSERT_TRUE(Load(std::string(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created", "condition": )") +
                   c.condition + "}, \"actions\": []}"));
  Insert("t", Json(c.record));
  Settle();
  EXPECT_EQ(Contexts("f").size(), c.fires ? 1u : 0u) << c.condition << " on " << c.record;
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, ConditionOpTest,
    ::testing::Values(
        OpCase{R"({"field": "p", "op": "eq", "value": 1})", R"({"p": 1})", true},
        OpCase{R"({"field": "p", "op": "eq", "value": 1})", R"({"p": 1.0})", true},
        OpCase{R"({"field": "p", "op": "eq", "value": 1})", R"({"p": "1"})", false},
        OpCase{R"({"field": "p", "op": "ne", "value": 1})", R"({"p": 2})", true},
        OpCase{R"({"field": "p", "op": "ne", "value": "x"})", R"({})", true},
        OpCase{R"({"field": "p", "op": "lt", "value": 3})", R"({"p": 2})", true},
        OpCase{R"({"field": "p", "op": "lt", "value": 3})", R"({"p": "2"})", false},
        OpCase{R"({"field": "p", "op": "le", "value": 3})", R"({"p": 3})", true},
        OpCase{R"({"field": "p", "op": "gt", "value": "b"})", R"({"p": "c"})", true},
        OpCase{R"({"field": "p", "op": "ge", "value": 3})", R"({"p": 2.5})", false},
        OpCase{R"({"field": "p", "op": "in", "value": [1, 2]})", R"({"p": 2})", true},
        OpCase{R"({"field": "p", "op": "in", "value": "a, b"})", R"({"p": "b"})", true},
        // A comma-separated string is a list of texts: a number matches its own text there
        // (priority in "1,2"), while an array keeps JSON's types apart.
        OpCase{R"({"field": "p", "op": "in", "value": "1,2"})", R"({"p": 1})", true},
        OpCase{R"({"field": "p", "op": "in", "value": ["1", "2"]})", R"({"p": 1})", false},
        OpCase{R"({"field": "p", "op": "in", "value": "true,null"})", R"({"p": true})", false},
        OpCase{R"({"field": "p", "op": "in", "value": "true,null"})", R"({"p": null})", false},
        OpCase{R"({"field": "p", "op": "not_in", "value": [1, 2]})", R"({"p": 3})", true},
        OpCase{R"({"field": "p", "op": "contains", "value": "ell"})", R"({"p": "hello"})", true},
        OpCase{R"({"field": "p", "op": "contains", "value": "llo"})", R"({"p": "hello"})", true},
        OpCase{R"({"field": "p", "op": "contains", "value": ""})", R"({"p": "hello"})", true},
        OpCase{R"({"field": "p", "op": "contains", "value": "hello!"})", R"({"p": "hello"})", false},
        OpCase{R"({"field": "p", "op": "contains", "value": "aab"})", R"({"p": "aaaaaaab"})", true},
        OpCase{R"({"field": "p", "op": "contains", "value": "aab"})", R"({"p": "aaaaaaaa"})", false},
        OpCase{R"({"field": "p", "op": "contains", "value": 2})", R"({"p": [1, 2]})", true},
        OpCase{R"({"field": "p", "op": "starts_with", "value": "he"})", R"({"p": "hello"})", true},
        OpCase{R"({"field": "p", "op": "ends_with", "value": "lo"})", R"({"p": "hello"})", true},
        OpCase{R"({"field": "p", "op": "ends_with", "value": "lo"})", R"({"p": 10})", false},
        OpCase{R"({"field": "p", "op": "is_empty"})", R"({"p": ""})", true},
        OpCase{R"({"field": "p", "op": "is_empty"})", R"({})", true},
        OpCase{R"({"field": "p", "op": "is_not_empty"})", R"({"p": [0]})", true},
        OpCase{R"({"field": "a.b", "op": "eq", "value": 5})", R"({"a": {"b": 5}})", true},
        OpCase{R"({"all": [{"field": "p", "op": "gt", "value": 1}, {"field": "p", "op": "lt", "value": 3}]})", R"({"p": 2})", true},
        OpCase{R"({"any": [{"field": "p", "op": "eq", "value": 1}, {"field": "q", "op": "eq", "value": 1}]})", R"({"q": 1})", true},
        OpCase{R"({"not": {"field": "p", "op": "eq", "value": 1}})", R"({"p": 1})", false}),
    [](const ::testing::TestParamInfo<OpCase>& p) { return "case" + std::to_string(p.index); });

TEST_F(TriggersTest, ChangesOps_CompareWithPreviousValues) {
  ASSERT_TRUE(Load(R"([
    {"id": "any", "trigger": {"type": "record", "table": "t", "when": "updated", "condition": {"field": "state", "op": "changes"}}, "actions": []},
    {"id": "to", "trigger": {"type": "record", "table": "t", "when": "updated", "condition": {"field": "state", "op": "changes_to", "value": "closed"}}, "actions": []},
    {"id": "from", "trigger": {"type": "record", "table": "t", "when": "updated", "condition": {"field": "state", "op": "changes_from", "value": "new"}}, "actions": [
      {"action": "log", "inputs": {"message": "{{trigger.previous.state}} -> {{trigger.record.state}}"}}]}])"));
  Value r = Insert("t", Json(R"({"state": "new", "x": 0})"));
  const std::string id(r["sys_id"].as_string());
  Update("t", id, Json(R"({"x": 1})"));  // state unchanged
  Settle();
  Update("t", id, Json(R"({"state": "open"})"));
  Settle();
  Update("t", id, Json(R"({"state": "closed"})"));
  Settle();
  EXPECT_EQ(Contexts("any").size(), 2u);
  EXPECT_EQ(Contexts("to").size(), 1u);
  ASSERT_EQ(Contexts("from").size(), 1u);
  EXPECT_THAT(Contexts("from")[0], HasLog("new -> open"));
}

TEST_F(TriggersTest, UpdateThatChangesNothing_IsStillAnUpdateButFiresNothing) {
  ASSERT_TRUE(Load(R"({"id": "u", "trigger": {"type": "record", "table": "t", "when": "updated"}, "actions": []})"));
  Value r = Insert("t", Json(R"({"v": 1})"));
  Value after = Update("t", r["sys_id"].as_string(), Json(R"({"v": 1})"));
  Settle();
  EXPECT_EQ(after["sys_mod_count"], Value(1));
  EXPECT_EQ(Contexts("u").size(), 0u);
}

TEST_F(TriggersTest, EventTrigger_PassesPayload_OnlyForItsName) {
  ASSERT_TRUE(Load(R"({"id": "e", "trigger": {"type": "event", "name": "sla.breached"}, "actions": [
    {"action": "log", "inputs": {"message": "{{trigger.payload.ticket}} {{trigger.payload}}"}}]})"));
  FireEvent("sla.breached", Json(R"({"ticket": "T1"})"));
  FireEvent("other", Json(R"({"ticket": "T2"})"));
  Settle();
  EXPECT_THAT(OnlyContext("e"), HasLog(R"(T1 {"ticket":"T1"})"));
  EXPECT_EQ(OnlyContext("e").value()["trigger"], Json(R"({"type": "event", "name": "sla.breached"})"));
}

TEST_F(TriggersTest, ApiTrigger_StartsOnlyOnRequest_WithInputs) {
  ASSERT_TRUE(Load(R"({"id": "api", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "hello {{inputs.who}}"}}]})"));
  CallFlow("api", Json(R"({"who": "you"})"));
  Settle();
  EXPECT_THAT(OnlyContext("api"), HasLog("hello you"));
  EXPECT_FALSE(engine().call_flow("missing").is_ok());
}

TEST_F(TriggersTest, ScheduleEvery_FiresOnlyWhenAdvancePassesIt_WithScheduledTime) {
  ASSERT_TRUE(Load(R"({"id": "tick", "trigger": {"type": "schedule", "every": "1h", "start": "2026-01-01T01:00:00Z"}, "actions": [
    {"action": "log", "inputs": {"message": "at {{trigger.time}}"}}]})"));
  Advance("3h30m");
  std::vector<ContextRecord> cs = Contexts("tick");
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_THAT(cs[0], HasLog("at 2026-01-01T01:00:00.000Z"));
  EXPECT_THAT(cs[2], HasLog("at 2026-01-01T03:00:00.000Z"));
  EXPECT_EQ(Ms(cs[1].value()["started_at"]), 2 * 3600 * 1000);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + (3 * 3600 + 1800) * 1000);
}

// settle moves the clock to the timers contexts wait on, which can carry it past schedule
// occurrences: those do not fire during the settle, but at the next advance, each with its
// own scheduled time.
TEST_F(TriggersTest, Settle_PassingScheduleOccurrences_FiresNone_TheNextAdvanceFiresThem) {
  ASSERT_TRUE(Load(R"([{"id": "tick", "trigger": {"type": "schedule", "every": "1h", "start": "2026-01-01T01:00:00Z"},
      "actions": [{"action": "log", "inputs": {"message": "at {{trigger.time}}"}}]},
    {"id": "nap", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "2h30m"}}]}])"));
  const std::string nap = CallFlow("nap");
  Settle();
  EXPECT_THAT(ContextById(nap), HasStatus("completed"));
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 9000000) << "settle moved the clock past 01:00 and 02:00";
  EXPECT_EQ(Contexts("tick").size(), 0u) << "settle never fires schedules";
  Advance("1h");
  std::vector<ContextRecord> cs = Contexts("tick");
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_THAT(cs[0], HasLog("at 2026-01-01T01:00:00.000Z"));
  EXPECT_THAT(cs[1], HasLog("at 2026-01-01T02:00:00.000Z"));
  EXPECT_THAT(cs[2], HasLog("at 2026-01-01T03:00:00.000Z"));
  EXPECT_EQ(Ms(cs[0].value()["started_at"]), 9000000) << "a late occurrence starts when the advance fires it";
  EXPECT_EQ(Ms(cs[2].value()["started_at"]), 3 * 3600 * 1000);
}

TEST_F(TriggersTest, ScheduleAt_FiresOnce) {
  ASSERT_TRUE(Load(R"({"id": "once", "trigger": {"type": "schedule", "at": "2026-01-01T00:00:30Z"}, "actions": []})"));
  Advance("10s");
  EXPECT_EQ(Contexts("once").size(), 0u);
  Advance("1h");
  Advance("1d");
  EXPECT_EQ(Contexts("once").size(), 1u);
  EXPECT_EQ(Ms(OnlyContext("once").value()["started_at"]), 30000);
}

TEST_F(TriggersTest, ScheduleEveryWithoutStart_FirstRunsOneIntervalAfterActivation) {
  ASSERT_TRUE(Load(R"({"id": "p", "trigger": {"type": "schedule", "every": "10m"}, "actions": []})"));
  Advance("25m");
  std::vector<ContextRecord> cs = Contexts("p");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(Ms(cs[0].value()["started_at"]), 10 * 60 * 1000);
}

TEST_F(TriggersTest, InactiveOrDraftFlows_NeverRunOnTriggers) {
  ASSERT_TRUE(Load(R"([
    {"id": "off", "active": false, "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []},
    {"id": "draft", "status": "draft", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []}])"));
  Insert("t", Value::empty_object());
  Settle();
  EXPECT_TRUE(Contexts().empty());
}

}  // namespace
}  // namespace flowrt
