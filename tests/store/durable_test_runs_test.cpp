// Test runs (test_flow) of a draft on a durable store, over a stop and a start of the
// engine: a queued one runs the version it was asked to test, a waiting one resumes on it
// (docs/DURABILITY.md names these tests). Each runs on both durable stores, deterministic
// as durable_engine_test.cpp's: engines run in simulation.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "tests/support/engine_support.h"
#include "tests/store/durable_engine_fixture.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;
using namespace flowrt::durable_engine_fixture;

// Saves the draft action `say`, whose output `s` is `word`.
void save_say(Engine& engine, std::string_view word) {
  const std::string say = R"({"id": "say", "type": "action", "status": "draft",
    "outputs": [{"name": "s", "type": "string"}],
    "actions": [{"action": "assign_outputs", "inputs": {"values": {"s": ")" + std::string(word) + R"("}}}]})";
  ASSERT_TRUE(engine.save(json(say)).is_ok());
}

// Saves `say` (saying "hi") and the draft flow `shown`, which shows draft actions
// (show_draft_actions) and logs what `say` gives, after a minute's wait (step "pause") when
// `pause`.
void save_say_and_shown(Engine& engine, bool pause) {
  save_say(engine, "hi");
  const std::string wait = pause ? R"({"id": "pause", "action": "wait", "inputs": {"duration": "1m"}},)" : "";
  ASSERT_TRUE(engine.save(json(R"({"id": "shown", "status": "draft", "show_draft_actions": true,
    "trigger": {"type": "api"}, "actions": [{"id": "g", "action": "say"},)" + wait + R"(
    {"action": "log", "inputs": {"message": "{{steps.g.s}}"}}]})")).is_ok());
}

// A test run (test_flow) that had not started when the engine stopped runs in the next
// engine on the version it was asked to test: the definition its stored row keeps, not the
// flow's published version, and not a draft saved since. Until 2026-12-06 it ran there on the
// published version (or ended in error when there was none).
constexpr const char* kGreetPublished = R"({"id": "greet", "trigger": {"type": "api"},
  "actions": [{"id": "say_published", "action": "log", "inputs": {"message": "published"}}]})";
constexpr const char* kGreetDraft = R"({"id": "greet", "status": "draft", "trigger": {"type": "api"},
  "actions": [{"id": "say_draft", "action": "log", "inputs": {"message": "draft"}},
              {"id": "say_more", "action": "log", "inputs": {"message": "more"}}]})";

TEST_P(DurableEngineStoresTest, AQueuedTestRun_RunsTheDraftItTests_InTheNextEngine) {
  Engine& first = reopen({kGreetPublished});
  ASSERT_TRUE(first.save(json(kGreetDraft)).is_ok());
  Result<std::string> id = first.test_flow("greet", Value(), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  // No settle: the test run is queued when the engine stops.
  ASSERT_EQ(first.context(*id)->value()["started_at"], Value());

  Engine& second = reopen({kGreetPublished});
  ASSERT_EQ(report_["started"].to_json(), "[\"" + *id + "\"]") << report_.to_json();
  second.settle();
  const std::optional<ContextRecord> c = second.context(*id);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status(), "completed") << c->value().to_json();
  EXPECT_EQ(c->log_messages(), (std::vector<std::string>{"draft", "more"})) << c->value().to_json();
  EXPECT_FALSE(c->step("say_draft").is_null()) << c->value().to_json();
  EXPECT_TRUE(c->step("say_published").is_null()) << c->value().to_json();
  // Ended, it keeps the version it ran in its record, not the definition in its trigger.
  Result<std::string> call = second.call_flow("greet");
  ASSERT_TRUE(call.is_ok()) << call.message();
  second.settle();
  EXPECT_NE(second.context(*call)->plan_version(), c->plan_version()) << "the published version is another";
  Engine& third = reopen({kGreetPublished});
  EXPECT_TRUE(report_.is_null()) << report_.to_json();
  EXPECT_EQ(third.context(*id)->log_messages(), (std::vector<std::string>{"draft", "more"}));
  Result<std::optional<StoredContext>> row = third.core().store->load_context(static_cast<uint64_t>(c->seq()));
  ASSERT_TRUE(row.is_ok() && row->has_value()) << row.message();
  EXPECT_EQ((*row)->trigger.find("test"), nullptr) << (*row)->trigger.to_json();
}

