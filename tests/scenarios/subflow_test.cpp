// Harness scenarios for subflows and action definitions: inputs, outputs, errors, recursion.
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class SubflowTest : public FlowTest {};

constexpr const char* kAssignee = R"({"id": "pick_assignee", "type": "subflow",
  "inputs": [{"name": "group", "type": "string", "required": true}],
  "outputs": [{"name": "assignee", "type": "string"}, {"name": "found", "type": "boolean"}],
  "actions": [
    {"id": "u", "action": "look_up_record", "inputs": {"table": "user", "condition": {"field": "group", "op": "eq", "value": "{{inputs.group}}"}}},
    {"action": "log", "inputs": {"message": "looked in {{inputs.group}}"}},
    {"action": "assign_outputs", "inputs": {"values": {"assignee": "{{steps.u.record.name}}", "found": "{{steps.u.found}}"}}}]})";

TEST_F(SubflowTest, CallSubflow_RunsInsideCallingContext_WithInputsAndOutputs) {
  ASSERT_TRUE(Load(std::string("[") + kAssignee + R"(,
    {"id": "assign", "trigger": {"type": "record", "table": "incident", "when": "created"}, "actions": [
      {"id": "pick", "action": "call_subflow", "inputs": {"subflow": "pick_assignee", "inputs": {"group": "{{trigger.record.group}}"}}},
      {"action": "update_record", "inputs": {"table": "incident", "sys_id": "{{trigger.sys_id}}", "values": {"assigned_to": "{{steps.pick.assignee}}"}}}]}])"));
  Insert("user", Json(R"({"name": "ann", "group": "net"})"));
  Value inc = Insert("incident", Json(R"({"group": "net"})"));
  Settle();
  ASSERT_EQ(Contexts().size(), 1u) << "the subflow runs inside the calling context";
  ContextRecord c = OnlyContext("assign");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(engine().record("incident", inc["sys_id"].as_string())["assigned_to"], Value("ann"));
  EXPECT_EQ(c.step("pick")["outputs"], Json(R"({"assignee": "ann", "found": true})"));
  EXPECT_EQ(c.step("pick")["inputs"], Json(R"({"subflow": "pick_assignee", "inputs": {"group": "net"}})"));
  std::vector<std::string> paths;
  for (const Value& s : c.steps().items()) paths.emplace_back(s["path"].as_string());
  EXPECT_EQ(paths, (std::vector<std::string>{"1", "1.subflow.1", "1.subflow.2", "1.subflow.3", "2"}));
  EXPECT_EQ(c.logs().at(0)["step"], Value("1.subflow.2"));
}

TEST_F(SubflowTest, SubflowFailure_FailsTheCallStep_OnErrorApplies) {
  ASSERT_TRUE(Load(R"([
    {"id": "boom", "type": "subflow", "inputs": [{"name": "why", "type": "string"}], "actions": [
      {"action": "fail", "inputs": {"message": "because {{inputs.why}}"}}]},
    {"id": "caller", "trigger": {"type": "api"}, "actions": [
      {"id": "a", "action": "call_subflow", "on_error": "continue", "inputs": {"subflow": "boom", "inputs": {"why": "one"}}},
      {"action": "log", "inputs": {"message": "went on: {{steps.a.error}}"}},
      {"id": "b", "action": "call_subflow", "inputs": {"subflow": "boom", "inputs": {"why": "two"}}},
      {"action": "log", "inputs": {"message": "never"}}]}])"));
  CallFlow("caller");
  Settle();
  ContextRecord c = OnlyContext("caller");
  EXPECT_THAT(c, HasLog("went on: because one"));
  EXPECT_THAT(c, FailedWith("because two"));
  EXPECT_EQ(c.error()["step"], Value("3.subflow.1"));
  EXPECT_THAT(c, HasStep("b", "error"));
}

TEST_F(SubflowTest, RuntimeInputTypeMismatch_FailsTheCallStep) {
  ASSERT_TRUE(Load(std::string("[") + kAssignee + R"(,
    {"id": "caller", "trigger": {"type": "api"}, "actions": [
      {"id": "p", "action": "call_subflow", "inputs": {"subflow": "pick_assignee", "inputs": {"group": "{{inputs.g}}"}}}]}])"));
  CallFlow("caller", Json(R"({"g": 42})"));
  CallFlow("caller", Json(R"({})"));
  Settle();
  std::vector<ContextRecord> cs = Contexts("caller");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0], FailedWith("input 'group' of subflow 'pick_assignee' must be a string, got 42"));
  EXPECT_THAT(cs[1], FailedWith("subflow 'pick_assignee' needs input 'group'"));
}

