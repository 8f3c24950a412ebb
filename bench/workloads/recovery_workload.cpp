// recovery: how long an engine takes to open a data file holding many waiting contexts and
// resume them all, and the resident memory each waiting context costs once resumed
// (docs/PERFORMANCE.md). The file is made by a child process (fork, before this process
// starts any thread), so that the parent's memory holds only what recovery built.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "bench/workloads/measure.h"
#include "bench/workloads/workloads.h"
#include "runtime/engine_core.h"

namespace flowrt::bench {
namespace {

// An approval: waits up to 30 days for its request to be decided.
constexpr const char* kApproval = R"({"id": "approval", "trigger": {"type": "record", "table": "request", "when": "created"},
  "actions": [{"id": "decision", "action": "wait_for_condition", "inputs": {"table": "request",
    "sys_id": "{{trigger.sys_id}}", "condition": {"field": "approved", "op": "eq", "value": true}, "timeout": "30d"}}]})";

EngineOptions recovery_engine_options(const BenchOptions& o) {
  EngineOptions eo = bench_engine_options(o);
  eo.measure_latency = false;
  eo.properties.max_waiting_contexts = o.events + 1;
  return eo;
}

// The child: `o.events` requests, each leaving a context waiting; the file is complete when
// the engine is gone.
void make_waiting_file(const BenchOptions& o) {
  BenchOptions fast = o;
  fast.durability = "off";
  const std::unique_ptr<Engine> opened = open_bench_engine(recovery_engine_options(fast));
  Engine& engine = *opened;
  load_or_throw(engine, kApproval, "approval.json");
  for (uint64_t i = 0; i < o.events; ++i) {
    insert_or_throw(engine, "request",
                    Value::object({{"sys_id", Value(std::string_view("r" + std::to_string(i)))}, {"approved", Value(false)}}));
    if (o.progress && i % 10000 == 0) o.progress(0.9 * static_cast<double>(i) / static_cast<double>(o.events));
  }
  engine.settle(0);
}

}  // namespace

BenchResult run_recovery_workload(const BenchOptions& o) {
  if (o.store != "sqlite" || o.data_file.empty()) {
    throw std::invalid_argument("--workload recovery needs --store sqlite --data NEWFILE");
  }
  // A file that cannot be made is told here, before the child that would make it: opened
  // and closed (its threads joined before the fork), it is a new, empty data file.
  open_bench_engine(recovery_engine_options(o)).reset();
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    int code = 0;
    try {
      make_waiting_file(o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "flowrt bench: making the data file: %s\n", e.what());
      code = 1;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the process making the data file failed");
  }

  const uint64_t rss_before = rss_bytes();
  const double cpu_before = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<Engine> opened = open_bench_engine(recovery_engine_options(o));
  Engine& engine = *opened;
  // What opening took (the records, and each waiting context's request among them), apart
  // from what recover() builds: the contexts.
  const uint64_t rss_opened = rss_bytes();
  const double opening = seconds_since(start);
  load_or_throw(engine, kApproval, "approval.json");
  const Value report = engine.recover();
  engine.settle(0);
  const double seconds = seconds_since(start);
  const uint64_t rss_after = rss_bytes();
  const uint64_t waiting = engine.core().waiting();
  if (waiting != o.events) {
    throw std::runtime_error("recovered " + std::to_string(waiting) + " waiting contexts of " + std::to_string(o.events) +
                             ": " + report.to_json().substr(0, 400));
  }
  BenchResult r;
  r.workload = "recovery";
  r.events = o.events;
  r.contexts = waiting;
  r.workers = o.workers;
  r.seconds = seconds;
  r.contexts_per_s = static_cast<double>(waiting) / seconds;
  r.cpu_us_per_context = (process_cpu_seconds() - cpu_before) * 1e6 / static_cast<double>(waiting);
  r.peak_rss_bytes = peak_rss_bytes();
  r.bytes_per_context = static_cast<double>(rss_after - rss_before) / static_cast<double>(waiting);
  r.extra.emplace_back("waiting_contexts_resumed", static_cast<double>(report["resumed"].size()));
  r.extra.emplace_back("recovery_seconds", seconds);
  // Of which opening the file (its records and definitions), before recover() reads the contexts.
  r.extra.emplace_back("of_which_opening_seconds", opening);
  r.extra.emplace_back("resident_bytes_per_waiting_context", r.bytes_per_context);
  r.extra.emplace_back("of_which_records_bytes_per_context",
                       static_cast<double>(rss_opened - rss_before) / static_cast<double>(waiting));
  return r;
}

}  // namespace flowrt::bench
