// Engine-level lock workloads, on the real clock and the real worker pool: what the lock
// benchmarks measure (bench/engine/, `flowrt bench --workload locks`).
#pragma once

#include <cstdint>

namespace flowrt::bench {

struct LockWorkloadResult {
  uint64_t contexts = 0;
  uint64_t pairs = 0;     // lock + unlock pairs completed
  uint64_t handoffs = 0;  // grants to a context that waited in the queue
  double seconds = 0;
};

// `contexts` contexts, each on its own lock name, each doing `rounds` lock+unlock pairs.
LockWorkloadResult run_uncontended_locks(unsigned workers, uint64_t contexts, uint64_t rounds);
// `contexts` contexts on one lock name, each doing `rounds` lock+unlock pairs; almost
// every grant is a hand-off from the context that unlocked to the next one queued.
LockWorkloadResult run_contended_locks(unsigned workers, uint64_t contexts, uint64_t rounds);

}  // namespace flowrt::bench
