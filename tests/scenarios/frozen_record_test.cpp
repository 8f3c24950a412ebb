// A finished context in the memory store is kept frozen (runtime/frozen_context.h): its
// record must read exactly as the live context's did, whatever the flow did: every trigger
// type, a cause chain, loops, branches, caught and uncaught errors, logs of each level,
// variables, large values cut by record_value_limit. Each flow waits first, so that the test
// can hold the live Context; once it ends the store keeps the frozen form only, and the two
// records are compared.
#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class FrozenRecordTest : public FlowTest {
 protected:
  // Holds every live context now parked, lets them finish, and compares each one's frozen
  // record with its live one at several value limits.
  void ExpectFrozenRecordsReadAsLive(const std::string& advance = "1m") {
    engine().settle(0);
    std::vector<std::shared_ptr<Context>> parked = engine().core().contexts.unfinished();
    ASSERT_FALSE(parked.empty());
    Advance(advance);
    engine().settle(0);  // what is due now, without moving the clock further
    for (const std::shared_ptr<Context>& live : parked) {
      SCOPED_TRACE(live->id.as_string());
      ASSERT_TRUE(live->finished());
      const KeptContext kept = engine().core().contexts.find(live->seq);
      ASSERT_TRUE(kept);
      ASSERT_NE(kept.frozen(), nullptr) << "a finished context is kept frozen";
      EXPECT_EQ(kept.commit_seq(), live->commit_seq);
      for (size_t limit : {size_t{0}, size_t{40}, size_t{1000}}) {
        const Value frozen = kept.frozen()->to_value(limit);
        const Value was = live->to_value(limit);
        EXPECT_EQ(frozen, was) << "limit " << limit;
        EXPECT_EQ(frozen.to_json(), was.to_json()) << "the same member order, limit " << limit;
      }
      const Context::Summary a = kept.frozen()->summary();
      const Context::Summary b = live->summary();
      EXPECT_EQ(a.status, b.status);
      EXPECT_EQ(a.steps, b.steps);
      EXPECT_EQ(a.started, b.started);
      EXPECT_EQ(a.ended, b.ended);
      EXPECT_EQ(a.run_ms, b.run_ms);
      EXPECT_EQ(a.error, b.error);
    }
  }
};

TEST_F(FrozenRecordTest, ARecordTrigger_WithLookUpUpdateLogsAndVariables) {
  ASSERT_TRUE(Load(R"([{"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
    "variables": {"n": 1, "note": ""},
    "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"id": "u", "action": "look_up_record", "inputs": {"table": "users", "condition": {"field": "g", "op": "eq", "value": "{{trigger.record.g}}"}}},
      {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{trigger.sys_id}}", "values": {"who": "{{steps.u.record.name}}"}}},
      {"action": "set_variables", "inputs": {"values": {"n": 2, "note": "a note longer than fourteen bytes"}}},
      {"action": "log", "inputs": {"message": "info {{trigger.record.g}}"}},
      {"action": "log", "inputs": {"message": "a warning that is longer than the limit of forty bytes", "level": "warn"}},
      {"action": "log", "inputs": {"message": "e", "level": "error"}}]}])"));
  Insert("users", Json(R"({"name": "ada", "g": "net"})"));
  Insert("t", Json(R"({"g": "net", "text": "x"})"));
  Insert("t", Json(R"({"g": "db", "text": "y"})"));
  // An operation with a caller (flowrt serve's token name): its trigger names it.
  ASSERT_TRUE(engine().insert("t", Json(R"({"g": "net", "text": "z"})"), "ops"));
  ExpectFrozenRecordsReadAsLive();
  EXPECT_EQ(engine().context("ctx-3")->value()["trigger"]["caller"], Value("ops"));
}

TEST_F(FrozenRecordTest, AnApiTrigger_WithLargeInputs_LoopsBranchesAndACaughtError) {
  ASSERT_TRUE(Load(R"([{"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"for_each": "{{inputs.items}}", "do": [
        {"if": {"pill": "item", "op": "ge", "value": 2}, "then": [{"action": "log", "inputs": {"message": "big {{item}}"}}],
         "else": [{"action": "log", "inputs": {"message": "small {{item}}"}}]}]},
      {"try": [{"action": "fail", "inputs": {"message": "boom"}}],
       "catch": [{"action": "log", "inputs": {"message": "caught {{error.message}} at {{error.step}}"}}]},
      {"action": "log", "inputs": {"message": "{{inputs.text}}"}}]}])"));
  const std::string text(300, 'z');
  CallFlow("f", Value::object({{"items", Json("[1, 2, 3]")}, {"text", Value(std::string_view(text))}}));
  CallFlow("f", Value::object({{"items", Json("[]")}, {"text", Value("short")}}));
  ExpectFrozenRecordsReadAsLive();
}

TEST_F(FrozenRecordTest, AnUncaughtError_AndACancel) {
  ASSERT_TRUE(Load(R"([{"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "fail", "inputs": {"message": "it failed"}}]},
    {"id": "g", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]}])"));
  CallFlow("f");
  const std::string cancelled = CallFlow("g");
  engine().settle(0);
  ASSERT_TRUE(engine().cancel(cancelled).is_ok());
  ExpectFrozenRecordsReadAsLive();
}

