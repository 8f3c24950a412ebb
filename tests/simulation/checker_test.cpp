// The simulation's checks can fail: hand-made documents that break each invariant, and
// a real run tampered with, must be reported with the invariant that broke.
#include <gtest/gtest.h>

#include "plans/value_json.h"
#include "tests/simulation/driver.h"
#include "tests/simulation/generator.h"
#include "tests/simulation/invariants.h"
#include "tests/simulation/model.h"

namespace flowrt::sim {
namespace {

Value doc(std::string_view text) {
  Result<Value> v = parse_json(text);
  EXPECT_TRUE(v.is_ok()) << v.message();
  return v ? *v : Value();
}

constexpr TimeMs kT0 = kDefaultVirtualStart;

// A context that locked k0, incremented counter k0 and logged it.
constexpr const char* kIncrementer = R"({"id": "ctx-1", "seq": 1, "flow": "f0", "status": "completed",
  "trigger": {"type": "api"}, "cause": null, "chain": [],
  "started_at": "2026-01-01T00:00:00.000Z", "ended_at": "2026-01-01T00:00:00.000Z",
  "steps": [
    {"path": "1", "action": "lock", "status": "completed", "started_at": "2026-01-01T00:00:00.000Z", "ended_at": "2026-01-01T00:00:00.000Z",
     "inputs": {"key": "k0"}, "outputs": {"result": "success", "state": "finished", "token": 1, "attempts": 1, "waited_ms": 0}},
    {"path": "2", "action": "update_record", "status": "completed", "started_at": "2026-01-01T00:00:00.000Z", "ended_at": "2026-01-01T00:00:00.000Z",
     "inputs": {"table": "counter", "sys_id": "c0", "while_holding": "k0", "values": {"n": 1}},
     "outputs": {"record": {"name": "k0", "n": 1, "sys_id": "c0", "sys_mod_count": 1}}}],
  "logs": [{"time": "2026-01-01T00:00:00.000Z", "level": "info", "step": "3", "message": "inc k0"}],
  "variables": {}, "error": null})";

std::string with_counter(int n) {
  return std::string(R"({"contexts": [)") + kIncrementer + R"(], "skipped": [], "locks": [],
    "records": {"counter": [{"name": "k0", "n": )" + std::to_string(n) + R"(, "sys_id": "c0", "sys_mod_count": )" +
         std::to_string(n) + "}]}}";
}

TEST(SimulationCheckerTest, Counters_AgreeWithTheLoggedIncrements_AndFailWhenTheyDoNot) {
  Violations ok;
  check_counters(Snapshot::from_document(doc(with_counter(1)), kT0), {"k0"}, &ok);
  EXPECT_TRUE(ok.empty()) << describe(ok);

  Violations lost;  // one increment more than the contexts made: a write nobody logged
  check_counters(Snapshot::from_document(doc(with_counter(2)), kT0), {"k0"}, &lost);
  ASSERT_FALSE(lost.empty());
  EXPECT_EQ(lost[0].invariant, "(e) counters (mutual exclusion)");
  const std::string all = describe(lost, 10);
  EXPECT_NE(all.find("counter k0 is 2 but \"inc k0\" was logged 1 times"), std::string::npos) << all;
  EXPECT_NE(all.find("counter k0 is 2 but 1 lock-guarded increments completed"), std::string::npos) << all;
}

TEST(SimulationCheckerTest, TwoHoldersThatReadTheSameN_BreakMutualExclusion) {
  // Two contexts both wrote n = 1: the second read n before the first wrote it.
  std::string second = kIncrementer;
  const std::string first_id = "\"ctx-1\", \"seq\": 1";
  second.replace(second.find(first_id), first_id.size(), "\"ctx-2\", \"seq\": 2");
  const std::string text = std::string(R"({"contexts": [)") + kIncrementer + "," + second + R"(], "skipped": [], "locks": [],
    "records": {"counter": [{"name": "k0", "n": 2, "sys_id": "c0", "sys_mod_count": 2}]}})";
  Violations v;
  check_counters(Snapshot::from_document(doc(text), kT0), {"k0"}, &v);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_NE(v[0].message.find("wrote n = 1 (ctx-1 step 2) 1 (ctx-2 step 2) (want 1..2, each once): two holders read the same n"), std::string::npos)
      << describe(v);
}

