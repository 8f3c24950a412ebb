// Lifecycle (SPEC 9.6 and 11): drafts, publish, activate, deactivate, test_flow; limits
// at and one past each bound; plans that running contexts keep; the run-time quota.
#include <thread>

#include "runtime/engine_core.h"
#include "runtime/harness.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class LifecycleTest : public FlowTest {
 protected:
  Status Events(std::string_view text) { return Harness(engine()).run_text(text, "events.jsonl"); }
};

constexpr const char* kFlowV1 = R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
  "actions": [{"action": "log", "inputs": {"message": "v1"}}]})";

TEST_F(LifecycleTest, Save_MakesADraftThatNeverRunsOnTriggers) {
  ASSERT_TRUE(engine().save(Json(kFlowV1)).is_ok());
  Insert("t", Value::empty_object());
  Settle();
  EXPECT_TRUE(Contexts().empty());
  ASSERT_TRUE(engine().activate("f").is_ok());
  Insert("t", Value::empty_object());
  Settle();
  EXPECT_THAT(OnlyContext("f"), HasLog("v1"));
}

TEST_F(LifecycleTest, SaveOverAnActiveFlow_KeepsThePublishedOneRunningUntilActivated) {
  ASSERT_TRUE(Load(kFlowV1));
  ASSERT_TRUE(engine().save(Json(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
      "actions": [{"action": "log", "inputs": {"message": "v2"}}]})")).is_ok());
  Insert("t", Value::empty_object());
  Settle();
  ASSERT_TRUE(engine().activate("f").is_ok());
  Insert("t", Value::empty_object());
  Settle();
  std::vector<ContextRecord> cs = Contexts("f");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0], HasLog("v1"));
  EXPECT_THAT(cs[1], HasLog("v2"));
  EXPECT_NE(cs[0].plan_version(), cs[1].plan_version());
}

TEST_F(LifecycleTest, Deactivate_StopsNewStarts_RunningContextsGoOn) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
      "actions": [{"action": "wait", "inputs": {"duration": "1h"}}, {"action": "log", "inputs": {"message": "finished"}}]})"));
  Insert("t", Value::empty_object());
  engine().settle(0);
  ASSERT_TRUE(engine().deactivate("f").is_ok());
  Insert("t", Value::empty_object());
  Settle();
  EXPECT_THAT(OnlyContext("f"), HasLog("finished"));
  ASSERT_TRUE(engine().activate("f").is_ok());
  Insert("t", Value::empty_object());
  Settle();
  EXPECT_EQ(Contexts("f").size(), 2u);
}

TEST_F(LifecycleTest, DeactivatedSchedule_StopsFiring_AndRestartsFromActivation) {
  ASSERT_TRUE(Load(R"({"id": "tick", "trigger": {"type": "schedule", "every": "1h"}, "actions": []})"));
  Advance("2h");
  EXPECT_EQ(Contexts("tick").size(), 2u);
  ASSERT_TRUE(engine().deactivate("tick").is_ok());
  Advance("5h");
  EXPECT_EQ(Contexts("tick").size(), 2u);
  ASSERT_TRUE(engine().activate("tick").is_ok());  // at 7h: next run at 8h
  Advance("90m");
  ASSERT_EQ(Contexts("tick").size(), 3u);
  EXPECT_EQ(Ms(Contexts("tick")[2].value()["started_at"]), 8 * 3600 * 1000);
}

TEST_F(LifecycleTest, Activate_IsRefusedForDraftDependencies_NamingThem) {
  ASSERT_TRUE(Load(R"([{"id": "helper", "type": "subflow", "status": "draft", "actions": []},
                       {"id": "act", "type": "action", "status": "draft", "actions": []}])"));
  ASSERT_TRUE(engine().save(Json(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "call_subflow", "inputs": {"subflow": "helper"}}, {"action": "act"}]})")).is_ok());
  Status s = engine().activate("f");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("uses subflow 'helper', which is a draft; publish it first"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("uses action 'act', which is a draft"), std::string::npos) << s.message();
  const std::string report = engine().validate().describe();
  EXPECT_NE(report.find("uses subflow 'helper', which is a draft"), std::string::npos) << report;
  ASSERT_TRUE(engine().publish("helper").is_ok());
  ASSERT_TRUE(engine().publish("act").is_ok());
  EXPECT_TRUE(engine().activate("f").is_ok());
}

