// An Engine on the SQLite store when the power fails and when the disk fills, through the
// fault-injecting VFS (tests/store/fault_vfs.h), made SQLite's default VFS for the test so
// that the engine's store opens its file through it (docs/DURABILITY.md names these tests).
// Deterministic: power cuts fall between operations, in simulations (contexts run only in
// settle, on this thread); the disk-full test waits on the journal's observable failure and
// on the blocked operation's thread, never on time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "store/sqlite_store.h"
#include "tests/store/fault_vfs.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using testing::CutOptions;
using testing::FaultVfs;

// Every order gets a shipment, made by a context of its own.
constexpr const char* kShip = R"({"id": "ship", "trigger": {"type": "record", "table": "order", "when": "created"},
  "actions": [{"action": "create_record", "inputs": {"table": "shipment", "values": {"order": "{{trigger.sys_id}}"}}}]})";

class EngineFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = test_support::temp_path("flowrt-engine-faults-" + name) + ".db";
    remove_files();
  }
  void TearDown() override {
    engine_.reset();
    remove_files();
  }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
  }
  EngineOptions options(Durability durability) const {
    EngineOptions o;
    o.store = "sqlite";
    o.data_file = path_;
    o.simulation_seed = 7;
    o.properties.durability = durability;
    o.log_level = "off";  // an engine whose power was cut logs the writes it could not make
    return o;
  }
  // Closes the engine (if open) and opens one on the file, recovered.
  Engine& reopen(EngineOptions o) {
    engine_.reset();
    Result<std::unique_ptr<Engine>> opened = Engine::open(std::move(o));
    EXPECT_TRUE(opened.is_ok()) << (opened ? "" : opened.message());
    if (!opened) throw std::runtime_error("cannot open the engine");
    engine_ = std::move(opened).value();
    Diagnostics diags = engine_->load_text(kShip);
    EXPECT_TRUE(diags.empty()) << diags.describe();
    (void)engine_->recover();
    return *engine_;
  }
  // An insert of order `sys_id` made on a thread of its own while the disk is full: it
  // waits for its change to be durable.
  struct BlockedInsert {
    std::thread thread;
    std::atomic<bool> returned{false};
    Result<Value> result = Error{"not run"};
  };
  // Fills the disk, starts the insert, and returns once the journal's write has failed.
  static std::unique_ptr<BlockedInsert> insert_on_a_full_disk(Engine& engine, FaultVfs& vfs, const char* sys_id) {
    vfs.set_space(0);
    auto blocked = std::make_unique<BlockedInsert>();
    BlockedInsert* b = blocked.get();
    b->thread = std::thread([&engine, b, sys_id] {
      b->result = engine.insert("order", Value::object({{"sys_id", Value(sys_id)}}));
      b->returned = true;
    });
    while (engine.core().journal->failure().is_ok()) std::this_thread::yield();
    return blocked;
  }
  static std::vector<std::string> ids(const std::vector<Value>& records, const char* field) {
    std::vector<std::string> out;
    for (const Value& r : records) out.emplace_back(r[field].as_string());
    return out;
  }

  // Seeded runs of inserts, settles, power cuts (with or without torn writes) and clean
  // restarts. After each restart: the orders in the file are the first ones acknowledged, in
  // order (with `full` all of them; with `normal` at least those acknowledged before an
  // operation during which the file was synced); once the engine has recovered and settled,
  // every order has exactly one shipment and no shipment is without its order.
  void run_power_cuts(FaultVfs& vfs, Durability durability, uint64_t seed, int* lost) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::string> acked;  // orders whose insert returned OK, in order
    size_t must_keep = 0;
    int next = 0;
    Engine* engine = &reopen(options(durability));
    auto check = [&](Engine& e) {
      const std::vector<std::string> orders = ids(e.records("order"), "sys_id");
      ASSERT_LE(orders.size(), acked.size());
      EXPECT_TRUE(std::equal(orders.begin(), orders.end(), acked.begin())) << "the orders left are not the first ones";
      EXPECT_GE(orders.size(), must_keep) << "a power cut lost an order the store had made durable";
      *lost += static_cast<int>(acked.size() - orders.size());
      acked = orders;
      must_keep = acked.size();
      e.settle();
      std::vector<std::string> shipped = ids(e.records("shipment"), "order");
      std::vector<std::string> expected = orders;
      std::sort(shipped.begin(), shipped.end());
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(shipped, expected) << "each order has one shipment, each shipment its order";
    };
    for (int step = 0; step < 25 && !::testing::Test::HasFatalFailure(); ++step) {
      const uint64_t choice = rng() % 10;
      checkpoints_done(*engine);
      const uint64_t syncs = vfs.syncs();
      const size_t acked_before = acked.size();
      if (choice < 5) {
        const std::string id = "o" + std::to_string(++next);
        Result<Value> r = engine->insert("order", Value::object({{"sys_id", Value(id)}}));
        ASSERT_TRUE(r.is_ok()) << r.message();
        acked.push_back(id);
        if (durability == Durability::kFull) must_keep = acked.size();
      } else if (choice < 7) {
        engine->settle();
      } else if (choice < 9) {
        vfs.power_cut(CutOptions{rng() % 2 == 0, rng()});
        engine = &reopen(options(durability));
        check(*engine);
        continue;
      } else {
        engine = &reopen(options(durability));
        EXPECT_EQ(engine->records("order").size(), acked.size()) << "a clean stop loses nothing";
        check(*engine);
        continue;
      }
      // Synced during this operation (by a checkpoint that began after every batch before
      // it: none was running when it began): whatever was acknowledged before it is durable.
      checkpoints_done(*engine);
      if (vfs.syncs() != syncs) must_keep = std::max(must_keep, acked_before);
    }
    vfs.power_cut();
    engine = &reopen(options(durability));
    check(*engine);
  }

  // Waits until the store's checkpointer (store/sqlite_checkpointer.h) runs no checkpoint
  // and has none requested.
  static void checkpoints_done(Engine& e) { dynamic_cast<SqliteStore&>(*e.core().store).checkpointer()->wait_idle(); }

  // An engine on the file with real workers (the journal's retries run while this thread
  // waits), order o1 inserted and everything its context wrote made durable, so that the
  // next batch is the next operation's own. For the disk-full tests.
  Engine& open_with_o1_durable(EngineOptions o) {
    o.simulation_seed.reset();
    o.properties.worker_threads = 2;
    Engine& engine = reopen(std::move(o));
    Journal& journal = *engine.core().journal;
    EXPECT_TRUE(engine.insert("order", Value::object({{"sys_id", Value("o1")}})).is_ok());
    engine.settle();
    while (journal.durable() < journal.appended()) std::this_thread::yield();
    return engine;
  }
  // Reopens the file (recovered, settled) and returns the orders in it.
  std::vector<std::string> orders_after_reopen() {
    Engine& again = reopen(options(Durability::kFull));
    again.settle();
    return ids(again.records("order"), "sys_id");
  }

  std::string path_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineFaultsTest, PowerCuts_Full_EveryAcknowledgedInsertSurvives_EachOrderShipsOnce) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  int lost = 0;
  for (uint64_t seed = 1; seed <= 8 && !HasFatalFailure(); ++seed) {
    remove_files();
    run_power_cuts(vfs, Durability::kFull, seed, &lost);
    engine_.reset();
  }
  EXPECT_EQ(lost, 0);
  EXPECT_GE(vfs.cuts(), 8u);
}

