#include "tests/simulation/generator.h"

#include <nlohmann/json.hpp>
#include <set>

#include "plans/value_json.h"

namespace flowrt::sim {
namespace {

using json = nlohmann::json;

int64_t action_steps(const json& steps);

// Builds one flow's steps. Writes that can start other flows are rationed (a budget per
// flow) so that chains of flows starting flows stay small; writes inside loops go to the
// sink table, which no flow listens to.
class FlowBuilder {
 public:
  FlowBuilder(Rng& g, const Scenario& s, const FlowSpec& f, const std::vector<std::string>& api_flows)
      : g_(g), s_(s), f_(f), api_flows_(api_flows) {
    writes_left_ = g_.chance(0.35) ? 0 : g_.between(1, 2);
  }

  // The flow's steps; the last top-level ones are dropped while the flow holds more than
  // max_actions (50) action steps (pills only read earlier steps, so this stays valid).
  json body() {
    json steps = json::array();
    const int64_t n = g_.between(2, 6);
    for (int64_t i = 0; i < n; ++i) add(steps, 0, false);
    while (action_steps(steps) > 50) steps.erase(steps.size() - 1);
    return steps;
  }

 private:
  std::string next_id() { return "s" + std::to_string(++ids_); }
  std::string on_error() { return g_.chance(0.5) ? "continue" : "stop"; }
  bool record_flow() const { return f_.kind == FlowSpec::Kind::kRecord; }
  bool has_trigger_record() const { return record_flow() && f_.when != "deleted"; }
  json literal_values() {
    return json{{"a", g_.between(0, 4)}, {"b", g_.pick(kLetters)}, {"by", "{{flow.id}}"}};
  }

  json lock_step(const std::string& key, int64_t weight, bool counter) {
    json in = {{"key", key}, {"max_attempts", g_.between(1, counter ? 12 : 6)},
               {"delay", std::to_string(g_.between(1, 5) * 100) + "ms"}};
    if (weight != 1 || g_.chance(0.3)) in["weight"] = weight;
    if (g_.chance(0.25)) in["max_duration"] = g_.chance(0.5) ? "700ms" : "3s";
    return json{{"id", next_id()}, {"action", "lock"}, {"on_error", on_error()}, {"inputs", in}};
  }

