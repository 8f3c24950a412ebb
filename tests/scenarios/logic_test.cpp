// Harness scenarios for flow logic (SPEC section 7) and on_error.
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class LogicTest : public FlowTest {};

TEST_F(LogicTest, If_TakesFirstMatchingBranch_ElseIfAndElse) {
  ASSERT_TRUE(Load(R"({"id": "grade", "trigger": {"type": "api"}, "actions": [
    {"if": {"pill": "inputs.score", "op": "ge", "value": 90}, "then": [{"action": "log", "inputs": {"message": "A"}}],
     "else_if": [{"if": {"pill": "inputs.score", "op": "ge", "value": 50}, "then": [{"action": "log", "inputs": {"message": "pass"}}]}],
     "else": [{"action": "log", "inputs": {"message": "fail"}}]}]})"));
  const std::string a = CallFlow("grade", Json(R"({"score": 95})"));
  const std::string b = CallFlow("grade", Json(R"({"score": 60})"));
  const std::string c = CallFlow("grade", Json(R"({"score": 10})"));
  Settle();
  EXPECT_THAT(ContextById(a), HasLog("A"));
  EXPECT_THAT(ContextById(b), HasLog("pass"));
  EXPECT_THAT(ContextById(c), HasLog("fail"));
  const ContextRecord second = ContextById(b);
  const Value& steps = second.steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps.at(0)["action"], Value("if"));
  EXPECT_EQ(steps.at(0)["outputs"]["branch"], Value("else_if.1"));
  EXPECT_EQ(steps.at(1)["path"], Value("1.else_if.1.then.1"));
  EXPECT_EQ(ContextById(c).steps().at(1)["path"], Value("1.else.1"));
}

TEST_F(LogicTest, If_FieldCondition_ReadsTriggerRecord) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [
    {"if": {"field": "p", "op": "in", "value": [1, 2]}, "then": [{"action": "log", "inputs": {"message": "urgent"}}]}]})"));
  Insert("t", Json(R"({"p": 2})"));
  Insert("t", Json(R"({"p": 5})"));
  Settle();
  std::vector<ContextRecord> cs = Contexts("f");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0], HasLog("urgent"));
  EXPECT_TRUE(cs[1].logs().size() == 0);
}

// {"field": F} in flow logic is trigger.record.F: the record as the trigger saw it, not as
// it is now; under an update trigger, changes ops compare it with trigger.previous.F.
TEST_F(LogicTest, If_FieldCondition_IsTheTriggerRecord_ChangesComparesWithPrevious) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "updated"}, "actions": [
    {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{trigger.sys_id}}", "values": {"state": "reopened"}}},
    {"if": {"field": "state", "op": "changes_to", "value": "closed"},
     "then": [{"action": "log", "inputs": {"message": "closed"}}],
     "else": [{"action": "log", "inputs": {"message": "{{trigger.previous.state}} -> {{trigger.record.state}}"}}]}]})"));
  Insert("t", Json(R"({"sys_id": "r", "state": "open"})"));
  Update("t", "r", Json(R"({"state": "closed"})"));
  Settle();
  Update("t", "r", Json(R"({"note": "x"})"));
  Settle();
  std::vector<ContextRecord> cs = Contexts("f");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0], HasLog("closed")) << "the record says reopened by then; the condition reads the trigger's";
  EXPECT_THAT(cs[1], HasLog("reopened -> reopened"));
}

TEST_F(LogicTest, ForEach_IteratesWithItemAndAs_PathsCarryIterations) {
  ASSERT_TRUE(Load(R"({"id": "loop", "trigger": {"type": "api"}, "variables": {"sum": 0}, "actions": [
    {"for_each": "{{inputs.rows}}", "as": "row", "do": [
      {"for_each": "{{row.cells}}", "do": [
        {"action": "set_variables", "inputs": {"values": {"sum": "{{vars.sum | add: item}}"}}}]},
      {"action": "log", "inputs": {"message": "{{row.name}}={{vars.sum}}"}}]}]})"));
  CallFlow("loop", Json(R"({"rows": [{"name": "a", "cells": [1, 2]}, {"name": "b", "cells": [3]}]})"));
  Settle();
  ContextRecord c = OnlyContext("loop");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.log_messages(), (std::vector<std::string>{"a=3", "b=6"}));
  EXPECT_EQ(c.variables()["sum"], Value(6));
  std::vector<std::string> paths;
  for (const Value& s : c.steps().items()) paths.emplace_back(s["path"].as_string());
  EXPECT_EQ(paths, (std::vector<std::string>{"1", "1.do.1#1", "1.do.1#1.do.1#1", "1.do.1#1.do.1#2", "1.do.2#1",
                                             "1.do.1#2", "1.do.1#2.do.1#1", "1.do.2#2"}));
  EXPECT_EQ(c.steps().at(0)["outputs"]["iterations"], Value(2));
}

TEST_F(LogicTest, ForEach_OverMaxIterations_FailsTheStep) {
  ASSERT_TRUE(engine().set_property("max_iterations", Value(3)).is_ok());
  ASSERT_TRUE(Load(R"({"id": "loop", "trigger": {"type": "api"}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [{"action": "log", "inputs": {"message": "{{item}}"}}]}]})"));
  const std::string ok = CallFlow("loop", Json(R"({"items": [1, 2, 3]})"));
  const std::string over = CallFlow("loop", Json(R"({"items": [1, 2, 3, 4]})"));
  Settle();
  EXPECT_THAT(ContextById(ok), HasStatus("completed"));
  EXPECT_THAT(ContextById(over), FailedWith("for_each over 4 items is more than max_iterations (3)"));
  EXPECT_TRUE(ContextById(over).logs().size() == 0);
}

