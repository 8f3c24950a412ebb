#include "tests/simulation/generator.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "plans/value_json.h"
#include "tests/simulation/sim_real.h"
#include "tests/simulation/steps.h"

namespace flowrt::sim {

using json = nlohmann::json;

namespace {

// The first step of every version: the record then tells which version ran.
json version_marker(const std::string& id, size_t version) { return log_step("version " + id + " " + std::to_string(version)); }

json with_marker(const std::string& id, size_t version, const json& steps) {
  json out = json::array({version_marker(id, version)});
  for (const json& s : steps) out.push_back(s);
  return out;
}

json trigger_json(const FlowSpec& f) {
  switch (f.kind) {
    case FlowSpec::Kind::kRecord: {
      json t = {{"type", "record"}, {"table", f.table}, {"when", f.when}};
      if (f.condition) {
        t["condition"] = {{"field", f.condition->field}, {"op", f.condition->op}};
        if (!f.condition->value.is_null()) t["condition"]["value"] = json::parse(f.condition->value.to_json());
      }
      if (!f.run.empty()) t["run"] = f.run;
      return t;
    }
    case FlowSpec::Kind::kEvent: return json{{"type", "event"}, {"name", f.event}};
    case FlowSpec::Kind::kApi: return json{{"type", "api"}};
    case FlowSpec::Kind::kSchedule: {
      json t = {{"type", "schedule"}};
      if (f.at) {
        t["at"] = format_time(*f.at);
      } else {
        t["every"] = format_duration(f.every);
        if (f.start) t["start"] = format_time(*f.start);
      }
      return t;
    }
  }
  return json();
}

json param(const std::string& name, const std::string& type, bool required) {
  return json{{"name", name}, {"type", type}, {"required", required}};
}

// The counter pattern as a subflow: its steps run in the calling context.
json sf_inc(Rng& g) {
  return json{
      {"id", "sf_inc"},
      {"type", "subflow"},
      {"inputs", json::array({param("key", "string", true), param("w", "integer", true)})},
      {"actions",
       with_marker("sf_inc", 1,
                   json::array({
                       json{{"id", "l"}, {"action", "lock"},
                            {"inputs", {{"key", "{{inputs.key}}"}, {"weight", "{{inputs.w}}"}, {"max_attempts", g.between(2, 12)},
                                        {"delay", std::to_string(g.between(1, 5) * 100) + "ms"}}}},
                       json{{"id", "c"}, {"action", "look_up_record"},
                            {"inputs", {{"table", kCounterTable}, {"condition", {{"field", "name"}, {"op", "eq"}, {"value", "{{inputs.key}}"}}}}}},
                       json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(g.between(0, 5) * 100) + "ms"}}}},
                       json{{"id", "u"}, {"action", "update_record"},
                            {"inputs", {{"table", kCounterTable}, {"sys_id", "{{steps.c.record.sys_id}}"}, {"while_holding", "{{inputs.key}}"},
                                        {"values", {{"n", "{{steps.c.record.n | add: 1}}"}}}}}},
                       log_step("inc {{inputs.key}}"),
                       json{{"action", "unlock"}, {"inputs", {{"key", "{{inputs.key}}"}}}},
                   }))}};
}

// Calls itself: the inner call is skipped (direct recursion of a subflow).
json sf_rec() {
  return json{{"id", "sf_rec"},
              {"type", "subflow"},
              {"actions", with_marker("sf_rec", 1,
                                      json::array({log_step("in sf_rec"),
                                                   json{{"id", "again"}, {"action", "call_subflow"},
                                                        {"inputs", {{"subflow", "sf_rec"}, {"inputs", json::object()}}}}}))}};
}

// sf_a(n) calls sf_b(n - 1) while n > 0, and sf_b(n) calls sf_a(n): a unit on the call
// stack more than indirect_recursion_limit times fails its call step. Version 2 also
// writes to the sink and returns n x 100 instead of n x 10.
json sf_a(size_t version) {
  json steps = json::array();
  if (version == 2) {
    steps.push_back(json{{"action", "create_record"},
                         {"inputs", {{"table", kSinkTable}, {"values", {{"n", "{{inputs.n}}"}, {"by", "{{context.id}}"}}}}}});
  }
  steps.push_back(json{{"if", {{"pill", "inputs.n"}, {"op", "gt"}, {"value", 0}}},
                       {"then", json::array({json{{"id", "b"}, {"action", "call_subflow"}, {"on_error", "continue"},
                                                   {"inputs", {{"subflow", "sf_b"}, {"inputs", {{"n", "{{inputs.n | sub: 1}}"}}}}}}})}});
  steps.push_back(json{{"action", "assign_outputs"},
                       {"inputs", {{"values", {{"r", version == 2 ? "{{inputs.n | mul: 100}}" : "{{inputs.n | mul: 10}}"}}}}}});
  return json{{"id", "sf_a"},
              {"type", "subflow"},
              {"inputs", json::array({param("n", "integer", true)})},
              {"outputs", json::array({param("r", "integer", false)})},
              {"actions", with_marker("sf_a", version, steps)}};
}

