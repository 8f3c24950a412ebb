// Run-time budgets (docs/BEHAVIOUR.md, "Budgets"): record field values, waiting contexts,
// queued events and for_each iterations. For each, the bound itself passes and one past
// it fails with an error naming the budget and its limit; nothing else is lost and the
// engine keeps working.
#include <gtest/gtest-spi.h>

#include "runtime/engine_core.h"
#include "runtime/harness.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class RuntimeBudgetsTest : public FlowTest {
 protected:
  void SetProperty(std::string_view name, long long value) {
    Status s = engine().set_property(name, Value(value));
    ASSERT_TRUE(s.is_ok()) << s.message();
  }
};

// ---- max_record_value_bytes ----

TEST_F(RuntimeBudgetsTest, RecordValueBytes_AnOperationAtTheLimitWrites_OnePastIsRefusedWritingNothing) {
  SetProperty("max_record_value_bytes", 16);
  const Value at = Insert("t", Value::object({{"s", Value(std::string(16, 'x'))}, {"n", Value(1)}}));
  Result<Value> past = engine().insert("t", Value::object({{"n", Value(2)}, {"s", Value(std::string(17, 'x'))}}));
  ASSERT_FALSE(past.is_ok());
  EXPECT_EQ(past.message(), "field 's' is a string of 17 bytes, larger than the limit of 16 bytes (max_record_value_bytes)");
  // Other values count their compact JSON: [1,2,3,4,5,6,7] is 15 bytes, [10,...] more than 16.
  EXPECT_TRUE(engine().update("t", at["sys_id"].as_string(), Json(R"({"a": [1, 2, 3, 4, 5, 6, 7]})")).is_ok());
  Result<Value> big = engine().update("t", at["sys_id"].as_string(), Json(R"({"a": [10, 20, 30, 40, 50, 60, 70]})"));
  EXPECT_EQ(big.message(),
            "field 'a' is an array of more than 16 bytes of JSON, larger than the limit of 16 bytes (max_record_value_bytes)");
  Result<size_t> where = engine().update_where("t", Json(R"({"field": "n", "op": "eq", "value": 1})"),
                                               Value::object({{"s", Value(std::string(17, 'y'))}}));
  EXPECT_FALSE(where.is_ok());
  const std::vector<Value> rows = Records("t");
  ASSERT_EQ(rows.size(), 1u) << "the refused insert wrote nothing";
  EXPECT_EQ(rows[0]["s"], Value(std::string(16, 'x')));
  EXPECT_EQ(rows[0]["a"].to_json(), "[1,2,3,4,5,6,7]");
}

TEST_F(RuntimeBudgetsTest, RecordValueBytes_AnActionPastTheLimitFailsItsStepWithTheError) {
  SetProperty("max_record_value_bytes", 16);
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "c", "action": "create_record", "inputs": {"table": "t", "values": {"s": "{{inputs.s}}"}}},
    {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{steps.c.sys_id}}", "values": {"s": "{{inputs.more}}"}}}]})"));
  const std::string at = CallFlow("w", Value::object({{"s", Value(std::string(16, 'x'))}, {"more", Value("y")}}));
  const std::string past = CallFlow("w", Value::object({{"s", Value(std::string(17, 'x'))}, {"more", Value("y")}}));
  const std::string update_past =
      CallFlow("w", Value::object({{"s", Value("x")}, {"more", Value(std::string(17, 'y'))}}));
  Settle();
  EXPECT_THAT(ContextById(at), HasStatus("completed"));
  const char* error = "field 's' is a string of 17 bytes, larger than the limit of 16 bytes (max_record_value_bytes)";
  EXPECT_THAT(ContextById(past), FailedWith(error));
  EXPECT_EQ(ContextById(past).value()["error"]["step"], Value("1"));
  EXPECT_THAT(ContextById(update_past), FailedWith(error));
  EXPECT_EQ(ContextById(update_past).value()["error"]["step"], Value("2"));
  EXPECT_EQ(Records("t").size(), 2u);
}

// ---- max_waiting_contexts ----

