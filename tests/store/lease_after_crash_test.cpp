// A lock granted to a waiter at the instant of a crash (the file shows the grant, the
// waiter's checkpoint is still in the queue): after the restart it holds the lock as it
// would have without the crash: its lease counts from the grant (SPEC section 8,
// max_duration), so a fenced write within it succeeds, and its lock step's outputs say it
// waited (attempts, waited_ms). Found by the crash test (crash_test, resume variant, seed
// 1011 in a run of 2,000 kills, where the lease ended early by the time waited and the
// step said it had not waited). Here the lease holds and the outputs are wrong (one
// attempt, no wait): this test fails on them.
// Deterministic: the engine runs in simulation, and after every simulated step the file is
// copied as a crash would leave it; an engine on each copy goes on.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/journal.h"
#include "tests/store/crash_copy.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;


// Holds "desk" (30m lease) while it waits for its job to be done, then writes fenced.
constexpr const char* kDesk = R"({"id": "desk", "trigger": {"type": "record", "table": "job", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "desk", "max_duration": "30m", "max_attempts": 10, "delay": "10m"}},
    {"action": "wait_for_condition", "inputs": {"table": "job", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "done", "op": "eq", "value": true}, "timeout": "2h"}},
    {"id": "out", "action": "create_record", "on_error": "continue",
     "inputs": {"table": "out", "while_holding": "desk", "values": {"job": "{{trigger.sys_id}}"}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

// Another timer due at the same instant as the first holder's lease end (armed before it,
// so it fires first): its step makes a batch at 30m while the file still shows j1 holding.
constexpr const char* kMarker = R"({"id": "marker", "trigger": {"type": "event", "name": "go"},
  "actions": [
    {"action": "wait", "inputs": {"duration": "30m"}},
    {"action": "create_record", "inputs": {"table": "marker", "values": {"at": "30m"}}}]})";

TEST(LeaseAfterCrashTest, ALockGrantedToAWaiterAtACrash_KeepsItsLeaseFromTheGrant_AndItsOutputsSayItWaited) {
  const std::string dir = test_support::temp_path("flowrt-lease-after-crash");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto options = [](const std::string& path) {
    EngineOptions o;
    o.store = "sqlite";
    o.data_file = path;
    o.simulation_seed = 3;
    o.start_time = 1767225600000;
    o.properties.durability = Durability::kOff;
    return o;
  };
  const TimeMs t0 = 1767225600000;
  std::vector<std::string> copies;
  std::unique_ptr<Engine> engine;
  EngineOptions o = options(dir + "/state.db");
  o.after_simulated_step = [&](std::string_view) {
    Journal& journal = *engine->core().journal;
    ASSERT_TRUE(journal.wait_durable(journal.appended()).is_ok());
    copies.push_back(dir + "/crash-" + std::to_string(copies.size()) + ".db");
    testing::copy_durable_state(dir + "/state.db", copies.back());
  };
  engine = std::move(Engine::open(o)).value();
  ASSERT_TRUE(engine->load_text(kDesk).empty());
  ASSERT_TRUE(engine->load_text(kMarker).empty());
  engine->recover();
  ASSERT_TRUE(engine->fire_event("go").is_ok());
  engine->settle(0);
  ASSERT_TRUE(engine->insert("job", *parse_json(R"({"sys_id": "j1"})")).is_ok());  // holds desk until 30m
  ASSERT_TRUE(engine->advance(5 * kMinute).is_ok());
  ASSERT_TRUE(engine->insert("job", *parse_json(R"({"sys_id": "j2"})")).is_ok());  // waits; granted at 30m
  const size_t before_grant = copies.size();
  ASSERT_TRUE(engine->advance(26 * kMinute).is_ok());  // 31m: j2 holds desk, lease to 60m
  ASSERT_GT(copies.size(), before_grant);
  engine.reset();

  // Each copy from the queue on: the restarted engine goes to 55m, j2 is done, its fenced
  // write falls within its lease (granted at 30m, 30m long).
  for (size_t i = before_grant; i < copies.size(); ++i) {
    SCOPED_TRACE("crash after simulated step " + std::to_string(i));
    Value report;
    // Two restarts: the copy, then a clean stop 4 minutes on (each goes on from the last).
    auto open_copy = [&]() -> std::unique_ptr<Engine> {
      Result<std::unique_ptr<Engine>> opened = Engine::open(options(copies[i]));
      EXPECT_TRUE(opened.is_ok()) << opened.message();
      if (!opened.is_ok()) return nullptr;
      EXPECT_TRUE((*opened)->load_text(kDesk).empty());
      EXPECT_TRUE((*opened)->load_text(kMarker).empty());
      report = (*opened)->recover();
      return std::move(opened).value();
    };
    std::unique_ptr<Engine> first = open_copy();
    ASSERT_TRUE(first);
    const Value first_report = report;
    ASSERT_TRUE(first->advance(4 * kMinute).is_ok());
    first.reset();
    std::unique_ptr<Engine> second = open_copy();
    ASSERT_TRUE(second);
    Engine& next = *second;
    ASSERT_TRUE(next.advance(t0 + 55 * kMinute - next.now()).is_ok());
    ASSERT_TRUE(next.update("job", "j2", *parse_json(R"({"done": true})")).is_ok());
    next.settle(0);
    std::optional<ContextRecord> j2 = next.context("ctx-3");
    ASSERT_TRUE(j2.has_value());
    EXPECT_EQ(j2->step("out")["status"], Value("completed"))
        << "the lease ended early; lock step: " << j2->step("lk").to_json() << "; first recovery: "
        << first_report.to_json() << "; second: " << report.to_json();
    EXPECT_EQ(j2->step("lk")["outputs"]["waited_ms"], Value(25 * kMinute))
        << "as without the crash: it waited from 5m to 30m; " << j2->step("lk").to_json();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flowrt