json sf_b() {
  json steps = json::array(
      {json{{"id", "a"}, {"action", "call_subflow"}, {"on_error", "continue"},
            {"inputs", {{"subflow", "sf_a"}, {"inputs", {{"n", "{{inputs.n}}"}}}}}},
       json{{"action", "assign_outputs"}, {"inputs", {{"values", {{"r", "{{steps.a.r | default: -1 | add: 1}}"}}}}}}});
  return json{{"id", "sf_b"},
              {"type", "subflow"},
              {"inputs", json::array({param("n", "integer", true)})},
              {"outputs", json::array({param("r", "integer", false)})},
              {"actions", with_marker("sf_b", 1, steps)}};
}

// An action definition: writes its tag to the sink and returns it upper-cased.
json act_tag() {
  json steps = json::array(
      {json{{"action", "create_record"},
            {"inputs", {{"table", kSinkTable}, {"values", {{"tag", "{{inputs.tag | upper}}"}, {"by", "{{context.id}}"}}}}}},
       json{{"action", "assign_outputs"}, {"inputs", {{"values", {{"tag", "{{inputs.tag | upper}}"}}}}}}});
  return json{{"id", "act_tag"},
              {"type", "action"},
              {"inputs", json::array({param("tag", "string", true)})},
              {"outputs", json::array({param("tag", "string", false)})},
              {"actions", with_marker("act_tag", 1, steps)}};
}

FieldCondition random_condition(Rng& g, const FlowSpec& f) {
  FieldCondition c;
  const bool update = f.when == "updated" || f.when == "created_or_updated";
  if (update && g.chance(0.3)) {
    c.field = g.chance(0.6) ? "a" : "b";
    c.op = g.pick(std::vector<std::string>{"changes", "changes_to", "changes_from"});
    if (c.op != "changes") c.value = c.field == "a" ? Value(g.between(0, 4)) : Value(g.pick(kLetters));
  } else if (g.chance(0.7)) {
    c.field = "a";
    c.op = g.pick(std::vector<std::string>{"eq", "ne", "lt", "le", "gt", "ge", "in"});
    c.value = c.op == "in" ? Value::array({Value(g.between(0, 4)), Value(g.between(0, 4))}) : Value(g.between(0, 4));
  } else {
    c.field = "b";
    c.op = g.chance(0.5) ? "eq" : "ne";
    c.value = Value(g.pick(kLetters));
  }
  return c;
}

Value to_value(const json& j) {
  Result<Value> v = parse_json(j.dump());
  return v ? *v : Value();
}

}  // namespace

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kSimulated: return "simulated";
    case Variant::kThreads: return "threads";
    case Variant::kRealClock: return "real-clock";
  }
  return "?";
}

bool model_condition_holds(const FieldCondition& c, const Value& record, const Value* previous) {
  const Value& f = record[c.field];
  const Value& before = previous ? (*previous)[c.field] : Value();
  if (c.op == "changes") return !(before == f);
  if (c.op == "changes_to") return !(before == f) && f == c.value;
  if (c.op == "changes_from") return !(before == f) && before == c.value;
  auto eq = [](const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return a.as_double() == b.as_double();
    if (a.type() != b.type()) return false;
    return a == b;
  };
  if (c.op == "eq") return eq(f, c.value);
  if (c.op == "ne") return !eq(f, c.value);
  if (c.op == "in") {
    for (const Value& v : c.value.items()) {
      if (eq(f, v)) return true;
    }
    return false;
  }
  if (!f.is_number() || !c.value.is_number()) return false;
  const double a = f.as_double(), b = c.value.as_double();
  if (c.op == "lt") return a < b;
  if (c.op == "le") return a <= b;
  if (c.op == "gt") return a > b;
  if (c.op == "ge") return a >= b;
  return false;
}

