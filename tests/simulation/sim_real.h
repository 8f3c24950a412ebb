// The real-clock variant's scenario. Contract: real_clock_scenario(seed) returns API flows
// that exercise the lock paths a timer thread drives on the real clock, with short real
// durations (a seed takes well under a second): incrementers (lock, read, write
// while_holding, log, unlock), hogs that keep a lock past a short max_duration and then
// try to write while_holding it (refused with lock_lost once the lease ended), and
// quitters whose few attempts run out while a hog holds the lock. The traffic starts them
// (call_flow with the lock name and the weight to take: all of the limit for those that
// write, so that writers exclude each other) and settles. The model checks what holds
// whatever the timing and the bounds the timing must keep (model_locks.cpp, with
// Scenario::variant kRealClock).
#pragma once

#include <cstdint>

#include "tests/simulation/generator.h"

namespace flowrt::sim {

Scenario real_clock_scenario(uint64_t seed);

}  // namespace flowrt::sim
