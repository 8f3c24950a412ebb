// The postgresql store beyond the conformance suite: what only a database server brings.
// Its schema version, the one-writer lock, readers while a writer writes, the plans of
// its lists, and where its context rows and grouped statements land. The writer's session
// (its limits, cut connections, connecting again, bad URLs) is in
// postgres_store_sessions_test.cpp. Each test has a schema of its own on the fixture's
// server (tests/support/postgres_support.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres_store.h"
#include "store/store.h"
#include "tests/store/postgres_store_fixture.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;
using postgres_store_fixture::PostgresStoreTest;

TEST_F(PostgresStoreTest, ANewerSchemaVersion_IsRefused_AndLeftUnchanged) {
  {
    std::unique_ptr<PostgresStore> store = open();
    ASSERT_NE(store, nullptr);
    write(*store, records(0, 3), 3);
  }
  ASSERT_EQ(postgres_exec(url_, "UPDATE meta SET value = '99' WHERE key = 'schema_version'"), "");
  Result<std::unique_ptr<PostgresStore>> refused = PostgresStore::open(url_, SyncMode::kNormal);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("newer flowrt (data schema version 99"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("not changed"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("postgresql database 127.0.0.1:"), std::string::npos) << refused.message();
  EXPECT_EQ(sql_value("SELECT value FROM meta WHERE key = 'schema_version'"), "99");
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), "3");
  EXPECT_EQ(sql_value("SELECT commit_seq FROM counters"), "3");
  EXPECT_EQ(sql_value("SELECT count(*) FROM holder"), "0") << "the refused opener wrote nothing";
  // Read only too.
  EXPECT_FALSE(PostgresStore::open(url_, SyncMode::kNormal, /*read_only=*/true).is_ok());
}

// flowrt inspect on a database whose operators may read it and nothing more: a read-only
// store opens and reads as a role with USAGE on the schema and SELECT on its tables only,
// so it writes nothing, not even a lock's row, and creates nothing.
TEST_F(PostgresStoreTest, AReadOnlyStore_OpensAndReadsAsARoleThatMayOnlySelect) {
  {
    std::unique_ptr<PostgresStore> writer = open();
    ASSERT_NE(writer, nullptr);
    std::vector<StoreChange> changes = records(0, 3);
    changes.push_back(context_put(1, "completed", test_support::json(R"({"id": "ctx-1", "status": "completed"})")));
    write(*writer, std::move(changes), 3);
  }
  const std::string server = postgres_server_url();
  const std::string schema = url_.substr(url_.find("search_path%3D") + std::string("search_path%3D").size());
  const std::string role = "flowrt_select_only_" + std::to_string(::getpid());
  ASSERT_EQ(postgres_exec(server, "DROP ROLE IF EXISTS " + role + "; CREATE ROLE " + role + " LOGIN; GRANT USAGE ON SCHEMA " +
                                      schema + " TO " + role + "; GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO " +
                                      role),
            "");
  const std::string as_role = "postgresql://" + role + "@" + url_.substr(url_.find('@') + 1);
  {
    Result<std::unique_ptr<PostgresStore>> reader = PostgresStore::open(as_role, SyncMode::kNormal, /*read_only=*/true);
    ASSERT_TRUE(reader.is_ok()) << reader.message();
    Result<StoredState> state = (*reader)->load();
    ASSERT_TRUE(state.is_ok()) << state.message();
    ASSERT_EQ(state->tables.size(), 1u);
    EXPECT_EQ(state->tables[0].records.size(), 3u);
    Result<std::optional<StoredContext>> ended = (*reader)->load_context(1);
    ASSERT_TRUE(ended.is_ok()) << ended.message();
    ASSERT_TRUE(ended->has_value());
    EXPECT_EQ((*ended)->status, "completed");
    ContextQuery all;
    Result<std::vector<StoredContext>> listed = (*reader)->list_contexts(all);
    ASSERT_TRUE(listed.is_ok()) << listed.message();
    EXPECT_EQ(listed->size(), 1u);
    // As a writer, the same role is refused, naming what it lacks.
    Result<std::unique_ptr<PostgresStore>> writer = PostgresStore::open(as_role, SyncMode::kNormal);
    ASSERT_FALSE(writer.is_ok());
    EXPECT_NE(writer.message().find("permission denied"), std::string::npos) << writer.message();
  }
  EXPECT_EQ(postgres_exec(server, "DROP OWNED BY " + role + "; DROP ROLE " + role), "");
}

