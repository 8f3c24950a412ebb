// Harness scenarios for lock and unlock (SPEC section 8), on the virtual clock.
#include <stdexcept>

#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class LocksTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.lock_limits = {{"pool", 3}};
    o.check_invariants = true;
    return o;
  }
  void TearDown() override {
    EXPECT_EQ(engine().core().dispatcher.lock_violation(), "");
    FlowTest::TearDown();
  }
  const Value& LockOut(const ContextRecord& c) { return c.step("lk")["outputs"]; }
};

constexpr const char* kSerial = R"({"id": "serial", "trigger": {"type": "record", "table": "job", "when": "created"}, "actions": [
  {"id": "lk", "action": "lock", "inputs": {"key": "printer", "max_attempts": 10, "delay": "1s"}},
  {"action": "wait", "inputs": {"duration": "3s"}},
  {"action": "create_record", "inputs": {"table": "printed", "values": {"n": "{{trigger.record.n}}", "token": "{{steps.lk.token}}"}}},
  {"action": "unlock", "inputs": {"key": "printer"}}]})";

TEST_F(LocksTest, Exclusive_WaitersAreGrantedInTriggerOrderTheMomentItFrees) {
  ASSERT_TRUE(Load(kSerial));
  for (int n = 1; n <= 3; ++n) Insert("job", Value::object({{"n", Value(n)}}));
  Settle();
  std::vector<ContextRecord> cs = Contexts("serial");
  ASSERT_EQ(cs.size(), 3u);
  std::vector<Value> printed = Records("printed");
  ASSERT_EQ(printed.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(cs[i], HasStatus("completed"));
    EXPECT_EQ(printed[i]["n"], Value(i + 1));
    EXPECT_EQ(Ms(cs[i].value()["ended_at"]), 3000 * (i + 1));
    EXPECT_EQ(LockOut(cs[i])["waited_ms"], Value(3000 * i));
    EXPECT_EQ(LockOut(cs[i])["attempts"], Value(1 + 3 * i)) << "a poller every 1s would have needed these";
  }
  EXPECT_LT(printed[0]["token"].as_int(), printed[1]["token"].as_int());
  EXPECT_LT(printed[1]["token"].as_int(), printed[2]["token"].as_int());
  EXPECT_EQ(LockOut(cs[0]), Json(R"({"result": "success", "state": "finished", "token": 1, "attempts": 1, "waited_ms": 0})"));
  std::vector<std::string> logs = cs[1].log_messages();
  EXPECT_EQ(logs.front(), "lock 'printer': waiting; held by ctx-1, 0 ahead in the queue");
  EXPECT_EQ(cs[2].log_messages().front(), "lock 'printer': waiting; held by ctx-1, 1 ahead in the queue");
  EXPECT_EQ(logs[1], "lock 'printer': granted, token 2, after waiting 3000ms");
  EXPECT_EQ(logs.back(), "lock 'printer': released");
}

class SingleWorkerLocksTest : public LocksTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = LocksTest::Options();
    o.properties.worker_threads = 1;
    return o;
  }
};

TEST_F(SingleWorkerLocksTest, TwoContextsOnOneThread_ContendAsTwoOwners) {
  // One worker thread runs both contexts; the lock still tells them apart.
  ASSERT_TRUE(Load(kSerial));
  Insert("job", Value::object({{"n", Value(1)}}));
  Insert("job", Value::object({{"n", Value(2)}}));
  engine().settle(0);
  std::vector<ContextRecord> cs = Contexts("serial");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0], HasStep("lk", "completed"));
  EXPECT_THAT(cs[1], HasStep("lk", "waiting"));
  Value locks = engine().locks();
  ASSERT_EQ(locks.size(), 1u);
  EXPECT_EQ(locks.at(0)["holders"].at(0)["context"], Value(cs[0].id()));
  EXPECT_EQ(locks.at(0)["waiters"].at(0)["context"], Value(cs[1].id()));
  Settle();
  EXPECT_EQ(Records("printed").size(), 2u);
  EXPECT_EQ(engine().locks().size(), 0u);
}

