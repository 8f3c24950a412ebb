// Schedules at the edges of advance and of lifecycle changes: defects the seeded
// simulation found (tests/simulation), and one found by review (a tick racing a
// deactivate), each reproduced deterministically here.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "runtime/perturb.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

// The deactivate that a test's perturbation hook makes once (g_deactivate_armed): of flow
// g_flow, on g_engine.
std::atomic<bool> g_deactivate_armed{false};
Engine* g_engine = nullptr;
const char* g_flow = "";

class ScheduleEdgesTest : public FlowTest {
 protected:
  static TimeMs Ms(const Value& iso) { return *parse_time(iso.as_string()) - kDefaultVirtualStart; }
  // Loads `definition` (flow `flow`) and runs `what` with `hook` armed once against it:
  // the deactivate of `flow` that the hook makes at its point.
  template <typename What>
  auto WithDeactivateHook(const char* definition, const char* flow, PerturbHook hook, What what) {
    EXPECT_TRUE(Load(definition));
    g_engine = &engine();
    g_flow = flow;
    g_deactivate_armed = true;
    set_perturb_hook(hook);
    auto result = what();
    set_perturb_hook(nullptr);
    return result;
  }
};

// An `at` schedule fires once (SPEC 3, BEHAVIOUR.md "Schedules and the clock"). After it
// fired, any activate/deactivate/publish re-arms the schedules; with the clock standing
// exactly at the `at` time, next_occurrence(at, now) was that time again, so the tick was
// armed anew and the next advance fired it a second time. Each flow now remembers the last
// occurrence it fired, and a re-arm looks only past it. Simulation seed 621 (simulated)
// found it: ctx-10 and ctx-12 both ran f6 for 00:00:00.500.
TEST_F(ScheduleEdgesTest, AnAtScheduleRefreshedAtItsOwnTime_StillFiresOnce) {
  ASSERT_TRUE(Load(R"([
    {"id": "once", "trigger": {"type": "schedule", "at": "2026-01-01T00:00:30Z"}, "actions": []},
    {"id": "other", "trigger": {"type": "api"}, "actions": []}])"));
  Advance("30s");  // the clock stops at 00:00:30, the tick fires
  ASSERT_EQ(Contexts("once").size(), 1u);
  ASSERT_TRUE(engine().deactivate("other").is_ok());  // re-arms every schedule
  Advance("1m");
  EXPECT_EQ(Contexts("once").size(), 1u) << "an `at` schedule fired a second time";
}