TEST_F(PostgresStoreTest, ASecondWriter_IsRefusedNamingTheHolder_AReaderIsNot_AndTheNextWriterOpensOnceItCloses) {
  std::unique_ptr<PostgresStore> first = open();
  ASSERT_NE(first, nullptr);
  write(*first, records(0, 2), 2);
  Result<std::unique_ptr<PostgresStore>> second = PostgresStore::open(url_, SyncMode::kNormal);
  ASSERT_FALSE(second.is_ok());
  const std::string& m = second.message();
  EXPECT_NE(m.find("is in use by another engine"), std::string::npos) << m;
  EXPECT_NE(m.find("process " + std::to_string(::getpid()) + " on "), std::string::npos) << m;
  EXPECT_NE(m.find("server backend " + std::to_string(first->writer_backend_pid())), std::string::npos) << m;
  EXPECT_NE(m.find("schema " + first->schema()), std::string::npos) << m;
  // The refused opener leaves the holder's row as it was (until 2026-12-06 it deleted it as
  // it went, and a third opener was told "another flowrt session").
  Result<std::unique_ptr<PostgresStore>> third = PostgresStore::open(url_, SyncMode::kNormal);
  ASSERT_FALSE(third.is_ok());
  EXPECT_NE(third.message().find("server backend " + std::to_string(first->writer_backend_pid())), std::string::npos)
      << third.message();
  // A reader (flowrt inspect) takes no lock and sees what was written.
  std::unique_ptr<PostgresStore> reader = open(/*read_only=*/true);
  ASSERT_NE(reader, nullptr);
  Result<StoredState> state = reader->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  ASSERT_EQ(state->tables.size(), 1u);
  EXPECT_EQ(state->tables[0].records.size(), 2u);
  EXPECT_FALSE(reader->write(StoreBatch{}).is_ok()) << "a reader does not write";
  // Another schema of the same database is another store: its own lock.
  const std::string other = fresh_postgres_schema("other");
  Result<std::unique_ptr<PostgresStore>> elsewhere = PostgresStore::open(other, SyncMode::kNormal);
  EXPECT_TRUE(elsewhere.is_ok()) << (elsewhere ? "" : elsewhere.message());
  first.reset();
  std::unique_ptr<PostgresStore> next = open();
  ASSERT_NE(next, nullptr);
  Result<StoredState> again = next->load();
  ASSERT_TRUE(again.is_ok()) << again.message();
  EXPECT_EQ(again->counters.commit_seq, 2u);
}