TEST_F(RuntimeBudgetsTest, WaitingContexts_AtTheLimitWait_OnePastFailsTheStepThatWouldWait) {
  SetProperty("max_waiting_contexts", 2);
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "pause", "action": "wait", "inputs": {"duration": "1h"}},
    {"action": "log", "inputs": {"message": "woke"}}]})"));
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(CallFlow("w"));
    engine().settle(0);  // runs it up to its wait, without moving the clock
  }
  EXPECT_THAT(ContextById(ids[0]), HasStatus("waiting"));
  EXPECT_THAT(ContextById(ids[1]), HasStatus("waiting"));
  EXPECT_THAT(ContextById(ids[2]),
              FailedWith("this step cannot wait: 2 contexts are waiting already, the limit is 2 (max_waiting_contexts)"));
  EXPECT_EQ(engine().core().waiting(), 2u);
  Settle();
  EXPECT_THAT(ContextById(ids[0]), HasLog("woke"));
  EXPECT_THAT(ContextById(ids[1]), HasLog("woke"));
  // Woken contexts no longer count; cancelled ones neither.
  EXPECT_EQ(engine().core().waiting(), 0u);
  const std::string later = CallFlow("w");
  engine().settle(0);
  ASSERT_TRUE(engine().cancel(later).is_ok());
  Settle();
  EXPECT_THAT(ContextById(later), HasStatus("cancelled"));
  EXPECT_EQ(engine().core().waiting(), 0u);
}

TEST_F(RuntimeBudgetsTest, WaitingContexts_TheRefusalIsAStepError_OnErrorContinueGoesOn) {
  SetProperty("max_waiting_contexts", 0);
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "pause", "action": "wait", "inputs": {"duration": "1h"}, "on_error": "continue"},
    {"action": "log", "inputs": {"message": "{{steps.pause.error}}"}}]})"));
  CallFlow("w");
  Settle();
  EXPECT_THAT(OnlyContext("w"), HasStatus("completed"));
  EXPECT_THAT(OnlyContext("w"),
              HasLog("this step cannot wait: 0 contexts are waiting already, the limit is 0 (max_waiting_contexts)"));
}

// ---- max_queued_events ----

// Contexts run only inside settle and advance, so queued events stay queued until then.
class QueuedEventsTest : public RuntimeBudgetsTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = RuntimeBudgetsTest::Options();
    o.simulation_seed = 7;
    return o;
  }
};

constexpr const char* kQueueFull =
    "the event queue is full: 2 trigger events wait to start and this would add 1, past the limit of 2 "
    "(max_queued_events); refused, nothing was written";

TEST_F(QueuedEventsTest, AtTheLimitQueues_OnePastRefusesTheOperation_NothingIsDropped) {
  SetProperty("max_queued_events", 2);
  ASSERT_TRUE(Load(R"([{"id": "on_t", "trigger": {"type": "record", "table": "t", "when": "created_or_updated"}, "actions": []},
    {"id": "on_e", "trigger": {"type": "event", "name": "e"}, "actions": []},
    {"id": "api", "trigger": {"type": "api"}, "actions": []}])"));
  const Value first = Insert("t", Value::object({{"n", Value(1)}}));
  Insert("t", Value::object({{"n", Value(2)}}));
  EXPECT_EQ(engine().core().events.size_approx(), 2u);
  Result<Value> refused = engine().insert("t", Value::object({{"n", Value(3)}}));
  EXPECT_EQ(refused.message(), kQueueFull);
  EXPECT_EQ(engine().update("t", first["sys_id"].as_string(), Value::object({{"n", Value(9)}})).message(), kQueueFull);
  Result<size_t> where = engine().update_where("t", Json(R"({"field": "n", "op": "ge", "value": 1})"),
                                               Value::object({{"n", Value(9)}}));
  EXPECT_EQ(where.message(),
            "the event queue is full: 2 trigger events wait to start and this would add 2, past the limit of 2 "
            "(max_queued_events); refused, nothing was written");
  EXPECT_TRUE(engine().remove("t", first["sys_id"].as_string()).is_ok());  // starts no flow
  EXPECT_EQ(engine().fire_event("e").message(), kQueueFull);
  EXPECT_EQ(engine().call_flow("api").message(), kQueueFull);
  // A write that starts nothing is not refused.
  Insert("other", Value::empty_object());
  Settle();
  std::vector<ContextRecord> ran = Contexts("on_t");
  ASSERT_EQ(ran.size(), 2u) << "both queued events ran";
  const std::vector<Value> rows = Records("t");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["n"], Value(2)) << "refused writes wrote nothing; the delete went through";
  // Room again: the engine goes on.
  Insert("t", Value::object({{"n", Value(4)}}));
  FireEvent("e");
  Settle();
  EXPECT_EQ(Contexts("on_t").size(), 3u);
  EXPECT_EQ(Contexts("on_e").size(), 1u);
}

