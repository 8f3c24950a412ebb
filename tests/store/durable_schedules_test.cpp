// Schedules of an engine on a durable store, stopped and opened again (the rest of what
// comes back is in durable_engine_test.cpp): their rhythm, occurrences left due or missed,
// and an occurrence written with the context it starts. The tests of
// DurableEngineStoresTest run on both durable stores (instantiated in
// durable_engine_test.cpp); DurableEngineTest's on SQLite only. Deterministic: engines run in
// simulation (no worker threads; contexts run only inside settle and advance, on this
// thread), so a context queued when the engine stops has not started, and one that parked
// stays parked.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/keyed_writes.h"
#include "runtime/perturb.h"
#include "store/sqlite_store.h"
#include "tests/support/engine_support.h"
#include "tests/support/postgres_support.h"
#include "tests/store/durable_engine_fixture.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;
using namespace flowrt::durable_engine_fixture;

// Loading the same definitions at every start (as `flowrt run` loads flows/) keeps an active
// flow's activation time in the file, so an `every` schedule keeps its rhythm over any
// number of restarts (found by the crash test: the second restart shifted it).
TEST_P(DurableEngineStoresTest, AnEverySchedule_KeepsItsRhythm_OverRestartsThatLoadTheSameDefinitions) {
  constexpr const char* kEvery = R"({"id": "every", "trigger": {"type": "schedule", "every": "30m"},
    "actions": [{"action": "create_record", "inputs": {"table": "tick", "values": {"at": "{{trigger.time}}"}}}]})";
  const TimeMs start = reopen({kEvery}).now();
  ASSERT_TRUE(engine_->advance(40 * 60 * 1000).is_ok());  // fires at 30m
  ASSERT_TRUE(reopen({kEvery}).advance(5 * 60 * 1000).is_ok());  // 45m
  ASSERT_TRUE(reopen({kEvery}).advance(50 * 60 * 1000).is_ok());  // 95m: fires at 60m and 90m
  std::vector<std::string> at;
  for (const Value& r : engine_->records("tick")) at.emplace_back(r["at"].as_string());
  EXPECT_EQ(at, (std::vector<std::string>{format_time(start + 30 * 60 * 1000), format_time(start + 60 * 60 * 1000),
                                          format_time(start + 90 * 60 * 1000)}));
}

// A virtual clock stands still while no engine runs: occurrences that fell due during a
// run and had not fired when it ended (a settle moved the clock past them; an advance
// stopped by the fires budget) fire one by one at the next engine's next advance, each
// with its own time, as they would have in the same run. Until 2026-12-06 the next engine
// took them for occurrences missed while no engine ran and fired one for the last of them.
TEST_P(DurableEngineStoresTest, OccurrencesLeftDueByASettle_FireEachAtTheNextEnginesAdvance) {
  constexpr const char* kEvery = R"({"id": "every", "trigger": {"type": "schedule", "every": "1h"},
    "actions": [{"action": "create_record", "inputs": {"table": "tick", "values": {"at": "{{trigger.time}}"}}}]})";
  constexpr const char* kWaits = R"({"id": "waits", "trigger": {"type": "api"},
    "actions": [{"action": "wait", "inputs": {"duration": "5h"}}]})";
  Engine& first = reopen({kEvery, kWaits});
  const TimeMs start = first.now();
  ASSERT_TRUE(first.call_flow("waits", Value::empty_object()).is_ok());
  first.settle();  // to 05:00: the ticks due by then are left for the next advance
  ASSERT_EQ(first.now(), start + 5 * kHour);
  Engine& second = reopen({kEvery, kWaits});
  EXPECT_EQ(report_["schedules_missed"].size(), 0u) << report_.to_json();
  ASSERT_TRUE(second.advance(0).is_ok());
  second.settle(0);
  std::vector<std::string> at;
  for (const Value& r : second.records("tick")) at.emplace_back(r["at"].as_string());
  std::vector<std::string> want;
  for (int h = 1; h <= 5; ++h) want.push_back(format_time(start + h * kHour));
  EXPECT_EQ(at, want);
}

