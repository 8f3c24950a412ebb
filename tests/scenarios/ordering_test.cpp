// FIFO: contexts are numbered, and start, in the commit order of their events, whatever the
// number of workers.
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class OrderingTest : public FlowTest, public ::testing::WithParamInterface<unsigned> {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.properties.worker_threads = GetParam();
    return o;
  }
};

TEST_P(OrderingTest, SeqFollowsCommitOrder_AndEveryContextCompletes) {
  ASSERT_TRUE(Load(R"([
    {"id": "a", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [
      {"action": "log", "inputs": {"message": "{{trigger.record.n}}"}}]},
    {"id": "b", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": []}])"));
  constexpr int kN = 300;
  for (int i = 0; i < kN; ++i) Insert("t", Value::object({{"n", Value(i)}}));
  Settle();
  std::vector<ContextRecord> all = Contexts();
  ASSERT_EQ(all.size(), 2u * kN);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].seq(), static_cast<int64_t>(i + 1));
    EXPECT_EQ(all[i].id(), "ctx-" + std::to_string(i + 1));
    EXPECT_THAT(all[i], HasStatus("completed"));
    // Within one commit, flows start in the order they were activated: a then b.
    EXPECT_EQ(all[i].flow(), i % 2 == 0 ? "a" : "b");
    if (i % 2 == 0) {
      EXPECT_THAT(all[i], HasLog(std::to_string(i / 2)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, OrderingTest, ::testing::Values(1u, 2u, 4u, 8u));

// With one worker, contexts also run in queue order: each reads and bumps a counter record
// in its first steps and sees exactly the number of contexts started before it. (With
// several workers, contexts are taken from the queue in order but run side by side.)
class SingleWorkerOrderTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.properties.worker_threads = 1;
    return o;
  }
};

TEST_F(SingleWorkerOrderTest, ContextsRunInQueueOrder) {
  ASSERT_TRUE(Load(R"({"id": "s", "trigger": {"type": "record", "table": "job", "when": "created"}, "actions": [
      {"id": "c", "action": "look_up_record", "inputs": {"table": "counter"}},
      {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{steps.c.record.sys_id}}",
                                            "values": {"n": "{{steps.c.record.n | add: 1}}"}}},
      {"action": "log", "inputs": {"message": "{{steps.c.record.n}}"}}]})"));
  Insert("counter", Json(R"({"n": 0})"));
  for (int i = 0; i < 200; ++i) Insert("job", Value::empty_object());
  Settle();
  std::vector<ContextRecord> all = Contexts("s");
  ASSERT_EQ(all.size(), 200u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_THAT(all[i], HasLog(std::to_string(i)));
  EXPECT_EQ(Records("counter").at(0)["n"], Value(200));
}

}  // namespace
}  // namespace flowrt