TEST_F(QueuedEventsTest, FromAStep_TheWriteFails_AndAScheduleTickIsListedAsSkipped) {
  SetProperty("max_queued_events", 0);
  ASSERT_TRUE(Load(R"([{"id": "on_t", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []},
    {"id": "on_t2", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []},
    {"id": "tick", "trigger": {"type": "schedule", "every": "1h"},
     "actions": [{"action": "create_record", "inputs": {"table": "t", "values": {}}}]}])"));
  Advance("1h");
  EXPECT_TRUE(Contexts("tick").empty());
  std::vector<Value> skipped = Skipped();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]["flow"], Value("tick"));
  EXPECT_EQ(skipped[0]["reason"], Value("max_queued_events"));
  // Room for the tick, not for the two starts its write would make.
  SetProperty("max_queued_events", 1);
  Advance("1h");
  EXPECT_THAT(OnlyContext("tick"),
              FailedWith("the event queue is full: 0 trigger events wait to start and this would add 2, past the "
                         "limit of 1 (max_queued_events); refused, nothing was written"));
  EXPECT_TRUE(Records("t").empty());
}

// ---- max_iterations ----

TEST_F(RuntimeBudgetsTest, Iterations_AMillionItemForEachIsStoppedAtMaxIterations) {
  ASSERT_TRUE(Load(R"({"id": "loop", "trigger": {"type": "api"}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [{"action": "set_variables", "inputs": {"values": {"n": "{{item}}"}}}]}]})"));
  auto items = [](size_t n) {
    std::vector<Value> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = Value(static_cast<long long>(i));
    return Value::object({{"items", Value::array(std::move(v))}});
  };
  const std::string at = CallFlow("loop", items(1000));
  const std::string million = CallFlow("loop", items(1000000));
  Settle();
  EXPECT_THAT(ContextById(at), HasStatus("completed"));
  EXPECT_EQ(ContextById(at).value()["variables"]["n"], Value(999));
  EXPECT_THAT(ContextById(million), FailedWith("for_each over 1000000 items is more than max_iterations (1000)"));
  EXPECT_EQ(ContextById(million).value()["error"]["step"], Value("1"));
}

// The json transform writes its input out as text, which a next json escapes again: each
// json in a chain doubles a string (or more), and a single pill with transforms was not
// measured as a template putting pills together is. Each json now stops where its text
// would pass max_value_bytes: 40 of them fail the step at once instead of building 2^40
// bytes (until 2026-12-06, 26 made a 201 MB variable, and 40 ran until the machine's
// memory was gone).
TEST_F(RuntimeBudgetsTest, ValuesAFlowBuilds_AChainOfJsonTransforms_StopsAtMaxValueBytes) {
  SetProperty("max_value_bytes", 4096);
  std::string chain = "{{inputs.u";
  for (int i = 0; i < 40; ++i) chain += " | json";
  chain += "}}";
  ASSERT_TRUE(Load(R"({"id": "chain", "trigger": {"type": "api"}, "variables": {"r": null}, "actions": [
    {"id": "s", "action": "set_variables", "inputs": {"values": {"r": ")" + chain + R"("}}}]})"));
  const std::string id = CallFlow("chain", Json(R"({"u": "\""})"));
  Settle();
  EXPECT_THAT(ContextById(id), FailedWith("json would make a text larger than the limit of 4096 bytes (max_value_bytes)"));
}

// ---- max_context_steps ----

