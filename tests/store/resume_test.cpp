// Contexts that were waiting or running when their engine stopped resume in the next engine
// on the same file (docs/DURABILITY.md, "Contexts resume"): on their plan version, with the
// time left on their waits, holding their locks, and past every step whose write is
// durable: after a crash at any step, every write happens exactly once. Deterministic:
// engines run in simulation (contexts run only inside settle and advance, on this thread).
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "actions/custom_action.h"
#include "runtime/journal.h"
#include "runtime/perturb.h"
#include "tests/store/crash_copy.h"
#include "tests/support/engine_support.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;



// An order: a shipment is made, the order marked, an hour waited, an invoice made.
constexpr const char* kFulfil = R"({"id": "fulfil", "trigger": {"type": "record", "table": "order", "when": "created"},
  "variables": {"n": 0},
  "actions": [
    {"id": "ship", "action": "create_record", "inputs": {"table": "shipment", "values": {"order": "{{trigger.sys_id}}"}}},
    {"action": "set_variables", "inputs": {"values": {"n": 1}}},
    {"action": "update_record", "inputs": {"table": "order", "sys_id": "{{trigger.sys_id}}", "values": {"state": "shipped"}}},
    {"id": "pause", "action": "wait", "inputs": {"duration": "1h"}},
    {"id": "bill", "action": "create_record", "inputs": {"table": "invoice",
      "values": {"order": "{{trigger.sys_id}}", "shipment": "{{steps.ship.record.sys_id}}", "n": "{{vars.n}}"}}},
    {"action": "log", "inputs": {"message": "billed {{steps.bill.record.sys_id}}"}}]})";

