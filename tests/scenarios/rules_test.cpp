// Runtime rules (SPEC section 9) and run options (section 3): which starts are skipped,
// with what reason; recursion limits across flows, events, start_flow and subflows.
#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class RulesTest : public FlowTest {
 protected:
  std::vector<std::string> SkipReasons(std::string_view flow) {
    std::vector<std::string> out;
    for (const Value& s : Skipped()) {
      if (s["flow"].as_string() == flow) out.emplace_back(s["reason"].as_string());
    }
    return out;
  }
  // A flow on doc updates that stays running for a minute.
  void LoadWatcher(const char* when, const char* run) {
    ASSERT_TRUE(Load(std::string(R"({"id": "watch", "trigger": {"type": "record", "table": "doc", "when": ")") + when +
                     R"(", "run": ")" + run + R"("}, "actions": [{"action": "wait", "inputs": {"duration": "1m"}}]})"));
  }
  std::string Doc() { return std::string(Insert("doc", Json(R"({"v": 0})"))["sys_id"].as_string()); }
};

// ---- run options, overlapping updates (the first context still runs) ----

TEST_F(RulesTest, Always_SkipsWhileAContextRunsForTheRecord) {
  LoadWatcher("updated", "always");
  const std::string id = Doc();
  Update("doc", id, Json(R"({"v": 1})"));
  Update("doc", id, Json(R"({"v": 2})"));
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 1u);
  EXPECT_EQ(SkipReasons("watch"), std::vector<std::string>{"already_running"});
  const Value event = Skipped().at(0)["event"];
  EXPECT_EQ(event["operation"], Value("update"));
  EXPECT_EQ(event["sys_id"], Value(id));
}

TEST_F(RulesTest, OnlyIfNotRunning_IsAlways) {
  LoadWatcher("updated", "only_if_not_running");
  const std::string id = Doc();
  Update("doc", id, Json(R"({"v": 1})"));
  Update("doc", id, Json(R"({"v": 2})"));
  Settle();
  EXPECT_EQ(SkipReasons("watch"), std::vector<std::string>{"already_running"});
}

TEST_F(RulesTest, Always_OtherRecordsAreNotAffected) {
  LoadWatcher("updated", "always");
  const std::string a = Doc(), b = Doc();
  Update("doc", a, Json(R"({"v": 1})"));
  Update("doc", b, Json(R"({"v": 1})"));
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 2u);
  EXPECT_TRUE(Skipped().empty());
}

TEST_F(RulesTest, Once_RunsTheFirstTimeOnly_ForEachRecord) {
  LoadWatcher("updated", "once");
  const std::string a = Doc(), b = Doc();
  Update("doc", a, Json(R"({"v": 1})"));
  Update("doc", a, Json(R"({"v": 2})"));  // overlapping
  Settle();
  Update("doc", a, Json(R"({"v": 3})"));  // sequential
  Update("doc", b, Json(R"({"v": 1})"));  // another record: its first time
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 2u);
  EXPECT_EQ(SkipReasons("watch"), (std::vector<std::string>{"run_once", "run_once"}));
  // A start skipped for an operation no context made has a null cause (docs/SPEC.md 10).
  const Value skipped = Skipped().at(0);
  EXPECT_EQ(skipped["event"]["operation"], Value("update"));
  EXPECT_EQ(skipped["event"]["sys_id"], Value(std::string_view(a)));
  EXPECT_TRUE(skipped.contains("cause"));
  EXPECT_TRUE(skipped["cause"].is_null()) << skipped.to_json();
}

TEST_F(RulesTest, ForEachUniqueChange_RunsForEveryChangingUpdate_EvenWhileRunning) {
  LoadWatcher("updated", "for_each_unique_change");
  const std::string id = Doc();
  Update("doc", id, Json(R"({"v": 1})"));
  Update("doc", id, Json(R"({"v": 2})"));
  Update("doc", id, Json(R"({"v": 2})"));  // changes nothing
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 2u);
  EXPECT_TRUE(Skipped().empty()) << "an update changing nothing does not match at all";
}

TEST_F(RulesTest, ForEveryUpdate_RunsEvenForUpdatesThatChangeNothing) {
  LoadWatcher("updated", "for_every_update");
  const std::string id = Doc();
  Update("doc", id, Json(R"({"v": 1})"));
  Update("doc", id, Json(R"({"v": 1})"));
  Update("doc", id, Json(R"({})"));
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 3u);
}

