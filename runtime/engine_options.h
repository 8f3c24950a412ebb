// EngineOptions: how an Engine is built (its clock, properties, lock limits, seed, where its
// state is kept, and the hooks tests and tools use). Plain data, copied into the engine when it is built; what
// can change later goes through Engine::set_property. A project's config.json gives these
// (runtime/project.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "flowrt/plans/time.h"
#include "flowrt/runtime/commit.h"
#include "flowrt/runtime/properties.h"

namespace flowrt {

struct EngineOptions {
  // Virtual clock (moves only on advance/settle) or the system clock.
  bool virtual_clock = true;
  // Where a virtual clock starts; brought into [kMinTime, kMaxTime] (config.json and the
  // test fixture refuse a time outside it).
  TimeMs start_time = kDefaultVirtualStart;
  // Rules and budgets; worker_threads among them.
  EngineProperties properties;
  // Lock names declared with a limit (config "locks"); undeclared names have limit 1.
  std::map<std::string, int64_t> lock_limits;
  // Seed of generated sys_ids. A store that already holds state keeps the seed it was
  // made with, so that sys_ids go on without colliding with the stored ones.
  uint64_t seed = 0;
  // Where the engine keeps its state (docs/DURABILITY.md): "memory" (the default: in this
  // process only, gone when the engine is) or "sqlite": the SQLite file `data_file`,
  // created when missing. An engine opening a file that holds state goes on from it:
  // records, definitions, counters, finished contexts; a virtual clock goes on from where
  // the last engine left it (start_time applies to a new file only). Open such an engine
  // with Engine::open, which reports a file it cannot use.
  // "postgresql": the PostgreSQL database `store_url` names (a libpq connection URL), its
  // tables created when missing, gone on from like a file.
  std::string store = "memory";
  std::string data_file;
  std::string store_url;
  // postgresql: the lead epoch of the cluster node this engine runs for (StoreOptions::
  // lead_epoch); 0 outside a cluster.
  int64_t store_lead_epoch = 0;
  // A durable store's writes that fail are retried without end by default (a full disk
  // may be freed). With a limit (ms > 0), once they have failed for that long without a
  // write succeeding, the engine gives its store up: nothing is written or delivered any
  // more, every wait for durability (a write from outside, loading definitions) returns an
  // error, and `on_store_lost` is called once, from the journal's thread, with the last
  // failure. A cluster node sets it to its lease: its lead is worth nothing then.
  int64_t store_give_up_ms = 0;
  std::function<void(const std::string& why)> on_store_lost;
  // Milliseconds of a monotonic clock that measures running time (runtime_ms and the
  // max_run_time quota). Default: std::chrono::steady_clock. Tests inject a fake one that a
  // "slow" action moves on, so a quota can be tested without burning real time.
  std::function<double()> run_clock;
  // How often, in real milliseconds, the watchdog looks for custom actions past their
  // deadline while any runs. Tests of the quota at step boundaries, whose fake run clock
  // jumps past the deadline inside an action, set it long so the watchdog stays out.
  int watchdog_period_ms = 10;
  // Stamp each context with the real (steady) time its event was committed and the time
  // it ended, in nanoseconds, for latency measurements (flowrt bench).
  bool measure_latency = false;
  // Check the lock table's invariants after every lock operation and remember the first
  // one broken (Dispatcher::lock_violation). For tests; costs time on every lock operation.
  bool check_invariants = false;
  // Simulation (tests): no worker threads. advance and settle run the contexts on the
  // calling thread, one step at a time: up to `worker_threads` contexts (0: 4) are in
  // flight, as if on that many workers, and a generator seeded by this picks which one
  // takes the next step or whether a free worker takes the next queued context. The same
  // seed and the same operations replay the same run. Needs the virtual clock; contexts
  // run only inside advance and settle.
  std::optional<uint64_t> simulation_seed;
  // Simulation only: called on the driving thread after every step a context takes, with
  // the id of that context and no engine lock held, so a test can check invariants
  // between any two steps.
  std::function<void(std::string_view context_id)> after_simulated_step;
  // Called under the commit lock for every commit, in commit order (runtime/commit.h):
  // tests and tools that follow the commit log. Must be quick; must not call the engine.
  CommitObserver on_commit;
  // Level of the engine's own log on stderr: off, error, warn, info, debug ("" keeps the
  // current one, warn by default or FLOWRT_LOG_LEVEL).
  std::string log_level;
};

}  // namespace flowrt