  // lock K; look up counter K; [wait]; update n = n + 1 while holding K; log "inc K"; unlock K.
  // Only on a key no earlier step may still hold: re-locking a held name returns it at
  // once with the weight first taken (BEHAVIOUR.md, Locks), which may be too light to
  // keep two incrementers apart.
  void counter_pattern(json& out) {
    std::vector<std::string> free;
    for (const std::string& k : s_.lock_names) {
      if (!maybe_held_.count(k)) free.push_back(k);
    }
    if (free.empty()) {
      out.push_back(json{{"action", "log"}, {"inputs", {{"message", "every key may be held: no increment"}}}});
      return;
    }
    const std::string key = g_.pick(free);
    const int64_t limit = s_.limit_of(key);
    const int64_t weight = g_.between(limit / 2 + 1, limit);  // two holders never fit together
    if (g_.chance(0.3)) {
      out.push_back(json{{"id", next_id()},
                         {"action", "call_subflow"},
                         {"on_error", on_error()},
                         {"inputs", {{"subflow", "sf_inc"}, {"inputs", {{"key", key}, {"w", weight}}}}}});
      return;
    }
    out.push_back(lock_step(key, weight, true));
    const std::string c = next_id();
    out.push_back(json{{"id", c},
                       {"action", "look_up_record"},
                       {"inputs", {{"table", kCounterTable}, {"condition", {{"field", "name"}, {"op", "eq"}, {"value", key}}}}}});
    if (g_.chance(0.4)) {
      out.push_back(json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(g_.between(0, 10) * 100) + "ms"}}}});
    }
    out.push_back(json{{"id", next_id()},
                       {"action", "update_record"},
                       {"inputs",
                        {{"table", kCounterTable},
                         {"sys_id", "{{steps." + c + ".record.sys_id}}"},
                         {"while_holding", key},
                         {"values", {{"n", "{{steps." + c + ".record.n | add: 1}}"}}}}}});
    out.push_back(json{{"action", "log"}, {"inputs", {{"message", "inc " + key}}}});
    out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", key}}}});
  }

  void add(json& out, int depth, bool in_loop) {
    const int64_t kind = g_.between(0, 20);
    switch (kind) {
      case 0:
      case 1:
        out.push_back(json{{"action", "log"}, {"inputs", {{"message", "at {{context.id}} " + next_id()}}}});
        return;
      case 2:
      case 3: {  // create a record: another flow's trigger, or this one's own (direct recursion)
        if (in_loop) {
          out.push_back(json{{"action", "create_record"},
                             {"inputs", {{"table", kSinkTable}, {"values", {{"i", "{{item}}"}, {"by", "{{context.id}}"}}}}}});
          return;
        }
        if (writes_left_ == 0) return add(out, depth, in_loop);
        --writes_left_;
        out.push_back(json{{"id", next_id()},
                           {"action", "create_record"},
                           {"inputs", {{"table", g_.pick(s_.tables)}, {"values", literal_values()}}}});
        return;
      }
      case 4: {  // update the trigger record (or fail on purpose when there is none)
        if (in_loop || writes_left_ == 0 || !has_trigger_record()) return add(out, depth, in_loop);
        --writes_left_;
        json values = g_.chance(0.5) ? json{{"a", g_.between(0, 4)}} : json{{"b", g_.pick(kLetters)}};
        out.push_back(json{{"id", next_id()},
                           {"action", "update_record"},
                           {"on_error", on_error()},
                           {"inputs", {{"table", f_.table}, {"sys_id", "{{trigger.sys_id}}"}, {"values", values}}}});
        return;
      }
      case 5:  // fails on purpose: no such record
        out.push_back(json{{"id", next_id()},
                           {"action", "update_record"},
                           {"on_error", on_error()},
                           {"inputs", {{"table", g_.pick(s_.tables)}, {"sys_id", "no-such-record"}, {"values", {{"a", 1}}}}}});
        return;
      case 6: {  // look up a record and delete it (fails when none is found: sys_id null)
        if (in_loop || writes_left_ == 0 || !g_.chance(0.5)) return add(out, depth, in_loop);
        --writes_left_;
        const std::string table = g_.pick(s_.tables);
        const std::string lk = next_id();
        out.push_back(json{{"id", lk},
                           {"action", "look_up_record"},
                           {"inputs", {{"table", table}, {"condition", {{"field", "a"}, {"op", "eq"}, {"value", g_.between(0, 4)}}}}}});
        out.push_back(json{{"id", next_id()},
                           {"action", "delete_record"},
                           {"on_error", "continue"},
                           {"inputs", {{"table", table}, {"sys_id", "{{steps." + lk + ".record.sys_id}}"}}}});
        return;
      }
      case 7: {  // look up, then if / else
        if (depth >= 2) return add(out, depth, in_loop);
        const std::string lk = next_id();
        out.push_back(json{{"id", lk},
                           {"action", "look_up_record"},
                           {"inputs", {{"table", g_.pick(s_.tables)}, {"condition", {{"field", "b"}, {"op", "eq"}, {"value", g_.pick(kLetters)}}}}}});
        json cond = {{"pill", "steps." + lk + ".found"}, {"op", "eq"}, {"value", true}};
        if (record_flow() && g_.chance(0.4)) cond = {{"field", "a"}, {"op", "ge"}, {"value", g_.between(0, 4)}};
        json then = json::array(), els = json::array();
        for (int64_t i = g_.between(1, 2); i > 0; --i) add(then, depth + 1, in_loop);
        for (int64_t i = g_.between(0, 2); i > 0; --i) add(els, depth + 1, in_loop);
        if (g_.chance(0.1)) then.push_back(json{{"end", true}});
        json node = {{"if", cond}, {"then", then}};
        if (!els.empty()) node["else"] = els;
        out.push_back(node);
        return;
      }
      case 8: {  // for_each over a small array
        if (depth >= 2 || in_loop) return add(out, depth, in_loop);
        json items = json::array();
        for (int64_t i = g_.between(0, 3); i > 0; --i) items.push_back(g_.between(0, 9));
        json body = json::array();
        for (int64_t i = g_.between(1, 2); i > 0; --i) add(body, depth + 1, true);
        out.push_back(json{{"for_each", items}, {"as", "it"}, {"do", body}});
        return;
      }
      case 9: {  // for_each over a non-array: the step fails; sometimes caught
        json loop = {{"for_each", "{{context.id}}"}, {"do", json::array({json{{"action", "log"}, {"inputs", {{"message", "never"}}}}})}};
        if (g_.chance(0.6)) {
          out.push_back(json{{"try", json::array({loop})},
                             {"catch", json::array({json{{"action", "log"}, {"inputs", {{"message", "caught {{error.message}}"}}}}})}});
        } else {
          out.push_back(loop);
        }
        return;
      }
      case 10: {  // try / catch around steps that may fail
        if (depth >= 2) return add(out, depth, in_loop);
        json body = json::array();
        for (int64_t i = g_.between(1, 2); i > 0; --i) add(body, depth + 1, in_loop);
        if (g_.chance(0.5)) body.push_back(json{{"action", "fail"}, {"inputs", {{"message", "thrown on purpose"}}}});
        json handler = json::array({json{{"action", "log"}, {"inputs", {{"message", "caught {{error.message}}"}}}}});
        out.push_back(json{{"try", body}, {"catch", handler}});
        return;
      }
      case 11:
      case 12:
        out.push_back(json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(g_.pick(std::vector<int64_t>{0, 100, 250, 500, 1000, 2500})) + "ms"}}}});
        return;
      case 13: {  // wait for a condition, with a timeout
        const std::string timeout = std::to_string(g_.between(1, 30) * 100) + "ms";
        if (has_trigger_record() && g_.chance(0.5)) {
          out.push_back(json{{"id", next_id()},
                             {"action", "wait_for_condition"},
                             {"on_error", on_error()},
                             {"inputs",
                              {{"table", f_.table},
                               {"sys_id", "{{trigger.sys_id}}"},
                               {"condition", {{"field", "a"}, {"op", "ge"}, {"value", g_.between(1, 4)}}},
                               {"timeout", timeout}}}});
        } else {
          const std::string key = g_.pick(s_.lock_names);
          const std::string c = next_id();
          out.push_back(json{{"id", c},
                             {"action", "look_up_record"},
                             {"inputs", {{"table", kCounterTable}, {"condition", {{"field", "name"}, {"op", "eq"}, {"value", key}}}}}});
          out.push_back(json{{"id", next_id()},
                             {"action", "wait_for_condition"},
                             {"on_error", on_error()},
                             {"inputs",
                              {{"table", kCounterTable},
                               {"sys_id", "{{steps." + c + ".record.sys_id}}"},
                               {"condition", {{"field", "n"}, {"op", "ge"}, {"value", g_.between(1, 6)}}},
                               {"timeout", timeout}}}});
        }
        return;
      }
      case 14: {  // a lock held for a while (sometimes to the end of the context)
        const std::string key = g_.pick(s_.lock_names);
        maybe_held_.insert(key);
        out.push_back(lock_step(key, g_.between(1, s_.limit_of(key)), false));
        if (g_.chance(0.5)) {
          out.push_back(json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(g_.between(1, 15) * 100) + "ms"}}}});
        }
        if (g_.chance(0.7)) out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", key}}}});
        return;
      }
      case 15:
      case 16:
        if (in_loop) return add(out, depth, in_loop);
        counter_pattern(out);
        return;
      case 17: {  // a named event, or an API flow started from here
        if (in_loop || writes_left_ == 0) return add(out, depth, in_loop);
        --writes_left_;
        if (g_.chance(0.5) || api_flows_.empty()) {
          out.push_back(json{{"id", next_id()},
                             {"action", "fire_event"},
                             {"inputs", {{"name", g_.pick(s_.events)}, {"payload", {{"from", "{{context.id}}"}}}}}});
        } else {
          out.push_back(json{{"id", next_id()},
                             {"action", "start_flow"},
                             {"on_error", "continue"},
                             {"inputs", {{"flow", g_.pick(api_flows_)}, {"inputs", {{"k", g_.between(0, 9)}}}}}});
        }
        return;
      }
      case 18:  // a subflow that calls itself (the inner call is skipped)
        out.push_back(json{{"id", next_id()}, {"action", "call_subflow"}, {"inputs", {{"subflow", "sf_rec"}, {"inputs", json::object()}}}});
        return;
      case 19: {  // two locks, in either order: contexts that take them crosswise deadlock
        if (s_.lock_names.size() < 2) return add(out, depth, in_loop);
        const std::string first = g_.pick(s_.lock_names);
        std::string second = g_.pick(s_.lock_names);
        while (second == first) second = g_.pick(s_.lock_names);
        maybe_held_.insert(first);
        maybe_held_.insert(second);
        out.push_back(lock_step(first, 1, false));
        out.push_back(json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(g_.between(0, 3) * 100) + "ms"}}}});
        out.push_back(lock_step(second, 1, false));
        out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", second}}}});
        out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", first}}}});
        return;
      }
      default:
        out.push_back(json{{"action", "fail"}, {"on_error", on_error()}, {"inputs", {{"message", "failed on purpose"}}}});
        return;
    }
  }

  Rng& g_;
  const Scenario& s_;
  const FlowSpec& f_;
  const std::vector<std::string>& api_flows_;
  int ids_ = 0;
  int64_t writes_left_ = 0;
  std::set<std::string> maybe_held_;  // keys an earlier step (in document order) locks
};

