// Torn writes: SqliteStore on the fault-injecting VFS (tests/store/fault_vfs.h), the power cut
// after acknowledged batches and at seeded random file operations in the middle of a write,
// the disk filling at seeded moments. After each cut the file opens cleanly (SQLite's
// integrity check passes), and what it holds is exactly the first k batches written, each
// whole: with SyncMode::kFull every acknowledged batch, with kNormal at least every batch
// acknowledged before the WAL was last synced (docs/DURABILITY.md names these tests).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "store/sqlite_store.h"
#include "tests/store/fault_vfs.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using testing::CutOptions;
using testing::FaultVfs;

// The batches of one run and what the file must hold after the first k of them.
class BatchModel {
 public:
  // Batch number `b` (its commit_seq), made from `rng`: new records of random sizes, an
  // update of the record "head" to n = b, now and then a delete of an earlier record.
  // large: every batch is large (about 750 KiB) rather than a few KiB.
  explicit BatchModel(bool large = false) : large_(large) {}

  StoreBatch make(uint64_t b, std::mt19937_64& rng) {
    StoreBatch batch;
    std::vector<std::string>& alive = alive_after(b - 1);
    std::vector<std::string> now = alive;
    const bool large = large_;
    const int count = large ? 300 : 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < count; ++i) {
      const std::string id = "b" + std::to_string(b) + "r" + std::to_string(i);
      const size_t size = large ? 2500 : rng() % 3000;
      std::string text(size, 'a' + static_cast<char>(rng() % 26));
      batch.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value(id)}, {"text", Value(text)}}), b * 1000 + i});
      now.push_back(id);
    }
    batch.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value("head")}, {"n", Value(static_cast<int64_t>(b))}}), 0});
    if (rng() % 4 == 0 && !alive.empty()) {
      const std::string gone = alive[rng() % alive.size()];
      batch.changes.push_back(RecordRemove{"t", gone, position_of(gone)});
      now.erase(std::find(now.begin(), now.end(), gone));
    }
    batch.counters.commit_seq = b;
    batch.counters.clock = static_cast<TimeMs>(b);
    alive_[b] = std::move(now);
    return batch;
  }
  // Where record `id` ("b<batch>r<i>") was inserted: batch * 1000 + i.
  static uint64_t position_of(const std::string& id) {
    const size_t r = id.find('r');
    return std::stoull(id.substr(1, r - 1)) * 1000 + std::stoull(id.substr(r + 1));
  }
  // The sys_ids in the file after batch k, in insertion order ("head" first: its position
  // is 0).
  std::vector<std::string> expected(uint64_t k) {
    if (k == 0) return {};
    std::vector<std::string> ids{"head"};
    for (const std::string& id : alive_after(k)) ids.push_back(id);
    return ids;
  }
  // Forgets the batches after k (they were lost: the next batch gets number k + 1).
  void truncate(uint64_t k) { alive_.erase(alive_.upper_bound(k), alive_.end()); }

 private:
  std::vector<std::string>& alive_after(uint64_t b) { return alive_[b]; }
  const bool large_;
  std::map<uint64_t, std::vector<std::string>> alive_{{0, {}}};
};

class PowerCutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = test_support::temp_path("flowrt-powercut-" + name) + ".db";
    remove_files();
  }
  void TearDown() override { remove_files(); }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
  }
  std::unique_ptr<SqliteStore> open(SyncMode sync) {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path_, sync, false, vfs_.name());
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? std::move(s).value() : nullptr;
  }
  // SQLite's own check of the whole file, through another connection.
  std::string integrity() {
    sqlite3* db = nullptr;
    std::string out = "cannot open";
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      }
      sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return out;
  }
  // The number of batches the file holds, after checking that they are exactly the first
  // ones, each whole. -1 (with a failure) when not.
  int64_t batches_held(SqliteStore& store, BatchModel& model) {
    Result<StoredState> state = store.load();
    EXPECT_TRUE(state.is_ok()) << state.message();
    if (!state) return -1;
    const uint64_t k = state->counters.commit_seq;
    std::vector<std::string> ids;
    for (const StoredState::Table& t : state->tables) {
      EXPECT_EQ(t.name, "t");
      for (const Value& r : t.records) {
        ids.emplace_back(r["sys_id"].as_string());
        if (ids.back() == "head") {
          EXPECT_EQ(r["n"], Value(static_cast<int64_t>(k))) << "head is not of batch " << k;
        }
      }
    }
    const std::vector<std::string> expected = model.expected(k);
    EXPECT_EQ(ids, expected) << "the file holds the counters of batch " << k << " but not exactly its records";
    if (ids != expected) return -1;
    return static_cast<int64_t>(k);
  }

  // Runs `steps` seeded steps on one file: writes, power cuts between writes and in the
  // middle of one, a disk that fills, clean restarts. Returns what it saw, for the caller's
  // assertions on coverage.
  struct Seen {
    int cuts = 0;
    int cuts_in_writes = 0;
    int lost_acknowledged = 0;  // batches acknowledged and then lost by a cut
    int disk_full = 0;
  };
  // Half the cuts keep, drop or tear each unsynced write (seeded) rather than drop them all.
  void run(SyncMode sync, uint64_t seed, int steps, Seen& seen) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    remove_files();
    std::mt19937_64 rng(seed);
    BatchModel model;
    std::unique_ptr<SqliteStore> store = open(sync);
    ASSERT_NE(store, nullptr);
    uint64_t acked = 0;      // batches acknowledged (write returned OK)
    uint64_t must_keep = 0;  // batches a power cut may not lose
    // After a cut: the store is closed (its handles are dead) and opened again.
    auto reopen_after_cut = [&](uint64_t in_flight) {
      ++seen.cuts;
      store.reset();
      store = open(sync);
      ASSERT_NE(store, nullptr);
      EXPECT_EQ(integrity(), "ok");
      const int64_t k = batches_held(*store, model);
      ASSERT_GE(k, 0);
      EXPECT_GE(static_cast<uint64_t>(k), must_keep) << "a power cut lost a batch the store had made durable";
      EXPECT_LE(static_cast<uint64_t>(k), std::max(acked, in_flight)) << "a batch never written is in the file";
      if (static_cast<uint64_t>(k) < acked) seen.lost_acknowledged += static_cast<int>(acked - static_cast<uint64_t>(k));
      acked = static_cast<uint64_t>(k);
      must_keep = acked;  // what survived is on disk
      model.truncate(acked);
    };
    for (int step = 0; step < steps && !::testing::Test::HasFatalFailure(); ++step) {
      const uint64_t choice = rng() % 20;
      if (choice < 12) {  // a batch
        const uint64_t b = acked + 1;
        StoreBatch batch = model.make(b, rng);
        const uint64_t syncs = vfs_.syncs();
        Status s = store->write(batch);
        ASSERT_TRUE(s.is_ok()) << s.message();
        store->checkpointer()->wait_idle();
        acked = b;
        if (sync == SyncMode::kFull) {
          must_keep = b;
        } else if (vfs_.syncs() != syncs) {
          // Synced by a checkpoint during or after this write: at least everything written
          // before it (a checkpoint the write waited for came before its frames).
          must_keep = std::max(must_keep, b - 1);
        }
      } else if (choice < 15) {  // the power fails between two writes
        vfs_.power_cut({rng() % 2 == 0, rng()});
        reopen_after_cut(0);
      } else if (choice < 17) {  // the power fails at a file operation of the next write
        const uint64_t b = acked + 1;
        StoreBatch batch = model.make(b, rng);
        const uint64_t cuts = vfs_.cuts();
        vfs_.cut_at_operation(1 + rng() % 12, {rng() % 2 == 0, rng()});
        Status s = store->write(batch);
        store->checkpointer()->wait_idle();  // the cut may come in the checkpoint after the commit
        vfs_.cut_at_operation(0);
        if (s) {  // the cut did not come, or came after the commit (in a checkpoint)
          acked = b;
          if (sync == SyncMode::kFull) must_keep = b;
        }
        if (vfs_.cuts() == cuts) {
          ASSERT_TRUE(s.is_ok()) << s.message();
          continue;
        }
        ++seen.cuts_in_writes;
        reopen_after_cut(b);
      } else if (choice < 18) {  // the disk fills in the middle of a write, then frees up
        const uint64_t b = acked + 1;
        StoreBatch batch = model.make(b, rng);
        vfs_.set_space(rng() % 20000);
        Status s = store->write(batch);
        store->checkpointer()->wait_idle();  // a checkpoint may meet the full disk too
        vfs_.set_space(std::nullopt);
        if (!s) {
          ++seen.disk_full;
          EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
          EXPECT_NE(s.message().find("(the disk is full)"), std::string::npos) << s.message();
          EXPECT_EQ(batches_held(*store, model), static_cast<int64_t>(acked)) << "a failed batch left something behind";
          s = store->write(batch);  // the same batch, once there is room
          ASSERT_TRUE(s.is_ok()) << s.message();
        }
        acked = b;
        if (sync == SyncMode::kFull) must_keep = b;
      } else {  // a clean restart: closing checkpoints the WAL into the file, synced
        store.reset();
        store = open(sync);
        ASSERT_NE(store, nullptr);
        EXPECT_EQ(batches_held(*store, model), static_cast<int64_t>(acked));
        must_keep = acked;
      }
    }
    store.reset();
  }

  FaultVfs vfs_{"flowrt-fault-power-cut"};
  std::string path_;
};

