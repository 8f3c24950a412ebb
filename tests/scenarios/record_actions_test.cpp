// Harness scenarios for the record actions: create, update, delete, look up (one and many).
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using ::testing::ElementsAre;
using namespace flowrt::testing;

class RecordActionsTest : public FlowTest {};

TEST_F(RecordActionsTest, CreateRecord_OutputsRecordAndSysId_AndFiresItsOwnTriggers) {
  ASSERT_TRUE(Load(R"([
    {"id": "make", "trigger": {"type": "event", "name": "go"}, "actions": [
      {"id": "c", "action": "create_record", "inputs": {"table": "task", "values": {"title": "{{trigger.payload.t}}"}}},
      {"action": "log", "inputs": {"message": "made {{steps.c.sys_id}} {{steps.c.record.title}}"}}]},
    {"id": "watch", "trigger": {"type": "record", "table": "task", "when": "created"}, "actions": [
      {"action": "log", "inputs": {"message": "saw {{trigger.record.title}}"}}]}])"));
  FireEvent("go", Json(R"({"t": "write docs"})"));
  Settle();
  ContextRecord make = OnlyContext("make");
  ASSERT_THAT(make, HasStatus("completed"));
  const Value& outputs = make.step("c")["outputs"];
  EXPECT_EQ(outputs["record"]["title"], Value("write docs"));
  EXPECT_EQ(outputs["sys_id"].as_string().size(), 32u);
  EXPECT_EQ(make.log_messages().front(), "made " + std::string(outputs["sys_id"].as_string()) + " write docs");
  ContextRecord watch = OnlyContext("watch");
  EXPECT_THAT(watch, HasLog("saw write docs"));
  EXPECT_EQ(watch.value()["chain"], Value::array({Value("make")}));
  EXPECT_EQ(watch.value()["cause"]["flow"], Value("make"));
}

TEST_F(RecordActionsTest, UpdateRecord_MergesValues_CountsModifications) {
  ASSERT_TRUE(Load(R"({"id": "bump", "trigger": {"type": "record", "table": "doc", "when": "created"}, "actions": [
      {"id": "u", "action": "update_record", "inputs": {"table": "doc", "sys_id": "{{trigger.sys_id}}",
                                                    "values": {"state": "seen", "n": "{{trigger.record.n | add: 1}}"}}}]})"));
  Value doc = Insert("doc", Json(R"({"title": "a", "n": 1})"));
  Settle();
  Value now = engine().record("doc", doc["sys_id"].as_string());
  EXPECT_EQ(now["title"], Value("a"));
  EXPECT_EQ(now["state"], Value("seen"));
  EXPECT_EQ(now["n"], Value(2));
  EXPECT_EQ(now["sys_mod_count"], Value(1));
  EXPECT_EQ(OnlyContext("bump").step("u")["outputs"]["record"], now);
}

// A step that updates its own trigger record reads it at the row the trigger was installed
// at (RowHint) only while that row still holds the trigger's version: written meanwhile,
// or by the step before, the update merges into the newest version.
TEST_F(RecordActionsTest, UpdateRecord_OfItsTriggerRecord_MergesIntoTheNewestVersion) {
  ASSERT_TRUE(Load(R"([
    {"id": "later", "trigger": {"type": "record", "table": "doc", "when": "created"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1m"}},
      {"action": "update_record", "inputs": {"table": "doc", "sys_id": "{{trigger.sys_id}}", "values": {"state": "seen"}}},
      {"action": "update_record", "inputs": {"table": "doc", "sys_id": "{{trigger.sys_id}}", "values": {"n": 2}}}]},
    {"id": "on_update", "trigger": {"type": "record", "table": "task", "when": "updated"}, "actions": [
      {"action": "update_record", "inputs": {"table": "task", "sys_id": "{{trigger.sys_id}}", "values": {"seen": true}}},
      {"action": "wait_for_condition", "inputs": {"table": "task", "sys_id": "{{trigger.sys_id}}",
       "condition": {"field": "seen", "op": "eq", "value": true}}}]}])"));
  Value doc = Insert("doc", Json(R"({"title": "a", "n": 1})"));
  Settle();
  Update("doc", doc["sys_id"].as_string(), Json(R"({"title": "b"})"));
  Advance("1m");
  Settle();
  Value now = engine().record("doc", doc["sys_id"].as_string());
  EXPECT_EQ(now["title"], Value("b")) << "the harness's write is kept";
  EXPECT_EQ(now["state"], Value("seen"));
  EXPECT_EQ(now["n"], Value(2));
  EXPECT_EQ(now["sys_mod_count"], Value(3));
  EXPECT_THAT(OnlyContext("later"), HasStatus("completed"));

  // Started by an update: the trigger's row is the updated record's.
  Value task = Insert("task", Json(R"({"title": "t"})"));
  Update("task", task["sys_id"].as_string(), Json(R"({"title": "u"})"));
  Settle();
  EXPECT_THAT(OnlyContext("on_update"), HasStatus("completed"));
  Value t = engine().record("task", task["sys_id"].as_string());
  EXPECT_EQ(t["title"], Value("u"));
  EXPECT_EQ(t["seen"], Value(true));
}

