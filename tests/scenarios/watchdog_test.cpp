// A C++ action that never returns does not take the engine down: the watchdog ends its
// context at the quota (or a grace period after a cancel), releases its locks, replaces
// the worker, and the engine goes on. Deterministic: the action blocks on a gate the test
// opens, and the run-time clock is the test's.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

// Blocks every caller until opened; counts who entered and who left.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  int left = 0;
  bool open = false;

  void pass() {
    std::unique_lock lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
    ++left;
    cv.notify_all();
  }
  void wait_entered(int n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered >= n; });
  }
  void open_and_wait_left(int n) {
    std::unique_lock lock(mu);
    open = true;
    cv.notify_all();
    cv.wait(lock, [&] { return left >= n; });
  }
};

// An action that ignores cancel_requested() and blocks until the gate opens.
CustomActionType StuckAction(std::shared_ptr<Gate> gate) {
  CustomActionType t;
  t.name = "stuck";
  t.run = [gate](CustomActionContext&) -> Result<Value> {
    gate->pass();
    return Value::empty_object();
  };
  return t;
}

constexpr const char* kFlows = R"([
  {"id": "holder", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "printer"}},
    {"for_each": [1], "do": [{"id": "hang", "action": "stuck"}]},
    {"action": "unlock", "inputs": {"key": "printer"}}]},
  {"id": "other", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "printer", "max_attempts": 5, "delay": "1s"}},
    {"action": "log", "inputs": {"message": "printed"}},
    {"action": "unlock", "inputs": {"key": "printer"}}]}])";

class WatchdogTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.run_clock = [this] { return run_ms_.load(); };
    o.properties.max_run_time = 1000;
    return o;
  }
  void SetUp() override {
    FlowTest::SetUp();
    ASSERT_TRUE(engine().register_action(StuckAction(gate_)).is_ok());
    ASSERT_TRUE(Load(kFlows));
  }
  void TearDown() override {
    gate_->open_and_wait_left(gate_->entered);
    FlowTest::TearDown();
  }

  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::atomic<double> run_ms_{0};
};

TEST_F(WatchdogTest, ActionThatNeverReturns_EndsAtTheQuota_LocksReleased_EngineGoesOn) {
  const std::string stuck = CallFlow("holder");
  gate_->wait_entered(1);
  run_ms_.store(1001);  // past max_run_time, and the action still has not returned
  Settle();             // returns: the watchdog gave up on the action

  ContextRecord c = ContextById(stuck);
  EXPECT_THAT(c, FailedWith("action 'stuck' did not return within max_run_time (1s)"));
  EXPECT_THAT(c, FailedWith("replaced its worker thread"));
  EXPECT_EQ(c.error()["step"], Value("2.do.1#1"));
  EXPECT_THAT(c, HasStep("hang", "error"));
  for (const Value& step : c.steps().items()) {
    EXPECT_NE(step["status"], Value("in_progress")) << "the enclosing loop ends with it: " << step.to_json();
  }
  EXPECT_EQ(engine().core().watchdog.abandoned(), 1u);
  EXPECT_EQ(engine().core().workers.threads(), 2u) << "the stuck worker was replaced";
  EXPECT_NE(engine().core().contexts.find(stuck).live(), nullptr)
      << "its execution state is the stuck thread's: it stays live, not frozen";

  // Its lock was released: another context takes it at once, and more keep running.
  for (int i = 0; i < 4; ++i) CallFlow("other");
  Settle();
  for (const ContextRecord& o : Contexts("other")) {
    EXPECT_THAT(o, HasStatus("completed"));
    EXPECT_THAT(o, HasLog("printed"));
    EXPECT_EQ(o.step("lk")["outputs"]["attempts"], Value(1));
  }
}

TEST_F(WatchdogTest, ActionThatReturnsAfterBeingGivenUp_ChangesNothing) {
  const std::string stuck = CallFlow("holder");
  gate_->wait_entered(1);
  run_ms_.store(5000);
  Settle();
  const std::string before = ContextById(stuck).value().to_json();
  gate_->open_and_wait_left(1);  // it returns now, on an abandoned thread
  CallFlow("other");
  Settle();
  EXPECT_EQ(ContextById(stuck).value().to_json(), before);
  EXPECT_THAT(OnlyContext("other"), HasStatus("completed"));
}

TEST_F(WatchdogTest, CancelledContextWhoseActionIgnoresIt_IsCancelledAfterTheGracePeriod) {
  run_ms_.store(0);
  ASSERT_TRUE(engine().set_property("max_run_time", Value("1h")).is_ok());
  const std::string stuck = CallFlow("holder");
  gate_->wait_entered(1);
  ASSERT_TRUE(engine().cancel(stuck).is_ok());
  run_ms_.store(1001);  // one second of grace on the run-time clock, then it is given up on
  Settle();
  ContextRecord c = ContextById(stuck);
  EXPECT_THAT(c, HasStatus("cancelled"));
  EXPECT_NE(c.error_message().find("did not return within 1s of its context being cancelled"), std::string::npos)
      << c.error_message();
  CallFlow("other");
  Settle();
  EXPECT_THAT(OnlyContext("other"), HasStatus("completed"));
}

TEST(WatchdogEngineTest, DestroyingTheEngineDoesNotWaitForeverOnAStuckAction) {
  auto gate = std::make_shared<Gate>();
  std::chrono::milliseconds took{0};
  {
    EngineOptions o;
    o.virtual_clock = true;
    o.properties.worker_threads = 2;
    auto engine = std::make_unique<Engine>(o);
    ASSERT_TRUE(engine->register_action(StuckAction(gate)).is_ok());
    ASSERT_TRUE(engine->load_text(kFlows, "flows.json").empty());
    ASSERT_TRUE(engine->call_flow("holder", Value::empty_object()).is_ok());
    gate->wait_entered(1);
    const auto start = std::chrono::steady_clock::now();
    engine.reset();  // stops within the watchdog's grace (1s of real time), not when the action returns
    took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  }
  gate->open_and_wait_left(1);
  // The grace is 1 s; the rest is slack for slow (sanitizer) builds. Without the watchdog
  // this would wait until the gate opens, which happens only after.
  EXPECT_LT(took.count(), 1000 + 3000) << "destroying the engine took " << took.count() << " ms";
}

}  // namespace
}  // namespace flowrt
