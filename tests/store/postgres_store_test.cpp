// The postgresql store beyond the conformance suite: what only a database server brings.
// Its schema version, the one-writer lock, connection errors (quick and clear, never a
// password), a connection dropped in the middle of a batch, and readers while a writer
// writes. Each test has a schema of its own on the fixture's server
// (tests/support/postgres_support.h).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres_store.h"
#include "store/store.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_FALSE(url_.empty());
  }
  std::unique_ptr<PostgresStore> open(bool read_only = false) {
    Result<std::unique_ptr<PostgresStore>> s = PostgresStore::open(url_, SyncMode::kNormal, read_only);
    EXPECT_TRUE(s.is_ok()) << (s ? "" : s.message());
    return s ? std::move(s).value() : nullptr;
  }
  static void write(Store& store, std::vector<StoreChange> changes, uint64_t commit_seq = 0) {
    StoreBatch batch;
    batch.changes = std::move(changes);
    batch.counters.commit_seq = commit_seq;
    Status s = store.write(batch);
    ASSERT_TRUE(s.is_ok()) << s.message();
  }
  // Context seq of flow f, triggered by the API, as a put.
  static StoreChange context_put(uint64_t seq, const char* status, Value record = Value()) {
    StoredContext c;
    c.seq = seq;
    c.id = "ctx-" + std::to_string(seq);
    c.flow = "f";
    c.status = status;
    c.trigger = json(R"({"type": "api"})");
    c.record = std::move(record);
    return StoreChange{ContextPut{std::move(c)}};
  }
  // `n` records r<first>.. of table t, at positions first + 1...
  static std::vector<StoreChange> records(int first, int n) {
    std::vector<StoreChange> out;
    for (int i = first; i < first + n; ++i) {
      out.push_back(RecordPut{"t", json(R"({"sys_id":"r)" + std::to_string(i) + R"(","n":)" + std::to_string(i) + "}"),
                              static_cast<uint64_t>(i + 1)});
    }
    return out;
  }
  // The schema's SQL, for checks from outside the store.
  std::string sql_value(const std::string& sql) const { return postgres_value(url_, sql); }

  std::string url_;
};

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

// A listening socket that never answers: a server that hangs.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd_, 4) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~SilentListener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A store closed and opened again at once (an engine restarted) finds the lock free: the
// closing store lets go of it before it disconnects, not once the server's backend exits.
// A writer's session ends a transaction its client left idle (flowrt died or was cut off
// in the middle of a batch, without the server noticing) after kIdleInTransactionTimeoutMs,
// as the cluster's sessions do (PostgresClusterTest.ItsSessionsEndATransactionLeftIdle):
// a leader's batch locks the lead row for its fence, and would otherwise wedge the
// takeover until the server's TCP keepalive noticed. A read-only store writes nothing and
// is not limited.
TEST_F(PostgresStoreTest, TheWritersSession_EndsATransactionLeftIdle) {
  std::unique_ptr<PostgresStore> writer = open();
  ASSERT_TRUE(writer);
  Result<std::string> shown = writer->writer_setting("idle_in_transaction_session_timeout");
  ASSERT_TRUE(shown.is_ok()) << shown.message();
  EXPECT_EQ(*shown, "10s");
  std::unique_ptr<PostgresStore> reader = open(/*read_only=*/true);
  ASSERT_TRUE(reader);
  Result<std::string> reader_shown = reader->writer_setting("idle_in_transaction_session_timeout");
  ASSERT_TRUE(reader_shown.is_ok()) << reader_shown.message();
  EXPECT_EQ(*reader_shown, "0");
}

