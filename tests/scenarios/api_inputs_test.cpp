// API flows and their declared inputs: a start whose inputs do not fit is refused, from
// every place a start can come from, with an error naming the input; a start that fits
// keeps its inputs in the context's trigger.
#include "runtime/harness.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class ApiInputsTest : public FlowTest {
 protected:
  void SetUp() override {
    FlowTest::SetUp();
    ASSERT_TRUE(Load(R"([
      {"id": "order", "trigger": {"type": "api"},
       "inputs": [{"name": "sku", "type": "string", "required": true}, {"name": "qty", "type": "integer"}],
       "actions": [{"action": "log", "inputs": {"message": "{{inputs.sku}} x {{inputs.qty}}"}}]},
      {"id": "free", "trigger": {"type": "api"},
       "actions": [{"action": "log", "inputs": {"message": "{{inputs.anything}}"}}]},
      {"id": "caller", "trigger": {"type": "event", "name": "go"}, "actions": [
       {"id": "s", "action": "start_flow", "on_error": "continue",
        "inputs": {"flow": "order", "inputs": "{{trigger.payload}}"}}]}])"));
  }
};

TEST_F(ApiInputsTest, LibraryCall_MissingRequiredOrWrongTypeOrUnknown_IsRefusedNamingTheInput) {
  Result<std::string> missing = engine().call_flow("order", Json(R"({"qty": 2})"));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.message(), "flow 'order' needs input 'sku'; the start is refused");
  Result<std::string> wrong = engine().call_flow("order", Json(R"({"sku": "A1", "qty": "two"})"));
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.message(), "input 'qty' of flow 'order' must be an integer, got \"two\"; the start is refused");
  Result<std::string> unknown = engine().call_flow("order", Json(R"({"sku": "A1", "colour": "red"})"));
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.message(), "flow 'order' has no input 'colour' (inputs: sku, qty); the start is refused");
  Settle();
  EXPECT_TRUE(Contexts("order").empty()) << "no start was made";
}

TEST_F(ApiInputsTest, StartThatFits_KeepsItsInputsInTheTrigger) {
  const std::string id = CallFlow("order", Json(R"({"sku": "A1", "qty": 2})"));
  CallFlow("free", Json(R"({"anything": [1, 2]})"));
  Settle();
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(c, HasLog("A1 x 2"));
  EXPECT_EQ(c.value()["trigger"], Json(R"({"type": "api", "inputs": {"sku": "A1", "qty": 2}})"));
  EXPECT_EQ(OnlyContext("free").value()["trigger"], Json(R"({"type": "api", "inputs": {"anything": [1, 2]}})"))
      << "a flow that declares no inputs takes any";
}

TEST_F(ApiInputsTest, StartFlowStep_IsRefused_TheStepFailsNamingTheInput) {
  FireEvent("go", Json(R"({"sku": 7})"));
  FireEvent("go", Json(R"({"sku": "B2"})"));
  Settle();
  std::vector<ContextRecord> callers = Contexts("caller");
  ASSERT_EQ(callers.size(), 2u);
  EXPECT_EQ(callers[0].step("s")["status"], Value("error"));
  EXPECT_EQ(callers[0].step("s")["error"],
            Value("input 'sku' of flow 'order' must be a string, got 7; the start is refused"));
  EXPECT_EQ(callers[1].step("s")["status"], Value("completed"));
  EXPECT_EQ(Contexts("order").size(), 1u);
}

TEST_F(ApiInputsTest, CallFlowLine_IsRefused_TheLineIsTheRunsError) {
  Harness harness(engine());
  Status s = harness.run_text("{\"op\": \"call_flow\", \"flow\": \"order\", \"inputs\": {\"qty\": 1}}\n", "events.jsonl");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "events.jsonl:1: flow 'order' needs input 'sku'; the start is refused");
}

TEST_F(ApiInputsTest, TestFlow_ChecksInputsAsCallFlowDoes) {
  Result<std::string> wrong = engine().test_flow("order", Value(), Json(R"({"sku": ["A1"]})"));
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.message(), "input 'sku' of flow 'order' must be a string, got [\"A1\"]; the start is refused");
  Result<std::string> missing = engine().test_flow("order", Value(), Value());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.message(), "flow 'order' needs input 'sku'; the start is refused");
  Harness harness(engine());
  Status line = harness.run_text("{\"op\": \"test_flow\", \"flow\": \"order\", \"inputs\": {\"sku\": \"A1\", \"x\": 1}}\n",
                                 "events.jsonl");
  ASSERT_FALSE(line.is_ok());
  EXPECT_EQ(line.message(), "events.jsonl:1: flow 'order' has no input 'x' (inputs: sku, qty); the start is refused");
  Settle();
  EXPECT_TRUE(Contexts("order").empty()) << "no start was made";

  Result<std::string> fits = engine().test_flow("order", Value(), Json(R"({"sku": "A1"})"));
  ASSERT_TRUE(fits.is_ok()) << fits.message();
  Settle();
  EXPECT_EQ(ContextById(*fits).value()["trigger"], Json(R"({"type": "api", "inputs": {"sku": "A1"}})"));
}

TEST_F(ApiInputsTest, TriggerInputs_AreCappedByRecordValueLimit) {
  ASSERT_TRUE(engine().set_property("record_value_limit", Value(64)).is_ok());
  Value given = Value::object({{"short", Value("ok")}, {"long", Value(std::string_view(std::string(100, 'a')))}});
  const std::string id = CallFlow("free", given);
  Settle();
  const Value inputs = ContextById(id).value()["trigger"]["inputs"];
  EXPECT_EQ(inputs["short"], Value("ok"));
  ASSERT_TRUE(inputs["long"].is_string());
  EXPECT_EQ(inputs["long"].as_string(), "\"" + std::string(63, 'a') + "...[truncated: 102 bytes]");
}

}  // namespace
}  // namespace flowrt