// ---- run options, sequential updates (each context ended before the next update) ----

struct Sequential {
  const char* run;
  size_t contexts;
};

class SequentialRunOptionTest : public RulesTest, public ::testing::WithParamInterface<Sequential> {};

TEST_P(SequentialRunOptionTest, ThreeChangingUpdatesOneAfterAnother) {
  LoadWatcher("updated", GetParam().run);
  const std::string id = Doc();
  for (int v = 1; v <= 3; ++v) {
    Update("doc", id, Value::object({{"v", Value(v)}}));
    Settle();
  }
  EXPECT_EQ(Contexts("watch").size(), GetParam().contexts) << GetParam().run;
}

INSTANTIATE_TEST_SUITE_P(RunOptions, SequentialRunOptionTest,
                         ::testing::Values(Sequential{"always", 3}, Sequential{"once", 1},
                                           Sequential{"for_each_unique_change", 3}, Sequential{"for_every_update", 3}),
                         [](const ::testing::TestParamInfo<Sequential>& p) { return std::string(p.param.run); });

TEST_F(RulesTest, CreatedOrUpdated_Once_TheInsertIsTheFirstRun) {
  LoadWatcher("created_or_updated", "once");
  const std::string id = Doc();
  Settle();
  Update("doc", id, Json(R"({"v": 1})"));
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 1u);
  EXPECT_EQ(Contexts("watch")[0].value()["trigger"]["operation"], Value("insert"));
  EXPECT_EQ(SkipReasons("watch"), std::vector<std::string>{"run_once"});
}

TEST_F(RulesTest, Always_AQueuedStartCountsAsRunning) {
  // With the workers stopped, the first start stays queued; the second update must be
  // skipped anyway, so the outcome does not depend on thread timing.
  LoadWatcher("updated", "always");
  const std::string id = Doc();
  engine().core().workers.stop();
  Update("doc", id, Json(R"({"v": 1})"));
  Update("doc", id, Json(R"({"v": 2})"));
  engine().core().workers.start(2);
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 1u);
  EXPECT_EQ(SkipReasons("watch"), std::vector<std::string>{"already_running"});
}

TEST_F(RulesTest, Once_ForgetsARecordThatWasDeleted) {
  LoadWatcher("updated", "once");
  ASSERT_TRUE(engine().insert("doc", Json(R"({"sys_id": "d1", "v": 0})")).is_ok());
  Update("doc", "d1", Json(R"({"v": 1})"));
  Settle();
  ASSERT_TRUE(engine().remove("doc", "d1").is_ok());
  ASSERT_TRUE(engine().insert("doc", Json(R"({"sys_id": "d1", "v": 0})")).is_ok());
  Update("doc", "d1", Json(R"({"v": 1})"));
  Settle();
  EXPECT_EQ(Contexts("watch").size(), 2u) << "a new record with the same sys_id is a new record";
}

// ---- direct recursion ----

TEST_F(RulesTest, DirectRecursion_OwnWrite_EvenInsideASubflow) {
  ASSERT_TRUE(Load(R"([
    {"id": "touch", "type": "subflow", "inputs": [{"name": "id", "type": "string"}], "actions": [
      {"action": "update_record", "inputs": {"table": "doc", "sys_id": "{{inputs.id}}", "values": {"touched": true}}}]},
    {"id": "f", "trigger": {"type": "record", "table": "doc", "when": "created_or_updated", "run": "for_every_update"}, "actions": [
      {"action": "call_subflow", "inputs": {"subflow": "touch", "inputs": {"id": "{{trigger.sys_id}}"}}}]}])"));
  Doc();
  Settle();
  EXPECT_EQ(Contexts("f").size(), 1u);
  EXPECT_EQ(SkipReasons("f"), std::vector<std::string>{"direct_recursion"});
  EXPECT_EQ(Skipped().at(0)["cause"]["flow"], Value("f"));
}

TEST_F(RulesTest, DirectRecursion_StartFlowOfItself_StepSaysSkipped) {
  ASSERT_TRUE(Load(R"({"id": "self", "trigger": {"type": "api"}, "actions": [
    {"id": "s", "action": "start_flow", "inputs": {"flow": "self"}},
    {"action": "log", "inputs": {"message": "skipped={{steps.s.skipped}} id={{steps.s.context_id}}"}}]})"));
  CallFlow("self");
  Settle();
  EXPECT_EQ(Contexts("self").size(), 1u);
  EXPECT_THAT(OnlyContext("self"), HasLog("skipped=true id="));
  EXPECT_EQ(SkipReasons("self"), std::vector<std::string>{"direct_recursion"});
}