TEST_F(LifecycleTest, TestFlow_RunsNow_BypassingTheCondition_DraftsIncluded) {
  ASSERT_TRUE(Load(R"({"id": "cond", "status": "draft", "trigger": {"type": "record", "table": "t", "when": "updated",
      "condition": {"field": "p", "op": "eq", "value": 1}}, "actions": [
      {"action": "log", "inputs": {"message": "p={{trigger.record.p}} prev={{trigger.previous.p}} op={{trigger.operation}}"}}]})"));
  ASSERT_TRUE(engine().insert("t", Json(R"({"sys_id": "r", "p": 9})")).is_ok());
  Result<std::string> id = engine().test_flow("cond", Json(R"({"table": "t", "sys_id": "r"})"), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  Settle();
  EXPECT_THAT(ContextById(*id), HasLog("p=9 prev=9 op=update"));
  EXPECT_FALSE(engine().test_flow("cond", Json(R"({"table": "t", "sys_id": "missing"})"), Value()).is_ok());
}

// A test request that does not fit the flow's trigger is refused, naming what fits, and
// starts nothing; an event flow's test context names its event. Until 2026-12-06 each of
// these ran: inputs were dropped beside a record, an API flow ran with a record trigger,
// a record flow given inputs ran with every trigger.record pill null.
TEST_F(LifecycleTest, TestFlow_ARequestThatDoesNotFitTheTrigger_IsRefused_NothingStarts) {
  ASSERT_TRUE(Load(R"([
    {"id": "api", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "api"}}]},
    {"id": "rec", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [{"action": "log", "inputs": {"message": "rec"}}]},
    {"id": "ev", "status": "draft", "trigger": {"type": "event", "name": "ping"}, "actions": [
      {"action": "log", "inputs": {"message": "event n={{trigger.payload.n}}"}}]}])"));
  ASSERT_TRUE(engine().insert("t", Json(R"({"sys_id": "r"})")).is_ok());
  ASSERT_TRUE(engine().insert("u", Json(R"({"sys_id": "r"})")).is_ok());
  Settle();
  const size_t before = engine().contexts().size();
  auto refused = [&](const char* flow, const char* record, const char* inputs, const std::string& says) {
    Result<std::string> r = engine().test_flow(flow, record ? Json(record) : Value(), inputs ? Json(inputs) : Value());
    ASSERT_FALSE(r.is_ok()) << flow;
    EXPECT_NE(r.message().find(says), std::string::npos) << r.message();
  };
  refused("rec", R"({"table": "t", "sys_id": "r"})", "{}", "a record or inputs, not both");
  refused("api", R"({"table": "t", "sys_id": "r"})", nullptr, "flow 'api' has an api trigger: test it with inputs");
  refused("rec", nullptr, R"({"x": 1})", "flow 'rec' has a record trigger: test it with a record of table 't'");
  refused("rec", nullptr, nullptr, "test it with a record of table 't'");
  refused("rec", R"({"table": "u", "sys_id": "r"})", nullptr, "triggered by records of table 't', not 'u'");
  EXPECT_EQ(engine().contexts().size(), before) << "nothing started";

  Result<std::string> ev = engine().test_flow("ev", Value(), Json(R"({"n": 3})"));
  ASSERT_TRUE(ev.is_ok()) << ev.message();
  Settle();
  EXPECT_THAT(ContextById(*ev), HasLog("event n=3"));
  EXPECT_EQ(ContextById(*ev).value()["trigger"]["name"], Value("ping"));
}

