// An engine on a durable store, stopped and opened again on the same file (or PostgreSQL
// schema): what is durable comes back (docs/DURABILITY.md names these tests). The tests of
// DurableEngineStoresTest run on both durable stores; DurableEngineTest's on SQLite only
// (its file's lock, the file read directly). Deterministic: engines run in
// simulation (no worker threads; contexts run only inside settle and advance, on this
// thread), so a context queued when the engine stops has not started, and one that parked
// stays parked.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/keyed_writes.h"
#include "runtime/perturb.h"
#include "store/sqlite_store.h"
#include "tests/support/engine_support.h"
#include "tests/support/postgres_support.h"
#include "tests/store/durable_engine_fixture.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;
using namespace flowrt::durable_engine_fixture;

INSTANTIATE_TEST_SUITE_P(Stores, DurableEngineStoresTest, ::testing::Values("Sqlite", "Postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(DurableEngineStoresTest, RecordsContextsAndCounters_ComeBackInTheNextEngine) {
  Engine& first = reopen({kCopy});
  Result<Value> a = first.insert("order", json(R"({"sys_id": "o1", "item": "laptop"})"));
  ASSERT_TRUE(a.is_ok()) << a.message();
  ASSERT_TRUE(first.insert("order", json(R"({"item": "chair"})")).is_ok());
  ASSERT_TRUE(first.update("order", "o1", json(R"({"item": "desk"})")).is_ok());
  first.settle();
  const std::vector<Value> shipments = first.records("shipment");
  ASSERT_EQ(shipments.size(), 2u);
  const uint64_t commits = first.stats().commits;

  Engine& second = reopen({kCopy});
  EXPECT_TRUE(report_.is_null()) << "nothing was left to recover: " << report_.to_json();
  EXPECT_EQ(second.tables(), (std::vector<std::string>{"order", "shipment"}));
  EXPECT_EQ(second.record("order", "o1")["item"], Value("desk"));
  EXPECT_EQ(second.record("order", "o1")["sys_mod_count"], Value(1));
  ASSERT_EQ(second.records("shipment").size(), 2u);
  EXPECT_EQ(second.records("shipment")[0].to_json(), shipments[0].to_json());
  std::vector<ContextRecord> contexts = second.contexts();
  ASSERT_EQ(contexts.size(), 2u);
  EXPECT_EQ(contexts[0].id(), "ctx-1");
  EXPECT_EQ(contexts[0].status(), "completed");
  ASSERT_TRUE(second.context("ctx-2").has_value());
  // Counters go on: the next context is ctx-3, the next commit follows the last one, and a
  // generated sys_id is none of the stored ones.
  Result<Value> c = second.insert("order", json(R"({"item": "lamp"})"));
  ASSERT_TRUE(c.is_ok());
  second.settle();
  EXPECT_EQ(second.stats().commits, commits + 2);  // the insert and its context's insert
  ASSERT_EQ(second.contexts().size(), 3u);
  EXPECT_EQ(second.contexts().back().id(), "ctx-3");
  std::vector<std::string> ids;
  for (const std::string t : {"order", "shipment"}) {
    for (const Value& r : second.records(t)) ids.emplace_back(r["sys_id"].as_string());
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "a sys_id was given twice";
}

// A C++ caller's value whose bytes are not UTF-8 (JSON text, the events file and the API
// cannot hold such a string; the library API can): the store keeps it as JSON, each such
// byte as U+FFFD, and the next engine reads it back. Until 2026-12-07 the bytes went into
// the stored JSON as they were: a sqlite file whose record the next engine could not parse,
// and a PostgreSQL batch the server refused.
TEST_P(DurableEngineStoresTest, AValueWhoseBytesAreNotUtf8_IsKeptAsU_FFFD_ANameMadeOfItIsRefused) {
  Engine& first = reopen({kCopy});
  const Value values = Value::object({{"sys_id", Value("o1")}, {"item", Value(std::string_view("caf\xE9"))},
                                      {std::string_view("n\xFFte"), Value("x")}});
  Result<Value> inserted = first.insert("order", values);
  ASSERT_TRUE(inserted.is_ok()) << inserted.message();
  first.settle();
  Engine& second = reopen({kCopy});
  const Value stored = second.record("order", "o1");
  EXPECT_EQ(stored["item"], Value("caf\xEF\xBF\xBD")) << stored.to_json();
  EXPECT_EQ(stored["n\xEF\xBF\xBDte"], Value("x")) << stored.to_json();
  EXPECT_TRUE(second.insert("order", json(R"({"sys_id": "o2", "item": "desk"})")).is_ok())
      << "the store still takes writes";
  // A table name or a sys_id, which the stores keep as text, is refused when it is not
  // UTF-8, and nothing is written.
  Result<Value> bad_table = second.insert(std::string_view("t\xFF"), json(R"({"sys_id": "o3"})"));
  ASSERT_FALSE(bad_table.is_ok());
  EXPECT_EQ(bad_table.message(), "a table name must be UTF-8");
  Result<Value> bad_id = second.insert("order", Value::object({{"sys_id", Value(std::string_view("o\xFF"))}}));
  ASSERT_FALSE(bad_id.is_ok());
  EXPECT_EQ(bad_id.message(), "sys_id must be UTF-8");
  EXPECT_EQ(second.records("order").size(), 2u);
  // A lock named by such a value: the lock step fails, saying why, and the store goes on.
  constexpr const char* kLockByName = R"({"id": "lock_by_name", "trigger": {"type": "record", "table": "job",
    "when": "created"}, "actions": [{"action": "lock", "inputs": {"key": "{{trigger.record.name}}"}},
    {"action": "unlock", "inputs": {"key": "{{trigger.record.name}}"}}]})";
  Engine& third = reopen({kCopy, kLockByName});
  EXPECT_EQ(third.records("order").size(), 2u);
  ASSERT_TRUE(third.insert("job", Value::object({{"sys_id", Value("j1")}, {"name", Value(std::string_view("n\xFF"))}}))
                  .is_ok());
  third.settle();
  std::optional<ContextRecord> locked = std::nullopt;
  for (const ContextRecord& c : third.contexts()) {
    if (c.value()["flow"] == Value("lock_by_name")) locked = c;
  }
  ASSERT_TRUE(locked.has_value());
  EXPECT_EQ(locked->status(), "error") << locked->value().to_json();
  EXPECT_NE(locked->value().to_json().find("input 'key' must be UTF-8"), std::string::npos) << locked->value().to_json();
  EXPECT_EQ(third.locks().size(), 0u) << third.locks().to_json();
  EXPECT_TRUE(third.insert("order", json(R"({"sys_id": "o4"})")).is_ok()) << "the store still takes writes";
}

