// SqliteStore's own promises beyond the conformance suite: one writer per file, readers
// alongside, and a clear error naming the file for anything it cannot use.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "plans/value_json.h"
#include "store/sqlite_store.h"

namespace flowrt {
namespace {

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = ::testing::TempDir() + "flowrt-sqlite-" + name + ".db";
    remove_files();
  }
  void TearDown() override { remove_files(); }
  void remove_files() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  std::unique_ptr<SqliteStore> open(bool read_only = false) {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path_, SyncMode::kNormal, read_only);
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? std::move(s).value() : nullptr;
  }
  std::string open_error(bool read_only = false) {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path_, SyncMode::kNormal, read_only);
    if (s.is_ok()) {
      Result<StoredState> loaded = (*s)->load();
      return loaded ? "" : loaded.message();
    }
    return s.message();
  }
  // A file holding `n` records, closed (checkpointed: everything in the main file).
  void fill(int n) {
    std::unique_ptr<SqliteStore> s = open();
    ASSERT_NE(s, nullptr);
    StoreBatch batch;
    for (int i = 0; i < n; ++i) {
      batch.changes.push_back(RecordPut{"t", *parse_json(R"({"sys_id":"r)" + std::to_string(i) +
                                                          R"(","text":"a record long enough to fill pages quickly"})"),
                                        static_cast<uint64_t>(i + 1)});
    }
    ASSERT_TRUE(s->write(batch).is_ok());
  }
  void sql(const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &message), SQLITE_OK) << (message ? message : "");
    sqlite3_free(message);
    sqlite3_close(db);
  }

  std::string path_;
};

TEST_F(SqliteStoreTest, ASecondWriter_IsRefusedNamingTheFile_UntilTheFirstCloses) {
  std::unique_ptr<SqliteStore> first = open();
  ASSERT_NE(first, nullptr);
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("in use by another engine"), std::string::npos) << error;
  first.reset();
  EXPECT_EQ(open_error(), "");
}

TEST_F(SqliteStoreTest, AReader_ReadsWhileTheWriterHoldsTheFile) {
  std::unique_ptr<SqliteStore> writer = open();
  ASSERT_NE(writer, nullptr);
  StoreBatch batch;
  batch.changes.push_back(RecordPut{"t", *parse_json(R"({"sys_id":"a"})"), 1});
  ASSERT_TRUE(writer->write(batch).is_ok());
  std::unique_ptr<SqliteStore> reader = open(/*read_only=*/true);
  ASSERT_NE(reader, nullptr);
  Result<StoredState> state = reader->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  ASSERT_EQ(state->tables.size(), 1u);
  EXPECT_EQ(state->tables[0].records.size(), 1u);
  EXPECT_FALSE(reader->write(batch).is_ok()) << "a reader does not write";
}

TEST_F(SqliteStoreTest, AFileThatIsNotADatabase_IsRefusedNamingIt) {
  std::ofstream(path_) << "{\"this is\": \"a JSON file, not a data file\"}\n";
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("not a flowrt data file"), std::string::npos) << error;
}

TEST_F(SqliteStoreTest, ADatabaseOfSomethingElse_IsRefused) {
  sql("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)");
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("not a flowrt data file (a SQLite database of something else)"), std::string::npos) << error;
}

TEST_F(SqliteStoreTest, AReadOnlyOpenOfAMissingFile_IsAnError_NotANewFile) {
  const std::string error = open_error(/*read_only=*/true);
  EXPECT_NE(error.find("no such data file"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(SqliteStoreTest, ATruncatedFile_IsAClearErrorNamingIt) {
  fill(2000);
  const auto size = std::filesystem::file_size(path_);
  ASSERT_GT(size, 64u * 1024);
  std::filesystem::resize_file(path_, size / 2);
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("damaged"), std::string::npos) << error;
}

TEST_F(SqliteStoreTest, AFileWithADamagedPage_IsAClearErrorNamingIt) {
  fill(2000);
  const auto size = std::filesystem::file_size(path_);
  {
    // Garbage over every page past the first few: b-tree pages no longer parse.
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(4096, '\x5a');
    for (std::streamoff at = 16 * 1024; at + 4096 <= static_cast<std::streamoff>(size); at += 16 * 1024) {
      f.seekp(at);
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  }
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("damaged"), std::string::npos) << error;
}

}  // namespace
}  // namespace flowrt