// The writer ends the contexts of the last batch (they move to history) and queues as many
// new ones in each batch; a reader listing every context meanwhile sees whole batches only:
// every context of a batch queued, or every one ended, never a mix, never a part.
TEST_F(PostgresStoreTest, ListContextsWhileABatchIsWritten_SeesWholeBatchesOnly) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  constexpr uint64_t kPerBatch = 50;
  constexpr uint64_t kBatches = 40;
  std::atomic<bool> done{false};
  std::vector<std::string> problems;
  int reads = 0;
  std::thread reader([&] {
    while (!done.load() || reads == 0) {
      ContextQuery all;
      all.limit = SIZE_MAX;
      Result<std::vector<StoredContext>> listed = store->list_contexts(all);
      ++reads;
      if (!listed) {
        problems.push_back(listed.message());
        return;
      }
      const size_t n = listed->size();
      if (n % kPerBatch != 0) problems.push_back("listed " + std::to_string(n) + " contexts");
      for (size_t i = 0; i < n; ++i) {
        const StoredContext& c = (*listed)[i];
        if (c.seq != i + 1) problems.push_back("seq " + std::to_string(c.seq) + " at " + std::to_string(i));
        const bool last_batch = i + kPerBatch >= n;
        const std::string want = last_batch ? "queued" : "completed";
        if (c.status != want) problems.push_back("context " + c.id + " " + c.status + " of " + std::to_string(n));
      }
      if (problems.size() > 20) return;
    }
  });
  uint64_t seq = 0;
  for (uint64_t b = 0; b < kBatches; ++b) {
    std::vector<StoreChange> changes;
    for (uint64_t s = seq - std::min(seq, kPerBatch) + 1; s <= seq; ++s) {
      changes.push_back(ContextUpdate{s, "completed", 10, 20, json(R"({"id":"ctx-)" + std::to_string(s) + R"("})"), Value()});
    }
    for (uint64_t i = 0; i < kPerBatch; ++i) {
      StoredContext c;
      c.seq = ++seq;
      c.id = "ctx-" + std::to_string(c.seq);
      c.flow = "f";
      c.status = std::string(kQueuedStatus);
      c.commit_seq = c.seq;
      c.trigger = json(R"({"type":"record","record":{"sys_id":"x"},"name":"go"})");
      changes.push_back(ContextPut{c});
    }
    write(*store, std::move(changes), seq);
  }
  done = true;
  reader.join();
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  EXPECT_GT(reads, 1);
  Result<std::optional<StoredContext>> ended = store->load_context(1);
  ASSERT_TRUE(ended.is_ok() && ended->has_value());
  EXPECT_EQ((*ended)->trigger.to_json(), R"({"type":"record","name":"go"})") << "summarised as it moved to history";
}

// A page of a list reads in seq order by an index, whatever the tables' statistics say: here
// they say nothing (autovacuum off, never analyzed), as they do for up to a minute after a
// burst of inserts, when the server would otherwise take a bitmap scan, reading every
// matching row and sorting them for the page (docs/SCALING.md, "Limits, as built").
TEST_F(PostgresStoreTest, AListsPlan_ReadsInSeqOrderByAnIndex_WithoutStatistics_NeverABitmapAndASort) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  for (const char* table : {"contexts", "history"}) {
    ASSERT_EQ(postgres_exec(url_, std::string("ALTER TABLE ") + table + " SET (autovacuum_enabled = off)"), "");
  }
  // 20,000 contexts, each put live and then ended (its row moved to history), as an engine
  // writes them: the history rows, and a dead row each in contexts.
  constexpr uint64_t kContexts = 20000, kPerBatch = 1000;
  for (uint64_t first = 1; first <= kContexts; first += kPerBatch) {
    std::vector<StoreChange> started, ended;
    for (uint64_t seq = first; seq < first + kPerBatch; ++seq) {
      started.push_back(context_put(seq, "running"));
      ended.push_back(ContextUpdate{seq, "completed", 10, 20, json(R"({"id":"ctx-)" + std::to_string(seq) + R"("})"),
                                    Value()});
    }
    write(*store, std::move(started), first);
    write(*store, std::move(ended), first);
  }
  ASSERT_EQ(sql_value("SELECT count(*) FROM history"), std::to_string(kContexts));
  ContextQuery by_status;
  by_status.status = "completed";
  by_status.newest_first = true;
  by_status.limit = 50;
  ContextQuery by_flow;
  by_flow.flow = "f";
  by_flow.limit = 50;
  ContextQuery all;
  all.newest_first = true;
  all.limit = 50;
  for (const ContextQuery* q : {&by_status, &by_flow, &all}) {
    Result<std::string> plan = store->explain_list_contexts(*q);
    ASSERT_TRUE(plan.is_ok()) << plan.message();
    EXPECT_EQ(plan->find("Bitmap"), std::string::npos) << *plan;
    EXPECT_EQ(plan->find("Sort  ("), std::string::npos) << "no sort node: " << *plan;
    EXPECT_EQ(plan->find("Seq Scan"), std::string::npos) << *plan;
    Result<std::vector<StoredContext>> page = store->list_contexts(*q);
    ASSERT_TRUE(page.is_ok()) << page.message();
    ASSERT_EQ(page->size(), 50u);
    EXPECT_EQ(page->front().seq, q->newest_first ? kContexts : 1) << *plan;
  }
}