TEST_P(DurableEngineStoresTest, AQueuedTestRun_RunsTheVersionItWasAskedFor_WhenTheDraftChangesBeforeTheRestart) {
  constexpr const char* kWavePublished = R"({"id": "wave", "trigger": {"type": "api"},
    "actions": [{"action": "log", "inputs": {"message": "wave"}}]})";
  Engine& first = reopen({kGreetPublished, kWavePublished});
  ASSERT_TRUE(first.save(json(kGreetDraft)).is_ok());
  Result<std::string> asked = first.test_flow("greet", Value(), Value());
  ASSERT_TRUE(asked.is_ok()) << asked.message();
  ASSERT_TRUE(first.save(json(R"({"id": "greet", "status": "draft", "trigger": {"type": "api"},
    "actions": [{"action": "log", "inputs": {"message": "edited"}}]})")).is_ok());
  // A test of a draft that does not compile stays one: the next engine ends it with its
  // compile error, as this one would have, although the published version compiles.
  ASSERT_TRUE(first.save(json(R"({"id": "wave", "status": "draft", "trigger": {"type": "api"},
    "actions": [{"action": "bogus"}]})")).is_ok());
  Result<std::string> broken = first.test_flow("wave", Value(), Value());
  ASSERT_TRUE(broken.is_ok()) << broken.message();

  Engine& second = reopen({kGreetPublished, kWavePublished});
  ASSERT_EQ(report_["started"].size(), 2u) << report_.to_json();
  second.settle();
  EXPECT_EQ(second.context(*asked)->status(), "completed") << second.context(*asked)->value().to_json();
  EXPECT_EQ(second.context(*asked)->log_messages(), (std::vector<std::string>{"draft", "more"}))
      << "the version asked for runs, not the draft saved since";
  const std::optional<ContextRecord> b = second.context(*broken);
  EXPECT_EQ(b->status(), "error") << b->value().to_json();
  EXPECT_NE(b->error_message().find("does not compile"), std::string::npos) << b->value().to_json();
  EXPECT_NE(b->error_message().find("bogus"), std::string::npos) << b->value().to_json();
}

TEST_P(DurableEngineStoresTest, AQueuedTestRunOfAFlowWithOnlyADraft_RunsInTheNextEngine) {
  Engine& first = reopen({});
  ASSERT_TRUE(first.save(json(R"({"id": "greet", "status": "draft", "trigger": {"type": "api"},
    "actions": [{"action": "log", "inputs": {"message": "hello {{inputs.who}}"}}]})")).is_ok());
  Result<std::string> id = first.test_flow("greet", Value(), json(R"({"who": "ada"})"));
  ASSERT_TRUE(id.is_ok()) << id.message();

  Engine& second = reopen({});
  ASSERT_EQ(report_["started"].size(), 1u) << report_.to_json();
  second.settle();
  const std::optional<ContextRecord> c = second.context(*id);
  EXPECT_EQ(c->status(), "completed") << c->value().to_json();
  EXPECT_EQ(c->log_messages(), std::vector<std::string>{"hello ada"}) << c->value().to_json();
}

// What the queued test uses is resolved when it starts, as test_flow resolves it: the
// draft of an action it shows (show_draft_actions), as that draft is then.
TEST_P(DurableEngineStoresTest, AQueuedTestRun_ResolvesWhatItUses_WhenItStarts) {
  Engine& first = reopen({});
  ASSERT_NO_FATAL_FAILURE(save_say_and_shown(first, /*pause=*/false));
  Result<std::string> id = first.test_flow("shown", Value(), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  ASSERT_NO_FATAL_FAILURE(save_say(first, "bye"));

  Engine& second = reopen({});
  second.settle();
  const std::optional<ContextRecord> c = second.context(*id);
  EXPECT_EQ(c->status(), "completed") << c->value().to_json();
  EXPECT_EQ(c->log_messages(), std::vector<std::string>{"bye"}) << c->value().to_json();
}

// A test run (test_flow) that had started and was waiting when the engine stopped resumes
// in the next engine on the version it was testing: its checkpoint names the draft's plan
// version, which the file does not keep (it keeps published versions), and recovery
// compiles it from the definition the row keeps (its trigger's "test" member), also when
// the draft changed meanwhile. Until 2026-12-06 it ended in error there ("its plan version
// ... is gone").
constexpr const char* kWaitingDraft = R"({"id": "greet", "status": "draft", "trigger": {"type": "api"},
  "actions": [{"id": "say_draft", "action": "log", "inputs": {"message": "draft"}},
              {"id": "pause", "action": "wait", "inputs": {"duration": "1m"}},
              {"id": "note", "action": "create_record", "inputs": {"table": "tested", "values": {"by": "draft"}}},
              {"id": "say_after", "action": "log", "inputs": {"message": "after the wait"}}]})";

TEST_P(DurableEngineStoresTest, AWaitingTestRun_ResumesOnTheDraftItTests_InTheNextEngine) {
  Engine& first = reopen({kGreetPublished});
  ASSERT_TRUE(first.save(json(kWaitingDraft)).is_ok());
  Result<std::string> id = first.test_flow("greet", Value(), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  first.settle(0);
  ASSERT_EQ(first.context(*id)->status(), "waiting") << first.context(*id)->value().to_json();
  const std::string draft_version = first.context(*id)->plan_version();
  Result<std::string> published = first.call_flow("greet");
  ASSERT_TRUE(published.is_ok()) << published.message();
  first.settle(0);
  ASSERT_NE(first.context(*published)->plan_version(), draft_version) << "the published version is another";

  // Stopped twice while it waits: the row keeps what it tests as long as it may resume.
  for (int restart = 1; restart <= 2; ++restart) {
    Engine& engine = reopen({kGreetPublished});
    ASSERT_EQ(report_["resumed"].to_json(), "[\"" + *id + "\"]") << "restart " << restart << ": " << report_.to_json();
    EXPECT_EQ(report_["failed"].size(), 0u) << report_.to_json();
    const std::optional<ContextRecord> c = engine.context(*id);
    ASSERT_EQ(c->status(), "waiting") << c->value().to_json();
    EXPECT_EQ(c->plan_version(), draft_version);
  }
  Engine& last = *engine_;
  ASSERT_TRUE(last.advance(kMinute).is_ok());
  last.settle();
  const std::optional<ContextRecord> c = last.context(*id);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status(), "completed") << c->value().to_json();
  EXPECT_EQ(c->plan_version(), draft_version) << c->value().to_json();
  EXPECT_EQ(c->log_messages(), (std::vector<std::string>{"draft", "after the wait"})) << c->value().to_json();
  EXPECT_EQ(c->step("pause")["status"], Value("completed")) << c->value().to_json();
  ASSERT_EQ(last.records("tested").size(), 1u);
  EXPECT_EQ(last.records("tested")[0]["by"], Value("draft"));
  // Ended, its row keeps the version it ran in its record, not the definition in its trigger.
  Engine& after = reopen({kGreetPublished});
  EXPECT_TRUE(report_.is_null()) << report_.to_json();
  Result<std::optional<StoredContext>> row = after.core().store->load_context(static_cast<uint64_t>(c->seq()));
  ASSERT_TRUE(row.is_ok() && row->has_value()) << row.message();
  EXPECT_EQ((*row)->trigger.find("test"), nullptr) << (*row)->trigger.to_json();
  EXPECT_EQ(after.context(*id)->plan_version(), draft_version);
}

// Of a flow that has only a draft, changed between the stop and the restart: the resumed
// test goes on with the version it was testing; a new test runs the draft as it is now.
TEST_P(DurableEngineStoresTest, AWaitingTestRun_GoesOnWithTheVersionItWasTesting_WhenTheDraftChangesBeforeTheRestart) {
  Engine& first = reopen({});
  ASSERT_TRUE(first.save(json(kWaitingDraft)).is_ok());
  Result<std::string> id = first.test_flow("greet", Value(), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  first.settle(0);
  ASSERT_EQ(first.context(*id)->status(), "waiting") << first.context(*id)->value().to_json();
  const std::string tested = first.context(*id)->plan_version();
  ASSERT_TRUE(first.save(json(R"({"id": "greet", "status": "draft", "trigger": {"type": "api"},
    "actions": [{"id": "say_edited", "action": "log", "inputs": {"message": "edited"}}]})")).is_ok());

  Engine& second = reopen({});
  ASSERT_EQ(report_["resumed"].to_json(), "[\"" + *id + "\"]") << report_.to_json();
  EXPECT_EQ(report_["failed"].size(), 0u) << report_.to_json();
  ASSERT_TRUE(second.advance(kMinute).is_ok());
  second.settle();
  const std::optional<ContextRecord> c = second.context(*id);
  EXPECT_EQ(c->status(), "completed") << c->value().to_json();
  EXPECT_EQ(c->plan_version(), tested);
  EXPECT_EQ(c->log_messages(), (std::vector<std::string>{"draft", "after the wait"}))
      << "the version it was testing goes on, not the draft saved since: " << c->value().to_json();
  EXPECT_EQ(second.records("tested").size(), 1u);
  Result<std::string> again = second.test_flow("greet", Value(), Value());
  ASSERT_TRUE(again.is_ok()) << again.message();
  second.settle();
  EXPECT_EQ(second.context(*again)->log_messages(), std::vector<std::string>{"edited"});
  EXPECT_NE(second.context(*again)->plan_version(), tested);
}

// Waiting in a lock's queue, it asks again in its turn in the next engine, on the draft.
TEST_P(DurableEngineStoresTest, AWaitingTestRun_InALocksQueue_ResumesThereOnTheDraftItTests) {
  constexpr const char* kHolder = R"({"id": "holder", "trigger": {"type": "api"}, "actions": [
    {"action": "lock", "inputs": {"key": "printer", "max_duration": "1d"}},
    {"action": "wait", "inputs": {"duration": "1h"}},
    {"action": "unlock", "inputs": {"key": "printer"}}]})";
  constexpr const char* kQueuing = R"({"id": "greet", "status": "draft", "trigger": {"type": "api"}, "actions": [
    {"id": "lk", "action": "lock", "inputs": {"key": "printer", "max_attempts": 1000, "delay": "1h"}},
    {"action": "log", "inputs": {"message": "printed by the draft"}},
    {"action": "unlock", "inputs": {"key": "printer"}}]})";
  Engine& first = reopen({kHolder, kGreetPublished});
  ASSERT_TRUE(first.save(json(kQueuing)).is_ok());
  Result<std::string> holder = first.call_flow("holder");
  ASSERT_TRUE(holder.is_ok()) << holder.message();
  first.settle(0);
  Result<std::string> id = first.test_flow("greet", Value(), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  first.settle(0);
  ASSERT_EQ(first.context(*id)->status(), "waiting") << first.context(*id)->value().to_json();
  const std::string tested = first.context(*id)->plan_version();

  Engine& second = reopen({kHolder, kGreetPublished});
  ASSERT_EQ(report_["resumed"].size(), 2u) << report_.to_json();
  EXPECT_EQ(report_["failed"].size(), 0u) << report_.to_json();
  ASSERT_EQ(second.context(*id)->status(), "waiting");
  ASSERT_TRUE(second.advance(kHour).is_ok());
  second.settle();
  EXPECT_EQ(second.context(*holder)->status(), "completed");
  const std::optional<ContextRecord> c = second.context(*id);
  EXPECT_EQ(c->status(), "completed") << c->value().to_json();
  EXPECT_EQ(c->plan_version(), tested);
  const std::vector<std::string> logs = c->log_messages();
  EXPECT_NE(std::find(logs.begin(), logs.end(), "printed by the draft"), logs.end()) << c->value().to_json();
  EXPECT_EQ(c->step("lk")["outputs"]["result"], Value("success")) << c->value().to_json();
  EXPECT_EQ(c->step("lk")["outputs"]["waited_ms"], Value(kHour)) << "granted when the holder let go";
}

