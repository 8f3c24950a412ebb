// runtime/liveness.h: each context that has not ended is reported with what it waits on,
// read from the engine's timer queue, record waiters and lock queues; a wait whose thing
// is gone, or that should have been woken, is reported (so a check built on it can fail).
#include "runtime/engine_core.h"
#include "runtime/liveness.h"

#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class LivenessTest : public FlowTest {
 protected:
  // A context waiting on a timer, one on a record (with a timeout), one on a lock held by
  // a fourth that waits on a record with no timeout.
  void StartFourWaits() {
    ASSERT_TRUE(Load(R"([
      {"id": "sleeper", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "2h"}}]},
      {"id": "watcher", "trigger": {"type": "api"}, "actions": [{"action": "wait_for_condition", "inputs": {
        "table": "t", "sys_id": "a", "condition": {"field": "done", "op": "eq", "value": true}, "timeout": "3h"}}]},
      {"id": "holder", "trigger": {"type": "api"}, "actions": [
        {"action": "lock", "inputs": {"key": "k"}},
        {"action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "a",
          "condition": {"field": "done", "op": "eq", "value": true}}}]},
      {"id": "queued", "trigger": {"type": "api"}, "actions": [
        {"action": "lock", "inputs": {"key": "k", "max_attempts": 5, "delay": "1h"}}]}])"));
    Insert("t", Json(R"({"sys_id": "a", "done": false})"));
    CallFlow("sleeper");
    CallFlow("watcher");
    CallFlow("holder");
    engine().settle(0);
    CallFlow("queued");
    engine().settle(0);
  }
  std::vector<ContextWait> Waits() { return context_waits(engine().core()); }
};

TEST_F(LivenessTest, EveryWaitIsNamedAndExists) {
  StartFourWaits();
  std::vector<ContextWait> w = Waits();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].on, ContextWait::On::kTimer);
  EXPECT_EQ(w[0].what, "timer due at 2026-01-01T02:00:00.000Z");
  EXPECT_EQ(w[1].on, ContextWait::On::kRecord);
  EXPECT_EQ(w[1].what, "record t/a (timeout at 2026-01-01T03:00:00.000Z)");
  EXPECT_EQ(w[2].on, ContextWait::On::kRecord);
  EXPECT_EQ(w[2].what, "record t/a");
  EXPECT_EQ(w[3].on, ContextWait::On::kLock);
  EXPECT_EQ(w[3].what, "lock 'k'");
  for (const ContextWait& c : w) {
    EXPECT_EQ(c.status, "waiting") << c.context;
    EXPECT_EQ(c.problem, "") << c.context << " waits on " << c.what;
  }
}

TEST_F(LivenessTest, EndedContextsAreNotListed) {
  StartFourWaits();
  Update("t", "a", Json(R"({"done": true})"));
  Settle();
  EXPECT_TRUE(Waits().empty());
}

TEST_F(LivenessTest, AWaitWhoseTimerOrWaiterIsGone_IsReported) {
  StartFourWaits();
  EngineCore& core = engine().core();
  std::shared_ptr<Context> sleeper = core.contexts.find_live("ctx-1");
  std::shared_ptr<Context> watcher = core.contexts.find_live("ctx-2");
  core.timers.cancel(sleeper->state->timer);  // as if a wake-up were lost
  core.dispatcher.remove_waiter(Value("t"), Value("a"), watcher.get());
  std::vector<ContextWait> w = Waits();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].problem, "its wait's timer is not in the timer queue");
  EXPECT_EQ(w[1].problem, "it is not among the record's waiters");
}

TEST_F(LivenessTest, AWaiterWhoseRecordMeetsItsCondition_IsReportedAsALostWakeUp) {
  StartFourWaits();
  EngineCore& core = engine().core();
  std::shared_ptr<Context> holder = core.contexts.find_live("ctx-3");
  // The write that meets the condition finds no waiter; the waiter is back afterwards, as
  // if the wake-up had been lost.
  core.dispatcher.remove_waiter(Value("t"), Value("a"), holder.get());
  const Value met = Update("t", "a", Json(R"({"done": true})"));
  engine().settle(0);  // the watcher ends; the clock stays
  ASSERT_EQ(core.dispatcher.add_waiter(Value("t"), Value("a"), holder, 0, holder->state->wait.condition, met).kind,
            Dispatcher::WaiterAdded::Kind::kRegistered);
  std::vector<ContextWait> w = Waits();
  ASSERT_EQ(w.size(), 3u) << "the watcher was woken and ended";
  EXPECT_EQ(w[0].problem, "") << "the sleeper still waits on its timer";
  EXPECT_EQ(w[1].context, "ctx-3");
  EXPECT_EQ(w[1].problem.rfind("the record meets its condition, yet it was not woken (a lost wake-up)", 0), 0u)
      << w[1].problem;
  EXPECT_EQ(w[2].problem, "") << "the lock waiter still waits on a live holder";
}

}  // namespace
}  // namespace flowrt