// A trigger holding the escape \u0000 in a string (a record a user wrote with one): the
// server's json functions refuse such a text, so when a context written before the store
// opened moves to history, and the server summarises its trigger (ended_trigger), the
// trigger is kept whole. Until 2026-12-06 the move failed, and the batch with it, again at
// every retry: the store wrote nothing more.
TEST_F(PostgresStoreTest, AContextWhoseTriggerHoldsANul_MovesToHistory_AfterTheStoreOpenedAgain) {
  const Value trigger = json(R"({"type": "record", "record": {"sys_id": "a", "s": "x\u0000y"}})");
  {
    std::unique_ptr<PostgresStore> store = open();
    ASSERT_NE(store, nullptr);
    StoreChange put = context_put(1, "running");
    std::get<ContextPut>(put).context.trigger = trigger;
    write(*store, {put}, 1);
  }
  std::unique_ptr<PostgresStore> store = open();  // does not know where the row is: the server moves it
  ASSERT_NE(store, nullptr);
  write(*store, {StoreChange{ContextUpdate{1, "completed", 10, 20, json(R"({"id": "ctx-1"})"), Value()}}}, 2);
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text, ',') FROM history"), "1");
  Result<std::optional<StoredContext>> ended = store->load_context(1);
  ASSERT_TRUE(ended.is_ok()) << ended.message();
  ASSERT_TRUE(ended->has_value());
  EXPECT_EQ((*ended)->status, "completed");
  EXPECT_EQ((*ended)->trigger, trigger) << "kept whole";
}

// A record put where another record stands refuses the whole batch (as the sqlite store does).
// The writer sends only the statement that applies where it knows which table a context's
// row is in (store/postgres_context_places.h), and both where it does not: rows from
// before the store opened, and a context that ended without its record given. Whichever
// path each takes, every row ends in the table its status says, with its last values.
TEST_F(PostgresStoreTest, ContextRows_EndInTheRightTable_WhereverTheWriterKnowsThemToBe) {
  auto update = [](uint64_t seq, const char* status, Value record = Value()) {
    return StoreChange{ContextUpdate{seq, status, 1, 2, std::move(record), Value()}};
  };
  auto rec = [](const char* status) { return json(std::string(R"({"status": ")") + status + R"("})"); };
  auto where = [&](uint64_t seq) {
    const std::string s = std::to_string(seq);
    return sql_value("SELECT (SELECT count(*) FROM contexts WHERE seq = " + s + ") || '/' || (SELECT count(*) FROM history WHERE seq = " + s +
                     ") || ' ' || COALESCE((SELECT status FROM contexts WHERE seq = " + s +
                     "), (SELECT status FROM history WHERE seq = " + s + "), '-')");
  };
  {
    std::unique_ptr<PostgresStore> store = open();
    ASSERT_NE(store, nullptr);
    // Before the reopen: 1 and 2 live, 3 in history.
    write(*store, {context_put(1, "running"), context_put(2, "waiting"), context_put(3, "completed", rec("completed"))});
  }
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, {
                    update(1, "completed", rec("completed")),  // from before: both tables' statements
                    update(3, "completed", rec("completed again")),
                    context_put(4, "running"),                          // new, live
                    context_put(5, "completed", rec("completed")),      // new, straight to history
                    context_put(6, "running"),
                    context_put(7, "running"),
                });
  write(*store, {
                    update(4, "waiting"),                        // known live: stays
                    update(5, "completed", rec("changed")),      // known in history
                    update(6, "completed", rec("completed")),    // known live: moves
                    update(7, "error"),                          // ended, no record given: stays live
                    update(2, "cancelled", rec("cancelled")),    // from before
                });
  write(*store, {
                    update(4, "completed", rec("completed")),
                    update(6, "completed", rec("changed after")),  // now in history
                    update(7, "error", rec("error")),              // now moves
                    context_put(8, "completed", rec("completed")),
                });
  EXPECT_EQ(where(1), "0/1 completed");
  EXPECT_EQ(where(2), "0/1 cancelled");
  EXPECT_EQ(where(3), "0/1 completed");
  EXPECT_EQ(where(4), "0/1 completed");
  EXPECT_EQ(where(5), "0/1 completed");
  EXPECT_EQ(where(6), "0/1 completed");
  EXPECT_EQ(where(7), "0/1 error");
  EXPECT_EQ(where(8), "0/1 completed");
  EXPECT_EQ(sql_value("SELECT record::jsonb->>'status' FROM history WHERE seq = 3"), "completed again");
  EXPECT_EQ(sql_value("SELECT record::jsonb->>'status' FROM history WHERE seq = 5"), "changed");
  EXPECT_EQ(sql_value("SELECT record::jsonb->>'status' FROM history WHERE seq = 6"), "changed after");
  // A batch that fails changes no row, nor what the writer knows: 9 is live, a failed batch
  // would have put it in history, and the next update finds it live still.
  write(*store, {context_put(9, "running")});
  StoreBatch failing;
  failing.changes = {context_put(9, "completed", rec("lost")), StoreChange{RecordPut{"t", json(R"({"sys_id": "x"})"), 1}},
                     StoreChange{RecordPut{"t", json(R"({"sys_id": "y"})"), 1}}};
  ASSERT_FALSE(store->write(failing).is_ok());
  EXPECT_EQ(where(9), "1/0 running");
  write(*store, {update(9, "completed", rec("completed"))});
  EXPECT_EQ(where(9), "0/1 completed");
}