TEST_F(PowerCutTest, Full_EveryAcknowledgedBatchSurvives_TheFileOpensCleanly) {
  Seen seen;
  for (uint64_t seed = 1; seed <= 12 && !HasFatalFailure(); ++seed) run(SyncMode::kFull, seed, 50, seen);
  // The run did what it is meant to: cuts between writes and inside them, a full disk.
  EXPECT_GE(seen.cuts, 40);
  EXPECT_GE(seen.cuts_in_writes, 10);
  EXPECT_GE(seen.disk_full, 3);
  EXPECT_EQ(seen.lost_acknowledged, 0);
}

TEST_F(PowerCutTest, Normal_WhatIsLostIsTheLastBatchesSinceTheWalWasSynced_EachWhole) {
  Seen seen;
  for (uint64_t seed = 101; seed <= 112 && !HasFatalFailure(); ++seed) run(SyncMode::kNormal, seed, 60, seen);
  EXPECT_GE(seen.cuts, 40);
  EXPECT_GE(seen.cuts_in_writes, 10);
  EXPECT_GE(seen.disk_full, 3);
  // With kNormal a power cut does lose acknowledged batches (else the test would show
  // nothing).
  EXPECT_GT(seen.lost_acknowledged, 0);

}

// kNormal syncs the WAL when the store's checkpointer checkpoints it (the WAL grown by
// SqliteCheckpointLimits::checkpoint_frames pages), on its own thread after a commit: large
// batches until one is followed by that sync, then two more; a power cut keeps exactly
// the batches up to the checkpoint and loses the two after it. The first sync is the
// checkpointer's first checkpoint: commits sync nothing.
TEST_F(PowerCutTest, Normal_TheCheckpointerSyncs_ThePowerCutLosesExactlyTheBatchesAfterIt) {
  std::mt19937_64 rng(5);
  BatchModel large(/*large=*/true);
  std::unique_ptr<SqliteStore> store = open(SyncMode::kNormal);
  ASSERT_NE(store, nullptr);
  uint64_t checkpointed = 0;
  for (uint64_t b = 1; b <= 12 && checkpointed == 0; ++b) {
    const uint64_t syncs = vfs_.syncs();
    ASSERT_TRUE(store->write(large.make(b, rng)).is_ok());
    store->checkpointer()->wait_idle();
    if (vfs_.syncs() != syncs) checkpointed = b;
  }
  ASSERT_GT(checkpointed, 1u) << "no checkpoint in 12 batches of about 750 KiB";
  EXPECT_EQ(store->checkpointer()->checkpoints(), 1u);
  for (uint64_t b = checkpointed + 1; b <= checkpointed + 2; ++b) {
    ASSERT_TRUE(store->write(large.make(b, rng)).is_ok());
    store->checkpointer()->wait_idle();
  }
  EXPECT_GT(vfs_.unsynced_bytes(), 0u);
  vfs_.power_cut();
  store.reset();
  store = open(SyncMode::kNormal);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(integrity(), "ok");
  EXPECT_EQ(batches_held(*store, large), static_cast<int64_t>(checkpointed));
}

// A clean close syncs what kNormal wrote since the last checkpoint, also while another
// connection has the file open (flowrt inspect reading it, a backup): SQLite's own
// checkpoint at the close is skipped then, and the store's last commit syncs the WAL
// instead. Until 2026-12-06 a power cut after such a close lost those batches.
TEST_F(PowerCutTest, Normal_ACleanCloseSyncsWhatItWrote_ThoughAnotherConnectionHasTheFileOpen) {
  std::mt19937_64 rng(9);
  BatchModel model;
  std::unique_ptr<SqliteStore> store = open(SyncMode::kNormal);
  ASSERT_NE(store, nullptr);
  for (uint64_t b = 1; b <= 3; ++b) ASSERT_TRUE(store->write(model.make(b, rng)).is_ok());
  store->checkpointer()->wait_idle();
  sqlite3* other = nullptr;  // a reader, as flowrt inspect is, on the same disk
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &other, SQLITE_OPEN_READONLY, vfs_.name().c_str()), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "SELECT count(*) FROM meta", nullptr, nullptr, nullptr), SQLITE_OK);
  store.reset();  // the clean close
  vfs_.power_cut();
  sqlite3_close(other);
  store = open(SyncMode::kNormal);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(integrity(), "ok");
  EXPECT_EQ(batches_held(*store, model), 3) << "a clean close lost what it had written";
}

