// Fuzz target: bytes -> a harness events file (SPEC section 11), applied to an engine.
//
// Each input gets a fresh Engine (virtual clock, one worker thread, lock invariants
// checked) with the flows of kFlows loaded: a record-triggered flow with a condition, a
// lock, a wait, a fenced update, an unlock and a wait_for_condition; an event-triggered
// flow with a look-up, for_each and try/catch; an API flow calling a subflow and starting
// another flow; an hourly schedule. The input is read as the harness reads a file (JSON
// Lines; blank lines skipped; a bad line stops the run) and every op goes through
// Harness::apply. The engine then settles with a bounded horizon (one hour).
//
// So that one execution stays short, the harness side bounds what the input may ask for
// (the engine is not changed): at most kMaxOps ops; `advance` and `settle` durations are
// clamped (kMaxStep each, kMaxAdvanceTotal in all for advance); `set_property` of the
// iteration, recursion and thread limits is clamped; a saved schedule trigger fires at
// most every five minutes. Inputs over 64 KiB are refused.
//
// After the run it checks what must hold whatever the events were: the lock table's
// invariants (EngineOptions::check_invariants), that every lock holder and waiter is a
// context that is still in progress or waiting (SPEC section 8), that every context has
// one of the five statuses, and that the `flowrt run` document can be written.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/harness.h"

namespace {

using namespace flowrt;

constexpr size_t kMaxInput = 64 * 1024;
constexpr size_t kMaxOps = 64;
constexpr DurationMs kMaxStep = 24 * 3600 * 1000;         // one advance or settle
constexpr DurationMs kMaxAdvanceTotal = 24 * 3600 * 1000;  // every advance together
constexpr DurationMs kFinalSettle = 3600 * 1000;
constexpr DurationMs kMinEvery = 5 * 60 * 1000;           // saved schedule triggers

constexpr const char* kFlows = R"json([
 {"id": "triage", "name": "lock, work, release, then wait for the ticket to close",
  "trigger": {"type": "record", "table": "ticket", "when": "created_or_updated",
              "condition": {"all": [{"field": "priority", "op": "le", "value": 3},
                                    {"not": {"field": "state", "op": "eq", "value": "closed"}}]},
              "run": "always"},
  "variables": {"tries": 0},
  "actions": [
   {"id": "lk", "action": "lock", "on_error": "continue",
    "inputs": {"key": "queue-{{trigger.record.queue}}", "max_attempts": 4, "delay": "2s", "max_duration": "30s"}},
   {"action": "wait", "inputs": {"duration": "5s"}},
   {"id": "upd", "action": "update_record", "on_error": "continue",
    "inputs": {"table": "ticket", "sys_id": "{{trigger.sys_id}}",
               "values": {"owner": "bot", "token": "{{steps.lk.token}}"},
               "while_holding": "queue-{{trigger.record.queue}}"}},
   {"id": "un", "action": "unlock", "inputs": {"key": "queue-{{trigger.record.queue}}"}},
   {"action": "set_variables", "inputs": {"values": {"tries": "{{vars.tries | add: 1}}"}}},
   {"id": "w", "action": "wait_for_condition",
    "inputs": {"table": "ticket", "sys_id": "{{trigger.sys_id}}",
               "condition": {"field": "state", "op": "in", "value": ["closed", "resolved"]}, "timeout": "10m"}},
   {"if": {"pill": "steps.w.timed_out", "op": "eq", "value": true},
    "then": [{"action": "fire_event", "inputs": {"name": "sla.breached",
              "payload": {"sys_id": "{{trigger.sys_id}}", "number": "{{trigger.record.number}}"}}}],
    "else": [{"action": "log", "inputs": {"message": "closed {{trigger.record.number | default: \"?\"}}"}}]}
  ]},
 {"id": "on_breach", "trigger": {"type": "event", "name": "sla.breached"},
  "variables": {"seen": ""},
  "actions": [
   {"id": "found", "action": "look_up_records",
    "inputs": {"table": "ticket", "condition": {"field": "priority", "op": "le", "value": 2}, "order_by": "-priority", "limit": 5}},
   {"for_each": "{{steps.found.records}}", "as": "t", "do": [
     {"action": "set_variables", "inputs": {"values": {"seen": "{{vars.seen}} {{t.number}}"}}}]},
   {"try": [
     {"action": "update_record", "inputs": {"table": "ticket", "sys_id": "{{trigger.payload.sys_id}}", "values": {"escalated": true}}}],
    "catch": [{"action": "log", "inputs": {"level": "warn", "message": "{{error.step}}: {{error.message}}"}}]},
   {"action": "log", "inputs": {"message": "breach {{trigger.payload.number}}; seen{{vars.seen}}"}}
  ]},
 {"id": "greet", "type": "subflow",
  "inputs": [{"name": "who", "type": "string", "required": true}],
  "outputs": [{"name": "text", "type": "string"}],
  "actions": [{"action": "assign_outputs", "inputs": {"values": {"text": "hello {{inputs.who | upper | trim}}"}}}]},
 {"id": "api_note", "trigger": {"type": "api"},
  "actions": [
   {"id": "g", "action": "call_subflow", "inputs": {"subflow": "greet", "inputs": {"who": "{{inputs.who | default: \"nobody\"}}"}}},
   {"id": "n", "action": "create_record", "inputs": {"table": "note", "values": {"text": "{{steps.g.text}}", "ticket": "{{inputs.ticket}}"}}},
   {"id": "s", "action": "start_flow", "on_error": "continue", "inputs": {"flow": "api_close", "inputs": {"sys_id": "{{inputs.ticket}}"}}}
  ]},
 {"id": "api_close", "trigger": {"type": "api"},
  "actions": [
   {"action": "lock", "on_error": "continue", "inputs": {"key": "closer", "max_attempts": 3, "delay": "1m"}},
   {"id": "u", "action": "update_record", "on_error": "continue",
    "inputs": {"table": "ticket", "sys_id": "{{inputs.sys_id}}", "values": {"state": "closed"}, "while_holding": "closer"}},
   {"action": "delete_record", "on_error": "continue", "inputs": {"table": "note", "sys_id": "{{inputs.sys_id}}"}}
  ]},
 {"id": "hourly", "trigger": {"type": "schedule", "every": "1h"},
  "actions": [
   {"id": "open", "action": "look_up_record", "inputs": {"table": "ticket", "condition": {"field": "state", "op": "eq", "value": "open"}}},
   {"if": {"pill": "steps.open.found", "op": "eq", "value": true},
    "then": [{"action": "log", "inputs": {"message": "open at {{trigger.time}}: {{steps.open.record.number}}"}}]}
  ]}
])json";

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "events_fuzz: %s\n", what.c_str());
  std::abort();
}

