// The durable engine on the postgresql store, what only it needs: a lock's holder waiting
// for a record resumes with its token, and a second engine on the schema is refused.
// (durable_engine_test.cpp's DurableEngineStoresTest and resume_test.cpp's
// ResumeStoresTest run their scenarios on both durable stores.) An engine is stopped and another opened on
// the same schema; what is durable comes back and waiting contexts resume. Deterministic
// as those are: engines run in simulation.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "tests/support/engine_support.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;

// Holds a lock while it waits for the request to be approved.
constexpr const char* kPgApprove = R"({"id": "approve", "trigger": {"type": "record", "table": "request", "when": "created"},
  "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "desk", "max_duration": "2d", "max_attempts": 100, "delay": "1h"}},
    {"id": "decision", "action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
      "condition": {"field": "approved", "op": "eq", "value": true}, "timeout": "1d"}},
    {"action": "create_record", "inputs": {"table": "done", "values": {"request": "{{trigger.sys_id}}",
      "token": "{{steps.lk.token}}"}}},
    {"action": "unlock", "inputs": {"key": "desk"}}]})";

class DurableEnginePostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_FALSE(url_.empty());
  }
  EngineOptions options() const {
    EngineOptions o;
    o.store = "postgresql";
    o.store_url = url_;
    o.simulation_seed = 7;
    o.start_time = 1767225600000;  // 2026-01-01
    o.properties.durability = Durability::kNormal;
    return o;
  }
  // Closes the engine (if open) and opens one on the schema, with `defs` loaded, recovered.
  Engine& reopen(const std::vector<const char*>& defs) {
    report_ = test_support::reopen_engine(&engine_, options(), defs);
    EXPECT_NE(engine_, nullptr);
    return *engine_;
  }

  std::string url_;
  std::unique_ptr<Engine> engine_;
  Value report_;
};

TEST_F(DurableEnginePostgresTest, AWaitForARecord_ResumesHoldingItsLock_AndASecondEngineIsRefused) {
  Engine& first = reopen({kPgApprove});
  ASSERT_TRUE(first.insert("request", json(R"({"sys_id": "r1", "approved": false})")).is_ok());
  first.settle(0);
  ASSERT_EQ(first.contexts()[0].status(), "waiting");
  const int64_t token = first.contexts()[0].step("lk")["outputs"]["token"].as_int();
  // Only one engine writes the schema.
  Result<std::unique_ptr<Engine>> other = Engine::open(options());
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.message().find("in use by another engine"), std::string::npos) << other.message();

  Engine& second = reopen({kPgApprove});
  ASSERT_EQ(report_["resumed"].to_json(), R"(["ctx-1"])") << report_.to_json();
  ASSERT_EQ(second.locks().size(), 1u);
  EXPECT_EQ(second.locks().at(0)["holders"].at(0)["token"], Value(token));
  ASSERT_TRUE(second.update("request", "r1", json(R"({"approved": true})")).is_ok());
  second.settle();
  ASSERT_EQ(second.context("ctx-1")->status(), "completed") << second.context("ctx-1")->value().to_json();
  ASSERT_EQ(second.records("done").size(), 1u);
  EXPECT_EQ(second.records("done")[0]["token"], Value(token));
  EXPECT_EQ(second.locks().size(), 0u);
}

}  // namespace
}  // namespace flowrt
