// SqliteStore's own promises beyond the conformance suite: one writer per file, readers
// alongside, and a clear error naming the file for anything it cannot use.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "plans/value_json.h"
#include "store/sqlite_data_file.h"
#include "store/sqlite_store.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = test_support::temp_path("flowrt-sqlite-" + name) + ".db";
    remove_files();
  }
  void TearDown() override { remove_files(); }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
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

  // A file made from one of the checked-in SQL texts of tests/store/data/.
  void make_from(const std::string& sql_file) {
    std::ifstream in(std::string(FLOWRT_SOURCE_DIR) + "/tests/store/data/" + sql_file);
    ASSERT_TRUE(in) << sql_file;
    std::stringstream text;
    text << in.rdbuf();
    sql(text.str());
  }
  std::string file_bytes() {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  int schema_version() {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    int version = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      version = sqlite3_column_int(s, 0);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return version;
  }

  std::string path_;
};

TEST_F(SqliteStoreTest, ASecondWriter_IsRefusedNamingTheFile_UntilTheFirstCloses) {
  std::unique_ptr<SqliteStore> first = open();
  ASSERT_NE(first, nullptr);
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("in use by another engine (process " + std::to_string(::getpid()) + " on "), std::string::npos)
      << error;
  first.reset();
  EXPECT_EQ(open_error(), "");
}

// Whether another process sees a POSIX lock on the data file: SQLite's locks, which belong
// to this process and the file, and which closing any descriptor of the file would drop.
bool another_process_sees_a_lock(const std::string& path) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(path.c_str(), O_RDWR);
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 0;
    probe.l_len = 0;  // the whole file, SQLite's lock bytes past its end included
    if (fd < 0 || ::fcntl(fd, F_GETLK, &probe) != 0) ::_exit(2);
    ::_exit(probe.l_type == F_UNLCK ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}

// SQLite's "How To Corrupt An SQLite Database File", 2.2: closing a descriptor of a data
// file drops every POSIX lock the process holds on it, its connections' too; another
// process's last connection may then checkpoint and delete the WAL under the writer. A
// second writer refused, and a reader opened and closed, in the writer's process must
// leave the writer's locks as they were.
TEST_F(SqliteStoreTest, ASecondWriterRefused_OrAReaderClosed_InTheWritersProcess_LeavesTheWritersLocks) {
  std::unique_ptr<SqliteStore> writer = open();
  ASSERT_NE(writer, nullptr);
  StoreBatch batch;
  batch.changes.push_back(RecordPut{"t", *parse_json(R"({"sys_id":"a"})"), 1});
  ASSERT_TRUE(writer->write(batch).is_ok());
  ASSERT_TRUE(another_process_sees_a_lock(path_)) << "the writer holds no lock to lose: the test checks nothing";
  EXPECT_NE(open_error().find("in use by another engine"), std::string::npos);
  EXPECT_TRUE(another_process_sees_a_lock(path_)) << "the refused writer's close dropped the writer's locks";
  {
    std::unique_ptr<SqliteStore> reader = open(/*read_only=*/true);
    ASSERT_NE(reader, nullptr);
    ASSERT_TRUE(reader->load().is_ok());
  }
  EXPECT_TRUE(another_process_sees_a_lock(path_)) << "the reader's opening or closing dropped the writer's locks";
  ASSERT_TRUE(writer->write(batch).is_ok());
  writer.reset();
  EXPECT_EQ(open_error(), "") << "the file is free again once the writer closed";
}

// The descriptors kept open for the writer's locks' sake do not pile up: readers opened
// and closed beside a long-lived writer, and second writers refused, use one again.
TEST_F(SqliteStoreTest, ReadersAndRefusedWritersBesideAWriter_KeepAtMostOneDescriptorAside) {
  std::unique_ptr<SqliteStore> writer = open();
  ASSERT_NE(writer, nullptr);
  StoreBatch batch;
  batch.changes.push_back(RecordPut{"t", *parse_json(R"({"sys_id":"a"})"), 1});
  ASSERT_TRUE(writer->write(batch).is_ok());
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  const OpenDataFiles::Key key{st.st_dev, st.st_ino};
  for (int i = 0; i < 20; ++i) {
    std::unique_ptr<SqliteStore> reader = open(/*read_only=*/true);
    ASSERT_NE(reader, nullptr);
    EXPECT_NE(open_error().find("in use by another engine"), std::string::npos);
  }
  EXPECT_LE(OpenDataFiles::parked(key), 1u);
  writer.reset();
  EXPECT_EQ(OpenDataFiles::parked(key), 0u) << "all closed with the last store of the file";
}

