// Harness scenarios for data pills, templates and transforms (SPEC section 5).
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class TemplatesTest : public FlowTest {};

TEST_F(TemplatesTest, ExactPillKeepsType_PillInTextRendersAsText) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "c", "action": "create_record", "inputs": {"table": "out", "values": {
      "n": "{{inputs.n}}", "obj": "{{inputs.obj}}", "text": "n={{inputs.n}} obj={{inputs.obj}} none=[{{inputs.missing}}] b={{inputs.b}}",
      "nested": {"list": ["{{inputs.n}}", "x"]}, "ctx": "{{context.id}}/{{flow.id}}"}}}]})"));
  const std::string id = CallFlow("t", Json(R"({"n": 5, "obj": {"a": [1, "x"]}, "b": false})"));
  Settle();
  ASSERT_THAT(ContextById(id), HasStatus("completed"));
  Value r = Records("out").at(0);
  EXPECT_EQ(r["n"], Value(5));
  EXPECT_EQ(r["obj"], Json(R"({"a": [1, "x"]})"));
  EXPECT_EQ(r["text"], Value(R"(n=5 obj={"a":[1,"x"]} none=[] b=false)"));
  EXPECT_EQ(r["nested"], Json(R"({"list": [5, "x"]})"));
  EXPECT_EQ(r["ctx"], Value(id + "/t"));
}

// Step ids may hold dots, as definition ids may: a pill reads the step its path's first
// part names, or when that does not fit, the shortest longer run of parts that does (until
// 2026-12-06 `steps.s.1.record` was "unknown step 's'", so such a step could never be read).
TEST_F(TemplatesTest, AStepIdWithDots_IsReadWhenTheFirstPartDoesNotFit) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "s", "action": "create_record", "inputs": {"table": "a", "values": {"v": "short"}}},
    {"id": "s.1", "action": "create_record", "inputs": {"table": "a", "values": {"v": "dotted"}}},
    {"id": "s.1.x", "action": "create_record", "inputs": {"table": "a", "values": {"v": "longer"}}},
    {"action": "create_record", "inputs": {"table": "out", "values": {
      "dotted": "{{steps.s.1.record.v}}", "longest": "{{steps.s.1.x.record.v}}", "short": "{{steps.s.record.v}}"}}}]})"));
  const std::string id = CallFlow("t");
  Settle();
  ASSERT_THAT(ContextById(id), HasStatus("completed"));
  const Value r = Records("out").at(0);
  EXPECT_EQ(r["dotted"], Value("dotted"));
  EXPECT_EQ(r["longest"], Value("longer"));
  EXPECT_EQ(r["short"], Value("short"));
  Diagnostics d = engine().load_text(R"({"id": "u", "trigger": {"type": "api"}, "actions": [
    {"id": "s.1", "action": "log", "inputs": {"message": "x"}},
    {"action": "log", "inputs": {"message": "{{steps.s.1.nope}}"}}]})", "u.json");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.list()[0].message, "{{steps.s.1.nope}}: step 's.1' (log) has no output 'nope'; its outputs: none, error");

  // A pill that read a step before still reads it, whatever ids come later.
  ASSERT_TRUE(Load(R"({"id": "v", "trigger": {"type": "api"}, "actions": [
    {"id": "s", "action": "create_record", "inputs": {"table": "b", "values": {"v": "first"}}},
    {"action": "create_record", "inputs": {"table": "out_v", "values": {"got": "{{steps.s.record.v}}"}}},
    {"id": "s.record", "action": "create_record", "inputs": {"table": "b", "values": {"v": "later"}}}]})"));
  CallFlow("v");
  Settle();
  EXPECT_EQ(Records("out_v").at(0)["got"], Value("first"));
}

TEST_F(TemplatesTest, UpperAndLower_MapUnicodeLetters) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "c", "action": "create_record", "inputs": {"table": "out", "values": {
      "upper": "{{inputs.s | upper}}", "lower": "{{inputs.s | lower}}", "len": "{{inputs.s | upper | length}}"}}}]})"));
  CallFlow("t", Json(R"({"s": "Ärger über Σίσυφος, straße, Île"})"));
  Settle();
  ASSERT_THAT(OnlyContext("t"), HasStatus("completed"));
  Value r = Records("out").at(0);
  // Simple (one letter for one) case mapping: ß becomes the capital ẞ, not "SS".
  EXPECT_EQ(r["upper"], Value("ÄRGER ÜBER ΣΊΣΥΦΟΣ, STRAẞE, ÎLE"));
  EXPECT_EQ(r["lower"], Value("ärger über σίσυφος, straße, île"));
  EXPECT_EQ(r["len"], Value(31));
}

