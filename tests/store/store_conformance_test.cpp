// The store conformance suite: one set of tests that every Store implementation passes
// (store/store.h states the contract). Typed over MemoryStore, SqliteStore and
// PostgresStore; a store is "reopened" as its kind allows: the same object for memory, the
// file opened again (a new connection, after the old one is closed) for SQLite, the same
// database schema connected to again for PostgreSQL (a schema of its own per test, on the
// server of the CTest fixture `postgres`: tests/support/postgres_support.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plans/value_json.h"
#include <map>

#include "store/memory_store.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;


// How each implementation is made and opened again.
struct MemoryKind {
  static std::unique_ptr<Store> make(const std::string&) { return std::make_unique<MemoryStore>(); }
  // The memory store's state lives in the object: "reopening" hands the same one on.
  static std::unique_ptr<Store> reopen(std::unique_ptr<Store> store, const std::string&) { return store; }
};

struct SqliteKind {
  static std::unique_ptr<Store> make(const std::string& path) {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path, SyncMode::kOff);
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? std::unique_ptr<Store>(std::move(s).value()) : nullptr;
  }
  static std::unique_ptr<Store> reopen(std::unique_ptr<Store> store, const std::string& path) {
    store.reset();  // closes the file and lets go of its lock
    return make(path);
  }
};

struct PostgresKind {
  // The test's own schema, made at its first store (the fixture's path names the test).
  static std::map<std::string, std::string>& urls() {
    static std::map<std::string, std::string> by_path;
    return by_path;
  }
  static const std::string& url_of(const std::string& path) {
    auto it = urls().find(path);
    if (it == urls().end()) {
      it = urls().emplace(path, test_support::fresh_postgres_schema(path.substr(path.rfind('/') + 1))).first;
    }
    return it->second;
  }
  static std::unique_ptr<Store> make(const std::string& path) {
    const std::string& url = url_of(path);
    if (url.empty()) return nullptr;
    Result<std::unique_ptr<PostgresStore>> s = PostgresStore::open(url, SyncMode::kOff);
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? std::unique_ptr<Store>(std::move(s).value()) : nullptr;
  }
  static std::unique_ptr<Store> reopen(std::unique_ptr<Store> store, const std::string& path) {
    store.reset();  // closes both connections: the server lets go of the writer's lock
    return make(path);
  }
  // The test ended: its schema goes, and a test run again (--gtest_repeat) gets a new one.
  static void forget(const std::string& path) {
    auto it = urls().find(path);
    if (it == urls().end()) return;
    test_support::drop_postgres_schema(it->second);
    urls().erase(it);
  }
};

template <class Kind>
class StoreConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = test_support::temp_path("flowrt-store-" + name) + ".db";
    remove_files();
    store_ = Kind::make(path_);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    remove_files();
    if constexpr (requires { Kind::forget(path_); }) Kind::forget(path_);
  }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
  }
  void write(std::vector<StoreChange> changes, StoreCounters counters = {}) {
    StoreBatch batch;
    batch.changes = std::move(changes);
    batch.counters = counters;
    Status s = store_->write(batch);
    ASSERT_TRUE(s.is_ok()) << s.message();
  }
  // Opens the store again and loads it.
  StoredState reload() {
    store_ = Kind::reopen(std::move(store_), path_);
    EXPECT_NE(store_, nullptr);
    Result<StoredState> s = store_->load();
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? *s : StoredState{};
  }

  std::string path_;
  std::unique_ptr<Store> store_;
};

using Kinds = ::testing::Types<MemoryKind, SqliteKind, PostgresKind>;
class KindNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, MemoryKind> ? "Memory" : std::is_same_v<T, SqliteKind> ? "Sqlite" : "Postgres";
  }
};
TYPED_TEST_SUITE(StoreConformanceTest, Kinds, KindNames);

TYPED_TEST(StoreConformanceTest, ANewStore_LoadsFreshAndEmpty) {
  Result<StoredState> s = this->store_->load();
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(s->fresh);
  EXPECT_TRUE(s->tables.empty());
  EXPECT_TRUE(s->definitions.empty());
  EXPECT_TRUE(s->contexts.empty());
  EXPECT_TRUE(s->locks.empty());
  EXPECT_EQ(s->counters.commit_seq, 0u);
}

