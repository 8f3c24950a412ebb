// EngineStats: counters of an engine at one moment, for operators and tests (Engine::stats).
// Plain data; each figure is read on its own (not one consistent snapshot).
#pragma once

#include <cstdint>
#include <iosfwd>

#include "flowrt/plans/value.h"

namespace flowrt {

struct EngineStats {
  uint64_t contexts_started = 0;   // seq of the last context started
  uint64_t commits = 0;            // commit sequence number of the last commit
  uint64_t queued_events = 0;      // trigger events queued, not yet started
  uint64_t waiting_contexts = 0;   // contexts parked (a wait, a record condition, a lock)
  uint64_t runnable_contexts = 0;  // contexts queued, ready to run or running (not waiting)
  uint64_t resting_contexts = 0;   // of those, resting: their state in the store (durable stores)
  uint64_t contexts_kept = 0;      // context records in memory
  uint64_t dropped_contexts = 0;   // finished records dropped by context_retention
  uint64_t dropped_skipped = 0;    // skipped starts dropped by context_retention
  uint64_t abandoned_calls = 0;    // custom action calls the watchdog gave up on
  uint64_t abandoned_threads = 0;  // of their threads, those still stuck (max_abandoned_threads)
  uint64_t worker_threads = 0;
  uint64_t lock_grants = 0;
  uint64_t lock_handoffs = 0;      // grants to a context that waited in a queue
  uint64_t store_checkpoints = 0;          // the store's background checkpoints (sqlite)
  uint64_t store_checkpoint_failures = 0;  // of those, failed (each is tried again)

  Value to_value() const {
    auto n = [](uint64_t v) { return Value(static_cast<long long>(v)); };
    return Value::object({{"contexts_started", n(contexts_started)},
                          {"commits", n(commits)},
                          {"queued_events", n(queued_events)},
                          {"waiting_contexts", n(waiting_contexts)},
                          {"runnable_contexts", n(runnable_contexts)},
                          {"resting_contexts", n(resting_contexts)},
                          {"contexts_kept", n(contexts_kept)},
                          {"dropped_contexts", n(dropped_contexts)},
                          {"dropped_skipped", n(dropped_skipped)},
                          {"abandoned_calls", n(abandoned_calls)},
                          {"abandoned_threads", n(abandoned_threads)},
                          {"worker_threads", n(worker_threads)},
                          {"lock_grants", n(lock_grants)},
                          {"lock_handoffs", n(lock_handoffs)},
                          {"store_checkpoints", n(store_checkpoints)},
                          {"store_checkpoint_failures", n(store_checkpoint_failures)}});
  }
};

// How GoogleTest prints engine counters: their JSON (to_value), indented.
void PrintTo(const EngineStats& stats, std::ostream* os);

}  // namespace flowrt