// A schedule that is new in the next run (the definition changed between runs) owes
// nothing from before: it goes on from the clock's time, as a publish within one run does.
TEST_P(DurableEngineStoresTest, AScheduleChangedBetweenRuns_OwesNoOccurrenceFromBefore) {
  constexpr const char* kApi = R"({"id": "f", "trigger": {"type": "api"}, "actions": []})";
  constexpr const char* kEvery = R"({"id": "f", "trigger": {"type": "schedule", "every": "1h"}, "actions": []})";
  Engine& first = reopen({kApi});
  ASSERT_TRUE(first.advance(10 * kHour + kHour / 2).is_ok());
  Engine& second = reopen({kEvery});
  EXPECT_EQ(report_["schedules_missed"].size(), 0u) << report_.to_json();
  ASSERT_TRUE(second.advance(kHour).is_ok());
  second.settle(0);
  ASSERT_EQ(second.contexts("f").size(), 1u) << "one occurrence in the hour advanced, none owed from before";
  EXPECT_EQ(second.contexts("f")[0].value()["trigger"]["time"], Value(std::string_view(format_time(second.now() - kHour / 2))));
}

// A flow active in the file stays active in the next engine when min_schedule_interval
// was raised past its `every` meanwhile (BEHAVIOUR.md: flows already active keep their
// schedule). Until 2026-12-06 recovery checked the new limit and left it inactive.
TEST_P(DurableEngineStoresTest, AnActiveScheduleShorterThanARaisedMinimum_StaysActiveInTheNextEngine) {
  constexpr const char* kEveryMinute = R"({"id": "m", "trigger": {"type": "schedule", "every": "1m"}, "actions": []})";
  Engine& first = reopen({kEveryMinute});
  ASSERT_TRUE(first.advance(kHour / 60).is_ok());
  EngineOptions raised = options();
  raised.properties.min_schedule_interval = kHour;
  Engine& second = reopen({}, raised);
  EXPECT_EQ(report_["problems"].size(), 0u) << report_.to_json();
  ASSERT_TRUE(second.advance(3 * kHour / 60).is_ok());
  second.settle(0);
  EXPECT_EQ(second.contexts("m").size(), 4u);
}

TEST_P(DurableEngineStoresTest, ScheduleOccurrencesMissedWhileNoEngineRan_FireOnceAtOnce_ThenTheRhythmGoesOn) {
  constexpr const char* kEvery = R"({"id": "every", "trigger": {"type": "schedule", "every": "30m"},
    "actions": [{"action": "create_record", "inputs": {"table": "tick", "values": {"at": "{{trigger.time}}"}}}]})";
  const TimeMs start = reopen({kEvery}).now();
  ASSERT_TRUE(engine_->advance(40 * 60 * 1000).is_ok());  // fires at 30m
  ASSERT_EQ(engine_->records("tick").size(), 1u);
  // The next engine runs on the real clock: months of occurrences fell due meanwhile.
  EngineOptions real = options();
  real.virtual_clock = false;
  real.simulation_seed.reset();
  Engine& second = reopen({kEvery}, real);
  const TimeMs now = second.now();
  ASSERT_GT(now, start + 2 * kHour) << "the real clock is past the first engine's";
  ASSERT_EQ(report_["schedules_missed"].size(), 1u) << report_.to_json();
  const Value& missed = report_["schedules_missed"].at(0);
  EXPECT_EQ(missed["flow"], Value("every"));
  const int64_t due = (now - start) / (30 * 60 * 1000);  // occurrences due by now, the one that fired included
  const TimeMs latest = start + due * 30 * 60 * 1000;
  EXPECT_EQ(missed["occurrences"].as_int(), due - 1);
  EXPECT_EQ(missed["fires_for"], Value(std::string_view(format_time(latest))));
  // Once, at once, for the last occurrence due; not once per missed occurrence.
  ASSERT_TRUE(test_support::WaitFor([&] { return second.records("tick").size() >= 2; }));
  second.settle(0);
  ASSERT_EQ(second.records("tick").size(), 2u);
  EXPECT_EQ(second.records("tick")[1]["at"], Value(std::string_view(format_time(latest))));
  // The next engine finds it fired: never the same occurrence again.
  Engine& third = reopen({kEvery}, real);
  if (report_.is_object() && report_["schedules_missed"].size() > 0) {
    // Only when the clock passed the next half hour in between.
    EXPECT_GT(report_["schedules_missed"].at(0)["fires_for"].as_string(), format_time(latest));
  }
  third.settle(0);
  for (size_t i = 2; i < third.records("tick").size(); ++i) {
    EXPECT_GT(third.records("tick")[i]["at"].as_string(), format_time(latest));
  }
}