// Reads run at once on up to kReaders connections of their own: six threads reading while
// a lock held from outside holds every read up in the server find kReaders of them waiting
// there, each on its own connection (the other two wait for one in flowrt), and each gets
// its context once the lock goes. Reads one at a time keep one connection, and a reader
// connection the server ended is connected again (its statements prepared again) by the
// next read on it. The store's sessions are told apart by their application_name.
TEST_F(PostgresStoreTest, ReadsRunAtOnce_OnUpToKReadersConnections_OneAtATimeOnOne_ALostOneIsConnectedAgain) {
  const std::string app = "flowrt_readers_" + std::to_string(::getpid());
  const std::string plain = url_;  // the test's own sessions, not counted
  url_ += "&application_name=" + app;
  std::unique_ptr<PostgresStore> store = open();
  auto sql_value = [&](const std::string& sql) { return postgres_value(plain, sql); };
  ASSERT_TRUE(store);
  std::vector<StoreChange> ended;
  for (int i = 1; i <= 6; ++i) ended.push_back(context_put(i, "completed", json(R"({"n": )" + std::to_string(i) + "}")));
  write(*store, std::move(ended));
  const std::string sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + app + "'";
  const std::string readers = sessions + " AND pid <> " + std::to_string(store->writer_backend_pid());
  for (int i = 1; i <= 6; ++i) ASSERT_TRUE(store->load_context(i).is_ok());
  EXPECT_EQ(sql_value(readers), "1") << "reads one at a time keep one connection";

  PGconn* holder = PQconnectdb(plain.c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  PGresult* locked = PQexec(holder, "BEGIN; LOCK TABLE history IN ACCESS EXCLUSIVE MODE");
  ASSERT_EQ(PQresultStatus(locked), PGRES_COMMAND_OK);
  PQclear(locked);
  std::vector<std::thread> threads;
  std::vector<Result<std::optional<StoredContext>>> read(6, Result<std::optional<StoredContext>>(std::nullopt));
  for (int i = 0; i < 6; ++i) threads.emplace_back([&, i] { read[i] = store->load_context(i + 1); });
  const std::string waiting = readers + " AND wait_event_type = 'Lock'";
  for (int turn = 0; turn < 2000 && sql_value(waiting) != std::to_string(PostgresStore::kReaders); ++turn) {
    std::this_thread::yield();
  }
  EXPECT_EQ(sql_value(waiting), std::to_string(PostgresStore::kReaders)) << "reads held up in the server at once";
  EXPECT_EQ(sql_value(readers), std::to_string(PostgresStore::kReaders)) << "no more connections than kReaders";
  PGresult* done = PQexec(holder, "COMMIT");
  PQclear(done);
  PQfinish(holder);
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(read[i].is_ok()) << read[i].message();
    ASSERT_TRUE(*read[i]);
    EXPECT_EQ((*read[i])->record, json(R"({"n": )" + std::to_string(i + 1) + "}"));
  }

  // The server ends every reader's session: the next reads connect again.
  EXPECT_EQ(sql_value("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE application_name = '" +
                      app + "' AND pid <> " + std::to_string(store->writer_backend_pid())),
            std::to_string(PostgresStore::kReaders));
  for (int i = 1; i <= 6; ++i) {
    Result<std::optional<StoredContext>> again = store->load_context(i);
    ASSERT_TRUE(again.is_ok()) << again.message();
    ASSERT_TRUE(*again);
    EXPECT_EQ((*again)->record, json(R"({"n": )" + std::to_string(i) + "}"));
  }
}

TEST_F(PostgresStoreTest, ClosedAndOpenedAgainAtOnce_IsNeverRefused) {
  for (int i = 0; i < 30; ++i) {
    std::unique_ptr<PostgresStore> store = open();
    ASSERT_NE(store, nullptr) << "opening " << i;
    write(*store, records(i, 1), static_cast<uint64_t>(i + 1));
  }
}