TEST_F(EngineFaultsTest, PowerCuts_Normal_LoseOnlyTheLastInserts_EachOrderShipsOnce) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  int lost = 0;
  for (uint64_t seed = 11; seed <= 18 && !HasFatalFailure(); ++seed) {
    remove_files();
    run_power_cuts(vfs, Durability::kNormal, seed, &lost);
    engine_.reset();
  }
  EXPECT_GT(lost, 0) << "with durability normal a power cut loses the inserts since the last sync";
}

// A disk that fills under a running engine: the operation whose batch cannot be written
// waits, new operations are refused with an error saying the disk is full and that nothing
// was written, and once there is room again the waiting operation returns and the engine
// goes on. Nothing acknowledged is lost, and nothing refused is in the file.
TEST_F(EngineFaultsTest, ADiskThatFills_RefusesOperations_LosesNothing_AndTheEngineGoesOnOnceThereIsRoom) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  Engine& engine = open_with_o1_durable(options(Durability::kFull));
  Journal& journal = *engine.core().journal;

  std::unique_ptr<BlockedInsert> blocked = insert_on_a_full_disk(engine, vfs, "o2");
  const std::string why = journal.failure().message();
  EXPECT_NE(why.find(path_), std::string::npos) << why;
  EXPECT_NE(why.find("(the disk is full)"), std::string::npos) << why;
  EXPECT_GT(vfs.full_failures(), 0u);
  EXPECT_FALSE(blocked->returned.load()) << "an insert returned before its change was written";

  Result<Value> refused = engine.insert("order", Value::object({{"sys_id", Value("o3")}}));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("refused, nothing was written"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("(the disk is full)"), std::string::npos) << refused.message();
  Result<Value> update = engine.update("order", "o1", Value::object({{"note", Value("x")}}));
  ASSERT_FALSE(update.is_ok()) << "every operation from outside is refused meanwhile";
  EXPECT_NE(update.message().find("refused, nothing was written"), std::string::npos) << update.message();

  vfs.set_space(std::nullopt);  // room again: the journal's next try writes the batch
  blocked->thread.join();
  ASSERT_TRUE(blocked->result.is_ok()) << blocked->result.message();
  EXPECT_TRUE(journal.failure().is_ok()) << journal.failure().message();
  ASSERT_TRUE(engine.insert("order", Value::object({{"sys_id", Value("o4")}})).is_ok()) << "the engine goes on";
  engine.settle();
  EXPECT_EQ(ids(engine.records("order"), "sys_id"), (std::vector<std::string>{"o1", "o2", "o4"}));

  Engine& again = reopen(options(Durability::kFull));
  again.settle();
  EXPECT_EQ(ids(again.records("order"), "sys_id"), (std::vector<std::string>{"o1", "o2", "o4"}));
  std::vector<std::string> shipped = ids(again.records("shipment"), "order");
  std::sort(shipped.begin(), shipped.end());
  EXPECT_EQ(shipped, (std::vector<std::string>{"o1", "o2", "o4"}));
  engine_.reset();  // its file is closed before the VFS goes
}