// Approval: holds a lock while it waits for the request to be decided.
constexpr const char* kApprove = R"({"id": "approve", "trigger": {"type": "record", "table": "request", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "desk", "max_duration": "2d", "max_attempts": 100, "delay": "1h"}},
    {"id": "decision", "action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "approved", "op": "eq", "value": true}, "timeout": "1d"}},
    {"action": "create_record", "inputs": {"table": "done", "values": {"request": "{{trigger.sys_id}}",
      "token": "{{steps.lk.token}}", "timed_out": "{{steps.decision.timed_out}}"}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::temp_path("flowrt-resume-" + test_support::current_test_file_name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/state.db";
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  virtual EngineOptions options(const std::string& path) const {
    EngineOptions o;
    o.store = "sqlite";
    o.data_file = path;
    o.simulation_seed = 11;
    o.start_time = 1767225600000;  // 2026-01-01
    o.properties.durability = Durability::kOff;  // a crash of the process, not of the machine
    return o;
  }
  // Closes the engine (if open) and opens one on `path` with `defs`, recovered.
  Engine& reopen(const std::vector<const char*>& defs, EngineOptions o) {
    report_ = test_support::reopen_engine(&engine_, std::move(o), defs);
    return *engine_;
  }
  Engine& reopen(const std::vector<const char*>& defs) { return reopen(defs, options(path_)); }
  // options(path_) on the real clock: the next engine runs months after the virtual
  // clock's 2026-01-01, as when a process stays down past a wait's end.
  EngineOptions real_clock_options() const {
    EngineOptions real = options(path_);
    real.virtual_clock = false;
    real.simulation_seed.reset();
    return real;
  }
  // The next engine on path_, on the real clock, with `defs` loaded and not yet recovered
  // (the test recovers it, perhaps with a perturbation hook around it).
  Engine& open_on_the_real_clock(const std::vector<const char*>& defs) {
    engine_.reset();
    Result<std::unique_ptr<Engine>> opened = Engine::open(real_clock_options());
    EXPECT_TRUE(opened.is_ok()) << opened.message();
    if (!opened.is_ok()) throw std::runtime_error("the engine does not open: " + opened.message());
    engine_ = std::move(opened).value();
    for (const char* d : defs) EXPECT_TRUE(engine_->load_text(d).empty());
    return *engine_;
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<Engine> engine_;
  Value report_;
};

// The same on each durable store: "Sqlite" (the file path_) or "Postgres" (a schema of
// the test server, tests/support/postgres_support.h, in place of path_).
class ResumeStoresTest : public ResumeTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    ResumeTest::SetUp();
    if (GetParam() == "Postgres") {
      url_ = fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
      ASSERT_FALSE(url_.empty());
    }
  }
  EngineOptions options(const std::string& path) const override {
    EngineOptions o = ResumeTest::options(path);
    if (!url_.empty() && path == path_) {
      o.store = "postgresql";
      o.data_file.clear();
      o.store_url = url_;
    }
    return o;
  }

  std::string url_;
};
INSTANTIATE_TEST_SUITE_P(Stores, ResumeStoresTest, ::testing::Values("Sqlite", "Postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(ResumeStoresTest, AWaitingTimer_ResumesWithTheTimeLeft_AndTheContextFinishesAsWithoutTheRestart) {
  Engine& first = reopen({kFulfil});
  ASSERT_TRUE(first.insert("order", json(R"({"sys_id": "o1"})")).is_ok());
  first.settle(0);
  ASSERT_TRUE(first.advance(20 * kMinute).is_ok());
  ASSERT_EQ(first.contexts()[0].status(), "waiting");

  Engine& second = reopen({kFulfil});
  ASSERT_EQ(report_["resumed"].to_json(), R"(["ctx-1"])") << report_.to_json();
  EXPECT_EQ(report_["failed"].size(), 0u);
  ASSERT_EQ(second.context("ctx-1")->status(), "waiting");
  ASSERT_TRUE(second.advance(39 * kMinute).is_ok());
  EXPECT_EQ(second.context("ctx-1")->status(), "waiting") << "20 of its 60 minutes had passed; 59 now";
  EXPECT_TRUE(second.records("invoice").empty());
  ASSERT_TRUE(second.advance(1 * kMinute).is_ok());
  std::optional<ContextRecord> done = second.context("ctx-1");
  ASSERT_EQ(done->status(), "completed") << done->value().to_json();
  ASSERT_EQ(second.records("shipment").size(), 1u);
  ASSERT_EQ(second.records("invoice").size(), 1u);
  const Value invoice = second.records("invoice")[0];
  EXPECT_EQ(invoice["shipment"], second.records("shipment")[0]["sys_id"]) << "step outputs came back";
  EXPECT_EQ(invoice["n"], Value(1)) << "variables came back";
  // The record covers the whole run: six steps, the wait one hour long.
  EXPECT_EQ(done->value()["steps"].size(), 6u) << done->value().to_json();
  EXPECT_EQ(done->step("pause")["status"], Value("completed"));
}

TEST_F(ResumeTest, AFileOfAnOlderDataSchema_ItsWaitingContextsResumeFromTheirCheckpoints_AndFinish) {
  // tests/store/data/schema_v3.sql: the approval example, two contexts waiting with
  // checkpoints in the form older versions wrote (every field, the seen record in full).
  std::ifstream in(std::string(FLOWRT_SOURCE_DIR) + "/tests/store/data/schema_v3.sql");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, text.str().c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  Engine& engine = reopen({});
  ASSERT_EQ(report_["resumed"].to_json(), R"(["ctx-2","ctx-3"])") << report_.to_json();
  EXPECT_EQ(report_["failed"].size(), 0u) << report_.to_json();
  ASSERT_EQ(engine.context("ctx-2")->status(), "waiting");
  ASSERT_TRUE(engine.update("purchase", "p2", json(R"({"approval": "approved"})")).is_ok());
  engine.settle(0);
  std::optional<ContextRecord> decided = engine.context("ctx-2");
  ASSERT_EQ(decided->status(), "completed") << decided->value().to_json();
  EXPECT_EQ(decided->step("decision")["outputs"]["record"]["approval"], Value("approved"));
  EXPECT_EQ(engine.context("ctx-3")->status(), "waiting") << "its own record was not decided";
  // The other waits out its two days (from 2026-01-01 00:00; the file's clock is at 03:00).
  ASSERT_TRUE(engine.advance(48 * kHour).is_ok());
  std::optional<ContextRecord> expired = engine.context("ctx-3");
  ASSERT_EQ(expired->status(), "completed") << expired->value().to_json();
  EXPECT_EQ(expired->step("decision")["outputs"]["timed_out"], Value(true));
  EXPECT_EQ(engine.records("purchase")[2]["approval"], Value("expired"));
}

// Holds the desk (a lease of years) until its request is approved.
constexpr const char* kLongHold = R"({"id": "approve", "trigger": {"type": "record", "table": "request", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "desk", "max_duration": "3000d"}},
    {"action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "approved", "op": "eq", "value": true}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

// A job that waits a minute, then takes the desk lock (trying every minute).
constexpr const char* kLateJob = R"({"id": "late", "trigger": {"type": "record", "table": "job", "when": "created"},
  "actions": [
    {"action": "wait", "inputs": {"duration": "1m"}},
    {"id": "lk", "action": "lock", "inputs": {"key": "desk", "max_duration": "2d", "max_attempts": 1000, "delay": "1m"}},
    {"action": "create_record", "inputs": {"table": "took", "values": {"token": "{{steps.lk.token}}"}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

EngineCore* g_recovering_core = nullptr;
std::atomic<bool> g_recovery_paused_with_held{false};

// At recovery's point before the locks' holders come back: waits (yielding, bounded)
// until the context whose timer ran out has either been held or has taken the desk lock.
void hold_at_locks(PerturbPoint p) {
  if (p != PerturbPoint::kRecoveryBeforeLocks || !g_recovering_core) return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < give_up) {
    if (g_recovering_core->held_ready() > 0) {
      g_recovery_paused_with_held = true;
      return;
    }
    if (!g_recovering_core->dispatcher.lock_states().empty()) return;  // it ran and took the desk: too early
    std::this_thread::yield();
  }
}

TEST_P(ResumeStoresTest, AWaitThatRanOutWhileTheEngineWasDown_DoesNotRunBeforeTheLocksHoldersAreBack) {
  Engine& first = reopen({kLongHold, kLateJob});
  ASSERT_TRUE(first.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  first.settle(0);
  ASSERT_TRUE(first.insert("job", json(R"({"sys_id": "j1"})")).is_ok());
  first.settle(0);
  ASSERT_EQ(first.context("ctx-1")->status(), "waiting") << "holding the desk, waiting for its request";
  const int64_t token = first.context("ctx-1")->step("lk")["outputs"]["token"].as_int();
  ASSERT_EQ(first.context("ctx-2")->status(), "waiting") << "in its minute";

  // The next engine runs on the real clock, months later: ctx-2's minute ran out while no
  // engine ran, so its timer fires as soon as its wait is registered, while recovery has
  // not yet put ctx-1 back as the desk's holder. It must not run (and take the desk) then.
  open_on_the_real_clock({kLongHold, kLateJob});
  g_recovering_core = &engine_->core();
  set_perturb_hook(hold_at_locks);
  report_ = engine_->recover();
  set_perturb_hook(nullptr);
  g_recovering_core = nullptr;
  EXPECT_TRUE(g_recovery_paused_with_held.load()) << "woken during recovery: held, not run";
  engine_->settle(0);
  ASSERT_EQ(engine_->locks().size(), 1u);
  const Value holders = engine_->locks().at(0)["holders"];
  ASSERT_EQ(holders.size(), 1u) << engine_->locks().at(0).to_json();
  EXPECT_EQ(holders.at(0)["context"], Value("ctx-1")) << "the holder from before the stop holds it alone";
  EXPECT_EQ(holders.at(0)["token"], Value(token));
  EXPECT_TRUE(engine_->records("took").empty()) << "ctx-2 waits for the desk";
  // ctx-1's request is approved: it lets the desk go, and ctx-2 takes it after.
  ASSERT_TRUE(engine_->update("request", "r1", json(R"({"approved": true})")).is_ok());
  engine_->settle();
  ASSERT_EQ(engine_->context("ctx-1")->status(), "completed");
  for (const Value& took : engine_->records("took")) {
    EXPECT_GT(took["token"].as_int(), token) << "ctx-2 took the desk after ctx-1, with a newer token";
  }
}

// A desk held for at most a day, and a queue that may wait for years.
constexpr const char* kPatientDesk = R"({"id": "patient", "trigger": {"type": "record", "table": "request", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "desk", "max_duration": "1d", "max_attempts": 1000, "delay": "30d"}},
    {"action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "approved", "op": "eq", "value": true}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

// A lock request resumed by an engine on the real clock keeps the time it was made: its
// place in the queue, and what it reports when granted (waited_ms counts from then).
// Here the first engine's virtual clock stood at 2026-01-01 00:01 when ctx-2 asked for the
// desk; the next one runs on the real clock, months later, when the holder's lease has run
// out, so ctx-2 is granted at once. Until 2026-12-06 the request's time was overwritten
// with the moment it was asked again, so it reported a wait of 0 ms.
TEST_P(ResumeStoresTest, ALockRequestResumedOnTheRealClock_KeepsTheTimeItWasMade) {
  Engine& first = reopen({kPatientDesk});
  ASSERT_TRUE(first.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  first.settle(0);
  ASSERT_TRUE(first.advance(kMinute).is_ok());
  ASSERT_TRUE(first.insert("request", json(R"({"sys_id": "r2", "approved": false})")).is_ok());
  first.settle(0);
  ASSERT_EQ(first.locks().at(0)["waiters"].size(), 1u) << "ctx-2 waits for the desk";
  const Result<TimeMs> asked = parse_time(first.locks().at(0)["waiters"].at(0)["requested_at"].as_string());
  ASSERT_TRUE(asked.is_ok()) << first.locks().at(0).to_json();

  open_on_the_real_clock({kPatientDesk});
  report_ = engine_->recover();
  ASSERT_TRUE(WaitFor([&] {
    std::optional<ContextRecord> c = engine_->context("ctx-2");
    return c && c->step("lk")["outputs"]["result"] == Value("success");
  })) << "ctx-2 takes the desk once ctx-1's lease has run out";
  const Value outputs = engine_->context("ctx-2")->step("lk")["outputs"];
  const int64_t since_asked = engine_->now() - *asked;
  EXPECT_GE(outputs["waited_ms"].as_int(), since_asked - 60000) << outputs.to_json();
  EXPECT_GT(outputs["attempts"].as_int(), 1) << outputs.to_json();
}

TEST_P(ResumeStoresTest, ATimerThatRanOutWhileTheEngineWasDown_FiresAtOnce) {
  Engine& first = reopen({kFulfil});
  ASSERT_TRUE(first.insert("order", json(R"({"sys_id": "o1"})")).is_ok());
  first.settle(0);
  // The next engine runs on the real clock: months have passed since the first one's
  // 2026-01-01 + 1h deadline, as when a process stays down past a wait's end. The wait
  // fires at once, and the report says it ran out while no engine ran.
  Engine& second = reopen({kFulfil}, real_clock_options());
  ASSERT_EQ(report_["expired"].size(), 1u) << report_.to_json();
  EXPECT_EQ(report_["expired"].at(0)["context"], Value("ctx-1"));
  second.settle(0);
  EXPECT_EQ(second.context("ctx-1")->status(), "completed") << second.context("ctx-1")->value().to_json();
  EXPECT_EQ(second.records("invoice").size(), 1u);
}

TEST_P(ResumeStoresTest, AWaitForARecord_Resumes_AndAWriteInTheNextEngineMeetsIt) {
  Engine& first = reopen({kApprove});
  ASSERT_TRUE(first.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  first.settle(0);
  ASSERT_EQ(first.contexts()[0].status(), "waiting");
  const int64_t token = first.contexts()[0].step("lk")["outputs"]["token"].as_int();

  Engine& second = reopen({kApprove});
  ASSERT_EQ(report_["resumed"].to_json(), R"(["ctx-1"])") << report_.to_json();
  EXPECT_EQ(report_["locks_released"].size(), 0u) << "its holder came back";
  ASSERT_EQ(second.locks().size(), 1u);
  EXPECT_EQ(second.locks().at(0)["holders"].at(0)["context"], Value("ctx-1"));
  EXPECT_EQ(second.locks().at(0)["holders"].at(0)["token"], Value(token));
  ASSERT_TRUE(second.update("request", "r1", json(R"({"approved": true})")).is_ok());
  second.settle();
  ASSERT_EQ(second.context("ctx-1")->status(), "completed") << second.context("ctx-1")->value().to_json();
  ASSERT_EQ(second.records("done").size(), 1u);
  EXPECT_EQ(second.records("done")[0]["token"], Value(token)) << "it resumed holding its lock";
  EXPECT_EQ(second.records("done")[0]["timed_out"], Value(false));
  EXPECT_EQ(second.locks().size(), 0u);
}

TEST_P(ResumeStoresTest, ALockQueue_ComesBackInItsOrder_AndTheLockGoesToTheNextWaiter) {
  Engine& first = reopen({kApprove});
  for (const char* id : {"r1", "r2", "r3"}) {
    ASSERT_TRUE(first.insert("request", json(std::string(R"({"approved": false, "sys_id": ")") + id + "\"}")).is_ok());
    ASSERT_TRUE(first.advance(kMinute).is_ok());
  }
  ASSERT_EQ(first.locks().size(), 1u);
  ASSERT_EQ(first.locks().at(0)["waiters"].size(), 2u);
  const int64_t first_token = first.context("ctx-1")->step("lk")["outputs"]["token"].as_int();

  Engine& second = reopen({kApprove});
  ASSERT_EQ(report_["resumed"].size(), 3u) << report_.to_json();
  ASSERT_EQ(second.locks().size(), 1u) << "the holder and both waiters came back";
  second.settle(0);
  const Value lock = second.locks().at(0);
  EXPECT_EQ(lock["holders"].at(0)["context"], Value("ctx-1"));
  ASSERT_EQ(lock["waiters"].size(), 2u) << lock.to_json();
  EXPECT_EQ(lock["waiters"].at(0)["context"], Value("ctx-2"));
  EXPECT_EQ(lock["waiters"].at(1)["context"], Value("ctx-3"));
  for (const char* id : {"r1", "r2", "r3"}) {
    ASSERT_TRUE(second.update("request", id, json(R"({"approved": true})")).is_ok());
  }
  second.settle();
  // ctx-1 finishes, then the queue goes on in order, each with a larger token.
  ASSERT_EQ(second.records("done").size(), 3u);
  int64_t last = first_token - 1;
  for (size_t i = 0; i < 3; ++i) {
    const Value d = second.records("done")[i];
    EXPECT_EQ(d["request"], Value(std::string("r") + std::to_string(i + 1)));
    EXPECT_GT(d["token"].as_int(), last) << "fencing tokens only grow";
    last = d["token"].as_int();
  }
  EXPECT_EQ(second.locks().size(), 0u);
}

TEST_F(ResumeTest, AfterACrashAtAnyStep_EveryWriteHappensExactlyOnce_AndTheContextFinishes) {
  // The run without a crash, step by step: after each step, the file as a crash would
  // leave it is copied. An engine on each copy recovers and finishes the work.
  std::vector<std::string> copies;
  EngineOptions o = options(path_);
  o.after_simulated_step = [&](std::string_view) {
    Journal& journal = *engine_->core().journal;
    ASSERT_TRUE(journal.wait_durable(journal.appended()).is_ok());
    copies.push_back(dir_ + "/crash-" + std::to_string(copies.size()) + ".db");
    testing::copy_durable_state(path_, copies.back());
  };
  Engine& first = reopen({kFulfil}, o);
  ASSERT_TRUE(first.insert("order", json(R"({"sys_id": "o1"})")).is_ok());
  ASSERT_TRUE(first.advance(2 * kHour).is_ok());
  ASSERT_EQ(first.context("ctx-1")->status(), "completed");
  const size_t steps = first.context("ctx-1")->value()["steps"].size();
  ASSERT_GE(copies.size(), steps) << "a copy after every step";

  for (size_t i = 0; i < copies.size(); ++i) {
    SCOPED_TRACE("crash after simulated step " + std::to_string(i));
    Engine& next = reopen({kFulfil}, options(copies[i]));
    ASSERT_TRUE(next.advance(2 * kHour).is_ok());
    next.settle();
    ASSERT_EQ(next.records("shipment").size(), 1u) << "report: " << report_.to_json();
    ASSERT_EQ(next.records("invoice").size(), 1u) << "report: " << report_.to_json();
    EXPECT_EQ(next.records("invoice")[0]["shipment"], next.records("shipment")[0]["sys_id"]);
    EXPECT_EQ(next.record("order", "o1")["state"], Value("shipped"));
    EXPECT_EQ(next.record("order", "o1")["sys_mod_count"], Value(1)) << "the update was not repeated";
    std::optional<ContextRecord> c = next.context("ctx-1");
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->status(), "completed") << c->value().to_json();
    EXPECT_EQ(c->value()["steps"].size(), steps) << c->value().to_json();
    EXPECT_EQ(next.contexts().size(), 1u);
  }
}

// ---- contexts that cannot resume ----

constexpr const char* kHold = R"({"id": "hold", "trigger": {"type": "record", "table": "job", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "printer", "max_duration": "1d"}},
    {"action": "wait_for_condition", "inputs": {"table": "job", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "done", "op": "eq", "value": true}}},
    {"action": "notify", "inputs": {"text": "printed"}},
    {"action": "unlock", "inputs": {"key": "printer"}}]})";
// The same flow changed: its plan version differs.
constexpr const char* kHoldChanged = R"({"id": "hold", "trigger": {"type": "record", "table": "job", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "printer", "max_duration": "2d"}},
    {"action": "wait_for_condition", "inputs": {"table": "job", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "done", "op": "eq", "value": true}}},
    {"action": "notify", "inputs": {"text": "printed"}},
    {"action": "unlock", "inputs": {"key": "printer"}}]})";
constexpr const char* kTake = R"({"id": "take", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "printer", "max_attempts": 1000, "delay": "1h"}},
    {"action": "create_record", "inputs": {"table": "token", "values": {"token": "{{steps.lk.token}}"}}},
    {"action": "unlock", "inputs": {"key": "printer"}}]})";