TYPED_TEST(StoreConformanceTest, Counters_ComeBackAsWritten_AndAnyBatchMakesItNotFresh) {
  StoreCounters k;
  k.commit_seq = 41;
  k.context_seq = 17;
  k.fencing_token = 9;
  k.sys_id_seed = 12345;
  k.sys_id_count = 77;
  k.clock = 1767225600123;
  this->write({}, k);
  StoredState s = this->reload();
  EXPECT_FALSE(s.fresh);
  EXPECT_EQ(s.counters.commit_seq, 41u);
  EXPECT_EQ(s.counters.context_seq, 17u);
  EXPECT_EQ(s.counters.fencing_token, 9);
  EXPECT_EQ(s.counters.sys_id_seed, 12345u);
  EXPECT_EQ(s.counters.sys_id_count, 77u);
  EXPECT_EQ(s.counters.clock, 1767225600123);
}

TYPED_TEST(StoreConformanceTest, Records_KeepInsertionOrderThroughUpdates_TablesInOrderFirstWritten) {
  this->write({RecordPut{"zeta", json(R"({"sys_id":"a","n":1})"), 1},
               RecordPut{"alpha", json(R"({"sys_id":"x","n":1})"), 2},
               RecordPut{"zeta", json(R"({"sys_id":"b","n":2})"), 3}});
  // An update keeps the record's place (it carries it); a remove and a new insert goes to the end.
  this->write({RecordPut{"zeta", json(R"({"sys_id":"a","n":10})"), 1}, RecordRemove{"alpha", "x", 2},
               RecordPut{"zeta", json(R"({"sys_id":"c","n":3})"), 6}});
  StoredState s = this->reload();
  ASSERT_EQ(s.tables.size(), 2u);
  EXPECT_EQ(s.tables[0].name, "zeta");
  EXPECT_EQ(s.tables[1].name, "alpha");  // emptied, still a table
  EXPECT_TRUE(s.tables[1].records.empty());
  ASSERT_EQ(s.tables[0].records.size(), 3u);
  EXPECT_EQ(s.tables[0].records[0].to_json(), R"({"sys_id":"a","n":10})");
  EXPECT_EQ(s.tables[0].records[1].to_json(), R"({"sys_id":"b","n":2})");
  EXPECT_EQ(s.tables[0].records[2].to_json(), R"({"sys_id":"c","n":3})");
  EXPECT_EQ(s.tables[0].positions, (std::vector<uint64_t>{1, 3, 6})) << "each record's position comes back";
}

TYPED_TEST(StoreConformanceTest, ChangesInOneBatch_ApplyInTheirOrder) {
  // Put, remove, put again in one batch: the last one stands, at its new place.
  this->write({RecordPut{"t", json(R"({"sys_id":"a","v":1})"), 1}, RecordPut{"t", json(R"({"sys_id":"b","v":1})"), 2},
               RecordRemove{"t", "a", 1}, RecordPut{"t", json(R"({"sys_id":"a","v":2})"), 4}});
  StoredState s = this->reload();
  ASSERT_EQ(s.tables.size(), 1u);
  ASSERT_EQ(s.tables[0].records.size(), 2u);
  EXPECT_EQ(s.tables[0].records[0].to_json(), R"({"sys_id":"b","v":1})");
  EXPECT_EQ(s.tables[0].records[1].to_json(), R"({"sys_id":"a","v":2})");
}

TYPED_TEST(StoreConformanceTest, Values_RoundTripExactly) {
  const std::string text =
      R"({"sys_id":"v","s":"tab\t nul\u0000 quote\" é 日本","i":-9007199254740993,"d":0.1,"b":true,"n":null,)"
      R"("a":[1,[2,[3]],{"k":"v"}],"o":{"z":1,"a":2}})";
  const Value v = json(text);
  this->write({RecordPut{"t", v, 1}});
  StoredState s = this->reload();
  ASSERT_EQ(s.tables.size(), 1u);
  ASSERT_EQ(s.tables[0].records.size(), 1u);
  EXPECT_EQ(s.tables[0].records[0].to_json(), v.to_json());
  EXPECT_EQ(s.tables[0].records[0]["s"].as_string(), v["s"].as_string());
}

