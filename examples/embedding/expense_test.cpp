// Tests of this project's flows (flows/, config.json), as a user of flowrt writes them. The
// project is opened exactly as `flowrt run` opens it; records are written, the virtual
// clock is settled, and context records are checked with the matchers of
// <flowrt/testing/flow_test.h>. Three days of waiting cost no real time.
#include <flowrt/testing/flow_test.h>

namespace {

using flowrt::Value;
using namespace flowrt::testing;

// A first test, in ten lines (the README's).
class FirstTest : public FlowTest {};

TEST_F(FirstTest, NoDecisionInThreeDays_Expires) {
  ASSERT_TRUE(LoadProject(EXPENSES_PROJECT_DIR));  // flows/ and config.json, as `flowrt run` reads them
  Insert("expense", Json(R"({"number": "EXP-2", "amount": 1200, "manager": "grace"})"));
  Settle("2d");  // the three-day timeout is later: the context waits, parked
  EXPECT_THAT(OnlyContext("request_approval"), HasStatus("waiting"));
  Settle("4d");  // three virtual days: no real time
  EXPECT_THAT(OnlyContext("request_approval"), HasLog("EXP-2: no decision in 3 days"));
}

// The project's flows, one behaviour each; every test starts from the project as opened.
class ExpenseTest : public FlowTest {
 protected:
  void SetUp() override {
    FlowTest::SetUp();
    ASSERT_TRUE(LoadProject(EXPENSES_PROJECT_DIR));
  }
  Value Expense(std::string_view number, int amount) {
    return Insert("expense", Value::object({{"number", number}, {"amount", amount}, {"manager", "grace"}}));
  }
};

TEST_F(ExpenseTest, Approved_IsLoggedAndPaid) {
  Value expense = Expense("EXP-1", 450);
  Settle("1h");
  EXPECT_THAT(OnlyContext("request_approval"), HasStatus("waiting"));
  EXPECT_EQ(Records("approval_task").size(), 1u);

  Update("expense", expense["sys_id"].as_string(), Json(R"({"state": "approved"})"));
  Settle();
  EXPECT_THAT(OnlyContext("request_approval"), HasLog("EXP-1: approved"));
  EXPECT_THAT(OnlyContext("pay_expense"), HasLog("EXP-1: paid 450"));
  ASSERT_EQ(Records("payment").size(), 1u);
  EXPECT_EQ(Records("payment")[0]["amount"], Value(450));
}

TEST_F(ExpenseTest, NoDecisionInThreeDays_TimesOutAndExpires) {
  Value expense = Expense("EXP-2", 1200);
  Settle("2d");  // the timeout (3 days) is later: still waiting
  EXPECT_THAT(OnlyContext("request_approval"), HasStatus("waiting"));

  Settle("4d");
  flowrt::ContextRecord c = OnlyContext("request_approval");
  EXPECT_THAT(c, HasLog("EXP-2: no decision in 3 days"));
  EXPECT_EQ(c.value()["ended_at"], Value("2026-03-05T09:00:00.000Z"));  // config.json's start_time + 3d
  EXPECT_EQ(engine().record("expense", expense["sys_id"].as_string())["state"], Value("expired"));
  EXPECT_TRUE(Contexts("pay_expense").empty());
}

TEST_F(ExpenseTest, SmallExpense_IsApprovedAtOnceAndPaid) {
  Expense("EXP-3", 40);
  Settle();
  EXPECT_THAT(OnlyContext("auto_approve"), HasStatus("completed"));
  EXPECT_THAT(OnlyContext("pay_expense"), HasLog("EXP-3: paid 40"));
  EXPECT_TRUE(Contexts("request_approval").empty());
}

// The events file, applied as `flowrt run` applies it: the same project, the same outcome.
TEST_F(ExpenseTest, EventsFile_GivesWhatFlowrtRunGives) {
  ASSERT_TRUE(RunEvents(project().files.events));
  EXPECT_EQ(engine().record("expense", "e1")["state"], Value("approved"));
  EXPECT_EQ(engine().record("expense", "e2")["state"], Value("approved"));
  EXPECT_EQ(engine().record("expense", "e3")["state"], Value("expired"));
  EXPECT_EQ(Records("payment").size(), 2u);
}

}  // namespace