// A writer whose session ended without letting go (its process killed, its connection cut):
// the next writer waits for the server to end that session's backend, then opens.
TEST_F(PostgresStoreTest, AWriterWhoseSessionWasCut_DoesNotKeepTheNextOneOut) {
  for (int i = 0; i < 5; ++i) {
    std::unique_ptr<PostgresStore> cut = open();
    ASSERT_NE(cut, nullptr);
    write(*cut, records(i, 1), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(postgres_exec(postgres_server_url(),
                            "SELECT pg_terminate_backend(" + std::to_string(cut->writer_backend_pid()) + ")"),
              "");
    std::unique_ptr<PostgresStore> next = open();
    ASSERT_NE(next, nullptr) << "refused after the session " << i << " was cut";
    Result<StoredState> state = next->load();
    ASSERT_TRUE(state.is_ok()) << state.message();
    EXPECT_EQ(state->counters.commit_seq, static_cast<uint64_t>(i + 1));
  }
}

TEST_F(PostgresStoreTest, BadUrlsAndUnreachableServers_GiveClearErrorsQuickly_NeverAPassword) {
  using Clock = std::chrono::steady_clock;
  auto opened = [](const std::string& url) {
    StoreOptions o;
    o.kind = "postgresql";
    o.url = url;
    return open_store(o);
  };
  // Nothing listens on the port: refused at once.
  auto start = Clock::now();
  auto refused = opened("postgresql://flowrt:s3cret-word@127.0.0.1:1/appdb");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("postgresql database 127.0.0.1:1/appdb: cannot connect: "), std::string::npos)
      << refused.message();
  EXPECT_EQ(refused.message().find("s3cret"), std::string::npos) << "a password in a message: " << refused.message();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  // A server that accepts the connection and never answers: connect_timeout ends the wait.
  SilentListener silent;
  ASSERT_GT(silent.port(), 0);
  start = Clock::now();
  auto hung = opened("postgresql://flowrt:s3cret-word@127.0.0.1:" + std::to_string(silent.port()) +
                     "/appdb?connect_timeout=2");
  ASSERT_FALSE(hung.is_ok());
  EXPECT_NE(hung.message().find("cannot connect"), std::string::npos) << hung.message();
  EXPECT_NE(hung.message().find("timeout"), std::string::npos) << hung.message();
  EXPECT_EQ(hung.message().find("s3cret"), std::string::npos) << hung.message();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  // Not a URL libpq reads.
  auto garbled = opened("postgresql://127.0.0.1:5432/db?no_such_option=1");
  ASSERT_FALSE(garbled.is_ok());
  EXPECT_NE(garbled.message().find("not a connection URL"), std::string::npos) << garbled.message();
  // The real server, a database it does not have.
  const std::string server = postgres_server_url();
  const std::string base = server.substr(0, server.rfind('/'));
  auto missing = opened(base + "/no_such_db");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("/no_such_db: cannot connect: "), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos) << missing.message();
  // A search_path naming no schema that exists: nowhere to keep the tables.
  auto nowhere = opened(server + "?options=-csearch_path%3Dno_such_schema");
  ASSERT_FALSE(nowhere.is_ok());
  EXPECT_NE(nowhere.message().find("no schema to keep its tables in"), std::string::npos) << nowhere.message();
  // An empty schema opened read only is no store.
  auto empty = PostgresStore::open(fresh_postgres_schema("empty"), SyncMode::kNormal, /*read_only=*/true);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.message().find("holds no flowrt store"), std::string::npos) << empty.message();
  // What a store says it is: the database, no password.
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->kind(), "postgresql");
  EXPECT_EQ(store->describe().rfind("postgresql database 127.0.0.1:", 0), 0u) << store->describe();
  EXPECT_EQ(store->describe().substr(store->describe().size() - 9), "/postgres") << store->describe();
}

TEST_F(PostgresStoreTest, AConnectionDroppedDuringABatch_FailsTheWrite_TheNextConnectsAgain_NoPartOfTheCutBatchIsThere) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, records(0, 10), 10);
  const int pid = store->writer_backend_pid();
  const std::string server = postgres_server_url();
  // A batch big enough to take a while; the backend is ended once it is inside its
  // transaction (xact_start set), so in the middle of the batch.
  std::atomic<bool> done{false};
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    const std::string in_transaction =
        "SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid) + " AND xact_start IS NOT NULL";
    while (!done.load()) {
      if (postgres_value(server, in_transaction) == "1") {
        killed = postgres_value(server, "SELECT pg_terminate_backend(" + std::to_string(pid) + ", 5000)") == "t";
        return;
      }
    }
  });
  StoreBatch big;
  big.changes = records(10, 100000);
  big.counters.commit_seq = 100010;
  Status s = store->write(big);
  done = true;
  killer.join();
  ASSERT_TRUE(killed.load()) << "the batch ended before its connection could be dropped";
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("cannot write a batch of 100000 changes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the next write connects again"), std::string::npos) << s.message();
  EXPECT_EQ(store->reconnects(), 0u);
  {
    std::unique_ptr<PostgresStore> reader = open(/*read_only=*/true);
    ASSERT_NE(reader, nullptr);
    Result<StoredState> state = reader->load();
    ASSERT_TRUE(state.is_ok()) << state.message();
    ASSERT_EQ(state->tables.size(), 1u);
    EXPECT_EQ(state->tables[0].records.size(), 10u) << "nothing of the dropped batch";
    EXPECT_EQ(state->counters.commit_seq, 10u);
  }
  // The next write connects again, on a new session that holds the lock.
  write(*store, records(10, 5), 15);
  EXPECT_EQ(store->reconnects(), 1u);
  EXPECT_NE(store->writer_backend_pid(), pid);
  Result<std::string> sync = store->writer_setting("synchronous_commit");
  ASSERT_TRUE(sync.is_ok()) << sync.message();
  EXPECT_EQ(*sync, "local") << "the new session keeps the store's durability";
  store.reset();
  std::unique_ptr<PostgresStore> reopened = open();
  ASSERT_NE(reopened, nullptr);
  Result<StoredState> state = reopened->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  ASSERT_EQ(state->tables.size(), 1u);
  EXPECT_EQ(state->tables[0].records.size(), 15u);
  EXPECT_EQ(state->counters.commit_seq, 15u);
}

