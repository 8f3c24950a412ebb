// Custom C++ actions the engine gave up on (runtime/watchdog.h): everything they can still
// call is inert and says so, nothing they can reach is freed under them, even when the
// engine is destroyed meanwhile; destroying the engine waits at most the watchdog's grace;
// stuck threads are capped (max_abandoned_threads) and counted in the engine's stats.
//
// The run-time clock is the test's (a quota passes when the test says so). Waits for
// other threads wait for what they do (a flag they set), bounded in real time only so that
// a broken engine fails a test instead of hanging it.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "testing/flow_test.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;

using namespace flowrt::testing;
using Clock = std::chrono::steady_clock;

// What the stubborn action saw, shared with the test; it outlives the engine.
struct Probe {
  std::atomic<bool> release{false};
  std::atomic<bool> entered{false};
  std::atomic<int64_t> iterations{0};
  std::atomic<int64_t> iterations_given_up{0};  // iterations that saw given_up()
  std::atomic<int64_t> done_after_given_up{0};  // host calls that did something anyway
  std::atomic<bool> returned{false};
  std::atomic<bool> thread_exited{false};
};

// Sets the probe's flag when the thread that touched it ends.
struct ThreadExit {
  std::shared_ptr<Probe> probe;
  ~ThreadExit() {
    if (probe) probe->thread_exited.store(true);
  }
};
thread_local ThreadExit t_exit;

// Keeps writing, reading, logging and locking until released, ignoring cancel_requested().
CustomActionType Stubborn(std::shared_ptr<Probe> probe) {
  CustomActionType t;
  t.name = "stubborn";
  t.run = [probe](CustomActionContext& ctx) -> Result<Value> {
    t_exit.probe = probe;
    probe->entered.store(true);
    while (!probe->release.load()) {
      const bool given_up = ctx.given_up();
      int64_t did = 0;
      did += ctx.host().create_record(Value("journal"), Value::object({{"n", Value(1)}}), Value()).is_ok();
      did += ctx.host().fire_event(Value("ping"), Value()).is_ok();
      did += ctx.host().start_flow(Value("other"), Value::empty_object()).is_ok();
      did += !ctx.host().read_record("journal", "nope").is_null();
      did += !ctx.host().try_lock(WaitRequest{}).is_null();
      if (given_up) did += ctx.host().release_lock("L");
      ctx.log("still here");
      (void)ctx.now();
      if (given_up) {
        did += !ctx.cancel_requested();
        probe->iterations_given_up.fetch_add(1);
        probe->done_after_given_up.fetch_add(did);
      }
      probe->iterations.fetch_add(1);
      std::this_thread::yield();
    }
    probe->returned.store(true);
    return Value::empty_object();
  };
  return t;
}

EngineOptions FakeRunClock(std::shared_ptr<std::atomic<double>> run_ms) {
  EngineOptions o;
  o.virtual_clock = true;
  o.properties.worker_threads = 2;
  o.properties.max_run_time = 1000;
  o.run_clock = [run_ms] { return run_ms->load(); };
  return o;
}

constexpr const char* kFlows = R"([
  {"id": "stuck", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "L"}},
    {"id": "s", "action": "stubborn"}]},
  {"id": "other", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "other ran"}}]}])";

TEST(AbandonedActionTest, KeepsPollingAndWritingAfterBeingGivenUp_AndAfterTheEngineIsGone_TouchesNothing) {
  auto probe = std::make_shared<Probe>();
  auto run_ms = std::make_shared<std::atomic<double>>(0);
  auto engine = std::make_unique<Engine>(FakeRunClock(run_ms));
  ASSERT_TRUE(engine->register_action(Stubborn(probe)).is_ok());
  ASSERT_TRUE(engine->load_text(kFlows).empty());
  Result<std::string> id = engine->call_flow("stuck");
  ASSERT_TRUE(id.is_ok());
  ASSERT_TRUE(WaitFor([&] { return probe->iterations.load() > 10; }));
  run_ms->store(5000);  // past max_run_time: the watchdog gives up on it
  engine->settle();
  ContextRecord c = *engine->context(*id);
  ASSERT_THAT(c, FailedWith("action 'stubborn' did not return within max_run_time"));
  EXPECT_EQ(engine->locks().size(), 0u) << "its lock was released, and nothing takes it again";

  // It goes on: everything it calls now does nothing and says so.
  const int64_t seen = probe->iterations_given_up.load();
  ASSERT_TRUE(WaitFor([&] { return probe->iterations_given_up.load() > seen + 50; }));
  const size_t journal = engine->records("journal").size();
  const std::string record = engine->context(*id)->value().to_json();
  ASSERT_TRUE(WaitFor([&] { return probe->iterations_given_up.load() > seen + 100; }));
  EXPECT_EQ(engine->records("journal").size(), journal) << "no write for an ended context";
  EXPECT_EQ(engine->context(*id)->value().to_json(), record) << "its record does not change any more";
  EXPECT_EQ(engine->locks().size(), 0u);
  EXPECT_EQ(engine->stats().abandoned_threads, 1u);

  // The engine goes away while the action keeps calling it (AddressSanitizer watches).
  engine.reset();
  const int64_t after = probe->iterations.load();
  ASSERT_TRUE(WaitFor([&] { return probe->iterations.load() > after + 100; }));
  EXPECT_EQ(probe->done_after_given_up.load(), 0) << "a host call did something after the engine gave up";
  probe->release.store(true);
  ASSERT_TRUE(WaitFor([&] { return probe->thread_exited.load(); })) << "the abandoned thread ends once its action returns";
}