// Three nested loops of 1000 turns would record a billion steps well within max_run_time,
// and their record would take the process's memory. The context ends in error before the
// step past the budget, as past the quota: a try around it does not catch it, and its
// open steps (the loops and the try) end in error.
TEST_F(RuntimeBudgetsTest, ContextSteps_ThreeNestedLoopsOfAThousand_EndInErrorAtTheBudget_InsideTryToo) {
  ASSERT_TRUE(Load(R"({"id": "cube", "trigger": {"type": "api"}, "actions": [
    {"try": [
      {"for_each": "{{inputs.items}}", "do": [
        {"for_each": "{{inputs.items}}", "do": [
          {"for_each": "{{inputs.items}}", "do": [
            {"action": "set_variables", "inputs": {"values": {"n": "{{item}}"}}}]}]}]}],
     "catch": [{"action": "log", "inputs": {"message": "caught"}}]}]})"));
  std::vector<Value> items(1000);
  for (size_t i = 0; i < items.size(); ++i) items[i] = Value(static_cast<long long>(i));
  const std::string id = CallFlow("cube", Value::object({{"items", Value::array(std::move(items))}}));
  Settle();
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, FailedWith("the context would record more than 100000 steps (max_context_steps)"));
  EXPECT_EQ(c.steps().size(), 100000u);
  EXPECT_TRUE(c.log_messages().empty()) << "not caught";
  EXPECT_EQ(c.steps().at(0)["status"], Value("error")) << "the try, open when it ended";
}

// The budget counts every step the context records, and a context may record exactly as
// many; the property is set like any other (events file, config, library).
TEST_F(RuntimeBudgetsTest, ContextSteps_AContextMayRecordExactlyTheBudget_NotOneMore) {
  SetProperty("max_context_steps", 3);
  ASSERT_TRUE(Load(R"([
    {"id": "three", "trigger": {"type": "api"}, "actions": [
      {"action": "log", "inputs": {"message": "1"}}, {"action": "log", "inputs": {"message": "2"}},
      {"action": "log", "inputs": {"message": "3"}}]},
    {"id": "four", "trigger": {"type": "api"}, "actions": [
      {"action": "log", "inputs": {"message": "1"}}, {"action": "log", "inputs": {"message": "2"}},
      {"action": "log", "inputs": {"message": "3"}}, {"action": "log", "inputs": {"message": "4"}}]}])"));
  const std::string three = CallFlow("three");
  const std::string four = CallFlow("four");
  Settle();
  EXPECT_THAT(ContextById(three), HasStatus("completed"));
  EXPECT_THAT(ContextById(four), FailedWith("the context would record more than 3 steps (max_context_steps)"));
  EXPECT_EQ(ContextById(four).log_messages(), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_FALSE(engine().set_property("max_context_steps", Value(0)).is_ok());
  EXPECT_EQ(properties_to_value(engine().properties())["max_context_steps"], Value(3));
}

// ---- values a flow builds: max_value_bytes and max_json_depth ----

// A variable set from itself twice doubles at every turn of a loop. A pill's value is
// shared, not copied, so the value costs nothing until something writes it out: the
// record, a store; after 40 turns that would be terabytes. The value a template puts
// together is measured as it would be written, and one past the budget fails its step.
TEST_F(RuntimeBudgetsTest, ValuesAFlowBuilds_PastMaxValueBytes_FailTheirStep_AsArraysAsText) {
  SetProperty("max_value_bytes", 4096);
  ASSERT_TRUE(Load(R"({"id": "twice", "trigger": {"type": "api"}, "variables": {"x": "ab"}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [
      {"action": "set_variables", "inputs": {"values": {"x": ["{{vars.x}}", "{{vars.x}}"]}}}]}]})"));
  ASSERT_TRUE(Load(R"({"id": "text", "trigger": {"type": "api"}, "variables": {"x": "ab"}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [
      {"action": "set_variables", "inputs": {"values": {"x": "{{vars.x}}{{vars.x}}"}}}]}]})"));
  ASSERT_TRUE(Load(R"({"id": "input", "trigger": {"type": "api"}, "variables": {"x": "ab"}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [
      {"action": "set_variables", "inputs": {"values": {"x": "{{vars.x}}{{vars.x}}"}}},
      {"action": "log", "inputs": {"message": "{{vars.x}} {{vars.x}}"}}]}]})"));
  auto turns = [](int n) {
    std::vector<Value> v(static_cast<size_t>(n), Value(1));
    return Value::object({{"items", Value::array(std::move(v))}});
  };
  const std::string within = CallFlow("twice", turns(8));  // ["ab"] doubled 8 times: 2,815 bytes
  const std::string doubled = CallFlow("twice", turns(40));
  const std::string text = CallFlow("text", turns(40));
  const std::string input = CallFlow("input", turns(40));
  Settle();
  EXPECT_THAT(ContextById(within), HasStatus("completed"));
  const char* past = "value 'x' is larger than the limit of 4096 bytes of JSON (max_value_bytes)";
  EXPECT_THAT(ContextById(doubled), FailedWith(past));
  EXPECT_THAT(ContextById(text), FailedWith(past));
  EXPECT_THAT(ContextById(input),
              FailedWith("input 'message' is larger than the limit of 4096 bytes of JSON (max_value_bytes)"));
  // The records read as any other: what failed never became a variable.
  EXPECT_LT(ContextById(doubled).value().to_json().size(), size_t{64} << 10);
}