TEST_P(DurableEngineStoresTest, Definitions_DraftsPublishedVersionsAndLifecycle_ComeBack) {
  Engine& first = reopen({kCopy});
  ASSERT_TRUE(first.save(json(R"({"id": "later", "status": "draft", "trigger": {"type": "api"},
    "actions": [{"action": "log", "inputs": {"message": "hi"}}]})")).is_ok());
  ASSERT_TRUE(first.deactivate("copy").is_ok());

  // No definition is loaded this time: all of them come from the store.
  Engine& second = reopen({});
  ASSERT_TRUE(second.insert("order", json(R"({"item": "x"})")).is_ok());
  second.settle();
  EXPECT_TRUE(second.contexts().empty()) << "copy was deactivated and stays so";
  ASSERT_TRUE(second.publish("later").is_ok()) << "the draft came back";
  ASSERT_TRUE(second.activate("later").is_ok());
  ASSERT_TRUE(second.activate("copy").is_ok());

  Engine& third = reopen({});
  EXPECT_EQ(report_["activated"].to_json(), R"(["copy","later"])");
  ASSERT_TRUE(third.insert("order", json(R"({"item": "y"})")).is_ok());
  Result<std::string> later = third.call_flow("later");
  EXPECT_TRUE(later.is_ok()) << later.message();
  third.settle();
  EXPECT_EQ(third.contexts("copy").size(), 1u);
  EXPECT_EQ(third.contexts("later").size(), 1u);
}

// A draft saved beside a loaded flow (as flowrt serve's PUT does beside a file in flows/)
// stays a draft over restarts that load the same file, and over a restart that loads
// nothing; a draft that does not compile stops neither. Until 2026-12-06 the load's (and a
// restart's) activation published the draft, so it ran unpublished and was gone after the
// next load; and a broken one made the load, and so the start, fail.
TEST_P(DurableEngineStoresTest, ADraftBesideALoadedOrActiveFlow_StaysADraft_OverRestarts_EvenWhenItDoesNotCompile) {
  constexpr const char* kGreet = R"({"id": "greet", "trigger": {"type": "api"},
    "actions": [{"action": "log", "inputs": {"message": "published"}}]})";
  Engine& first = reopen({kGreet, kCopy});
  ASSERT_TRUE(first.save(json(R"({"id": "greet", "trigger": {"type": "api"},
    "actions": [{"action": "log", "inputs": {"message": "draft"}}]})")).is_ok());
  ASSERT_TRUE(first.save(json(R"({"id": "copy", "trigger": {"type": "record", "table": "order", "when": "created"},
    "actions": [{"action": "bogus"}]})")).is_ok()) << "a draft is not compiled when saved";
  auto expect_drafts_kept = [&](Engine& e, const std::string& when) {
    Result<std::string> id = e.call_flow("greet");
    ASSERT_TRUE(id.is_ok()) << when << ": " << id.message();
    ASSERT_TRUE(e.insert("order", json(R"({"item": "x"})")).is_ok()) << when;
    e.settle();
    EXPECT_EQ(e.context(*id)->log_messages(), std::vector<std::string>{"published"}) << when;
    EXPECT_EQ(e.contexts("copy").back().status(), "completed") << when << ": the published copy runs";
    for (const char* flow : {"greet", "copy"}) {
      const std::vector<Definition> all = e.core().flows.all_definitions();
      EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const Definition& d) {
        return d.id == flow && d.status == DefinitionStatus::kDraft;
      })) << when << ": " << flow << "'s draft is kept";
    }
  };
  expect_drafts_kept(first, "before any restart");
  for (int i = 1; i <= 2; ++i) {
    Engine& again = reopen({kGreet, kCopy});
    expect_drafts_kept(again, "after load " + std::to_string(i));
  }
  Engine& bare = reopen({});
  EXPECT_FALSE(report_.to_json().find("cannot be activated") != std::string::npos) << report_.to_json();
  expect_drafts_kept(bare, "after a restart that loads nothing");
  ASSERT_TRUE(bare.publish("greet").is_ok()) << "publishing is still the way to make it run";
  Result<std::string> id = bare.call_flow("greet");
  ASSERT_TRUE(id.is_ok());
  bare.settle();
  EXPECT_EQ(bare.context(*id)->log_messages(), std::vector<std::string>{"draft"});
}