// A path that names another file by the time it is opened (renamed or replaced after the
// stat the open was checked by) is refused, and the descriptor opened meanwhile is filed
// under the file it is really open on: here a writer's file, whose SQLite locks its close
// would drop while the writer is open.
TEST_F(SqliteStoreTest, APathReplacedBetweenItsStatAndItsOpen_IsRefused_TheDescriptorWaitsForItsOwnFilesStores) {
  std::unique_ptr<SqliteStore> writer = open();
  ASSERT_NE(writer, nullptr);
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  const OpenDataFiles::Key writers_file{st.st_dev, st.st_ino};
  const std::string other = path_ + ".other";
  { std::ofstream(other) << "x"; }
  ASSERT_EQ(::stat(other.c_str(), &st), 0);
  const OpenDataFiles::Key stat_found{st.st_dev, st.st_ino};
  ASSERT_EQ(::unlink(other.c_str()), 0);
  ASSERT_EQ(::link(path_.c_str(), other.c_str()), 0);  // the path now names the writer's file

  Result<int> opened = SqliteDataFile::open_existing(other, O_RDONLY, stat_found);
  EXPECT_FALSE(opened.is_ok());
  if (!opened) {
    EXPECT_NE(opened.error().message.find("replaced while it was being opened"), std::string::npos);
  }
  EXPECT_EQ(OpenDataFiles::parked(writers_file), 1u) << "kept until the writer's store closes";
  writer.reset();
  EXPECT_EQ(OpenDataFiles::parked(writers_file), 0u);
  ::unlink(other.c_str());
}

// A reader that reads a file as immutable (in a directory where SQLite cannot make its -shm
// file: DataTest.AFileInADirectoryTheUserCannotWrite_IsInspected_UnlessItsWalHoldsCommits
// runs that as an unprivileged user) holds a shared lock, so that no writer changes the
// file under it: a writer is refused while it holds it and opens once it let go; and a
// writer's lock refuses the reader's.
TEST_F(SqliteStoreTest, AReadersSharedHold_KeepsWritersOut_UntilItLetsGo_AndAWritersLockRefusesIt) {
  fill(3);
  {
    Result<SqliteDataFile> reader = SqliteDataFile::take(path_, /*read_only=*/true);
    ASSERT_TRUE(reader.is_ok()) << reader.message();
    ASSERT_TRUE(reader->hold_shared(path_).is_ok());
    ASSERT_TRUE(reader->hold_shared(path_).is_ok()) << "held already: nothing more to take";
    EXPECT_NE(open_error().find("in use by another engine"), std::string::npos) << open_error();
  }
  std::unique_ptr<SqliteStore> writer = open();
  ASSERT_NE(writer, nullptr) << "the reader let go";
  Result<SqliteDataFile> late = SqliteDataFile::take(path_, /*read_only=*/true);
  ASSERT_TRUE(late.is_ok()) << late.message();
  const Status refused = late->hold_shared(path_);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find(path_ + ": an engine is opening it for writing"), std::string::npos)
      << refused.message();
}