TEST_F(LocksTest, LostUpdate_CountIsN_AndGrantOrderIsTriggerOrder) {
  ASSERT_TRUE(Load(R"({"id": "inc", "trigger": {"type": "record", "table": "req", "when": "created"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "counter", "max_attempts": 1000, "delay": "1s"}},
    {"id": "c", "action": "look_up_record", "inputs": {"table": "counter"}},
    {"action": "wait", "inputs": {"duration": "1s"}},
    {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{steps.c.record.sys_id}}", "while_holding": "counter",
                                           "values": {"n": "{{steps.c.record.n | add: 1}}"}}},
    {"action": "create_record", "inputs": {"table": "grants", "values": {"i": "{{trigger.record.i}}", "token": "{{steps.lk.token}}"}}},
    {"action": "unlock", "inputs": {"key": "counter"}}]})"));
  Insert("counter", Json(R"({"n": 0})"));
  constexpr int kN = 40;
  for (int i = 0; i < kN; ++i) Insert("req", Value::object({{"i", Value(i)}}));
  Settle();
  EXPECT_EQ(Records("counter").at(0)["n"], Value(kN));
  std::vector<Value> grants = Records("grants");
  ASSERT_EQ(grants.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(grants[i]["i"], Value(i)) << "grant order is trigger order";
    if (i > 0) {
      EXPECT_GT(grants[i]["token"].as_int(), grants[i - 1]["token"].as_int());
    }
  }
}

TEST_F(LocksTest, Weights_HoldersFitTogether_TheRestWait) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "pool", "weight": "{{inputs.w}}", "max_attempts": 100, "delay": "1s"}},
    {"action": "wait", "inputs": {"duration": "10s"}},
    {"action": "unlock", "inputs": {"key": "pool"}}]})"));
  const std::string a = CallFlow("w", Json(R"({"w": 2})"));
  const std::string b = CallFlow("w", Json(R"({"w": 1})"));
  const std::string c = CallFlow("w", Json(R"({"w": 2})"));
  const std::string d = CallFlow("w", Json(R"({"w": 1})"));
  Settle();
  EXPECT_EQ(LockOut(ContextById(a))["waited_ms"], Value(0));
  EXPECT_EQ(LockOut(ContextById(b))["waited_ms"], Value(0)) << "2 + 1 fit in the limit of 3";
  EXPECT_EQ(LockOut(ContextById(c))["waited_ms"], Value(10000));
  EXPECT_EQ(LockOut(ContextById(d))["waited_ms"], Value(10000)) << "d fits at once but may not pass c";
}

TEST_F(LocksTest, Timeout_GivesUpAfterMaxAttemptsMinusOneDelays) {
  ASSERT_TRUE(Load(R"([
    {"id": "holder", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "k"}}, {"action": "wait", "inputs": {"duration": "1m"}}]},
    {"id": "impatient", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "on_error": "continue", "inputs": {"key": "k", "max_attempts": 3, "delay": "2s"}},
      {"action": "log", "inputs": {"message": "{{steps.lk.result}} {{steps.lk.state}} {{steps.lk.attempts}} {{steps.lk.waited_ms}}"}}]},
    {"id": "once", "trigger": {"type": "api"}, "actions": [{"id": "lk", "action": "lock", "inputs": {"key": "k"}}]}])"));
  CallFlow("holder");
  const std::string i = CallFlow("impatient");
  const std::string o = CallFlow("once");
  Settle();
  ContextRecord impatient = ContextById(i);
  EXPECT_THAT(impatient, HasStatus("completed"));
  EXPECT_THAT(impatient, HasLog("failure timeout 3 4000"));
  EXPECT_THAT(impatient, HasStep("lk", "error"));
  EXPECT_EQ(Ms(impatient.step("lk")["ended_at"]), 4000);
  ContextRecord once = ContextById(o);
  EXPECT_THAT(once, FailedWith("lock 'k' not granted: timed out after 1 attempt"));
  EXPECT_EQ(LockOut(once)["state"], Value("timeout"));
  EXPECT_EQ(LockOut(once)["waited_ms"], Value(0));
  EXPECT_EQ(Ms(once.value()["ended_at"]), 0) << "default max_attempts 1: no wait at all";
}

TEST_F(LocksTest, ReLock_SucceedsAtOnce_OneUnlockReleases_UnlockNotHeldWarns) {
  ASSERT_TRUE(Load(R"({"id": "r", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "k"}},
    {"id": "again", "action": "lock", "inputs": {"key": "k"}},
    {"id": "u1", "action": "unlock", "inputs": {"key": "k"}},
    {"id": "u2", "action": "unlock", "inputs": {"key": "k"}},
    {"id": "u3", "action": "unlock", "inputs": {"key": "never"}}]})"));
  CallFlow("r");
  Settle();
  ContextRecord c = OnlyContext("r");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.step("again")["outputs"]["token"], LockOut(c)["token"]);
  EXPECT_EQ(c.step("u1")["outputs"]["released"], Value(true));
  EXPECT_EQ(c.step("u2")["outputs"]["released"], Value(false));
  EXPECT_EQ(c.step("u3")["outputs"]["released"], Value(false));
  EXPECT_THAT(c, HasLog("unlock of lock 'never', which this context does not hold"));
}

