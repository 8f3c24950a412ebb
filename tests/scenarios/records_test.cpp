// Context execution records (SPEC section 10): their shape, truncation of large values,
// and consistent snapshots while contexts run.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class RecordsTest : public FlowTest {};

// The keys of `v` (an object), in order.
std::vector<std::string> KeysOf(const Value& v) {
  std::vector<std::string> keys;
  for (const auto& m : v.members()) keys.emplace_back(m.key.as_string());
  return keys;
}

// Every field of the record, of its steps and of its log lines, in one order: the one the
// contract lists them in, whatever builds the record (its JSON is read by people and diffed).
TEST_F(RecordsTest, Record_HasEveryFieldOfTheContract_InItsOrder) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"}, "variables": {"n": 1},
    "actions": [{"id": "l", "action": "log", "inputs": {"message": "x", "level": "warn"}}]})"));
  Value r = Insert("t", Json(R"({"a": 1})"));
  Settle();
  const Value v = OnlyContext("f").value();
  for (const char* key : {"id", "seq", "flow", "plan_version", "status", "trigger", "cause", "chain", "started_at",
                          "ended_at", "runtime_ms", "steps", "logs", "variables", "error"}) {
    EXPECT_TRUE(v.contains(key)) << key;
  }
  EXPECT_EQ(v["trigger"], Value::object({{"type", Value("record")}, {"table", Value("t")}, {"operation", Value("insert")},
                                         {"sys_id", r["sys_id"]}}));
  EXPECT_TRUE(v["runtime_ms"].is_number());
  const Value& step = v["steps"].at(0);
  for (const char* key : {"path", "id", "action", "status", "started_at", "ended_at", "inputs", "outputs"}) {
    EXPECT_TRUE(step.contains(key)) << key;
  }
  using Keys = std::vector<std::string>;
  EXPECT_EQ(KeysOf(v), (Keys{"id", "seq", "flow", "plan_version", "status", "trigger", "cause", "chain", "started_at",
                             "ended_at", "runtime_ms", "steps", "logs", "variables", "error"}));
  EXPECT_EQ(KeysOf(step), (Keys{"path", "id", "action", "status", "started_at", "ended_at", "inputs", "outputs"}));
  EXPECT_EQ(KeysOf(v["logs"].at(0)), (Keys{"time", "level", "step", "message"}));
  EXPECT_EQ(step["inputs"], Json(R"({"message": "x", "level": "warn"})"));
  EXPECT_EQ(v["logs"].at(0)["level"], Value("warn"));
  EXPECT_EQ(v["logs"].at(0)["step"], Value("1"));
  EXPECT_EQ(v["variables"], Json(R"({"n": 1})"));
  EXPECT_TRUE(v["error"].is_null());
}

TEST_F(RecordsTest, AFinishedContext_IsKeptFrozen_WithoutItsTriggersRecordVersions_ItsRecordShowsTheSame) {
  // Kept in memory as its record (the memory store), a context that ended is kept frozen:
  // its live form, with the version of the record that triggered it, goes. The table holds
  // the record now, and the context's record shows the trigger without it.
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [
    {"action": "wait", "inputs": {"duration": "1m"}},
    {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{trigger.sys_id}}", "values": {"a": 2}}},
    {"action": "log", "inputs": {"message": "{{trigger.record.a}}"}}]})"));
  const Value r = Insert("t", Json(R"({"a": 1})"));
  engine().settle(0);
  std::shared_ptr<Context> ctx = engine().core().contexts.find_live("ctx-1");
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx->trigger.record["a"], Value(1)) << "while it runs, its pills read the version that triggered it";
  Advance("1m");
  ASSERT_TRUE(ctx->finished());
  std::weak_ptr<Context> live = ctx;
  ctx.reset();
  EXPECT_TRUE(live.expired()) << "nothing holds the live form, nor the trigger's version with it";
  EXPECT_NE(engine().core().contexts.find("ctx-1").frozen(), nullptr);
  const Value v = OnlyContext("f").value();
  EXPECT_EQ(v["status"], Value("completed"));
  EXPECT_EQ(v["trigger"], Value::object({{"type", Value("record")}, {"table", Value("t")}, {"operation", Value("insert")},
                                         {"sys_id", r["sys_id"]}}));
  EXPECT_EQ(v["logs"].at(0)["message"], Value("1")) << "the pill read the triggering version";
  EXPECT_EQ(engine().records("t").at(0)["a"], Value(2));
}

TEST_F(RecordsTest, LargeValues_AreTruncatedInTheRecord_FlowSeesThemWhole) {
  ASSERT_TRUE(engine().set_property("record_value_limit", Value(100)).is_ok());
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "c", "action": "create_record", "inputs": {"table": "big", "values": {"text": "{{inputs.text}}"}}},
    {"action": "log", "inputs": {"message": "{{steps.c.record.text | length}}"}}]})"));
  const std::string text(5000, 'z');
  CallFlow("f", Value::object({{"text", Value(text)}}));
  Settle();
  ContextRecord c = OnlyContext("f");
  EXPECT_THAT(c, HasLog("5000"));
  EXPECT_EQ(Records("big").at(0)["text"].as_string().size(), 5000u);
  const Value& recorded = c.step("c")["inputs"]["values"];
  ASSERT_TRUE(recorded.is_string()) << recorded.to_json().substr(0, 200);
  EXPECT_EQ(recorded.as_string().substr(0, 10), "{\"text\":\"z");
  EXPECT_NE(recorded.as_string().find("...[truncated: 5011 bytes]"), std::string_view::npos);
  EXPECT_LT(recorded.as_string().size(), 140u);
}