CustomActionType Notify(std::vector<std::string>* keys) {
  CustomActionType t;
  t.name = "notify";
  t.inputs = {Param{"text", ParamType::kString, true}};
  t.run = [keys](CustomActionContext& ctx) -> Result<Value> {
    if (keys) keys->push_back(ctx.idempotency_key());
    return Value::empty_object();
  };
  return t;
}

class ResumeFailureTest : public ResumeTest {
 protected:
  // An engine where ctx-1 (hold) holds the printer and waits for its job, and ctx-2
  // (take) waits in the printer's queue; then closed.
  void hold_and_queue() {
    engine_.reset();
    Result<std::unique_ptr<Engine>> opened = Engine::open(options(path_));
    ASSERT_TRUE(opened.is_ok()) << opened.message();
    engine_ = std::move(opened).value();
    ASSERT_TRUE(engine_->register_action(Notify(nullptr)).is_ok());
    for (const char* d : {kHold, kTake}) {
      Diagnostics diags = engine_->load_text(d);
      ASSERT_TRUE(diags.empty()) << diags.describe();
    }
    ASSERT_TRUE(engine_->insert("job", json(R"({"sys_id": "j1", "done": false})")).is_ok());
    engine_->settle(0);
    ASSERT_TRUE(engine_->call_flow("take").is_ok());
    engine_->settle(0);
    ASSERT_EQ(engine_->context("ctx-2")->status(), "waiting");
    token_ = engine_->context("ctx-1")->step("lk")["outputs"]["token"].as_int();
    engine_.reset();
  }
  // Opens the next engine (with `register_notify`, `defs`), recovers, and checks that ctx-1
  // ended in error with `why` in its message, and that the printer went to ctx-2.
  void expect_failed_and_handed_on(const std::vector<const char*>& defs, bool register_notify, const std::string& why) {
    Result<std::unique_ptr<Engine>> opened = Engine::open(options(path_));
    ASSERT_TRUE(opened.is_ok()) << opened.message();
    engine_ = std::move(opened).value();
    if (register_notify) {
      ASSERT_TRUE(engine_->register_action(Notify(nullptr)).is_ok());
    }
    for (const char* d : defs) (void)engine_->load_text(d);
    report_ = engine_->recover();
    ASSERT_EQ(report_["failed"].size(), 1u) << report_.to_json();
    EXPECT_EQ(report_["failed"].at(0)["context"], Value("ctx-1"));
    EXPECT_EQ(report_["failed"].at(0)["was"], Value("waiting"));
    EXPECT_NE(report_["failed"].at(0)["reason"].as_string().find(why), std::string_view::npos) << report_.to_json();
    EXPECT_EQ(report_["resumed"].to_json(), R"(["ctx-2"])");
    std::optional<ContextRecord> ended = engine_->context("ctx-1");
    ASSERT_TRUE(ended.has_value());
    EXPECT_EQ(ended->status(), "error");
    EXPECT_NE(ended->error_message().find(why), std::string::npos) << ended->error_message();
    // Its record keeps what it did before the stop (read back from the file: recovery
    // reads a checkpointed context without it): the lock it took, then the wait it was in.
    ASSERT_EQ(ended->value()["steps"].size(), 2u) << ended->value().to_json();
    EXPECT_EQ(ended->value()["steps"].at(0)["status"], Value("completed"));
    EXPECT_EQ(ended->value()["steps"].at(0)["outputs"]["token"], Value(token_));
    EXPECT_EQ(ended->value()["steps"].at(1)["status"], Value("error"));
    engine_->settle();
    EXPECT_EQ(engine_->context("ctx-2")->status(), "completed") << engine_->context("ctx-2")->value().to_json();
    ASSERT_EQ(engine_->records("token").size(), 1u);
    EXPECT_GT(engine_->records("token")[0]["token"].as_int(), token_) << "the lock went on, with a new token";
    EXPECT_EQ(engine_->locks().size(), 0u);
  }
  int64_t token_ = 0;
};

