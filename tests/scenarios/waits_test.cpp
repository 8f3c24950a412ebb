// Harness scenarios for wait and wait_for_condition, with timeouts, on the virtual clock.
#include "compiler/compiler.h"
#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class WaitsTest : public FlowTest {};

TEST_F(WaitsTest, Wait_ParksForExactlyTheDuration) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "pause", "action": "wait", "inputs": {"duration": "90s"}},
    {"action": "log", "inputs": {"message": "done"}}]})"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  EXPECT_THAT(ContextById(id), HasStep("pause", "waiting"));
  Advance("89s");
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  Advance("1s");
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(Ms(c.value()["ended_at"]), 90000);
  EXPECT_EQ(Ms(c.step("pause")["ended_at"]), 90000);
}

TEST_F(WaitsTest, Settle_MovesClockToEachWaitInTurn) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"action": "wait", "inputs": {"duration": "{{inputs.d}}"}}]})"));
  const std::string a = CallFlow("w", Json(R"({"d": "5m"})"));
  const std::string b = CallFlow("w", Json(R"({"d": 1000})"));
  Settle();
  EXPECT_EQ(Ms(ContextById(a).value()["ended_at"]), 300000);
  EXPECT_EQ(Ms(ContextById(b).value()["ended_at"]), 1000);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 300000);
}

TEST_F(WaitsTest, SettleUntil_StopsBeforeLaterTimers) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "2d"}}]})"));
  const std::string id = CallFlow("w");
  Settle();  // 24h by default
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  engine().settle(int64_t{3} * 24 * 3600 * 1000);
  EXPECT_THAT(ContextById(id), HasStatus("completed"));
}

TEST_F(WaitsTest, WaitForCondition_WakesOnTheWriteThatMeetsIt) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "record", "table": "order", "when": "created"}, "actions": [
    {"id": "paid", "action": "wait_for_condition", "inputs": {"table": "order", "sys_id": "{{trigger.sys_id}}",
        "condition": {"field": "state", "op": "eq", "value": "paid"}, "timeout": "1h"}},
    {"action": "log", "inputs": {"message": "paid={{steps.paid.record.state}} timed_out={{steps.paid.timed_out}}"}}]})"));
  Value o = Insert("order", Json(R"({"state": "new"})"));
  engine().settle(0);  // a full settle would move the clock to the timeout
  const std::string id(OnlyContext("w").id());
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  Advance("10m");
  Update("order", o["sys_id"].as_string(), Json(R"({"state": "shipping"})"));
  engine().settle(0);
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  Update("order", o["sys_id"].as_string(), Json(R"({"state": "paid"})"));
  Settle();
  ContextRecord c = ContextById(id);
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(c, HasLog("paid=paid timed_out=false"));
  EXPECT_EQ(Ms(c.value()["ended_at"]), 600000);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 600000) << "the cancelled timeout does not move the clock";
}

// Table names and sys_ids may hold NUL bytes: a wait for record "b\0c" of table "a" is not
// met by record "c" of table "a\0b". Until 2026-12-06 the waiters' key joined the two with
// a NUL byte, so that write woke the wait with the other table's record.
TEST_F(WaitsTest, WaitForCondition_OnlyItsOwnTablesRecord_NamesWithNulBytesIncluded) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "met", "action": "wait_for_condition", "inputs": {"table": "a", "sys_id": "b\u0000c",
        "condition": {"field": "x", "op": "eq", "value": 1}, "timeout": "1h"}}]})"));
  Insert("a", Json(R"({"sys_id": "b\u0000c", "x": 0})"));
  const std::string id = CallFlow("w");
  engine().settle(0);
  Insert(std::string_view("a\0b", 3), Json(R"({"sys_id": "c", "x": 0})"));
  Update(std::string_view("a\0b", 3), "c", Json(R"({"x": 1})"));  // a version past the one the wait saw
  engine().settle(0);
  EXPECT_THAT(ContextById(id), HasStatus("waiting")) << ContextById(id).value().to_json();
}

TEST_F(WaitsTest, WaitForCondition_TimesOutWithCurrentRecord) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "done", "op": "eq", "value": true}, "timeout": "30m"}},
    {"action": "log", "inputs": {"message": "timed_out={{steps.x.timed_out}} v={{steps.x.record.v}}"}}]})"));
  Insert("t", Json(R"({"sys_id": "r1", "v": 1})"));
  CallFlow("w");
  Settle();
  ContextRecord c = OnlyContext("w");
  EXPECT_THAT(c, HasLog("timed_out=true v=1"));
  EXPECT_EQ(Ms(c.value()["ended_at"]), 1800000);
}