TEST_P(DurableEngineStoresTest, TheVirtualClock_GoesOnFromWhereItStood_StartTimeAppliesToANewFileOnly) {
  EngineOptions o = options();
  o.start_time = 1767225600000;  // 2026-01-01
  Engine& first = reopen({}, o);
  EXPECT_EQ(first.now(), 1767225600000);
  ASSERT_TRUE(first.advance(3 * 3600 * 1000).is_ok());

  o.start_time = 1800000000000;  // ignored: the file has a clock
  Engine& second = reopen({}, o);
  EXPECT_EQ(second.now(), 1767225600000 + 3 * 3600 * 1000);
}

TEST_P(DurableEngineStoresTest, AQueuedTriggerEvent_StartsInTheNextEngine_ExactlyOnce) {
  Engine& first = reopen({kCopy});
  ASSERT_TRUE(first.insert("order", json(R"({"sys_id": "o1"})")).is_ok());
  ASSERT_TRUE(first.insert("order", json(R"({"sys_id": "o2"})")).is_ok());
  // No settle: in a simulation nothing runs outside settle and advance, so both are queued.
  ASSERT_EQ(first.contexts().size(), 2u);
  EXPECT_EQ(first.contexts()[0].value()["started_at"], Value());

  Engine& second = reopen({kCopy});
  ASSERT_EQ(report_["started"].size(), 2u) << report_.to_json();
  EXPECT_EQ(report_["started"].at(0), Value("ctx-1"));
  second.settle();
  std::vector<ContextRecord> contexts = second.contexts();
  ASSERT_EQ(contexts.size(), 2u);
  for (const ContextRecord& c : contexts) EXPECT_EQ(c.status(), "completed") << c.id();
  std::vector<Value> shipments = second.records("shipment");
  ASSERT_EQ(shipments.size(), 2u);
  EXPECT_EQ(shipments[0]["order"], Value("o1"));
  EXPECT_EQ(shipments[1]["order"], Value("o2"));

  // Started once: the next engine finds them ended, nothing queued.
  Engine& third = reopen({kCopy});
  EXPECT_TRUE(report_.is_null()) << report_.to_json();
  third.settle();
  EXPECT_EQ(third.records("shipment").size(), 2u);
}

