// A parked context's state is plain data: written out as JSON and read back, it resumes.
#include "runtime/engine_core.h"
#include "runtime/exec_state.h"

#include "plans/value_json.h"
#include "runtime/flow_slot.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class ExecStateTest : public FlowTest {};

TEST_F(ExecStateTest, ParkedState_RoundTripsThroughJson) {
  ASSERT_TRUE(Load(R"([
    {"id": "sub", "type": "subflow", "inputs": [{"name": "n", "type": "integer"}], "outputs": [{"name": "r", "type": "integer"}], "actions": [
      {"try": [{"for_each": [1, 2], "as": "x", "do": [
          {"if": {"pill": "x", "op": "eq", "value": 2}, "then": [{"id": "w", "action": "wait", "inputs": {"duration": "5m"}}]}]}],
       "catch": []},
      {"action": "assign_outputs", "inputs": {"values": {"r": "{{inputs.n | add: 1}}"}}}]},
    {"id": "f", "trigger": {"type": "api"}, "variables": {"v": "x"}, "actions": [
      {"id": "c", "action": "call_subflow", "inputs": {"subflow": "sub", "inputs": {"n": 41}}},
      {"action": "log", "inputs": {"message": "{{steps.c.r}}"}}]}])"));
  const std::string id = CallFlow("f");
  engine().settle(0);
  std::shared_ptr<Context> ctx = engine().core().contexts.find_live(id);
  ASSERT_TRUE(ctx);
  ASSERT_EQ(ctx->phase(), Context::Phase::kParked);
  // The context is parked: its execution state is stable and owned by no thread.
  const Value written = ctx->exec().to_value(*ctx->plan);
  Result<Value> reparsed = parse_json(written.to_json());
  ASSERT_TRUE(reparsed.is_ok());
  Result<ExecState> back = ExecState::from_value(*reparsed, *ctx->plan);
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(back->to_value(*ctx->plan), written);
  EXPECT_EQ(back->stack.size(), 2u);
  EXPECT_EQ(back->stack[1].blocks.size(), 4u);  // body, try, loop, then-branch
  EXPECT_EQ(back->parked_node, ctx->exec().parked_node);
  EXPECT_EQ(back->parked_path, Value("1.subflow.1.try.1.do.1#2.then.1"));
  EXPECT_EQ(back->stack[1].call_node, ctx->exec().stack[1].call_node);
  for (size_t i = 0; i < back->stack[1].blocks.size(); ++i) {
    EXPECT_EQ(back->stack[1].blocks[i].block, ctx->exec().stack[1].blocks[i].block) << "block " << i;
  }
  // Resume with the restored state: the run completes as if it had never been written out.
  ctx->exec().stack = std::move(back->stack);
  ctx->exec().parked_inputs = back->parked_inputs;
  Settle();
  EXPECT_THAT(ContextById(id), HasLog("42"));
}

TEST_F(ExecStateTest, StateOfAnotherPlanVersion_IsRefused) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1m"}}]})"));
  const std::string id = CallFlow("f");
  engine().settle(0);
  std::shared_ptr<Context> ctx = engine().core().contexts.find_live(id);
  Value written = ctx->exec().to_value(*ctx->plan).with("plan_version", Value("f@00000000"));
  Result<ExecState> back = ExecState::from_value(written, *ctx->plan);
  ASSERT_FALSE(back.is_ok());
  EXPECT_NE(back.message().find("f@00000000"), std::string::npos);
}