TEST_F(SqliteStoreTest, ASecondProcess_IsRefusedNamingTheHoldersProcessId) {
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The holder: opens the file, says so, and keeps it until the parent closes `done`.
    ::close(ready[0]);
    ::close(done[1]);
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path_, SyncMode::kNormal);
    const char c = s.is_ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    char buf;
    while (::read(done[0], &buf, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(done[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  const std::string error = open_error();
  ::close(done[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_NE(error.find(path_ + ": the data file is in use by another engine (process " + std::to_string(child) + " on "),
            std::string::npos)
      << error;
  EXPECT_EQ(open_error(), "") << "the lock went with the process";
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

// A refused file is left as it was: the store clears its holder row as it closes only when
// it wrote one (until 2026-12-06 it cleared any table of that name, someone else's too).
TEST_F(SqliteStoreTest, ADatabaseOfSomethingElse_WithATableNamedHolder_KeepsItsRows) {
  sql("CREATE TABLE holder(id INTEGER PRIMARY KEY, note TEXT); INSERT INTO holder VALUES (1, 'theirs')");
  const std::string error = open_error();
  EXPECT_NE(error.find("not a flowrt data file (a SQLite database of something else)"), std::string::npos) << error;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  int rows = -1;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM holder", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    rows = sqlite3_column_int(s, 0);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  EXPECT_EQ(rows, 1) << "the refused file's own table was changed";
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

TEST_F(SqliteStoreTest, AnOlderFile_IsMigratedOnOpen_AndItsStateLoads) {
  // Each checked-in file of an older version (tests/store/data/schema_vN.sql).
  for (int version : {1, 2}) {
    SCOPED_TRACE("schema version " + std::to_string(version));
    remove_files();
    make_from("schema_v" + std::to_string(version) + ".sql");
    ASSERT_EQ(schema_version(), version);
    {
      std::unique_ptr<SqliteStore> s = open();
      ASSERT_NE(s, nullptr);
      EXPECT_EQ(s->migrated_from(), version);
      EXPECT_EQ(s->open_note(), "migrated from data schema version " + std::to_string(version) + " to " +
                                    std::to_string(SqliteStore::kSchemaVersion));
      Result<StoredState> state = s->load();
      ASSERT_TRUE(state.is_ok()) << state.message();
      ASSERT_EQ(state->tables.size(), 1u);
      EXPECT_EQ(state->tables[0].records.size(), 3u);
      ASSERT_EQ(state->contexts.size(), 3u);
      EXPECT_EQ(state->contexts[0].status, "waiting");
      EXPECT_TRUE(state->contexts[0].checkpoint.is_null()) << "written before checkpoints existed";
      EXPECT_EQ(state->definitions.size(), 1u);
      // The migrated file takes checkpoints.
      StoreBatch b;
      b.changes.push_back(ContextUpdate{state->contexts[0].seq, "waiting", -1, -1, Value(), Value("cp")});
      ASSERT_TRUE(s->write(b).is_ok());
      Result<StoredState> after = s->load();
      ASSERT_TRUE(after.is_ok());
      EXPECT_EQ(after->contexts[0].checkpoint, Value("cp"));
    }
    EXPECT_EQ(schema_version(), SqliteStore::kSchemaVersion);
    std::unique_ptr<SqliteStore> again = open();
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->migrated_from(), 0) << "migrated once";
  }
}

TEST_F(SqliteStoreTest, AVersion3File_MovesItsEndedContextsToHistory_AndKeepsEveryRow) {
  // One context completed with its record, two waiting with checkpoints, all in `contexts`.
  make_from("schema_v3.sql");
  ASSERT_EQ(schema_version(), 3);
  {
    std::unique_ptr<SqliteStore> s = open();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->migrated_from(), 3);
    Result<StoredState> state = s->load();
    ASSERT_TRUE(state.is_ok()) << state.message();
    ASSERT_EQ(state->tables.size(), 1u);
    std::vector<std::string> ids;
    for (const Value& r : state->tables[0].records) ids.emplace_back(r["sys_id"].as_string());
    EXPECT_EQ(ids, (std::vector<std::string>{"p1", "p2", "p3"}));
    ASSERT_EQ(state->contexts.size(), 2u) << "the waiting ones";
    EXPECT_EQ(state->contexts[0].id, "ctx-2");
    EXPECT_EQ(state->contexts[0].status, "waiting");
    EXPECT_TRUE(state->contexts[0].checkpoint.is_object()) << "kept through the migration";
    Result<std::optional<StoredContext>> ended = s->load_context(1);
    ASSERT_TRUE(ended.is_ok()) << ended.message();
    ASSERT_TRUE(ended->has_value());
    EXPECT_EQ((*ended)->status, "completed");
    EXPECT_EQ((*ended)->record.value()["id"], Value("ctx-1"));
    EXPECT_FALSE((*ended)->trigger.contains("record")) << "history keeps the trigger without its values";
    EXPECT_EQ((*ended)->trigger["sys_id"], Value("p1"));
    ContextQuery all;
    Result<std::vector<StoredContext>> listed = s->list_contexts(all);
    ASSERT_TRUE(listed.is_ok()) << listed.message();
    ASSERT_EQ(listed->size(), 3u);
    EXPECT_EQ((*listed)[0].seq, 1u);
    EXPECT_EQ((*listed)[2].seq, 3u);
    // The migrated file goes on: the waiting context ends, a record is inserted after p3.
    StoreBatch b;
    b.changes.push_back(ContextUpdate{2, "completed", -1, 50, Value::object({{"id", Value("ctx-2")}}), Value()});
    b.changes.push_back(RecordPut{"purchase", Value::object({{"sys_id", Value("p0")}}), 10});
    ASSERT_TRUE(s->write(b).is_ok());
    Result<StoredState> after = s->load();
    ASSERT_TRUE(after.is_ok()) << after.message();
    ASSERT_EQ(after->contexts.size(), 1u);
    EXPECT_EQ(after->contexts[0].id, "ctx-3");
    ASSERT_EQ(after->tables[0].records.size(), 4u);
    EXPECT_EQ(after->tables[0].records[3]["sys_id"], Value("p0")) << "in insertion order, not by sys_id";
  }
  EXPECT_EQ(schema_version(), SqliteStore::kSchemaVersion);
}

TEST_F(SqliteStoreTest, ADamagedRecordRow_IsAnErrorNamingTheFileTheRecordAndItsTable) {
  {
    std::unique_ptr<SqliteStore> s = open();
    ASSERT_NE(s, nullptr);
    StoreBatch b;
    b.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value("a")}, {"n", Value(1)}}), 1});
    b.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value("b")}, {"n", Value(2)}}), 2});
    ASSERT_TRUE(s->write(b).is_ok());
  }
  const std::pair<const char*, const char*> cases[] = {
      {"UPDATE records SET body = '{\"sys_id\": \"b\", \"n\": ' WHERE sys_id = 'b'", "a damaged row (record b of table t): "},
      {"UPDATE records SET body = '[1, 2]' WHERE sys_id = 'b'", "a damaged row (record b of table t)"},
      {"UPDATE records SET tbl = 'gone' WHERE sys_id = 'b'", "a damaged row (record b of table gone: no such table)"},
  };
  for (const auto& [damage, expected] : cases) {
    SCOPED_TRACE(damage);
    sql(damage);
    std::unique_ptr<SqliteStore> s = open();
    ASSERT_NE(s, nullptr);
    Result<StoredState> loaded = s->load();
    ASSERT_FALSE(loaded.is_ok());
    EXPECT_NE(loaded.message().find(path_ + ": " + expected), std::string::npos) << loaded.message();
    s.reset();
    sql(R"(UPDATE records SET tbl = 't', body = '{"sys_id": "b", "n": 2}' WHERE sys_id = 'b')");  // mended
  }
}