TEST_F(RecordActionsTest, UpdateRecord_UnknownSysId_IsStepError) {
  ASSERT_TRUE(Load(R"({"id": "bad", "trigger": {"type": "event", "name": "go"}, "actions": [
      {"id": "u", "action": "update_record", "inputs": {"table": "doc", "sys_id": "nope", "values": {}}}]})"));
  FireEvent("go");
  Settle();
  ContextRecord c = OnlyContext("bad");
  EXPECT_THAT(c, FailedWith("no record in doc with sys_id nope"));
  EXPECT_THAT(c, HasStep("u", "error"));
  EXPECT_EQ(c.error()["step"], Value("1"));
}

TEST_F(RecordActionsTest, DeleteRecord_RemovesIt_AndFiresDeletedTriggerWithOldValues) {
  ASSERT_TRUE(Load(R"([
    {"id": "del", "trigger": {"type": "record", "table": "doc", "when": "updated",
                               "condition": {"field": "state", "op": "eq", "value": "junk"}}, "actions": [
      {"id": "d", "action": "delete_record", "inputs": {"table": "doc", "sys_id": "{{trigger.sys_id}}"}}]},
    {"id": "audit", "trigger": {"type": "record", "table": "doc", "when": "deleted"}, "actions": [
      {"action": "log", "inputs": {"message": "deleted {{trigger.record.title}} by {{trigger.operation}}"}}]}])"));
  Value doc = Insert("doc", Json(R"({"title": "old"})"));
  Settle();
  Update("doc", doc["sys_id"].as_string(), Json(R"({"state": "junk"})"));
  Settle();
  EXPECT_TRUE(Records("doc").empty());
  EXPECT_EQ(OnlyContext("del").step("d")["outputs"]["deleted"], Value(true));
  EXPECT_THAT(OnlyContext("audit"), HasLog("deleted old by delete"));
}

// A delete of a record that is not there completes with deleted: false, writes nothing and
// starts nothing (SPEC 6 gives delete_record the output `deleted`). Until 2026-12-06 it was
// a step error, and `deleted` was never false.
TEST_F(RecordActionsTest, DeleteRecord_OfNoRecord_IsDeletedFalse_NothingWritten) {
  ASSERT_TRUE(Load(R"([
    {"id": "del", "trigger": {"type": "api"}, "actions": [
      {"id": "d", "action": "delete_record", "inputs": {"table": "doc", "sys_id": "{{inputs.id}}"}},
      {"action": "log", "inputs": {"message": "deleted={{steps.d.deleted}}"}}]},
    {"id": "audit", "trigger": {"type": "record", "table": "doc", "when": "deleted"}, "actions": [
      {"action": "log", "inputs": {"message": "audit"}}]}])"));
  Insert("doc", Json(R"({"sys_id": "here"})"));
  const std::string missing = CallFlow("del", Json(R"({"id": "nope"})"));
  Settle();
  EXPECT_THAT(ContextById(missing), HasStatus("completed"));
  EXPECT_THAT(ContextById(missing), HasLog("deleted=false"));
  EXPECT_TRUE(Contexts("audit").empty()) << "no delete, no deleted trigger";
  EXPECT_EQ(Records("doc").size(), 1u);
  const std::string present = CallFlow("del", Json(R"({"id": "here"})"));
  Settle();
  EXPECT_THAT(ContextById(present), HasLog("deleted=true"));
  EXPECT_EQ(Contexts("audit").size(), 1u);
  EXPECT_TRUE(Records("doc").empty());
}

TEST_F(RecordActionsTest, LookUpRecord_FindsFirstMatchInInsertionOrder_OrNullWhenNone) {
  ASSERT_TRUE(Load(R"({"id": "find", "trigger": {"type": "api"}, "actions": [
      {"id": "hit", "action": "look_up_record", "inputs": {"table": "user",
          "condition": {"field": "group", "op": "eq", "value": "{{inputs.group}}"}}},
      {"id": "miss", "action": "look_up_record", "inputs": {"table": "user",
          "condition": {"field": "group", "op": "eq", "value": "nobody"}}},
      {"id": "oldest", "action": "look_up_record", "inputs": {"table": "user", "order_by": "-age",
          "condition": {"field": "group", "op": "eq", "value": "{{inputs.group}}"}}}]})"));
  Insert("user", Json(R"({"name": "ann", "group": "net", "age": 30})"));
  Insert("user", Json(R"({"name": "bo", "group": "db", "age": 50})"));
  Insert("user", Json(R"({"name": "cy", "group": "net", "age": 40})"));
  CallFlow("find", Json(R"({"group": "net"})"));
  Settle();
  ContextRecord c = OnlyContext("find");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.step("hit")["outputs"]["record"]["name"], Value("ann"));
  EXPECT_EQ(c.step("hit")["outputs"]["found"], Value(true));
  EXPECT_TRUE(c.step("miss")["outputs"]["record"].is_null());
  EXPECT_EQ(c.step("miss")["outputs"]["found"], Value(false));
  EXPECT_EQ(c.step("oldest")["outputs"]["record"]["name"], Value("cy"));
  EXPECT_EQ(c.step("hit")["inputs"]["condition"]["value"], Value("net")) << "inputs are recorded rendered";
}