TYPED_TEST(StoreConformanceTest, Definitions_ReplacedByAPut_ButAPutKeepsTheLastTick) {
  StoredDefinition d;
  d.type = "flow";
  d.id = "f";
  d.published = json(R"({"id":"f","version":1})");
  d.published_fingerprint = "0001";
  d.active = true;
  d.activated_at = 1000;
  this->write({DefinitionPut{d}, ScheduleTick{"f", 5000}});
  d.draft = json(R"({"id":"f","version":2})");
  d.active = false;
  this->write({DefinitionPut{d}});
  StoredDefinition sub;
  sub.type = "subflow";
  sub.id = "s";
  sub.draft = json(R"({"id":"s"})");
  this->write({DefinitionPut{sub}});
  StoredState s = this->reload();
  ASSERT_EQ(s.definitions.size(), 2u);
  const StoredDefinition& f = s.definitions[0].type == "flow" ? s.definitions[0] : s.definitions[1];
  const StoredDefinition& g = s.definitions[0].type == "flow" ? s.definitions[1] : s.definitions[0];
  EXPECT_EQ(f.id, "f");
  EXPECT_EQ(f.published.to_json(), R"({"id":"f","version":1})");
  EXPECT_EQ(f.draft.to_json(), R"({"id":"f","version":2})");
  EXPECT_EQ(f.published_fingerprint, "0001");
  EXPECT_FALSE(f.active);
  EXPECT_EQ(f.activated_at, 1000);
  EXPECT_EQ(f.last_tick, 5000);
  EXPECT_EQ(g.id, "s");
  EXPECT_TRUE(g.published.is_null());
  EXPECT_EQ(g.last_tick, -1);
}

TYPED_TEST(StoreConformanceTest, Contexts_QueuedThenUpdated_ComeBackBySeq) {
  StoredContext c;
  c.seq = 2;
  c.id = "ctx-2";
  c.flow = "f";
  c.status = std::string(kQueuedStatus);
  c.commit_seq = 5;
  c.trigger = json(R"({"type":"event","time":0,"name":"go","payload":{"n":1}})");
  c.cause = json(R"({"context":"ctx-1","flow":"g","chain":["g"]})");
  c.run_key = Value(std::string_view("t\0a", 3));
  StoredContext first = c;
  first.seq = 1;
  first.id = "ctx-1";
  this->write({ContextPut{c}, ContextPut{first}});
  this->write({ContextUpdate{1, "in_progress", 100, -1, Value(), Value()}});
  this->write({ContextUpdate{1, "completed", -1, 200, json(R"({"id":"ctx-1","status":"completed"})"), Value()}});
  StoredState s = this->reload();
  // load() gives what has not ended; the ended one is history, read when asked.
  ASSERT_EQ(s.contexts.size(), 1u);
  Result<std::vector<StoredContext>> listed = this->store_->list_contexts(ContextQuery{});
  ASSERT_TRUE(listed.is_ok()) << listed.message();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].seq, 1u);
  EXPECT_EQ((*listed)[1].seq, 2u);
  Result<std::optional<StoredContext>> one = this->store_->load_context(1);
  ASSERT_TRUE(one.is_ok()) << one.message();
  ASSERT_TRUE(one->has_value());
  const StoredContext& e = **one;
  EXPECT_EQ(e.seq, 1u);
  EXPECT_EQ(e.id, "ctx-1");
  EXPECT_EQ(e.status, "completed");
  EXPECT_EQ(e.started, 100);
  EXPECT_EQ(e.ended, 200);
  EXPECT_EQ(e.record.value().to_json(), R"({"id":"ctx-1","status":"completed"})");
  EXPECT_EQ(e.trigger.to_json(), c.trigger.to_json()) << "an event's trigger keeps its payload";
  const StoredContext& q = s.contexts[0];
  EXPECT_EQ(q.id, "ctx-2");
  EXPECT_EQ(q.status, kQueuedStatus);
  EXPECT_EQ(q.commit_seq, 5u);
  EXPECT_EQ(q.trigger.to_json(), c.trigger.to_json());
  EXPECT_EQ(q.cause.to_json(), c.cause.to_json());
  EXPECT_EQ(q.run_key.as_string(), std::string_view("t\0a", 3));
  EXPECT_TRUE(q.inputs.is_null());
  EXPECT_TRUE(q.record.is_null());
  EXPECT_EQ(q.started, -1);
}

