// locks: contexts contend for 4 lock names and write while holding them.
// compile: compiling a 50-action flow, and a plan-cache hit.
#include <chrono>
#include <stdexcept>
#include <string>

#include "bench/workloads/measure.h"
#include "bench/workloads/workloads.h"
#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"

namespace flowrt::bench {

BenchResult run_record_workload(const BenchOptions& o, bool fanout);
BenchResult run_event_workload(const BenchOptions& o);
BenchResult run_recovery_workload(const BenchOptions& o);

namespace {

constexpr const char* kLocked = R"({"id": "locked", "trigger": {"type": "record", "table": "job", "when": "created"}, "actions": [
  {"action": "lock", "inputs": {"key": "{{trigger.record.lock}}", "max_attempts": 1000000, "delay": "1s"}},
  {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{trigger.record.lock}}", "while_holding": "{{trigger.record.lock}}",
                                         "values": {"last": "{{trigger.record.n}}"}}},
  {"action": "unlock", "inputs": {"key": "{{trigger.record.lock}}"}}]})";

// Holds the 4 names until the record gate/g says open, then lets them go.
constexpr const char* kGate = R"({"id": "gate", "trigger": {"type": "api"}, "actions": [
  {"action": "lock", "inputs": {"key": "lock0"}}, {"action": "lock", "inputs": {"key": "lock1"}},
  {"action": "lock", "inputs": {"key": "lock2"}}, {"action": "lock", "inputs": {"key": "lock3"}},
  {"action": "wait_for_condition", "inputs": {"table": "gate", "sys_id": "g", "timeout": "1h",
                                              "condition": {"field": "open", "op": "eq", "value": true}}},
  {"action": "unlock", "inputs": {"key": "lock0"}}, {"action": "unlock", "inputs": {"key": "lock1"}},
  {"action": "unlock", "inputs": {"key": "lock2"}}, {"action": "unlock", "inputs": {"key": "lock3"}}]})";

// The contended phase: every job queues behind the gate, which holds the 4 names; then the
// gate opens and each grant is a hand-off from the job that unlocked to the next in line.
// Timed from the gate's opening to the last job's end.
void run_contended_phase(Engine& engine, const std::vector<Value>& jobs, BenchResult* r) {
  insert_or_throw(engine, "gate", Value::object({{"sys_id", Value("g")}, {"open", Value(false)}}));
  Result<std::string> gate = engine.call_flow("gate");
  if (!gate) throw std::runtime_error(gate.message());
  // settle(0): idle is enough; a full settle would wait for the timers (the gate's timeout).
  engine.settle(0);  // the gate holds the names and waits
  for (const Value& job : jobs) insert_or_throw(engine, "job", job);
  engine.settle(0);  // every job waits in a lock queue
  const uint64_t handoffs_before = engine.core().dispatcher.lock_handoffs();
  const auto start = std::chrono::steady_clock::now();
  const double cpu_before = process_cpu_seconds();
  if (!engine.update("gate", "g", Value::object({{"open", Value(true)}}))) throw std::runtime_error("cannot open the gate");
  engine.settle(0);
  const double seconds = seconds_since(start);
  const double cpu_seconds = process_cpu_seconds() - cpu_before;
  const double handoffs = static_cast<double>(engine.core().dispatcher.lock_handoffs() - handoffs_before);
  r->extra.emplace_back("contended_handoffs", handoffs);
  r->extra.emplace_back("contended_seconds", seconds);
  r->extra.emplace_back("contended_handoffs_per_s", handoffs / seconds);
  // CPU per hand-off (both workers' and the settling thread's): steadier than the rate on
  // a shared machine, and what a change to the hand-off path moves.
  r->extra.emplace_back("contended_cpu_us_per_handoff", handoffs > 0 ? cpu_seconds * 1e6 / handoffs : 0.0);
}

// Two phases on one engine. Free-running: the jobs are inserted as fast as possible and
// take whichever name is free (most grants are immediate); this gives contexts/s, latency
// and memory. Contended: as many jobs again, all queued behind a gate (above); this gives
// contended hand-offs/s.
BenchResult run_locks(const BenchOptions& o) {
  const std::unique_ptr<Engine> opened = open_bench_engine(bench_engine_options(o));
  Engine& engine = *opened;
  load_or_throw(engine, kLocked, "locked.json");
  load_or_throw(engine, kGate, "gate.json");
  for (int i = 0; i < 4; ++i) {
    insert_or_throw(engine, "counter", Value::object({{"sys_id", Value(std::string_view("lock" + std::to_string(i)))}}));
  }
  std::vector<Value> jobs;
  jobs.reserve(o.events);
  for (uint64_t i = 0; i < o.events; ++i) {
    jobs.push_back(Value::object({{"n", Value(static_cast<long long>(i))},
                                  {"lock", Value(std::string_view("lock" + std::to_string(i % 4)))}}));
  }
  BenchResult r = drive_inserts(engine, "job", jobs, o);
  r.workload = "locks";
  run_contended_phase(engine, jobs, &r);
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
  load_or_throw(engine, fifty_actions(), "big.json");
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

namespace {

BenchResult run_named(const BenchOptions& o) {
  if (o.workload == "triage") return run_record_workload(o, false);
  if (o.workload == "fanout") return run_record_workload(o, true);
  if (o.workload == "events") return run_event_workload(o);
  if (o.workload == "locks") return run_locks(o);
  if (o.workload == "compile") return run_compile(o);
  if (o.workload == "recovery") return run_recovery_workload(o);
  throw std::invalid_argument("unknown workload '" + o.workload + "' (triage, fanout, events, locks, compile, recovery)");
}

}  // namespace

BenchResult run_workload(const BenchOptions& o) {
  BenchResult r = run_named(o);
  r.store = o.store == "memory" ? o.store : o.store + " (" + o.durability + ")";
  return r;
}

}  // namespace flowrt::bench