TEST_F(LocksTest, Lease_ExpiresAfterMaxDuration_NextWaiterGetsLargerToken_OldHolderIsFenced) {
  ASSERT_TRUE(Load(R"([
    {"id": "slow", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "inputs": {"key": "k", "max_duration": "5s"}},
      {"action": "wait", "inputs": {"duration": "10s"}},
      {"id": "late", "action": "update_record", "on_error": "continue",
       "inputs": {"table": "doc", "sys_id": "d", "values": {"by": "slow"}, "while_holding": "k"}},
      {"id": "u", "action": "unlock", "inputs": {"key": "k"}}]},
    {"id": "next", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "inputs": {"key": "k", "max_attempts": 20, "delay": "1s"}},
      {"action": "update_record", "inputs": {"table": "doc", "sys_id": "d", "values": {"by": "next"}, "while_holding": "k"}},
      {"action": "unlock", "inputs": {"key": "k"}}]}])"));
  Insert("doc", Json(R"({"sys_id": "d"})"));
  const std::string s = CallFlow("slow");
  const std::string n = CallFlow("next");
  Settle();
  ContextRecord slow = ContextById(s), next = ContextById(n);
  EXPECT_THAT(slow, HasLog("lock 'k' (token 1): held for its max_duration; released as if unlocked"));
  EXPECT_EQ(slow.logs().at(1)["level"], Value("warn"));
  EXPECT_EQ(LockOut(next)["waited_ms"], Value(5000));
  EXPECT_GT(LockOut(next)["token"].as_int(), LockOut(slow)["token"].as_int());
  EXPECT_THAT(slow, HasStep("late", "error"));
  EXPECT_NE(slow.step("late")["error"].as_string().find("lock_lost"), std::string_view::npos);
  EXPECT_EQ(slow.step("u")["outputs"]["released"], Value(false));
  EXPECT_EQ(engine().record("doc", "d")["by"], Value("next")) << "the late holder could not overwrite its successor";
}

TEST_F(LocksTest, Lease_ShorterOneGrantedLater_ExpiresAtItsOwnTime) {
  // The engine keeps one timer at the earliest lock deadline: a later grant with an
  // earlier expiry must move it forward.
  ASSERT_TRUE(Load(R"([
    {"id": "long", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "a", "max_duration": "1h"}}, {"action": "wait", "inputs": {"duration": "2h"}}]},
    {"id": "short", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "b", "max_duration": "3s"}}, {"action": "wait", "inputs": {"duration": "2h"}}]}])"));
  const std::string l = CallFlow("long");
  const std::string s = CallFlow("short");
  Settle();
  ContextRecord short_ctx = ContextById(s), long_ctx = ContextById(l);
  ASSERT_THAT(short_ctx, HasLog("lock 'b' (token 2): held for its max_duration; released as if unlocked"));
  ASSERT_THAT(long_ctx, HasLog("lock 'a' (token 1): held for its max_duration; released as if unlocked"));
  EXPECT_EQ(Ms(short_ctx.logs().at(1)["time"]), 3000);
  EXPECT_EQ(Ms(long_ctx.logs().at(1)["time"]), 3600000);
}

TEST_F(LocksTest, Lease_OfAReleasedLock_DoesNotMoveTheClock) {
  ASSERT_TRUE(Load(R"({"id": "quick", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "k", "max_duration": "1h"}}, {"action": "unlock", "inputs": {"key": "k"}}]})"));
  CallFlow("quick");
  CallFlow("quick");
  Settle();
  EXPECT_EQ(engine().now(), kDefaultVirtualStart) << "nothing is left to expire, so nothing to wait for";
  EXPECT_TRUE(engine().core().dispatcher.lock_states().empty());
}