TEST(AbandonedActionTest, DestroyingTheEngine_WaitsAtMostTheGrace_ForAnActionThatNeverReturns) {
  auto probe = std::make_shared<Probe>();
  auto run_ms = std::make_shared<std::atomic<double>>(0);
  auto engine = std::make_unique<Engine>(FakeRunClock(run_ms));
  ASSERT_TRUE(engine->register_action(Stubborn(probe)).is_ok());
  ASSERT_TRUE(engine->load_text(kFlows).empty());
  ASSERT_TRUE(engine->call_flow("stuck").is_ok());
  ASSERT_TRUE(WaitFor([&] { return probe->entered.load(); }));
  const auto start = Clock::now();
  auto destroyed = std::async(std::launch::async, [&] { engine.reset(); });
  const bool in_time = destroyed.wait_for(std::chrono::seconds(15)) == std::future_status::ready;
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  probe->release.store(true);  // lets a broken engine's destructor finish too
  destroyed.wait();
  ASSERT_TRUE(in_time) << "destroying the engine waited on the action";
  // The grace is 1 s of real time; the rest is slack for slow (sanitizer) builds.
  EXPECT_LT(took.count(), 1000 + 3000) << "destroying the engine took " << took.count() << " ms";
  ASSERT_TRUE(WaitFor([&] { return probe->thread_exited.load(); }));
}

// Two custom actions in a row: the first returns once the engine begins to stop, the
// second would never return. The context yields before its next step once the workers
// are stopping, and if a step begins anyway the watchdog still watches it: destroying the
// engine never waits on the second action.
TEST(AbandonedActionTest, DestroyingTheEngine_StartsNoStepOnceTheStopBegan) {
  auto probe = std::make_shared<Probe>();
  auto first_returned = std::make_shared<std::atomic<bool>>(false);
  auto stopping = std::make_shared<std::atomic<bool>>(false);
  auto run_ms = std::make_shared<std::atomic<double>>(0);
  auto engine = std::make_unique<Engine>(FakeRunClock(run_ms));
  CustomActionType until_stop;
  until_stop.name = "until_stop";
  until_stop.run = [stopping, first_returned, probe](CustomActionContext&) -> Result<Value> {
    probe->entered.store(true);
    // The stop has begun (the test says so just before destroying the engine); give the
    // destructor time to reach its wait, then return.
    while (!stopping->load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    first_returned->store(true);
    return Value::empty_object();
  };
  ASSERT_TRUE(engine->register_action(std::move(until_stop)).is_ok());
  ASSERT_TRUE(engine->register_action(Stubborn(probe)).is_ok());
  ASSERT_TRUE(engine->load_text(R"({"id": "two", "trigger": {"type": "api"}, "actions": [
    {"action": "until_stop"}, {"action": "stubborn"}]})").empty());
  ASSERT_TRUE(engine->call_flow("two").is_ok());
  ASSERT_TRUE(WaitFor([&] { return probe->entered.load(); }));
  stopping->store(true);
  const auto start = Clock::now();
  auto destroyed = std::async(std::launch::async, [&] { engine.reset(); });
  const bool in_time = destroyed.wait_for(std::chrono::seconds(15)) == std::future_status::ready;
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  probe->release.store(true);
  destroyed.wait();
  ASSERT_TRUE(in_time) << "destroying the engine waited on an action that began after the stop";
  EXPECT_TRUE(first_returned->load());
  EXPECT_LT(took.count(), 1000 + 3000) << "destroying the engine took " << took.count() << " ms";
  EXPECT_EQ(probe->iterations.load(), 0) << "the second action began after the stop";
}

TEST(AbandonedActionTest, AtMaxAbandonedThreads_CustomActionsAreRefused_UntilAStuckOneReturns) {
  auto probe = std::make_shared<Probe>();
  auto run_ms = std::make_shared<std::atomic<double>>(0);
  EngineOptions o = FakeRunClock(run_ms);
  o.properties.max_abandoned_threads = 1;
  auto engine = std::make_unique<Engine>(o);
  CustomActionType quick;
  quick.name = "quick";
  quick.run = [](CustomActionContext&) -> Result<Value> { return Value::empty_object(); };
  ASSERT_TRUE(engine->register_action(std::move(quick)).is_ok());
  ASSERT_TRUE(engine->register_action(Stubborn(probe)).is_ok());
  ASSERT_TRUE(engine->load_text(kFlows).empty());
  ASSERT_TRUE(engine->load_text(R"({"id": "q", "trigger": {"type": "api"}, "actions": [{"id": "x", "action": "quick"}]})")
                  .empty());
  ASSERT_TRUE(engine->call_flow("stuck").is_ok());
  ASSERT_TRUE(WaitFor([&] { return probe->entered.load(); }));
  run_ms->store(5000);
  engine->settle();
  run_ms->store(0);
  ASSERT_EQ(engine->stats().abandoned_threads, 1u);
  ASSERT_EQ(engine->stats().abandoned_calls, 1u);
  EXPECT_EQ(engine->stats().to_value()["abandoned_threads"], Value(1));

  Result<std::string> refused = engine->call_flow("q");
  ASSERT_TRUE(refused.is_ok());
  engine->settle();
  EXPECT_THAT(*engine->context(*refused),
              FailedWith("custom action 'quick' refused: 1 worker threads are stuck in actions that did not return, "
                         "the limit is 1 (max_abandoned_threads)"));

  probe->release.store(true);  // the stuck action returns: its thread ends
  ASSERT_TRUE(WaitFor([&] { return engine->stats().abandoned_threads == 0; }));
  Result<std::string> ok = engine->call_flow("q");
  ASSERT_TRUE(ok.is_ok());
  engine->settle();
  EXPECT_THAT(*engine->context(*ok), HasStatus("completed"));
  engine.reset();
  ASSERT_TRUE(WaitFor([&] { return probe->thread_exited.load(); }));
}

}  // namespace
}  // namespace flowrt
