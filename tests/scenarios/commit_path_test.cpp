// The one commit path: every write (insert, update, delete, by id or `where`, from outside
// or from a context) commits under the commit lock with the next commit sequence number,
// so no write can land between a `where` operation's read and its write, and the order of
// commits is one order that flows, waiters and the commit observer all see.
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/engine_core.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

// A custom action that keeps updating field `b` of every record of table `t` (a write that
// starts no flow) until told to stop: concurrent writers racing the test thread's
// update_where.
class CommitPathTest : public FlowTest {
 protected:
  void SetUp() override {
    FlowTest::SetUp();
    CustomActionType hammer;
    hammer.name = "hammer";
    hammer.run = [this](CustomActionContext& ctx) -> Result<Value> {
      int64_t n = 0;
      while (!stop_.load(std::memory_order_acquire)) {
        for (const std::string& id : ids_) {
          Result<Value> r = ctx.host().update_record(Value("t"), Value(std::string_view(id)),
                                                     Value::object({{"b", Value(static_cast<long long>(++n))}}), Value());
          if (!r) return r.error();
        }
      }
      return Value::empty_object();
    };
    ASSERT_TRUE(engine().register_action(std::move(hammer)).is_ok());
  }
  void TearDown() override {
    stop_.store(true);
    FlowTest::TearDown();
  }

  std::atomic<bool> stop_{false};
  std::vector<std::string> ids_;
};

TEST_F(CommitPathTest, UpdateWhere_RacingWritesFromWorkers_NeverLosesAnUpdate) {
  ASSERT_TRUE(Load(R"({"id": "hammering", "trigger": {"type": "api"}, "actions": [{"action": "hammer"}]})"));
  for (int i = 0; i < 200; ++i) {
    ids_.emplace_back(Insert("t", Value::object({{"a", Value(0)}, {"b", Value(0)}}))["sys_id"].as_string());
  }
  CallFlow("hammering");
  CallFlow("hammering");
  // Each update_where must have written a = i to every record: a concurrent update of b
  // builds on the version it read, so it carries a along, or it retries.
  for (int i = 1; i <= 60; ++i) {
    Result<size_t> n = engine().update_where("t", Json(R"({"field": "a", "op": "ge", "value": 0})"),
                                             Value::object({{"a", Value(i)}}));
    ASSERT_TRUE(n.is_ok()) << n.message();
    ASSERT_EQ(*n, 200u);
    for (const Value& r : Records("t")) ASSERT_EQ(r["a"], Value(i)) << "update " << i << " was lost: " << r.to_json();
  }
  stop_.store(true);
  Settle();
  for (const ContextRecord& c : Contexts("hammering")) EXPECT_THAT(c, HasStatus("completed"));
}

TEST_F(CommitPathTest, RemoveWhere_RacingWritesFromWorkers_RemovesWhatItCounts) {
  ASSERT_TRUE(Load(R"({"id": "hammering", "trigger": {"type": "api"}, "actions": [{"action": "hammer"}]})"));
  for (int i = 0; i < 400; ++i) {
    ids_.emplace_back(Insert("t", Value::object({{"a", Value(i % 2)}, {"b", Value(0)}}))["sys_id"].as_string());
  }
  // The hammer updates records a remove_where deletes: its update then fails ("no
  // record"), which ends its context in error; that is the race this test provokes.
  CallFlow("hammering");
  Result<size_t> n = engine().remove_where("t", Json(R"({"field": "a", "op": "eq", "value": 1})"));
  ASSERT_TRUE(n.is_ok()) << n.message();
  EXPECT_EQ(*n, 200u);
  stop_.store(true);
  Settle();
  size_t odd = 0;
  for (const Value& r : Records("t")) odd += r["a"] == Value(1);
  EXPECT_EQ(odd, 0u);
  EXPECT_EQ(Records("t").size(), 200u);
}

}  // namespace
}  // namespace flowrt

namespace flowrt {
namespace {

// Every commit takes the next commit sequence number, the observer sees each one in that
// order, and the contexts a commit queued carry its number, in seq order.
class CommitObserverTest : public ::testing::Test {
 protected:
  struct Seen {
    uint64_t seq;
    CommitEntry::Kind kind;
    std::vector<std::string> started;
    bool from_context;
  };
  std::mutex mu_;
  std::vector<Seen> seen_;
};

TEST_F(CommitObserverTest, EveryWrite_TakesTheNextCommitSeq_InOneOrder) {
  EngineOptions o;
  o.properties.worker_threads = 2;
  o.on_commit = [this](const CommitEntry& e) {
    std::lock_guard lock(mu_);
    Seen s{e.seq, e.kind, {}, e.origin != nullptr};
    for (const Context* c : e.started) s.started.emplace_back(c->id.as_string());
    seen_.push_back(std::move(s));
  };
  Engine engine(o);
  ASSERT_TRUE(engine.load_text(R"([
    {"id": "on_t", "trigger": {"type": "record", "table": "t", "when": "created"}, "actions": [
      {"id": "c", "action": "create_record", "inputs": {"table": "u", "values": {"from": "{{trigger.sys_id}}"}}},
      {"action": "update_record", "inputs": {"table": "t", "sys_id": "{{trigger.sys_id}}", "values": {"seen": true}}}]},
    {"id": "on_u", "trigger": {"type": "record", "table": "u", "when": "created"}, "actions": [
      {"action": "fire_event", "inputs": {"name": "done"}}]},
    {"id": "on_done", "trigger": {"type": "event", "name": "done"}, "actions": [{"action": "log", "inputs": {"message": "x"}}]}
  ])").empty());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(engine.insert("t", Value::object({{"n", Value(i)}})).is_ok());
  ASSERT_TRUE(engine.update_where("t", Value::object({{"field", Value("n")}, {"op", Value("lt")}, {"value", Value(10)}}),
                                  Value::object({{"low", Value(true)}}))
                  .is_ok());
  engine.settle();
  std::lock_guard lock(mu_);
  // 50 inserts, 10 updates by where, and per context of on_t an insert and an update,
  // per on_u an event.
  ASSERT_EQ(seen_.size(), 50u + 10u + 50u * 2 + 50u);
  std::map<std::string, uint64_t> commit_of;
  for (size_t i = 0; i < seen_.size(); ++i) {
    EXPECT_EQ(seen_[i].seq, i + 1) << "commit numbers are contiguous, in the order observed";
    for (const std::string& id : seen_[i].started) commit_of[id] = seen_[i].seq;
  }
  uint64_t last_commit = 0, last_seq = 0;
  for (const ContextRecord& c : engine.contexts()) {
    ASSERT_TRUE(commit_of.count(c.id())) << c.id() << " was started by no observed commit";
    const KeptContext ctx = engine.core().contexts.find(c.id());
    ASSERT_TRUE(ctx);
    EXPECT_EQ(ctx.commit_seq(), commit_of[c.id()]);
    // seq order is commit order
    EXPECT_GT(static_cast<uint64_t>(c.seq()), last_seq);
    EXPECT_GE(ctx.commit_seq(), last_commit);
    last_seq = static_cast<uint64_t>(c.seq());
    last_commit = ctx.commit_seq();
  }
  EXPECT_EQ(engine.contexts().size(), 150u);
  EXPECT_EQ(engine.core().dispatcher.last_commit(), seen_.size());
}

}  // namespace
}  // namespace flowrt
