#include "tests/simulation/steps.h"

namespace flowrt::sim {

using json = nlohmann::json;

namespace {

json wait_step(int64_t ms) { return json{{"action", "wait"}, {"inputs", {{"duration", std::to_string(ms) + "ms"}}}}; }

}  // namespace

json log_step(const std::string& message) { return json{{"action", "log"}, {"inputs", {{"message", message}}}}; }

int64_t action_steps(const json& steps) {
  int64_t n = 0;
  for (const json& st : steps) {
    if (st.contains("action")) ++n;
    for (const char* branch : {"then", "else", "do", "try", "catch"}) {
      if (st.contains(branch)) n += action_steps(st[branch]);
    }
    if (st.contains("else_if")) {
      for (const json& b : st["else_if"]) n += action_steps(b["then"]);
    }
  }
  return n;
}

FlowBuilder::FlowBuilder(Rng& g, const Scenario& s, const FlowSpec& f, const std::vector<std::string>& api_flows,
                         bool has_vars, bool hang)
    : g_(g), s_(s), f_(f), api_flows_(api_flows), vars_(has_vars), hang_(hang) {
  writes_left_ = g_.chance(0.35) ? 0 : g_.between(1, 2);
}

json FlowBuilder::body() {
  json steps = json::array();
  if (f_.kind == FlowSpec::Kind::kEvent && (f_.id == "f1" || f_.id == "f2")) {
    // The event ping-pong: f1 (on e0) fires e1, f2 (on e1) fires e0.
    steps.push_back(json{{"id", next_id()},
                         {"action", "fire_event"},
                         {"inputs", {{"name", f_.event == "e0" ? "e1" : "e0"}, {"payload", {{"from", "{{context.id}}"}}}}}});
  }
  // Each add() may append several top-level steps that belong together (lock ... unlock):
  // past max_actions, whole groups are dropped from the end, never part of one.
  std::vector<size_t> group_starts;
  const int64_t n = g_.between(2, 6);
  for (int64_t i = 0; i < n; ++i) {
    group_starts.push_back(steps.size());
    add(steps, 0, false);
  }
  if (hang_ && s_.custom == "hang") {
    group_starts.push_back(steps.size());
    add_more(steps, 0, false, 26);  // the flow that hangs always does
  }
  while (action_steps(steps) > 49 && !group_starts.empty()) {
    while (steps.size() > group_starts.back()) steps.erase(steps.size() - 1);
    group_starts.pop_back();
  }
  return steps;
}

json FlowBuilder::literal_values() {
  json v = {{"a", g_.between(0, 4)}, {"b", g_.pick(kLetters)}, {"by", "{{flow.id}}"}};
  if (g_.chance(0.5)) v["c"] = extra_value();
  return v;
}

// A computed field: a pill through transforms, or text with pills in it.
json FlowBuilder::extra_value() {
  std::vector<json> options = {"n{{context.id}}-{{flow.id}}", "{{flow.id | upper}}", "{{context.id | length}}"};
  if (vars_) {
    options.push_back("{{vars.v}}");
    options.push_back("{{vars.tag | upper}}");
    options.push_back("v={{vars.v}};t={{vars.tag}}");
  }
  if (has_trigger_record()) {
    options.push_back("{{trigger.record.a | mul: 2}}");
    options.push_back("{{trigger.record.b | upper}}");
  }
  if (update_flow()) options.push_back("{{trigger.previous.a | default: -1}}");
  if (f_.kind == FlowSpec::Kind::kApi) options.push_back("{{inputs.k | default: 0 | add: 1}}");
  if (f_.kind == FlowSpec::Kind::kEvent) options.push_back("{{trigger.payload.k | default: -1}}");
  if (f_.kind == FlowSpec::Kind::kSchedule) options.push_back("{{trigger.time}}");
  if (!echo_ids_.empty()) options.push_back("{{steps." + g_.pick(echo_ids_) + ".out | default: \"none\" | lower}}");
  return g_.pick(options);
}

json FlowBuilder::lock_step(const std::string& key, int64_t weight, bool counter) {
  json in = {{"key", key}, {"max_attempts", g_.between(1, counter ? 12 : 6)},
             {"delay", std::to_string(g_.between(1, 5) * 100) + "ms"}};
  if (weight != 1 || g_.chance(0.3)) in["weight"] = weight;
  if (g_.chance(counter ? 0.4 : 0.25)) in["max_duration"] = g_.chance(0.6) ? "700ms" : "3s";
  return json{{"id", next_id()}, {"action", "lock"}, {"on_error", on_error()}, {"inputs", in}};
}

// A condition the model can decide from what it knows of the context: the trigger record
// (and, in update flows, the changes ops against the previous record), variables, inputs.
json FlowBuilder::decidable_condition(int depth) {
  std::vector<json> options;
  if (has_trigger_record()) {
    options.push_back({{"field", "a"}, {"op", g_.pick(std::vector<std::string>{"ge", "lt", "eq", "ne"})}, {"value", g_.between(0, 4)}});
    options.push_back({{"field", "b"}, {"op", "in"}, {"value", json::array({g_.pick(kLetters), g_.pick(kLetters)})}});
  }
  if (update_flow()) {
    options.push_back({{"field", g_.chance(0.5) ? "a" : "b"}, {"op", "changes"}});
    options.push_back({{"field", "a"}, {"op", "changes_to"}, {"value", g_.between(0, 4)}});
    options.push_back({{"field", "a"}, {"op", "changes_from"}, {"value", g_.between(0, 4)}});
  }
  if (vars_) {
    options.push_back({{"pill", "vars.v"}, {"op", "gt"}, {"value", g_.between(0, 3)}});
    options.push_back({{"pill", "vars.tag"}, {"op", "starts_with"}, {"value", "T"}});
  }
  if (f_.kind == FlowSpec::Kind::kApi) options.push_back({{"pill", "inputs.k"}, {"op", "le"}, {"value", g_.between(0, 9)}});
  options.push_back({{"pill", "flow.id"}, {"op", "ends_with"}, {"value", std::to_string(g_.between(0, 9))}});
  json c = g_.pick(options);
  if (depth == 0 && g_.chance(0.25)) {
    const json d = decidable_condition(1);
    c = g_.chance(0.5) ? json{{"any", json::array({c, d})}} : json{{"all", json::array({c, json{{"not", d}}})}};
  }
  return c;
}

// lock K; look up counter K; [wait]; update n = n + 1 while holding K; log "inc K"; unlock K.
// Only on a key no earlier step may still hold: re-locking a held name returns it at
// once with the weight first taken (BEHAVIOUR.md, Locks), which may be too light to
// keep two incrementers apart.
void FlowBuilder::counter_pattern(json& out) {
  std::vector<std::string> free;
  for (const std::string& k : s_.lock_names) {
    if (!maybe_held_.count(k)) free.push_back(k);
  }
  if (free.empty()) {
    out.push_back(log_step("every key may be held: no increment"));
    return;
  }
  const std::string key = g_.pick(free);
  const int64_t limit = s_.limit_of(key);
  const int64_t weight = g_.between(limit / 2 + 1, limit);  // two holders never fit together
  if (g_.chance(0.3) && may_call()) {
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
  if (g_.chance(0.5)) out.push_back(wait_step(g_.between(0, 10) * 100));
  out.push_back(json{{"id", next_id()},
                     {"action", "update_record"},
                     {"inputs",
                      {{"table", kCounterTable},
                       {"sys_id", "{{steps." + c + ".record.sys_id}}"},
                       {"while_holding", key},
                       {"values", {{"n", "{{steps." + c + ".record.n | add: 1}}"}}}}}});
  out.push_back(log_step("inc " + key));
  out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", key}}}});
}

void FlowBuilder::add(json& out, int depth, bool in_loop) {
  int64_t kind = g_.between(0, 31);
  if (kind >= 30) kind = 18;  // crosswise locks twice as often: they are what deadlocks
  switch (kind) {
    case 0:
      out.push_back(log_step("at {{context.id}} " + next_id()));
      return;
    case 1:
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
      json values = g_.chance(0.4)   ? json{{"a", g_.between(0, 4)}}
                    : g_.chance(0.5) ? json{{"b", g_.pick(kLetters)}}
                                     : json{{"a", "{{trigger.record.a | add: 1 | mod: 5}}"}, {"c", extra_value()}};
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
    case 7: {  // look up, then if / else on what was found (the model reads the branch taken)
      if (depth >= 2) return add(out, depth, in_loop);
      const std::string lk = next_id();
      out.push_back(json{{"id", lk},
                         {"action", "look_up_record"},
                         {"inputs", {{"table", g_.pick(s_.tables)}, {"condition", {{"field", "b"}, {"op", "eq"}, {"value", g_.pick(kLetters)}}}}}});
      json cond = {{"pill", "steps." + lk + ".found"}, {"op", "eq"}, {"value", true}};
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
      for (int64_t i = g_.between(0, 4); i > 0; --i) items.push_back(g_.between(0, 9));
      json body = json::array();
      for (int64_t i = g_.between(1, 2); i > 0; --i) add(body, depth + 1, true);
      out.push_back(json{{"for_each", items}, {"as", "it"}, {"do", body}});
      return;
    }
    case 9: {  // for_each over a non-array: the step fails; sometimes caught
      json loop = {{"for_each", "{{context.id}}"}, {"do", json::array({log_step("never")})}};
      if (g_.chance(0.6)) {
        out.push_back(json{{"try", json::array({loop})}, {"catch", json::array({log_step("caught {{error.message}}")})}});
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
      out.push_back(json{{"try", body}, {"catch", json::array({log_step("caught {{error.message}}")})}});
      return;
    }
    case 11:
      out.push_back(wait_step(g_.pick(std::vector<int64_t>{0, 100, 250, 500, 1000, 2500})));
      return;
    case 12: {  // wait for a condition, with a timeout
      const std::string timeout = std::to_string(g_.between(1, 30) * 100) + "ms";
      if (has_trigger_record() && g_.chance(0.5)) {
        json cond = {{"field", "a"}, {"op", "ge"}, {"value", g_.between(1, 4)}};
        if (g_.chance(0.3)) cond = {{"field", "a"}, {"op", "changes_to"}, {"value", g_.between(0, 4)}};
        out.push_back(json{{"id", next_id()},
                           {"action", "wait_for_condition"},
                           {"on_error", on_error()},
                           {"inputs", {{"table", f_.table}, {"sys_id", "{{trigger.sys_id}}"}, {"condition", cond}, {"timeout", timeout}}}});
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
    case 13: {  // a lock held for a while (sometimes to the end of the context)
      const std::string key = g_.pick(s_.lock_names);
      maybe_held_.insert(key);
      out.push_back(lock_step(key, g_.between(1, s_.limit_of(key)), false));
      if (g_.chance(0.5)) out.push_back(wait_step(g_.between(1, 15) * 100));
      if (g_.chance(0.7)) out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", key}}}});
      return;
    }
    case 14:
    case 15:
      if (in_loop) return add(out, depth, in_loop);
      counter_pattern(out);
      return;
    case 16: {  // a named event, or an API flow started from here
      if (in_loop || writes_left_ == 0) return add(out, depth, in_loop);
      --writes_left_;
      if (g_.chance(0.5) || api_flows_.empty()) {
        out.push_back(json{{"id", next_id()},
                           {"action", "fire_event"},
                           {"inputs", {{"name", g_.chance(0.5) ? "e2" : "e3"}, {"payload", {{"from", "{{context.id}}"}}}}}});
      } else {
        out.push_back(json{{"id", next_id()},
                           {"action", "start_flow"},
                           {"on_error", "continue"},
                           {"inputs", {{"flow", g_.pick(api_flows_)}, {"inputs", {{"k", g_.between(0, 9)}}}}}});
      }
      return;
    }
    case 17:  // a subflow that calls itself (the inner call is skipped)
      if (!may_call()) return add(out, depth, in_loop);
      out.push_back(json{{"id", next_id()}, {"action", "call_subflow"}, {"inputs", {{"subflow", "sf_rec"}, {"inputs", json::object()}}}});
      return;
    case 18: {  // two locks, in either order: contexts that take them crosswise deadlock
      if (s_.lock_names.size() < 2) return add(out, depth, in_loop);
      // k0 and k1 in the order of the flow's parity: flows of the other parity take them
      // the other way round.
      const bool odd = (f_.id.back() - '0') % 2 == 1;
      const std::string first = s_.lock_names[odd ? 1 : 0];
      const std::string second = s_.lock_names[odd ? 0 : 1];
      maybe_held_.insert(first);
      maybe_held_.insert(second);
      out.push_back(lock_step(first, 1, false));
      out.push_back(wait_step(g_.between(1, 3) * 100));
      out.push_back(lock_step(second, 1, false));
      out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", second}}}});
      out.push_back(json{{"action", "unlock"}, {"inputs", {{"key", first}}}});
      return;
    }
    case 19:
      out.push_back(json{{"action", "fail"}, {"on_error", on_error()}, {"inputs", {{"message", "failed on purpose"}}}});
      return;
    default:
      return add_more(out, depth, in_loop, kind);
  }
}

// The second half of the step kinds: variables, decidable branches, calls of units and
// custom actions.
void FlowBuilder::add_more(json& out, int depth, bool in_loop, int64_t kind) {
  switch (kind) {
    case 20:
    case 21: {  // set variables: a counter and a tag, through transforms
      if (!vars_) return add(out, depth, in_loop);
      json values = json::object();
      if (g_.chance(0.7)) values["v"] = "{{vars.v | add: " + std::to_string(g_.between(1, 3)) + "}}";
      if (values.empty() || g_.chance(0.5)) {
        std::vector<std::string> tags = {"T{{context.id}}", "{{flow.id | upper}}", "{{vars.tag | lower}}"};
        if (has_trigger_record()) tags.push_back("{{trigger.record.b | upper}}");
        if (f_.kind == FlowSpec::Kind::kApi) tags.push_back("T{{inputs.k | default: 0 | mul: 3}}");
        values["tag"] = g_.pick(tags);
      }
      out.push_back(json{{"action", "set_variables"}, {"inputs", {{"values", values}}}});
      return;
    }
    case 22:
    case 23: {  // if / else_if / else on conditions the model decides itself
      if (depth >= 2) return add(out, depth, in_loop);
      json node = {{"if", decidable_condition(0)}};
      json then = json::array();
      for (int64_t i = g_.between(1, 2); i > 0; --i) add(then, depth + 1, in_loop);
      node["then"] = then;
      if (g_.chance(0.7)) {
        json branches = json::array();
        for (int64_t b = g_.between(1, 2); b > 0; --b) {
          json body = json::array();
          add(body, depth + 1, in_loop);
          branches.push_back(json{{"if", decidable_condition(0)}, {"then", body}});
        }
        node["else_if"] = branches;
      }
      if (g_.chance(0.6)) {
        json els = json::array();
        add(els, depth + 1, in_loop);
        node["else"] = els;
      }
      out.push_back(node);
      return;
    }
    case 24: {  // the mutually calling subflows sf_a -> sf_b -> sf_a ..., then their output
      if (!may_call()) return add(out, depth, in_loop);
      const std::string id = next_id();
      out.push_back(json{{"id", id},
                         {"action", "call_subflow"},
                         {"on_error", "continue"},
                         {"inputs", {{"subflow", "sf_a"}, {"inputs", {{"n", g_.between(0, 3)}}}}}});
      out.push_back(log_step("sf_a gave {{steps." + id + ".r}}"));
      return;
    }
    case 25: {  // the action definition: writes to the sink, returns its tag
      if (!may_call()) return add(out, depth, in_loop);
      const std::string id = next_id();
      out.push_back(json{{"id", id}, {"action", "act_tag"}, {"inputs", {{"tag", g_.chance(0.5) ? "{{flow.id}}" : "x{{context.id}}"}}}});
      out.push_back(log_step("act_tag gave {{steps." + id + ".tag}}"));
      return;
    }
    case 26:
    case 27: {  // custom C++ actions
      if (s_.custom.empty()) return add(out, depth, in_loop);
      if (s_.custom == "hang") {
        if (!hang_ || in_loop) return add(out, depth, in_loop);
        hang_ = false;
        out.push_back(json{{"id", next_id()}, {"action", "sim_hang"}});
        return;
      }
      const int64_t which = g_.between(0, 9);
      if (which <= 3) {
        const std::string id = next_id();
        echo_ids_.push_back(id);
        out.push_back(json{{"id", id}, {"action", "sim_echo"}, {"inputs", {{"text", g_.chance(0.5) ? "{{flow.id}}" : "e{{context.id}}"}}}});
      } else if (which <= 5) {
        if (in_loop) return add(out, depth, in_loop);
        out.push_back(json{{"id", next_id()}, {"action", "sim_stamp"}, {"inputs", {{"tag", "{{flow.id}}-{{context.id}}"}}}});
      } else if (which <= 7) {
        json step = {{"id", next_id()}, {"action", "sim_throw"}};
        if (g_.chance(0.5)) {
          step["on_error"] = "continue";
          out.push_back(step);
        } else {
          out.push_back(json{{"try", json::array({step})}, {"catch", json::array({log_step("caught {{error.message}}")})}});
        }
      } else {
        out.push_back(json{{"id", next_id()}, {"action", "sim_slow"}});
      }
      return;
    }
    default: {  // a for_each whose length may pass max_iterations (a property the traffic sets)
      if (depth >= 2 || in_loop) return add(out, depth, in_loop);
      json items = json::array();
      for (int64_t i = g_.between(2, 4); i > 0; --i) items.push_back(g_.between(0, 9));
      json body = json::array({log_step("item {{it}}")});
      if (g_.chance(0.5)) {
        out.push_back(json{{"for_each", items}, {"as", "it"}, {"do", body}});
      } else {
        out.push_back(json{{"try", json::array({json{{"for_each", items}, {"as", "it"}, {"do", body}}})},
                           {"catch", json::array({log_step("caught {{error.message}}")})}});
      }
      return;
    }
  }
}

}  // namespace flowrt::sim