// The journal stopping while its write still fails (as the engine's stop does first): the
// operation waiting for that write returns an error saying its change was not written and
// why, rather than waiting for ever.
TEST_F(EngineFaultsTest, TheJournalStoppingWhileTheDiskIsFull_TheWaitingOperationReturnsAnError) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  Engine& engine = open_with_o1_durable(options(Durability::kFull));
  Journal& journal = *engine.core().journal;

  std::unique_ptr<BlockedInsert> blocked = insert_on_a_full_disk(engine, vfs, "o2");
  journal.stop();  // tries the write a few more times, then gives up
  blocked->thread.join();
  const Result<Value>& waited = blocked->result;
  ASSERT_FALSE(waited.is_ok());
  EXPECT_NE(waited.message().find("not written to the sqlite file " + path_ + " before the engine stopped"),
            std::string::npos)
      << waited.message();
  EXPECT_NE(waited.message().find("(the disk is full)"), std::string::npos) << waited.message();
  engine_.reset();
  vfs.set_space(std::nullopt);

  EXPECT_EQ(orders_after_reopen(), (std::vector<std::string>{"o1"})) << "o2 was not acknowledged";
  engine_.reset();
}

// A failing store is tried again on the journal's back-off (10 ms, doubling up to 1 s), not
// at every entry appended meanwhile: under load, a store that fails would otherwise be
// tried once per commit. Each entry here is appended once the last one led to a try, or
// after 5 ms without one; the tries are bounded by what the back-off allows in the time
// the appends took (counted from a 10 ms delay, so the bound is generous). Before the fix
// every append woke the writer for a try at once.
TEST_F(EngineFaultsTest, AFailingStoreIsTriedAgainOnItsBackOff_NotAtEveryEntryAppended) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  Engine& engine = open_with_o1_durable(options(Durability::kFull));
  Journal& journal = *engine.core().journal;

  std::unique_ptr<BlockedInsert> blocked = insert_on_a_full_disk(engine, vfs, "o2");
  const uint64_t tries_before = journal.failed_writes();
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    const uint64_t tries = journal.failed_writes();
    journal.append(JournalEntry{});
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (journal.failed_writes() == tries && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  const auto took = std::chrono::steady_clock::now() - began;
  const uint64_t tries = journal.failed_writes() - tries_before;
  int allowed = 1;  // a try may fall at the start
  auto at = std::chrono::milliseconds(0);
  for (auto delay = std::chrono::milliseconds(10); at <= took; delay = std::min(delay * 2, std::chrono::milliseconds(1000))) {
    at += delay;
    ++allowed;
  }
  EXPECT_LE(tries, static_cast<uint64_t>(allowed))
      << "in " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms of 100 appends";

  vfs.set_space(std::nullopt);  // room again: the next try writes it all
  blocked->thread.join();
  ASSERT_TRUE(blocked->result.is_ok()) << blocked->result.message();
  ASSERT_TRUE(journal.wait_durable(journal.appended()).is_ok());
  EXPECT_TRUE(journal.failure().is_ok()) << journal.failure().message();
  engine_.reset();
}