// A draft that does not compile is not held to the published version's trigger: a request
// that fits the draft (here a record, the draft's new trigger) starts a context that ends
// in the compile error, rather than being refused for the trigger the draft replaced.
TEST_F(LifecycleTest, TestFlow_OfADraftThatDoesNotCompile_IsNotCheckedAgainstThePublishedTrigger) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": []})"));
  ASSERT_TRUE(engine().save(Json(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
      "actions": [{"action": "bogus"}]})")).is_ok());
  ASSERT_TRUE(engine().insert("t", Json(R"({"sys_id": "r"})")).is_ok());
  Result<std::string> id = engine().test_flow("f", Json(R"({"table": "t", "sys_id": "r"})"), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  Settle();
  EXPECT_THAT(ContextById(*id), FailedWith("flow 'f' does not compile"));
  EXPECT_THAT(ContextById(*id), FailedWith("bogus"));
}

TEST_F(LifecycleTest, TestFlow_DraftActionsOnlyWithShowDraftActions) {
  ASSERT_TRUE(Load(R"([{"id": "greet", "type": "action", "status": "draft", "outputs": [{"name": "s", "type": "string"}],
                        "actions": [{"action": "assign_outputs", "inputs": {"values": {"s": "hi"}}}]}])"));
  ASSERT_TRUE(engine().save(Json(R"({"id": "plain", "trigger": {"type": "api"}, "actions": [{"id": "g", "action": "greet"}]})")).is_ok());
  ASSERT_TRUE(engine().save(Json(R"({"id": "shown", "show_draft_actions": true, "trigger": {"type": "api"}, "actions": [
      {"id": "g", "action": "greet"}, {"action": "log", "inputs": {"message": "{{steps.g.s}}"}}]})")).is_ok());
  // Without show_draft_actions the version tested does not compile: it starts, as any
  // start of a flow that does not compile, and ends in error with the compile error.
  Result<std::string> plain = engine().test_flow("plain", Value(), Value::empty_object());
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  Result<std::string> shown = engine().test_flow("shown", Value(), Value::empty_object());
  ASSERT_TRUE(shown.is_ok()) << shown.message();
  Settle();
  EXPECT_THAT(ContextById(*plain), FailedWith("flow 'plain' does not compile"));
  EXPECT_THAT(ContextById(*plain), FailedWith("uses action 'greet', which is a draft"));
  EXPECT_EQ(ContextById(*plain).steps().size(), 0u);
  EXPECT_THAT(ContextById(*shown), HasLog("hi"));
}

