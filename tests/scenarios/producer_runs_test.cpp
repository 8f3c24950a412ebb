// Engine::run_queued_until: a caller's thread runs the contexts waiting to start, in
// queue order, as a worker would; it hands a context to the workers before user code, and
// takes nothing while the engine stops or from inside an action. Deterministic: the one
// worker is held in an action until the test lets it go, so only the caller can run what
// is queued meanwhile.
#include <chrono>
#include <latch>
#include <memory>
#include <thread>

#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

constexpr const char* kProducerFlows = R"([
  {"id": "holder", "trigger": {"type": "api"}, "actions": [{"id": "hold", "action": "hold"}]},
  {"id": "tally", "trigger": {"type": "record", "table": "ticket", "when": "created"}, "actions": [
    {"id": "seen", "action": "update_record",
     "inputs": {"table": "tally", "sys_id": "t", "values": {"last": "{{trigger.record.n}}"}}},
    {"action": "log", "inputs": {"message": "tallied {{trigger.record.n}}"}}]},
  {"id": "mixed", "trigger": {"type": "record", "table": "job", "when": "created"}, "actions": [
    {"id": "before", "action": "log", "inputs": {"message": "before"}},
    {"id": "where", "action": "where"},
    {"id": "after", "action": "log", "inputs": {"message": "after"}}]}])";

class ProducerRunsTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.properties.worker_threads = 1;
    return o;
  }
  void SetUp() override {
    FlowTest::SetUp();
    CustomActionType hold;
    hold.name = "hold";
    hold.run = [this](CustomActionContext&) -> Result<Value> {
      entered_.count_down();
      open_.wait();
      return Value::empty_object();
    };
    ASSERT_TRUE(engine().register_action(hold).is_ok());
    CustomActionType where;
    where.name = "where";
    where.run = [this](CustomActionContext&) -> Result<Value> {
      where_thread_ = std::this_thread::get_id();
      // From a worker, it takes nothing: it would run a context inside this step.
      from_worker_ = engine().run_queued_until(std::chrono::steady_clock::now() + std::chrono::seconds(10));
      return Value::empty_object();
    };
    ASSERT_TRUE(engine().register_action(where).is_ok());
    ASSERT_TRUE(Load(kProducerFlows));
    Insert("tally", Value::object({{"sys_id", Value("t")}}));
  }
  void TearDown() override {
    LetGo();
    FlowTest::TearDown();
  }
  // The one worker runs "holder" and stays in its action until LetGo().
  void HoldTheWorker() {
    CallFlow("holder");
    entered_.wait();
  }
  void LetGo() {
    if (!let_go_) open_.count_down();
    let_go_ = true;
  }
  static std::chrono::steady_clock::time_point Soon() {
    return std::chrono::steady_clock::now() + std::chrono::seconds(60);
  }

  std::latch entered_{1};
  std::latch open_{1};
  bool let_go_ = false;
  std::thread::id where_thread_;
  size_t from_worker_ = 99;
};

TEST_F(ProducerRunsTest, TheCallersThread_RunsTheQueuedStarts_InQueueOrder_AndReturnsWhenNoneWaits) {
  HoldTheWorker();
  for (int n = 1; n <= 3; ++n) Insert("ticket", Value::object({{"n", Value(n)}}));
  EXPECT_EQ(engine().run_queued_until(Soon()), 3u);
  // Ended on this thread, before any settle, and the last queued ran last.
  const std::vector<ContextRecord> tallies = Contexts("tally");
  ASSERT_EQ(tallies.size(), 3u);
  for (const ContextRecord& c : tallies) EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(engine().record("tally", "t")["last"], Value(3));
  EXPECT_EQ(engine().run_queued_until(Soon()), 0u) << "none waits";
  LetGo();
  Settle();
  EXPECT_THAT(OnlyContext("holder"), HasStatus("completed"));
}

TEST_F(ProducerRunsTest, ATimeAlreadyPast_RunsNothing) {
  HoldTheWorker();
  Insert("ticket", Value::object({{"n", Value(1)}}));
  EXPECT_EQ(engine().run_queued_until(std::chrono::steady_clock::now() - std::chrono::seconds(1)), 0u);
  EXPECT_TRUE(OnlyContext("tally").step("seen").is_null()) << "not started";
  LetGo();
  Settle();
  EXPECT_THAT(OnlyContext("tally"), HasStatus("completed"));
}

TEST_F(ProducerRunsTest, AContextAboutToRunUserCode_IsHandedToTheWorkers) {
  HoldTheWorker();
  Insert("job", Value::object({{"n", Value(1)}}));
  EXPECT_EQ(engine().run_queued_until(Soon()), 1u);
  ContextRecord c = OnlyContext("mixed");
  EXPECT_THAT(c, HasStep("before", "completed")) << "its built-in step ran on the caller's thread";
  EXPECT_FALSE(c.step("where").is_object()) << "the user code's step has not started: " << c.value().to_json();
  EXPECT_EQ(engine().run_queued_until(Soon()), 0u) << "a context handed back is the workers', not the caller's";
  LetGo();
  Settle();
  c = OnlyContext("mixed");
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(c, HasLog("after"));
  EXPECT_NE(where_thread_, std::this_thread::get_id()) << "the user code ran on a worker";
  EXPECT_EQ(from_worker_, 0u) << "called from a worker, it runs nothing";
}

TEST_F(ProducerRunsTest, WhileTheEngineStops_ItTakesNothing) {
  HoldTheWorker();
  Insert("ticket", Value::object({{"n", Value(1)}}));
  engine().request_stop();
  EXPECT_EQ(engine().run_queued_until(Soon()), 0u);
  EXPECT_TRUE(OnlyContext("tally").step("seen").is_null()) << "not started";
  LetGo();
}

// A producer and two workers taking from one queue at once (TSan runs this): every
// context runs once, and settle finds nothing left, so no worker was left waiting for an
// item the producer took.
class ProducerRunsRaceTest : public FlowTest {};

TEST_F(ProducerRunsRaceTest, AProducerRunningBetweenItsInserts_AndTwoWorkers_RunEachContextOnce) {
  ASSERT_TRUE(Load(R"({"id": "count", "trigger": {"type": "record", "table": "ticket", "when": "created"}, "actions": [
    {"action": "update_record", "inputs": {"table": "ticket", "sys_id": "{{trigger.record.sys_id}}",
                                           "values": {"runs": "{{trigger.record.runs}}1"}}}]})"));
  size_t ran_here = 0;
  constexpr int kEvents = 2000;
  for (int n = 0; n < kEvents; ++n) {
    Insert("ticket", Value::object({{"sys_id", Value(std::string_view("t" + std::to_string(n)))}, {"runs", Value("")}}));
    if (n % 3 == 0) ran_here += engine().run_queued_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
  }
  Settle();
  const std::vector<ContextRecord> all = Contexts("count");
  ASSERT_EQ(all.size(), static_cast<size_t>(kEvents));
  for (const ContextRecord& c : all) {
    ASSERT_THAT(c, HasStatus("completed"));
    size_t steps = 0;
    for ([[maybe_unused]] const Value& step : c.steps().items()) ++steps;
    ASSERT_EQ(steps, 1u) << "run once: " << c.value().to_json();
  }
  for (int n = 0; n < kEvents; ++n) ASSERT_EQ(engine().record("ticket", "t" + std::to_string(n))["runs"], Value("1"));
  EXPECT_LE(ran_here, static_cast<size_t>(kEvents));
}

}  // namespace
}  // namespace flowrt