TYPED_TEST(StoreConformanceTest, Contexts_PutAsEnded_KeepTheirTriggerWithoutTheRecordsCopies) {
  StoredContext c;
  c.seq = 7;
  c.id = "ctx-7";
  c.flow = "f";
  c.status = "completed";
  c.commit_seq = 3;
  c.trigger = json(R"({"type":"record","time":5,"table":"t","operation":"update","sys_id":"r1",)"
                   R"("record":{"sys_id":"r1","n":2},"previous":{"sys_id":"r1","n":1}})");
  c.started = 10;
  c.ended = 20;
  c.record = json(R"({"id":"ctx-7","status":"completed"})");
  // An ended context still without its record stays loaded, its trigger whole.
  StoredContext unrecorded = c;
  unrecorded.seq = 8;
  unrecorded.id = "ctx-8";
  unrecorded.status = "error";
  unrecorded.record = Value();
  this->write({ContextPut{c}, ContextPut{unrecorded}});
  StoredState s = this->reload();
  ASSERT_EQ(s.contexts.size(), 1u);
  EXPECT_EQ(s.contexts[0].seq, 8u);
  EXPECT_EQ(s.contexts[0].trigger.to_json(), unrecorded.trigger.to_json());
  Result<std::optional<StoredContext>> one = this->store_->load_context(7);
  ASSERT_TRUE(one.is_ok()) << one.message();
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->trigger.to_json(), R"({"type":"record","time":5,"table":"t","operation":"update","sys_id":"r1"})");
  EXPECT_EQ((*one)->record.value().to_json(), c.record.value().to_json());
  EXPECT_EQ((*one)->started, 10);
  EXPECT_EQ((*one)->ended, 20);
  // Its record arrives: it joins the history, the trigger without its values.
  this->write({ContextUpdate{8, "error", -1, -1, json(R"({"id":"ctx-8","status":"error"})"), Value()}});
  StoredState after = this->reload();
  EXPECT_TRUE(after.contexts.empty());
  Result<std::optional<StoredContext>> eight = this->store_->load_context(8);
  ASSERT_TRUE(eight.is_ok() && eight->has_value());
  EXPECT_EQ((*eight)->status, "error");
  EXPECT_EQ((*eight)->trigger.to_json(), R"({"type":"record","time":5,"table":"t","operation":"update","sys_id":"r1"})");
  // A record written again for an ended context replaces the one it had.
  this->write({ContextUpdate{7, "completed", -1, -1, json(R"({"id":"ctx-7","status":"completed","again":true})"), Value()}});
  Result<std::optional<StoredContext>> seven = this->store_->load_context(7);
  ASSERT_TRUE(seven.is_ok() && seven->has_value());
  EXPECT_EQ((*seven)->record.value().to_json(), R"({"id":"ctx-7","status":"completed","again":true})");
  EXPECT_EQ((*seven)->started, 10);
}

// Contexts for the history tests: seq 1..n, flow "a" for odd seqs and "b" for even ones;
// every third (seq % 3 == 0) still waiting, the others ended at 1000 * seq.
std::vector<StoreChange> history_rows(uint64_t n) {
  std::vector<StoreChange> out;
  for (uint64_t seq = 1; seq <= n; ++seq) {
    StoredContext c;
    c.seq = seq;
    c.id = "ctx-" + std::to_string(seq);
    c.flow = seq % 2 ? "a" : "b";
    c.status = std::string(kQueuedStatus);
    c.commit_seq = seq;
    c.trigger = json(R"({"type":"event","time":0,"name":"go"})");
    out.push_back(ContextPut{c});
    out.push_back(ContextUpdate{seq, "in_progress", 10, -1, Value(), Value()});
    if (seq % 3 == 0) {
      out.push_back(ContextUpdate{seq, "waiting", -1, -1, json(R"({"id":")" + c.id + R"(","status":"waiting"})"), Value()});
    } else {
      const std::string status = seq % 5 == 0 ? "error" : "completed";
      out.push_back(ContextUpdate{seq, status, -1, static_cast<TimeMs>(1000 * seq),
                                  json(R"({"id":")" + c.id + R"(","status":")" + status + R"("})"), Value()});
    }
  }
  return out;
}

template <class StoreT>
std::vector<uint64_t> listed_seqs(StoreT& store, ContextQuery q) {
  std::vector<uint64_t> out;
  while (true) {
    Result<std::vector<StoredContext>> page = store.list_contexts(q);
    EXPECT_TRUE(page.is_ok()) << (page ? "" : page.message());
    if (!page || page->empty()) return out;
    EXPECT_LE(page->size(), q.limit);
    for (const StoredContext& c : *page) out.push_back(c.seq);
    q.after_seq = page->back().seq;
  }
}