TEST_P(DurableEngineStoresTest, RunOnce_IsRememberedAcrossEngines) {
  constexpr const char* kOnce = R"({"id": "once", "trigger": {"type": "record", "table": "t", "when": "updated",
    "run": "once"}, "actions": [{"action": "log", "inputs": {"message": "ran"}}]})";
  Engine& first = reopen({kOnce});
  ASSERT_TRUE(first.insert("t", json(R"({"sys_id": "r", "n": 0})")).is_ok());
  ASSERT_TRUE(first.update("t", "r", json(R"({"n": 1})")).is_ok());
  first.settle();
  ASSERT_EQ(first.contexts().size(), 1u);

  Engine& second = reopen({kOnce});
  ASSERT_TRUE(second.update("t", "r", json(R"({"n": 2})")).is_ok());
  second.settle();
  EXPECT_EQ(second.contexts().size(), 1u) << "once means once, also after a restart";
  ASSERT_EQ(second.skipped().size(), 1u);
  EXPECT_EQ(second.skipped()[0]["reason"], Value("run_once"));
}

// A context's run_key is stored as text: it stays valid UTF-8 whatever the table's name
// (its length is written in digits). A table name of 128 bytes once made its length a
// byte that is not UTF-8, and the next engine found the row damaged.
TEST_P(DurableEngineStoresTest, ARunningContextOfALongTablesRunOption_ComesBackInTheNextEngine) {
  const std::string table(128, 't');
  const std::string flow = R"({"id": "always", "trigger": {"type": "record", "table": ")" + table +
                           R"(", "when": "updated", "run": "always"}, "actions": [
    {"action": "wait", "inputs": {"duration": "1h"}}]})";
  Engine& first = reopen({flow.c_str()});
  ASSERT_TRUE(first.insert(table, json(R"({"sys_id": "r"})")).is_ok());
  ASSERT_TRUE(first.update(table, "r", json(R"({"n": 1})")).is_ok());
  first.settle(0);
  ASSERT_EQ(first.contexts().size(), 1u);

  Engine& second = reopen({flow.c_str()});
  EXPECT_EQ(report_["problems"].size(), 0u) << report_.to_json();
  ASSERT_EQ(report_["resumed"].size(), 1u) << report_.to_json();
  ASSERT_TRUE(second.update(table, "r", json(R"({"n": 2})")).is_ok());
  second.settle(0);
  ASSERT_EQ(second.skipped().size(), 1u) << "still running: run always skips";
  EXPECT_EQ(second.skipped()[0]["reason"], Value("already_running"));
  second.settle();
  EXPECT_EQ(second.contexts()[0].status(), "completed");
}

