// The events fuzz target's parts, in the ordinary suite (every build, every sanitizer):
// recipes always give definitions that load and runs whose every wait can end
// (fuzz/flow_recipe.h, runtime/liveness.h), and OpBounds bounds what it says it bounds
// (fuzz/op_bounds.h).
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "fuzz/flow_recipe.h"
#include "fuzz/fuzz_actions.h"
#include "fuzz/op_bounds.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/harness.h"
#include "runtime/liveness.h"

namespace flowrt {
namespace {

std::string random_recipe(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(0, 300);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string r(static_cast<size_t>(len(rng)), '\0');
  for (char& c : r) c = static_cast<char>(byte(rng));
  return r;
}

std::unique_ptr<Engine> engine_for(const fuzz::GeneratedFlows& g) {
  EngineOptions o;
  o.properties.worker_threads = 1;
  o.properties.indirect_recursion_limit = fuzz::OpBounds::kMaxRecursion;
  o.lock_limits = g.lock_limits;
  o.log_level = "off";
  auto engine = std::make_unique<Engine>(o);
  fuzz::register_fuzz_actions(*engine);
  return engine;
}

TEST(FlowRecipeTest, EveryRecipeGivesDefinitionsThatLoad) {
  std::mt19937 rng(12);
  for (int i = 0; i < 300; ++i) {
    const std::string recipe = random_recipe(rng);
    const fuzz::GeneratedFlows g = fuzz::generate_flows(recipe);
    std::unique_ptr<Engine> engine = engine_for(g);
    Diagnostics d = engine->load_text(g.definitions, "recipe.json");
    ASSERT_TRUE(d.empty()) << "recipe " << i << ":\n" << d.describe() << "\n" << g.definitions;
  }
}

TEST(FlowRecipeTest, TheEmptyRecipeIsTheSimplest) {
  const fuzz::GeneratedFlows g = fuzz::generate_flows("");
  Result<Value> defs = parse_json(g.definitions);
  ASSERT_TRUE(defs.is_ok());
  ASSERT_EQ(defs->size(), 4u) << "one flow, two subflows, one action definition";
  EXPECT_EQ(defs->at(0)["id"], Value("fz_f0"));
  EXPECT_EQ(defs->at(0)["actions"].size(), 1u);
  EXPECT_EQ(defs->at(0)["actions"].at(0)["action"], Value("log"));
  EXPECT_EQ(g.lock_limits.at("pool"), 1);
  EXPECT_EQ(g.lock_limits.at("gate"), 1);
}

TEST(FlowRecipeTest, DeclaredLockLimitsWin_AndWeightsStayWithinThem) {
  std::mt19937 rng(7);
  for (int i = 0; i < 100; ++i) {
    const fuzz::GeneratedFlows g = fuzz::generate_flows(random_recipe(rng), {{"pool", 1}, {"gate", 2}});
    EXPECT_EQ(g.lock_limits.at("pool"), 1);
    EXPECT_EQ(g.lock_limits.at("gate"), 2);
    std::unique_ptr<Engine> engine = engine_for(g);
    Diagnostics d = engine->load_text(g.definitions, "recipe.json");
    ASSERT_TRUE(d.empty()) << d.describe();  // a weight over its limit is a compile error
  }
}

// Generated flows under traffic: after each settle every context has ended or waits on
// something that exists, and a run stays small.
TEST(FlowRecipeTest, RunsEndWithEveryWaitAbleToEnd) {
  const std::string events = R"({"op":"insert","table":"t0","values":{"sys_id":"a0","n":1,"s":"open"}}
{"op":"insert","table":"t1","values":{"sys_id":"a1","n":2,"s":"open"}}
{"op":"insert","table":"t2","values":{"sys_id":"a2","n":0,"s":"open"}}
{"op":"fire_event","name":"e0","payload":{"sid":"a0","n":1}}
{"op":"update","table":"t0","sys_id":"a0","values":{"n":3}}
{"op":"fire_event","name":"e1","payload":{"sid":"a1","n":2}}
{"op":"settle","until":"1m"}
{"op":"advance","duration":"30m"}
{"op":"update","table":"t1","sys_id":"a1","values":{"s":"closed"}}
{"op":"delete","table":"t0","sys_id":"a0"}
)";
  std::mt19937 rng(3);
  for (int i = 0; i < 60; ++i) {
    const fuzz::GeneratedFlows g = fuzz::generate_flows(random_recipe(rng));
    std::unique_ptr<Engine> engine = engine_for(g);
    ASSERT_TRUE(engine->load_text(g.definitions, "recipe.json").empty());
    auto expect_live = [&](const std::string& when) {
      for (const ContextWait& w : context_waits(engine->core())) {
        EXPECT_NE(w.on, ContextWait::On::kRun) << "recipe " << i << " " << when << ": " << w.context;
        EXPECT_EQ(w.problem, "") << "recipe " << i << " " << when << ": " << w.context << " waits on " << w.what;
      }
    };
    Harness harness(*engine);
    bool quiescent = false;  // the op before was a settle or an advance
    harness.set_op_filter([&](const Value& op) -> Result<Value> {
      if (quiescent) expect_live("before " + op.to_json());
      quiescent = op["op"] == Value("settle") || op["op"] == Value("advance");
      return op;
    });
    (void)harness.run_text(events, "events");  // a refused line is the flows' business
    expect_live("at the end");
    EXPECT_LT(engine->stats().contexts_started, 500u) << "recipe " << i << ": few starts per context";
  }
}

TEST(OpBoundsTest, DurationsAreClamped) {
  fuzz::OpBounds b;
  auto op = [](const char* json) { return *parse_json(json); };
  Result<Value> a = b(op(R"({"op": "advance", "duration": "10d"})"), 0);
  EXPECT_EQ((*a)["duration"], Value(fuzz::OpBounds::kMaxAdvance));
  a = b(op(R"({"op": "advance", "duration": "20h"})"), 0);
  EXPECT_EQ((*a)["duration"], Value("20h")) << "44 h in all so far";
  a = b(op(R"({"op": "advance", "duration": "20h"})"), 0);
  EXPECT_EQ((*a)["duration"], Value(4 * fuzz::OpBounds::kHour)) << "48 h in all";
  a = b(op(R"({"op": "settle", "until": "30d"})"), 0);
  EXPECT_EQ((*a)["until"], Value(fuzz::OpBounds::kMaxSettle));
  a = b(op(R"({"op": "settle", "until": "soon"})"), 0);
  EXPECT_EQ((*a)["until"], Value("soon")) << "left for the harness to refuse";
}

TEST(OpBoundsTest, PropertiesAndSchedulesAreClamped) {
  fuzz::OpBounds b;
  auto op = [](const char* json) { return *parse_json(json); };
  EXPECT_EQ((*b(op(R"({"op": "set_property", "name": "worker_threads", "value": 0})"), 0))["value"], Value(2));
  EXPECT_EQ((*b(op(R"({"op": "set_property", "name": "worker_threads", "value": 9})"), 0))["value"], Value(2));
  EXPECT_EQ((*b(op(R"({"op": "set_property", "name": "worker_threads", "value": 1})"), 0))["value"], Value(1));
  EXPECT_EQ((*b(op(R"({"op": "set_property", "name": "indirect_recursion_limit", "value": 3})"), 0))["value"], Value(1));
  EXPECT_EQ((*b(op(R"({"op": "set_property", "name": "max_iterations", "value": 1000})"), 0))["value"], Value(50));
  const Value saved = *b(op(R"({"op": "save", "definition": {"id": "s", "trigger": {"type": "schedule", "every": "1ms"}}})"), 0);
  EXPECT_EQ(saved["definition"]["trigger"]["every"], Value(fuzz::OpBounds::kMinEvery));
}

TEST(OpBoundsTest, OpsStopAtTheOpAndContextBudgets) {
  fuzz::OpBounds b;
  const Value insert = *parse_json(R"({"op": "insert", "table": "t"})");
  for (size_t i = 0; i < fuzz::OpBounds::kMaxOps; ++i) ASSERT_TRUE(b(insert, 0).is_ok()) << i;
  EXPECT_EQ(b(insert, 0).message(), "events_fuzz: more than 64 ops");
  fuzz::OpBounds c;
  EXPECT_TRUE(c(insert, fuzz::OpBounds::kMaxContexts).is_ok());
  EXPECT_EQ(c(insert, fuzz::OpBounds::kMaxContexts + 1).message(), "events_fuzz: more than 2000 contexts started");
}

}  // namespace
}  // namespace flowrt
