// triage and fanout: incidents arrive; one flow looks up an assignee by group, updates
// the incident and logs. fanout adds 10,000 other active flows on 100 other tables.
// events: the same look-up and log, started by a named event, so the run writes no
// records: with --retention, what it keeps is bounded, and its memory must stay flat.
#include <stdexcept>
#include <string>

#include "bench/workloads/measure.h"
#include "bench/workloads/workloads.h"

namespace flowrt::bench {
namespace {

constexpr const char* kTriage = R"({"id": "triage", "trigger": {"type": "record", "table": "incident", "when": "created",
  "condition": {"field": "priority", "op": "le", "value": 3}}, "actions": [
  {"id": "user", "action": "look_up_record", "inputs": {"table": "sys_user",
      "condition": {"field": "group", "op": "eq", "value": "{{trigger.record.group}}"}}},
  {"action": "update_record", "inputs": {"table": "incident", "sys_id": "{{trigger.sys_id}}",
      "values": {"assigned_to": "{{steps.user.record.user_name}}", "state": "assigned"}}},
  {"action": "log", "inputs": {"message": "{{trigger.record.number}} assigned to {{steps.user.record.user_name}}"}}]})";

std::string other_flows(int count, int tables) {
  std::string defs = "[";
  for (int i = 0; i < count; ++i) {
    const std::string table = "other_" + std::to_string(i % tables);
    defs += std::string(i ? "," : "") + R"({"id": "other_)" + std::to_string(i) + R"(", "trigger": {"type": "record", "table": ")" +
            table + R"(", "when": ")" + (i % 3 == 0 ? "created" : (i % 3 == 1 ? "updated" : "created_or_updated")) +
            R"(", "condition": {"field": "level", "op": "ge", "value": )" + std::to_string(i % 7) +
            R"(}}, "actions": [{"action": "log", "inputs": {"message": "{{trigger.record.level}}"}}]})";
  }
  return defs + "]";
}

constexpr const char* kEvents = R"({"id": "triage_event", "trigger": {"type": "event", "name": "incident"}, "actions": [
  {"id": "user", "action": "look_up_record", "inputs": {"table": "sys_user",
      "condition": {"field": "group", "op": "eq", "value": "{{trigger.payload.group}}"}}},
  {"action": "log", "inputs": {"message": "{{trigger.payload.number}} for {{steps.user.record.user_name}}"}}]})";

void insert_users(Engine& engine) {
  for (int u = 0; u < 1000; ++u) {
    Value user = Value::object({{"user_name", Value(std::string_view("user" + std::to_string(u)))},
                                {"group", Value(std::string_view("group" + std::to_string(u % 50)))}});
    insert_or_throw(engine, "sys_user", user);
  }
}

}  // namespace

BenchResult run_event_workload(const BenchOptions& o) {
  const std::unique_ptr<Engine> opened = open_bench_engine(bench_engine_options(o));
  Engine& engine = *opened;
  load_or_throw(engine, kEvents, "events.json");
  insert_users(engine);
  std::vector<Value> payloads;
  payloads.reserve(1000);
  for (uint64_t i = 0; i < 1000; ++i) {
    payloads.push_back(Value::object({{"number", Value(std::string_view("INC" + std::to_string(1000000 + i)))},
                                      {"group", Value(std::string_view("group" + std::to_string(i % 50)))}}));
  }
  BenchResult r = drive(
      engine, o.events,
      [&](uint64_t i) {
        if (Status s = engine.fire_event("incident", payloads[i % payloads.size()]); !s) {
          throw std::runtime_error("fire_event: " + s.message());
        }
      },
      o);
  r.workload = "events";
  return r;
}

BenchResult run_record_workload(const BenchOptions& o, bool fanout) {
  const std::unique_ptr<Engine> opened = open_bench_engine(bench_engine_options(o));
  Engine& engine = *opened;
  load_or_throw(engine, kTriage, "triage.json");
  if (fanout) load_or_throw(engine, other_flows(10000, 100), "others.json");
  insert_users(engine);
  // The incidents, built before the clock starts: the benchmark measures the engine, and
  // its memory: counted from after they were built (they are the harness's, not the
  // engine's), so bytes per context are what the engine keeps: records, contexts, indexes.
  std::vector<Value> incidents;
  incidents.reserve(o.events);
  for (uint64_t i = 0; i < o.events; ++i) {
    incidents.push_back(Value::object({{"number", Value(std::string_view("INC" + std::to_string(1000000 + i)))},
                                       {"priority", Value(static_cast<int>(1 + i % 3))},
                                       {"group", Value(std::string_view("group" + std::to_string(i % 50)))},
                                       {"state", Value("new")}}));
  }
  BenchResult r = drive_inserts(engine, "incident", incidents, o);
  r.workload = fanout ? "fanout" : "triage";
  if (fanout) r.extra.emplace_back("active_flows", 10001);
  return r;
}

}  // namespace flowrt::bench