TEST_F(DurableEngineTest, AFileInUse_IsRefusedNamingIt_AndAnEngineOnItRefusesOperations) {
  Engine& first = reopen({});
  (void)first;
  Result<std::unique_ptr<Engine>> second = Engine::open(options());
  ASSERT_FALSE(second.is_ok());
  EXPECT_NE(second.message().find(path_), std::string::npos) << second.message();
  EXPECT_NE(second.message().find("in use"), std::string::npos) << second.message();
  // Built with the constructor instead, it refuses every operation with that error.
  Engine third(options());
  Result<Value> refused = third.insert("t", json("{}"));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("in use"), std::string::npos) << refused.message();
  EXPECT_FALSE(third.load_text(kCopy).empty());
}

// The store's checkpoints show in the engine's figures (and so in /api/stats and
// /metrics): a few MiB of records grow the WAL past the checkpointer's 1,000 pages.
TEST_F(DurableEngineTest, TheStoresCheckpoints_AreInTheEnginesStats) {
  Engine& engine = reopen({});
  EXPECT_EQ(engine.stats().store_checkpoints, 0u);
  const std::string text(3000, 'x');
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(engine.insert("note", Value::object({{"text", Value(std::string_view(text))}})).is_ok());
  }
  engine.settle();
  // The checkpointer runs on its own thread: wait until it has done what was asked.
  auto* sqlite = dynamic_cast<SqliteStore*>(engine.core().store.get());
  ASSERT_NE(sqlite, nullptr);
  sqlite->checkpointer()->wait_idle();
  const EngineStats s = engine.stats();
  EXPECT_GE(s.store_checkpoints, 1u);
  EXPECT_EQ(s.store_checkpoint_failures, 0u);
  EXPECT_EQ(s.to_value()["store_checkpoints"], Value(static_cast<long long>(s.store_checkpoints)));
}

// The durability watermark: a context that a commit starts is queued only once that
// commit is durable, and an operation returns only then. The store's writer is held at
// its first write by a perturbation hook; meanwhile the insert has not returned and its
// context has not started.
std::atomic<int> g_writes_seen{0};
std::atomic<bool> g_release_writes{false};
void hold_writes(PerturbPoint p) {
  if (p != PerturbPoint::kBeforeStoreWrite) return;
  g_writes_seen.fetch_add(1);
  while (!g_release_writes.load()) std::this_thread::yield();
}
// From now on the store's writer waits at each write until g_release_writes (`hook`: one
// that also holds elsewhere, passing kBeforeStoreWrite to hold_writes).
void hold_store_writes(PerturbHook hook = &hold_writes) {
  g_writes_seen = 0;
  g_release_writes = false;
  set_perturb_hook(hook);
}

TEST_P(DurableEngineStoresTest, ACommitsContext_IsQueuedOnlyOnceTheCommitIsDurable_AndTheInsertReturnsThen) {
  EngineOptions o = options();
  o.simulation_seed.reset();  // real workers, which would start the context at once
  o.properties.worker_threads = 2;
  o.properties.durability = Durability::kNormal;
  Engine& engine = reopen({kCopy}, o);
  hold_store_writes();
  std::atomic<bool> returned{false};
  std::thread writer([&] {
    Result<Value> r = engine.insert("order", json(R"({"sys_id": "o1"})"));
    EXPECT_TRUE(r.is_ok());
    returned = true;
  });
  while (g_writes_seen.load() == 0) std::this_thread::yield();
  // The batch holding the insert is being written and is not durable yet.
  EXPECT_FALSE(returned.load());
  std::vector<ContextRecord> contexts = engine.contexts();
  ASSERT_EQ(contexts.size(), 1u);
  EXPECT_EQ(contexts[0].value()["started_at"], Value()) << "started before its commit was durable";
  EXPECT_EQ(engine.stats().queued_events, 0u);
  g_release_writes = true;
  writer.join();
  set_perturb_hook(nullptr);
  EXPECT_TRUE(returned.load());
  engine.settle();
  ASSERT_EQ(engine.contexts()[0].status(), "completed");
  EXPECT_EQ(engine.records("shipment").size(), 1u);
}

