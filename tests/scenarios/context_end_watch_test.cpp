// Engine::on_context_end: a watcher's callback runs once, when its context ends (however
// it ends), not for other contexts, and not once the watcher is dropped; a watcher may
// outlive the engine. The HTTP API's waits (?wait=, cancel) are woken through it.
#include <atomic>
#include <memory>
#include <string>

#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class ContextEndWatchTest : public FlowTest {};

constexpr const char* kWaits = R"({"id": "w", "trigger": {"type": "api"}, "actions": [
  {"action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r", "condition": {"field": "v", "op": "eq", "value": 2}}}]})";

TEST_F(ContextEndWatchTest, TheCallbackRunsOnceWhenItsContextEnds_NotForOthers) {
  ASSERT_TRUE(Load(kWaits));
  Insert("t", Json(R"({"sys_id": "r", "v": 1})"));
  const std::string first = CallFlow("w");
  const std::string second = CallFlow("w");
  engine().settle(0);
  std::atomic<int> calls{0};
  std::unique_ptr<ContextEndWatcher> watcher = engine().on_context_end(first, [&] { ++calls; });
  EXPECT_EQ(engine().core().end_watch->size(), 1u);
  ASSERT_TRUE(engine().cancel(second).is_ok());
  Settle();
  EXPECT_THAT(ContextById(second), HasStatus("cancelled"));
  EXPECT_EQ(calls.load(), 0) << "another context's end";
  Update("t", "r", Json(R"({"v": 2})"));
  Settle();
  EXPECT_THAT(ContextById(first), HasStatus("completed"));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(engine().core().end_watch->size(), 0u) << "called once, then forgotten";
  watcher.reset();  // after its call: nothing to remove
}

TEST_F(ContextEndWatchTest, ADroppedWatcher_IsNotCalled_AndOneMayOutliveTheEngine) {
  ASSERT_TRUE(Load(kWaits));
  Insert("t", Json(R"({"sys_id": "r", "v": 1})"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  std::atomic<int> calls{0};
  std::unique_ptr<ContextEndWatcher> dropped = engine().on_context_end(id, [&] { ++calls; });
  dropped.reset();
  EXPECT_EQ(engine().core().end_watch->size(), 0u);
  ASSERT_TRUE(engine().cancel(id).is_ok());
  Settle();
  EXPECT_THAT(ContextById(id), HasStatus("cancelled"));
  EXPECT_EQ(calls.load(), 0);

  // A watch of a context that is still waiting when its engine goes: dropped afterwards.
  auto other = std::make_unique<Engine>(Options());
  ASSERT_TRUE(other->load_text(kWaits, "w.json").empty());
  ASSERT_TRUE(other->insert("t", Json(R"({"sys_id": "r", "v": 1})")).is_ok());
  Result<std::string> later = other->call_flow("w");
  ASSERT_TRUE(later.is_ok()) << later.message();
  other->settle(0);
  std::unique_ptr<ContextEndWatcher> survivor = other->on_context_end(*later, [&] { ++calls; });
  other.reset();
  survivor.reset();
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace flowrt
