// Waiting contexts rest (docs/DURABILITY.md, "Waiting contexts rest"): with a durable store,
// a context parked on a timer or a record, once its checkpoint is durable, keeps only its
// wait in memory; readers read its record from its row, and the thread that runs it next
// puts its state back. Each scenario runs on the sqlite store and on the memory store
// (where nothing rests), and the records must be the same.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "tests/support/engine_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;

// Steps before the wait leave a record worth checking: a record made, a variable, a log.
constexpr const char* kApproval = R"({"id": "approval", "trigger": {"type": "record", "table": "request", "when": "created"},
  "variables": {"n": 0},
  "actions": [
    {"id": "note", "action": "create_record", "inputs": {"table": "note", "values": {"request": "{{trigger.sys_id}}"}}},
    {"action": "set_variables", "inputs": {"values": {"n": 7}}},
    {"action": "log", "inputs": {"message": "asked for {{trigger.sys_id}}"}},
    {"id": "decision", "action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "approved", "op": "eq", "value": true}, "timeout": "1d"}},
    {"action": "create_record", "inputs": {"table": "done", "values": {"request": "{{trigger.sys_id}}",
      "n": "{{vars.n}}", "note": "{{steps.note.record.sys_id}}", "timed_out": "{{steps.decision.timed_out}}"}}}]})";

constexpr const char* kPause = R"({"id": "pause", "trigger": {"type": "api"},
  "actions": [{"action": "log", "inputs": {"message": "before"}},
              {"id": "w", "action": "wait", "inputs": {"duration": "1h"}},
              {"action": "log", "inputs": {"message": "after"}}]})";

