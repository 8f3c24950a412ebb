// SqliteCheckpointer (store/sqlite_checkpointer.h) through SqliteStore, with small limits:
// checkpoints run on the checkpointer's thread once the WAL has grown, the WAL starts over
// at its cap even with no other checkpoint, and a checkpoint that fails is counted, named,
// tried again, and reported once (and once more when checkpoints work again). (Power cuts
// around checkpoints: power_cut_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/sqlite_store.h"
#include "tests/store/fault_vfs.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

constexpr int kNever = 1 << 30;  // a limit never reached

class SqliteCheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = test_support::temp_path("flowrt-checkpointer-" + name) + ".db";
    remove_files();
  }
  void TearDown() override { remove_files(); }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
  }
  std::unique_ptr<SqliteStore> open(SqliteCheckpointer::Limits limits, const std::string& vfs = "") {
    StoreReport report = [this](const std::string& message) {
      std::lock_guard lock(reports_mu_);
      reports_.push_back(message);
    };
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path_, SyncMode::kNormal, false, vfs, limits, report);
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? std::move(s).value() : nullptr;
  }
  // Batch `b`: four records of about 3 KiB (a few WAL frames).
  static StoreBatch batch(uint64_t b) {
    StoreBatch out;
    for (uint64_t i = 0; i < 4; ++i) {
      const uint64_t position = b * 10 + i;
      out.changes.push_back(RecordPut{"t",
                                      Value::object({{"sys_id", Value("r" + std::to_string(position))},
                                                     {"text", Value(std::string(3000, static_cast<char>('a' + b % 26)))}}),
                                      position});
    }
    out.counters.commit_seq = b;
    return out;
  }
  // The records the file holds, after closing `store`.
  size_t records_after_close(std::unique_ptr<SqliteStore>& store) {
    store.reset();
    Result<std::unique_ptr<SqliteStore>> again = SqliteStore::open(path_, SyncMode::kNormal);
    EXPECT_TRUE(again.is_ok()) << (again ? "" : again.message());
    if (!again) return 0;
    Result<StoredState> state = (*again)->load();
    EXPECT_TRUE(state.is_ok()) << (state ? "" : state.message());
    if (!state) return 0;
    size_t n = 0;
    for (const StoredState::Table& t : state->tables) n += t.records.size();
    return n;
  }

  // What the checkpointer reported (on its thread), in order.
  std::vector<std::string> reports() {
    std::lock_guard lock(reports_mu_);
    return reports_;
  }

  std::string path_;
  std::mutex reports_mu_;
  std::vector<std::string> reports_;
};

TEST_F(SqliteCheckpointerTest, OnceTheWalHasGrown_TheCheckpointerCopiesIt_OnItsOwnThread) {
  std::unique_ptr<SqliteStore> s = open({.checkpoint_frames = 20, .catch_up_frames = kNever, .wal_cap_frames = kNever});
  ASSERT_NE(s, nullptr);
  SqliteCheckpointer& c = *s->checkpointer();
  int written = 0;  // frames written to the WAL, over its starts
  int before = 0;
  for (uint64_t b = 1; b <= 40; ++b) {
    ASSERT_TRUE(s->write(batch(b)).is_ok());
    c.wait_idle();
    const int now = c.wal_frames();
    written += now >= before ? now - before : now;
    before = now;
  }
  // 160 records of 3 KiB: well over 100 frames, and a checkpoint per 20 of them. (Each
  // copies the whole WAL while this test waits, so the WAL starts over after it.)
  EXPECT_GT(written, 100);
  EXPECT_GE(c.checkpoints(), static_cast<uint64_t>(written / 40));
  EXPECT_LE(c.checkpoints(), static_cast<uint64_t>(written / 20 + 1)) << "more than one checkpoint per 20 frames";
  EXPECT_EQ(c.failures(), 0u) << c.last_error();
  EXPECT_EQ(s->health().checkpoints, c.checkpoints());
  EXPECT_EQ(reports(), std::vector<std::string>{}) << "nothing failed, nothing to report";
  EXPECT_EQ(records_after_close(s), 160u);
}