TEST_F(LocksTest, Fencing_WritesCommitOnlyWhileHolding) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "no", "action": "create_record", "on_error": "continue", "inputs": {"table": "t", "values": {"a": 1}, "while_holding": "k"}},
    {"action": "lock", "inputs": {"key": "k"}},
    {"id": "c", "action": "create_record", "inputs": {"table": "t", "values": {"a": 2}, "while_holding": "k"}},
    {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{steps.c.sys_id}}", "values": {"a": 3}, "while_holding": "k"}},
    {"action": "unlock", "inputs": {"key": "k"}},
    {"id": "gone", "action": "delete_record", "on_error": "continue", "inputs": {"table": "t", "sys_id": "{{steps.c.sys_id}}", "while_holding": "k"}}]})"));
  CallFlow("f");
  Settle();
  ContextRecord c = OnlyContext("f");
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_NE(c.step("no")["error"].as_string().find("lock_lost"), std::string_view::npos);
  EXPECT_NE(c.step("gone")["error"].as_string().find("lock_lost"), std::string_view::npos);
  std::vector<Value> rows = Records("t");
  ASSERT_EQ(rows.size(), 1u) << "the unguarded create and the late delete wrote nothing";
  EXPECT_EQ(rows[0]["a"], Value(3));
}

class ReleaseOnExitTest : public LocksTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    LocksTest::SetUp();
    CustomActionType boom;
    boom.name = "boom";
    boom.run = [](CustomActionContext&) -> Result<Value> { throw std::runtime_error("kaboom"); };
    ASSERT_TRUE(engine().register_action(std::move(boom)).is_ok());
  }
};

TEST_P(ReleaseOnExitTest, EveryLockIsReleasedAndEveryQueueLeft) {
  // The holder takes a and b, then ends in the way the parameter says; a waiter on each
  // name must be granted as soon as it ends.
  const std::string ending = GetParam();
  std::string tail;
  if (ending == "completed") tail = R"({"action": "log", "inputs": {"message": "done without unlocking"}})";
  if (ending == "error") tail = R"({"action": "fail", "inputs": {"message": "stop"}})";
  if (ending == "continue_then_complete") tail = R"({"action": "fail", "on_error": "continue", "inputs": {"message": "x"}})";
  if (ending == "cancelled") tail = R"({"action": "wait", "inputs": {"duration": "1h"}})";
  if (ending == "throws") tail = R"({"action": "boom"})";
  ASSERT_TRUE(Load(R"([
    {"id": "holder", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "a"}}, {"action": "lock", "inputs": {"key": "b"}},
      {"action": "wait", "inputs": {"duration": "1s"}}, )" + tail + R"(]},
    {"id": "waiter", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "inputs": {"key": "{{inputs.k}}", "max_attempts": 100000, "delay": "1s"}},
      {"action": "unlock", "inputs": {"key": "{{inputs.k}}"}}]},
    {"id": "queued", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "a"}}, {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "lock", "inputs": {"key": "b", "max_attempts": 100000, "delay": "1s"}}]}])"));
  const std::string h = CallFlow("holder");
  const std::string wa = CallFlow("waiter", Json(R"({"k": "a"})"));
  const std::string wb = CallFlow("waiter", Json(R"({"k": "b"})"));
  engine().settle(0);
  if (ending == "cancelled") {
    ASSERT_TRUE(engine().advance(2000).is_ok());
    ASSERT_TRUE(engine().cancel(h).is_ok());
  }
  Settle();
  EXPECT_TRUE(ContextById(h).status() != "in_progress" && ContextById(h).status() != "waiting");
  EXPECT_THAT(ContextById(wa), HasStatus("completed"));
  EXPECT_THAT(ContextById(wb), HasStatus("completed"));
  EXPECT_EQ(engine().locks().size(), 0u) << engine().locks().to_json();
}

INSTANTIATE_TEST_SUITE_P(Exits, ReleaseOnExitTest,
                         ::testing::Values("completed", "error", "continue_then_complete", "cancelled", "throws"));

TEST_F(LocksTest, CancelledWaiter_LeavesTheQueue) {
  ASSERT_TRUE(Load(R"([
    {"id": "holder", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "k"}}, {"action": "wait", "inputs": {"duration": "1m"}}, {"action": "unlock", "inputs": {"key": "k"}}]},
    {"id": "waiter", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "inputs": {"key": "k", "max_attempts": 1000, "delay": "1s"}}]}])"));
  CallFlow("holder");
  const std::string w1 = CallFlow("waiter");
  const std::string w2 = CallFlow("waiter");
  engine().settle(0);
  ASSERT_EQ(engine().locks().at(0)["waiters"].size(), 2u);
  ASSERT_TRUE(engine().cancel(w1).is_ok());
  engine().settle(0);
  EXPECT_THAT(ContextById(w1), HasStatus("cancelled"));
  ASSERT_EQ(engine().locks().at(0)["waiters"].size(), 1u);
  Settle();
  EXPECT_EQ(LockOut(ContextById(w2))["waited_ms"], Value(60000));
}