// With store_give_up_ms, a store failing for longer than that is given up: the waiting
// operation returns an error naming the failure, on_store_lost is called once, every later
// operation is refused, settle() returns (what was not delivered no longer counts as work:
// without that it waits for ever), and the engine writes nothing more even once there is
// room again
// (a cluster node's lead is worth nothing then: server/cluster_node.h).
TEST_F(EngineFaultsTest, AStoreFailingPastTheGiveUpLimit_IsGivenUp_TheWaitEndsWithAnError_NothingMoreIsWritten) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  EngineOptions o = options(Durability::kFull);
  o.store_give_up_ms = 200;
  std::atomic<int> lost_calls{0};
  std::string lost_why;  // written by the journal's thread before lost_calls
  o.on_store_lost = [&](const std::string& why) {
    lost_why = why;
    lost_calls.fetch_add(1);
  };
  Engine& engine = open_with_o1_durable(std::move(o));

  vfs.set_space(0);
  Result<Value> waited = engine.insert("order", Value::object({{"sys_id", Value("o2")}}));  // returns once given up
  ASSERT_FALSE(waited.is_ok());
  EXPECT_NE(waited.message().find("the engine gave its store up: its writes failed for 200 ms"), std::string::npos)
      << waited.message();
  EXPECT_NE(waited.message().find("(the disk is full)"), std::string::npos) << waited.message();
  ASSERT_EQ(lost_calls.load(), 1);
  EXPECT_NE(lost_why.find("(the disk is full)"), std::string::npos) << lost_why;
  // The context o2's insert started is never delivered (nothing is, from now on), and
  // settle returns all the same: it does not wait for that context for ever.
  engine.settle();

  vfs.set_space(std::nullopt);  // room again: given up all the same
  Result<Value> refused = engine.insert("order", Value::object({{"sys_id", Value("o3")}}));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("refused, nothing was written"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("gave its store up"), std::string::npos) << refused.message();
  engine_.reset();
  EXPECT_EQ(lost_calls.load(), 1) << "called once";

  EXPECT_EQ(orders_after_reopen(), (std::vector<std::string>{"o1"})) << "o2 was not acknowledged";
  engine_.reset();
}