TEST_F(ResumeFailureTest, ItsPlanVersionIsGone_ItEndsInError_AndItsLockGoesToTheNextWaiter) {
  hold_and_queue();
  // The file no longer holds the versions it ran (a file edited by hand, or another
  // project's): its plan cannot be compiled again.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM definition_versions WHERE id = 'hold'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_failed_and_handed_on({kHoldChanged, kTake}, true, "is gone (flow 'hold' version");
}

TEST_F(ResumeFailureTest, AFlowChangedWhileItsContextWaited_TheContextResumesOnItsOwnVersion_NewOnesRunTheNew) {
  hold_and_queue();
  const std::string old_version = "hold@8a4c94d9";
  Result<std::unique_ptr<Engine>> opened = Engine::open(options(path_));
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  engine_ = std::move(opened).value();
  ASSERT_TRUE(engine_->register_action(Notify(nullptr)).is_ok());
  for (const char* d : {kHoldChanged, kTake}) ASSERT_TRUE(engine_->load_text(d).empty());
  report_ = engine_->recover();
  ASSERT_EQ(report_["resumed"].to_json(), R"(["ctx-1","ctx-2"])") << report_.to_json();
  EXPECT_EQ(engine_->context("ctx-1")->plan_version(), old_version);
  ASSERT_TRUE(engine_->update("job", "j1", json(R"({"done": true})")).is_ok());
  ASSERT_TRUE(engine_->insert("job", json(R"({"sys_id": "j2", "done": false})")).is_ok());
  engine_->settle(0);
  std::optional<ContextRecord> old_run = engine_->context("ctx-1");
  EXPECT_EQ(old_run->status(), "completed") << old_run->value().to_json();
  EXPECT_EQ(old_run->plan_version(), old_version) << "it ran to its end on the version it started with";
  EXPECT_EQ(old_run->value()["steps"].size(), 4u);
  std::optional<ContextRecord> new_run = engine_->context("ctx-3");
  ASSERT_TRUE(new_run.has_value());
  EXPECT_NE(new_run->plan_version(), old_version) << "a new context runs the flow as it is now";
  EXPECT_EQ(old_run->step("lk")["inputs"]["max_duration"], Value("1d"));
  EXPECT_EQ(new_run->step("lk")["inputs"]["max_duration"], Value("2d"));
  EXPECT_EQ(engine_->context("ctx-2")->status(), "completed") << "the printer went to the next in line";
}