TEST_F(LocksTest, Deadlock_TwoContexts_RefusedAtOnceNamingTheCycle) {
  ASSERT_TRUE(Load(R"({"id": "d", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "{{inputs.first}}"}},
    {"action": "wait", "inputs": {"duration": "1s"}},
    {"id": "lk", "action": "lock", "inputs": {"key": "{{inputs.second}}", "max_attempts": 3600, "delay": "1s"}},
    {"action": "unlock", "inputs": {"key": "{{inputs.second}}"}}, {"action": "unlock", "inputs": {"key": "{{inputs.first}}"}}]})"));
  const std::string a = CallFlow("d", Json(R"({"first": "x", "second": "y"})"));
  const std::string b = CallFlow("d", Json(R"({"first": "y", "second": "x"})"));
  Settle();
  // Both ask at 1s in seq order: a queues for y; b's request for x would close the cycle.
  EXPECT_THAT(ContextById(a), HasStatus("completed"));
  ContextRecord refused = ContextById(b);
  EXPECT_THAT(refused, FailedWith("deadlock: " + b + " waits for lock 'x' held by " + a + ", which waits for lock 'y' held by " + b));
  EXPECT_EQ(LockOut(refused)["state"], Value("deadlock"));
  EXPECT_EQ(Ms(refused.value()["ended_at"]), 1000) << "refused at once, not after the attempts\n"
                                                  << refused.logs().to_json() << "\n" << ContextById(a).logs().to_json();
}

// A request that would close a cycle but makes one attempt only (the default) never
// waits, so it closes none: it fails as any single attempt on a taken lock does, with
// `timeout`. (SPEC 8: the refusal is of a grant that would close a cycle of contexts
// waiting for each other.) Until 2026-12-06 it was refused as a deadlock.
TEST_F(LocksTest, ASingleAttemptThatWouldCloseACycle_TimesOut_ItWaitsForNothing) {
  ASSERT_TRUE(Load(R"({"id": "d", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "{{inputs.first}}"}},
    {"action": "wait", "inputs": {"duration": "1s"}},
    {"id": "lk", "action": "lock", "inputs": {"key": "{{inputs.second}}", "max_attempts": "{{inputs.attempts}}", "delay": "1s"}},
    {"action": "unlock", "inputs": {"key": "{{inputs.second}}"}}, {"action": "unlock", "inputs": {"key": "{{inputs.first}}"}}]})"));
  const std::string a = CallFlow("d", Json(R"({"first": "x", "second": "y", "attempts": 3600})"));
  const std::string b = CallFlow("d", Json(R"({"first": "y", "second": "x", "attempts": 1})"));
  Settle();
  EXPECT_THAT(ContextById(a), HasStatus("completed"));
  ContextRecord once = ContextById(b);
  EXPECT_EQ(LockOut(once)["state"], Value("timeout")) << once.value().to_json();
  EXPECT_EQ(LockOut(once)["attempts"], Value(1));
}

TEST_F(LocksTest, Deadlock_ThreeContexts) {
  ASSERT_TRUE(Load(R"({"id": "d", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "{{inputs.first}}"}},
    {"action": "wait", "inputs": {"duration": "{{inputs.pause}}"}},
    {"id": "lk", "action": "lock", "inputs": {"key": "{{inputs.second}}", "max_attempts": 3600, "delay": "1s"}}]})"));
  CallFlow("d", Json(R"({"first": "a", "second": "b", "pause": "1s"})"));
  CallFlow("d", Json(R"({"first": "b", "second": "c", "pause": "2s"})"));
  const std::string c = CallFlow("d", Json(R"({"first": "c", "second": "a", "pause": "3s"})"));
  Settle();
  EXPECT_THAT(ContextById(c), FailedWith("deadlock: ctx-3 waits for lock 'a' held by ctx-1, which waits for lock 'b' held by ctx-2, which waits for lock 'c' held by ctx-3"));
  for (const ContextRecord& r : Contexts("d")) EXPECT_NE(r.status(), "waiting");
}