TEST_F(TemplatesTest, Transforms_ComputeAndChain) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "c", "action": "create_record", "inputs": {"table": "out", "values": {
      "add": "{{inputs.n | add: 2}}", "sub": "{{inputs.n | sub: 10}}", "mul": "{{inputs.n | mul: 1.5}}",
      "div": "{{inputs.n | div: 2}}", "idiv": "{{inputs.n | div: 5}}", "mod": "{{inputs.n | mod: 3}}",
      "upper": "{{inputs.s | upper}}", "lower": "{{inputs.s | lower}}", "trim": "{{inputs.pad | trim}}",
      "len_s": "{{inputs.s | length}}", "len_a": "{{inputs.list | length}}",
      "dflt": "{{inputs.missing | default: \"none\"}}", "dflt_n": "{{inputs.missing | default: 0 | add: 1}}",
      "json": "{{inputs.list | json}}", "not": "{{inputs.flag | not}}", "chain": "{{inputs.pad | trim | upper | length}}"}}}]})"));
  CallFlow("t", Json(R"({"n": 10, "s": "MiXed", "pad": "  ab  ", "list": [1, 2, 3], "flag": false})"));
  Settle();
  ASSERT_THAT(OnlyContext("t"), HasStatus("completed"));
  Value r = Records("out").at(0);
  EXPECT_EQ(r["add"], Value(12));
  EXPECT_EQ(r["sub"], Value(0));
  EXPECT_EQ(r["mul"], Value(15.0));
  EXPECT_EQ(r["div"], Value(5));
  EXPECT_EQ(r["idiv"], Value(2));
  EXPECT_EQ(r["mod"], Value(1));
  EXPECT_EQ(r["upper"], Value("MIXED"));
  EXPECT_EQ(r["lower"], Value("mixed"));
  EXPECT_EQ(r["trim"], Value("ab"));
  EXPECT_EQ(r["len_s"], Value(5));
  EXPECT_EQ(r["len_a"], Value(3));
  EXPECT_EQ(r["dflt"], Value("none"));
  EXPECT_EQ(r["dflt_n"], Value(1));
  EXPECT_EQ(r["json"], Value("[1,2,3]"));
  EXPECT_EQ(r["not"], Value(true));
  EXPECT_EQ(r["chain"], Value(2));
}

TEST_F(TemplatesTest, TransformOfWrongTypeAtRunTime_IsStepErrorNamingThePill) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "l", "action": "log", "inputs": {"message": "{{inputs.s | add: 1}}"}}]})"));
  CallFlow("t", Json(R"({"s": "text"})"));
  Settle();
  ContextRecord c = OnlyContext("t");
  EXPECT_THAT(c, FailedWith("{{inputs.s | add: 1}}: add needs a number, got string"));
  EXPECT_THAT(c, HasStep("l", "error"));
}

TEST_F(TemplatesTest, DivisionByZero_IsStepError) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "{{inputs.n | div: 0}}"}}]})"));
  CallFlow("t", Json(R"({"n": 1})"));
  Settle();
  EXPECT_THAT(OnlyContext("t"), FailedWith("div by zero"));
}

TEST_F(TemplatesTest, PathsIntoArraysAndMissingValues_YieldNull) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "api"}, "actions": [
    {"id": "list", "action": "look_up_records", "inputs": {"table": "u", "order_by": "name"}},
    {"action": "log", "inputs": {"message": "{{steps.list.records.1.name}}|{{steps.list.records[0].name}}|{{steps.list.records.9.name}}|{{inputs.a.b.c}}"}}]})"));
  Insert("u", Json(R"({"name": "b"})"));
  Insert("u", Json(R"({"name": "a"})"));
  CallFlow("t");
  Settle();
  EXPECT_THAT(OnlyContext("t"), HasLog("b|a||"));
}

TEST_F(TemplatesTest, TriggerPills_TableOperationSysIdTimeAndPrevious) {
  ASSERT_TRUE(Load(R"({"id": "t", "trigger": {"type": "record", "table": "doc", "when": "updated"}, "actions": [
    {"action": "log", "inputs": {"message": "{{trigger.table}} {{trigger.operation}} {{trigger.sys_id}} {{trigger.time}} {{trigger.previous.v}}->{{trigger.record.v}} {{trigger.type}}"}}]})"));
  Value r = Insert("doc", Json(R"({"sys_id": "d1", "v": 1})"));
  Advance("1s");
  Update("doc", "d1", Json(R"({"v": 2})"));
  Settle();
  EXPECT_THAT(OnlyContext("t"), HasLog("doc update d1 2026-01-01T00:00:01.000Z 1->2 record"));
}

// Braces escaped with a backslash are text, in a log message and in a record's value, and
// a pill beside them still renders.
TEST_F(TemplatesTest, EscapedBraces_AreText_BesideAPill) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "\\{{greeting}} for {{inputs.who}}"}},
    {"action": "create_record", "inputs": {"table": "mail", "values": {"body": "Hello \\{{name}}"}}}]})"));
  CallFlow("f", Json(R"({"who": "Ada"})"));
  Settle();
  EXPECT_THAT(OnlyContext("f"), HasLog("{{greeting}} for Ada"));
  ASSERT_EQ(Records("mail").size(), 1u);
  EXPECT_EQ(Records("mail")[0]["body"], Value("Hello {{name}}"));
}

}  // namespace
}  // namespace flowrt