TEST_F(ResumeFailureTest, ItsCustomActionTypeIsNoLongerRegistered_ItEndsInError_AndItsLockGoesToTheNextWaiter) {
  hold_and_queue();
  expect_failed_and_handed_on({kHold, kTake}, false, "notify");
}

TEST_F(ResumeFailureTest, ItsRowIsCorrupt_ItEndsInError_AndItsLockGoesToTheNextWaiter) {
  hold_and_queue();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE contexts SET checkpoint = '{\"exec\": {\"plan' WHERE seq = 1", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  expect_failed_and_handed_on({kHold, kTake}, true, "its stored state cannot be read");
}

TEST_F(ResumeFailureTest, AnEndedContextWithoutItsRecord_GetsOneInError_OnceAndForAll_AndItsLockGoesOn) {
  hold_and_queue();
  // A file where ctx-1 (holding the lock) ended but its record is missing (edited by hand).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE contexts SET status = 'completed', record = NULL, checkpoint = NULL WHERE seq = 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Result<std::unique_ptr<Engine>> opened = Engine::open(options(path_));
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  engine_ = std::move(opened).value();
  ASSERT_TRUE(engine_->register_action(Notify(nullptr)).is_ok());
  for (const char* d : {kHold, kTake}) (void)engine_->load_text(d);
  report_ = engine_->recover();
  ASSERT_EQ(report_["failed"].size(), 1u) << report_.to_json();
  EXPECT_EQ(report_["failed"].at(0)["context"], Value("ctx-1"));
  EXPECT_EQ(report_["failed"].at(0)["was"], Value("completed"));
  EXPECT_NE(report_["failed"].at(0)["reason"].as_string().find("its record was not stored"), std::string_view::npos);
  engine_->settle();
  EXPECT_EQ(engine_->context("ctx-1")->status(), "error");
  EXPECT_EQ(engine_->context("ctx-2")->status(), "completed") << "the lock went on";
  // Its record is in the file now: the next engine has nothing to say of it.
  engine_.reset();
  Result<std::unique_ptr<Engine>> again = Engine::open(options(path_));
  ASSERT_TRUE(again.is_ok()) << again.message();
  engine_ = std::move(again).value();
  ASSERT_TRUE(engine_->register_action(Notify(nullptr)).is_ok());
  for (const char* d : {kHold, kTake}) (void)engine_->load_text(d);
  const Value second = engine_->recover();
  EXPECT_TRUE(second.is_null() || second["failed"].size() == 0u) << second.to_json();
  ASSERT_TRUE(engine_->context("ctx-1").has_value());
  EXPECT_EQ(engine_->context("ctx-1")->status(), "error");
}