// With the durability `off` an operation returns before its entry is written, but never
// more than EngineCore::kOffBacklog entries ahead of the writer: held at its first write,
// the writer lets the producer run that far and no further, and everything is written once
// it goes on.
TEST_P(DurableEngineStoresTest, DurabilityOff_OperationsRunAheadOfTheWriter_ButOnlyABoundedWay) {
  EngineOptions o = options();
  o.simulation_seed.reset();
  o.properties.worker_threads = 1;
  o.properties.durability = Durability::kOff;
  Engine& engine = reopen({}, o);
  Journal& journal = *engine.core().journal;
  const uint64_t start = journal.appended();
  hold_store_writes();
  constexpr uint64_t kTotal = EngineCore::kOffBacklog + 100;
  std::atomic<uint64_t> returned{0};
  std::thread producer([&] {
    for (uint64_t i = 0; i < kTotal; ++i) {
      EXPECT_TRUE(engine.insert("t", Value::object({{"n", Value(static_cast<long long>(i))}})).is_ok());
      returned.fetch_add(1);
    }
  });
  // The writer holds its first batch; nothing is durable past what it took before.
  while (g_writes_seen.load() == 0) std::this_thread::yield();
  const uint64_t durable = journal.durable();
  // The producer runs kOffBacklog entries past the durable ones, then waits: its next
  // insert is appended, and does not return.
  const uint64_t blocked_at = durable + EngineCore::kOffBacklog + 1;
  ASSERT_TRUE(test_support::WaitFor([&] { return journal.appended() >= blocked_at; }));
  EXPECT_EQ(journal.appended(), blocked_at) << "appended past the bound";
  EXPECT_EQ(journal.durable(), durable);
  EXPECT_LE(start + returned.load(), blocked_at - 1) << "an insert returned while too far ahead";
  g_release_writes = true;
  producer.join();
  set_perturb_hook(nullptr);
  EXPECT_EQ(returned.load(), kTotal);
  engine.settle();
  EXPECT_EQ(engine.records("t").size(), kTotal);
}

// Group commit: commits that arrive while the writer writes go to the store together, in
// one batch (one transaction). The writer is held at its first batch while more inserts
// commit; once it lets go, one more batch takes all of them. No insert returns while
// held, and each returns once its own batch is durable (the journal wakes a waiter for
// its position, not at every batch: a wake-up lost there hangs this test).
TEST_P(DurableEngineStoresTest, CommitsMadeWhileTheWriterWrites_GoToTheStoreInOneBatch) {
  EngineOptions o = options();
  o.simulation_seed.reset();
  o.properties.worker_threads = 1;
  o.properties.durability = Durability::kNormal;
  Engine& engine = reopen({}, o);
  Journal& journal = *engine.core().journal;
  const uint64_t batches_before = journal.batches();
  hold_store_writes();
  std::atomic<int> returned{0};
  auto insert = [&](int i) {
    EXPECT_TRUE(engine.insert("t", Value::object({{"n", Value(i)}})).is_ok());
    returned.fetch_add(1);
  };
  std::vector<std::thread> threads;
  threads.emplace_back(insert, 0);
  while (g_writes_seen.load() == 0) std::this_thread::yield();
  const uint64_t appended = journal.appended();
  constexpr int kMore = 20;
  for (int i = 1; i <= kMore; ++i) threads.emplace_back(insert, i);
  EXPECT_TRUE(test_support::WaitFor([&] { return journal.appended() >= appended + kMore; }));
  EXPECT_EQ(returned.load(), 0) << "an insert returned before its entry was durable";
  g_release_writes = true;
  for (std::thread& t : threads) t.join();
  set_perturb_hook(nullptr);
  EXPECT_EQ(returned.load(), kMore + 1);
  EXPECT_GE(journal.durable(), appended + kMore);
  EXPECT_EQ(journal.batches() - batches_before, 2u) << "the held batch, then one batch of the other " << kMore;
  Engine& again = reopen({});
  EXPECT_EQ(again.records("t").size(), static_cast<size_t>(kMore + 1));
}

