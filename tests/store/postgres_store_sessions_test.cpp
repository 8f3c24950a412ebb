// The postgresql store's writer session: the limits it is given, a writer whose session
// was cut or ended (the next writer is not kept out; the store connects again at its next
// write), a connection dropped in the middle of a batch, and bad URLs and unreachable
// servers. Each test has a schema of its own on the fixture's server
// (tests/store/postgres_store_fixture.h).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#include "store/coalesce.h"
#include "store/postgres_rows.h"
#include "store/postgres_store.h"
#include "store/store.h"
#include "tests/store/postgres_store_fixture.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;
using postgres_store_fixture::PostgresStoreTest;

// Ends the store's writer session from outside, as a server restart or an administrator
// would; its next write finds it gone.
void end_writer_session(PostgresStore& store) {
  EXPECT_EQ(postgres_value(postgres_server_url(),
                           "SELECT pg_terminate_backend(" + std::to_string(store.writer_backend_pid()) + ", 5000)"),
            "t");
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
    EXPECT_EQ((*read[i])->record.value(), json(R"({"n": )" + std::to_string(i + 1) + "}"));
  }

  // The server ends every reader's session: the next reads connect again.
  EXPECT_EQ(sql_value("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE application_name = '" +
                      app + "' AND pid <> " + std::to_string(store->writer_backend_pid())),
            std::to_string(PostgresStore::kReaders));
  for (int i = 1; i <= 6; ++i) {
    Result<std::optional<StoredContext>> again = store->load_context(i);
    ASSERT_TRUE(again.is_ok()) << again.message();
    ASSERT_TRUE(*again);
    EXPECT_EQ((*again)->record.value(), json(R"({"n": )" + std::to_string(i) + "}"));
  }
}

// A store closed and opened again at once (an engine restarted) finds the lock free: the
// closing store lets go of it before it disconnects, not once the server's backend exits.
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
  // Nor one whose unreadable part libpq quotes, a password in it.
  for (const char* url : {"postgresql://flowrt:s3cret-word@[::1", "postgresql://flowrt:s3cret-%zz@127.0.0.1/appdb",
                          "postgresql://127.0.0.1/appdb?password=s3cret-%zz"}) {
    auto quoted = opened(url);
    ASSERT_FALSE(quoted.is_ok()) << url;
    EXPECT_NE(quoted.message().find("not a connection URL"), std::string::npos) << quoted.message();
    EXPECT_NE(quoted.message().find("***"), std::string::npos) << quoted.message();
    EXPECT_EQ(quoted.message().find("s3cret"), std::string::npos) << "a password in a message: " << quoted.message();
  }
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
  EXPECT_NE(nowhere.message().find("no_such_schema is not there"), std::string::npos) << nowhere.message();
  // One that is there, but that the role may not use: PostgreSQL gives no schema either,
  // and the message says which it is and what to grant.
  const std::string schema = "t_no_usage_" + std::to_string(::getpid());
  ASSERT_EQ(postgres_exec(server, "DROP SCHEMA IF EXISTS " + schema + "; CREATE SCHEMA " + schema +
                                      "; DROP ROLE IF EXISTS flowrt_no_usage; CREATE ROLE flowrt_no_usage LOGIN"),
            "");
  const std::string as_role = "postgresql://flowrt_no_usage@" + server.substr(server.find('@') + 1);
  auto unusable = opened(as_role + "?options=-csearch_path%3D" + schema);
  ASSERT_FALSE(unusable.is_ok());
  EXPECT_NE(unusable.message().find(schema + " is there, but role flowrt_no_usage may not use it (GRANT USAGE ON SCHEMA " +
                                    schema + " TO flowrt_no_usage)"),
            std::string::npos)
      << unusable.message();
  EXPECT_EQ(postgres_exec(server, "DROP SCHEMA " + schema + "; DROP ROLE flowrt_no_usage"), "");
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
  end_writer_session(*store);
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
  end_writer_session(*store);
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

// Another writer had the schema while this one's session was gone, and let it go: what this
// store knows of the schema (its counters, where its rows are) is stale, so connecting
// again is refused and it writes no more. Until 2026-12-06 it took the free lock and
// wrote its batch over the other's counters.
TEST_F(PostgresStoreTest, AWriterWhoseSessionEnded_WhileAnotherWroteAndClosed_WritesNoMore) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, {StoreChange{RecordPut{"t", json(R"({"sys_id": "a"})"), 1}}}, 1);
  end_writer_session(*store);
  {
    std::unique_ptr<PostgresStore> other = open();
    ASSERT_NE(other, nullptr);
    write(*other, {StoreChange{RecordPut{"t", json(R"({"sys_id": "b"})"), 2}}}, 4);
  }
  StoreBatch late;
  late.changes = {StoreChange{RecordPut{"t", json(R"({"sys_id": "c"})"), 2}}};
  late.counters.commit_seq = 2;
  (void)store->write(late);  // finds the session gone
  for (int i = 0; i < 2; ++i) {
    Status refused = store->write(late);
    ASSERT_FALSE(refused.is_ok()) << "try " << i;
    EXPECT_NE(refused.message().find("written by another engine"), std::string::npos) << refused.message();
  }
  EXPECT_EQ(sql_value("SELECT commit_seq FROM counters"), "4");
  EXPECT_EQ(sql_value("SELECT string_agg(sys_id, ',' ORDER BY position) FROM records"), "a,b");
  std::unique_ptr<PostgresStore> next = open();
  EXPECT_NE(next, nullptr) << "the refused store holds no lock";
}