// test_flow of a flow that a dependency's change broke makes a context in error with the
// compile error, as call_flow does (SPEC 9.6), and the events file goes on after it. Until
// 2026-12-06 it was the run's error: nothing after its line was applied.
TEST_F(LifecycleTest, TestFlow_OfAFlowThatNoLongerCompiles_EndsInErrorWithTheCompileError_TheRunGoesOn) {
  ASSERT_EQ(Events(R"({"op": "save", "definition": {"id": "s", "type": "subflow", "outputs": [{"name": "y", "type": "integer"}], "actions": [{"action": "assign_outputs", "inputs": {"values": {"y": 1}}}]}}
{"op": "publish", "id": "s"}
{"op": "save", "definition": {"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [{"id": "c", "action": "call_subflow", "inputs": {"subflow": "s"}}, {"action": "log", "inputs": {"message": "{{steps.c.y}}"}}]}}
{"op": "activate", "id": "f"}
{"op": "save", "definition": {"id": "s", "type": "subflow", "outputs": [{"name": "z", "type": "integer"}], "actions": [{"action": "assign_outputs", "inputs": {"values": {"z": 1}}}]}}
{"op": "publish", "id": "s"}
{"op": "insert", "table": "t", "values": {"sys_id": "r"}}
{"op": "test_flow", "flow": "f", "record": {"table": "t", "sys_id": "r"}}
{"op": "insert", "table": "after", "values": {"sys_id": "a"}}
)").message(), "");
  std::vector<ContextRecord> cs = Contexts("f");
  ASSERT_EQ(cs.size(), 2u);
  for (const ContextRecord& c : cs) {
    EXPECT_THAT(c, FailedWith("flow 'f' does not compile"));
    EXPECT_THAT(c, FailedWith("has no output 'y'"));
  }
  EXPECT_EQ(cs[1].value()["trigger"]["type"], Value("record")) << "the published version's trigger";
  EXPECT_EQ(Records("after").size(), 1u) << "the line after the test_flow was applied";
}

// The events file's publish may name the type, when a flow and a subflow share an id (ids
// are unique per type); without it, the first of flow, subflow, action with a draft.
TEST_F(LifecycleTest, EventsFile_PublishOfAnIdTwoTypesShare_TakesTheTypeNamed) {
  ASSERT_EQ(Events(R"({"op": "save", "definition": {"id": "x", "trigger": {"type": "api"}, "actions": []}}
{"op": "save", "definition": {"id": "x", "type": "subflow", "actions": []}}
{"op": "publish", "id": "x", "type": "subflow"}
)").message(), "");
  auto status_of = [&](UnitType type) {
    for (const Definition& d : engine().core().flows.all_definitions()) {
      if (d.id == "x" && d.type == type) return d.status;
    }
    return DefinitionStatus::kDraft;
  };
  EXPECT_EQ(status_of(UnitType::kSubflow), DefinitionStatus::kPublished);
  EXPECT_EQ(status_of(UnitType::kFlow), DefinitionStatus::kDraft) << "the flow's draft is left alone";
  Status bad = Events(R"({"op": "publish", "id": "x", "type": "workflow"})");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("field 'type' must be \"flow\", \"subflow\" or \"action\""), std::string::npos)
      << bad.message();
}

TEST_F(LifecycleTest, EventsFile_LifecycleOps) {
  ASSERT_TRUE(Events(R"({"op": "save", "definition": {"id": "sub", "type": "subflow", "outputs": [{"name": "v", "type": "integer"}], "actions": [{"action": "assign_outputs", "inputs": {"values": {"v": 1}}}]}}
{"op": "publish", "id": "sub"}
{"op": "save", "definition": {"id": "f", "trigger": {"type": "api"}, "actions": [{"id": "s", "action": "call_subflow", "inputs": {"subflow": "sub"}}, {"action": "log", "inputs": {"message": "{{steps.s.v}}"}}]}}
{"op": "activate", "id": "f"}
{"op": "call_flow", "flow": "f"}
{"op": "test_flow", "flow": "f", "inputs": {}}
{"op": "deactivate", "id": "f"}
{"op": "set_property", "name": "max_actions", "value": 10}
)").is_ok());
  std::vector<ContextRecord> cs = Contexts("f");
  ASSERT_EQ(cs.size(), 2u);
  for (const ContextRecord& c : cs) EXPECT_THAT(c, HasLog("1"));
  EXPECT_EQ(engine().properties().max_actions, 10u);
  Status s = Events(R"({"op": "call_flow", "flow": "f"})");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("events.jsonl:1: flow 'f' is not active"), std::string::npos) << s.message();
}

// ---- limits at and one past each bound ----

std::string FlowWithLogs(const char* id, int n) {
  std::string actions;
  for (int i = 0; i < n; ++i) actions += std::string(i ? "," : "") + R"({"action": "log", "inputs": {"message": "x"}})";
  return std::string(R"({"id": ")") + id + R"(", "trigger": {"type": "api"}, "actions": [)" + actions + "]}";
}

TEST_F(LifecycleTest, MaxActions_AtTheBoundActivates_OnePastIsRefusedNamingCountAndProperty) {
  ASSERT_TRUE(engine().set_property("max_actions", Value(5)).is_ok());
  ASSERT_TRUE(engine().save(Json(FlowWithLogs("at", 5))).is_ok());
  EXPECT_TRUE(engine().activate("at").is_ok());
  ASSERT_TRUE(engine().save(Json(FlowWithLogs("past", 6))).is_ok());
  Status s = engine().activate("past");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("flow 'past' has 6 action steps, more than max_actions (5)"), std::string::npos) << s.message();
  // Calls count one, whatever the callee holds; logic does not count.
  ASSERT_TRUE(Load(std::string(R"([{"id": "big", "type": "subflow", "actions": [)") +
                   R"({"action": "log", "inputs": {"message": "1"}}, {"action": "log", "inputs": {"message": "2"}}, {"action": "log", "inputs": {"message": "3"}}]},)" +
                   R"({"id": "caller", "trigger": {"type": "api"}, "actions": [{"if": {"pill": "flow.id", "op": "eq", "value": "caller"}, "then": [)" +
                   R"({"action": "call_subflow", "inputs": {"subflow": "big"}}, {"action": "call_subflow", "inputs": {"subflow": "big"}}, {"action": "call_subflow", "inputs": {"subflow": "big"}}, {"action": "call_subflow", "inputs": {"subflow": "big"}}, {"action": "call_subflow", "inputs": {"subflow": "big"}}]}]}])"));
}

TEST_F(LifecycleTest, MaxActionSteps_ForActionDefinitions_RefusesPublication) {
  ASSERT_TRUE(engine().set_property("max_action_steps", Value(3)).is_ok());
  std::string steps;
  for (int i = 0; i < 4; ++i) steps += std::string(i ? "," : "") + R"({"action": "log", "inputs": {"message": "x"}})";
  ASSERT_TRUE(engine().save(Json(R"({"id": "a3", "type": "action", "actions": [{"action": "log", "inputs": {"message": "x"}}, {"action": "log", "inputs": {"message": "x"}}, {"action": "log", "inputs": {"message": "x"}}]})")).is_ok());
  EXPECT_TRUE(engine().publish("a3").is_ok());
  ASSERT_TRUE(engine().save(Json(R"({"id": "a4", "type": "action", "actions": [)" + steps + "]}")).is_ok());
  Status s = engine().publish("a4");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("action 'a4' has 4 steps, more than max_action_steps (3)"), std::string::npos) << s.message();
}

TEST_F(LifecycleTest, MaxIterations_AtTheBoundRuns_OnePastFails) {
  ASSERT_TRUE(engine().set_property("max_iterations", Value(4)).is_ok());
  ASSERT_TRUE(Load(R"({"id": "loop", "trigger": {"type": "api"}, "actions": [{"for_each": "{{inputs.items}}", "do": []}]})"));
  const std::string at = CallFlow("loop", Json(R"({"items": [1, 2, 3, 4]})"));
  const std::string past = CallFlow("loop", Json(R"({"items": [1, 2, 3, 4, 5]})"));
  Settle();
  EXPECT_THAT(ContextById(at), HasStatus("completed"));
  EXPECT_THAT(ContextById(past), FailedWith("for_each over 5 items is more than max_iterations (4)"));
}

// ---- plans that running contexts keep ----

TEST_F(LifecycleTest, FlowChangedWhileManyContextsWait_EachFinishesOnItsOwnPlan) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"action": "wait", "inputs": {"duration": "1h"}}, {"action": "log", "inputs": {"message": "old"}}]})"));
  for (int i = 0; i < 100; ++i) CallFlow("f");
  engine().settle(0);
  const std::string v1 = Contexts("f").front().plan_version();
  ASSERT_TRUE(engine().save(Json(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "new"}}]})")).is_ok());
  ASSERT_TRUE(engine().activate("f").is_ok());
  const std::string fresh = CallFlow("f");
  Settle();
  std::vector<ContextRecord> cs = Contexts("f");
  ASSERT_EQ(cs.size(), 101u);
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(cs[i].plan_version(), v1);
    EXPECT_THAT(cs[i], HasLog("old"));
  }
  EXPECT_NE(ContextById(fresh).plan_version(), v1);
  EXPECT_THAT(ContextById(fresh), HasLog("new"));
}