TEST_F(LocksTest, WeightAboveLimit_LiteralIsCompileError_FromPillIsStepError) {
  Diagnostics d = engine().load_text(R"({"id": "heavy", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "pool", "weight": 4}}, {"action": "lock", "inputs": {"key": "solo", "weight": 2}}]})", "h.json");
  EXPECT_NE(d.describe().find("h.json: /actions/0/inputs/weight: weight 4 is more than the limit 3 of lock 'pool'"), std::string::npos)
      << d.describe();
  EXPECT_NE(d.describe().find("/actions/1/inputs/weight: weight 2 is more than the limit 1 of lock 'solo' (undeclared locks have limit 1)"),
            std::string::npos)
      << d.describe();
  ASSERT_TRUE(Load(R"({"id": "dyn", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "pool", "weight": "{{inputs.w}}"}}]})"));
  CallFlow("dyn", Json(R"({"w": 4})"));
  Settle();
  EXPECT_THAT(OnlyContext("dyn"), FailedWith("weight 4 does not fit lock 'pool' (limit 3)"));
}

TEST_F(LocksTest, Visibility_DocumentListsHoldersAndWaiters) {
  ASSERT_TRUE(Load(kSerial));
  Insert("job", Value::object({{"n", Value(1)}}));
  Insert("job", Value::object({{"n", Value(2)}}));
  engine().settle(0);
  Value doc = engine().document();
  const Value& lock = doc["locks"].at(0);
  EXPECT_EQ(lock["name"], Value("printer"));
  EXPECT_EQ(lock["limit"], Value(1));
  EXPECT_EQ(lock["held"], Value(1));
  EXPECT_EQ(lock["holders"].at(0), Json(R"({"context": "ctx-1", "weight": 1, "token": 1,
      "acquired_at": "2026-01-01T00:00:00.000Z", "expires_at": "2026-01-01T01:00:00.000Z"})"));
  EXPECT_EQ(lock["waiters"].at(0), Json(R"({"context": "ctx-2", "weight": 1,
      "requested_at": "2026-01-01T00:00:00.000Z", "gives_up_at": "2026-01-01T00:00:09.000Z"})"));
}

}  // namespace
}  // namespace flowrt

namespace flowrt {
namespace {

// On a real clock a free lock is granted inside the step; a taken one parks the context
// and hands it over on release. The real clock's lock path is what is under test; nothing
// here waits on a timer, and every settle is bounded (10 s) so a wedged run fails.
class RealClockLocksTest : public flowrt::testing::FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.virtual_clock = false;
    o.properties.worker_threads = 4;
    o.check_invariants = true;
    return o;
  }
};

TEST_F(RealClockLocksTest, ManyContexts_IncrementUnderOneLock_NoUpdateIsLost) {
  ASSERT_TRUE(Load(R"({"id": "inc", "trigger": {"type": "api"}, "actions": [
    {"for_each": [1, 2, 3, 4, 5], "do": [
      {"id": "lk", "action": "lock", "inputs": {"key": "counter", "max_attempts": 100000, "delay": "1s"}},
      {"id": "c", "action": "look_up_record", "inputs": {"table": "counter"}},
      {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{steps.c.record.sys_id}}", "while_holding": "counter",
                                             "values": {"n": "{{steps.c.record.n | add: 1}}"}}},
      {"action": "unlock", "inputs": {"key": "counter"}}]}]})"));
  Insert("counter", Json(R"({"n": 0})"));
  for (int i = 0; i < 100; ++i) CallFlow("inc");
  engine().settle(10000);
  for (const ContextRecord& c : Contexts("inc")) ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(Records("counter").at(0)["n"], Value(500));
  EXPECT_EQ(engine().locks().size(), 0u);
  EXPECT_EQ(engine().core().dispatcher.lock_violation(), "");
}

// As an engine runs in production: real clock, no invariant checks. A context's end then
// skips the lock table when the context counts no lock in use, so every way of letting a
// lock go must keep that count: unlock, giving up in the queue, a lease running out, and
// ending while holding. The timers here are 1ms ones; settle waits for them.
class ProductionLocksTest : public RealClockLocksTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = RealClockLocksTest::Options();
    o.check_invariants = false;
    return o;
  }
};