Scenario generate_scenario(uint64_t seed, Variant variant) {
  if (variant == Variant::kRealClock) return real_clock_scenario(seed);
  Rng g(seed);
  Scenario s;
  s.seed = seed;
  s.variant = variant;
  s.workers = static_cast<unsigned>(variant == Variant::kSimulated ? g.between(1, 4) : g.between(2, 4));
  s.recursion_limit = g.between(1, 3);
  for (int64_t i = g.between(2, 3); i > 0; --i) s.tables.push_back("t" + std::to_string(s.tables.size()));
  for (int64_t i = g.between(2, 3); i > 0; --i) {
    const std::string name = "k" + std::to_string(s.lock_names.size());
    s.lock_names.push_back(name);
    if (g.chance(0.4)) s.lock_limits[name] = g.between(2, 3);
  }
  s.events = {"e0", "e1", "e2", "e3"};
  s.operations = g.between(20, 60);
  if (g.chance(0.5)) s.custom = variant == Variant::kThreads && g.chance(0.5) ? "hang" : "normal";

  const int64_t n_flows = g.between(5, 12);
  std::vector<std::string> api_flows;
  for (int64_t i = 0; i < n_flows; ++i) {
    FlowSpec f;
    f.id = "f" + std::to_string(i);
    // At least one API flow and two event flows, one on each event: each fires the other
    // event (steps.cpp), a cycle that meets the indirect recursion limit.
    const int64_t k = i == 0 ? 9 : i == 1 || i == 2 ? 7 : g.between(0, 10);
    if (k <= 5) {
      f.kind = FlowSpec::Kind::kRecord;
      f.table = g.pick(s.tables);
      f.when = g.pick(std::vector<std::string>{"created", "updated", "created_or_updated", "deleted"});
      if (f.when == "updated" || f.when == "created_or_updated") {
        f.run = g.pick(std::vector<std::string>{"", "once", "once", "always", "always", "for_each_unique_change", "for_every_update"});
      }
      if (g.chance(0.6)) f.condition = random_condition(g, f);
    } else if (k <= 7) {
      f.kind = FlowSpec::Kind::kEvent;
      // One flow on each of e0 and e1 (the ping-pong); the others on any event, so that
      // chains of events may grow wide and many contexts wait for locks at once.
      f.event = i == 1 ? "e0" : i == 2 ? "e1" : g.pick(std::vector<std::string>{"e0", "e1", "e2", "e3"});
    } else if (k <= 9) {
      f.kind = FlowSpec::Kind::kApi;
      api_flows.push_back(f.id);
    } else {
      f.kind = FlowSpec::Kind::kSchedule;
      const int64_t shape = g.between(0, 2);
      if (shape == 0) {
        // Half of them on the 50 ms grid the clock moves on, so that activations and
        // publishes happen while the clock stands exactly at an `at` that just fired.
        f.at = kDefaultVirtualStart + g.between(1, 20) * 500 + (g.chance(0.5) ? 0 : 7);
      } else {
        f.every = g.pick(std::vector<int64_t>{1000, 2000, 5000});
        if (shape == 2) f.start = kDefaultVirtualStart + g.between(0, 10) * 250;
      }
    }
    s.flows.push_back(f);
  }

  json defs = json::array({sf_inc(g), sf_rec(), sf_a(1), sf_b(), act_tag()});
  s.versions["sf_a"] = {to_value(sf_a(1)), to_value(sf_a(2))};
  for (const char* id : {"sf_inc", "sf_rec", "sf_b", "act_tag"}) {
    for (const json& d : defs) {
      if (d["id"] == id) s.versions[id] = {to_value(d)};
    }
  }
  // In "hang" scenarios f0 (an API flow that only call_flow starts) calls sim_hang: a
  // never-returning action costs a real thread until the seed ends, so they stay few.
  std::vector<std::string> startable = api_flows;
  if (s.custom == "hang") startable.erase(std::remove(startable.begin(), startable.end(), "f0"), startable.end());
  for (const FlowSpec& f : s.flows) {
    const bool has_vars = g.chance(0.5);
    // Schedule flows have one version and call no unit: their schedule is re-armed when
    // their plan changes, which the model follows only for their own activation.
    const size_t n_versions = f.kind != FlowSpec::Kind::kSchedule && g.chance(0.3) ? 2 : 1;
    for (size_t v = 1; v <= n_versions; ++v) {
      FlowBuilder b(g, s, f, startable, has_vars, f.id == "f0");
      json d = {{"id", f.id}, {"trigger", trigger_json(f)}, {"actions", with_marker(f.id, v, b.body())}};
      if (has_vars) d["variables"] = {{"v", 0}, {"tag", "t"}};
      if (f.kind == FlowSpec::Kind::kApi) d["inputs"] = json::array({json{{"name", "k"}, {"type", "integer"}}});
      if (v == 1) defs.push_back(d);
      s.versions[f.id].push_back(to_value(d));
    }
  }
  s.definitions = defs.dump();
  return s;
}

}  // namespace flowrt::sim