TEST_F(RecordsTest, LongLogMessages_AreCutToTheLimit_NeverInsideACharacter) {
  ASSERT_TRUE(engine().set_property("record_value_limit", Value(100)).is_ok());
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"action": "log", "inputs": {"message": "{{inputs.text}}"}},
    {"action": "log", "inputs": {"message": "short"}}]})"));
  // 99 bytes of 'a', then two-byte characters: byte 100 is the first byte of an "é".
  std::string text(99, 'a');
  for (int i = 0; i < 100; ++i) text += "\xc3\xa9";
  CallFlow("f", Value::object({{"text", Value(text)}}));
  Settle();
  const Value logs = OnlyContext("f").value()["logs"];
  const std::string_view cut = logs.at(0)["message"].as_string();
  EXPECT_EQ(cut, std::string(99, 'a') + "...[truncated: 299 bytes]") << "cut before the character, not inside it";
  EXPECT_EQ(logs.at(1)["message"], Value("short"));
  // The document stays valid JSON, and valid UTF-8, whatever the limit.
  for (int limit : {100, 101, 102, 103}) {
    ASSERT_TRUE(engine().set_property("record_value_limit", Value(limit)).is_ok());
    const std::string doc = OnlyContext("f").value().to_json();
    Result<Value> back = parse_json(doc);
    ASSERT_TRUE(back.is_ok()) << "limit " << limit << ": " << back.message();
    const std::string_view m = (*back)["logs"].at(0)["message"].as_string();
    EXPECT_EQ(m.size() - m.find("..."), std::string_view("...[truncated: 299 bytes]").size());
    EXPECT_LE(m.find("..."), static_cast<size_t>(limit));
  }
}

TEST_F(RecordsTest, Snapshots_AreConsistentWhileContextsRun) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "variables": {"i": 0}, "actions": [
    {"for_each": [1, 2, 3, 4, 5, 6, 7, 8], "do": [
      {"action": "set_variables", "inputs": {"values": {"i": "{{item}}"}}},
      {"action": "log", "inputs": {"message": "{{item}}"}}]}]})"));
  std::atomic<bool> done{false};
  std::atomic<int> snapshots{0};
  std::thread reader([&] {
    // At least one look even when the thread only gets a core once the contexts are done.
    do {
      for (const ContextRecord& c : engine().contexts("f")) {
        // Each snapshot is internally consistent: the variable never runs ahead of the logs.
        const int64_t logged = static_cast<int64_t>(c.logs().size());
        ASSERT_GE(c.variables()["i"].as_int(), logged);
        ASSERT_LE(c.variables()["i"].as_int(), logged + 1);
      }
      snapshots.fetch_add(1);
    } while (!done.load());
  });
  for (int i = 0; i < 300; ++i) CallFlow("f");
  Settle();
  done.store(true);
  reader.join();
  EXPECT_GT(snapshots.load(), 0);
  for (const ContextRecord& c : Contexts("f")) ASSERT_EQ(c.logs().size(), 8u);
}

}  // namespace
TEST_F(RecordsTest, ContextRetention_KeepsTheNewestFinished_CountsTheDropped_KeepsUnfinished) {
  ASSERT_TRUE(Load(R"([
    {"id": "quick", "trigger": {"type": "record", "table": "t", "when": "created"},
     "actions": [{"action": "log", "inputs": {"message": "{{trigger.record.n}}"}}]},
    {"id": "slow", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]}])"));
  ASSERT_TRUE(engine().set_property("context_retention", Value(3)).is_ok());
  const std::string waiting = CallFlow("slow");
  for (int n = 1; n <= 10; ++n) Insert("t", Value::object({{"n", Value(n)}}));
  engine().settle(0);
  EXPECT_EQ(engine().dropped_contexts(), 7u);
  std::vector<ContextRecord> kept = Contexts("quick");
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().logs().at(0)["message"], Value("8")) << "the oldest go first";
  EXPECT_THAT(ContextById(waiting), HasStatus("waiting")) << "an unfinished context is never dropped";
  EXPECT_EQ(engine().document()["dropped_contexts"], Value(7));
  Settle();
  EXPECT_EQ(engine().dropped_contexts(), 8u) << "once finished, the first started is the oldest";
  EXPECT_FALSE(engine().context(waiting).has_value());
  EXPECT_EQ(Contexts().size(), 3u);
}

TEST_F(RecordsTest, ContextRetention_UnlimitedByDefault) {
  EXPECT_EQ(engine().properties().context_retention, 0u);
  ASSERT_TRUE(Load(R"({"id": "quick", "trigger": {"type": "record", "table": "t", "when": "created"},
     "actions": [{"action": "log", "inputs": {"message": "x"}}]})"));
  for (int n = 1; n <= 50; ++n) Insert("t", Value::object({{"n", Value(n)}}));
  Settle();
  EXPECT_EQ(Contexts("quick").size(), 50u);
  EXPECT_EQ(engine().dropped_contexts(), 0u);
  EXPECT_EQ(engine().set_property("context_retention", Value(-1)).is_ok(), false);
}

}  // namespace flowrt