TEST_F(LogicTest, TryCatch_CatchSeesErrorMessageAndStep_FlowGoesOn) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"try": [{"action": "log", "inputs": {"message": "before"}},
             {"action": "fail", "inputs": {"message": "boom {{inputs.n}}"}},
             {"action": "log", "inputs": {"message": "never"}}],
     "catch": [{"action": "log", "inputs": {"message": "caught {{error.message}} at {{error.step}}"}}]},
    {"action": "log", "inputs": {"message": "after"}}]})"));
  CallFlow("t", Json(R"({"n": 7})"));
  Settle();
  ContextRecord c = OnlyContext("t");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.log_messages(), (std::vector<std::string>{"before", "caught boom 7 at 1.try.2", "after"}));
  EXPECT_EQ(c.steps().at(0)["action"], Value("try"));
  EXPECT_EQ(c.steps().at(0)["outputs"]["caught"], Value(true));
}

TEST_F(LogicTest, ErrorInsideCatch_EndsTheContextInError) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"try": [{"action": "fail", "inputs": {"message": "first"}}],
     "catch": [{"action": "fail", "inputs": {"message": "second"}}]}]})"));
  CallFlow("t");
  Settle();
  ContextRecord c = OnlyContext("t");
  EXPECT_THAT(c, FailedWith("second"));
  EXPECT_EQ(c.error()["step"], Value("1.catch.1"));
}

TEST_F(LogicTest, OnErrorContinue_RecordsErrorAndExposesIt) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "bad", "action": "update_record", "on_error": "continue", "inputs": {"table": "x", "sys_id": "missing", "values": {}}},
    {"action": "log", "inputs": {"message": "error was: {{steps.bad.error}}"}}]})"));
  CallFlow("t");
  Settle();
  ContextRecord c = OnlyContext("t");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(c, HasStep("bad", "error"));
  EXPECT_THAT(c, HasLog("error was: no record in x with sys_id missing"));
}

TEST_F(LogicTest, OnErrorStop_EndsContextInErrorNamingTheStep) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "one"}},
    {"if": {"pill": "inputs.x", "op": "eq", "value": 1}, "then": [{"action": "fail", "inputs": {"message": "nope"}}]},
    {"action": "log", "inputs": {"message": "never"}}]})"));
  CallFlow("t", Json(R"({"x": 1})"));
  Settle();
  ContextRecord c = OnlyContext("t");
  EXPECT_THAT(c, FailedWith("nope"));
  EXPECT_EQ(c.error()["step"], Value("2.then.1"));
  EXPECT_EQ(c.log_messages(), std::vector<std::string>{"one"});
  EXPECT_FALSE(c.value()["ended_at"].is_null());
}

TEST_F(LogicTest, End_CompletesTheContextAtOnce_ClosingOpenLoops) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"for_each": [1, 2, 3], "do": [
      {"action": "log", "inputs": {"message": "{{item}}"}},
      {"if": {"pill": "item", "op": "eq", "value": 2}, "then": [{"end": true}]}]},
    {"action": "log", "inputs": {"message": "never"}}]})"));
  CallFlow("t");
  Settle();
  ContextRecord c = OnlyContext("t");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.log_messages(), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(c.steps().at(0)["status"], Value("completed"));
  // The loop records the iterations it began, as one that ran out of items does.
  EXPECT_EQ(c.steps().at(0)["outputs"], Json(R"({"iterations": 2})"));
}

TEST_F(LogicTest, End_InsideATryOrItsCatch_CompletesTheTryWithItsCaughtOutput) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"try": [{"for_each": [1, 2, 3], "do": [{"if": {"pill": "item", "op": "eq", "value": 2}, "then": [{"end": true}]}]}],
     "catch": []}]})"));
  ASSERT_TRUE(Load(R"({"id": "c", "trigger": {"type": "api"}, "actions": [
    {"try": [{"action": "fail", "inputs": {"message": "no"}}], "catch": [{"end": true}]}]})"));
  const std::string in_try = CallFlow("t");
  const std::string in_catch = CallFlow("c");
  Settle();
  const ContextRecord t = ContextById(in_try);
  ASSERT_THAT(t, HasStatus("completed"));
  EXPECT_EQ(t.steps().at(0)["action"], Value("try"));
  EXPECT_EQ(t.steps().at(0)["outputs"], Json(R"({"caught": false})"));
  EXPECT_EQ(t.steps().at(1)["outputs"], Json(R"({"iterations": 2})"));
  const ContextRecord c = ContextById(in_catch);
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.steps().at(0)["outputs"], Json(R"({"caught": true})"));
}

TEST_F(LogicTest, SetVariables_KeepTypes_AndAreVisibleWhileRunning) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "variables": {"n": 1, "tags": [], "fresh": null}, "actions": [
    {"action": "set_variables", "inputs": {"values": {"n": "{{vars.n | mul: 10}}", "tags": ["a", "{{inputs.t}}"], "fresh": true}}},
    {"action": "wait", "inputs": {"duration": "1m"}}]})"));
  const std::string id = CallFlow("t", Json(R"({"t": "b"})"));
  engine().settle(0);
  ContextRecord waiting = ContextById(id);
  EXPECT_THAT(waiting, HasStatus("waiting"));
  EXPECT_EQ(waiting.variables(), Json(R"({"n": 10, "tags": ["a", "b"], "fresh": true})"));
  Settle();
  EXPECT_THAT(ContextById(id), HasStatus("completed"));
}

}  // namespace
}  // namespace flowrt