TEST_F(ProductionLocksTest, EveryWayOfLettingGo_LeavesTheLockFreeForTheNext) {
  ASSERT_TRUE(Load(R"([
    {"id": "keep", "trigger": {"type": "api"}, "actions": [{"action": "lock", "inputs": {"key": "kept"}}]},
    {"id": "holder", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "held"}},
      {"action": "wait_for_condition", "inputs": {"table": "gate", "sys_id": "g",
                                                  "condition": {"field": "open", "op": "eq", "value": true}}},
      {"action": "unlock", "inputs": {"key": "held"}}]},
    {"id": "impatient", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "on_error": "continue", "inputs": {"key": "held", "max_attempts": 2, "delay": "1ms"}}]},
    {"id": "heir", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "held", "max_attempts": 1000, "delay": "1h"}}]},
    {"id": "leased", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "short", "max_duration": "1ms"}},
      {"action": "wait_for_condition", "inputs": {"table": "gate", "sys_id": "g",
                                                  "condition": {"field": "open", "op": "eq", "value": true}}}]},
    {"id": "take", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "inputs": {"key": "{{inputs.key}}"}}, {"action": "unlock", "inputs": {"key": "{{inputs.key}}"}}]}])"));
  // One at a time, so the tokens are 1, 2, 3. settle(1s): wait for the 1ms timers, not for
  // the hour-long default lease of "held".
  auto settle = [this] { engine().settle(1000); };
  Insert("gate", Json(R"({"sys_id": "g", "open": false})"));
  const std::string keep = CallFlow("keep");
  settle();
  CallFlow("holder");
  settle();
  CallFlow("leased");
  settle();
  const std::string impatient = CallFlow("impatient");
  settle();
  const std::string heir = CallFlow("heir");  // queues behind the holder, then ends holding
  settle();
  EXPECT_THAT(ContextById(keep), HasLog("lock 'kept': released as the context ended"));
  EXPECT_THAT(ContextById(impatient), HasStep("lk", "error")) << "gave up in the queue";
  Update("gate", "g", Json(R"({"open": true})"));
  settle();
  EXPECT_THAT(ContextById(heir), HasLog("lock 'held': released as the context ended"));
  EXPECT_EQ(engine().locks().size(), 0u) << engine().locks().to_json();
  for (const char* key : {"kept", "held", "short"}) {
    const std::string id = CallFlow("take", Value::object({{"key", Value(key)}}));
    settle();
    EXPECT_EQ(ContextById(id).step("lk")["outputs"]["waited_ms"], Value(0)) << key << " was free";
  }
  for (const ContextRecord& c : Contexts("leased")) {
    EXPECT_THAT(c, HasLog("lock 'short' (token 3): held for its max_duration; released as if unlocked"));
  }
}

}  // namespace
}  // namespace flowrt

namespace flowrt {
namespace {

// A running-time clock that only a "slow" action moves: the quota without real time.
class QuotaLocksTest : public flowrt::testing::FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.run_clock = [this] { return run_ms_.load(); };
    o.properties.max_run_time = 60000;
    return o;
  }
  void SetUp() override {
    FlowTest::SetUp();
    CustomActionType slow;
    slow.name = "slow";
    slow.run = [this](CustomActionContext&) -> Result<Value> {
      run_ms_.store(run_ms_.load() + 120000);  // two minutes of running time
      return Value::empty_object();
    };
    ASSERT_TRUE(engine().register_action(std::move(slow)).is_ok());
  }
  std::atomic<double> run_ms_{0};
};

TEST_F(QuotaLocksTest, ContextEndedByTheQuota_ReleasesItsLocks) {
  ASSERT_TRUE(Load(R"([
    {"id": "hog", "trigger": {"type": "api"}, "actions": [
      {"action": "lock", "inputs": {"key": "k"}}, {"action": "slow"}, {"action": "log", "inputs": {"message": "never"}}]},
    {"id": "next", "trigger": {"type": "api"}, "actions": [
      {"id": "lk", "action": "lock", "inputs": {"key": "k", "max_attempts": 100, "delay": "1s"}}]}])"));
  const std::string hog = CallFlow("hog");
  engine().settle(0);
  const std::string next = CallFlow("next");
  Settle();
  EXPECT_THAT(ContextById(hog), FailedWith("max_run_time"));
  EXPECT_THAT(ContextById(hog), HasLog("lock 'k': released as the context ended"));
  EXPECT_THAT(ContextById(next), HasStatus("completed"));
  EXPECT_EQ(engine().locks().size(), 0u);
}

}  // namespace
}  // namespace flowrt
