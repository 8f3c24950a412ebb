// Engine::request_stop and Engine::shutdown: intake stops, every context that has not
// ended is cancelled, and every lock is released.
#include <chrono>
#include <functional>
#include <memory>
#include <atomic>
#include <thread>

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

// A custom action that blocks its worker until its context is cancelled (bounded by 10 s
// of real time, so that a broken engine fails the test instead of hanging it), then does
// what `then` says.
CustomActionType AwaitCancel(std::string name, std::function<void(CustomActionContext&)> then = {},
                             std::shared_ptr<std::atomic<bool>> entered = nullptr) {
  CustomActionType t;
  t.name = std::move(name);
  t.run = [then, entered](CustomActionContext& ctx) -> Result<Value> {
    if (entered) entered->store(true);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ctx.cancel_requested() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    if (then) then(ctx);
    return Value::empty_object();
  };
  return t;
}

class ShutdownOneWorkerTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.properties.worker_threads = 1;
    return o;
  }
};

TEST_F(ShutdownOneWorkerTest, ContextsStillQueued_EndCancelledWithoutRunningAStep) {
  ASSERT_TRUE(engine().register_action(AwaitCancel("test.await_cancel")).is_ok());
  ASSERT_TRUE(Load(R"([
    {"id": "blocker", "trigger": {"type": "api"}, "actions": [{"action": "test.await_cancel"}]},
    {"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"},
     "actions": [{"action": "log", "inputs": {"message": "ran"}}]}])"));
  const std::string blocker = CallFlow("blocker");
  // The one worker is busy with the blocker (until it is cancelled): these stay queued.
  for (int i = 0; i < 5; ++i) Insert("t", Value::object({{"n", Value(i)}}));
  for (const ContextRecord& c : Contexts("f")) {
    ASSERT_THAT(c, HasStatus("in_progress"));
    ASSERT_TRUE(c.value()["started_at"].is_null()) << "still queued";
  }
  EXPECT_EQ(engine().shutdown(), 6u);
  EXPECT_THAT(ContextById(blocker), HasStatus("cancelled"));
  ASSERT_EQ(Contexts("f").size(), 5u);
  for (const ContextRecord& c : Contexts("f")) {
    EXPECT_THAT(c, HasStatus("cancelled"));
    EXPECT_EQ(c.steps().size(), 0u) << "no step ran: " << c.value().to_json();
  }
}

// A context still running when shutdown() begins writes a record that starts a flow
// which would take a lock and wait: that start comes after shutdown() looked at the
// contexts, and must not outlive it.
TEST_F(ShutdownTest, AContextStartedByARunningOneDuringShutdown_DoesNotOutliveIt) {
  auto entered = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(engine()
                  .register_action(AwaitCancel(
                      "test.await_cancel",
                      [](CustomActionContext& ctx) {
                        (void)ctx.host().create_record(Value("t"), Value::object({{"n", Value(1)}}), Value());
                      },
                      entered))
                  .is_ok());
  ASSERT_TRUE(Load(R"([
    {"id": "writer", "trigger": {"type": "api"}, "actions": [{"action": "test.await_cancel"}]},
    {"id": "locker", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [
      {"action": "lock", "inputs": {"key": "L"}},
      {"action": "wait", "inputs": {"duration": "1h"}},
      {"action": "unlock", "inputs": {"key": "L"}}]}])"));
  CallFlow("writer");
  // shutdown() must find the writer running (not still queued, which it would cancel
  // before it wrote anything).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!entered->load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_TRUE(entered->load());
  EXPECT_GE(engine().shutdown(), 1u);
  ASSERT_EQ(Contexts("locker").size(), 1u) << "the writer's record started it";
  for (const ContextRecord& c : Contexts()) {
    EXPECT_TRUE(c.status() == "cancelled" || c.status() == "completed" || c.status() == "error")
        << c.id() << " outlived shutdown(): " << c.status();
  }
  EXPECT_EQ(engine().locks().size(), 0u) << "no lock is held once shutdown() returned: " << engine().locks().to_json();
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
  // The harness may return while the workers are still at it: the stopper ending its
  // context, and line 1's context (queued before the stop; a stop ends no work) not yet
  // parked. Once they are done, only the waiting context is left for shutdown to cancel.
  engine().core().wait_idle();
  EXPECT_THAT(Contexts("f"), ::testing::ElementsAre(HasStatus("waiting")));
  EXPECT_THAT(Contexts("stopper"), ::testing::ElementsAre(HasStatus("completed")));
  EXPECT_EQ(engine().shutdown(), 1u);
  EXPECT_THAT(Contexts("f"), ::testing::ElementsAre(HasStatus("cancelled")));
}

}  // namespace
}  // namespace flowrt