// Holds a lock while it waits for its record: its lock's lease could write to its record.
constexpr const char* kHolder = R"({"id": "holder", "trigger": {"type": "record", "table": "job", "when": "created"},
  "actions": [
    {"action": "lock", "inputs": {"key": "desk", "max_duration": "2d"}},
    {"action": "wait_for_condition", "inputs": {"table": "job", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "done", "op": "eq", "value": true}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

// A record as compared across stores: without the running time, which is measured.
Value comparable(Value record) {
  return record.without("runtime_ms");
}

class RestingTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = test_support::temp_path("flowrt-resting-" + std::to_string(std::hash<std::string>{}(name)));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  bool durable() const { return GetParam() == "sqlite"; }
  EngineOptions options(bool simulation = true) const {
    EngineOptions o;
    o.store = GetParam();
    if (durable()) o.data_file = dir_ + "/state.db";
    if (simulation) o.simulation_seed = 5;
    o.start_time = 1767225600000;  // 2026-01-01
    o.properties.durability = Durability::kNormal;
    return o;
  }
  Engine& open(const std::vector<const char*>& defs, EngineOptions o) {
    report_ = test_support::reopen_engine(&engine_, std::move(o), defs);
    return *engine_;
  }
  Engine& open(const std::vector<const char*>& defs) { return open(defs, options()); }
  // How many contexts rest now: none with the memory store.
  uint64_t resting() const { return engine_->stats().resting_contexts; }
  uint64_t expected_resting(uint64_t n) const { return durable() ? n : 0; }

  std::string dir_;
  std::unique_ptr<Engine> engine_;
  Value report_;
};

TEST_P(RestingTest, AContextWaitingForARecord_Rests_ReadsGiveItsWholeRecord_AndItGoesOnAsBefore) {
  Engine& e = open({kApproval});
  ASSERT_TRUE(e.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  e.settle(0);
  std::optional<ContextRecord> waiting = e.context("ctx-1");
  ASSERT_TRUE(waiting.has_value());
  ASSERT_EQ(waiting->status(), "waiting");
  EXPECT_EQ(resting(), expected_resting(1));
  EXPECT_EQ(e.stats().waiting_contexts, 1u);
  // Its steps, its variable and its log line, read from its row while it rests.
  const Value record = waiting->value();
  ASSERT_EQ(record["steps"].size(), 4u) << record.to_json();
  EXPECT_EQ(record["steps"].at(3)["status"], Value("waiting"));
  EXPECT_EQ(record["variables"]["n"], Value(7));
  ASSERT_EQ(record["logs"].size(), 1u) << record.to_json();
  EXPECT_EQ(record["logs"].at(0)["message"], Value("asked for r1"));
  EXPECT_EQ(e.contexts().size(), 1u);
  EXPECT_EQ(comparable(e.contexts()[0].value()).to_json(), comparable(record).to_json());

  ASSERT_TRUE(e.update("request", "r1", json(R"({"approved": true})")).is_ok());
  e.settle(0);
  EXPECT_EQ(resting(), 0u) << "woken and put back";
  std::optional<ContextRecord> done = e.context("ctx-1");
  ASSERT_EQ(done->status(), "completed") << done->value().to_json();
  ASSERT_EQ(e.records("done").size(), 1u);
  const Value made = e.records("done")[0];
  EXPECT_EQ(made["n"], Value(7)) << "its variables came back";
  EXPECT_EQ(made["note"], e.records("note")[0]["sys_id"]) << "its step outputs came back";
  EXPECT_EQ(made["timed_out"], Value(false));
  EXPECT_EQ(done->value()["steps"].size(), 5u);
  EXPECT_EQ(done->value()["steps"].at(3)["status"], Value("completed"));
  EXPECT_EQ(done->value()["logs"].size(), 1u);
}

TEST_P(RestingTest, ItsTimeout_WakesARestingContext) {
  Engine& e = open({kApproval});
  ASSERT_TRUE(e.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  e.settle(0);
  EXPECT_EQ(resting(), expected_resting(1));
  ASSERT_TRUE(e.advance(24 * kHour).is_ok());
  ASSERT_EQ(e.context("ctx-1")->status(), "completed") << e.context("ctx-1")->value().to_json();
  EXPECT_EQ(e.records("done")[0]["timed_out"], Value(true));
  EXPECT_EQ(resting(), 0u);
}

TEST_P(RestingTest, ATimerWait_Rests_AndTheContextGoesOnWhenItIsDue) {
  Engine& e = open({kPause});
  Result<std::string> started = e.call_flow("pause");
  ASSERT_TRUE(started.is_ok()) << started.message();
  e.settle(0);
  EXPECT_EQ(resting(), expected_resting(1));
  ASSERT_EQ(e.context("ctx-1")->value()["logs"].size(), 1u);
  ASSERT_TRUE(e.advance(59 * kMinute).is_ok());
  EXPECT_EQ(e.context("ctx-1")->status(), "waiting");
  ASSERT_TRUE(e.advance(kMinute).is_ok());
  const Value done = e.context("ctx-1")->value();
  ASSERT_EQ(done["status"], Value("completed")) << done.to_json();
  ASSERT_EQ(done["logs"].size(), 2u) << done.to_json();
  EXPECT_EQ(done["logs"].at(1)["message"], Value("after"));
}

TEST_P(RestingTest, AContextHoldingALock_DoesNotRest) {
  Engine& e = open({kHolder});
  ASSERT_TRUE(e.insert("job", json(R"({"sys_id": "j1", "done": false})")).is_ok());
  e.settle(0);
  ASSERT_EQ(e.context("ctx-1")->status(), "waiting");
  EXPECT_EQ(resting(), 0u) << "a lock's lease may write to its record while it waits";
  ASSERT_TRUE(e.update("job", "j1", json(R"({"done": true})")).is_ok());
  e.settle(0);
  EXPECT_EQ(e.context("ctx-1")->status(), "completed");
}

TEST_P(RestingTest, ARestingContext_Cancelled_EndsCancelled_WithItsSteps) {
  Engine& e = open({kApproval});
  ASSERT_TRUE(e.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  e.settle(0);
  EXPECT_EQ(resting(), expected_resting(1));
  ASSERT_TRUE(e.cancel("ctx-1").is_ok());
  e.settle(0);
  const Value ended = e.context("ctx-1")->value();
  EXPECT_EQ(ended["status"], Value("cancelled")) << ended.to_json();
  EXPECT_EQ(ended["steps"].size(), 4u) << ended.to_json();
  EXPECT_EQ(resting(), 0u);
  EXPECT_TRUE(e.records("done").empty());
}

TEST_P(RestingTest, AfterARestart_RecoveredWaitsRest_AndFinishAsTheyWouldHave) {
  {
    Engine& first = open({kApproval});
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(first.insert("request", Value::object({{"sys_id", Value("r" + std::to_string(i))}, {"approved", Value(false)}}))
                      .is_ok());
    }
    first.settle(0);
    EXPECT_EQ(resting(), expected_resting(3));
  }
  if (!durable()) return;  // the memory store keeps nothing across engines
  Engine& second = open({kApproval});
  ASSERT_EQ(report_["resumed"].size(), 3u) << report_.to_json();
  EXPECT_EQ(resting(), 3u);
  EXPECT_EQ(second.context("ctx-2")->value()["steps"].size(), 4u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(second.update("request", "r" + std::to_string(i), json(R"({"approved": true})")).is_ok());
  }
  second.settle(0);
  EXPECT_EQ(resting(), 0u);
  ASSERT_EQ(second.records("done").size(), 3u);
  for (const Value& d : second.records("done")) EXPECT_EQ(d["n"], Value(7));
}

// Many contexts park, rest and wake on worker threads at once (a ThreadSanitizer case): no
// wake-up is lost, each puts back its own state.
TEST_P(RestingTest, OnWorkerThreads_ManyContextsRestAndWake_EachWithItsOwnState) {
  Engine& e = open({kApproval}, options(/*simulation=*/false));
  constexpr int kContexts = 200;
  for (int i = 0; i < kContexts; ++i) {
    ASSERT_TRUE(e.insert("request", Value::object({{"sys_id", Value("r" + std::to_string(i))}, {"approved", Value(false)}}))
                    .is_ok());
  }
  e.settle(0);
  EXPECT_EQ(e.stats().waiting_contexts, static_cast<uint64_t>(kContexts));
  EXPECT_LE(resting(), static_cast<uint64_t>(kContexts));
  for (int i = 0; i < kContexts; ++i) {
    // Approved while others still come to rest.
    ASSERT_TRUE(e.update("request", "r" + std::to_string(i), json(R"({"approved": true})")).is_ok());
  }
  e.settle(0);
  EXPECT_EQ(resting(), 0u);
  const std::vector<Value> done = e.records("done");
  ASSERT_EQ(done.size(), static_cast<size_t>(kContexts));
  std::vector<std::string> notes;
  for (const Value& n : e.records("note")) notes.emplace_back(n["sys_id"].as_string());
  for (const Value& d : done) {
    EXPECT_EQ(d["n"], Value(7));
    EXPECT_EQ(d["timed_out"], Value(false));
    // Its own note: the note made for the same request.
    bool found = false;
    for (const Value& n : e.records("note")) found = found || (n["sys_id"] == d["note"] && n["request"] == d["request"]);
    EXPECT_TRUE(found) << d.to_json();
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, RestingTest, ::testing::Values("sqlite", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// A resting context whose row cannot be read back when it wakes ends in error, saying
// why, and releases nothing it does not hold; the engine goes on.
TEST(RestingFailureTest, ARowDamagedWhileItsContextRests_EndsItInErrorSayingWhy) {
  const std::string dir = test_support::temp_path("flowrt-resting-damaged");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EngineOptions o;
  o.store = "sqlite";
  o.data_file = dir + "/state.db";
  o.simulation_seed = 5;
  o.properties.durability = Durability::kNormal;
  {
    Result<std::unique_ptr<Engine>> opened = Engine::open(o);
    ASSERT_TRUE(opened.is_ok()) << opened.message();
    Engine& e = **opened;
    ASSERT_TRUE(e.load_text(kApproval).empty());
    (void)e.recover();
    for (const char* id : {"r1", "r2"}) {
      ASSERT_TRUE(e.insert("request", Value::object({{"sys_id", Value(id)}, {"approved", Value(false)}})).is_ok());
    }
    e.settle(0);
    ASSERT_EQ(e.stats().resting_contexts, 2u);
    // Another hand writes to the file: ctx-1's checkpoint is damaged.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(o.data_file.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db, "UPDATE contexts SET checkpoint = '{\"exec\": 1}' WHERE seq = 1", nullptr, nullptr, &err),
              SQLITE_OK)
        << (err ? err : "");
    sqlite3_close(db);
    ASSERT_TRUE(e.update("request", "r1", json(R"({"approved": true})")).is_ok());
    ASSERT_TRUE(e.update("request", "r2", json(R"({"approved": true})")).is_ok());
    e.settle(0);
    const Value failed = e.context("ctx-1")->value();
    EXPECT_EQ(failed["status"], Value("error")) << failed.to_json();
    EXPECT_NE(failed["error"]["message"].as_string().find("its state could not be read back from the sqlite file"),
              std::string_view::npos)
        << failed.to_json();
    EXPECT_EQ(e.context("ctx-2")->status(), "completed") << "the other context is not touched";
    EXPECT_EQ(e.records("done").size(), 1u);
    EXPECT_EQ(e.stats().resting_contexts, 0u);
    EXPECT_EQ(e.stats().waiting_contexts, 0u);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flowrt
