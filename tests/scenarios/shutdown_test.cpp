// Engine::request_stop and Engine::shutdown: intake stops, every context that has not
// ended is cancelled, and every lock is released.
#include "runtime/engine_core.h"
#include "runtime/harness.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class ShutdownTest : public FlowTest {};

TEST_F(ShutdownTest, Shutdown_CancelsWaitingHoldingQueuedAndLockWaiting_ReleasesEveryLock) {
  ASSERT_TRUE(Load(R"([
    {"id": "holder", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "L"}},
      {"action": "wait", "inputs": {"duration": "1h"}},
      {"action": "unlock", "inputs": {"key": "L"}}]},
    {"id": "queuer", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "L", "max_attempts": 1000, "delay": "1s"}},
      {"action": "log", "inputs": {"message": "got it"}}]},
    {"id": "done", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "hi"}}]}])"));
  const std::string done = CallFlow("done");
  const std::string holder = CallFlow("holder");
  engine().settle(0);
  const std::string queuer = CallFlow("queuer");
  engine().settle(0);
  ASSERT_THAT(ContextById(holder), HasStatus("waiting"));
  ASSERT_EQ(engine().locks().size(), 1u);
  ASSERT_EQ(engine().locks().at(0)["waiters"].size(), 1u) << "queuer waits for L";

  EXPECT_EQ(engine().shutdown(), 2u);
  EXPECT_THAT(ContextById(done), HasStatus("completed")) << "what had ended stays as it was";
  EXPECT_THAT(ContextById(holder), HasStatus("cancelled"));
  EXPECT_THAT(ContextById(queuer), HasStatus("cancelled"));
  EXPECT_EQ(engine().locks().size(), 0u) << "no lock held or waited for by an ended context";

  Result<Value> refused = engine().insert("t", Value::object({{"n", Value(1)}}));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.message(), "the engine is stopping: no new operations are accepted");
  EXPECT_FALSE(engine().call_flow("done").is_ok());
  EXPECT_FALSE(engine().fire_event("e").is_ok());
  engine().settle();  // returns at once
  EXPECT_EQ(Contexts().size(), 3u);
}

TEST_F(ShutdownTest, ContextsStillQueued_EndCancelledWithoutRunningASteps) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
    "actions": [{"action": "log", "inputs": {"message": "ran"}}]})"));
  engine().request_stop();
  EXPECT_FALSE(engine().insert("t", Value::object({{"n", Value(1)}})).is_ok()) << "intake is closed";
  EXPECT_EQ(engine().shutdown(), 0u);
  EXPECT_TRUE(Contexts().empty());
}

TEST_F(ShutdownTest, StopRequestedDuringAnEventsFile_StopsAtTheNextLine) {
  CustomActionType stop;
  stop.name = "test.stop";
  stop.run = [this](CustomActionContext&) -> Result<Value> {
    engine().request_stop();  // what the CLI's SIGINT handler does
    return Value::empty_object();
  };
  ASSERT_TRUE(engine().register_action(std::move(stop)).is_ok());
  ASSERT_TRUE(Load(R"([
    {"id": "stopper", "trigger": {"type": "event", "name": "stop"}, "actions": [{"action": "test.stop"}]},
    {"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
     "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]}])"));
  Harness harness(engine());
  Status s = harness.run_text(R"({"op": "insert", "table": "t", "values": {"n": 1}}
{"op": "fire_event", "name": "stop"}
{"op": "settle"}
{"op": "insert", "table": "t", "values": {"n": 2}}
)", "events.jsonl");
  ASSERT_FALSE(s.is_ok());
  // The stop comes from a worker while line 3 (a settle) may or may not have been read;
  // that settle, if applied, returns once the stop is requested, before any timer fires.
  EXPECT_TRUE(s.message() == "events.jsonl:3: not applied: the engine is stopping" ||
              s.message() == "events.jsonl:4: not applied: the engine is stopping")
      << s.message();
  EXPECT_EQ(Contexts("f").size(), 1u) << "line 4 was not applied";
  EXPECT_THAT(Contexts("f"), ::testing::ElementsAre(HasStatus("waiting")));
  // The harness may return while the stopper's worker is still ending that context; once
  // it has, only the waiting context is left for shutdown to cancel.
  engine().core().wait_idle();
  EXPECT_THAT(Contexts("stopper"), ::testing::ElementsAre(HasStatus("completed")));
  EXPECT_EQ(engine().shutdown(), 1u);
  EXPECT_THAT(Contexts("f"), ::testing::ElementsAre(HasStatus("cancelled")));
}

}  // namespace
}  // namespace flowrt
