// Memory bounded by live work (docs/DURABILITY.md, "Memory and history"): with a durable
// store a finished context leaves memory once its final record is durable and is read from
// the store afterwards; history_retention deletes old finished contexts from the store.
// Deterministic: engines run in simulation (contexts run only inside settle and advance, on
// this thread); each check first waits until the journal has written and delivered
// everything appended (the moment the engine lets go of what is durable).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <filesystem>
#include <thread>
#include <memory>
#include <string>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/properties.h"
#include "store/sqlite_store.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;


constexpr const char* kTick = R"({"id": "tick", "trigger": {"type": "event", "name": "tick"},
  "actions": [{"action": "log", "inputs": {"message": "tick {{trigger.payload.n}}"}}]})";
constexpr const char* kPark = R"({"id": "park", "trigger": {"type": "api"},
  "actions": [{"action": "wait", "inputs": {"duration": "30d"}}]})";

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = test_support::temp_path("flowrt-history-" + name) + ".db";
    remove_files();
  }
  void TearDown() override {
    engine_.reset();
    remove_files();
  }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
  }
  Engine& open(const std::string& store = "sqlite", EngineProperties props = {}) {
    engine_.reset();
    EngineOptions o;
    o.store = store;
    o.data_file = path_;
    o.simulation_seed = 11;
    o.properties = props;
    o.properties.durability = Durability::kOff;  // the file outlives the engine, not the machine
    Result<std::unique_ptr<Engine>> opened = Engine::open(std::move(o));
    EXPECT_TRUE(opened.is_ok()) << (opened ? "" : opened.message());
    engine_ = std::move(opened).value();
    for (const char* d : {kTick, kPark}) {
      Diagnostics diags = engine_->load_text(d);
      EXPECT_TRUE(diags.empty()) << diags.describe();
    }
    (void)engine_->recover();
    return *engine_;
  }
  // Runs `n` tick contexts to their end, numbered from `from`, and waits until the journal
  // has written (and the engine let go of) every one.
  void ticks(int from, int n) {
    for (int i = from; i < from + n; ++i) {
      ASSERT_TRUE(engine_->fire_event("tick", json(R"({"n": )" + std::to_string(i) + "}")).is_ok());
    }
    engine_->settle(0);
    written();
  }
  void written() {
    if (Journal* j = engine_->core().journal.get()) j->wait_delivered(j->appended());
  }
  std::vector<std::string> ids(std::string_view flow) {
    std::vector<std::string> out;
    for (const ContextRecord& c : engine_->contexts(flow)) out.emplace_back(c.value()["id"].as_string());
    return out;
  }

  std::string path_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(HistoryTest, TenThousandFinishedContexts_LeaveMemory_TheStructuresStayFlat_ReadsFindThemAll) {
  Engine& e = open();
  ASSERT_TRUE(e.call_flow("park").is_ok());  // one context waits for the whole run
  e.settle(0);
  written();
  constexpr int kChunk = 500, kContexts = 10000;
  ContextStore::Footprint worst;
  size_t worst_kept = 0;
  for (int from = 0; from < kContexts; from += kChunk) {
    ticks(from, kChunk);
    const ContextStore::Footprint f = e.core().contexts.footprint();
    worst.window_slots = std::max(worst.window_slots, f.window_slots);
    worst.stragglers = std::max(worst.stragglers, f.stragglers);
    worst_kept = std::max(worst_kept, e.stats().contexts_kept);
    ASSERT_EQ(e.core().archive.size(), 0u);
  }
  // In memory: the waiting context only, however many finished.
  EXPECT_EQ(worst_kept, 1u);
  EXPECT_EQ(e.stats().contexts_kept, 1u);
  EXPECT_LE(worst.stragglers, 1u);
  // The seq window holds what ran at once (a chunk) and, behind the waiting context at its
  // front, at most ContextStore's small window (1024) before it compacts: not a slot per
  // context ever started.
  EXPECT_LE(worst.window_slots, size_t{1024} + kChunk);
  EXPECT_EQ(e.dropped_contexts(), 0u) << "nothing is dropped: the store has it";

  // Reads find every one, in seq order, from the store and memory together.
  const std::vector<ContextRecord> all = e.contexts();
  ASSERT_EQ(all.size(), size_t{kContexts} + 1);
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i].value()["id"].as_string(), "ctx-" + std::to_string(i + 1));
  }
  EXPECT_EQ(all[0].status(), "waiting");
  EXPECT_EQ(e.contexts("tick").size(), size_t{kContexts});
  std::optional<ContextRecord> one = e.context("ctx-5001");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->status(), "completed");
  EXPECT_EQ(one->value()["logs"].at(0)["message"], Value("tick 4999"));
  EXPECT_FALSE(e.context("ctx-10002").has_value());
}

