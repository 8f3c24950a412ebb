// Harness scenarios for cancelling contexts: waiting, queued, finished, unknown.
#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class CancelTest : public FlowTest {};

TEST_F(CancelTest, CancelWaitingContext_EndsItCancelled_AndItsTimerNoLongerCounts) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "pause", "action": "wait", "inputs": {"duration": "1h"}},
    {"action": "log", "inputs": {"message": "never"}}]})"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  ASSERT_TRUE(engine().cancel(id).is_ok());
  Settle();
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, HasStatus("cancelled"));
  EXPECT_TRUE(c.logs().size() == 0);
  EXPECT_THAT(c, HasStep("pause", "error"));
  EXPECT_EQ(Ms(c.value()["ended_at"]), 0);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart) << "nothing waits on the cancelled timer";
}

TEST_F(CancelTest, CancelWaitingForCondition_RemovesTheWaiter) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r", "condition": {"field": "v", "op": "eq", "value": 2}}}]})"));
  Insert("t", Json(R"({"sys_id": "r", "v": 1})"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  ASSERT_EQ(engine().core().dispatcher.waiter_count(), 1u);
  ASSERT_TRUE(engine().cancel(id).is_ok());
  Settle();
  EXPECT_THAT(ContextById(id), HasStatus("cancelled"));
  EXPECT_EQ(engine().core().dispatcher.waiter_count(), 0u);
  Update("t", "r", Json(R"({"v": 2})"));
  Settle();
  EXPECT_THAT(ContextById(id), HasStatus("cancelled"));
}

TEST_F(CancelTest, CancelFinishedContext_ChangesNothing_UnknownIsAnError) {
  ASSERT_TRUE(Load(R"({"id": "q", "trigger": {"type": "api"}, "actions": []})"));
  const std::string id = CallFlow("q");
  Settle();
  EXPECT_TRUE(engine().cancel(id).is_ok());
  EXPECT_THAT(ContextById(id), HasStatus("completed"));
  EXPECT_FALSE(engine().cancel("ctx-999").is_ok());
  EXPECT_FALSE(engine().cancel("bogus").is_ok());
}

TEST_F(CancelTest, CancelBeforeStart_ContextNeverRunsASingleStep) {
  // With the workers stopped, the context stays queued until cancelled.
  ASSERT_TRUE(Load(R"({"id": "q", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "ran"}}]})"));
  engine().core().workers.stop();
  const std::string id = CallFlow("q");
  ASSERT_TRUE(engine().cancel(id).is_ok());
  engine().core().workers.start(2);
  Settle();
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, HasStatus("cancelled"));
  EXPECT_EQ(c.steps().size(), 0u);
}

}  // namespace
}  // namespace flowrt