// Action steps, counted through nested flow logic as SPEC 9.1 counts them.
int64_t action_steps(const json& steps) {
  int64_t n = 0;
  for (const json& st : steps) {
    if (st.contains("action")) ++n;
    for (const char* branch : {"then", "else", "do", "try", "catch"}) {
      if (st.contains(branch)) n += action_steps(st[branch]);
    }
  }
  return n;
}

json trigger_json(const FlowSpec& f) {
  switch (f.kind) {
    case FlowSpec::Kind::kRecord: {
      json t = {{"type", "record"}, {"table", f.table}, {"when", f.when}};
      if (f.condition) {
        t["condition"] = {{"field", f.condition->field}, {"op", f.condition->op},
                          {"value", json::parse(f.condition->value.to_json())}};
      }
      if (!f.run.empty()) t["run"] = f.run;
      return t;
    }
    case FlowSpec::Kind::kEvent: return json{{"type", "event"}, {"name", f.event}};
    case FlowSpec::Kind::kApi: return json{{"type", "api"}};
  }
  return json();
}

json subflows(Rng& g) {
  json out = json::array();
  // The counter pattern as a subflow: its steps run in the calling context.
  out.push_back(json{
      {"id", "sf_inc"},
      {"type", "subflow"},
      {"inputs", json::array({json{{"name", "key"}, {"type", "string"}, {"required", true}},
                              json{{"name", "w"}, {"type", "integer"}, {"required", true}}})},
      {"actions",
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
           json{{"action", "log"}, {"inputs", {{"message", "inc {{inputs.key}}"}}}},
           json{{"action", "unlock"}, {"inputs", {{"key", "{{inputs.key}}"}}}},
       })}});
  // Calls itself: the inner call is skipped (direct recursion of a subflow).
  out.push_back(json{{"id", "sf_rec"},
                     {"type", "subflow"},
                     {"actions", json::array({json{{"action", "log"}, {"inputs", {{"message", "in sf_rec"}}}},
                                              json{{"id", "again"}, {"action", "call_subflow"},
                                                   {"inputs", {{"subflow", "sf_rec"}, {"inputs", json::object()}}}}})}});
  return out;
}

}  // namespace

