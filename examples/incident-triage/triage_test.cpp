// How a user tests their own flows: load the definitions, write records, settle, and read
// the context records with the matchers of testing/flow_test.h.
#include "testing/flow_test.h"

namespace {

using flowrt::ContextRecord;
using flowrt::Value;
using namespace flowrt::testing;
using ::testing::ElementsAre;

class IncidentTriageTest : public FlowTest {
 protected:
  void SetUp() override {
    FlowTest::SetUp();
    flowrt::Diagnostics d = engine().load({FLOWRT_SOURCE_DIR "/examples/incident-triage/flows"});
    ASSERT_TRUE(d.empty()) << d.describe();
    Insert("sys_user", Json(R"({"user_name": "ada", "group": "network", "active": true})"));
  }
};

TEST_F(IncidentTriageTest, HighPriorityIncident_IsAssignedToSomeoneInItsGroup) {
  Value incident = Insert("incident", Json(R"({"number": "INC9", "priority": 1, "assignment_group": "network"})"));
  Settle();
  EXPECT_THAT(OnlyContext("assign_incident"), HasStatus("completed"));
  EXPECT_THAT(OnlyContext("assign_incident"), HasLog("P1 INC9 assigned to ada"));
  Value now = engine().record("incident", incident["sys_id"].as_string());
  EXPECT_EQ(now["assigned_to"], Value("ada"));
  EXPECT_EQ(now["state"], Value("assigned"));
}

TEST_F(IncidentTriageTest, LowPriorityIncident_StartsNoContext) {
  Insert("incident", Json(R"({"number": "INC10", "priority": 5, "assignment_group": "network"})"));
  Settle();
  EXPECT_TRUE(Contexts("assign_incident").empty());
}

TEST_F(IncidentTriageTest, GroupWithNobody_LogsAWarningAndLeavesTheIncident) {
  Value incident = Insert("incident", Json(R"({"number": "INC11", "priority": 2, "assignment_group": "legal"})"));
  Settle();
  ContextRecord c = OnlyContext("assign_incident");
  EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(c.logs().at(0)["level"], Value("warn"));
  EXPECT_TRUE(engine().record("incident", incident["sys_id"].as_string())["assigned_to"].is_null());
}

}  // namespace
