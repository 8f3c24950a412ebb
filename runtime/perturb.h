// Perturbation points: a test hook for steering thread interleavings.
//
// The engine calls perturb(point) at a few places where the order of two threads matters
// (before taking the commit lock, between parking and registering a wait, ...). In
// production no hook is installed and each call is one atomic load. A test (the
// seeded simulation with real threads, or a test reproducing a race) installs one
// process-wide function with set_perturb_hook that may yield, spin or wait for another
// thread at a given point, so that a rare interleaving becomes a deterministic one.
// Thread-safety: the hook may be installed while engines run; what the installing thread
// wrote before installing it is visible to the hook on every engine thread (release /
// acquire; an acquire load is a plain load on x86). The hook itself is called from any
// engine thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace flowrt {

enum class PerturbPoint : uint8_t {
  kBeforeCommitLock,     // a write, before it takes the commit lock
  kBetweenParkAndWait,   // a context is parking, its wait not yet registered
  kWake,                 // a wake-up is about to be handed to a context
  kWorkerTookWork,       // a worker took a context, before running it
  kBeforeLockRelease,    // an unlock, before it takes the commit lock
  kSettleIdle,           // settle found the engine idle, before it looks at the timers
  kBeforeStoreWrite,     // the journal's writer has a batch, before it writes it to the store
  kPreviousBatchFinished,  // the writer finished the batch before the one the store now writes
  kRecoveryBeforeLocks,  // recover() put back the contexts it read, not yet the locks' holders
  kStartAdmitting,       // a start (a call, a tick) under the commit lock found its flow active
};

using PerturbHook = void (*)(PerturbPoint);

inline std::atomic<PerturbHook>& perturb_hook() {
  static std::atomic<PerturbHook> hook{nullptr};
  return hook;
}

// Installs `hook` (null: none).
inline void set_perturb_hook(PerturbHook hook) { perturb_hook().store(hook, std::memory_order_release); }

inline void perturb(PerturbPoint point) {
  if (PerturbHook hook = perturb_hook().load(std::memory_order_acquire)) hook(point);
}

}  // namespace flowrt