bool model_condition_holds(const FieldCondition& c, const Value& record) {
  const Value& f = record[c.field];
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

Scenario generate_scenario(uint64_t seed) {
  Rng g(seed);
  Scenario s;
  s.seed = seed;
  s.workers = static_cast<unsigned>(g.between(1, 4));
  s.recursion_limit = g.between(1, 3);
  for (int64_t i = g.between(2, 3); i > 0; --i) s.tables.push_back("t" + std::to_string(s.tables.size()));
  for (int64_t i = g.between(1, 3); i > 0; --i) {
    const std::string name = "k" + std::to_string(s.lock_names.size());
    s.lock_names.push_back(name);
    if (g.chance(0.4)) s.lock_limits[name] = g.between(2, 3);
  }
  s.events = {"e0", "e1"};
  s.operations = g.between(20, 60);

  const int64_t n_flows = g.between(5, 12);
  std::vector<std::string> api_flows;
  for (int64_t i = 0; i < n_flows; ++i) {
    FlowSpec f;
    f.id = "f" + std::to_string(i);
    const int64_t k = i == 0 ? 9 : i == 1 ? 7 : g.between(0, 9);  // at least one API and one event flow
    if (k <= 5) {
      f.kind = FlowSpec::Kind::kRecord;
      f.table = g.pick(s.tables);
      f.when = g.pick(std::vector<std::string>{"created", "updated", "created_or_updated", "deleted"});
      if (f.when == "updated" || f.when == "created_or_updated") {
        f.run = g.pick(std::vector<std::string>{"", "once", "always", "always", "for_each_unique_change", "for_every_update"});
      }
      if (g.chance(0.6)) {
        FieldCondition c;
        if (g.chance(0.7)) {
          c.field = "a";
          c.op = g.pick(std::vector<std::string>{"eq", "ne", "lt", "le", "gt", "ge", "in"});
          c.value = c.op == "in" ? Value::array({Value(g.between(0, 4)), Value(g.between(0, 4))}) : Value(g.between(0, 4));
        } else {
          c.field = "b";
          c.op = g.chance(0.5) ? "eq" : "ne";
          c.value = Value(g.pick(kLetters));
        }
        f.condition = c;
      }
    } else if (k <= 7) {
      f.kind = FlowSpec::Kind::kEvent;
      f.event = g.pick(s.events);
    } else {
      f.kind = FlowSpec::Kind::kApi;
      api_flows.push_back(f.id);
    }
    s.flows.push_back(f);
  }

  json defs = subflows(g);
  for (const FlowSpec& f : s.flows) {
    FlowBuilder b(g, s, f, api_flows);
    json d = {{"id", f.id}, {"trigger", trigger_json(f)}, {"actions", b.body()}};
    if (f.kind == FlowSpec::Kind::kApi) d["inputs"] = json::array({json{{"name", "k"}, {"type", "integer"}}});
    defs.push_back(d);
  }
  s.definitions = defs.dump();
  return s;
}

}  // namespace flowrt::sim