TEST(SimulationCheckerTest, Locks_HeldByAnEndedContextOrOverTheLimit_Fail) {
  const std::string text = std::string(R"({"contexts": [)") + kIncrementer + R"(], "skipped": [], "records": {},
    "locks": [{"name": "k0", "limit": 1, "held": 2, "last_token": 2,
               "holders": [{"context": "ctx-1", "weight": 1, "token": 1}, {"context": "ctx-9", "weight": 1, "token": 2}],
               "waiters": []}]})";
  Violations v;
  check_locks(Snapshot::from_document(doc(text), kT0), {}, Moment::kQuiescent, &v);
  std::string all = describe(v, 10);
  EXPECT_NE(all.find("lock 'k0' is held by ctx-1, which has ended (completed)"), std::string::npos) << all;
  EXPECT_NE(all.find("lock 'k0' is held by ctx-9, which does not exist"), std::string::npos) << all;
  EXPECT_NE(all.find("holders weigh 2, over its limit 1"), std::string::npos) << all;

  Violations end;
  check_locks(Snapshot::from_document(doc(text), kT0), {}, Moment::kEnd, &end);
  EXPECT_NE(describe(end, 10).find("locks still held or waited for after the final settle"), std::string::npos);
}

TEST(SimulationCheckerTest, WaitingOnATimerThatIsDue_OrInNoLockQueue_Fails) {
  const std::string text = R"({"contexts": [
    {"id": "ctx-1", "seq": 1, "flow": "f0", "status": "waiting", "trigger": {"type": "api"}, "cause": null, "chain": [],
     "started_at": "2026-01-01T00:00:00.000Z", "ended_at": null,
     "steps": [{"path": "1", "action": "wait", "status": "waiting", "started_at": "2026-01-01T00:00:00.000Z",
                "ended_at": null, "inputs": {"duration": "1s"}, "outputs": {}}], "logs": [], "error": null},
    {"id": "ctx-2", "seq": 2, "flow": "f0", "status": "waiting", "trigger": {"type": "api"}, "cause": null, "chain": [],
     "started_at": "2026-01-01T00:00:00.000Z", "ended_at": null,
     "steps": [{"path": "1", "action": "lock", "status": "waiting", "started_at": "2026-01-01T00:00:00.000Z",
                "ended_at": null, "inputs": {"key": "k0"}, "outputs": {}}], "logs": [], "error": null},
    {"id": "ctx-3", "seq": 3, "flow": "f0", "status": "in_progress", "trigger": {"type": "api"}, "cause": null, "chain": [],
     "started_at": "2026-01-01T00:00:00.000Z", "ended_at": null, "steps": [], "logs": [], "error": null}],
    "skipped": [], "records": {}, "locks": []})";
  Violations v;
  check_contexts(Snapshot::from_document(doc(text), kT0 + 1000), Moment::kQuiescent, &v);
  const std::string all = describe(v, 10);
  EXPECT_NE(all.find("ctx-1 waits on a timer that is not in the future"), std::string::npos) << all;
  EXPECT_NE(all.find("ctx-2 waits on lock 'k0' but is in no queue"), std::string::npos) << all;
  EXPECT_NE(all.find("ctx-3 is in_progress although no context can run"), std::string::npos) << all;
}

TEST(SimulationCheckerTest, ContextsStartedOutOfSeqOrder_Fail) {
  const std::string text = R"({"contexts": [
    {"id": "ctx-1", "seq": 1, "status": "completed", "started_at": "2026-01-01T00:00:05.000Z", "ended_at": "2026-01-01T00:00:05.000Z"},
    {"id": "ctx-2", "seq": 2, "status": "completed", "started_at": "2026-01-01T00:00:01.000Z", "ended_at": "2026-01-01T00:00:01.000Z"}],
    "skipped": [], "records": {}, "locks": []})";
  Violations v;
  check_fifo(Snapshot::from_document(doc(text), kT0), &v);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_NE(v[0].message.find("ctx-2 started at 2026-01-01T00:00:01.000Z, before ctx-1"), std::string::npos) << describe(v);
}

TEST(SimulationCheckerTest, ARealRunTamperedWith_Fails) {
  // A real run keeps every invariant; the same document with one counter bumped does not.
  Coverage cov;
  const SeedRun run = run_seed(1, Variant::kSimulated, &cov);
  ASSERT_TRUE(run.violations.empty()) << describe(run.violations);
  Value d = doc(run.document);
  const Scenario s = generate_scenario(1, Variant::kSimulated);
  Violations ok;
  check_counters(Snapshot::from_document(d, kT0), s.lock_names, &ok);
  EXPECT_TRUE(ok.empty()) << describe(ok);
  std::vector<Value> counters;
  for (const Value& r : d["records"]["counter"].items()) counters.push_back(r);
  ASSERT_FALSE(counters.empty());
  counters[0] = counters[0].with("n", Value(counters[0]["n"].as_int() + 1));
  Value records = d["records"].with("counter", Value::array(std::move(counters)));
  Violations bad;
  check_counters(Snapshot::from_document(d.with("records", records), kT0), s.lock_names, &bad);
  EXPECT_FALSE(bad.empty()) << "a counter one higher than its increments must be caught";
}

}  // namespace
}  // namespace flowrt::sim