// An occurrence already past when the flow was activated is never owed: not at the
// activation, nor after a restart (until 2026-12-06 the restart counted it as missed while
// no engine ran, and fired it: an `at` before the activation, or a `start` far back).
TEST_P(DurableEngineStoresTest, OccurrencesPastWhenTheFlowWasActivated_NeverRun_AlsoAfterARestart) {
  constexpr const char* kAt = R"({"id": "at", "trigger": {"type": "schedule", "at": "2026-01-01T09:00:00Z"},
    "actions": [{"action": "create_record", "inputs": {"table": "tick", "values": {"at": "{{trigger.time}}"}}}]})";
  constexpr const char* kStart = R"({"id": "start", "trigger": {"type": "schedule", "every": "1h",
    "start": "2025-12-01T00:00:00Z"}, "actions": [{"action": "create_record", "inputs": {"table": "tick",
    "values": {"at": "{{trigger.time}}"}}}]})";
  EngineOptions o = options();
  o.start_time = 1767261630000;  // 2026-01-01T10:00:30Z, the flows' activation
  Engine& first = reopen({kAt, kStart}, o);
  ASSERT_TRUE(first.advance(30 * 60 * 1000).is_ok());  // 10:30:30: nothing due since the activation
  EXPECT_EQ(first.records("tick").size(), 0u);
  Engine& second = reopen({kAt, kStart}, o);
  EXPECT_EQ(report_["schedules_missed"].size(), 0u) << report_.to_json();
  ASSERT_TRUE(second.advance(0).is_ok());
  EXPECT_EQ(second.records("tick").size(), 0u);
  ASSERT_TRUE(second.advance(40 * 60 * 1000).is_ok());  // 11:10:30: the hourly one at 11:00
  std::vector<std::string> at;
  for (const Value& r : second.records("tick")) at.emplace_back(r["at"].as_string());
  EXPECT_EQ(at, std::vector<std::string>{"2026-01-01T11:00:00.000Z"});
}

// A schedule occurrence and the context it starts reach the file together: at every batch
// boundary (where a kill -9 can cut), an occurrence the file counts as fired has its
// context. Each commit is made to wait until everything before it is written (so every
// entry is a batch of its own), and before each batch the file is read as a crash there
// would leave it. Found by the crash test (crash_test): the occurrence was lost.
Journal* g_journal = nullptr;
std::string g_path;
std::vector<std::string> g_violations;
void one_entry_per_batch_and_check(PerturbPoint p) {
  if (p == PerturbPoint::kBeforeCommitLock) {
    while (g_journal->durable() < g_journal->appended()) std::this_thread::yield();
    return;
  }
  if (p != PerturbPoint::kBeforeStoreWrite) return;
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::open(g_path, SyncMode::kOff, true);
  if (!store.is_ok()) return;  // not created yet
  Result<StoredState> state = (*store)->load();
  if (!state.is_ok()) return;
  for (const StoredDefinition& d : state->definitions) {
    if (d.id != "every" || d.last_tick < 0) continue;
    bool found = false;
    // Every context in the file, ended ones (history, not loaded) included.
    ContextQuery every;
    every.limit = SIZE_MAX;
    Result<std::vector<StoredContext>> all = (*store)->list_contexts(every);
    if (!all.is_ok()) return;
    for (const StoredContext& c : *all) found = found || (c.flow == "every" && c.trigger["time"] == Value(d.last_tick));
    if (!found) g_violations.push_back(format_time(d.last_tick));
  }
}

TEST_F(DurableEngineTest, AScheduleOccurrence_AndTheContextItStarts_AreInTheFileTogether_AtEveryBatchBoundary) {
  constexpr const char* kEvery = R"({"id": "every", "trigger": {"type": "schedule", "every": "30m"},
    "actions": [{"action": "log", "inputs": {"message": "tick"}}]})";
  EngineOptions o = options();
  o.properties.durability = Durability::kNormal;
  Engine& engine = reopen({kEvery}, o);
  engine.settle();
  g_journal = engine.core().journal.get();
  g_path = path_;
  g_violations.clear();
  set_perturb_hook(&one_entry_per_batch_and_check);
  Status advanced = engine.advance(3 * 3600 * 1000);
  engine.settle(0);
  set_perturb_hook(nullptr);
  ASSERT_TRUE(advanced.is_ok()) << advanced.message();
  EXPECT_EQ(engine.contexts("every").size(), 6u);
  EXPECT_TRUE(g_violations.empty()) << "a crash here would leave these occurrences fired without a context, so never run: "
                                    << ::testing::PrintToString(g_violations);
}

}  // namespace
}  // namespace flowrt