TYPED_TEST(StoreConformanceTest, History_IsNotLoaded_ButListedByFlowAndStatus_InPagesInSeqOrder) {
  this->write(history_rows(12));
  StoredState s = this->reload();
  std::vector<uint64_t> loaded;
  for (const StoredContext& c : s.contexts) loaded.push_back(c.seq);
  EXPECT_EQ(loaded, (std::vector<uint64_t>{3, 6, 9, 12})) << "only the contexts that have not ended";

  ContextQuery all;
  all.limit = 5;
  EXPECT_EQ(listed_seqs(*this->store_, all), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  ContextQuery ended;
  ended.ended_only = true;
  ended.limit = 2;
  EXPECT_EQ(listed_seqs(*this->store_, ended), (std::vector<uint64_t>{1, 2, 4, 5, 7, 8, 10, 11}));
  ContextQuery of_a = ended;
  of_a.flow = "a";
  EXPECT_EQ(listed_seqs(*this->store_, of_a), (std::vector<uint64_t>{1, 5, 7, 11}));
  ContextQuery errors;
  errors.status = "error";
  EXPECT_EQ(listed_seqs(*this->store_, errors), (std::vector<uint64_t>{5, 10}));
  ContextQuery waiting_b;
  waiting_b.flow = "b";
  waiting_b.status = "waiting";
  EXPECT_EQ(listed_seqs(*this->store_, waiting_b), (std::vector<uint64_t>{6, 12}));
  // What load() gives, a page at a time (recovery reads them so), up to a seq.
  ContextQuery live;
  live.loaded_only = true;
  live.limit = 3;
  EXPECT_EQ(listed_seqs(*this->store_, live), (std::vector<uint64_t>{3, 6, 9, 12}));
  live.up_to_seq = 8;
  EXPECT_EQ(listed_seqs(*this->store_, live), (std::vector<uint64_t>{3, 6}));
  ContextQuery all_up_to = all;
  all_up_to.up_to_seq = 4;
  EXPECT_EQ(listed_seqs(*this->store_, all_up_to), (std::vector<uint64_t>{1, 2, 3, 4}));
  Result<StoredState> without = this->store_->load(/*with_contexts=*/false);
  ASSERT_TRUE(without.is_ok()) << without.message();
  EXPECT_TRUE(without->contexts.empty());

  Result<std::optional<StoredContext>> one = this->store_->load_context(10);
  ASSERT_TRUE(one.is_ok()) << one.message();
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->status, "error");
  EXPECT_EQ((*one)->flow, "b");
  EXPECT_EQ((*one)->ended, 10000);
  EXPECT_EQ((*one)->record.value()["status"], Value("error"));
  Result<std::optional<StoredContext>> none = this->store_->load_context(13);
  ASSERT_TRUE(none.is_ok()) << none.message();
  EXPECT_FALSE(none->has_value());
}

// Recovery's reads leave out the record of a context whose checkpoint holds it; every other
// column, and the record of a context without a checkpoint, comes as always.
TYPED_TEST(StoreConformanceTest, Contexts_ListedWithoutTheRecordsOfCheckpointed_KeepEverythingElse) {
  StoredContext c;
  c.id = "ctx-1";
  c.seq = 1;
  c.flow = "f";
  c.status = std::string(kQueuedStatus);
  c.commit_seq = 1;
  c.trigger = json(R"({"type":"event","time":0,"name":"go","payload":{}})");
  StoredContext plain = c;
  plain.seq = 2;
  plain.id = "ctx-2";
  this->write({ContextPut{c}, ContextPut{plain}});
  this->write({ContextUpdate{1, "waiting", 100, -1, json(R"({"id":"ctx-1","steps":[1]})"), json(R"({"exec":{"pc":3}})")},
               ContextUpdate{2, "in_progress", 100, -1, json(R"({"id":"ctx-2","steps":[]})"), Value()}});
  ContextQuery q;
  q.loaded_only = true;
  q.records_of_checkpointed = false;
  Result<std::vector<StoredContext>> listed = this->store_->list_contexts(q);
  ASSERT_TRUE(listed.is_ok()) << listed.message();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_TRUE((*listed)[0].record.is_null()) << (*listed)[0].record.value().to_json();
  EXPECT_EQ((*listed)[0].checkpoint.to_json(), R"({"exec":{"pc":3}})");
  EXPECT_EQ((*listed)[0].trigger.to_json(), c.trigger.to_json());
  EXPECT_EQ((*listed)[0].status, "waiting");
  EXPECT_EQ((*listed)[1].record.value().to_json(), R"({"id":"ctx-2","steps":[]})") << "no checkpoint: its record comes";
  q.records_of_checkpointed = true;
  listed = this->store_->list_contexts(q);
  ASSERT_TRUE(listed.is_ok()) << listed.message();
  EXPECT_EQ((*listed)[0].record.value().to_json(), R"({"id":"ctx-1","steps":[1]})");
  Result<std::optional<StoredContext>> whole = this->store_->load_context(1);
  ASSERT_TRUE(whole.is_ok() && whole->has_value());
  EXPECT_EQ((*whole)->record.value().to_json(), R"({"id":"ctx-1","steps":[1]})");
}

