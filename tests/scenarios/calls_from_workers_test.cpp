// The engine's waiting calls made on a worker thread: from a custom action or an
// on_context_end callback. settle and advance wait until no context can run, and shutdown
// until every context has ended; the caller's own context is among them, so on a worker
// they must not wait (until 2026-12-06 a settle from an on_context_end callback hung for
// good, and one from a custom action until max_run_time).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "runtime/engine.h"

namespace flowrt {
namespace {

EngineOptions VirtualClock() {
  EngineOptions o;
  o.virtual_clock = true;
  o.properties.worker_threads = 2;
  return o;
}

// It waits first, so that it cannot end before the test watches its end.
constexpr const char* kFlow = R"({"id": "f", "trigger": {"type": "api"}, "actions": [
  {"action": "wait", "inputs": {"duration": "1m"}}, {"action": "log", "inputs": {"message": "x"}}]})";

TEST(CallsFromWorkersTest, SettleAndAdvanceFromAContextEndCallback_ReturnAtOnce) {
  Engine engine(VirtualClock());
  ASSERT_TRUE(engine.load_text(kFlow).empty());
  Result<std::string> id = engine.call_flow("f");
  ASSERT_TRUE(id.is_ok());
  std::atomic<int> calls{0};
  std::string advance_error;
  std::unique_ptr<ContextEndWatcher> watch = engine.on_context_end(*id, [&] {
    engine.settle();
    advance_error = engine.advance(1000).message();
    ++calls;
  });
  engine.settle();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(advance_error,
            "advance cannot be called on a worker thread (from a custom action or an on_context_end callback): it "
            "waits for every context, its caller's own too");
  EXPECT_EQ(engine.context(*id)->status(), "completed");
}

TEST(CallsFromWorkersTest, SettleFromACustomAction_ReturnsAtOnce_TheStepCompletes) {
  Engine engine(VirtualClock());
  CustomActionType t;
  t.name = "drive.clock";
  t.run = [&engine](CustomActionContext&) -> Result<Value> {
    engine.settle();
    return Value::empty_object();
  };
  ASSERT_TRUE(engine.register_action(t).is_ok());
  ASSERT_TRUE(engine.load_text(R"({"id": "g", "trigger": {"type": "api"}, "actions": [
    {"id": "d", "action": "drive.clock"}]})").empty());
  Result<std::string> id = engine.call_flow("g");
  ASSERT_TRUE(id.is_ok());
  engine.settle();
  EXPECT_EQ(engine.context(*id)->status(), "completed");
}

TEST(CallsFromWorkersTest, ShutdownFromAContextEndCallback_CancelsTheRest_WithoutWaiting) {
  Engine engine(VirtualClock());
  ASSERT_TRUE(engine.load_text(R"([
    {"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1m"}}]},
    {"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]}])").empty());
  Result<std::string> waiting = engine.call_flow("w");
  ASSERT_TRUE(waiting.is_ok());
  engine.settle(0);
  Result<std::string> id = engine.call_flow("f");
  ASSERT_TRUE(id.is_ok());
  std::atomic<size_t> cancelled{0};
  std::unique_ptr<ContextEndWatcher> watch = engine.on_context_end(*id, [&] { cancelled = engine.shutdown(); });
  engine.settle();
  EXPECT_GE(cancelled.load(), 1u) << "the waiting context at least";
  EXPECT_EQ(engine.context(*waiting)->status(), "cancelled");
  EXPECT_EQ(engine.shutdown(), 0u) << "nothing was left to cancel";
}

}  // namespace
}  // namespace flowrt
