// Perturbation points: a test hook, and nothing else.
//
// The seeded simulation (tests/simulation) runs the engine on real worker threads and
// wants the interleavings of those threads to vary with the seed. The engine calls
// perturb(point) at a handful of places where the order of two threads matters (before
// the commit lock is taken for a write, while a context parks, when a context is woken,
// when a worker has just taken work, before a lock is released). A test installs one
// process-wide function (set_perturbation) that may yield or spin there; production code
// never installs one, and then a call costs one relaxed atomic load and a branch.
//
// Contract: the installed function is called on any engine thread, sometimes with engine
// locks held (kWake may come under the commit lock), so it must not call the engine, must
// only yield or spin briefly, and must be safe for concurrent use. Install it before the
// engine's threads start and remove it (nullptr) after they stop.
#pragma once

#include <atomic>

namespace flowrt {

enum class PerturbPoint : unsigned char {
  kBeforeCommitLock,  // a write, event or start is about to take the commit lock
  kParking,           // EngineCore::park: between begin_park and end_park
  kWake,              // Context::wake: a wake-up is about to be delivered
  kWorkTaken,         // a worker has taken a context and is about to run it
  kBeforeLockRelease, // an unlock is about to take the commit lock
};

using PerturbFn = void (*)(PerturbPoint);

inline std::atomic<PerturbFn> g_perturb{nullptr};

inline void set_perturbation(PerturbFn fn) { g_perturb.store(fn, std::memory_order_release); }

inline void perturb(PerturbPoint point) {
  if (PerturbFn fn = g_perturb.load(std::memory_order_relaxed)) fn(point);
}

}  // namespace flowrt
