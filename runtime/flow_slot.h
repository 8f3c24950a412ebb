// FlowSlot: the runtime's handle on one flow id, stable for the engine's life.
//
// It carries the plan cache entry of the flow (an immutable PlanEntry, swapped under a spin
// lock held only to copy a pointer, so starting a context never waits for a compile) and
// its lifecycle state
// (active flag, schedule), which the FlowRegistry changes under its own lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "plans/plan.h"
#include "plans/value.h"
#include "runtime/clock.h"
#include "base/thread_annotations.h"

namespace flowrt {

struct FlowSlot {
  FlowSlot(uint32_t i, std::string flow_id)
      : index(i), id(std::move(flow_id)), id_value(std::string_view(id)) {}

  // ---- constant ----
  const uint32_t index;
  const std::string id;
  const Value id_value;

  // ---- plan cache entry ----
  struct PlanEntry {
    std::shared_ptr<const Plan> plan;  // null when it does not compile
    std::string error;                 // why, when plan is null
    uint64_t epoch = UINT64_MAX;       // the definitions epoch it was checked against
  };
  // The current entry. (Not std::atomic<std::shared_ptr>: libstdc++ 12's unlocks it with
  // relaxed order after a load, a data race that ThreadSanitizer reports.)
  std::shared_ptr<const PlanEntry> cache() const {
    SpinLockGuard lock(cache_mu_);
    return cache_;
  }
  // Held while checking or compiling after a change, so that concurrent starts compile a
  // changed flow once. Lock order: compile_mu, then the registry's lock.
  Mutex compile_mu;

  // The cached plan when it was checked against definitions epoch `epoch` and compiles,
  // else null. One reference taken, under the spin lock: the path of every context start.
  std::shared_ptr<const Plan> plan_if_current(uint64_t epoch) const {
    SpinLockGuard lock(cache_mu_);
    if (!cache_ || cache_->epoch != epoch) return nullptr;
    return cache_->plan;
  }
  // The cached plan (null when none or it does not compile).
  std::shared_ptr<const Plan> cached_plan() const {
    std::shared_ptr<const PlanEntry> e = cache();
    return e ? e->plan : nullptr;
  }
  void set_cache(std::shared_ptr<const Plan> plan, std::string error, uint64_t epoch) {
    auto entry = std::make_shared<const PlanEntry>(PlanEntry{std::move(plan), std::move(error), epoch});
    SpinLockGuard lock(cache_mu_);
    cache_.swap(entry);  // the old entry is freed after the lock is let go
  }

  // ---- the trigger of the published version: set under FlowRegistry's lock whenever the
  // published version changes (a load, publish, activate); read by the trigger index, the
  // schedules and API starts. Kept apart from the plan, so that it is the new version's
  // from the moment that version is published, and a flow whose plan no longer compiles
  // (a subflow it calls changed) still starts on it, each start ending in error with the
  // compile error (SPEC 9.6). ----
  struct Trigger {
    std::shared_ptr<const TriggerSpec> spec;  // null: the flow has no published version
    std::string version;                      // the published definition's fingerprint
  };
  Trigger trigger() const {
    SpinLockGuard lock(cache_mu_);
    return trigger_;
  }
  // The trigger alone, without copying its version: what an API start checks.
  std::shared_ptr<const TriggerSpec> trigger_spec() const {
    SpinLockGuard lock(cache_mu_);
    return trigger_.spec;
  }
  void set_trigger(Trigger t) {
    SpinLockGuard lock(cache_mu_);
    trigger_.spec.swap(t.spec);  // the old one is freed after the lock is let go
    trigger_.version.swap(t.version);
  }

  // ---- lifecycle: written under FlowRegistry's lock; read without it (the schedule
  // timers read activated_at on the timer thread) ----
  std::atomic<bool> active{false};
  std::atomic<TimeMs> activated_at{0};
  // The activation time the store had for this flow while it was active (-1: none): the
  // next activate (a load of the same flow at start, or recovery) keeps it instead of
  // starting the flow's schedule afresh. A deactivate or a load of it as inactive forgets it.
  TimeMs stored_activated_at = -1;

  // ---- schedule: guarded by EngineCore's schedule lock ----
  TimerHandle schedule_timer;
  uint64_t schedule_generation = 0;  // a schedule timer of an older generation is stale
  std::string schedule_version;      // the trigger version the timer was armed for
  TimeMs last_tick = -1;             // the last occurrence fired: a re-arm looks past it
  // The occurrence that fell due last while no engine ran (-1: none): the next arm fires it
  // at once, for all the occurrences missed, and then keeps the rhythm.
  TimeMs missed_at = -1;
  // On a virtual clock, the first occurrence to arm from when the clock already stands past
  // it (-1: none): occurrences that fell due during the last run and had not fired when it
  // ended. A virtual clock stands still while no engine runs, so none was missed meanwhile:
  // each fires at the next advance, with its own time, as in one run.
  TimeMs due_from = -1;

 private:
  mutable SpinLock cache_mu_;
  std::shared_ptr<const PlanEntry> cache_ GUARDED_BY(cache_mu_);
  Trigger trigger_ GUARDED_BY(cache_mu_);
};

}  // namespace flowrt
