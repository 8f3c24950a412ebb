// HistoryReader (server/history_reader.h): a follower's reads of ended contexts from the
// database: only an ended context's record is given, and pages of contexts ended with a
// status; after a read that failed, nothing is read from the database (every read is the
// leader's) for kRetryMs, counted on the test's own clock, and then the database is read
// again. A read the server holds up is cancelled by it, and a session whose set-up failed
// is not used again.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <boost/asio.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "plans/value_json.h"
#include "server/history_reader.h"
#include "store/postgres_store.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt::testing_http {
namespace {

using test_support::fresh_postgres_schema;
using test_support::postgres_exec;
using test_support::postgres_value;

StoreChange context(uint64_t seq, const char* status, Value record) {
  StoredContext c;
  c.seq = seq;
  c.id = "ctx-" + std::to_string(seq);
  c.flow = "f";
  c.status = status;
  c.trigger = Value::object({{"type", Value("api")}});
  c.record = std::move(record);
  return StoreChange{ContextPut{std::move(c)}};
}

// A fresh schema of the test server holding `changes`, written as a leader's store writes
// them: its URL ("" and a failure when it could not be made).
std::string schema_holding(const std::string& name, std::vector<StoreChange> changes) {
  const std::string url = fresh_postgres_schema(name);
  EXPECT_FALSE(url.empty());
  if (url.empty()) return "";
  Result<std::unique_ptr<PostgresStore>> writer = PostgresStore::open(url, SyncMode::kNormal);
  EXPECT_TRUE(writer.is_ok()) << writer.message();
  if (!writer) return "";
  StoreBatch batch;
  batch.changes = std::move(changes);
  const Status written = (*writer)->write(batch);
  EXPECT_TRUE(written.is_ok()) << written.message();
  return written ? url : "";
}

TEST(HistoryReaderPostgresTest, GivesAnEndedContextsRecordOnly_AfterAFailedRead_LeavesTheDatabaseAloneForKRetryMs) {
  const std::string url = schema_holding("history_reader", {
      context(1, "completed", Value::object({{"n", Value(1)}})),
      context(2, "waiting", Value::object({{"n", Value(2)}}))
  });
  ASSERT_FALSE(url.empty());
  int64_t now = 0;  // the reader's clock, ms
  server::HistoryReader reader(url, [&now] { return now; });
  std::optional<Value> ended = reader.ended_record("ctx-1");
  ASSERT_TRUE(ended);
  EXPECT_EQ((*ended)["n"], Value(1));
  EXPECT_FALSE(reader.ended_record("ctx-2")) << "not ended: the leader's to answer";
  EXPECT_FALSE(reader.ended_record("ctx-3")) << "not there";
  EXPECT_FALSE(reader.ended_record("nonsense"));

  // The history table goes away: the read fails, and gives nothing.
  ASSERT_EQ(postgres_exec(url, "ALTER TABLE history RENAME TO history_away"), "");
  EXPECT_FALSE(reader.ended_record("ctx-1"));
  ASSERT_EQ(postgres_exec(url, "ALTER TABLE history_away RENAME TO history"), "");
  // The database could be read now, but is left alone until kRetryMs has passed: a
  // database that cannot be reached holds no more reads up meanwhile.
  EXPECT_FALSE(reader.ended_record("ctx-1")) << "read again at once";
  now = server::HistoryReader::kRetryMs - 1;
  EXPECT_FALSE(reader.ended_record("ctx-1")) << "read again before kRetryMs";
  now = server::HistoryReader::kRetryMs;
  std::optional<Value> again = reader.ended_record("ctx-1");
  ASSERT_TRUE(again) << "not read again after kRetryMs";
  EXPECT_EQ((*again)["n"], Value(1));
  EXPECT_TRUE(reader.ended_record("ctx-1")) << "read as before once a read succeeded";
}

TEST(HistoryReaderPostgresTest, AnEndedPage_IsOfThatStatusNewestFirstBelowTheCursor_AFailedReadGivesNothing) {
  const std::string url = schema_holding("history_reader_page", {
      context(1, "completed", Value::object({{"n", Value(1)}})),
      context(2, "error", Value::object({{"n", Value(2)}})),
      context(3, "completed", Value::object({{"n", Value(3)}})),
      context(4, "waiting", Value::object({{"n", Value(4)}})),
      context(5, "completed", Value()),  // ended, its record not written yet
      context(6, "completed", Value::object({{"n", Value(6)}}))
  });
  ASSERT_FALSE(url.empty());
  int64_t now = 0;
  server::HistoryReader reader(url, [&now] { return now; });
  auto ns = [](const std::optional<std::vector<Value>>& page) {
    std::string out;
    for (const Value& r : *page) out += std::to_string(r["n"].as_int()) + " ";
    return out;
  };
  std::optional<std::vector<Value>> page = reader.ended_page("", "completed", UINT64_MAX, 10);
  ASSERT_TRUE(page);
  EXPECT_EQ(ns(page), "6 3 1 ") << "newest first; none without its record";
  page = reader.ended_page("f", "completed", 6, 1);
  ASSERT_TRUE(page);
  EXPECT_EQ(ns(page), "3 ") << "below the cursor, at most the limit";
  page = reader.ended_page("g", "completed", UINT64_MAX, 10);
  ASSERT_TRUE(page);
  EXPECT_TRUE(page->empty()) << "another flow's";
  page = reader.ended_page("", "error", UINT64_MAX, 10);
  ASSERT_TRUE(page);
  EXPECT_EQ(ns(page), "2 ");
  EXPECT_FALSE(reader.ended_page("", "waiting", UINT64_MAX, 10)) << "not an ended status: the leader's to answer";
  EXPECT_FALSE(reader.ended_page("", "", UINT64_MAX, 10));

  ASSERT_EQ(postgres_exec(url, "ALTER TABLE history RENAME TO history_away"), "");
  EXPECT_FALSE(reader.ended_page("", "completed", UINT64_MAX, 10)) << "a failed read gives nothing";
  ASSERT_EQ(postgres_exec(url, "ALTER TABLE history_away RENAME TO history"), "");
  EXPECT_FALSE(reader.ended_page("", "completed", UINT64_MAX, 10)) << "and the database is left alone for kRetryMs";
  EXPECT_FALSE(reader.ended_record("ctx-1")) << "for every read";
  now = server::HistoryReader::kRetryMs;
  page = reader.ended_page("", "completed", UINT64_MAX, 10);
  ASSERT_TRUE(page);
  EXPECT_EQ(ns(page), "6 3 1 ");
}

// The reader's URL, named so that its sessions can be told from every other test's.
std::string named(const std::string& url, const std::string& name) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "application_name=" + name;
}