// advance fires the schedule occurrences it passes in time order (BEHAVIOUR.md). When
// several ticks fell due during a settle, advance took every due timer at once; a tick
// re-armed while that batch fired (the next occurrence of a flow, also overdue) waited for
// the next batch, after later ticks of other flows, so b's 00:00:05 tick started before
// a's 00:00:02.750 and 00:00:04.750 ones. advance now fires one deadline at a time.
// Simulation seed 123 (simulated) found it.
TEST_F(ScheduleEdgesTest, OverdueTicksOfSeveralFlows_FireInTimeOrder) {
  ASSERT_TRUE(Load(R"([
    {"id": "a", "trigger": {"type": "schedule", "every": "2s", "start": "2026-01-01T00:00:00.750Z"}, "actions": []},
    {"id": "b", "trigger": {"type": "schedule", "every": "5s"}, "actions": []},
    {"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "6s"}}]}])"));
  CallFlow("w");
  Settle();  // the clock moves to 00:00:06 for the wait; settle fires no schedule
  ASSERT_EQ(engine().now(), kDefaultVirtualStart + 6000);
  Advance("0ms");
  std::vector<TimeMs> times;
  for (const ContextRecord& c : Contexts()) {
    if (c.value()["trigger"]["type"].as_string() == "schedule") times.push_back(Ms(c.value()["trigger"]["time"]));
  }
  EXPECT_EQ(times, (std::vector<TimeMs>{750, 2750, 4750, 5000})) << "ticks in seq (start) order";
}

// Deactivates flow g_flow from inside the first write that reaches the commit lock once
// armed: there, a schedule tick or a call has checked its flow active and not yet
// started it.
void deactivate_at_the_commit(PerturbPoint p) {
  if (p != PerturbPoint::kBeforeCommitLock || !g_deactivate_armed.exchange(false)) return;
  EXPECT_TRUE(g_engine->deactivate(g_flow).is_ok());
}

// Deactivating stops new starts (SPEC 9.6). A tick checks that its flow is active, then
// starts it; a deactivate that came in between, and returned, left that start to run. The
// start checks the flag again under the commit lock, which deactivate passes through
// after it cleared the flag, before it returns.
TEST_F(ScheduleEdgesTest, ATickDueAsTheFlowIsDeactivated_StartsNothing) {
  WithDeactivateHook(R"({"id": "tick", "trigger": {"type": "schedule", "every": "1m"}, "actions": []})", "tick",
                     &deactivate_at_the_commit, [&] {
                       Advance("1m");
                       return 0;
                     });
  EXPECT_FALSE(g_deactivate_armed.load()) << "the tick reached the commit lock";
  EXPECT_TRUE(Contexts("tick").empty()) << "started after its flow was deactivated";
  ASSERT_TRUE(engine().activate("tick").is_ok());
  Advance("1m");
  EXPECT_EQ(Contexts("tick").size(), 1u) << "active again: the next occurrence starts";
}

// The same for a call: one that checked its flow active as a deactivate came in is
// refused as a call of an inactive flow is, and starts nothing; test_flow, which runs any
// flow, active or not, still runs it.
TEST_F(ScheduleEdgesTest, ACallAsItsFlowIsDeactivated_IsRefused_StartsNothing) {
  Result<std::string> called =
      WithDeactivateHook(R"({"id": "api", "trigger": {"type": "api"}, "actions": []})", "api", &deactivate_at_the_commit,
                         [&] { return engine().call_flow("api", Value::empty_object()); });
  EXPECT_FALSE(g_deactivate_armed.load()) << "the call reached the commit lock";
  ASSERT_FALSE(called.is_ok());
  EXPECT_EQ(called.error().message, "flow 'api' is not active");
  Settle();
  EXPECT_TRUE(Contexts("api").empty());
  ASSERT_TRUE(engine().test_flow("api", Value(), Value::empty_object()).is_ok());
  Settle();
  EXPECT_EQ(Contexts("api").size(), 1u);
}

// Later still: the call holds the commit lock and has found its flow active when a
// deactivate comes, on another thread. That deactivate does not return before the call
// is admitted: the call, already past its check, starts the flow, and deactivate's
// return comes after it. Until the deactivate passed through the commit lock, it
// returned at once, and the call then started the flow after it.
std::future<void> g_deactivated;
void deactivate_from_another_thread(PerturbPoint p) {
  if (p != PerturbPoint::kStartAdmitting || !g_deactivate_armed.exchange(false)) return;
  g_deactivated = std::async(std::launch::async, [] { EXPECT_TRUE(g_engine->deactivate(g_flow).is_ok()); });
  // Two seconds for it to return, which it must not do while this call is not admitted.
  EXPECT_EQ(g_deactivated.wait_for(std::chrono::seconds(2)), std::future_status::timeout)
      << "deactivate returned while a call that found the flow active was still to start it";
}

TEST_F(ScheduleEdgesTest, ADeactivateWhileACallIsAdmitted_ReturnsAfterTheStart) {
  Result<std::string> called = WithDeactivateHook(
      R"({"id": "api", "trigger": {"type": "api"}, "actions": []})", "api", &deactivate_from_another_thread,
      [&] { return engine().call_flow("api", Value::empty_object()); });
  ASSERT_FALSE(g_deactivate_armed.load()) << "the call was admitted";
  g_deactivated.get();
  ASSERT_TRUE(called.is_ok()) << called.error().message;
  Settle();
  EXPECT_EQ(Contexts("api").size(), 1u) << "the call started before deactivate returned";
  EXPECT_FALSE(engine().call_flow("api", Value::empty_object()).is_ok()) << "inactive after";
}

}  // namespace
}  // namespace flowrt