// No timeout is no deadline: no settle or advance ends the wait; only the write that meets
// the condition (or the record's deletion, or a cancel) does.
TEST_F(WaitsTest, WaitForCondition_WithoutTimeout_WaitsPastEverySettleAndAdvance) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "done", "op": "eq", "value": true}}},
    {"action": "log", "inputs": {"message": "timed_out={{steps.x.timed_out}}"}}]})"));
  Insert("t", Json(R"({"sys_id": "r1", "done": false})"));
  const std::string id = CallFlow("w");
  Settle();
  engine().settle(int64_t{365} * 24 * 3600 * 1000);
  Advance("30d");
  EXPECT_THAT(ContextById(id), HasStatus("waiting"));
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + int64_t{30} * 24 * 3600 * 1000) << "no timer moved the clock";
  Update("t", "r1", Json(R"({"done": true})"));
  Settle();
  EXPECT_THAT(ContextById(id), HasStatus("completed"));
  EXPECT_THAT(ContextById(id), HasLog("timed_out=false"));
}

TEST_F(WaitsTest, WaitForCondition_AlreadyTrue_DoesNotWait) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "v", "op": "ge", "value": 1}}}]})"));
  Insert("t", Json(R"({"sys_id": "r1", "v": 1})"));
  CallFlow("w");
  engine().settle(0);
  EXPECT_THAT(OnlyContext("w"), HasStatus("completed"));
}

TEST_F(WaitsTest, WaitForCondition_ChangesOp_ComparesWithTheWritesPreviousValue) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "v", "op": "changes_to", "value": 3}}}]})"));
  Insert("t", Json(R"({"sys_id": "r1", "v": 1})"));
  CallFlow("w");
  engine().settle(0);
  Update("t", "r1", Json(R"({"v": 2})"));
  engine().settle(0);
  EXPECT_THAT(OnlyContext("w"), HasStatus("waiting"));
  Update("t", "r1", Json(R"({"v": 3})"));
  Settle();
  EXPECT_THAT(OnlyContext("w"), HasStatus("completed"));
}

// At the wait's start nothing has changed yet: `changes`, a `changes_to` the record holds
// already and a `changes_from null` do not hold then, and the first write that changes the
// field ends the wait. Until 2026-12-06 the start compared with a null previous value, so
// each of these ended the wait at once.
TEST_F(WaitsTest, WaitForCondition_ChangesOps_DoNotHoldAtTheStart_OnlyAWriteAfterMeetsThem) {
  for (const char* flow : {R"({"id": "w1", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "a",
        "condition": {"field": "v", "op": "changes"}}}]})",
                           R"({"id": "w2", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "b",
        "condition": {"field": "v", "op": "changes_to", "value": "open"}}}]})",
                           R"({"id": "w3", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "c",
        "condition": {"field": "v", "op": "changes_from", "value": null}}}]})"}) {
    ASSERT_TRUE(Load(flow));
  }
  Insert("t", Json(R"({"sys_id": "a", "v": "open"})"));
  Insert("t", Json(R"({"sys_id": "b", "v": "open"})"));
  Insert("t", Json(R"({"sys_id": "c", "v": null})"));
  const std::string changes = CallFlow("w1");
  const std::string to = CallFlow("w2");
  const std::string from = CallFlow("w3");
  engine().settle(0);
  for (const std::string& id : {changes, to, from}) EXPECT_THAT(ContextById(id), HasStatus("waiting")) << id;
  Advance("10m");
  Update("t", "a", Json(R"({"v": "closed"})"));
  Update("t", "b", Json(R"({"v": "closed"})"));
  Update("t", "c", Json(R"({"v": "set"})"));
  engine().settle(0);
  ContextRecord c = ContextById(changes);
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(Ms(c.value()["ended_at"]), 600000);
  EXPECT_EQ(c.step("x")["outputs"]["record"]["v"], Value("closed"));
  EXPECT_THAT(ContextById(to), HasStatus("waiting")) << "b changed from open, not to it";
  EXPECT_THAT(ContextById(from), HasStatus("completed"));
  Update("t", "b", Json(R"({"v": "open"})"));
  engine().settle(0);
  EXPECT_THAT(ContextById(to), HasStatus("completed"));
}

