// The fixtures of the tests of an engine on a durable store, stopped and opened again on
// the same file (or PostgreSQL schema): durable_engine_test.cpp and keyed_writes_test.cpp.
// DurableEngineStoresTest runs on both durable stores (instantiated once, in
// durable_engine_test.cpp); DurableEngineTest on SQLite only. Engines run in simulation
// (no worker threads; contexts run only inside settle and advance, on the test's thread).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "tests/support/engine_support.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt::durable_engine_fixture {

constexpr const char* kCopy = R"({"id": "copy", "trigger": {"type": "record", "table": "order", "when": "created"},
  "actions": [{"action": "create_record", "inputs": {"table": "shipment", "values": {"order": "{{trigger.sys_id}}"}}}]})";

class DurableEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test_support::temp_path("flowrt-durable-" + test_support::current_test_file_name()) + ".db";
    remove_files();
  }
  void TearDown() override {
    engine_.reset();
    remove_files();
  }
  void remove_files() {
    test_support::remove_sqlite_files(path_);
  }
  virtual EngineOptions options() const {
    EngineOptions o;
    o.store = "sqlite";
    o.data_file = path_;
    o.simulation_seed = 7;
    o.properties.durability = Durability::kOff;  // the file outlives the engine, not the machine
    return o;
  }
  // Closes the engine (if open) and opens one on the file, with `defs` loaded, recovered.
  Engine& reopen(const std::vector<const char*>& defs, EngineOptions o) {
    report_ = test_support::reopen_engine(&engine_, std::move(o), defs);
    return *engine_;
  }
  Engine& reopen(const std::vector<const char*>& defs) { return reopen(defs, options()); }

  std::string path_;
  std::unique_ptr<Engine> engine_;
  Value report_;
};

// The same on each durable store: "Sqlite" (a file) or "Postgres" (a schema of the test
// server, tests/support/postgres_support.h).
class DurableEngineStoresTest : public DurableEngineTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DurableEngineTest::SetUp();
    if (GetParam() == "Postgres") {
      url_ = test_support::fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
      ASSERT_FALSE(url_.empty());
    }
  }
  EngineOptions options() const override {
    EngineOptions o = DurableEngineTest::options();
    if (!url_.empty()) {
      o.store = "postgresql";
      o.data_file.clear();
      o.store_url = url_;
    }
    return o;
  }

  std::string url_;
};

}  // namespace flowrt::durable_engine_fixture