// An update or delete by `where` commits each record in turn, but its commits go to the
// journal as one entry, which the writer never splits: the store gets them in one
// transaction, so a crash (or a leader's death) leaves all of them or none, never the
// records before the cut. A flow started by each update is in the same entry.
TEST_P(DurableEngineStoresTest, AnUpdateOrDeleteByWhere_IsOneJournalEntry_AllOfItDurableOrNone) {
  constexpr const char* kOnUpdate = R"({"id": "touched", "trigger": {"type": "record", "table": "t", "when": "updated"},
    "actions": [{"action": "log", "inputs": {"message": "touched {{trigger.sys_id}}"}}]})";
  EngineOptions o = options();
  o.properties.durability = Durability::kNormal;
  Engine& engine = reopen({kOnUpdate}, o);
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(engine.insert("t", Value::object({{"n", Value(i)}})).is_ok());
  engine.settle();
  Journal& journal = *engine.core().journal;

  uint64_t before = journal.appended();
  Result<size_t> updated =
      engine.update_where("t", json(R"({"field": "n", "op": "ge", "value": 2})"), json(R"({"done": true})"));
  ASSERT_TRUE(updated.is_ok()) << updated.message();
  EXPECT_EQ(*updated, 3u);
  EXPECT_EQ(journal.appended() - before, 1u) << "three commits, one journal entry";
  engine.settle();
  EXPECT_EQ(engine.contexts("touched").size(), 3u);

  before = journal.appended();
  Result<size_t> removed = engine.remove_where("t", json(R"({"field": "done", "op": "eq", "value": true})"));
  ASSERT_TRUE(removed.is_ok()) << removed.message();
  EXPECT_EQ(*removed, 3u);
  EXPECT_EQ(journal.appended() - before, 1u) << "three removes, one journal entry";

  before = journal.appended();
  Result<size_t> none = engine.update_where("t", json(R"({"field": "n", "op": "gt", "value": 9})"), json(R"({"x": 1})"));
  ASSERT_TRUE(none.is_ok()) << none.message();
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(journal.appended(), before) << "nothing committed, nothing journaled";

  Engine& again = reopen({kOnUpdate});
  ASSERT_EQ(again.records("t").size(), 1u);
  EXPECT_EQ(again.records("t")[0]["n"], Value(1));
  EXPECT_EQ(again.contexts("touched").size(), 3u);
}

// The writer finishes a batch (wakes its waiters, delivers what it holds) while the next
// batch is in the store's hands: on PostgreSQL once its first statements are sent and
// before its COMMIT; on SQLite, which cannot overlap, before it writes. The writer is held
// at its first batch while a second insert commits, then, once it goes on, at the moment
// it has finished the first batch inside the second's write: the first insert has
// returned, the second has not, and a reader of the store finds the first record only.
// Only the finish of the batch holding position g_finish_to_hold of g_finish_journal
// counts: a batch the engine wrote before the test's first insert (at open) may still be
// unfinished when that insert's batch is written, and is then finished inside it, while
// the first insert's own batch is in the store's hands; held there, that batch's
// transaction sat idle until the server ended it.
std::atomic<bool> g_hold_finished{false};
std::atomic<bool> g_finished_seen{false};
std::atomic<uint64_t> g_finish_to_hold{0};  // 0: none yet
std::atomic<Journal*> g_finish_journal{nullptr};
void hold_writes_then_the_finish(PerturbPoint p) {
  if (p == PerturbPoint::kPreviousBatchFinished) {
    const uint64_t position = g_finish_to_hold.load();
    if (position == 0 || g_finish_journal.load()->durable() < position) return;
    g_finished_seen = true;
    while (g_hold_finished.load()) std::this_thread::yield();
    return;
  }
  hold_writes(p);
}