// The lock held by this store's own ended session (a server that has not noticed that its
// client was cut off keeps the backend, and the lock, until its TCP keepalive ends it):
// the holder row is still this store's, so connecting again ends that backend and takes
// the lock. Here a session of the test's holds the lock as the old backend would, named in
// the holder row.
TEST_F(PostgresStoreTest, AWriterWhoseOldSessionStillHoldsTheLock_EndsIt_AndGoesOn) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  write(*store, {StoreChange{RecordPut{"t", json(R"({"sys_id": "a"})"), 1}}}, 1);
  end_writer_session(*store);
  PGconn* old = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(old), CONNECTION_OK);
  const std::string take = "SELECT pg_advisory_lock(hashtext('flowrt'), hashtext('" + store->schema() +
                           "')); UPDATE holder SET backend_pid = pg_backend_pid()";
  postgres_rows::ResultPtr taken(PQexec(old, take.c_str()));
  ASSERT_TRUE(postgres_rows::result_ok(taken.get())) << PQerrorMessage(old);
  StoreBatch next;
  next.changes = {StoreChange{RecordPut{"t", json(R"({"sys_id": "b"})"), 2}}};
  next.counters.commit_seq = 2;
  (void)store->write(next);  // finds the session gone
  Status again = store->write(next);
  EXPECT_TRUE(again.is_ok()) << again.message();
  postgres_rows::ResultPtr after(PQexec(old, "SELECT 1"));
  EXPECT_NE(PQresultStatus(after.get()), PGRES_TUPLES_OK) << "the old session was not ended";
  PQfinish(old);
  EXPECT_EQ(sql_value("SELECT string_agg(sys_id, ',' ORDER BY position) FROM records"), "a,b");
}

// A batch whose COMMIT was cut may have committed, and the engine writes it again: every
// kind of change a (coalesced) batch carries then lands once, a recovery's note too.
TEST_F(PostgresStoreTest, ABatchThatCommittedBeforeItsSessionEnded_WrittenAgain_LandsOnce_ItsRecoveryNoteToo) {
  std::unique_ptr<PostgresStore> store = open();
  ASSERT_NE(store, nullptr);
  StoreBatch batch;
  batch.changes = {StoreChange{RecordPut{"t", json(R"({"sys_id": "a"})"), 1}},
                   StoreChange{RecordPut{"t", json(R"({"sys_id": "b"})"), 2}},
                   StoreChange{RecordRemove{"t", "b", 2}},
                   context_put(1, "queued"),
                   StoreChange{ContextUpdate{1, "completed", 1, 2, json(R"({"status": "completed"})"), Value()}},
                   context_put(2, "queued"),
                   StoreChange{ContextUpdate{2, "waiting", 1, -1, json(R"({"status": "waiting"})"), Value()}},
                   StoreChange{LockPut{"L", json(R"({"holder": "ctx-2", "token": 1})")}},
                   StoreChange{RunOncePut{"t", "a", "f", true}},
                   StoreChange{RecoveryNote{30, json(R"({"resumed": ["ctx-2"]})")}},
                   StoreChange{KeyedWritePut{"ci", "k1", "req-1", 201, "{}", "{}", 40}}};
  batch.counters.commit_seq = 2;
  coalesce_context_changes(batch);  // as the engine's journal sends every batch
  ASSERT_TRUE(store->write(batch).is_ok());
  end_writer_session(*store);
  ASSERT_FALSE(store->write(batch).is_ok()) << "finds the session gone";
  ASSERT_TRUE(store->write(batch).is_ok());
  ASSERT_TRUE(store->write(batch).is_ok());
  EXPECT_EQ(store->reconnects(), 1u);
  EXPECT_EQ(sql_value("SELECT string_agg(sys_id, ',') FROM records"), "a");
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text, ',') FROM history"), "1");
  EXPECT_EQ(sql_value("SELECT string_agg(seq::text || ' ' || status, ',') FROM contexts"), "2 waiting");
  EXPECT_EQ(sql_value("SELECT count(*) FROM locks"), "1");
  EXPECT_EQ(sql_value("SELECT count(*) FROM run_once"), "1");
  EXPECT_EQ(sql_value("SELECT count(*) FROM keyed_writes"), "1");
  EXPECT_EQ(sql_value("SELECT count(*) FROM recoveries"), "1") << "a note written again is that note";
  // Another recovery's note is one of its own, even with the same report.
  write(*store, {StoreChange{RecoveryNote{50, json(R"({"resumed": ["ctx-2"]})")}}}, 3);
  EXPECT_EQ(sql_value("SELECT string_agg(at::text, ',' ORDER BY id) FROM recoveries"), "30,50");
}

}  // namespace
}  // namespace flowrt
