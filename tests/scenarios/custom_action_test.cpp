// Custom C++ action types: declared inputs and outputs checked at compile time, results,
// errors, exceptions (the context ends in error; the engine goes on).
#include <stdexcept>

#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class CustomActionTest : public FlowTest {
 protected:
  void SetUp() override {
    FlowTest::SetUp();
    CustomActionType score;
    score.name = "risk.score";
    score.inputs = {{"amount", ParamType::kNumber, true}, {"country", ParamType::kString, false}};
    score.outputs = {{"score", ParamType::kInteger, false}, {"band", ParamType::kString, false}};
    score.run = [](CustomActionContext& ctx) -> Result<Value> {
      const double amount = ctx.input("amount").as_double();
      if (amount < 0) return Error{"amount cannot be negative"};
      if (amount > 1e9) throw std::runtime_error("amount overflow in scorer");
      const int64_t s = static_cast<int64_t>(amount / 100) + (ctx.input("country") == Value("XX") ? 50 : 0);
      ctx.log("scored " + std::to_string(s));
      return Value::object({{"score", Value(static_cast<long long>(s))}, {"band", Value(s > 50 ? "high" : "low")},
                            {"extra", Value("dropped")}});
    };
    ASSERT_TRUE(engine().register_action(std::move(score)).is_ok());
  }
};

TEST_F(CustomActionTest, RegisteredAction_RunsWithInputs_AndOutputsAreReadable) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "r", "action": "risk.score", "inputs": {"amount": "{{inputs.a}}", "country": "XX"}},
    {"action": "log", "inputs": {"message": "band {{steps.r.band}} score {{steps.r.score}}"}}]})"));
  CallFlow("f", Json(R"({"a": 1000})"));
  Settle();
  ContextRecord c = OnlyContext("f");
  ASSERT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.log_messages(), (std::vector<std::string>{"scored 60", "band high score 60"}));
  EXPECT_EQ(c.step("r")["outputs"], Json(R"({"score": 60, "band": "high"})")) << "undeclared outputs are dropped";
}

TEST_F(CustomActionTest, ReturnedError_IsStepError) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "r", "action": "risk.score", "inputs": {"amount": -1}}]})"));
  CallFlow("f");
  Settle();
  EXPECT_THAT(OnlyContext("f"), FailedWith("amount cannot be negative"));
}

TEST_F(CustomActionTest, ThrowingAction_EndsContextInErrorWithItsMessage_EngineGoesOn) {
  ASSERT_TRUE(Load(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "r", "action": "risk.score", "inputs": {"amount": "{{inputs.a}}"}}]})"));
  const std::string bad = CallFlow("f", Json(R"({"a": 1e12})"));
  const std::string good = CallFlow("f", Json(R"({"a": 10})"));
  Settle();
  EXPECT_THAT(ContextById(bad), FailedWith("action 'risk.score' threw: amount overflow in scorer"));
  EXPECT_THAT(ContextById(good), HasStatus("completed"));
}

TEST_F(CustomActionTest, DeclaredInputs_AreCheckedAtCompileTime) {
  Diagnostics d = engine().load_text(R"({"id": "f", "trigger": {"type": "api"}, "actions": [
    {"id": "r", "action": "risk.score", "inputs": {"amount": "ten", "colour": "red"}},
    {"action": "log", "inputs": {"message": "{{steps.r.grade}}"}}]})", "f.json");
  const std::string all = d.describe();
  EXPECT_NE(all.find("f.json: /actions/0/inputs/amount: input 'amount' must be a number, got \"ten\""), std::string::npos) << all;
  EXPECT_NE(all.find("f.json: /actions/0/inputs/colour: risk.score has no input 'colour'"), std::string::npos) << all;
  EXPECT_NE(all.find("f.json: /actions/1/inputs/message: {{steps.r.grade}}: step 'r' (risk.score) has no output 'grade'"),
            std::string::npos)
      << all;
}

TEST_F(CustomActionTest, Registration_RefusesBuiltInNamesAndDuplicates) {
  CustomActionType t;
  t.name = "log";
  t.run = [](CustomActionContext&) -> Result<Value> { return Value(); };
  EXPECT_FALSE(engine().register_action(t).is_ok());
  t.name = "risk.score";
  EXPECT_FALSE(engine().register_action(t).is_ok());
  t.name = "bad name";
  EXPECT_FALSE(engine().register_action(t).is_ok());
}

// An action definition and a registered action type may not share a name: a step names
// either by it, and one of them could never run. Whichever comes second is refused.
TEST_F(CustomActionTest, AnActionDefinitionNamedLikeARegisteredType_IsRefused_EitherWayRound) {
  const std::string def = R"({"id": "risk.score", "type": "action", "actions": [
      {"action": "assign_outputs", "inputs": {"values": {}}}]})";
  const std::string all = engine().load_text(def, "a.json").describe();
  EXPECT_NE(all.find("a.json: /id: 'risk.score' is the name of a registered action type"), std::string::npos) << all;
  EXPECT_FALSE(engine().core().flows.definition(UnitType::kAction, "risk.score")) << "not loaded";

  ASSERT_TRUE(engine().load_text(R"({"id": "grade", "type": "action", "actions": [
      {"action": "assign_outputs", "inputs": {"values": {}}}]})", "g.json").empty());
  CustomActionType t;
  t.name = "grade";
  t.run = [](CustomActionContext&) -> Result<Value> { return Value::empty_object(); };
  Status s = engine().register_action(t);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("an action definition has that id"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace flowrt