TEST_F(SubflowTest, ActionDefinition_IsCalledByIdLikeABuiltIn) {
  ASSERT_TRUE(Load(R"([
    {"id": "greeting", "type": "action", "inputs": [{"name": "name", "type": "string", "required": true}],
     "outputs": [{"name": "text", "type": "string"}], "actions": [
       {"action": "assign_outputs", "inputs": {"values": {"text": "Hello, {{inputs.name | upper}}"}}}]},
    {"id": "greet", "trigger": {"type": "api"}, "actions": [
      {"id": "g", "action": "greeting", "inputs": {"name": "ada"}},
      {"action": "log", "inputs": {"message": "{{steps.g.text}}"}}]}])"));
  CallFlow("greet");
  Settle();
  ContextRecord c = OnlyContext("greet");
  EXPECT_THAT(c, HasLog("Hello, ADA"));
  EXPECT_EQ(c.steps().at(1)["path"], Value("1.action.1"));
}

TEST_F(SubflowTest, SubflowWithLoopsAndWaits_ResumesInTheRightFrame) {
  ASSERT_TRUE(Load(R"([
    {"id": "slow", "type": "subflow", "inputs": [{"name": "n", "type": "integer"}], "outputs": [{"name": "total", "type": "integer"}],
     "variables": {"t": 0}, "actions": [
       {"for_each": [1, 2, 3], "do": [
         {"action": "wait", "inputs": {"duration": "1m"}},
         {"action": "set_variables", "inputs": {"values": {"t": "{{vars.t | add: item}}"}}}]},
       {"action": "assign_outputs", "inputs": {"values": {"total": "{{vars.t | mul: 2}}"}}}]},
    {"id": "caller", "trigger": {"type": "api"}, "actions": [
      {"id": "s", "action": "call_subflow", "inputs": {"subflow": "slow", "inputs": {"n": 2}}},
      {"action": "log", "inputs": {"message": "total {{steps.s.total}}"}}]}])"));
  const std::string id = CallFlow("caller");
  Settle();
  ContextRecord c = ContextById(id);
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(c, HasLog("total 12"));
  EXPECT_EQ(Ms(c.value()["ended_at"]), 3 * 60 * 1000);
  EXPECT_EQ(c.steps().at(2)["path"], Value("1.subflow.1.do.1#1"));
}

// A unit the compiler reached shallow (the flow calls it first) may be called again deep
// down a chain: the interpreter fails the call that would nest past kMaxCallDepth units,
// as the step's error says, and the context ends in error (try/catch would apply).
TEST_F(SubflowTest, ACallPast64UnitsDeep_FailsItsStep) {
  std::string defs = R"([{"id": "leaf", "type": "subflow", "actions": [{"action": "log", "inputs": {"message": "leaf"}}]})";
  const size_t chain = kMaxCallDepth - 1;  // s0 .. s62: with the flow, 64 units; leaf would be the 65th
  for (size_t i = 0; i < chain; ++i) {
    const std::string next = i + 1 < chain ? "s" + std::to_string(i + 1) : "leaf";
    defs += R"(, {"id": "s)" + std::to_string(i) + R"(", "type": "subflow", "actions": [{"action": "call_subflow", "inputs": {"subflow": ")" +
            next + R"("}}]})";
  }
  defs += R"(, {"id": "deep", "trigger": {"type": "api"}, "actions": [
    {"action": "call_subflow", "inputs": {"subflow": "leaf"}},
    {"action": "call_subflow", "inputs": {"subflow": "s0"}}]}])";
  ASSERT_TRUE(Load(defs));
  CallFlow("deep");
  Settle();
  ContextRecord c = OnlyContext("deep");
  EXPECT_THAT(c, FailedWith("calls nested more than 64 deep (subflow 'leaf')"));
  EXPECT_EQ(c.logs().size(), 1u) << "leaf ran once, called from the flow";
}

}  // namespace
}  // namespace flowrt
