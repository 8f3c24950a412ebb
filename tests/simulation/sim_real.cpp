#include "tests/simulation/sim_real.h"

#include <nlohmann/json.hpp>

#include "plans/value_json.h"
#include "tests/simulation/steps.h"

namespace flowrt::sim {

using json = nlohmann::json;

namespace {

json lock(const std::string& id, int64_t max_attempts, int64_t delay_ms, int64_t max_duration_ms, const std::string& on_error) {
  return json{{"id", id},
              {"action", "lock"},
              {"on_error", on_error},
              {"inputs",
               {{"key", "{{inputs.key}}"},
                {"weight", "{{inputs.w}}"},
                {"max_attempts", max_attempts},
                {"delay", std::to_string(delay_ms) + "ms"},
                {"max_duration", std::to_string(max_duration_ms) + "ms"}}}};
}

// Reads the counter of the lock and writes n + 1 while holding it; logs "inc KEY" when the
// write went through.
void increment(json& steps) {
  steps.push_back(json{{"id", "c"},
                       {"action", "look_up_record"},
                       {"inputs", {{"table", kCounterTable}, {"condition", {{"field", "name"}, {"op", "eq"}, {"value", "{{inputs.key}}"}}}}}});
  steps.push_back(json{{"id", "u"},
                       {"action", "update_record"},
                       {"on_error", "continue"},
                       {"inputs",
                        {{"table", kCounterTable},
                         {"sys_id", "{{steps.c.record.sys_id}}"},
                         {"while_holding", "{{inputs.key}}"},
                         {"values", {{"n", "{{steps.c.record.n | add: 1}}"}}}}}});
  steps.push_back(json{{"if", {{"pill", "steps.u.error"}, {"op", "is_empty"}}}, {"then", json::array({log_step("inc {{inputs.key}}")})}});
}

json flow(const std::string& id, json steps) {
  json all = json::array({log_step("version " + id + " 1")});
  for (json& s : steps) all.push_back(std::move(s));
  return json{{"id", id},
              {"trigger", {{"type", "api"}}},
              {"inputs", json::array({json{{"name", "key"}, {"type", "string"}, {"required", true}},
                                      json{{"name", "w"}, {"type", "integer"}, {"required", true}}})},
              {"actions", all}};
}

}  // namespace

Scenario real_clock_scenario(uint64_t seed) {
  Rng g(seed);
  Scenario s;
  s.seed = seed;
  s.variant = Variant::kRealClock;
  s.workers = static_cast<unsigned>(g.between(2, 4));
  s.lock_names = {"r0", "r1"};
  s.lock_limits["r1"] = 2;
  s.operations = g.between(10, 25);
  json defs = json::array();
  // f0: increments under the lock, released long before its (generous) lease ends.
  json inc = json::array({lock("l", 40, 5, 2000, "stop")});
  increment(inc);
  inc.push_back(json{{"action", "unlock"}, {"inputs", {{"key", "{{inputs.key}}"}}}});
  defs.push_back(flow("f0", inc));
  // f1: holds the lock three times past its lease, then tries to write (lock_lost).
  const int64_t lease = g.between(20, 40);
  json hog = json::array({lock("l", 40, 5, lease, "stop"), json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(lease * 3) + "ms"}}}}});
  increment(hog);
  hog.push_back(json{{"action", "unlock"}, {"inputs", {{"key", "{{inputs.key}}"}}}});
  defs.push_back(flow("f1", hog));
  // f2: a few attempts a short delay apart; gives up while a hog holds the lock.
  json quit = json::array({lock("l", g.between(2, 4), g.between(5, 15), 100, "continue"), json{{"action", "unlock"}, {"inputs", {{"key", "{{inputs.key}}"}}}}});
  defs.push_back(flow("f2", quit));
  for (const json& d : defs) {
    FlowSpec f;
    f.id = d["id"];
    f.kind = FlowSpec::Kind::kApi;
    s.flows.push_back(f);
    Result<Value> v = parse_json(d.dump());
    s.versions[f.id] = {v ? *v : Value()};
  }
  s.definitions = defs.dump();
  return s;
}

}  // namespace flowrt::sim
