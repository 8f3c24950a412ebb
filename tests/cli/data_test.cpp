// flowrt run --data FILE and flowrt inspect --data FILE, run as a user runs them: state kept
// across runs in a SQLite file, and what the file holds printed (docs/DURABILITY.md).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "tests/support/postgres_support.h"
#include "tests/support/run_command.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;

namespace fs = std::filesystem;

// Runs flowrt; stdout only (the engine's log goes to stderr, kept apart from the document),
// or stdout and stderr together.
Output run_flowrt(const std::string& args, bool with_stderr = false) {
  return run_command(std::string(FLOWRT_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

const Value* context(const Value& doc, std::string_view id) {
  for (const Value& c : doc["contexts"].items()) {
    if (c["id"].as_string() == id) return &c;
  }
  return nullptr;
}

// A project whose flows wait: an approval (wait_for_condition, two days) and a job that
// holds a lock while it waits for its record to be done.
class DataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(test_support::temp_path(
        "flowrt-data-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flows");
    write("flows/await.json", R"({"id": "await_approval", "trigger": {"type": "record", "table": "purchase", "when": "created"},
      "actions": [{"id": "decision", "action": "wait_for_condition", "inputs": {"table": "purchase",
        "sys_id": "{{trigger.sys_id}}", "condition": {"field": "approval", "op": "in", "value": ["approved", "rejected"]},
        "timeout": "2d"}}]})");
    write("flows/hold.json", R"({"id": "hold", "trigger": {"type": "record", "table": "job", "when": "created"},
      "actions": [{"action": "lock", "inputs": {"key": "printer", "max_duration": "2d"}},
        {"action": "wait_for_condition", "inputs": {"table": "job", "sys_id": "{{trigger.sys_id}}",
          "condition": {"field": "done", "op": "eq", "value": true}}},
        {"action": "unlock", "inputs": {"key": "printer"}}]})");
    data_ = (dir_ / "state.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string flows() const { return (dir_ / "flows").string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Runs flowrt with `args` (stdout and stderr together) as a user who may read what the
  // tests wrote in dir_ but may not write dir_. Root passes every permission check, so as
  // root that is the unprivileged `postgres` user that the test command installs
  // (runuser), running a copy of the binary (a checkout under /root is closed to it);
  // otherwise this user, with dir_'s write permission taken away for the run. The data
  // file's own permissions are the caller's.
  Output run_where_the_directory_is_read_only(const std::string& args) {
    const bool root = ::geteuid() == 0;
    if (root && run_command("id -u postgres >/dev/null 2>&1").code != 0) {
      ADD_FAILURE() << "no postgres user: scripts/setup-deps.sh installs Debian's postgresql, which makes it";
      return Output{};
    }
    for (const fs::path& d : {dir_, dir_ / "flows"}) {  // the temporary directory above is open to all
      fs::permissions(d, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
    }
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir_)) {
      if (e.is_regular_file() && e.path() != fs::path(data_)) {
        fs::permissions(e.path(), fs::perms::others_read, fs::perm_options::add);
      }
    }
    const std::string binary = file("flowrt");
    if (!fs::exists(binary)) {
      fs::copy_file(FLOWRT_BINARY, binary);
      fs::permissions(binary, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
    }
    if (!root) fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::remove);
    Output out = run_command((root ? "runuser -u postgres -- " : "") + binary + " " + args + " 2>&1");
    if (!root) fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add);
    return out;
  }

  fs::path dir_;
  std::string data_;
};

