// The real-clock variant of the simulation. Contract: run_real_clock_seed(seed) runs the
// seed's lock scenario (a few lock names, holders that keep a lock past its max_duration
// or briefly, waiters that give up or are granted, writes while_holding) on real workers
// with the real clock and its timer thread, with short real durations so that a seed
// takes well under a second, and checks what holds whatever the timing (mutual exclusion,
// fencing tokens, no lock left held, every context ended) and the bounds the timing must
// keep (no give-up before (max_attempts - 1) x delay, no lease ended before max_duration,
// a write while_holding after its lease ended is refused with lock_lost).
#pragma once

#include <cstdint>

#include "tests/simulation/driver.h"

namespace flowrt::sim {

SeedRun run_real_clock_seed(uint64_t seed, Coverage* cov);

}  // namespace flowrt::sim
