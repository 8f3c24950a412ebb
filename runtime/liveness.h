// Liveness: what each context that has not ended waits on, read from the engine's own
// structures (the timer queue, the record waiters, the lock queues) rather than from the
// context records, so that a check can tell a wait that can end from one that never will.
// Read-only; it changes nothing in the engine.
#pragma once

#include <string>
#include <vector>

#include "runtime/engine_core.h"

namespace flowrt {

struct ContextWait {
  enum class On : uint8_t {
    kRun,      // not parked: queued, ready, running or parking
    kNothing,  // parked with no wait: nothing can ever wake it
    kTimer,    // a wait step's timer
    kRecord,   // a wait_for_condition step: a record waiter (and its timeout's timer, if any)
    kLock,     // a lock step: a place in the lock's queue
  };
  std::string context;  // "ctx-7"
  std::string status;   // its record's status (waiting, in_progress)
  On on = On::kRun;
  std::string what;     // what it waits on: "timer due at T", "record t0/a0", "lock 'pool'"
  // "" when the wait can end because what it waits on exists: the timer is still queued
  // and due after now; the record exists, the context is among its waiters, the record
  // does not already meet the condition (a lost wake-up; conditions on changes are taken
  // as not met) and the timeout's timer, if any, is queued; the context is in the lock's
  // queue and its give-up time is after now. Otherwise, why it cannot end. Always "" for
  // kRun; always set for kNothing.
  std::string problem;
};

// Every context that has not ended, in seq order, with what it waits on.
// REQUIRES: no context runs or is woken meanwhile, as after settle or advance on a virtual
// clock with no other thread calling the engine (the parked contexts' wait requests are
// read without their running thread).
std::vector<ContextWait> context_waits(EngineCore& core);

std::string_view wait_on_name(ContextWait::On on);

}  // namespace flowrt