// The same, with the state in a SQLite file or in a PostgreSQL schema (the test server's,
// tests/support/postgres_support.h): what a user sees does not depend on the store.
class DataStoreTest : public DataTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DataTest::SetUp();
    if (GetParam() == "Postgres") {
      const std::string url = fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
      ASSERT_FALSE(url.empty());
      data_ = "'" + url + "'";  // a shell word: the URL has ? and &
    }
  }
};
INSTANTIATE_TEST_SUITE_P(Stores, DataStoreTest, ::testing::Values("Sqlite", "Postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(DataStoreTest, RunWithData_KeepsRecordsContextsAndTheClock_TheNextRunGoesOnFromThem) {
  write("first.jsonl", R"({"op": "insert", "table": "purchase", "values": {"sys_id": "p1", "item": "laptop", "approval": "requested"}}
{"op": "insert", "table": "job", "values": {"sys_id": "j1"}}
{"op": "advance", "duration": "3h"}
)");
  Output first = run_flowrt("run --flows " + flows() + " --events " + file("first.jsonl") + " --data " + data_ + " --format json");
  ASSERT_EQ(first.code, 0) << first.out;
  Value doc = json(first.out);
  ASSERT_NE(context(doc, "ctx-1"), nullptr) << first.out;
  EXPECT_EQ((*context(doc, "ctx-1"))["status"], Value("waiting"));
  EXPECT_EQ(doc["locks"].size(), 1u);

  write("second.jsonl", R"({"op": "update", "table": "purchase", "sys_id": "p1", "values": {"approval": "approved"}}
{"op": "insert", "table": "purchase", "values": {"sys_id": "p2", "item": "chair", "approval": "requested"}}
)");
  Output second =
      run_flowrt("run --flows " + flows() + " --events " + file("second.jsonl") + " --data " + data_ + " --format json");
  ASSERT_EQ(second.code, 0) << second.out;
  doc = json(second.out);
  // The document covers everything in the store: the first run's contexts too.
  ASSERT_EQ(doc["contexts"].size(), 3u) << second.out;
  // The approval waited in the first run; this run's events approve it.
  const Value& waited = *context(doc, "ctx-1");
  EXPECT_EQ(waited["status"], Value("completed")) << waited.to_json();
  EXPECT_EQ(waited["steps"].at(0)["outputs"]["record"]["approval"], Value("approved")) << waited.to_json();
  EXPECT_EQ(waited["ended_at"], Value("2026-01-01T03:00:00.000Z"));
  EXPECT_EQ((*context(doc, "ctx-2"))["status"], Value("waiting")) << "its job is not done yet";
  const Value* next = context(doc, "ctx-3");
  ASSERT_NE(next, nullptr) << "context seqs go on from the first run";
  EXPECT_EQ((*next)["status"], Value("waiting"));
  // Records of both runs; the clock went on from where the first run left it (3h).
  ASSERT_EQ(doc["records"]["purchase"].size(), 2u);
  EXPECT_EQ(doc["records"]["purchase"].at(0)["approval"], Value("approved"));
  EXPECT_EQ(doc["records"]["purchase"].at(1)["sys_created_on"], Value("2026-01-01T03:00:00.000Z"));
  EXPECT_EQ(doc["records"]["job"].size(), 1u);
  ASSERT_EQ(doc["locks"].size(), 1u) << "ctx-2 waits on, holding its lock";
  EXPECT_EQ(doc["locks"].at(0)["holders"].at(0)["context"], Value("ctx-2"));
}

TEST_P(DataStoreTest, TheApprovalExample_AcrossTwoRuns_EndsAsInOneRun) {
  const std::string example = std::string(FLOWRT_SOURCE_DIR) + "/examples/wait-for-approval";
  Value one = json(run_flowrt("run " + example + " --format json").out);
  Output first = run_flowrt("run " + example + " --data " + data_ + " --events " + example + "/requests.jsonl --format json");
  ASSERT_EQ(first.code, 0) << first.out;
  Value waiting = json(first.out);
  ASSERT_EQ(waiting["contexts"].size(), 3u);
  for (const Value& c : waiting["contexts"].items()) EXPECT_EQ(c["status"], Value("waiting")) << c.to_json();
  Output second =
      run_flowrt("run " + example + " --data " + data_ + " --events " + example + "/decisions.jsonl --format json");
  ASSERT_EQ(second.code, 0) << second.out;
  Value two = json(second.out);
  EXPECT_EQ(two["records"].to_json(), one["records"].to_json());
  ASSERT_EQ(two["contexts"].size(), one["contexts"].size());
  for (size_t i = 0; i < one["contexts"].size(); ++i) {
    const Value& a = one["contexts"].at(i);
    const Value& b = two["contexts"].at(i);
    EXPECT_EQ(b["status"], a["status"]) << b.to_json();
    EXPECT_EQ(b["ended_at"], a["ended_at"]) << b.to_json();
    EXPECT_EQ(b["steps"].to_json(), a["steps"].to_json());
  }
}

TEST_P(DataStoreTest, Inspect_PrintsContextsQueuedEventsLocksAndTheLastRecovery) {
  write("first.jsonl", R"({"op": "insert", "table": "job", "values": {"sys_id": "j1"}}
{"op": "insert", "table": "purchase", "values": {"sys_id": "p1", "item": "laptop", "approval": "requested"}}
)");
  ASSERT_EQ(run_flowrt("run --flows " + flows() + " --events " + file("first.jsonl") + " --data " + data_).code, 0);

  Output table = run_flowrt("inspect --data " + data_);
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("ctx-1    hold"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("waiting"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("QUEUED TRIGGER EVENTS (0)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("LOCKS (1)\n  printer (limit 1, held 1)\n    held by ctx-1 weight 1 token 1"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("table purchase: 1 record"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("1 records"), std::string::npos) << table.out;

  Value doc = json(run_flowrt("inspect --data " + data_ + " --format json").out);
  ASSERT_EQ(doc["contexts"].size(), 2u) << doc.to_json();
  EXPECT_EQ(doc["contexts"].at(0)["flow"], Value("hold"));
  EXPECT_EQ(doc["locks"].at(0)["holders"].at(0)["context"], Value("ctx-1"));
  EXPECT_EQ(doc["counters"]["contexts"], Value(2));
  EXPECT_EQ(doc["recoveries"].size(), 0u);
  // Filters: by flow, by status.
  doc = json(run_flowrt("inspect --data " + data_ + " --flow await_approval --format json").out);
  ASSERT_EQ(doc["contexts"].size(), 1u);
  EXPECT_EQ(doc["contexts"].at(0)["id"], Value("ctx-2"));
  EXPECT_EQ(json(run_flowrt("inspect --data " + data_ + " --status completed --format json").out)["contexts"].size(), 0u);

  // The next run recovers: both contexts resume and wait on, the lock stays held; inspect
  // shows the report.
  write("empty.jsonl", "");
  ASSERT_EQ(run_flowrt("run --flows " + flows() + " --events " + file("empty.jsonl") + " --data " + data_).code, 0);
  table = run_flowrt("inspect --data " + data_ + " --status waiting");
  EXPECT_NE(table.out.find("2 contexts shown"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("LOCKS (1)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("LAST RECOVERY"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("2 contexts resumed, 0 started again, 0 waits or leases ran out while stopped, 0 queued contexts started, 0 ended in error, 0 locks "
                           "released"),
            std::string::npos)
      << table.out;

  // A run with flows that changed: the waiting contexts resume on the versions they
  // started with (the file keeps every published version); their job done, ctx-1 ends as
  // its old version says.
  const Value before = json(run_flowrt("run --flows " + flows() + " --events " + file("empty.jsonl") + " --data " + data_ +
                                 " --format json").out);
  ASSERT_NE(context(before, "ctx-1"), nullptr);
  const Value old_version = (*context(before, "ctx-1"))["plan_version"];
  ASSERT_TRUE(old_version.is_string());
  write("flows/hold.json", R"({"id": "hold", "trigger": {"type": "record", "table": "job", "when": "created"},
      "actions": [{"action": "lock", "inputs": {"key": "printer", "max_duration": "3d"}},
        {"action": "unlock", "inputs": {"key": "printer"}}]})");
  write("done.jsonl", R"({"op": "update", "table": "job", "sys_id": "j1", "values": {"done": true}}
)");
  Output third = run_flowrt("run --flows " + flows() + " --events " + file("done.jsonl") + " --data " + data_ + " --format json");
  ASSERT_EQ(third.code, 0) << third.out;
  const Value third_doc = json(third.out);
  const Value* held = context(third_doc, "ctx-1");
  ASSERT_NE(held, nullptr) << third.out;
  EXPECT_EQ((*held)["status"], Value("completed")) << held->to_json();
  EXPECT_EQ((*held)["plan_version"], old_version) << "it ran to its end on the version it started with";
  EXPECT_EQ((*held)["steps"].size(), 3u) << held->to_json();
  table = run_flowrt("inspect --data " + data_);
  EXPECT_NE(table.out.find("2 contexts resumed, 0 started again, 0 waits or leases ran out while stopped, 0 queued contexts started, 0 ended in error, 0 locks "
                           "released"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("LOCKS (0)"), std::string::npos) << table.out;
}

TEST_F(DataTest, BadDataFiles_AreClearErrorsNamingThem) {
  Output missing = run_flowrt("inspect --data " + file("missing.db"), true);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find(file("missing.db") + ": no such data file"), std::string::npos) << missing.out;

  write("notes.txt", "not a database at all, just some text that is long enough\n");
  write("none.jsonl", "");
  Output not_db = run_flowrt("run --flows " + flows() + " --events " + file("none.jsonl") + " --data " + file("notes.txt"), true);
  EXPECT_EQ(not_db.code, 1);
  EXPECT_NE(not_db.out.find(file("notes.txt") + ": /: not a flowrt data file"), std::string::npos) << not_db.out;
  EXPECT_EQ(not_db.out.find(file("notes.txt") + ": /: " + file("notes.txt")), std::string::npos)
      << "the file is named once: " << not_db.out;

  Output usage = run_flowrt("inspect", true);
  EXPECT_EQ(usage.code, 2);
  EXPECT_NE(usage.out.find("inspect needs --data FILE"), std::string::npos) << usage.out;
}

// A data file the user may write, in a directory the user may not: SQLite cannot make its
// -wal and -shm files there, so the error names the directory, not only the file (which
// is writable); and a file the user may not write is refused as it is opened. The file
// is left as it was.
TEST_F(DataTest, AWritableDataFileInADirectoryTheUserCannotWrite_IsAnErrorNamingTheDirectory) {
  write("events.jsonl", R"({"op": "insert", "table": "purchase", "values": {"sys_id": "p1"}})" "\n");
  const std::string events = file("events.jsonl");
  ASSERT_EQ(run_flowrt("run --flows " + flows() + " --events " + events + " --data " + data_).code, 0);
  fs::permissions(data_, fs::perms::all & ~(fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec));
  const uintmax_t size = fs::file_size(data_);

  const std::string run = "run --flows " + flows() + " --events " + events + " --data " + data_;
  Output refused = run_where_the_directory_is_read_only(run);
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find(data_ + ": "), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("its directory " + dir_.string() + " is not writable by this user"), std::string::npos)
      << refused.out;
  EXPECT_EQ(fs::file_size(data_), size) << "the file is as it was";
  EXPECT_FALSE(fs::exists(data_ + "-wal"));

  // The file itself read-only to the user: refused as it is opened, naming the file.
  const fs::perms writable = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  fs::permissions(data_, writable, fs::perm_options::remove);
  Output read_only = run_where_the_directory_is_read_only(run);
  fs::permissions(data_, writable, fs::perm_options::add);
  EXPECT_EQ(read_only.code, 1) << read_only.out;
  EXPECT_NE(read_only.out.find(data_ + ": /: cannot open for writing: Permission denied"), std::string::npos)
      << read_only.out;
  EXPECT_EQ(fs::file_size(data_), size) << "the file is as it was";
  Output inspected = run_flowrt("inspect --data " + data_);
  EXPECT_EQ(inspected.code, 0);
  EXPECT_NE(inspected.out.find("await_approval"), std::string::npos) << "its state is still there: " << inspected.out;
}

// What a user who may read a data file but not write its directory gets from inspect (an
// operator reading a service's file, a copy on read-only media): SQLite reads a WAL-mode
// file through a -shm file, which it cannot make there. A file closed cleanly (nothing in
// a -wal) is read as it is, and nothing is made beside it; a file with commits in its -wal
// is an error saying why, not a state without them.
TEST_F(DataTest, AFileInADirectoryTheUserCannotWrite_IsInspected_UnlessItsWalHoldsCommits) {
  write("events.jsonl", R"({"op": "insert", "table": "purchase", "values": {"sys_id": "p1"}})" "\n");
  ASSERT_EQ(run_flowrt("run --flows " + flows() + " --events " + file("events.jsonl") + " --data " + data_).code, 0);
  ASSERT_FALSE(fs::exists(data_ + "-wal"));
  fs::permissions(data_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);

  Output inspected = run_where_the_directory_is_read_only("inspect --data " + data_);
  EXPECT_EQ(inspected.code, 0) << inspected.out;
  EXPECT_NE(inspected.out.find("await_approval"), std::string::npos) << inspected.out;
  EXPECT_NE(inspected.out.find("waiting"), std::string::npos) << inspected.out;
  EXPECT_FALSE(fs::exists(data_ + "-shm")) << "nothing is made beside it";
  EXPECT_FALSE(fs::exists(data_ + "-wal"));
  Output as_json = run_where_the_directory_is_read_only("inspect --data " + data_ + " --format json");
  ASSERT_EQ(as_json.code, 0) << as_json.out;
  EXPECT_EQ(json(as_json.out)["records"]["purchase"].as_int(), 1) << as_json.out;

  // The same file with a commit in its -wal (a copy of it taken while an engine wrote it):
  // read without the -wal, p2 would be missing; the error says why instead.
  fs::permissions(data_, fs::perms::owner_write, fs::perm_options::add);
  const fs::path live = dir_ / "live";
  fs::create_directories(live);
  fs::copy_file(data_, live / "state.db");
  {
    EngineOptions o;
    o.store = "sqlite";
    o.data_file = (live / "state.db").string();
    Result<std::unique_ptr<Engine>> engine = Engine::open(o);
    ASSERT_TRUE(engine.is_ok()) << engine.message();
    ASSERT_TRUE((*engine)->insert("purchase", Value::object({{"sys_id", Value("p2")}})).is_ok());
    (*engine)->settle(0);
    ASSERT_TRUE(fs::exists(live / "state.db-wal"));
    ASSERT_GT(fs::file_size(live / "state.db-wal"), 0u);
    fs::copy_file(live / "state.db", data_, fs::copy_options::overwrite_existing);
    fs::copy_file(live / "state.db-wal", data_ + "-wal");
  }
  fs::remove_all(live);
  fs::permissions(data_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(data_ + "-wal", fs::perms::others_read, fs::perm_options::add);
  Output refused = run_where_the_directory_is_read_only("inspect --data " + data_);
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find(data_ + ": cannot read it: its -wal file holds commits that are not in the file yet"),
            std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("the directory " + dir_.string() + " is not writable by this user"), std::string::npos)
      << refused.out;
  EXPECT_FALSE(fs::exists(data_ + "-shm"));
  Output with_wal = run_flowrt("inspect --data " + data_ + " --format json");  // where the directory is writable
  ASSERT_EQ(with_wal.code, 0) << with_wal.out;
  EXPECT_EQ(json(with_wal.out)["records"]["purchase"].as_int(), 2) << "the -wal's commit is p2: " << with_wal.out;
}

// inspect names what it read, but not a database URL's password: a terminal's scrollback
// and a CI log keep what it prints. (The store's own messages name a database by its host,
// port and name only.)
TEST_F(DataTest, InspectOfAPostgresUrlWithAPassword_NamesItWithoutThePassword) {
  const std::string url = fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
  ASSERT_FALSE(url.empty());
  const std::string user = "://postgres@";
  const size_t at = url.find(user);
  ASSERT_NE(at, std::string::npos) << url;
  std::string with_password = url;
  with_password.replace(at, user.size(), "://postgres:s3cret@");  // the test server trusts its loopback
  with_password += "&password=s3cret";
  std::string shown = url;
  shown.replace(at, user.size(), "://postgres:***@");
  shown += "&password=***";

  write("events.jsonl", R"({"op": "insert", "table": "purchase", "values": {"sys_id": "p1"}})" "\n");
  Output ran = run_flowrt("run --flows " + flows() + " --events " + file("events.jsonl") + " --data '" + with_password + "'", true);
  ASSERT_EQ(ran.code, 0) << ran.out;
  EXPECT_EQ(ran.out.find("s3cret"), std::string::npos) << ran.out;
  Output table = run_flowrt("inspect --data '" + with_password + "'", true);
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("data file " + shown + ": "), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("s3cret"), std::string::npos) << table.out;
  Output doc = run_flowrt("inspect --data '" + with_password + "' --format json");
  ASSERT_EQ(doc.code, 0) << doc.out;
  EXPECT_EQ(json(doc.out)["file"], Value(shown)) << doc.out;
  EXPECT_EQ(doc.out.find("s3cret"), std::string::npos) << doc.out;
  drop_postgres_schema(url);
}

// A store that does not open is the run's error, named as a definition's is (FILE: /:
// what is wrong): a database by its host, port and name; a URL that does not parse as it
// is, its password hidden.
TEST_F(DataTest, ARunOnAPostgresStoreThatDoesNotOpen_NamesTheDatabase_NeverItsPassword) {
  const std::string server = postgres_server_url();
  ASSERT_FALSE(server.empty());
  write("events.jsonl", "");
  const std::string run = "run --flows " + flows() + " --events " + file("events.jsonl") + " --data ";
  Output nowhere = run_flowrt(run + "'" + server + "?options=-csearch_path%3Dno_such_schema'", true);
  EXPECT_EQ(nowhere.code, 1) << nowhere.out;
  const std::string where = server.substr(server.find("@") + 1);  // HOST:PORT/DBNAME
  EXPECT_NE(nowhere.out.find("postgresql database " + where + ": /: cannot open: no schema to keep its tables in"),
            std::string::npos)
      << nowhere.out;
  EXPECT_EQ(nowhere.out.find("<definition>"), std::string::npos) << nowhere.out;
  const Value doc = json(run_flowrt(run + "'" + server + "?options=-csearch_path%3Dno_such_schema' --format json").out);
  EXPECT_EQ(doc["errors"].at(0)["file"], Value("postgresql database " + where)) << doc.to_json();

  Output garbled = run_flowrt(run + "'postgresql://app:s3cret@[::1'", true);
  EXPECT_EQ(garbled.code, 1) << garbled.out;
  EXPECT_NE(garbled.out.find("postgresql://app:***@[::1: /: postgresql store: not a connection URL"), std::string::npos)
      << garbled.out;
  EXPECT_EQ(garbled.out.find("s3cret"), std::string::npos) << garbled.out;
}

TEST_F(DataTest, ConfigStore_KeepsStateInTheFileItNames_RelativeToTheConfig) {
  write("config.json", R"({"store": {"type": "sqlite", "path": "kept.db"}, "properties": {"durability": "full"}})");
  write("events.jsonl", R"({"op": "insert", "table": "purchase", "values": {"sys_id": "p1", "approval": "requested"}}
)");
  Output first = run_flowrt("run " + dir_.string() + " --format json");
  ASSERT_EQ(first.code, 0) << first.out;
  ASSERT_TRUE(fs::exists(dir_ / "kept.db"));
  Output second = run_flowrt("run " + dir_.string() + " --format json");
  ASSERT_EQ(second.code, 1) << "p1 is already there: the state was kept\n" << second.out;
  EXPECT_EQ(json(second.out)["records"]["purchase"].size(), 1u);
}

TEST_F(DataTest, Inspect_SaysWhichSchedulesMissedOccurrencesWhileStopped) {
  // A file whose engine ran a schedule on a virtual clock, then one on the real clock,
  // months later: the second found the occurrences it missed (what flowrt serve would meet
  // after a day down).
  constexpr const char* kEvery = R"({"id": "every", "trigger": {"type": "schedule", "every": "30m"},
    "actions": [{"action": "log", "inputs": {"message": "tick"}}]})";
  EngineOptions o;
  o.store = "sqlite";
  o.data_file = data_;
  o.simulation_seed = 7;
  o.properties.durability = Durability::kOff;
  {
    Result<std::unique_ptr<Engine>> first = Engine::open(o);
    ASSERT_TRUE(first.is_ok()) << first.message();
    ASSERT_TRUE((*first)->load_text(kEvery).empty());
    ASSERT_TRUE((*first)->advance(40 * 60 * 1000).is_ok());
  }
  o.virtual_clock = false;
  o.simulation_seed.reset();
  Value report;
  {
    Result<std::unique_ptr<Engine>> second = Engine::open(o);
    ASSERT_TRUE(second.is_ok()) << second.message();
    ASSERT_TRUE((*second)->load_text(kEvery).empty());
    report = (*second)->recover();
    (*second)->settle(0);
  }
  ASSERT_EQ(report["schedules_missed"].size(), 1u) << report.to_json();
  const Value& missed = report["schedules_missed"].at(0);
  Output table = run_flowrt("inspect --data " + data_);
  ASSERT_EQ(table.code, 0) << table.out;
  const std::string line = "  flow every: " + std::to_string(missed["occurrences"].as_int()) +
                           " schedule occurrences fell due while stopped; fired once for " +
                           std::string(missed["fires_for"].as_string()) + "\n";
  EXPECT_NE(table.out.find(line), std::string::npos) << table.out;
  Value doc = json(run_flowrt("inspect --data " + data_ + " --format json").out);
  ASSERT_EQ(doc["recoveries"].size(), 1u) << doc.to_json();
  EXPECT_EQ(doc["recoveries"].at(0)["schedules_missed"].to_json(), report["schedules_missed"].to_json());
}

}  // namespace
}  // namespace flowrt