TEST_F(FrozenRecordTest, AnEventTrigger_AndAContextWithACause) {
  ASSERT_TRUE(Load(R"([{"id": "start", "trigger": {"type": "event", "name": "go"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "create_record", "inputs": {"table": "t", "values": {"from": "{{trigger.payload.who}}"}}}]},
    {"id": "next", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "log", "inputs": {"message": "from {{trigger.record.from}}"}}]}])"));
  FireEvent("go", Json(R"({"who": "ada", "more": {"deep": [1, 2, 3]}})"));
  ExpectFrozenRecordsReadAsLive();  // `start` ends; `next` has started and waits
  ExpectFrozenRecordsReadAsLive();  // `next`, caused by `start`, ends
  const Value next = engine().core().contexts.find("ctx-2").frozen()->to_value();
  EXPECT_EQ(next["cause"]["context"], Value("ctx-1"));
  EXPECT_EQ(next["chain"], Json(R"(["start"])"));
}


// The frozen form writes a step's inputs against its templates and takes a log step's line
// from its entry. Every other shape of inputs and logs must read back as it was too: an
// input that failed to render (the rest then null), a subflow's call and its own steps,
// log lines of no step or of a step without a "message" input (locks, a skipped direct
// recursion), a message that is not the input's text, a log line far past the last, paths
// in loops.
TEST_F(FrozenRecordTest, InputsAndLogLinesTheTemplatesDoNotSay_ReadAsLive) {
  ASSERT_TRUE(Load(R"([{"id": "sub", "type": "subflow", "inputs": [{"name": "who", "type": "string"}],
      "outputs": [{"name": "said", "type": "string"}], "actions": [
      {"action": "log", "inputs": {"message": "sub-{{inputs.who}}-sub", "level": "warn"}},
      {"action": "assign_outputs", "inputs": {"values": {"said": "{{inputs.who}}"}}}]},
    {"id": "self", "type": "subflow", "actions": [{"action": "call_subflow", "inputs": {"subflow": "self"}}]},
    {"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "lock", "inputs": {"key": "L"}},
      {"id": "c", "action": "call_subflow", "inputs": {"subflow": "sub", "inputs": {"who": "{{inputs.who}}"}}},
      {"action": "call_subflow", "inputs": {"subflow": "self"}},
      {"action": "unlock", "inputs": {"key": "L"}},
      {"action": "log", "inputs": {"message": "{{inputs.n}}"}},
      {"action": "log", "inputs": {"message": "-{{inputs.who}}-{{inputs.who}}-", "level": "error"}},
      {"for_each": "{{inputs.items}}", "do": [
        {"action": "set_variables", "inputs": {"values": {}}},
        {"action": "log", "inputs": {"message": "item {{item}} of {{inputs.who}}"}}]},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "set_variables", "inputs": {"values": {}}}, {"action": "set_variables", "inputs": {"values": {}}},
      {"action": "log", "inputs": {"message": "after many steps"}},
      {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{inputs.who | add: 1}}", "values": {"x": 1}}}]}])"));
  CallFlow("f", Json(R"({"who": "-ada-", "n": 5, "items": [1, 2, 3]})"));
  CallFlow("f", Json(R"({"who": "", "n": "five", "items": []})"));
  ExpectFrozenRecordsReadAsLive();
  const Value record = engine().context("ctx-1")->value();
  EXPECT_EQ(record["status"], Value("error")) << "the last step failed to render its inputs";
  EXPECT_GE(record["logs"].size(), 8u);
}

// What the compact form saves, so that a change that loses it fails here: a log step's
// long constant message is kept once, as its template, not twice as text.
TEST_F(FrozenRecordTest, ALogStepsConstantMessage_TakesNoBytesOfItsOwn) {
  const std::string message(400, 'm');
  ASSERT_TRUE(Load(R"([{"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "log", "inputs": {"message": ")" + message + R"("}}]}])"));
  CallFlow("f");
  ExpectFrozenRecordsReadAsLive();
  const KeptContext kept = engine().core().contexts.find(uint64_t{1});
  ASSERT_NE(kept.frozen(), nullptr);
  EXPECT_EQ(kept.frozen()->to_value()["logs"].items()[0]["message"].as_string(), message);
  EXPECT_LT(kept.frozen()->footprint(), 200u) << "neither the input nor the log line holds the 400 bytes";
}

// The same for a subflow call: its record shows {"subflow", "inputs"}, and the subflow's
// inputs that the definition gives as constants are the plan's. (A long constant is kept
// by reference either way; ten short ones, each held in its Value, are what it saves.)
TEST_F(FrozenRecordTest, ASubflowCallsConstantInputs_TakeNoBytesOfTheirOwn) {
  std::string declared, given;
  for (int i = 0; i < 10; ++i) {
    const std::string name = "in" + std::to_string(i);
    declared += std::string(i ? ", " : "") + R"({"name": ")" + name + R"(", "type": "string"})";
    given += std::string(i ? ", " : "") + "\"" + name + R"(": "twelve chars")";
  }
  ASSERT_TRUE(Load(R"([{"id": "sub", "type": "subflow", "inputs": [)" + declared + R"(], "actions": []},
    {"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "call_subflow", "inputs": {"subflow": "sub", "inputs": {)" + given + R"(}}}]}])"));
  CallFlow("f");
  ExpectFrozenRecordsReadAsLive();
  const KeptContext kept = engine().core().contexts.find(uint64_t{1});
  ASSERT_NE(kept.frozen(), nullptr);
  const Value call = kept.frozen()->to_value()["steps"].items()[1]["inputs"];
  EXPECT_EQ(call["subflow"], Value("sub"));
  EXPECT_EQ(call["inputs"]["in9"], Value("twelve chars"));
  EXPECT_LT(kept.frozen()->footprint(), 160u) << "written plain, the ten inputs alone take 140 bytes";
}

}  // namespace
}  // namespace flowrt