TEST(HistoryReaderPostgresTest, AReadTheServerHoldsUp_IsCancelledByTheServer_TheLeaderAnswersMeanwhile) {
  const std::string url =
      schema_holding("history_reader_held", {context(1, "completed", Value::object({{"n", Value(1)}}))});
  ASSERT_FALSE(url.empty());
  int64_t now = 0;
  server::HistoryReader reader(url, [&now] { return now; });
  ASSERT_TRUE(reader.ended_record("ctx-1"));
  // Another session holds the history table (an operator's ALTER TABLE, a VACUUM FULL):
  // a read waits for it, on the follower's HTTP thread, until the server cancels it.
  PGconn* holder = PQconnectdb(url.c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  PGresult* held = PQexec(holder, "BEGIN; LOCK TABLE history IN ACCESS EXCLUSIVE MODE");
  ASSERT_EQ(PQresultStatus(held), PGRES_COMMAND_OK) << PQerrorMessage(holder);
  PQclear(held);
  std::atomic<bool> answered{false};
  std::optional<Value> read;
  std::thread http_thread([&] {
    read = reader.ended_record("ctx-1");
    answered = true;
  });
  const bool cancelled = test_support::WaitFor([&] { return answered.load(); });
  PQclear(PQexec(holder, "COMMIT"));  // let go in any case, so that a read still waiting ends
  PQfinish(holder);
  http_thread.join();
  EXPECT_TRUE(cancelled) << "a read the database holds up is given up on (statement_timeout)";
  EXPECT_FALSE(read) << "and gives nothing: the leader answers it";
  now = server::HistoryReader::kRetryMs;
  EXPECT_TRUE(reader.ended_record("ctx-1")) << "read again once the table is free";
}

TEST(HistoryReaderPostgresTest, ASessionWhoseSetUpFailedAfterAReconnect_IsNotUsed_TheNextReadConnectsAfresh) {
  const std::string url =
      schema_holding("history_reader_setup", {context(1, "completed", Value::object({{"n", Value(1)}}))});
  ASSERT_FALSE(url.empty());
  const std::string name = "flowrt_reader_setup_" + std::to_string(::getpid());
  int64_t now = 0;
  server::HistoryReader reader(named(url, name), [&now] { return now; });
  ASSERT_TRUE(reader.ended_record("ctx-1"));
  // The reader's sessions end while the table is away: the read's new session cannot
  // prepare its statement, and the read fails.
  ASSERT_EQ(postgres_exec(url, "ALTER TABLE history RENAME TO history_away"), "");
  ASSERT_EQ(postgres_value(url, "SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity "
                                "WHERE application_name = '" + name + "'"),
            "t");
  EXPECT_FALSE(reader.ended_record("ctx-1"));
  ASSERT_EQ(postgres_exec(url, "ALTER TABLE history_away RENAME TO history"), "");
  now = server::HistoryReader::kRetryMs;
  std::optional<Value> again = reader.ended_record("ctx-1");
  ASSERT_TRUE(again) << "the half set-up session was used again, without its prepared statement";
  EXPECT_EQ((*again)["n"], Value(1));
}

// A database that takes connections and never answers them: counts them.
class SilentDatabase {
 public:
  SilentDatabase() : acceptor_(io_, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] {
      while (true) {
        boost::asio::ip::tcp::socket s(io_);
        boost::system::error_code ec;
        acceptor_.accept(s, ec);
        if (ec || stopping_.load()) return;
        held_.push_back(std::move(s));
        ++accepted_;
      }
    });
  }
  ~SilentDatabase() {
    stopping_ = true;
    boost::asio::ip::tcp::socket wake(io_);  // the accepting thread takes this one, and ends
    boost::system::error_code ignored;
    wake.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int accepted() const { return accepted_.load(); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::vector<boost::asio::ip::tcp::socket> held_;  // the accepting thread's
  std::atomic<int> accepted_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

TEST(HistoryReaderPostgresTest, AReadThatWaitedForAnOpenThatFailed_DoesNotTryTheDatabaseAgain) {
  SilentDatabase silent;
  int64_t now = 0;
  server::HistoryReader reader("postgresql://nobody@127.0.0.1:" + std::to_string(silent.port()) + "/x",
                               [&now] { return now; });
  std::optional<Value> first, second;
  std::thread opening([&] { first = reader.ended_record("ctx-1"); });
  ASSERT_TRUE(test_support::WaitFor([&] { return silent.accepted() == 1; }));
  // The first read's open waits kTimeoutSeconds for the database; this one waits for it.
  std::thread waiting([&] { second = reader.ended_record("ctx-1"); });
  opening.join();
  waiting.join();
  EXPECT_FALSE(first);
  EXPECT_FALSE(second);
  EXPECT_EQ(silent.accepted(), 1) << "the read that waited for the failed open tried the database again";
}

TEST(HistoryReaderPostgresTest, ItsConnectionsGiveUpOnADatabaseThatCannotBeReached_BothUrlForms) {
  const std::string limits =
      "connect_timeout=2&tcp_user_timeout=2000&keepalives_idle=1&keepalives_interval=1&keepalives_count=1";
  EXPECT_EQ(server::HistoryReader::with_timeouts("postgresql://u@h:5/db"), "postgresql://u@h:5/db?" + limits);
  EXPECT_EQ(server::HistoryReader::with_timeouts("postgresql://u@h:5/db?options=-csearch_path%3Ds"),
            "postgresql://u@h:5/db?options=-csearch_path%3Ds&" + limits);
  std::string spaced = limits;
  for (char& c : spaced) {
    if (c == '&') c = ' ';
  }
  EXPECT_EQ(server::HistoryReader::with_timeouts("host=h dbname=db"), "host=h dbname=db " + spaced);
}

}  // namespace
}  // namespace flowrt::testing_http