TEST_F(WaitsTest, WaitForCondition_RecordDeletedOrMissing_IsStepError) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "{{inputs.id}}",
        "condition": {"field": "v", "op": "eq", "value": 9}}}]})"));
  Insert("t", Json(R"({"sys_id": "r1", "v": 1})"));
  const std::string waiting = CallFlow("w", Json(R"({"id": "r1"})"));
  const std::string missing = CallFlow("w", Json(R"({"id": "nope"})"));
  engine().settle(0);
  ASSERT_TRUE(engine().remove("t", "r1").is_ok());
  Settle();
  EXPECT_THAT(ContextById(waiting), FailedWith("was deleted while waiting"));
  EXPECT_THAT(ContextById(missing), FailedWith("no record t/nope to wait for"));
}

// A wait_for_condition step reads the record, finds the condition false, and then parks;
// a write that lands between the two (another worker's, with a real clock) is not lost:
// registering the wait compares the record with the one the step saw.
TEST_F(WaitsTest, WaitForCondition_AWriteBetweenTheLookAndTheWait_EndsTheWait) {
  Insert("t", Json(R"({"sys_id": "r1", "v": 1})"));
  Dispatcher& d = engine().core().dispatcher;
  auto condition = [](const char* json) {
    auto c = std::make_shared<Condition>();
    Diagnostics diags;
    EXPECT_TRUE(compile_record_condition(Json(json), "t", "", c.get(), &diags)) << diags.describe();
    return std::shared_ptr<const Condition>(std::move(c));
  };
  const Value table("t"), id("r1");
  const Value seen = d.get("t", "r1");
  Update("t", "r1", Json(R"({"v": 3})"));

  Dispatcher::WaiterAdded met = d.add_waiter(table, id, nullptr, 1, condition(R"({"field": "v", "op": "eq", "value": 3})"), seen);
  EXPECT_EQ(met.kind, Dispatcher::WaiterAdded::Kind::kMet);
  EXPECT_EQ(met.record["v"], Value(3));
  EXPECT_EQ(d.waiter_count(), 0u);

  // Changed, but not so as to meet the condition; or not changed at all: the wait is registered.
  Dispatcher::WaiterAdded waits = d.add_waiter(table, id, nullptr, 1, condition(R"({"field": "v", "op": "eq", "value": 9})"), seen);
  EXPECT_EQ(waits.kind, Dispatcher::WaiterAdded::Kind::kRegistered);
  waits = d.add_waiter(table, id, nullptr, 2, condition(R"({"field": "v", "op": "eq", "value": 3})"), d.get("t", "r1"));
  EXPECT_EQ(waits.kind, Dispatcher::WaiterAdded::Kind::kRegistered);
  EXPECT_EQ(d.waiter_count(), 2u);
  d.remove_waiter(table, id, nullptr);
  EXPECT_EQ(d.waiter_count(), 0u);

  ASSERT_TRUE(engine().remove("t", "r1").is_ok());
  EXPECT_EQ(d.add_waiter(table, id, nullptr, 3, condition(R"({"field": "v", "op": "eq", "value": 3})"), seen).kind,
            Dispatcher::WaiterAdded::Kind::kGone);
  EXPECT_EQ(d.waiter_count(), 0u);
}

// Workers write records without the commit lock when a write starts nothing; a context
// waiting on the record is still woken by such a write.
TEST_F(WaitsTest, WaitForCondition_WokenByAWriteThatStartsNoFlow) {
  ASSERT_TRUE(Load(R"([{"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "v", "op": "eq", "value": 2}}}]},
    {"id": "writer", "trigger": {"type": "api"}, "actions": [
    {"action": "update_record", "inputs": {"table": "t", "sys_id": "r1", "values": {"v": 2}}}]}])"));
  Insert("t", Json(R"({"sys_id": "r1", "v": 1})"));
  CallFlow("w");
  engine().settle(0);
  EXPECT_THAT(OnlyContext("w"), HasStatus("waiting"));
  CallFlow("writer");
  engine().settle(0);
  EXPECT_THAT(OnlyContext("w"), HasStatus("completed"));
  EXPECT_THAT(OnlyContext("writer"), HasStatus("completed"));
}

TEST_F(WaitsTest, ManyParkedContexts_HoldNoThreads) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]})"));
  for (int i = 0; i < 500; ++i) CallFlow("w");
  engine().settle(0);  // two workers, five hundred waiting contexts: none holds a thread
  for (const ContextRecord& c : Contexts("w")) ASSERT_THAT(c, HasStatus("waiting"));
  Settle();
  for (const ContextRecord& c : Contexts("w")) ASSERT_THAT(c, HasStatus("completed"));
}

}  // namespace
}  // namespace flowrt