// A variable nested in itself at every turn: past max_json_depth its step fails (writing,
// freeing or measuring a value a million levels deep would overflow the stack).
TEST_F(RuntimeBudgetsTest, ValuesAFlowBuilds_PastMaxJsonDepth_FailTheirStep) {
  SetProperty("max_json_depth", 32);
  ASSERT_TRUE(Load(R"({"id": "nest", "trigger": {"type": "api"}, "variables": {"x": 1}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [
      {"action": "set_variables", "inputs": {"values": {"x": {"w": "{{vars.x}}"}}}}]}]})"));
  auto turns = [](int n) {
    std::vector<Value> v(static_cast<size_t>(n), Value(1));
    return Value::object({{"items", Value::array(std::move(v))}});
  };
  const std::string at = CallFlow("nest", turns(32));
  const std::string past = CallFlow("nest", turns(1000));
  Settle();
  EXPECT_THAT(ContextById(at), HasStatus("completed"));
  EXPECT_THAT(ContextById(past), FailedWith("value 'x' nests deeper than the limit of 32 (max_json_depth)"));
}

// ---- max_schedule_fires_per_advance ----

constexpr const char* kEverySecond = R"({"id": "tick", "trigger": {"type": "schedule", "every": "1s", "start": "2026-01-01T00:00:01Z"},
  "actions": [{"action": "log", "inputs": {"message": "{{trigger.time}}"}}]})";

TEST_F(RuntimeBudgetsTest, ScheduleFires_AtTheBudgetTheAdvanceCompletes) {
  SetProperty("max_schedule_fires_per_advance", 10);
  ASSERT_TRUE(Load(kEverySecond));
  Status s = engine().advance(10000);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(Contexts("tick").size(), 10u);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 10000);
}

// Past the budget, advance stops at the moment of the first schedule trigger it did not
// fire, and says so; that one and the rest are not lost: the next advance fires them
// first, with their own scheduled times.
TEST_F(RuntimeBudgetsTest, ScheduleFires_OnePastTheBudget_AdvanceStopsThereWithAnError_NothingIsDropped) {
  SetProperty("max_schedule_fires_per_advance", 10);
  ASSERT_TRUE(Load(kEverySecond));
  Status s = engine().advance(60000);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(),
            "advance stopped at 2026-01-01T00:00:11.000Z, 49s short of 2026-01-01T00:01:00.000Z: one more schedule "
            "trigger would pass the limit of 10 fires in one advance (max_schedule_fires_per_advance); it and the rest "
            "fire at the next advance");
  EXPECT_EQ(Contexts("tick").size(), 10u);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 11000);
  EXPECT_TRUE(engine().advance(9000).is_ok());
  std::vector<ContextRecord> ticks = Contexts("tick");
  ASSERT_EQ(ticks.size(), 20u);
  for (size_t i = 0; i < ticks.size(); ++i) {
    EXPECT_THAT(ticks[i], HasLog(format_time(kDefaultVirtualStart + 1000 * static_cast<TimeMs>(i + 1))));
  }
}