TYPED_TEST(StoreConformanceTest, HistoryPrune_ByAge_DeletesWhatEndedBefore_NeverWhatHasNotEnded) {
  this->write(history_rows(12));
  // Ended at 1000 * seq: before 7500 are seqs 1, 2, 4, 5, 7.
  this->write({HistoryPrune{7500, 0}});
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{3, 6, 8, 9, 10, 11, 12}));
  Result<std::optional<StoredContext>> gone = this->store_->load_context(7);
  ASSERT_TRUE(gone.is_ok());
  EXPECT_FALSE(gone->has_value());
  // Far in the future: every ended one goes, every waiting one stays.
  this->write({HistoryPrune{1000000, 0}});
  StoredState s = this->reload();
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{3, 6, 9, 12}));
  EXPECT_EQ(s.contexts.size(), 4u);
}

TYPED_TEST(StoreConformanceTest, HistoryPrune_ByCount_KeepsTheNewestEnded_AlsoAsMoreEnd) {
  this->write(history_rows(12));  // ended: 1 2 4 5 7 8 10 11
  this->write({HistoryPrune{-1, 3}});
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{3, 6, 8, 9, 10, 11, 12}));
  // Two waiting ones end, and the count goes on from there (in one batch with the prune):
  // ended now 3 8 10 11 12, of which the three with the highest seqs stay.
  this->write({ContextUpdate{3, "completed", -1, 50, json(R"({"id":"ctx-3"})"), Value()},
               ContextUpdate{12, "cancelled", -1, 60, json(R"({"id":"ctx-12"})"), Value()}, HistoryPrune{-1, 3}});
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{6, 9, 10, 11, 12}));
  // After a reopen (a new writer counts afresh), and with a record rewritten after it ended.
  StoredState s = this->reload();
  this->write({ContextUpdate{11, "completed", -1, -1, json(R"({"id":"ctx-11","again":true})"), Value()}, HistoryPrune{-1, 1}});
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{6, 9, 12}));
  this->write({HistoryPrune{-1, 1}});
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{6, 9, 12}));
  // A context that started and ended within one batch comes as one put with a final status.
  StoredContext quick;
  quick.seq = 13;
  quick.id = "ctx-13";
  quick.flow = "a";
  quick.status = "completed";
  quick.ended = 70;
  quick.record = json(R"({"id":"ctx-13"})");
  this->write({ContextPut{quick}, HistoryPrune{-1, 1}});
  EXPECT_EQ(listed_seqs(*this->store_, ContextQuery{}), (std::vector<uint64_t>{6, 9, 13}));
}

TYPED_TEST(StoreConformanceTest, Locks_PutReplacesAndANullStateForgets) {
  this->write({LockPut{"a", json(R"({"name":"a","held":1})")}, LockPut{"b", json(R"({"name":"b","held":1})")}});
  this->write({LockPut{"a", json(R"({"name":"a","held":2})")}, LockPut{"b", Value()}});
  StoredState s = this->reload();
  ASSERT_EQ(s.locks.size(), 1u);
  EXPECT_EQ(s.locks[0].name, "a");
  EXPECT_EQ(s.locks[0].state.to_json(), R"({"name":"a","held":2})");
}

