// fire_event and start_flow from flows: payloads, context ids, causes and chains.
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class EventsTest : public FlowTest {};

TEST_F(EventsTest, FireEventFromFlow_StartsListeners_WithCauseAndChain) {
  ASSERT_TRUE(Load(R"([
    {"id": "first", "trigger": {"type": "api"}, "actions": [
      {"action": "fire_event", "inputs": {"name": "next", "payload": {"n": "{{inputs.n}}"}}}]},
    {"id": "second", "trigger": {"type": "event", "name": "next"}, "actions": [
      {"action": "fire_event", "inputs": {"name": "last", "payload": "{{trigger.payload}}"}}]},
    {"id": "third", "trigger": {"type": "event", "name": "last"}, "actions": [
      {"action": "log", "inputs": {"message": "n={{trigger.payload.n}}"}}]}])"));
  CallFlow("first", Json(R"({"n": 3})"));
  Settle();
  ContextRecord third = OnlyContext("third");
  EXPECT_THAT(third, HasLog("n=3"));
  EXPECT_EQ(third.value()["chain"], Json(R"(["first", "second"])"));
  EXPECT_EQ(third.value()["cause"]["context"], Value(OnlyContext("second").id()));
  EXPECT_TRUE(OnlyContext("first").value()["cause"].is_null());
  EXPECT_EQ(OnlyContext("first").value()["chain"], Value::empty_array());
}

TEST_F(EventsTest, StartFlow_ReturnsContextIdAtOnce_AndDoesNotWait) {
  ASSERT_TRUE(Load(R"([
    {"id": "parent", "trigger": {"type": "api"}, "actions": [
      {"id": "s", "action": "start_flow", "inputs": {"flow": "child", "inputs": {"x": 1}}},
      {"action": "log", "inputs": {"message": "started {{steps.s.context_id}} skipped={{steps.s.skipped}}"}}]},
    {"id": "child", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "log", "inputs": {"message": "child x={{inputs.x}}"}}]}])"));
  const std::string parent = CallFlow("parent");
  Settle();
  ContextRecord child = OnlyContext("child");
  EXPECT_THAT(ContextById(parent), HasLog("started " + child.id() + " skipped=false"));
  EXPECT_THAT(child, HasLog("child x=1"));
  EXPECT_EQ(Ms(ContextById(parent).value()["ended_at"]), 0);
  EXPECT_EQ(child.value()["cause"]["flow"], Value("parent"));
}

TEST_F(EventsTest, StartFlow_OfUnknownOrNonApiFlow_IsStepError) {
  ASSERT_TRUE(Load(R"([
    {"id": "p", "trigger": {"type": "api"}, "actions": [
      {"action": "start_flow", "inputs": {"flow": "{{inputs.f}}"}}]},
    {"id": "rec", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []}])"));
  const std::string unknown = CallFlow("p", Json(R"({"f": "nope"})"));
  const std::string record = CallFlow("p", Json(R"({"f": "rec"})"));
  Settle();
  EXPECT_THAT(ContextById(unknown), FailedWith("no flow 'nope'"));
  EXPECT_THAT(ContextById(record), FailedWith("only API flows start on request"));
}

}  // namespace
}  // namespace flowrt
