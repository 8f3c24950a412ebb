// Each example, run as `flowrt run examples/NAME` runs it (the project opened by the same
// call, then its events file), and what it is meant to show.
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class ExampleTest : public FlowTest {
 protected:
  void RunExample(const std::string& name) {
    ASSERT_TRUE(LoadProject(std::string(FLOWRT_SOURCE_DIR) + "/examples/" + name));
    ASSERT_TRUE(RunEvents(project().files.events));
  }
  Value RecordBy(std::string_view table, std::string_view field, const Value& v) {
    for (const Value& r : Records(table)) {
      if (r[field] == v) return r;
    }
    return Value();
  }
};

TEST_F(ExampleTest, IncidentTriage_AssignsP1ToP3_WarnsWhenNobodyIsThere) {
  RunExample("incident-triage");
  std::vector<ContextRecord> cs = Contexts("assign_incident");
  ASSERT_EQ(cs.size(), 3u);
  for (const ContextRecord& c : cs) EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_THAT(cs[0], HasLog("P1 INC001 assigned to ada"));
  EXPECT_THAT(cs[1], HasLog("P2 INC003 assigned to chen"));
  EXPECT_THAT(cs[2], HasLog("nobody active in facilities for INC004"));
  EXPECT_EQ(RecordBy("incident", "number", Value("INC001"))["assigned_to"], Value("ada"));
  EXPECT_TRUE(RecordBy("incident", "number", Value("INC002"))["assigned_to"].is_null());
}

TEST_F(ExampleTest, Subflows_ReserveThenLabel_OrBackorder) {
  RunExample("subflows");
  std::vector<ContextRecord> cs = Contexts("ship_order");
  ASSERT_EQ(cs.size(), 2u);
  for (const ContextRecord& c : cs) EXPECT_THAT(c, HasStatus("completed"));
  EXPECT_EQ(engine().record("order", "o1")["state"], Value("ready"));
  EXPECT_EQ(engine().record("order", "o1")["label"], Value("ADA / LEEDS"));
  EXPECT_EQ(engine().record("order", "o2")["state"], Value("backordered"));
  EXPECT_EQ(engine().record("order", "o2")["note"], Value("only 1 of LAMP-1 in stock"));
  EXPECT_EQ(Records("stock").at(0)["on_hand"], Value(1));
  EXPECT_EQ(cs[0].steps().at(1)["path"], Value("1.subflow.1"));
  EXPECT_TRUE(Skipped().empty()) << "the flow's own update (paid -> ready) does not match its trigger";
}

TEST_F(ExampleTest, Schedules_ReportEveryHour_RemindOnce) {
  RunExample("schedules");
  std::vector<Value> reports = Records("report");
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0]["open_tickets"], Value(2));
  EXPECT_EQ(reports[1]["open_tickets"], Value(3));
  EXPECT_EQ(reports[2]["at"], Value("2026-01-01T03:00:00.000Z"));
  ASSERT_EQ(Contexts("close_reminder").size(), 1u);
  EXPECT_EQ(Ms(OnlyContext("close_reminder").value()["started_at"]), 9000000);
}

TEST_F(ExampleTest, WaitForApproval_DecisionsAndTimeout) {
  RunExample("wait-for-approval");
  std::vector<ContextRecord> cs = Contexts("await_approval");
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_THAT(cs[0], HasLog("laptop: approved"));
  EXPECT_EQ(Ms(cs[0].value()["ended_at"]), 3 * 3600 * 1000);
  EXPECT_THAT(cs[1], HasLog("chair: no decision in two days"));
  EXPECT_EQ(Ms(cs[1].value()["ended_at"]), 48 * 3600 * 1000);
  EXPECT_THAT(cs[2], HasLog("yacht: rejected"));
  EXPECT_EQ(engine().record("purchase", "p2")["approval"], Value("expired"));
}

}  // namespace
}  // namespace flowrt