TEST_F(LifecycleTest, DependencyChangeThatBreaksACaller_NextStartIsAnErrorContext_OthersUnaffected) {
  ASSERT_TRUE(Load(R"([
    {"id": "sub", "type": "subflow", "outputs": [{"name": "v", "type": "integer"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"v": 1}}}]},
    {"id": "uses", "trigger": {"type": "api"}, "actions": [
      {"id": "s", "action": "call_subflow", "inputs": {"subflow": "sub"}}, {"action": "log", "inputs": {"message": "{{steps.s.v}}"}}]},
    {"id": "other", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "fine"}}]}])"));
  // The new version of sub no longer declares the output `uses` reads.
  ASSERT_TRUE(engine().save(Json(R"({"id": "sub", "type": "subflow", "outputs": [{"name": "w", "type": "integer"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"w": 2}}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok()) << "sub itself compiles";
  const std::string broken = CallFlow("uses");
  const std::string fine = CallFlow("other");
  Settle();
  EXPECT_THAT(ContextById(broken), FailedWith("flow 'uses' does not compile"));
  EXPECT_THAT(ContextById(broken), FailedWith("step 's' (call_subflow) has no output 'v'"));
  EXPECT_EQ(ContextById(broken).steps().size(), 0u);
  EXPECT_TRUE(ContextById(broken).value()["plan_version"].is_null());
  EXPECT_THAT(ContextById(fine), HasLog("fine"));
}

// The times of the schedule ticks of flow `flow`'s contexts, as "HH:MM" on 2026-01-01.
std::vector<std::string> TickTimes(const std::vector<ContextRecord>& contexts) {
  std::vector<std::string> out;
  for (const ContextRecord& c : contexts) {
    const Value& trigger = c.value()["trigger"];
    out.push_back(std::string(trigger["type"].as_string()) + " " +
                  (trigger["type"] == Value("schedule") ? std::string(trigger["time"].as_string().substr(11, 5)) : ""));
  }
  return out;
}

// Publishing a new version of an active flow (SPEC 9.6: "the next start uses a plan
// compiled from the new published versions") changes its trigger too, at once: a new
// schedule ticks on its own rhythm, a schedule changed to a record trigger ticks no more,
// and a record trigger moved to another table starts on that table only. Until 2026-12-06
// the triggers came from the plan compiled last, so the old trigger went on starting the
// new version: the old rhythm, ticks of a flow that had no schedule any more, inserts into
// the old table.
TEST_F(LifecycleTest, PublishOfAnActiveFlow_ChangesItsTrigger) {
  ASSERT_TRUE(Load(R"([
    {"id": "s", "trigger": {"type": "schedule", "every": "1h", "start": "2026-01-01T01:00:00Z"},
     "actions": [{"action": "log", "inputs": {"message": "v1"}}]},
    {"id": "r", "trigger": {"type": "record", "table": "x", "when": "created"},
     "actions": [{"action": "log", "inputs": {"message": "r1"}}]},
    {"id": "q", "trigger": {"type": "schedule", "every": "1h"}, "actions": []}])"));
  Advance("30m");
  ASSERT_TRUE(engine().save(Json(R"({"id": "s", "trigger": {"type": "schedule", "every": "1h",
      "start": "2026-01-01T00:45:00Z"}, "actions": [{"action": "log", "inputs": {"message": "v2"}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("s").is_ok());
  ASSERT_TRUE(engine().save(Json(R"({"id": "r", "trigger": {"type": "record", "table": "y", "when": "created"},
      "actions": [{"action": "log", "inputs": {"message": "r2"}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("r").is_ok());
  ASSERT_TRUE(engine().save(Json(R"({"id": "q", "trigger": {"type": "record", "table": "z", "when": "created"},
      "actions": []})")).is_ok());
  ASSERT_TRUE(engine().publish("q").is_ok());
  Advance("2h30m");
  EXPECT_EQ(TickTimes(Contexts("s")), (std::vector<std::string>{"schedule 00:45", "schedule 01:45", "schedule 02:45"}));
  EXPECT_TRUE(Contexts("q").empty()) << "q has no schedule any more";
  Insert("x", Value::empty_object());
  Insert("y", Value::empty_object());
  Settle();
  ASSERT_EQ(Contexts("r").size(), 1u) << "started by the insert into y alone";
  EXPECT_EQ(Contexts("r")[0].value()["trigger"]["table"], Value("y"));
  EXPECT_THAT(Contexts("r")[0], HasLog("r2"));
}

// A scheduled flow whose subflow stops compiling ends each tick in error (SPEC 9.6), and
// once the subflow compiles again its ticks run again. Until 2026-12-06 the first tick
// after the break ended in error and the schedule then stopped for good, silently, until
// the flow was activated again.
TEST_F(LifecycleTest, AScheduleWhoseSubflowBreaks_ErrsEachTick_AndRunsAgainOnceItIsFixed) {
  ASSERT_TRUE(Load(R"([
    {"id": "s", "trigger": {"type": "schedule", "every": "1h", "start": "2026-01-01T01:00:00Z"},
     "actions": [{"action": "call_subflow", "inputs": {"subflow": "sub", "inputs": {}}}]},
    {"id": "sub", "type": "subflow", "inputs": [{"name": "x", "type": "string"}],
     "actions": [{"action": "log", "inputs": {"message": "sub"}}]}])"));
  Advance("1h30m");
  ASSERT_TRUE(engine().save(Json(R"({"id": "sub", "type": "subflow", "inputs": [{"name": "y", "type": "string",
      "required": true}], "actions": [{"action": "log", "inputs": {"message": "sub v2"}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok());
  Advance("2h");  // 02:00 and 03:00
  ASSERT_TRUE(engine().save(Json(R"({"id": "sub", "type": "subflow", "inputs": [{"name": "x", "type": "string"}],
      "actions": [{"action": "log", "inputs": {"message": "sub v3"}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok());
  Advance("1h");  // 04:00
  std::vector<ContextRecord> cs = Contexts("s");
  ASSERT_EQ(TickTimes(cs), (std::vector<std::string>{"schedule 01:00", "schedule 02:00", "schedule 03:00", "schedule 04:00"}));
  EXPECT_EQ(cs[0].status(), "completed");
  EXPECT_THAT(cs[1], FailedWith("does not compile"));
  EXPECT_THAT(cs[2], FailedWith("does not compile"));
  EXPECT_EQ(cs[3].status(), "completed");
}

// min_schedule_interval raised while a flow with a shorter `every` is active leaves it
// running (BEHAVIOUR.md), also once a subflow it calls changes and its plan is compiled
// again. Until 2026-12-06 that compile checked the new limit: the next tick ended in
// error and the schedule stopped.
TEST_F(LifecycleTest, ARaisedMinScheduleInterval_LeavesAnActiveSchedule_AlsoWhenItsSubflowChanges) {
  ASSERT_TRUE(Load(R"([
    {"id": "s", "trigger": {"type": "schedule", "every": "1m"},
     "actions": [{"action": "call_subflow", "inputs": {"subflow": "sub", "inputs": {}}}]},
    {"id": "sub", "type": "subflow", "actions": [{"action": "log", "inputs": {"message": "v1"}}]}])"));
  ASSERT_TRUE(engine().set_property("min_schedule_interval", Value("1h")).is_ok());
  ASSERT_TRUE(engine().save(Json(R"({"id": "sub", "type": "subflow",
      "actions": [{"action": "log", "inputs": {"message": "v2"}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok());
  Advance("3m");
  std::vector<ContextRecord> cs = Contexts("s");
  ASSERT_EQ(cs.size(), 3u);
  for (const ContextRecord& c : cs) EXPECT_EQ(c.status(), "completed") << c.value().to_json();
}

// ---- the run-time quota ----

class QuotaTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.run_clock = [this] { return run_ms_.load(); };
    o.properties.max_run_time = 1000;
    // The fake clock passes the quota inside the "slow" action, which then returns; the
    // watchdog, which gives up on actions that do not return, must not race it here
    // (WatchdogTest covers it).
    o.watchdog_period_ms = 3600000;
    return o;
  }
  void SetUp() override {
    FlowTest::SetUp();
    CustomActionType slow;  // "runs" for inputs.ms milliseconds of running time
    slow.name = "slow";
    slow.inputs = {{"ms", ParamType::kInteger, true}, {"cooperate", ParamType::kBoolean, false}};
    slow.outputs = {{"stopped_early", ParamType::kBoolean, false}};
    slow.run = [this](CustomActionContext& ctx) -> Result<Value> {
      const int64_t ms = ctx.input("ms").as_int();
      for (int64_t i = 0; i < ms; i += 100) {
        run_ms_.store(run_ms_.load() + 100);
        if (ctx.input("cooperate").as_bool() && ctx.cancel_requested()) {
          return Value::object({{"stopped_early", Value(true)}});
        }
      }
      return Value::object({{"stopped_early", Value(false)}});
    };
    ASSERT_TRUE(engine().register_action(std::move(slow)).is_ok());
  }
  std::atomic<double> run_ms_{0};
};

TEST_F(QuotaTest, SlowAction_PastTheQuota_EndsTheContextInErrorNamingIt_AtTheBoundItCompletes) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "work", "action": "slow", "inputs": {"ms": "{{inputs.ms}}"}}, {"action": "log", "inputs": {"message": "after"}}]})"));
  const std::string at = CallFlow("f", Json(R"({"ms": 1000})"));
  Settle();
  const std::string past = CallFlow("f", Json(R"({"ms": 1100})"));
  Settle();
  EXPECT_THAT(ContextById(at), HasLog("after"));
  ContextRecord p = ContextById(past);
  EXPECT_THAT(p, FailedWith("the context ran longer than max_run_time (1s)"));
  EXPECT_EQ(p.error()["step"], Value("1"));
  EXPECT_THAT(p, HasStep("work", "error"));
  EXPECT_TRUE(p.logs().size() == 0);
}

TEST_F(QuotaTest, LongCooperativeAction_IsToldToStop) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "work", "action": "slow", "inputs": {"ms": 100000, "cooperate": true}}]})"));
  CallFlow("f");
  Settle();
  EXPECT_THAT(OnlyContext("f"), FailedWith("max_run_time"));
  EXPECT_LT(run_ms_.load(), 2000) << "it stopped as soon as the quota passed, not after 100s";
}

TEST_F(QuotaTest, WaitingTimeDoesNotCount) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"action": "slow", "inputs": {"ms": 600}}, {"action": "wait", "inputs": {"duration": "10h"}},
    {"action": "slow", "inputs": {"ms": 300}}, {"action": "log", "inputs": {"message": "done"}}]})"));
  CallFlow("f");
  Settle();
  ContextRecord c = OnlyContext("f");
  EXPECT_THAT(c, HasLog("done"));
  EXPECT_NEAR(c.value()["runtime_ms"].as_double(), 900.0, 0.5);
}

}  // namespace
}  // namespace flowrt

namespace flowrt {
namespace {

// Activation writes a flow's activation time while schedule ticks (another thread's
// advance here, the timer thread on a real clock) read it: no data race (ThreadSanitizer
// watches this test).
TEST_F(LifecycleTest, ActivatingWhileSchedulesTickOnAnotherThread_IsRaceFree) {
  ASSERT_TRUE(Load(R"({"id": "hourly", "trigger": {"type": "schedule", "every": "1h"},
    "actions": [{"action": "log", "inputs": {"message": "tick"}}]})"));
  std::thread ticker([this] {
    for (int i = 0; i < 200; ++i) EXPECT_TRUE(engine().advance(3600 * 1000).is_ok());
  });
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(engine().deactivate("hourly").is_ok());
    ASSERT_TRUE(engine().activate("hourly").is_ok());
  }
  ticker.join();
  Settle();
  for (const ContextRecord& c : Contexts("hourly")) EXPECT_THAT(c, HasStatus("completed"));
}

}  // namespace
}  // namespace flowrt