// An operation under a DurabilityDeferral (how `flowrt serve` answers writes) returns once
// its change is committed, before it is durable; the caller learns when it is durable
// without a thread waiting: durable_state says "not yet" while the disk is full, and
// when_durable's callback comes once the journal has written it. Without the deferral the
// insert would block until then.
TEST_F(EngineFaultsTest, AnInsertUnderADeferral_ReturnsCommitted_AndIsToldDurableOnceWritten) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  Engine& engine = open_with_o1_durable(options(Durability::kFull));
  Journal& journal = *engine.core().journal;

  vfs.set_space(0);
  uint64_t position = 0;
  {
    const DurabilityDeferral deferral;
    ASSERT_TRUE(engine.insert("order", Value::object({{"sys_id", Value("o2")}})).is_ok());
    position = deferral.position();
  }
  EXPECT_GT(position, 0u);
  EXPECT_FALSE(engine.record("order", "o2").is_null()) << "committed: readable at once";
  while (journal.failure().is_ok()) std::this_thread::yield();  // the write failed: o2 is not durable
  EXPECT_FALSE(engine.durable_state(position).has_value());
  std::promise<void> told;
  engine.when_durable(position, [&told] { told.set_value(); });
  std::future<void> durable = told.get_future();
  EXPECT_EQ(durable.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << "told before it was written";

  vfs.set_space(std::nullopt);  // room again: the journal's next try writes it
  durable.wait();
  ASSERT_TRUE(engine.durable_state(position).has_value());
  EXPECT_TRUE(engine.durable_state(position)->is_ok());
  EXPECT_TRUE(engine.wait_durable(position).is_ok());
  engine_.reset();
  EXPECT_EQ(orders_after_reopen(), (std::vector<std::string>{"o1", "o2"}));
  engine_.reset();
}

// A deferred operation whose change is never written (the store is given up) is told so:
// when_durable's callback comes, and durable_state is the error that names the failure.
TEST_F(EngineFaultsTest, ADeferredInsertTheStoreNeverWrites_IsToldWithTheFailure) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  EngineOptions o = options(Durability::kFull);
  o.store_give_up_ms = 200;
  Engine& engine = open_with_o1_durable(std::move(o));

  vfs.set_space(0);
  uint64_t position = 0;
  {
    const DurabilityDeferral deferral;
    ASSERT_TRUE(engine.insert("order", Value::object({{"sys_id", Value("o2")}})).is_ok());
    position = deferral.position();
  }
  std::promise<void> told;
  engine.when_durable(position, [&told] { told.set_value(); });
  told.get_future().wait();  // once given up
  std::optional<Status> state = engine.durable_state(position);
  ASSERT_TRUE(state.has_value());
  ASSERT_FALSE(state->is_ok());
  EXPECT_NE(state->message().find("(the disk is full)"), std::string::npos) << state->message();
  EXPECT_FALSE(engine.wait_durable(position).is_ok());
  engine_.reset();
  vfs.set_space(std::nullopt);
  EXPECT_EQ(orders_after_reopen(), (std::vector<std::string>{"o1"}));
  engine_.reset();
}

// A bounded wait (the server's drain uses one): while the disk is full it ends at its limit
// with no answer, and once the disk has room it answers that the insert is durable.
TEST_F(EngineFaultsTest, ABoundedWaitForADeferredInsert_EndsAtItsLimitWhileTheDiskIsFull_ThenSeesItWritten) {
  FaultVfs vfs("flowrt-fault-engine", /*make_default=*/true);
  Engine& engine = open_with_o1_durable(options(Durability::kFull));  // the store retried without end

  vfs.set_space(0);
  uint64_t position = 0;
  {
    const DurabilityDeferral deferral;
    ASSERT_TRUE(engine.insert("order", Value::object({{"sys_id", Value("o2")}})).is_ok());
    position = deferral.position();
  }
  ASSERT_GT(position, 0u);
  EXPECT_FALSE(engine.wait_durable_for(position, std::chrono::milliseconds(50)).has_value());
  vfs.set_space(std::nullopt);
  const std::optional<Status> written = engine.wait_durable_for(position, std::chrono::minutes(1));
  ASSERT_TRUE(written.has_value()) << "not written within a minute of the disk having room";
  EXPECT_TRUE(written->is_ok()) << written->message();
  engine_.reset();
  EXPECT_EQ(orders_after_reopen(), (std::vector<std::string>{"o1", "o2"}));
  engine_.reset();
}

}  // namespace
}  // namespace flowrt