TYPED_TEST(StoreConformanceTest, RunOnce_MarksAddRemoveAndClearPerRecord) {
  this->write({RunOncePut{"t", "r1", "f", true}, RunOncePut{"t", "r1", "g", true}, RunOncePut{"t", "r2", "f", true},
               RunOncePut{"t", "r2", "g", true}});
  this->write({RunOncePut{"t", "r1", "", false},      // a delete of r1 forgets every flow
               RunOncePut{"t", "r2", "g", false}});   // one flow's mark
  StoredState s = this->reload();
  ASSERT_EQ(s.run_once.size(), 1u);
  EXPECT_EQ(s.run_once[0].table, "t");
  EXPECT_EQ(s.run_once[0].sys_id, "r2");
  EXPECT_EQ(s.run_once[0].flow, "f");
  EXPECT_TRUE(s.run_once[0].ran);
}

TYPED_TEST(StoreConformanceTest, RecoveryNotes_AccumulateOldestFirst) {
  this->write({RecoveryNote{10, json(R"({"n":1})")}});
  this->write({RecoveryNote{20, json(R"({"n":2})")}});
  StoredState s = this->reload();
  ASSERT_EQ(s.recoveries.size(), 2u);
  EXPECT_EQ(s.recoveries[0].at, 10);
  EXPECT_EQ(s.recoveries[1].report.to_json(), R"({"n":2})");
}

TYPED_TEST(StoreConformanceTest, KeyedWrites_AreReplacedPerCallerAndKey_AndPrunedByTime) {
  const std::string body = "{\"sys_id\":\"r1\",\"note\":\"caf\xC3\xA9\"}";
  this->write({KeyedWritePut{"ci", "k1", "req-1", 0, "", "", 100},       // applied, not answered yet
               KeyedWritePut{"ci", "k2", "req-2", 400, "application/json", "{}", 50},
               KeyedWritePut{"ops", "k1", "req-3", 201, "application/json", "{}", 300}});
  this->write({KeyedWritePut{"ci", "k1", "req-1", 201, R"({"Content-Type":"application/json"})", body, 150},  // now answered
               KeyedWritePrune{120}});                                                    // forgets ci/k2 only
  StoredState s = this->reload();
  ASSERT_EQ(s.keyed_writes.size(), 2u);
  const KeyedWritePut& a = s.keyed_writes[0];  // by (caller, key)
  EXPECT_EQ(a.caller, "ci");
  EXPECT_EQ(a.key, "k1");
  EXPECT_EQ(a.request, "req-1");
  EXPECT_EQ(a.status, 201);
  EXPECT_EQ(a.headers, R"({"Content-Type":"application/json"})");
  EXPECT_EQ(a.body, body);
  EXPECT_EQ(a.at, 150);
  EXPECT_EQ(s.keyed_writes[1].caller, "ops");
  EXPECT_EQ(s.keyed_writes[1].key, "k1");
  EXPECT_EQ(s.keyed_writes[1].status, 201);
}

TYPED_TEST(StoreConformanceTest, ManyBatches_AllComeBack) {
  for (int b = 0; b < 50; ++b) {
    std::vector<StoreChange> changes;
    for (int i = 0; i < 20; ++i) {
      const int n = b * 20 + i;
      changes.push_back(RecordPut{"t", json(R"({"sys_id":"r)" + std::to_string(n) + R"(","n":)" + std::to_string(n) + "}"),
                                  static_cast<uint64_t>(n + 1)});
    }
    StoreCounters k;
    k.commit_seq = static_cast<uint64_t>((b + 1) * 20);
    this->write(std::move(changes), k);
  }
  StoredState s = this->reload();
  ASSERT_EQ(s.tables.size(), 1u);
  ASSERT_EQ(s.tables[0].records.size(), 1000u);
  for (int n = 0; n < 1000; ++n) ASSERT_EQ(s.tables[0].records[static_cast<size_t>(n)]["n"].as_int(), n);
  EXPECT_EQ(s.counters.commit_seq, 1000u);
}

TYPED_TEST(StoreConformanceTest, SyncModes_CanBeSetAtAnyTime) {
  uint64_t position = 0;
  for (SyncMode m : {SyncMode::kFull, SyncMode::kNormal, SyncMode::kOff}) {
    Status st = this->store_->set_sync_mode(m);
    EXPECT_TRUE(st.is_ok()) << st.message();
    this->write({RecordPut{"t", json(R"({"sys_id":")" + std::string(sync_mode_name(m)) + R"("})"), ++position}});
  }
  StoredState s = this->reload();
  ASSERT_EQ(s.tables.size(), 1u);
  EXPECT_EQ(s.tables[0].records.size(), 3u);
}

}  // namespace
}  // namespace flowrt