// Durability switched from off to full while the store runs (set_property durability):
// the database pages that checkpoints copied while off, unsynced, are synced at the
// switch. Otherwise the WAL, fully copied, starts over at the next batch, the batches
// written as full are synced in it alone, and a power cut takes the unsynced pages from
// under them: until 2026-12-06 the next open found the file damaged, or without the
// batches written while off that the later ones were built on.
TEST_F(PowerCutTest, OffThenFull_ThePagesCopiedWhileOffAreSyncedAtTheSwitch_EveryLaterBatchSurvives) {
  std::mt19937_64 rng(11);
  BatchModel large(/*large=*/true);
  std::unique_ptr<SqliteStore> store = open(SyncMode::kOff);
  ASSERT_NE(store, nullptr);
  uint64_t written = 0;
  while (store->checkpointer()->checkpoints() == 0 && written < 12) {
    ASSERT_TRUE(store->write(large.make(++written, rng)).is_ok());
    store->checkpointer()->wait_idle();
  }
  ASSERT_GT(store->checkpointer()->checkpoints(), 0u) << "no checkpoint in 12 batches of about 750 KiB";
  ASSERT_TRUE(store->set_sync_mode(SyncMode::kFull).is_ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(store->write(large.make(++written, rng)).is_ok());
  vfs_.power_cut();
  store.reset();
  store = open(SyncMode::kFull);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(integrity(), "ok");
  EXPECT_EQ(batches_held(*store, large), static_cast<int64_t>(written)) << "full acknowledged every batch since";
}

// kOff syncs nothing, not even at a checkpoint or a clean close: a power cut may lose every
// batch ever acknowledged, and may keep some of the file's unsynced writes and not others,
// which can leave a file SQLite finds damaged. Seeded runs of batches, clean restarts and
// one power cut (half of them tearing): the next open either says the file is damaged,
// naming it, or holds the first k batches, each whole. The second is what these seeds
// show, not a promise (docs/DURABILITY.md): a disk may keep any mix of unsynced writes.
TEST_F(PowerCutTest, Off_APowerCutMayLoseEveryBatch_TheNextOpenSaysTheFileIsDamaged_OrItHoldsWholeBatches) {
  int damaged = 0, held_some = 0, held_none = 0, held_all = 0;
  for (uint64_t seed = 1; seed <= 120 && !HasFatalFailure(); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    remove_files();
    std::mt19937_64 rng(seed);
    BatchModel model;
    std::unique_ptr<SqliteStore> store = open(SyncMode::kOff);
    ASSERT_NE(store, nullptr);
    const uint64_t written = 1 + rng() % 30;
    for (uint64_t b = 1; b <= written; ++b) {
      ASSERT_TRUE(store->write(model.make(b, rng)).is_ok());
      store->checkpointer()->wait_idle();
      if (rng() % 10 == 0) {  // a clean restart: its checkpoint is not synced either
        store.reset();
        store = open(SyncMode::kOff);
        ASSERT_NE(store, nullptr);
      }
    }
    vfs_.power_cut({rng() % 2 == 0, rng()});
    store.reset();
    auto is_damaged = [&](const std::string& message) {
      EXPECT_NE(message.find(path_), std::string::npos) << message;
      EXPECT_NE(message.find("the data file is damaged"), std::string::npos) << message;
      ++damaged;
    };
    Result<std::unique_ptr<SqliteStore>> reopened = SqliteStore::open(path_, SyncMode::kOff, false, vfs_.name());
    if (!reopened) {
      is_damaged(reopened.message());
      continue;
    }
    Result<StoredState> state = (*reopened)->load();
    if (!state) {
      is_damaged(state.message());
      continue;
    }
    EXPECT_EQ(integrity(), "ok");
    const int64_t k = batches_held(**reopened, model);
    ASSERT_GE(k, 0);
    ASSERT_LE(static_cast<uint64_t>(k), written);
    (k == 0 ? held_none : static_cast<uint64_t>(k) == written ? held_all : held_some)++;
  }
  // The seeds reach every outcome.
  EXPECT_GE(damaged, 10);
  EXPECT_GE(held_none, 10);
  EXPECT_GE(held_some, 5);
  EXPECT_GE(held_all, 5);
}

}  // namespace
}  // namespace flowrt