TEST_F(SqliteCheckpointerTest, AtItsCap_TheWalStartsOver_WithNoOtherCheckpoint) {
  // No checkpoint is ever requested for growth: the only ones are the writer's waits at
  // the cap. Without them the WAL would grow by every batch, to about 200 frames.
  constexpr int kCap = 30;
  std::unique_ptr<SqliteStore> s = open({.checkpoint_frames = kNever, .catch_up_frames = kNever, .wal_cap_frames = kCap});
  ASSERT_NE(s, nullptr);
  SqliteCheckpointer& c = *s->checkpointer();
  int most = 0;
  int largest_batch = 0;
  int starts_over = 0;
  int before = 0;
  for (uint64_t b = 1; b <= 50; ++b) {
    ASSERT_TRUE(s->write(batch(b)).is_ok());
    const int now = c.wal_frames();
    if (now < before) {
      ++starts_over;
    } else {
      largest_batch = std::max(largest_batch, now - before);
    }
    most = std::max(most, now);
    before = now;
  }
  EXPECT_GE(starts_over, 3);
  EXPECT_LT(most, kCap + largest_batch) << "the WAL passed its cap by more than one batch";
  EXPECT_GE(c.checkpoints(), static_cast<uint64_t>(starts_over));
  EXPECT_EQ(c.failures(), 0u) << c.last_error();
  // The file on disk, too: the frames are written over from the start, not appended.
  EXPECT_LT(std::filesystem::file_size(path_ + "-wal"), static_cast<uintmax_t>(kCap + largest_batch + 1) * (4096 + 24) + 32);
  EXPECT_EQ(records_after_close(s), 200u);
}

TEST_F(SqliteCheckpointerTest, ACheckpointOnAFullDisk_IsCountedAndNamed_AndTheNextOneCopiesTheWal) {
  testing::FaultVfs vfs("flowrt-fault-checkpointer");
  constexpr int kCap = 30;
  std::unique_ptr<SqliteStore> s =
      open({.checkpoint_frames = kNever, .catch_up_frames = kNever, .wal_cap_frames = kCap}, vfs.name());
  ASSERT_NE(s, nullptr);
  SqliteCheckpointer& c = *s->checkpointer();
  uint64_t b = 0;
  while (c.wal_frames() < kCap) ASSERT_TRUE(s->write(batch(++b)).is_ok());
  // The next write waits at the cap for a checkpoint, which cannot write; nor can the batch.
  vfs.set_space(0);
  Status failed = s->write(batch(b + 1));
  EXPECT_FALSE(failed.is_ok());
  EXPECT_EQ(c.failures(), 1u);
  EXPECT_NE(c.last_error().find(path_), std::string::npos) << c.last_error();
  EXPECT_NE(c.last_error().find("(the disk is full)"), std::string::npos) << c.last_error();
  EXPECT_EQ(s->health().checkpoint_failures, 1u);
  // Reported once, naming the file and the cause, before the failed write returned.
  ASSERT_EQ(reports().size(), 1u);
  EXPECT_NE(reports()[0].find(path_), std::string::npos) << reports()[0];
  EXPECT_NE(reports()[0].find("(the disk is full)"), std::string::npos) << reports()[0];
  // Room again: the same batch waits for a checkpoint that copies the WAL, and starts it over.
  vfs.set_space(std::nullopt);
  ASSERT_TRUE(s->write(batch(b + 1)).is_ok());
  EXPECT_LT(c.wal_frames(), kCap);
  EXPECT_GE(c.checkpoints(), 1u);
  EXPECT_EQ(c.failures(), 1u);
  // And the recovery, once, with how many failed.
  ASSERT_EQ(reports().size(), 2u);
  EXPECT_NE(reports()[1].find("checkpoints succeed again, after 1 failed"), std::string::npos) << reports()[1];
  EXPECT_EQ(records_after_close(s), 4 * (b + 1));
}

}  // namespace
}  // namespace flowrt