TEST_F(SqliteStoreTest, ARecordPutWhereAnotherRecordIs_IsRefusedNamingIt_AndTheBatchChangesNothing) {
  std::unique_ptr<SqliteStore> s = open();
  ASSERT_NE(s, nullptr);
  StoreBatch first;
  first.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value("a")}, {"n", Value(1)}}), 5});
  ASSERT_TRUE(s->write(first).is_ok());
  // The engine and the file disagree on where "b" is: refused, not written over "a".
  StoreBatch wrong;
  wrong.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value("c")}, {"n", Value(3)}}), 6});
  wrong.changes.push_back(RecordPut{"t", Value::object({{"sys_id", Value("b")}, {"n", Value(2)}}), 5});
  const Status status = s->write(wrong);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(path_), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("record b of table t at position 5: another record is there"), std::string::npos)
      << status.message();
  Result<StoredState> state = s->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  ASSERT_EQ(state->tables[0].records.size(), 1u) << "nothing of the refused batch, c included";
  EXPECT_EQ(state->tables[0].records[0].to_json(), R"({"sys_id":"a","n":1})");
  // A remove names the position too: one that does not match removes nothing.
  StoreBatch remove;
  remove.changes.push_back(RecordRemove{"t", "a", 7});
  ASSERT_TRUE(s->write(remove).is_ok());
  EXPECT_EQ(s->load()->tables[0].records.size(), 1u);
}

