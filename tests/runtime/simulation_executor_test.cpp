// The simulation executor (EngineOptions::simulation_seed): contexts run on the driving
// thread one step at a time, interleaved by a seeded generator, and a seed replays exactly.
#include <gtest/gtest.h>

#include <set>

#include "runtime/engine.h"

namespace flowrt {
namespace {

// Twenty contexts add one to a counter by reading it and writing it back: without a lock
// they lose updates whenever their steps interleave.
constexpr const char* kCounter = R"({"id": "bump", "trigger": {"type": "record", "table": "job", "when": "created"},
  "actions": [LOCK
    {"id": "c", "action": "look_up_record", "inputs": {"table": "counter", "condition": {"field": "name", "op": "eq", "value": "c"}}},
    {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{steps.c.record.sys_id}}",
                                           "values": {"n": "{{steps.c.record.n | add: 1}}"}}}UNLOCK]})";

struct Outcome {
  int64_t counter;
  std::string document;
};

Outcome run(uint64_t seed, bool locked) {
  std::string flow = kCounter;
  flow.replace(flow.find("LOCK"), 4, locked ? R"({"action": "lock", "inputs": {"key": "c", "max_attempts": 100, "delay": "1s"}},)" : "");
  flow.replace(flow.find("UNLOCK"), 6, locked ? R"(, {"action": "unlock", "inputs": {"key": "c"}})" : "");
  EngineOptions o;
  o.simulation_seed = seed;
  o.properties.worker_threads = 3;
  o.run_clock = [] { return 0.0; };  // runtime_ms would differ from run to run
  Engine engine(o);
  EXPECT_TRUE(engine.load_text(flow, "bump.json").empty());
  EXPECT_TRUE(engine.insert("counter", Value::object({{"name", Value("c")}, {"n", Value(0)}})).is_ok());
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(engine.insert("job", Value::object({{"i", Value(i)}})).is_ok());
  EXPECT_EQ(engine.contexts().at(0).status(), "in_progress") << "nothing runs before settle";
  engine.settle();
  return Outcome{engine.records("counter").at(0)["n"].as_int(), engine.document().to_json()};
}

TEST(SimulationExecutorTest, SameSeed_ReplaysTheSameRun) {
  for (uint64_t seed : {1u, 7u, 12345u}) {
    const Outcome a = run(seed, false), b = run(seed, false);
    EXPECT_EQ(a.document, b.document) << "seed " << seed;
  }
}

TEST(SimulationExecutorTest, Seeds_ExploreDifferentInterleavings) {
  std::set<int64_t> counters;
  for (uint64_t seed = 1; seed <= 20; ++seed) counters.insert(run(seed, false).counter);
  EXPECT_GT(counters.size(), 1u) << "different seeds interleave the steps differently";
  EXPECT_LT(*counters.begin(), 20) << "some interleaving loses an update, as real workers would";
}

TEST(SimulationExecutorTest, UnderALock_NoInterleavingLosesAnUpdate) {
  for (uint64_t seed = 1; seed <= 20; ++seed) EXPECT_EQ(run(seed, true).counter, 20) << "seed " << seed;
}

}  // namespace
}  // namespace flowrt
