// HistoryReader (server/history_reader.h): a follower's reads of ended contexts from the
// database: only an ended context's record is given, and pages of contexts ended with a
// status; after a read that failed, nothing is
// read from the database (every read is the leader's) for kRetryMs, counted on the test's
// own clock, and then the database is read again.
#include <gtest/gtest.h>

#include "plans/value_json.h"
#include "server/history_reader.h"
#include "store/postgres_store.h"
#include "tests/support/postgres_support.h"

namespace flowrt::testing_http {
namespace {

using test_support::fresh_postgres_schema;
using test_support::postgres_exec;

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

TEST(HistoryReaderTest, GivesAnEndedContextsRecordOnly_AfterAFailedRead_LeavesTheDatabaseAloneForKRetryMs) {
  const std::string url = fresh_postgres_schema("history_reader");
  ASSERT_FALSE(url.empty());
  {
    Result<std::unique_ptr<PostgresStore>> writer = PostgresStore::open(url, SyncMode::kNormal);
    ASSERT_TRUE(writer.is_ok()) << writer.message();
    StoreBatch batch;
    batch.changes.push_back(context(1, "completed", Value::object({{"n", Value(1)}})));
    batch.changes.push_back(context(2, "waiting", Value::object({{"n", Value(2)}})));
    ASSERT_TRUE((*writer)->write(batch).is_ok());
  }
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

TEST(HistoryReaderTest, AnEndedPage_IsOfThatStatusNewestFirstBelowTheCursor_AFailedReadGivesNothing) {
  const std::string url = fresh_postgres_schema("history_reader_page");
  ASSERT_FALSE(url.empty());
  {
    Result<std::unique_ptr<PostgresStore>> writer = PostgresStore::open(url, SyncMode::kNormal);
    ASSERT_TRUE(writer.is_ok()) << writer.message();
    StoreBatch batch;
    batch.changes.push_back(context(1, "completed", Value::object({{"n", Value(1)}})));
    batch.changes.push_back(context(2, "error", Value::object({{"n", Value(2)}})));
    batch.changes.push_back(context(3, "completed", Value::object({{"n", Value(3)}})));
    batch.changes.push_back(context(4, "waiting", Value::object({{"n", Value(4)}})));
    batch.changes.push_back(context(5, "completed", Value()));  // ended, its record not written yet
    batch.changes.push_back(context(6, "completed", Value::object({{"n", Value(6)}})));
    ASSERT_TRUE((*writer)->write(batch).is_ok());
  }
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

TEST(HistoryReaderTest, ItsConnectionsGiveUpOnADatabaseThatCannotBeReached_BothUrlForms) {
  EXPECT_EQ(server::HistoryReader::with_timeouts("postgresql://u@h:5/db"),
            "postgresql://u@h:5/db?connect_timeout=2&tcp_user_timeout=2000");
  EXPECT_EQ(server::HistoryReader::with_timeouts("postgresql://u@h:5/db?options=-csearch_path%3Ds"),
            "postgresql://u@h:5/db?options=-csearch_path%3Ds&connect_timeout=2&tcp_user_timeout=2000");
  EXPECT_EQ(server::HistoryReader::with_timeouts("host=h dbname=db"),
            "host=h dbname=db connect_timeout=2 tcp_user_timeout=2000");
}

}  // namespace
}  // namespace flowrt::testing_http
