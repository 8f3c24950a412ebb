// The plan cache: plans compile once, just in time after a change to the flow or anything
// it uses, and are reused otherwise; contexts keep the plan they started with.
#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class PlanCacheTest : public FlowTest {
 protected:
  uint64_t Compiles() { return engine().core().flows.compiles(); }
  Value Subflow(int version) {
    return Json(R"({"id": "sub", "type": "subflow", "outputs": [{"name": "v", "type": "integer"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"v": )" + std::to_string(version) + "}}}]}");
  }
};

TEST_F(PlanCacheTest, CompilesOnceAtActivation_ThenOnlyJustInTimeAfterAChange) {
  ASSERT_TRUE(Load(R"([
    {"id": "sub", "type": "subflow", "outputs": [{"name": "v", "type": "integer"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"v": 1}}}]},
    {"id": "other", "type": "subflow", "actions": []},
    {"id": "f", "trigger": {"type": "api"}, "actions": [
      {"id": "s", "action": "call_subflow", "inputs": {"subflow": "sub"}},
      {"action": "log", "inputs": {"message": "v{{steps.s.v}}"}}]}])"));
  const uint64_t after_load = Compiles();
  for (int i = 0; i < 50; ++i) CallFlow("f");
  Settle();
  EXPECT_EQ(Compiles(), after_load) << "fifty starts, no compile";
  const std::string v1 = Contexts("f").front().plan_version();
  for (const ContextRecord& c : Contexts("f")) EXPECT_EQ(c.plan_version(), v1);

  // An unrelated definition changes: the plan is re-checked, not recompiled.
  ASSERT_TRUE(engine().save(Json(R"({"id": "other", "type": "subflow", "actions": [{"action": "log", "inputs": {"message": "x"}}]})")).is_ok());
  ASSERT_TRUE(engine().publish("other").is_ok());
  const std::string c1 = CallFlow("f");
  Settle();
  EXPECT_EQ(Compiles(), after_load);
  EXPECT_EQ(ContextById(c1).plan_version(), v1);

  // A dependency changes: nothing compiles until the next start, which compiles once.
  ASSERT_TRUE(engine().save(Subflow(2)).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok());
  EXPECT_EQ(Compiles(), after_load) << "publishing does not compile the flows that use it";
  const std::string c2 = CallFlow("f");
  const std::string c3 = CallFlow("f");
  Settle();
  EXPECT_EQ(Compiles(), after_load + 1);
  EXPECT_THAT(ContextById(c2), HasLog("v2"));
  EXPECT_NE(ContextById(c2).plan_version(), v1);
  EXPECT_EQ(ContextById(c3).plan_version(), ContextById(c2).plan_version());
}

TEST_F(PlanCacheTest, WaitingContext_FinishesOnThePlanItStartedWith) {
  ASSERT_TRUE(Load(R"([
    {"id": "sub", "type": "subflow", "outputs": [{"name": "v", "type": "integer"}], "actions": [
      {"action": "wait", "inputs": {"duration": "1h"}},
      {"action": "assign_outputs", "inputs": {"values": {"v": 1}}}]},
    {"id": "f", "trigger": {"type": "api"}, "actions": [
      {"id": "s", "action": "call_subflow", "inputs": {"subflow": "sub"}},
      {"action": "log", "inputs": {"message": "v{{steps.s.v}}"}}]}])"));
  const std::string old_ctx = CallFlow("f");
  engine().settle(0);
  ASSERT_TRUE(engine().save(Subflow(2)).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok());
  const std::string new_ctx = CallFlow("f");
  Settle();
  EXPECT_THAT(ContextById(old_ctx), HasLog("v1"));
  EXPECT_THAT(ContextById(new_ctx), HasLog("v2"));
  EXPECT_NE(ContextById(old_ctx).plan_version(), ContextById(new_ctx).plan_version());
}

TEST_F(PlanCacheTest, OldPlans_AreFreedWhenTheLastRecordUsingThemIsDropped) {
  ASSERT_TRUE(Load(R"([
    {"id": "sub", "type": "subflow", "outputs": [{"name": "v", "type": "integer"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"v": 1}}}]},
    {"id": "f", "trigger": {"type": "api"}, "actions": [
      {"action": "wait", "inputs": {"duration": "1h"}},
      {"action": "call_subflow", "inputs": {"subflow": "sub"}}]}])"));
  const std::string id = CallFlow("f");
  engine().settle(0);
  std::weak_ptr<const Plan> old_plan = engine().core().contexts.find_live(id)->plan;
  ASSERT_TRUE(engine().save(Subflow(2)).is_ok());
  ASSERT_TRUE(engine().publish("sub").is_ok());
  CallFlow("f");  // compiles the new plan; the cache lets go of the old one
  engine().settle(0);
  EXPECT_FALSE(old_plan.expired()) << "the waiting context still runs it";
  const std::string old_version = ContextById(id).plan_version();
  Settle();
  EXPECT_EQ(ContextById(id).plan_version(), old_version);
  EXPECT_THAT(ContextById(id), HasStatus("completed"));
  EXPECT_FALSE(old_plan.expired()) << "the record's steps point into it";
  ASSERT_TRUE(engine().set_property("context_retention", Value(1)).is_ok());
  CallFlow("f");
  Settle();
  EXPECT_FALSE(engine().core().contexts.find(id)) << "the oldest records were dropped";
  EXPECT_TRUE(old_plan.expired()) << "no record uses the old version any more";
}

}  // namespace
}  // namespace flowrt