// Schedule triggers that fell due while a settle moved the clock past them fire at the
// next advance; when the budget stops that advance, the error names the first one not
// fired. Until 2026-12-06 it said "advance stopped at T, 0ms short of T" with T the
// clock's time, hours after the occurrences it had not fired.
TEST_F(RuntimeBudgetsTest, ScheduleFires_DueSinceASettle_TheStopNamesTheFirstNotFired) {
  SetProperty("max_schedule_fires_per_advance", 3);
  ASSERT_TRUE(Load(R"([{"id": "tick", "trigger": {"type": "schedule", "every": "1h"}, "actions": []},
    {"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "10h"}}]}])"));
  CallFlow("w");
  Settle();  // to 10:00, the ticks due meanwhile left for the next advance
  ASSERT_EQ(engine().now(), kDefaultVirtualStart + 10 * 3600000);
  Status s = engine().advance(0);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(),
            "advance stopped at 2026-01-01T10:00:00.000Z with schedule triggers due since 2026-01-01T04:00:00.000Z "
            "not fired: one more schedule trigger would pass the limit of 3 fires in one advance "
            "(max_schedule_fires_per_advance); it and the rest fire at the next advance");
  EXPECT_EQ(Contexts("tick").size(), 3u);
}

// Several schedules due at the same moment: the budget may end inside that moment; the
// rest of the moment fires at the next advance, in order.
TEST_F(RuntimeBudgetsTest, ScheduleFires_TheBudgetEndsInsideOneMoment_TheRestFireNext) {
  SetProperty("max_schedule_fires_per_advance", 2);
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(Load(std::string(R"({"id": ")") + id +
                     R"(", "trigger": {"type": "schedule", "at": "2026-01-01T00:00:05Z"}, "actions": []})"));
  }
  Status s = engine().advance(10000);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("advance stopped at 2026-01-01T00:00:05.000Z"), std::string::npos) << s.message();
  EXPECT_EQ(Contexts().size(), 2u);
  EXPECT_TRUE(engine().advance(0).is_ok());
  EXPECT_EQ(Contexts().size(), 3u);
}

// The storm of the issue: "every" 1ms (allowed here by lowering min_schedule_interval)
// and a day's advance. The budget stops it after 1,000 contexts instead of 86 million.
TEST_F(RuntimeBudgetsTest, ScheduleFires_AnEveryMillisecondStormIsStoppedAtTheBudget) {
  SetProperty("min_schedule_interval", 1);
  SetProperty("max_schedule_fires_per_advance", 1000);
  ASSERT_TRUE(Load(R"({"id": "storm", "trigger": {"type": "schedule", "every": "1ms"}, "actions": []})"));
  Status s = engine().advance(24 * 3600 * 1000);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("would pass the limit of 1000 fires in one advance (max_schedule_fires_per_advance)"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(Contexts("storm").size(), 1000u);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 1001);
  EXPECT_EQ(engine().properties().max_schedule_fires_per_advance, 1000u);
}

// The fixture's Advance reports a stopped advance as a test failure.
TEST_F(RuntimeBudgetsTest, ScheduleFires_TheFixturesAdvanceReportsTheError) {
  SetProperty("max_schedule_fires_per_advance", 1);
  ASSERT_TRUE(Load(kEverySecond));
  EXPECT_NONFATAL_FAILURE(Advance("5s"), "max_schedule_fires_per_advance");
}

// The events file reports it as the error of the advance line.
TEST_F(RuntimeBudgetsTest, ScheduleFires_InTheEventsFile_TheAdvanceLineIsTheError) {
  ASSERT_TRUE(Load(kEverySecond));
  Status s = Harness(engine()).run_text(
      "{\"op\": \"set_property\", \"name\": \"max_schedule_fires_per_advance\", \"value\": 3}\n"
      "{\"op\": \"advance\", \"duration\": \"2s\"}\n"
      "{\"op\": \"advance\", \"duration\": \"1h\"}\n"
      "{\"op\": \"insert\", \"table\": \"t\", \"values\": {}}\n",
      "events.jsonl");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("events.jsonl:3: advance stopped at 2026-01-01T00:00:06.000Z", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("(max_schedule_fires_per_advance)"), std::string::npos) << s.message();
  EXPECT_EQ(Contexts("tick").size(), 5u);
  EXPECT_TRUE(Records("t").empty()) << "nothing after the bad line is applied";
}

}  // namespace
}  // namespace flowrt
