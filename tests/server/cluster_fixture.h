// ClusterPostgresTest: cluster nodes (server/cluster_node.h) in this process, on a fresh
// schema of the PostgreSQL test server and a project of the server tests' flows
// (tests/server/server_fixture.h). Nodes join with join(); what made one give the lead up
// comes through lost_lead_of(); link() is a connection of the test's own to the cluster's
// tables. Shared by cluster_test.cpp (the API through any node) and cluster_lead_test.cpp
// (the lead: leases, fencing, takeovers).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/cluster_node.h"
#include "store/postgres_cluster.h"
#include "tests/server/server_fixture.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt::testing_http {

class ClusterPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = test_support::fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_FALSE(url_.empty());
    dir_ = fs::path(test_support::temp_path("flowrt-cluster-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flows");
    for (const auto& f : kFlows) std::ofstream(dir_ / "flows" / f[0]) << f[1];
  }
  void TearDown() override {
    nodes_.clear();
    fs::remove_all(dir_);
  }
  // Node `name` joins (and leads when no live node does).
  server::ClusterNode& join(const std::string& name, int lease_ms = 3000) {
    auto node = open(name, lease_ms, url_);
    EXPECT_TRUE(node) << (node ? "" : node.error().describe());
    nodes_.push_back(std::move(node).value());
    return *nodes_.back();
  }
  // Node `name` on `url` (the test's schema, with connection parameters of its own).
  Result<std::unique_ptr<server::ClusterNode>, Diagnostics> open(const std::string& name, int lease_ms,
                                                                  const std::string& url) {
    server::ServeOptions options;
    options.dir = dir_.string();
    options.listen = listen_;
    options.log_level = "error";
    options.data = url;
    server::ClusterOptions cluster;
    cluster.node = name;
    cluster.lease_ms = lease_ms;
    cluster.forward_timeout = forward_timeout_;
    cluster.advertise = advertise_;
    cluster.on_lost_lead = [this, name](const std::string& why) {
      std::lock_guard lock(lost_mu_);
      lost_[name].set_value(why);
    };
    {
      std::lock_guard lock(lost_mu_);
      lost_.try_emplace(name);  // a future may be taken before the node opens
    }
    return server::ClusterNode::open(options, cluster);
  }
  std::future<std::string> lost_lead_of(const std::string& name) {
    std::lock_guard lock(lost_mu_);
    return lost_[name].get_future();
  }
  std::unique_ptr<PostgresCluster> link() {
    Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
    EXPECT_TRUE(c.is_ok());
    return std::move(c).value();
  }
  std::string sql_value(const std::string& sql) const { return test_support::postgres_value(url_, sql); }
  // Waits (at most 20 s) for entry `seq`'s answer.
  std::optional<InboxStatus> answered(PostgresCluster& listener, uint64_t seq) {
    for (int i = 0; i < 200; ++i) {
      Result<std::optional<InboxStatus>> e = listener.entry(seq);
      if (e && *e && (*e)->reply) return **e;
      (void)listener.wait(100);
    }
    return std::nullopt;
  }

  std::string url_;
  fs::path dir_;
  std::chrono::milliseconds forward_timeout_{20000};  // of the nodes joined from then on
  std::string listen_ = "127.0.0.1:0";                // --listen of the nodes joined from then on
  std::string advertise_;                             // --advertise of the nodes joined from then on
  std::vector<std::unique_ptr<server::ClusterNode>> nodes_;
  std::mutex lost_mu_;
  std::map<std::string, std::promise<std::string>> lost_;
};

}  // namespace flowrt::testing_http