TEST_F(SqliteStoreTest, AnOlderFile_OpenedReadOnly_IsReadAsItIs) {
  // Version 1 (three waiting) and version 3 (one ended among the live ones, no history table).
  for (int version : {1, 3}) {
    SCOPED_TRACE("schema version " + std::to_string(version));
    remove_files();
    make_from("schema_v" + std::to_string(version) + ".sql");
    const std::string before = file_bytes();
    std::unique_ptr<SqliteStore> reader = open(/*read_only=*/true);
    ASSERT_NE(reader, nullptr);
    Result<StoredState> state = reader->load();
    ASSERT_TRUE(state.is_ok()) << state.message();
    EXPECT_EQ(state->contexts.size(), version == 1 ? 3u : 2u);
    EXPECT_TRUE(state->keyed_writes.empty()) << "no table of keyed writes: none";
    Result<std::vector<StoredContext>> listed = reader->list_contexts(ContextQuery{});
    ASSERT_TRUE(listed.is_ok()) << listed.message();
    EXPECT_EQ(listed->size(), 3u);
    Result<std::optional<StoredContext>> first = reader->load_context(1);
    ASSERT_TRUE(first.is_ok()) << first.message();
    ASSERT_TRUE(first->has_value());
    EXPECT_EQ((*first)->status, version == 1 ? "waiting" : "completed");
    reader.reset();
    EXPECT_EQ(schema_version(), version);
    EXPECT_EQ(file_bytes(), before);
  }
}

// A writer killed in the middle of a write in rollback-journal mode (for a flowrt file, only
// while it creates the file) leaves a hot journal, which a reader cannot roll back.
TEST_F(SqliteStoreTest, AHotRollbackJournal_IsRefusedByAReaderSayingWhy_AndTheNextWriterRollsItBack) {
  fill(3);
  const std::string src = path_ + ".src";
  std::filesystem::copy_file(path_, src);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(src.c_str(), &db), SQLITE_OK);
  auto run = [&](const char* sql) { ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db); };
  run("PRAGMA journal_mode=DELETE");
  run("PRAGMA cache_size=2");  // the transaction spills pages to the file, the originals in the journal
  run("BEGIN");
  run("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000) "
      "INSERT INTO records(tbl, sys_id, body) SELECT 't', 'x' || i, '{}' FROM c");
  ASSERT_TRUE(std::filesystem::exists(src + "-journal"));
  // The file and its journal as they are now: what a kill leaves.
  std::filesystem::copy_file(src, path_, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(src + "-journal", path_ + "-journal");
  sqlite3_close(db);
  for (const char* suffix : {"", "-journal"}) std::filesystem::remove(src + suffix);

  const std::string error = open_error(/*read_only=*/true);
  EXPECT_NE(error.find(path_ + ": "), std::string::npos) << error;
  EXPECT_NE(error.find("a crash left " + path_ + "-journal beside it"), std::string::npos) << error;
  EXPECT_NE(error.find("the next engine to open it for writing"), std::string::npos) << error;
  std::unique_ptr<SqliteStore> writer = open();
  ASSERT_NE(writer, nullptr);
  Result<StoredState> state = writer->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  EXPECT_EQ(state->tables[0].records.size(), 3u) << "the cut-off write rolled back";
  std::filesystem::remove(path_ + "-journal");
}

// The keyed writes' table needs no schema version: a writer of an older file makes it.
TEST_F(SqliteStoreTest, AWriterOfAnOlderFile_MakesTheTableOfKeyedWrites_AndKeepsThem) {
  make_from("schema_v3.sql");
  {
    std::unique_ptr<SqliteStore> s = open();
    ASSERT_NE(s, nullptr);
    StoreBatch batch;
    batch.changes.push_back(KeyedWritePut{"ci", "k", "req", 201, "application/json", "{}", 7});
    ASSERT_TRUE(s->write(batch).is_ok());
  }
  std::unique_ptr<SqliteStore> reader = open(/*read_only=*/true);
  ASSERT_NE(reader, nullptr);
  Result<StoredState> state = reader->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  ASSERT_EQ(state->keyed_writes.size(), 1u);
  EXPECT_EQ(state->keyed_writes[0].key, "k");
  EXPECT_EQ(state->keyed_writes[0].status, 201);
}