TEST_F(RulesTest, DirectRecursion_EventItFiresItself) {
  ASSERT_TRUE(Load(R"({"id": "echo", "trigger": {"type": "event", "name": "ping"}, "actions": [
    {"action": "fire_event", "inputs": {"name": "ping"}}]})"));
  FireEvent("ping");
  Settle();
  EXPECT_EQ(Contexts("echo").size(), 1u);
  EXPECT_EQ(SkipReasons("echo"), std::vector<std::string>{"direct_recursion"});
}

TEST_F(RulesTest, DirectRecursion_SubflowCallingItself_CallIsSkipped) {
  ASSERT_TRUE(Load(R"([
    {"id": "again", "type": "subflow", "outputs": [{"name": "x", "type": "any"}], "actions": [
      {"action": "log", "inputs": {"message": "in"}},
      {"id": "me", "action": "call_subflow", "inputs": {"subflow": "again"}},
      {"action": "log", "inputs": {"message": "got [{{steps.me.x}}]"}}]},
    {"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "call_subflow", "inputs": {"subflow": "again"}}]}])"));
  CallFlow("f");
  Settle();
  ContextRecord c = OnlyContext("f");
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.log_messages(), (std::vector<std::string>{
                                 "in", "subflow 'again' calls itself; the call is skipped (direct recursion)", "got []"}))
      << "its outputs read null";
  EXPECT_THAT(c, HasStep("me", "skipped"));
  for (const Value& step : c.steps().items()) {
    if (step["id"] == Value("me")) {
      EXPECT_EQ(step["outputs"], Value::empty_object());
    }
  }
  EXPECT_EQ(SkipReasons("again"), std::vector<std::string>{"direct_recursion"});
}

// ---- indirect recursion across flows ----

struct Loop {
  int flows;
  int64_t limit;
  int runs;  // runs of each flow in the loop
};

class LoopTest : public RulesTest, public ::testing::WithParamInterface<Loop> {};

TEST_P(LoopTest, ALoopOfFlows_RunsEachAtMostLimitTimes_ThenSkips) {
  const Loop& p = GetParam();
  ASSERT_TRUE(engine().set_property("indirect_recursion_limit", Value(static_cast<long long>(p.limit))).is_ok());
  // Flow i, on a record in table ti, creates a record in table t(i+1): a loop of writes.
  std::string defs = "[";
  for (int i = 0; i < p.flows; ++i) {
    const int next = (i + 1) % p.flows;
    defs += std::string(i ? "," : "") + R"({"id": "f)" + std::to_string(i) + R"(", "trigger": {"type": "record", "table": "t)" +
            std::to_string(i) + R"(", "when": "created"}, "actions": [{"action": "create_record", "inputs": {"table": "t)" +
            std::to_string(next) + R"(", "values": {}}}]})";
  }
  defs += "]";
  ASSERT_TRUE(Load(defs));
  Insert("t0", Value::empty_object());
  Settle();
  for (int i = 0; i < p.flows; ++i) EXPECT_EQ(Contexts("f" + std::to_string(i)).size(), static_cast<size_t>(p.runs)) << "f" << i;
  ASSERT_EQ(Skipped().size(), 1u);
  EXPECT_EQ(Skipped()[0]["flow"], Value("f0"));
  EXPECT_EQ(Skipped()[0]["reason"], Value("indirect_recursion_limit"));
  // The last context's chain holds every flow the loop went through.
  ContextRecord last = Contexts().back();
  EXPECT_EQ(last.value()["chain"].size(), static_cast<size_t>(p.flows * p.runs - 1));
}

INSTANTIATE_TEST_SUITE_P(Limits, LoopTest,
                         ::testing::Values(Loop{2, 0, 1}, Loop{2, 1, 1}, Loop{2, 3, 3}, Loop{2, 5, 5}, Loop{3, 0, 1},
                                           Loop{3, 1, 1}, Loop{3, 3, 3}, Loop{3, 5, 5}),
                         [](const ::testing::TestParamInfo<Loop>& p) {
                           return std::to_string(p.param.flows) + "flows_limit" + std::to_string(p.param.limit);
                         });

