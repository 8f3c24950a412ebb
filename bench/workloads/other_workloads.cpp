// locks: contexts contend for 4 lock names and write while holding them.
// compile: compiling a 50-action flow, and a plan-cache hit.
#include <stdexcept>
#include <string>

#include "bench/workloads/measure.h"
#include "bench/workloads/workloads.h"
#include "runtime/flow_slot.h"

namespace flowrt::bench {

BenchResult run_record_workload(const BenchOptions& o, bool fanout);

namespace {

constexpr const char* kLocked = R"({"id": "locked", "trigger": {"type": "record", "table": "job", "when": "created"}, "actions": [
  {"action": "lock", "inputs": {"key": "{{trigger.record.lock}}", "max_attempts": 1000000, "delay": "1s"}},
  {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{trigger.record.lock}}", "while_holding": "{{trigger.record.lock}}",
                                         "values": {"last": "{{trigger.record.n}}"}}},
  {"action": "unlock", "inputs": {"key": "{{trigger.record.lock}}"}}]})";

BenchResult run_locks(const BenchOptions& o) {
  Engine engine(bench_engine_options(o));
  Diagnostics d = engine.load_text(kLocked, "locked.json");
  if (!d.empty()) throw std::runtime_error(d.describe());
  for (int i = 0; i < 4; ++i) {
    const std::string name = "lock" + std::to_string(i);
    if (!engine.insert("counter", Value::object({{"sys_id", Value(std::string_view(name))}})).is_ok()) {
      throw std::runtime_error("cannot insert counters");
    }
  }
  std::vector<Value> jobs;
  jobs.reserve(o.events);
  for (uint64_t i = 0; i < o.events; ++i) {
    jobs.push_back(Value::object({{"n", Value(static_cast<long long>(i))},
                                  {"lock", Value(std::string_view("lock" + std::to_string(i % 4)))}}));
  }
  const uint64_t handoffs_before = engine.core().dispatcher.lock_handoffs();
  BenchResult r = drive_inserts(engine, "job", jobs, o);
  r.workload = "locks";
  const double handoffs = static_cast<double>(engine.core().dispatcher.lock_handoffs() - handoffs_before);
  r.extra.emplace_back("handoffs", handoffs);
  r.extra.emplace_back("handoffs_per_s", handoffs / r.seconds);
  return r;
}

std::string fifty_actions() {
  std::string actions;
  for (int i = 0; i < 50; ++i) {
    std::string step;
    switch (i % 5) {
      case 0: step = R"({"id": "s)" + std::to_string(i) + R"(", "action": "look_up_record", "inputs": {"table": "t", "condition": {"field": "k", "op": "eq", "value": "{{trigger.record.k}}"}}})"; break;
      case 1: step = R"({"action": "update_record", "inputs": {"table": "t", "sys_id": "{{steps.s)" + std::to_string(i - 1) + R"(.record.sys_id}}", "values": {"v": "{{vars.n | add: 1}}"}}})"; break;
      case 2: step = R"({"action": "set_variables", "inputs": {"values": {"n": "{{vars.n | mul: 2}}"}}})"; break;
      case 3: step = R"({"action": "log", "inputs": {"message": "step {{vars.n}} of {{trigger.record.k | upper}}"}})"; break;
      default: step = R"({"action": "create_record", "inputs": {"table": "out", "values": {"from": "{{context.id}}", "n": "{{vars.n}}"}}})"; break;
    }
    actions += (i ? "," : "") + step;
  }
  return R"({"id": "big", "trigger": {"type": "record", "table": "t", "when": "created"}, "variables": {"n": 0}, "actions": [)" +
         actions + "]}";
}

BenchResult run_compile(const BenchOptions& o) {
  EngineOptions eo;
  eo.virtual_clock = true;
  eo.properties.worker_threads = 1;
  Engine engine(eo);
  Diagnostics d = engine.load_text(fifty_actions(), "big.json");
  if (!d.empty()) throw std::runtime_error(d.describe());
  FlowRegistry& flows = engine.core().flows;
  const CompileOptions options = engine.core().compile_options();
  const uint64_t compiles = std::max<uint64_t>(1, o.events / 100);
  auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < compiles; ++i) {
    FlowRegistry::PlanResult p = flows.plan_for_test("big", options);  // compiles every time, never cached
    if (!p.plan) throw std::runtime_error(p.error);
  }
  const double compile_s = seconds_since(start);
  FlowSlot* slot = flows.slot("big");
  start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < o.events; ++i) {
    FlowRegistry::PlanResult p = flows.plan_for(*slot, options);
    if (!p.plan) throw std::runtime_error(p.error);
  }
  const double hit_s = seconds_since(start);
  BenchResult r;
  r.workload = "compile";
  r.events = o.events;
  r.workers = 1;
  r.seconds = compile_s + hit_s;
  r.peak_rss_bytes = peak_rss_bytes();
  r.extra.emplace_back("compiles", static_cast<double>(compiles));
  r.extra.emplace_back("compile_us", compile_s * 1e6 / static_cast<double>(compiles));
  r.extra.emplace_back("cache_hits", static_cast<double>(o.events));
  r.extra.emplace_back("cache_hit_ns", hit_s * 1e9 / static_cast<double>(o.events));
  return r;
}

}  // namespace

BenchResult run_workload(const BenchOptions& o) {
  if (o.workload == "triage") return run_record_workload(o, false);
  if (o.workload == "fanout") return run_record_workload(o, true);
  if (o.workload == "locks") return run_locks(o);
  if (o.workload == "compile") return run_compile(o);
  throw std::invalid_argument("unknown workload '" + o.workload + "' (triage, fanout, locks, compile)");
}

}  // namespace flowrt::bench
