// coalesce_context_changes: a batch with a context's changes folded into one leaves every
// store as the batch as written does, and writes one change per context.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "plans/value_json.h"
#include "store/coalesce.h"
#include "store/memory_store.h"
#include "store/sqlite_store.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;


StoredContext queued(uint64_t seq) {
  StoredContext c;
  c.seq = seq;
  c.id = "ctx-" + std::to_string(seq);
  c.flow = "f";
  c.status = std::string(kQueuedStatus);
  c.commit_seq = seq;
  c.trigger = json(R"({"type": "api"})");
  return c;
}

// Two batches: the second is what a journal writes while contexts 1-3 move on (ctx-1 ends
// within it, ctx-2 parks, ctx-3 was queued in the first and ends in the second; records
// are written in between).
std::vector<StoreBatch> batches() {
  StoreBatch a;
  a.changes.push_back(ContextPut{queued(3)});
  a.changes.push_back(ContextUpdate{3, "in_progress", 5, -1, Value(), json(R"({"cp": 1})")});
  StoreBatch b;
  b.changes.push_back(ContextPut{queued(1)});
  b.changes.push_back(ContextUpdate{1, "in_progress", 10, -1, Value(), Value()});
  b.changes.push_back(RecordPut{"t", json(R"({"sys_id": "r1", "n": 1})"), 1});
  b.changes.push_back(ContextUpdate{1, "in_progress", -1, -1, json(R"({"steps": 1})"), json(R"({"cp": 2})")});
  b.changes.push_back(ContextPut{queued(2)});
  b.changes.push_back(ContextUpdate{3, "in_progress", -1, -1, Value(), json(R"({"cp": 3})")});
  b.changes.push_back(ContextUpdate{2, "in_progress", 11, -1, Value(), Value()});
  b.changes.push_back(ContextUpdate{1, "completed", -1, 12, json(R"({"steps": 2})"), Value()});
  b.changes.push_back(ContextUpdate{2, "waiting", -1, -1, json(R"({"w": 1})"), json(R"({"cp": 4})")});
  b.changes.push_back(RecordPut{"t", json(R"({"sys_id": "r1", "n": 2})"), 1});
  b.changes.push_back(ContextUpdate{3, "error", -1, 13, json(R"({"e": 1})"), Value()});
  return {a, b};
}

std::string state_of(Store& s) {
  Result<StoredState> st = s.load();
  EXPECT_TRUE(st.is_ok());
  std::string out;
  // Every context: those not ended as load() gives them (with their checkpoints), the
  // ended ones from the store's history.
  for (const StoredContext& c : st->contexts) {
    out += c.id + " " + c.status + " " + std::to_string(c.started) + " " + std::to_string(c.ended) + " " +
           c.record.value().to_json() + " " + c.checkpoint.to_json() + "\n";
  }
  ContextQuery ended;
  ended.ended_only = true;
  Result<std::vector<StoredContext>> history = s.list_contexts(ended);
  EXPECT_TRUE(history.is_ok());
  for (const StoredContext& c : *history) {
    out += c.id + " " + c.status + " " + std::to_string(c.started) + " " + std::to_string(c.ended) + " " +
           c.record.value().to_json() + " " + c.checkpoint.to_json() + "\n";
  }
  for (const auto& t : st->tables) {
    for (const Value& r : t.records) out += t.name + " " + r.to_json() + "\n";
  }
  return out;
}

TEST(StoreCoalesceTest, ACoalescedBatch_LeavesTheStoreAsTheOriginal) {
  MemoryStore original;
  for (const StoreBatch& b : batches()) ASSERT_TRUE(original.write(b).is_ok());

  MemoryStore folded_memory;
  const std::string path = test_support::temp_path("flowrt-coalesce") + ".db";
  test_support::remove_sqlite_files(path);
  Result<std::unique_ptr<SqliteStore>> sqlite = SqliteStore::open(path, SyncMode::kOff);
  ASSERT_TRUE(sqlite.is_ok());
  size_t context_changes = 0;
  for (StoreBatch b : batches()) {
    coalesce_context_changes(b);
    for (const StoreChange& c : b.changes) {
      context_changes += std::holds_alternative<ContextPut>(c) || std::holds_alternative<ContextUpdate>(c);
    }
    ASSERT_TRUE(folded_memory.write(b).is_ok());
    ASSERT_TRUE((*sqlite)->write(b).is_ok());
  }
  EXPECT_EQ(context_changes, 4u) << "one per context and batch: ctx-3 in each, ctx-1 and ctx-2 in the second";
  const std::string want = state_of(original);
  EXPECT_NE(want.find("ctx-2 waiting 11 -1 {\"w\":1} {\"cp\":4}"), std::string::npos) << want;
  EXPECT_NE(want.find("ctx-1 completed 10 12 {\"steps\":2} null"), std::string::npos) << want;
  EXPECT_EQ(state_of(folded_memory), want);
  EXPECT_EQ(state_of(**sqlite), want);
  sqlite->reset();
  test_support::remove_sqlite_files(path);
}

}  // namespace
}  // namespace flowrt