TEST_F(HistoryTest, WithTheMemoryStore_FinishedContextsStayInMemory_AsBefore) {
  Engine& e = open("memory");
  ticks(0, 50);
  EXPECT_EQ(e.stats().contexts_kept, 50u);
  EXPECT_EQ(e.contexts().size(), 50u);
}

TEST_F(HistoryTest, ARecordReadOnceDurable_IsTheRecordReadBefore) {
  Engine& e = open();
  ASSERT_TRUE(e.fire_event("tick", json(R"({"n": 1})")).is_ok());
  e.settle(0);
  // Read before the journal lets go (it may have already: either way the same record).
  std::optional<ContextRecord> before = e.context("ctx-1");
  written();
  ASSERT_EQ(e.stats().contexts_kept, 0u);
  std::optional<ContextRecord> after = e.context("ctx-1");
  ASSERT_TRUE(before.has_value());
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(before->value().to_json(), after->value().to_json());
}

// Real worker threads and a reader thread: whatever the interleaving, every list a reader
// gets is in seq order without a duplicate, and holds every context an earlier list held
// (a context leaves memory only once the store has it, and the reader looks in memory
// first). No sleeps, no timing: the invariant holds in every schedule.
TEST_F(HistoryTest, ReadsWhileContextsFinishAndLeaveMemory_NeverMissOne) {
  engine_.reset();
  EngineOptions o;
  o.store = "sqlite";
  o.data_file = path_;
  o.properties.worker_threads = 2;
  o.properties.durability = Durability::kOff;
  Result<std::unique_ptr<Engine>> opened = Engine::open(std::move(o));
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  engine_ = std::move(opened).value();
  ASSERT_TRUE(engine_->load_text(kTick).empty());
  (void)engine_->recover();
  constexpr int kContexts = 2000;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::string problem;
  std::thread reader([&] {
    std::vector<uint64_t> before;
    while (!done.load(std::memory_order_acquire) || reads.load() == 0) {
      std::vector<uint64_t> seqs;
      for (const ContextRecord& c : engine_->contexts("tick")) seqs.push_back(static_cast<uint64_t>(c.value()["seq"].as_int()));
      if (std::adjacent_find(seqs.begin(), seqs.end(), std::greater_equal<>()) != seqs.end()) {
        problem = "read " + std::to_string(reads.load()) + ": not in seq order, or a context twice";
      } else if (!std::includes(seqs.begin(), seqs.end(), before.begin(), before.end())) {
        problem = "read " + std::to_string(reads.load()) + ": a context an earlier read found is missing";
      }
      before = std::move(seqs);
      reads.fetch_add(1);
      if (!problem.empty()) return;
    }
  });
  for (int i = 0; i < kContexts; ++i) {
    ASSERT_TRUE(engine_->fire_event("tick", json(R"({"n": )" + std::to_string(i) + "}")).is_ok());
  }
  engine_->settle(0);
  written();
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(problem, "");
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(engine_->contexts("tick").size(), size_t{kContexts});
  EXPECT_EQ(engine_->stats().contexts_kept, 0u);
}

