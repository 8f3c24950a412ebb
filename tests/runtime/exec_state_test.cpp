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
  std::shared_ptr<Context> ctx = engine().core().contexts.find(id);
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
  std::shared_ptr<Context> ctx = engine().core().contexts.find(id);
  Value written = ctx->exec().to_value(*ctx->plan).with("plan_version", Value("f@00000000"));
  Result<ExecState> back = ExecState::from_value(written, *ctx->plan);
  ASSERT_FALSE(back.is_ok());
  EXPECT_NE(back.message().find("f@00000000"), std::string::npos);
}

}  // namespace
}  // namespace flowrt