// A row moved to history keeps its trigger without the copies of the record (ended_trigger):
// sent by the writer for a live row it wrote, computed by the server for one from before
// the store opened. Both come back the same, in the trigger's own order.
TEST_F(PostgresStoreTest, AMovedRowsTrigger_IsTheEndedTrigger_WhetherTheWriterSentItOrNot) {
  const Value trigger =
      json(R"({"type": "record", "table": "t", "record": {"sys_id": "a"}, "previous": {"sys_id": "a"}, "operation": "update"})");
  auto put = [&](uint64_t seq) {
    StoredContext c;
    c.seq = seq;
    c.id = "ctx-" + std::to_string(seq);
    c.flow = "f";
    c.status = "running";
    c.trigger = trigger;
    return StoreChange{ContextPut{std::move(c)}};
  };
  auto end = [](uint64_t seq) {
    return StoreChange{ContextUpdate{seq, "completed", 1, 2, json(R"({"status": "completed"})"), Value()}};
  };
  {
    std::unique_ptr<PostgresStore> store = open();
    ASSERT_NE(store, nullptr);
    write(*store, {put(1)});  // from before the reopen
  }
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, {put(2)});
  write(*store, {end(1), end(2)});
  const Value ended = json(R"({"type": "record", "table": "t", "operation": "update"})");
  for (uint64_t seq : {1, 2}) {
    Result<std::optional<StoredContext>> c = store->load_context(seq);
    ASSERT_TRUE(c.is_ok()) << c.message();
    ASSERT_TRUE(c->has_value());
    EXPECT_EQ((*c)->trigger, ended) << seq;
    EXPECT_EQ((*c)->trigger.to_json(), ended.to_json()) << seq << ": in the trigger's own order";
    EXPECT_EQ(sql_value("SELECT count(*) FROM history WHERE seq = " + std::to_string(seq)), "1");
  }
}

// Record puts go to the server in groups (one statement for up to kPutGroup): each
// position's changes still land in their order — a put, an update of it, a remove, a put
// again in one batch — and other tables' rows are unaffected.
TEST_F(PostgresStoreTest, RecordPutsGoInGroups_EachPositionsChangesKeepTheirOrder) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  std::vector<StoreChange> changes = records(0, 40);
  changes.push_back(RecordPut{"t", json(R"({"sys_id": "r3", "n": 103})"), 4});  // joins the group of positions 33..40
  changes.push_back(RecordPut{"t", json(R"({"sys_id": "r3", "n": 203})"), 4});  // twice in a row
  changes.push_back(RecordRemove{"t", "r5", 6});
  changes.push_back(RecordPut{"t", json(R"({"sys_id": "r5", "n": 305})"), 6});  // back, after its remove
  changes.push_back(RecordRemove{"t", "r7", 8});
  write(*store, changes, 45);
  Result<StoredState> state = store->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  ASSERT_EQ(state->tables.size(), 1u);
  std::map<std::string, Value> by_id;
  for (const Value& r : state->tables[0].records) by_id[std::string(r["sys_id"].as_string())] = r;
  EXPECT_EQ(by_id.size(), 39u);
  EXPECT_EQ(by_id["r3"]["n"], Value(203));
  EXPECT_EQ(by_id["r5"]["n"], Value(305));
  EXPECT_EQ(by_id.count("r7"), 0u);
  EXPECT_EQ(by_id["r39"]["n"], Value(39));
  EXPECT_EQ(state->counters.commit_seq, 45u);
}