// A writer whose session ends (the server restarted, an administrator ended it) connects
// again at its next write, taking the lock again; the batch written again after a cut
// lands once whether or not the cut one had committed. When another writer opened the
// schema meanwhile, connecting again is refused naming it, and the first writes no more.
TEST_F(PostgresStoreTest, AWriterWhoseSessionEnded_ConnectsAgain_UnlessAnotherWriterHasTheSchemaNow) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  const Value done = json(R"({"status": "completed"})");
  write(*store, {context_put(1, "running"), context_put(2, "running"), StoreChange{RecordPut{"t", json(R"({"sys_id": "a"})"), 1}}}, 1);
  auto end_session = [&] {
    EXPECT_EQ(postgres_value(postgres_server_url(),
                             "SELECT pg_terminate_backend(" + std::to_string(store->writer_backend_pid()) + ", 5000)"),
              "t");
  };
  end_session();
  // This batch finds the session gone; written again, it lands once. Context 1 moves to
  // history: the writer knew it live, and after connecting again reads where rows are anew.
  StoreBatch second;
  second.changes = {StoreChange{ContextUpdate{1, "completed", 1, 2, done, Value()}},
                    StoreChange{RecordPut{"t", json(R"({"sys_id": "b"})"), 2}}};
  second.counters.commit_seq = 2;
  Status cut = store->write(second);
  ASSERT_FALSE(cut.is_ok());
  ASSERT_TRUE(store->write(second).is_ok());
  ASSERT_TRUE(store->write(second).is_ok()) << "the same batch again: every statement puts its row's values";
  EXPECT_EQ(store->reconnects(), 1u);
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text, ',') FROM history"), "1");
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text, ',') FROM contexts"), "2");
  EXPECT_EQ(sql_value("SELECT string_agg(sys_id, ',' ORDER BY position) FROM records"), "a,b");
  write(*store, {StoreChange{ContextUpdate{2, "completed", 1, 2, done, Value()}}}, 3);
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text, ',' ORDER BY seq) FROM history"), "1,2");

  // Cut again, and another writer opens the schema before this one writes.
  end_session();
  std::unique_ptr<PostgresStore> other = open();
  ASSERT_NE(other, nullptr);
  StoreBatch third;
  third.changes = {StoreChange{RecordPut{"t", json(R"({"sys_id": "c"})"), 3}}};
  third.counters.commit_seq = 4;
  (void)store->write(third);  // finds the session gone
  Status refused = store->write(third);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("connecting again failed"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("in use"), std::string::npos) << refused.message();
  EXPECT_EQ(sql_value("SELECT count(*) FROM records WHERE sys_id = 'c'"), "0");
  write(*other, {StoreChange{RecordPut{"t", json(R"({"sys_id": "d"})"), 3}}}, 4);
  EXPECT_EQ(sql_value("SELECT string_agg(sys_id, ',' ORDER BY position) FROM records"), "a,b,d");
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

TEST_F(PostgresStoreTest, ARecordPutWhereAnotherStands_RefusesTheWholeBatch) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, records(0, 2), 2);
  StoreBatch clash;
  clash.changes = records(2, 300);  // past one pipeline chunk
  clash.changes.push_back(RecordPut{"t", json(R"({"sys_id":"other"})"), 1});
  clash.counters.commit_seq = 303;
  Status s = store->write(clash);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("record other of table t at position 1: another record is there"), std::string::npos)
      << s.message();
  Result<StoredState> state = store->load();
  ASSERT_TRUE(state.is_ok()) << state.message();
  EXPECT_EQ(state->tables[0].records.size(), 2u);
  EXPECT_EQ(state->counters.commit_seq, 2u);
  write(*store, records(2, 3), 5);  // the store goes on
}

}  // namespace
}  // namespace flowrt