TEST_F(RulesTest, IndirectRecursion_ThroughEventsAndStartFlow) {
  ASSERT_TRUE(Load(R"([
    {"id": "a", "trigger": {"type": "event", "name": "to_a"}, "actions": [{"action": "start_flow", "inputs": {"flow": "b"}}]},
    {"id": "b", "trigger": {"type": "api"}, "actions": [{"action": "fire_event", "inputs": {"name": "to_a"}}]}])"));
  FireEvent("to_a");
  Settle();
  EXPECT_EQ(Contexts("a").size(), 3u);
  EXPECT_EQ(Contexts("b").size(), 3u);
  EXPECT_EQ(SkipReasons("a"), std::vector<std::string>{"indirect_recursion_limit"});
}

TEST_F(RulesTest, IndirectRecursion_SubflowCallPastTheLimit_FailsTheCallingStep) {
  ASSERT_TRUE(engine().set_property("indirect_recursion_limit", Value(2)).is_ok());
  ASSERT_TRUE(Load(R"([
    {"id": "ping", "type": "subflow", "actions": [{"action": "log", "inputs": {"message": "ping"}}, {"action": "call_subflow", "inputs": {"subflow": "pong"}}]},
    {"id": "pong", "type": "subflow", "actions": [{"action": "log", "inputs": {"message": "pong"}}, {"action": "call_subflow", "inputs": {"subflow": "ping"}}]},
    {"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "call_subflow", "inputs": {"subflow": "ping"}}]}])"));
  CallFlow("f");
  Settle();
  ContextRecord c = OnlyContext("f");
  EXPECT_THAT(c, FailedWith("indirect_recursion_limit: subflow 'ping' already runs 2 times in this chain"));
  EXPECT_EQ(c.log_messages(), (std::vector<std::string>{"ping", "pong", "ping", "pong"}));
}

// Every context keeps its causal chain, so the limit is bounded: a two-flow ping-pong under
// a limit of a million kept a million names in each of two million contexts.
TEST_F(RulesTest, IndirectRecursionLimit_IsAtMost1000_ALargerOneIsRefusedAndTheOldOneKept) {
  ASSERT_TRUE(engine().set_property("indirect_recursion_limit", Value(1000)).is_ok());
  const Status refused = engine().set_property("indirect_recursion_limit", Value(1001));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.message(), "property indirect_recursion_limit must be at most 1000, not 1001");
  EXPECT_FALSE(engine().set_property("indirect_recursion_limit", Value(1000000)).is_ok());
  const Status fractional = engine().set_property("indirect_recursion_limit", Value(1000.5));
  EXPECT_EQ(fractional.message(), "property indirect_recursion_limit must be at most 1000, not 1000.5");
  ASSERT_TRUE(Load(R"([
    {"id": "a", "trigger": {"type": "record", "table": "ta", "when": "created"}, "actions": [
      {"action": "create_record", "inputs": {"table": "tb", "values": {}}}]},
    {"id": "b", "trigger": {"type": "record", "table": "tb", "when": "created"}, "actions": [
      {"action": "create_record", "inputs": {"table": "ta", "values": {}}}]}])"));
  Insert("ta", Json("{}"));
  Settle();
  EXPECT_EQ(Contexts("a").size(), 1000u) << "the limit in force is still 1000";
  EXPECT_EQ(Contexts("b").size(), 1000u);
}

// A limit set in EngineOptions, which no property check sees, is taken as at most 1000.
TEST(IndirectRecursionLimitTest, OneSetInEngineOptions_IsTakenAsAtMost1000) {
  EngineOptions o;
  o.virtual_clock = true;
  o.properties.indirect_recursion_limit = 1000000;
  Engine engine(o);
  ASSERT_TRUE(engine.load_text(R"([
    {"id": "a", "trigger": {"type": "record", "table": "ta", "when": "created"}, "actions": [
      {"action": "create_record", "inputs": {"table": "tb", "values": {}}}]},
    {"id": "b", "trigger": {"type": "record", "table": "tb", "when": "created"}, "actions": [
      {"action": "create_record", "inputs": {"table": "ta", "values": {}}}]}])").empty());
  ASSERT_TRUE(engine.insert("ta", Value::empty_object()).is_ok());
  engine.settle();
  EXPECT_EQ(engine.contexts("a").size(), 1000u);
  EXPECT_EQ(engine.contexts("b").size(), 1000u);
}

}  // namespace
}  // namespace flowrt