// Writes `n` ended contexts (seq from `first`), each with a record of about 2 KiB.
void write_ended(SqliteStore& s, uint64_t first, uint64_t n) {
  StoreBatch batch;
  const std::string filler(2000, 'x');
  for (uint64_t seq = first; seq < first + n; ++seq) {
    StoredContext c;
    c.seq = seq;
    c.id = "ctx-" + std::to_string(seq);
    c.flow = "f";
    c.status = "completed";
    c.started = 1;
    c.ended = static_cast<TimeMs>(seq);
    c.record = *parse_json(R"({"id":")" + c.id + R"(","filler":")" + filler + R"("})");
    batch.changes.push_back(ContextPut{c});
  }
  ASSERT_TRUE(s.write(batch).is_ok());
}

TEST_F(SqliteStoreTest, ANewFile_GivesThePagesOfPrunedHistoryBack) {
  std::unique_ptr<SqliteStore> s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->incremental_vacuum());
  write_ended(*s, 1, 2000);
  Result<std::pair<int64_t, int64_t>> before = s->page_counts();
  ASSERT_TRUE(before.is_ok()) << before.message();
  StoreBatch prune;
  prune.changes.push_back(HistoryPrune{-1, 100});
  ASSERT_TRUE(s->write(prune).is_ok());
  Result<std::pair<int64_t, int64_t>> after = s->page_counts();
  ASSERT_TRUE(after.is_ok()) << after.message();
  // 1,900 of 2,000 rows of ~2 KiB gone: the file is a small part of what it was, and no
  // page is left on the free list.
  EXPECT_LT(after->first * 5, before->first) << before->first << " pages before, " << after->first << " after";
  EXPECT_EQ(after->second, 0);
  Result<std::vector<StoredContext>> left = s->list_contexts(ContextQuery{});
  ASSERT_TRUE(left.is_ok());
  ASSERT_EQ(left->size(), 100u);
  EXPECT_EQ(left->front().seq, 1901u);
  s.reset();
  // And on disk once the WAL is checkpointed (the last connection closing does it).
  EXPECT_LT(std::filesystem::file_size(path_) / 4096, static_cast<uintmax_t>(before->first) / 5);
}

TEST_F(SqliteStoreTest, AnOlderFile_WithoutIncrementalVacuum_PrunesAllTheSame_AndKeepsItsSize) {
  make_from("schema_v1.sql");  // made without auto_vacuum, as files were before it
  std::unique_ptr<SqliteStore> s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->incremental_vacuum());
  write_ended(*s, 10, 500);
  Result<std::pair<int64_t, int64_t>> before = s->page_counts();
  ASSERT_TRUE(before.is_ok()) << before.message();
  StoreBatch prune;
  prune.changes.push_back(HistoryPrune{-1, 10});
  ASSERT_TRUE(s->write(prune).is_ok());
  Result<std::pair<int64_t, int64_t>> after = s->page_counts();
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(after->first, before->first) << "the file does not shrink";
  EXPECT_GT(after->second, before->second) << "the freed pages are on the free list, for the next rows";
  Result<std::vector<StoredContext>> left = s->list_contexts(ContextQuery{});
  ASSERT_TRUE(left.is_ok());
  EXPECT_EQ(left->size(), 13u) << "the three waiting contexts of the file and the ten newest ended ones";
}

TEST_F(SqliteStoreTest, History_IsReadFromAnotherThread_WhileTheWriterHasTheFile) {
  std::unique_ptr<SqliteStore> s = open();
  ASSERT_NE(s, nullptr);
  write_ended(*s, 1, 10);
  Result<std::vector<StoredContext>> listed = Error{"not read"};
  std::thread reader([&] { listed = s->list_contexts(ContextQuery{}); });
  reader.join();
  ASSERT_TRUE(listed.is_ok()) << listed.message();
  EXPECT_EQ(listed->size(), 10u);
}

TEST_F(SqliteStoreTest, ANewerFile_IsRefusedUnchanged) {
  make_from("schema_v99.sql");
  const std::string before = file_bytes();
  const std::string error = open_error();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("written by a newer flowrt (data schema version 99; this flowrt reads versions up to " +
                       std::to_string(SqliteStore::kSchemaVersion) + "): refused, the file was not changed"),
            std::string::npos)
      << error;
  EXPECT_EQ(file_bytes(), before);
  EXPECT_EQ(schema_version(), 99);
}

}  // namespace
}  // namespace flowrt
