// The fixture of the postgresql store's own tests (postgres_store_test.cpp,
// postgres_store_sessions_test.cpp): a schema of its own on the fixture's server for each
// test (tests/support/postgres_support.h), and the changes the tests write.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plans/value_json.h"
#include "store/postgres_store.h"
#include "store/store.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt::postgres_store_fixture {

using test_support::fresh_postgres_schema;
using test_support::postgres_value;

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
    c.trigger = test_support::json(R"({"type": "api"})");
    c.record = std::move(record);
    return StoreChange{ContextPut{std::move(c)}};
  }
  // `n` records r<first>.. of table t, at positions first + 1...
  static std::vector<StoreChange> records(int first, int n) {
    std::vector<StoreChange> out;
    for (int i = first; i < first + n; ++i) {
      const std::string k = std::to_string(i);
      out.push_back(RecordPut{"t", test_support::json(R"({"sys_id":"r)" + k + R"(","n":)" + k + "}"),
                              static_cast<uint64_t>(i + 1)});
    }
    return out;
  }
  // The schema's SQL, for checks from outside the store.
  std::string sql_value(const std::string& sql) const { return postgres_value(url_, sql); }

  std::string url_;
};

}  // namespace flowrt::postgres_store_fixture