// Live context rows go in groups too: a row's later change in the same batch (its move to
// history, its put straight to history) still comes after its put.
TEST_F(PostgresStoreTest, LiveContextRowsGoInGroups_ALatersChangeOfOneStillComesAfterIt) {
  const Value done = json(R"({"status": "completed"})");
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  std::vector<StoreChange> changes;
  for (uint64_t seq = 1; seq <= 20; ++seq) changes.push_back(context_put(seq, "queued"));  // a group of 16, then 4
  changes.push_back(StoreChange{ContextUpdate{18, "completed", 1, 2, done, Value()}});  // moves
  changes.push_back(context_put(19, "completed", done));                                         // straight to history
  changes.push_back(context_put(21, "queued"));
  changes.push_back(StoreChange{ContextUpdate{21, "running", 1, -1, Value(), Value()}});
  write(*store, changes);
  EXPECT_EQ(sql_value("SELECT count(*) FROM contexts"), "19");
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text, ',' ORDER BY seq) FROM history"), "18,19");
  EXPECT_EQ(sql_value("SELECT status FROM contexts WHERE seq = 21"), "running");
  EXPECT_EQ(sql_value("SELECT status FROM contexts WHERE seq = 20"), "queued");
}

TEST_F(PostgresStoreTest, ARecordPutWhereAnotherStands_InTheMiddleOfAGroup_IsTheOneNamed) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, records(0, 10), 10);
  std::vector<StoreChange> clash = records(10, 5);
  clash.push_back(RecordPut{"t", json(R"({"sys_id":"other"})"), 3});  // r2 stands there
  for (StoreChange& c : records(15, 5)) clash.push_back(std::move(c));
  StoreBatch batch;
  batch.changes = std::move(clash);
  Status s = store->write(batch);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("record other of table t at position 3: another record is there"), std::string::npos)
      << s.message();
  Result<StoredState> state = store->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  EXPECT_EQ(state->tables[0].records.size(), 10u) << "none of the refused batch";
}

// A batch of more statements than one pipeline chunk (PostgresStore::kPipelineDepth, each
// record remove a statement): a refused put is read with the first chunk, while the rest of
// the batch is still being made and sent, or with the last, before COMMIT. Either way the
// whole batch is refused, and the store goes on.
TEST_F(PostgresStoreTest, ARecordPutWhereAnotherStands_RefusesTheWholeBatch) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, records(0, 2), 2);
  std::vector<StoreChange> removes;
  for (int i = 0; i < static_cast<int>(PostgresStore::kPipelineDepth) + 50; ++i) {
    removes.push_back(RecordRemove{"t", "absent" + std::to_string(i), static_cast<uint64_t>(1000 + i)});
  }
  for (const bool clash_first : {true, false}) {
    SCOPED_TRACE(clash_first ? "refused in the first chunk" : "refused in the last chunk");
    StoreBatch clash;
    if (!clash_first) clash.changes = removes;
    for (StoreChange& c : records(2, 20)) clash.changes.push_back(std::move(c));
    clash.changes.push_back(RecordPut{"t", json(R"({"sys_id":"other"})"), 1});
    if (clash_first) clash.changes.insert(clash.changes.end(), removes.begin(), removes.end());
    clash.counters.commit_seq = 23;
    Status s = store->write(clash);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("record other of table t at position 1: another record is there"), std::string::npos)
        << s.message();
    Result<StoredState> state = store->load();
    ASSERT_TRUE(state.is_ok()) << state.message();
    EXPECT_EQ(state->tables[0].records.size(), 2u);
    EXPECT_EQ(state->counters.commit_seq, 2u);
  }
  write(*store, records(2, 3), 5);  // the store goes on
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), "5");
}