TEST_F(ResumeTest, ACustomAction_GetsAKeyThatIsTheSameWhenItRunsAgainAfterACrash) {
  std::vector<std::string> keys;
  std::vector<std::string> copies;
  constexpr const char* kTwice = R"({"id": "twice", "trigger": {"type": "api"}, "actions": [
    {"for_each": "{{inputs.items}}", "do": [{"action": "notify", "inputs": {"text": "{{item}}"}}]},
    {"action": "wait", "inputs": {"duration": "1m"}}]})";
  EngineOptions o = options(path_);
  o.after_simulated_step = [&](std::string_view) {
    Journal& journal = *engine_->core().journal;
    ASSERT_TRUE(journal.wait_durable(journal.appended()).is_ok());
    copies.push_back(dir_ + "/crash-" + std::to_string(copies.size()) + ".db");
    testing::copy_durable_state(path_, copies.back());
  };
  engine_.reset();
  Result<std::unique_ptr<Engine>> opened = Engine::open(o);
  ASSERT_TRUE(opened.is_ok());
  engine_ = std::move(opened).value();
  ASSERT_TRUE(engine_->register_action(Notify(&keys)).is_ok());
  ASSERT_TRUE(engine_->load_text(kTwice).empty());
  ASSERT_TRUE(engine_->call_flow("twice", json(R"({"items": ["a", "b"]})")).is_ok());
  ASSERT_TRUE(engine_->advance(kMinute).is_ok());
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_NE(keys[0], keys[1]) << "one key per iteration";
  EXPECT_EQ(keys[0].rfind("ctx-1/", 0), 0u) << keys[0];
  const std::vector<std::string> run_once = keys;
  // After a crash at any step, the actions that run again run with the same keys.
  for (const std::string& copy : copies) {
    keys.clear();
    engine_.reset();
    Result<std::unique_ptr<Engine>> next = Engine::open(options(copy));
    ASSERT_TRUE(next.is_ok());
    engine_ = std::move(next).value();
    ASSERT_TRUE(engine_->register_action(Notify(&keys)).is_ok());
    ASSERT_TRUE(engine_->load_text(kTwice).empty());
    (void)engine_->recover();
    ASSERT_TRUE(engine_->advance(kMinute).is_ok());
    EXPECT_EQ(engine_->context("ctx-1")->status(), "completed");
    for (const std::string& k : keys) {
      EXPECT_NE(std::find(run_once.begin(), run_once.end(), k), run_once.end()) << k;
    }
  }
}

}  // namespace
}  // namespace flowrt