TEST_F(ExecStateTest, FieldsAtTheirDefaults_AreLeftOut_AndTheOlderFormWithEveryField_ReadsBackTheSame) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1m"}}]})"));
  const std::string id = CallFlow("f");
  engine().settle(0);
  std::shared_ptr<Context> ctx = engine().core().contexts.find_live(id);
  ASSERT_TRUE(ctx);
  const Value written = ctx->exec().to_value(*ctx->plan);
  const Value& block = written["stack"].at(0)["blocks"].at(0);
  EXPECT_EQ(block.to_json(), R"({"pc":1})") << "a body block at its defaults: its position only";
  EXPECT_FALSE(written["stack"].at(0).contains("call_record"));
  EXPECT_FALSE(written["parked"]["wait"].contains("lock"));
  EXPECT_FALSE(written["parked"]["wait"].contains("weight"));
  // The form files of data schema 4 and older hold: every field written.
  Value full = written;
  Value frame = written["stack"].at(0).merged(Json(R"({"vars": [], "inputs": [], "items": [],
      "outputs": [], "call_record": -1, "call_path": null, "prefix": null})"));
  frame = frame.with("blocks", Value::array({block.merged(Json(R"({"kind": "body", "branch": 0, "prefix": null,
      "dynamic": false, "items": null, "iteration": 0, "record": -1, "owner_path": null, "error": null})"))}));
  full = full.with("stack", Value::array({frame}));
  full = full.with("parked", written["parked"].with("wait", written["parked"]["wait"].merged(Json(
      R"({"lock": null, "weight": 1, "max_duration": 3600000, "max_attempts": 1, "delay": 1000, "requested_at": 0})"))));
  Result<ExecState> back = ExecState::from_value(full, *ctx->plan);
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(back->to_value(*ctx->plan), written);
  EXPECT_EQ(back->stack[0].call_record, -1);
  EXPECT_EQ(back->stack[0].blocks[0].record, -1);
  // A field that is not at its default is written and read back.
  ExecState changed = *back;
  changed.stack[0].blocks[0].record = 3;
  changed.wait.weight = 2;
  const Value rewritten = changed.to_value(*ctx->plan);
  EXPECT_EQ(rewritten["stack"].at(0)["blocks"].at(0)["record"], Value(3));
  Result<ExecState> again = ExecState::from_value(rewritten, *ctx->plan);
  ASSERT_TRUE(again.is_ok()) << again.message();
  EXPECT_EQ(again->stack[0].blocks[0].record, 3);
  EXPECT_EQ(again->wait.weight, 2);
}

TEST_F(ExecStateTest, AWaitSeeingItsTriggerRecord_WritesItAsTheTriggers_AndReadsItBackSharingIt) {
  ASSERT_TRUE(Load(R"({"id": "approve", "trigger": {"type": "record", "table": "request", "when": "created"},
    "actions": [{"action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "approved", "op": "eq", "value": true}}}]})"));
  Insert("request", Json(R"({"sys_id": "r1", "approved": false})"));
  engine().settle(0);
  std::shared_ptr<Context> ctx = engine().core().contexts.find_live("ctx-1");
  ASSERT_TRUE(ctx);
  ASSERT_EQ(ctx->phase(), Context::Phase::kParked);
  ASSERT_TRUE(ctx->exec().wait.seen.same_storage(ctx->trigger.record));
  const Value written = ctx->exec().to_value(*ctx->plan, ctx->trigger.record);
  EXPECT_EQ(written["parked"]["wait"]["seen_is_trigger"], Value(true));
  EXPECT_FALSE(written["parked"]["wait"].contains("seen")) << "not written twice";
  Result<ExecState> back = ExecState::from_value(written, *ctx->plan, ctx->trigger.record);
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_TRUE(back->wait.seen.same_storage(ctx->trigger.record));
  // Another version than the trigger's is written as it is.
  const Value other = ctx->trigger.record.with("approved", Value(false));
  const Value written_other = ctx->exec().to_value(*ctx->plan, other);
  EXPECT_EQ(written_other["parked"]["wait"]["seen"], ctx->trigger.record);
  // Read back without the trigger it names: refused, saying why.
  Result<ExecState> orphan = ExecState::from_value(written, *ctx->plan);
  ASSERT_FALSE(orphan.is_ok());
  EXPECT_NE(orphan.message().find("trigger"), std::string::npos) << orphan.message();
}

}  // namespace
}  // namespace flowrt