TEST_F(HistoryTest, HistoryRetentionByCount_DeletesTheOldestFinished_NeverAWaitingOne) {
  EngineProperties p;
  p.history_max_count = 5;
  Engine& e = open("sqlite", p);
  ASSERT_TRUE(e.call_flow("park").is_ok());  // ctx-1, waiting
  e.settle(0);
  ticks(0, 20);                               // ctx-2 .. ctx-21
  EXPECT_EQ(ids("tick"), (std::vector<std::string>{"ctx-17", "ctx-18", "ctx-19", "ctx-20", "ctx-21"}));
  EXPECT_FALSE(e.context("ctx-16").has_value());
  EXPECT_FALSE(e.context("ctx-2").has_value());
  ASSERT_TRUE(e.context("ctx-1").has_value());
  EXPECT_EQ(e.context("ctx-1")->status(), "waiting");
  ticks(20, 3);
  EXPECT_EQ(ids(""), (std::vector<std::string>{"ctx-1", "ctx-20", "ctx-21", "ctx-22", "ctx-23", "ctx-24"}));

  // The file has exactly those rows (and the waiting one).
  engine_.reset();
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::open(path_, SyncMode::kOff, true);
  ASSERT_TRUE(store.is_ok()) << store.message();
  Result<std::vector<StoredContext>> rows = (*store)->list_contexts(ContextQuery{});
  ASSERT_TRUE(rows.is_ok()) << rows.message();
  ASSERT_EQ(rows->size(), 6u);
  EXPECT_EQ((*rows)[0].id, "ctx-1");
  EXPECT_EQ((*rows)[1].id, "ctx-20");
}

TEST_F(HistoryTest, HistoryRetentionByAge_DeletesWhatEndedLongerAgo_OnTheEngineClock) {
  Engine& e = open();
  ASSERT_TRUE(e.set_property("history_retention", json(R"({"age": "1h"})")).is_ok());
  ASSERT_TRUE(e.call_flow("park").is_ok());  // ctx-1: waits 30 days
  e.settle(0);
  ticks(0, 3);                                // ctx-2 .. ctx-4, end at t0
  ASSERT_TRUE(e.advance(30 * 60 * 1000).is_ok());
  ticks(3, 2);                                // ctx-5, ctx-6, end at t0 + 30m
  ASSERT_TRUE(e.advance(45 * 60 * 1000).is_ok());  // t0 + 75m: the first three are older than 1h
  written();
  EXPECT_EQ(ids(""), (std::vector<std::string>{"ctx-1", "ctx-5", "ctx-6"}));
  EXPECT_FALSE(e.context("ctx-3").has_value());
  ASSERT_TRUE(e.advance(60 * 60 * 1000).is_ok());
  written();
  EXPECT_EQ(ids(""), (std::vector<std::string>{"ctx-1"})) << "a waiting context is never deleted";
  EXPECT_EQ(e.context("ctx-1")->status(), "waiting");
}

TEST(HistoryRetentionProperty, TakesAnAgeAndACount_AndRefusesAnythingElseNamingIt) {
  EngineProperties p;
  ASSERT_TRUE(set_property(&p, "history_retention", json(R"({"age": "30d", "count": 100000})")).is_ok());
  EXPECT_EQ(p.history_max_age, 30LL * 24 * 3600 * 1000);
  EXPECT_EQ(p.history_max_count, 100000u);
  EXPECT_EQ(properties_to_value(p)["history_retention"].to_json(), R"({"age":"30d","count":100000})");
  ASSERT_TRUE(set_property(&p, "history_retention", json(R"({"count": 7})")).is_ok());
  EXPECT_EQ(p.history_max_age, 0);
  EXPECT_EQ(p.history_max_count, 7u);
  ASSERT_TRUE(set_property(&p, "history_retention", Value()).is_ok());
  EXPECT_EQ(p.history_max_count, 0u);
  EXPECT_EQ(properties_to_value(p)["history_retention"].to_json(), R"({"age":null,"count":0})");

  auto refused = [&](std::string_view text) {
    Status s = set_property(&p, "history_retention", json(text));
    EXPECT_FALSE(s.is_ok()) << text;
    return s.is_ok() ? std::string() : s.message();
  };
  EXPECT_NE(refused("30").find("must be an object"), std::string::npos);
  EXPECT_NE(refused(R"({"age": "soon"})").find("history_retention: age"), std::string::npos);
  EXPECT_NE(refused(R"({"age": "0s"})").find("longer than 0ms"), std::string::npos);
  EXPECT_NE(refused(R"({"count": -1})").find("history_retention.count"), std::string::npos);
  EXPECT_NE(refused(R"({"count": 1.5})").find("integer"), std::string::npos);
  EXPECT_NE(refused(R"({"days": 3})").find("unknown key 'days'"), std::string::npos);
}

}  // namespace
}  // namespace flowrt