TEST_P(DurableEngineStoresTest, ABatchIsFinished_WhileTheNextBatchIsInTheStoresHands) {
  EngineOptions o = options();
  o.simulation_seed.reset();
  o.properties.worker_threads = 1;
  o.properties.durability = Durability::kNormal;
  Engine& engine = reopen({}, o);
  Journal& journal = *engine.core().journal;
  g_finished_seen = false;
  g_hold_finished = true;
  g_finish_to_hold = 0;
  g_finish_journal = &journal;
  hold_store_writes(&hold_writes_then_the_finish);
  std::atomic<bool> first_returned{false}, second_returned{false};
  std::thread first([&] {
    EXPECT_TRUE(engine.insert("t", json(R"({"sys_id": "first"})")).is_ok());
    first_returned = true;
  });
  while (g_writes_seen.load() == 0) std::this_thread::yield();
  const uint64_t first_position = journal.appended();
  g_finish_to_hold = first_position;
  std::thread second([&] {
    EXPECT_TRUE(engine.insert("t", json(R"({"sys_id": "second"})")).is_ok());
    second_returned = true;
  });
  EXPECT_TRUE(test_support::WaitFor([&] { return journal.appended() > first_position; }));
  EXPECT_FALSE(g_finished_seen.load()) << "finished before it was written";
  g_release_writes = true;
  ASSERT_TRUE(test_support::WaitFor([&] { return g_finished_seen.load(); }));
  EXPECT_TRUE(test_support::WaitFor([&] { return first_returned.load(); }));
  EXPECT_FALSE(second_returned.load()) << "returned before its batch was written";
  EXPECT_EQ(journal.durable(), first_position);
  {
    StoreOptions so;
    so.kind = url_.empty() ? "sqlite" : "postgresql";
    so.path = path_;
    so.url = url_;
    so.read_only = true;
    Result<std::unique_ptr<Store>> reader = open_store(so);
    ASSERT_TRUE(reader.is_ok()) << reader.message();
    Result<StoredState> state = (*reader)->load(false);
    ASSERT_TRUE(state.is_ok()) << state.message();
    std::vector<std::string> ids;
    for (const StoredState::Table& t : state->tables) {
      for (const Value& r : t.records) ids.emplace_back(r["sys_id"].as_string());
    }
    EXPECT_EQ(ids, std::vector<std::string>{"first"});
  }
  g_hold_finished = false;
  first.join();
  second.join();
  set_perturb_hook(nullptr);
  EXPECT_TRUE(second_returned.load());
  EXPECT_EQ(engine.records("t").size(), 2u);
}

// An engine on PostgreSQL whose writer's session ends (the server restarted, an
// administrator ended it) goes on: the journal writes the failed batch again, the store
// connects again for it, and the insert that waited for that batch returns once it is
// written. Nothing is refused after that.
TEST_P(DurableEngineStoresTest, AStoreWhoseSessionEnded_ConnectsAgain_TheWaitingInsertReturnsOnceWritten) {
  if (url_.empty()) GTEST_SKIP() << "a PostgreSQL store's session";
  EngineOptions o = options();
  o.simulation_seed.reset();
  o.properties.durability = Durability::kNormal;
  o.store_give_up_ms = 15000;  // a store that never writes again fails the insert, not hangs it
  Engine& engine = reopen({}, o);
  ASSERT_TRUE(engine.insert("t", json(R"({"sys_id": "before"})")).is_ok());
  // The writer's session: the backend its holder row names.
  ASSERT_EQ(postgres_value(url_, "SELECT pg_terminate_backend(backend_pid::integer, 5000) FROM holder"), "t");
  Result<Value> after = engine.insert("t", json(R"({"sys_id": "after"})"));
  ASSERT_TRUE(after.is_ok()) << after.message();
  ASSERT_TRUE(engine.insert("t", json(R"({"sys_id": "later"})")).is_ok());
  EXPECT_TRUE(engine.core().journal->failure().is_ok());
  Engine& again = reopen({}, o);
  std::vector<std::string> ids;
  for (const Value& r : again.records("t")) ids.emplace_back(r["sys_id"].as_string());
  EXPECT_EQ(ids, (std::vector<std::string>{"before", "after", "later"}));
}

}  // namespace
}  // namespace flowrt