// When neither the file nor the definition the row keeps gives the version its checkpoint
// names (here a draft action the test showed was changed since, so the kept definition now
// compiles to another version), the test run cannot resume: it ends in error saying so, as
// any context whose plan version is gone.
TEST_P(DurableEngineStoresTest, AWaitingTestRun_WhoseVersionNothingKeeps_EndsInError_ItsPlanVersionIsGone) {
  Engine& first = reopen({});
  ASSERT_NO_FATAL_FAILURE(save_say_and_shown(first, /*pause=*/true));
  Result<std::string> id = first.test_flow("shown", Value(), Value());
  ASSERT_TRUE(id.is_ok()) << id.message();
  first.settle(0);
  ASSERT_EQ(first.context(*id)->status(), "waiting") << first.context(*id)->value().to_json();
  const std::string tested = first.context(*id)->plan_version();
  ASSERT_NO_FATAL_FAILURE(save_say(first, "bye"));

  Engine& second = reopen({});
  ASSERT_EQ(report_["failed"].size(), 1u) << report_.to_json();
  EXPECT_EQ(report_["resumed"].size(), 0u) << report_.to_json();
  const std::string reason(report_["failed"].at(0)["reason"].as_string());
  EXPECT_NE(reason.find("its plan version " + tested + " is gone"), std::string::npos) << reason;
  EXPECT_NE(reason.find("the definition its test run keeps compiles to shown@"), std::string::npos) << reason;
  second.settle();
  const std::optional<ContextRecord> c = second.context(*id);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status(), "error") << c->value().to_json();
  EXPECT_NE(c->error_message().find("is gone"), std::string::npos) << c->value().to_json();
  EXPECT_EQ(c->step("pause")["status"], Value("error")) << c->value().to_json();
  EXPECT_EQ(c->log_messages().size(), 1u) << "its steps before the stop stay, and the error is logged: "
                                           << c->value().to_json();
}

}  // namespace
}  // namespace flowrt
