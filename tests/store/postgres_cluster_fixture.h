// PostgresClusterTest: a fresh schema of the PostgreSQL test server per test, connections
// to the cluster's tables (store/postgres_cluster.h), nodes joined and a leader with its
// store. Shared by postgres_cluster_test.cpp (membership, leases, the lead, fencing,
// sessions) and postgres_inbox_test.cpp (the inbox).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "store/postgres_cluster.h"
#include "store/postgres_store.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {

class PostgresClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = test_support::fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_FALSE(url_.empty());
  }
  std::unique_ptr<PostgresCluster> link() {
    Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
    EXPECT_TRUE(c.is_ok()) << (c ? "" : c.message());
    return c ? std::move(c).value() : nullptr;
  }
  int64_t join(PostgresCluster& c, const std::string& name, int lease_ms = 60000) {
    Result<int64_t> n = c.join(name, "127.0.0.1:1", lease_ms);
    EXPECT_TRUE(n.is_ok()) << (n ? "" : n.message());
    return n ? *n : 0;
  }
  // Ends `incarnation`'s lease now, as if it had stopped sending heartbeats long ago.
  void expire(int64_t incarnation) {
    ASSERT_EQ(test_support::postgres_exec(url_, "UPDATE cluster_nodes SET lease_until = clock_timestamp() - interval '1 second' "
                                  "WHERE incarnation = " + std::to_string(incarnation)),
              "");
  }
  std::string sql_value(const std::string& sql) const { return test_support::postgres_value(url_, sql); }
  // Nodes a and b joined, a leading, with a store opened on its epoch (the leader's writer).
  struct ALeads {
    std::unique_ptr<PostgresCluster> a, b;
    int64_t ia = 0, ib = 0, epoch = 0;
    std::unique_ptr<PostgresStore> store;
  };
  ALeads a_leads() {
    ALeads l;
    l.a = link();
    l.b = link();
    EXPECT_TRUE(l.a && l.b);
    if (!l.a || !l.b) return l;
    l.ia = join(*l.a, "a");
    l.ib = join(*l.b, "b");
    Result<std::optional<ClusterLead>> lead = l.a->try_lead(l.ia);
    EXPECT_TRUE(lead.is_ok() && lead->has_value());
    if (!lead || !*lead) return l;
    l.epoch = (*lead)->epoch;
    Result<std::unique_ptr<PostgresStore>> store = PostgresStore::open(url_, SyncMode::kNormal, false, l.epoch);
    EXPECT_TRUE(store.is_ok()) << store.message();
    if (store) l.store = std::move(store).value();
    return l;
  }
  // An answer was recorded (not failed, not fenced). Epoch 0 is the lead row's until a node leads.
  static bool recorded(const Result<bool>& r) { return r.is_ok() && *r; }
  static StoreBatch batch_of_record(int n, uint64_t applied_op = 0) {
    StoreBatch b;
    b.changes.push_back(RecordPut{"t", test_support::json(R"({"sys_id":"r)" + std::to_string(n) + R"("})"), static_cast<uint64_t>(n)});
    b.counters.commit_seq = static_cast<uint64_t>(n);
    b.applied_op = applied_op;
    return b;
  }

  std::string url_;
};

}  // namespace flowrt