// The op the harness applies, with its durations and limits bounded (see the top).
Value bound_op(const Value& op, DurationMs* advanced) {
  if (!op.is_object() || !op["op"].is_string()) return op;
  const std::string_view name = op["op"].as_string();
  if (name == "advance" || name == "settle") {
    const char* field = name == "advance" ? "duration" : "until";
    const Value* v = op.find(field);
    if (!v) return op;
    Result<DurationMs> d = parse_duration(*v);
    if (!d) return op;  // the harness reports it
    DurationMs bounded = std::min(*d, kMaxStep);
    if (name == "advance") {
      bounded = std::min(bounded, kMaxAdvanceTotal - *advanced);
      if (bounded > 0) *advanced += bounded;
    }
    return bounded == *d ? op : op.with(field, Value(static_cast<long long>(bounded)));
  }
  if (name == "set_property") {
    const Value& prop = op["name"];
    const Value& v = op["value"];
    if (!prop.is_string() || !v.is_number()) return op;
    const std::string_view p = prop.as_string();
    double cap = 0;
    if (p == "max_iterations") cap = 50;
    else if (p == "indirect_recursion_limit") cap = 4;
    else if (p == "worker_threads") cap = 2;
    else return op;
    return v.as_double() > cap ? op.with("value", Value(static_cast<long long>(cap))) : op;
  }
  if (name == "save") {
    const Value& def = op["definition"];
    const Value& trigger = def["trigger"];
    const Value* every = trigger.is_object() ? trigger.find("every") : nullptr;
    if (!every) return op;
    Result<DurationMs> d = parse_duration(*every);
    if (!d || *d >= kMinEvery) return op;
    return op.with("definition", def.with("trigger", trigger.with("every", Value(static_cast<long long>(kMinEvery)))));
  }
  return op;
}

void check_engine(Engine& engine) {
  const std::string violation = engine.core().dispatcher.lock_violation();
  if (!violation.empty()) fail("lock table invariant broken: " + violation);
  for (const ContextRecord& c : engine.contexts()) {
    const std::string s = c.status();
    if (s != "in_progress" && s != "waiting" && s != "completed" && s != "cancelled" && s != "error") {
      fail(c.id() + " has status '" + s + "'");
    }
  }
  const Value locks = engine.locks();
  for (const Value& lock : locks.items()) {
    for (const char* list : {"holders", "waiters"}) {
      for (const Value& h : lock[list].items()) {
        const std::string id(h["context"].as_string());
        std::optional<ContextRecord> c = engine.context(id);
        if (!c) continue;  // its record was dropped (context_retention); cannot tell
        const std::string s = c->status();
        if (s != "in_progress" && s != "waiting") {
          fail("lock '" + std::string(lock["name"].as_string()) + "' lists " + id + " among its " + list +
               ", but that context is " + s + ": " + locks.to_json());
        }
      }
    }
  }
  std::string out;
  write_json(engine.document(), out);
  // FLOWRT_FUZZ_PRINT=1: what an input did, for writing seeds and reading findings.
  static const bool print = std::getenv("FLOWRT_FUZZ_PRINT") != nullptr;
  if (print) std::fprintf(stderr, "%s\n", to_pretty_json(engine.document()).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  EngineOptions options;
  options.log_level = "off";
  options.properties.worker_threads = 1;
  options.check_invariants = true;
  options.lock_limits = {{"pool", 3}};
  Engine engine(options);
  {
    Diagnostics d = engine.load_text(kFlows, "events_fuzz flows");
    if (!d.empty()) fail("the fuzz target's own flows do not load:\n" + d.describe());
  }
  Harness harness(engine);

  // Read as Harness::run_text reads a file, one op at a time so that each can be bounded.
  JsonLimits limits;
  limits.max_bytes = 64 * 1024;
  size_t pos = 0, ops = 0;
  DurationMs advanced = 0;
  while (pos < text.size() && ops < kMaxOps) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++ops;
    Value op;
    JsonParseError error;
    if (!parse_json(line, &op, &error, limits)) break;  // a bad line stops the run
    Status s = harness.apply(bound_op(op, &advanced));
    if (!s) {
      if (s.message().empty()) fail("an op failed without a message: " + op.to_json());
      break;
    }
  }
  engine.settle(kFinalSettle);
  check_engine(engine);
  return 0;
}