TEST_F(RecordActionsTest, LookUpRecords_FiltersOrdersAndLimits) {
  ASSERT_TRUE(Load(R"({"id": "list", "trigger": {"type": "api"}, "actions": [
      {"id": "all", "action": "look_up_records", "inputs": {"table": "n"}},
      {"id": "big", "action": "look_up_records", "inputs": {"table": "n", "order_by": "-v", "limit": 2,
          "condition": {"all": [{"field": "v", "op": "gt", "value": 1}, {"field": "tag", "op": "is_not_empty"}]}}},
      {"id": "none", "action": "look_up_records", "inputs": {"table": "absent"}}]})"));
  for (int v : {3, 1, 4, 1, 5}) Insert("n", Value::object({{"v", Value(v)}, {"tag", Value(v == 4 ? "" : "t")}}));
  CallFlow("list");
  Settle();
  ContextRecord c = OnlyContext("list");
  EXPECT_EQ(c.step("all")["outputs"]["count"], Value(5));
  const Value& big = c.step("big")["outputs"]["records"];
  ASSERT_EQ(big.size(), 2u);
  EXPECT_EQ(big.at(0)["v"], Value(5));
  EXPECT_EQ(big.at(1)["v"], Value(3));
  EXPECT_EQ(c.step("none")["outputs"]["count"], Value(0));
}

// `limit: 0` asks for no records, and an order_by that names no field ("" or "-") is a
// step error naming the input. Until 2026-12-06 the first returned every record and the
// second was read as no order.
TEST_F(RecordActionsTest, LookUpRecords_LimitZeroIsNone_AnOrderByNamingNoFieldIsAStepError) {
  ASSERT_TRUE(Load(R"({"id": "list", "trigger": {"type": "api"}, "actions": [
      {"id": "zero", "action": "look_up_records", "inputs": {"table": "n", "limit": "{{inputs.limit}}"}},
      {"id": "one", "action": "look_up_record", "on_error": "continue", "inputs": {"table": "n", "order_by": "{{inputs.order}}"}},
      {"id": "many", "action": "look_up_records", "inputs": {"table": "n", "order_by": "{{inputs.order}}"}}]})"));
  for (int v : {3, 1}) Insert("n", Value::object({{"v", Value(v)}}));
  const std::string blank = CallFlow("list", Json(R"({"limit": 0, "order": ""})"));
  const std::string dash = CallFlow("list", Json(R"({"limit": 0, "order": "-"})"));
  const std::string fine = CallFlow("list", Json(R"({"limit": 1, "order": "-v"})"));
  const std::string unknown = CallFlow("list", Json(R"({"limit": 5, "order": "-nosuch"})"));
  Settle();
  const ContextRecord unordered = ContextById(unknown);  // held: step() reads into it
  const Value& as_inserted = unordered.step("many")["outputs"]["records"];
  ASSERT_EQ(as_inserted.size(), 2u) << "a field no record has leaves the order as inserted";
  EXPECT_EQ(as_inserted.at(0)["v"], Value(3));
  EXPECT_EQ(as_inserted.at(1)["v"], Value(1));
  ContextRecord b = ContextById(blank);
  EXPECT_EQ(b.step("zero")["outputs"], Json(R"({"records": [], "count": 0})"));
  EXPECT_EQ(b.step("one")["status"], Value("error"));
  EXPECT_THAT(b, FailedWith("input 'order_by' must name a field (\"field\", or \"-field\" for descending), got \"\""));
  EXPECT_THAT(ContextById(dash), FailedWith("got \"-\""));
  ContextRecord f = ContextById(fine);
  EXPECT_THAT(f, HasStatus("completed"));
  EXPECT_EQ(f.step("zero")["outputs"]["count"], Value(1));
  EXPECT_EQ(f.step("one")["outputs"]["record"]["v"], Value(3));
  EXPECT_EQ(f.step("many")["outputs"]["records"].at(0)["v"], Value(3));
}

TEST_F(RecordActionsTest, RecordEngineFields_AreSetAndOrdered) {
  Value r = Insert("t", Json(R"({"a": 1, "sys_mod_count": 99})"));
  EXPECT_EQ(r["sys_mod_count"], Value(0)) << "engine fields cannot be set by the user";
  EXPECT_EQ(r["sys_created_on"], Value("2026-01-01T00:00:00.000Z"));
  EXPECT_EQ(r["sys_updated_on"], r["sys_created_on"]);
  Value given = Insert("t", Json(R"({"sys_id": "mine"})"));
  EXPECT_EQ(given["sys_id"], Value("mine"));
  EXPECT_FALSE(engine().insert("t", Json(R"({"sys_id": "mine"})")).is_ok()) << "sys_id is unique per table";
  std::vector<Value> all = Records("t");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]["sys_id"], r["sys_id"]);
}

}  // namespace
}  // namespace flowrt