// A write whose making of a statement throws (an allocation failing; here the test's hook)
// after some of its statements went to the server, within the first chunk and past it: the
// exception reaches the caller, none of the batch is there, and the connection is ready for
// the next write, which lands whole. Before the batch's statements were sent as they were
// made, nothing was sent until all were made; now what was sent is rolled back.
std::atomic<int> g_statements_until_throw{0};

// Installs a statement hook for the test's life.
struct StatementHook {
  explicit StatementHook(void (*hook)()) { PostgresStore::set_statement_hook(hook); }
  ~StatementHook() { PostgresStore::set_statement_hook(nullptr); }
};

// `puts` (records 2-33: two statements of 16 puts, sent first), then `removes` removes of
// records that are not there, each a statement of its own.
StoreBatch puts_then_removes(std::vector<StoreChange> puts, int removes) {
  StoreBatch batch;
  batch.changes = std::move(puts);
  for (int i = 0; i < removes; ++i) {
    batch.changes.push_back(RecordRemove{"t", "absent" + std::to_string(i), static_cast<uint64_t>(1000 + i)});
  }
  batch.counters.commit_seq = 99;
  return batch;
}

TEST_F(PostgresStoreTest, AWriteThatThrowsWhileItsStatementsAreSent_LeavesNoneOfIt_AndTheNextWriteLands) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, records(0, 2), 2);
  const StatementHook hook([] {
    if (g_statements_until_throw.fetch_sub(1) == 1) throw std::bad_alloc();
  });
  uint64_t commit_seq = 2;
  for (const int throw_at : {40, static_cast<int>(PostgresStore::kPipelineDepth) + 20}) {
    SCOPED_TRACE("thrown at statement " + std::to_string(throw_at));
    const StoreBatch batch = puts_then_removes(records(2, 32), static_cast<int>(PostgresStore::kPipelineDepth) + 50);
    g_statements_until_throw = throw_at;
    EXPECT_THROW((void)store->write(batch), std::bad_alloc);
    EXPECT_EQ(sql_value("SELECT count(*) FROM records"), std::to_string(commit_seq)) << "none of the batch";
    EXPECT_EQ(sql_value("SELECT commit_seq FROM counters"), std::to_string(commit_seq));
    write(*store, records(static_cast<int>(commit_seq), 3), commit_seq + 3);
    commit_seq += 3;
    EXPECT_EQ(sql_value("SELECT count(*) FROM records"), std::to_string(commit_seq)) << "the next write, whole";
  }
}

// The same, when the session itself is gone by the time the half-sent batch is rolled back
// (the server restarted, or an administrator ended the session, while the batch was being
// made): the rollback cannot be sent, so the connection is given up as lost, the server
// rolls the transaction back as the session ends, and the next write connects again.
std::atomic<int> g_backend_to_end{0};

TEST_F(PostgresStoreTest, AWriteThatThrowsAfterItsSessionEnded_LeavesNoneOfIt_TheNextWriteConnectsAgainAndLands) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, records(0, 2), 2);
  const StatementHook hook([] {
    if (g_statements_until_throw.fetch_sub(1) != 1) return;
    (void)postgres_value(postgres_server_url(),
                         "SELECT pg_terminate_backend(" + std::to_string(g_backend_to_end.load()) + ", 5000)");
    throw std::bad_alloc();
  });
  const StoreBatch batch = puts_then_removes(records(2, 32), 100);
  g_backend_to_end = store->writer_backend_pid();
  g_statements_until_throw = 40;
  EXPECT_THROW((void)store->write(batch), std::bad_alloc);
  g_statements_until_throw = 0;  // the hook throws no more
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), "2") << "none of the batch";
  EXPECT_EQ(sql_value("SELECT commit_seq FROM counters"), "2");
  EXPECT_EQ(store->reconnects(), 0u);
  write(*store, records(2, 3), 5);
  EXPECT_EQ(store->reconnects(), 1u) << "the lost connection is made again by the next write";
  EXPECT_NE(store->writer_backend_pid(), g_backend_to_end.load());
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), "5") << "the next write, whole";
}

}  // namespace
}  // namespace flowrt
