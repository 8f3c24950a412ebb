// Keyed writes on a durable store (runtime/keyed_writes.h): a write's first commit carries
// its key's mark, so after a crash a key is unknown (nothing applied) or marked (applied),
// and an answered key comes back with its answer until it is a day old; the kept keys'
// byte budget. The DurableEngineStoresTest ones run on SQLite and PostgreSQL.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/keyed_writes.h"
#include "tests/store/durable_engine_fixture.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;
using namespace flowrt::durable_engine_fixture;

// Claims ("ci", "k1", "req") on `engine` and inserts order o1 under it, as a server runs a
// keyed write; returns whether the insert committed (it carries the key's mark if so).
bool claim_and_insert_o1(Engine& engine) {
  KeyedWrites& keys = engine.core().keyed_writes;
  EXPECT_EQ(keys.claim("ci", "k1", "req").found, KeyedWrites::Found::kNew);
  KeyedWrites::Scope scope(keys, "ci", "k1", "req");
  EXPECT_TRUE(engine.insert("order", json(R"({"sys_id": "o1"})")).is_ok());
  return scope.committed();
}

TEST_P(DurableEngineStoresTest, AKeyedWriteThatCommitted_ButWasNotAnswered_IsAppliedUnanswered_InTheNextEngine) {
  Engine& first = reopen({kCopy});
  KeyedWrites& keys = first.core().keyed_writes;
  ASSERT_EQ(keys.claim("ci", "k1", "req").found, KeyedWrites::Found::kNew);
  {
    KeyedWrites::Scope scope(keys, "ci", "k1", "req");
    ASSERT_TRUE(first.insert("order", json(R"({"sys_id": "o1"})")).is_ok());
    EXPECT_TRUE(scope.committed());
  }
  // A claim whose write committed nothing leaves nothing behind.
  ASSERT_EQ(keys.claim("ci", "k2", "req").found, KeyedWrites::Found::kNew);
  {
    KeyedWrites::Scope scope(keys, "ci", "k2", "req");
    EXPECT_FALSE(first.insert("order", json(R"({"sys_id": "o1"})")).is_ok());  // a duplicate: refused
    EXPECT_FALSE(scope.committed());
  }
  // The engine stops before either is answered (as a server killed then would).
  Engine& second = reopen({kCopy});
  KeyedWrites& again = second.core().keyed_writes;
  const KeyedWrites::Claim k1 = again.claim("ci", "k1", "req");
  EXPECT_EQ(k1.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(k1.answer.body, "") << "an insert starts no context of its own";
  EXPECT_EQ(again.claim("ci", "k1", "another").found, KeyedWrites::Found::kOtherRequest);
  EXPECT_EQ(again.claim("ci", "k2", "req").found, KeyedWrites::Found::kNew);
  EXPECT_EQ(second.records("order").size(), 1u);
}

// A write left unanswered keeps what it is known to have started (a call's context) with its
// mark, in memory and in the store, and counts it against the keys' budget.
TEST_P(DurableEngineStoresTest, AnUnansweredWrite_KeepsWhatItStarted_InTheNextEngineToo) {
  Engine& first = reopen({kCopy});
  KeyedWrites& keys = first.core().keyed_writes;
  const bool committed = claim_and_insert_o1(first);
  ASSERT_TRUE(committed);
  const size_t bytes_before = keys.bytes();
  const std::string started = R"({"context_id":"ctx-7"})";
  EXPECT_EQ(keys.finish("ci", "k1", std::nullopt, committed, started), 0u) << "no answer to wait for";
  EXPECT_EQ(keys.bytes(), bytes_before + started.size());
  KeyedWrites::Claim now = keys.claim("ci", "k1", "req");
  EXPECT_EQ(now.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(now.answer.body, started);

  Engine& second = reopen({kCopy});
  KeyedWrites::Claim after = second.core().keyed_writes.claim("ci", "k1", "req");
  EXPECT_EQ(after.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(after.answer.body, started);
}

// A call or a test run stopped before its answer (as a server killed then would) is told, in
// the next engine, the context it started: its first commit queued that context, and the
// key's mark in the same batch keeps the context's id.
TEST_P(DurableEngineStoresTest, AKeyedCallOrTestRun_StoppedBeforeItsAnswer_IsToldItsContext_InTheNextEngine) {
  constexpr const char* kPing =
      R"({"id": "ping", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "hi"}}]})";
  Engine& first = reopen({kCopy, kPing});
  KeyedWrites& keys = first.core().keyed_writes;
  std::string called, tested;
  ASSERT_EQ(keys.claim("ci", "call", "req").found, KeyedWrites::Found::kNew);
  {
    KeyedWrites::Scope scope(keys, "ci", "call", "req");
    Result<std::string> id = first.call_flow("ping", json(R"({"n": 1})"));
    ASSERT_TRUE(id.is_ok()) << id.message();
    called = *id;
    EXPECT_TRUE(scope.committed());
  }
  ASSERT_EQ(keys.claim("ci", "test", "req").found, KeyedWrites::Found::kNew);
  {
    KeyedWrites::Scope scope(keys, "ci", "test", "req");
    Result<std::string> id = first.test_flow("ping", Value(), Value());
    ASSERT_TRUE(id.is_ok()) << id.message();
    tested = *id;
  }
  ASSERT_NE(called, tested);

  Engine& second = reopen({kCopy, kPing});
  KeyedWrites& again = second.core().keyed_writes;
  const KeyedWrites::Claim call = again.claim("ci", "call", "req");
  EXPECT_EQ(call.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(call.answer.body, R"({"context_id":")" + called + R"("})");
  const KeyedWrites::Claim test = again.claim("ci", "test", "req");
  EXPECT_EQ(test.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(test.answer.body, R"({"context_id":")" + tested + R"("})");
  // The contexts are there, and finish.
  second.settle(0);
  for (const std::string& id : {called, tested}) {
    ASSERT_TRUE(second.context(id).has_value()) << id;
    EXPECT_EQ(second.context(id)->status(), "completed") << id;
  }
}

// A call that committed and then failed before it could answer (its store failing the wait
// for durability: the server answers 503 and cannot tell what it started) is told its context
// when sent again to the same engine, as after a restart: what the key's mark keeps.
TEST_P(DurableEngineStoresTest, AKeyedCallThatFailedAfterItCommitted_IsToldItsContext_InThisEngineToo) {
  constexpr const char* kPing =
      R"({"id": "ping", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "hi"}}]})";
  Engine& engine = reopen({kCopy, kPing});
  KeyedWrites& keys = engine.core().keyed_writes;
  ASSERT_EQ(keys.claim("ci", "call", "req").found, KeyedWrites::Found::kNew);
  std::string called;
  bool committed = false;
  {
    KeyedWrites::Scope scope(keys, "ci", "call", "req");
    Result<std::string> id = engine.call_flow("ping", json(R"({"n": 1})"));
    ASSERT_TRUE(id.is_ok()) << id.message();
    called = *id;
    committed = scope.committed();
  }
  ASSERT_TRUE(committed);
  const size_t bytes_before = keys.bytes();
  // Its outcome not known: nothing said of what it started.
  EXPECT_EQ(keys.finish("ci", "call", std::nullopt, committed), 0u);
  EXPECT_EQ(keys.bytes(), bytes_before) << "what the mark keeps was counted while the call was in flight";
  const std::string expected = R"({"context_id":")" + called + R"("})";
  const KeyedWrites::Claim now = keys.claim("ci", "call", "req");
  EXPECT_EQ(now.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(now.answer.body, expected);

  Engine& second = reopen({kCopy, kPing});
  const KeyedWrites::Claim after = second.core().keyed_writes.claim("ci", "call", "req");
  EXPECT_EQ(after.found, KeyedWrites::Found::kAppliedUnanswered);
  EXPECT_EQ(after.answer.body, expected);
}

TEST_P(DurableEngineStoresTest, AnAnsweredKey_ComesBackWithItsAnswer_AndIsForgottenADayLater) {
  Engine& first = reopen({kCopy});
  KeyedWrites& keys = first.core().keyed_writes;
  const bool committed = claim_and_insert_o1(first);
  keys.finish("ci", "k1", KeyedWrites::Answer{201, R"({"Location":"/o1"})", "{\"sys_id\":\"o1\"}"}, committed);
  // Another caller's key of the same name is another key.
  EXPECT_EQ(keys.claim("ops", "k1", "req").found, KeyedWrites::Found::kNew);
  keys.finish("ops", "k1", KeyedWrites::Answer{400, "{}", "no"}, false);

  Engine& second = reopen({kCopy});
  KeyedWrites& again = second.core().keyed_writes;
  KeyedWrites::Claim k1 = again.claim("ci", "k1", "req");
  ASSERT_EQ(k1.found, KeyedWrites::Found::kAnswered);
  EXPECT_EQ(k1.answer.status, 201);
  EXPECT_EQ(k1.answer.headers, R"({"Location":"/o1"})");
  EXPECT_EQ(k1.answer.body, R"({"sys_id":"o1"})");
  EXPECT_EQ(again.claim("ops", "k1", "req").answer.status, 400);

  // A day and a minute later, the next claim prunes them, in memory and in the store.
  ASSERT_TRUE(second.advance(KeyedWrites::kKeepMs + 60 * 1000).is_ok());
  EXPECT_EQ(again.claim("ci", "k3", "req").found, KeyedWrites::Found::kNew);
  again.finish("ci", "k3", std::nullopt, false);
  EXPECT_EQ(again.size(), 0u);
  ASSERT_TRUE(second.insert("order", json(R"({"sys_id": "o2"})")).is_ok());  // a batch to carry the prune
  Engine& third = reopen({kCopy});
  EXPECT_EQ(third.core().keyed_writes.size(), 0u);
  EXPECT_EQ(third.core().keyed_writes.claim("ci", "k1", "req").found, KeyedWrites::Found::kNew);
}

// The same rules in memory (no store): a key in flight is told so, and an answer whose
// outcome is not known keeps the key as applied only when its write committed.
TEST(KeyedWritesTest, InFlight_OtherRequest_AndOutcomesNotKnown) {
  Engine engine;
  KeyedWrites& keys = engine.core().keyed_writes;
  ASSERT_EQ(keys.claim("ci", "k", "req").found, KeyedWrites::Found::kNew);
  EXPECT_EQ(keys.claim("ci", "k", "req").found, KeyedWrites::Found::kInFlight);
  EXPECT_EQ(keys.claim("ci", "k", "other").found, KeyedWrites::Found::kOtherRequest);
  keys.finish("ci", "k", std::nullopt, /*committed=*/false);  // free again
  ASSERT_EQ(keys.claim("ci", "k", "req").found, KeyedWrites::Found::kNew);
  bool committed = false;
  {
    KeyedWrites::Scope scope(keys, "ci", "k", "req");
    ASSERT_TRUE(engine.insert("t", json(R"({"n": 1})")).is_ok());
    committed = scope.committed();
  }
  EXPECT_TRUE(committed);
  keys.finish("ci", "k", std::nullopt, committed);
  EXPECT_EQ(keys.claim("ci", "k", "req").found, KeyedWrites::Found::kAppliedUnanswered);
  // A finish without a claim in flight changes nothing.
  keys.finish("ci", "k", KeyedWrites::Answer{200, "{}", "x"}, true);
  EXPECT_EQ(keys.claim("ci", "k", "req").found, KeyedWrites::Found::kAppliedUnanswered);
}

// The keys kept have a budget of bytes: a new key past it is refused (kFull) and nothing
// claimed, the keys kept are still answered, and once kept keys are a day old the claim
// that finds the budget full prunes them and is let in.
TEST(KeyedWritesTest, ANewKeyPastTheBudget_IsRefused_TheKeptStayAnswered_ADayLaterThereIsRoom) {
  EngineOptions o;
  o.simulation_seed = 7;
  Engine engine(o);
  KeyedWrites& keys = engine.core().keyed_writes;
  EXPECT_EQ(keys.limit_bytes(), KeyedWrites::kDefaultLimitBytes);
  ASSERT_EQ(keys.claim("ci", "k0", "req").found, KeyedWrites::Found::kNew);
  keys.finish("ci", "k0", KeyedWrites::Answer{201, "{}", std::string(100, 'x')}, true);
  const size_t one = keys.bytes();
  ASSERT_GT(one, 100u) << "the answer's body counts";
  keys.set_limit_bytes(3 * one);
  ASSERT_EQ(keys.claim("ci", "k1", "req").found, KeyedWrites::Found::kNew);
  keys.finish("ci", "k1", KeyedWrites::Answer{201, "{}", std::string(100, 'x')}, true);
  ASSERT_EQ(keys.claim("ci", "k2", "req").found, KeyedWrites::Found::kNew);  // in flight: it counts
  EXPECT_EQ(keys.claim("ci", "k3", "req").found, KeyedWrites::Found::kFull);
  EXPECT_EQ(keys.claim("ops", "k3", "req").found, KeyedWrites::Found::kFull) << "the budget is the server's";
  EXPECT_EQ(keys.size(), 3u) << "a refused key is not kept";
  // The keys kept are answered as before, and one freed makes room.
  EXPECT_EQ(keys.claim("ci", "k0", "req").found, KeyedWrites::Found::kAnswered);
  EXPECT_EQ(keys.claim("ci", "k2", "req").found, KeyedWrites::Found::kInFlight);
  keys.finish("ci", "k2", std::nullopt, /*committed=*/false);
  EXPECT_EQ(keys.claim("ci", "k3", "req").found, KeyedWrites::Found::kNew);
  keys.finish("ci", "k3", KeyedWrites::Answer{201, "{}", std::string(100, 'x')}, true);
  EXPECT_EQ(keys.claim("ci", "k4", "req").found, KeyedWrites::Found::kFull);
  // Not yet a day: still full (that claim pruned, finding nothing old enough).
  ASSERT_TRUE(engine.advance(KeyedWrites::kKeepMs - 30 * 1000).is_ok());
  EXPECT_EQ(keys.claim("ci", "k4", "req").found, KeyedWrites::Found::kFull);
  // 31 s later the keys are past their day: a full budget prunes them at once (a second
  // after the last prune, not the minute a prune otherwise waits).
  ASSERT_TRUE(engine.advance(31 * 1000).is_ok());
  EXPECT_EQ(keys.claim("ci", "k4", "req").found, KeyedWrites::Found::kNew);
  EXPECT_EQ(keys.size(), 1u);
  keys.finish("ci", "k4", std::nullopt, /*committed=*/false);
  EXPECT_EQ(keys.size(), 0u);
  EXPECT_EQ(keys.bytes(), 0u) << "every byte counted in is counted out";
}

}  // namespace
}  // namespace flowrt
