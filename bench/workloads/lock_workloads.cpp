#include "bench/workloads/lock_workloads.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "bench/workloads/measure.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"

namespace flowrt::bench {
namespace {

constexpr const char* kLoop = R"({"id": "loop", "trigger": {"type": "api"}, "actions": [
  {"for_each": "{{inputs.rounds}}", "do": [
    {"action": "lock", "inputs": {"key": "{{inputs.key}}", "max_attempts": 1000000, "delay": "1s"}},
    {"action": "unlock", "inputs": {"key": "{{inputs.key}}"}}]}]})";

LockWorkloadResult run(unsigned workers, uint64_t contexts, uint64_t rounds, bool shared_key) {
  EngineOptions o;
  o.virtual_clock = false;
  o.properties.worker_threads = workers;
  o.properties.max_iterations = static_cast<uint32_t>(rounds);
  // Every record is kept, as in `flowrt bench`; they are freed with the engine, after the
  // measured span.
  Engine engine(o);
  load_or_throw(engine, kLoop, "lock_loop.json");
  std::vector<Value> items(rounds, Value(1));
  const Value round_list = Value::array(std::move(items));
  const uint64_t handoffs_before = engine.core().dispatcher.lock_handoffs();
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < contexts; ++i) {
    const std::string key = shared_key ? "shared" : "k" + std::to_string(i);
    Result<std::string> id = engine.call_flow("loop", Value::object({{"rounds", round_list}, {"key", Value(key)}}));
    if (!id) throw std::runtime_error(id.message());
  }
  engine.settle();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LockWorkloadResult r;
  r.contexts = contexts;
  r.pairs = contexts * rounds;
  r.handoffs = engine.core().dispatcher.lock_handoffs() - handoffs_before;
  r.seconds = seconds;
  return r;
}

}  // namespace

LockWorkloadResult run_uncontended_locks(unsigned workers, uint64_t contexts, uint64_t rounds) {
  return run(workers, contexts, rounds, false);
}

LockWorkloadResult run_contended_locks(unsigned workers, uint64_t contexts, uint64_t rounds) {
  return run(workers, contexts, rounds, true);
}

}  // namespace flowrt::bench
