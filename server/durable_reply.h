// answer_when_durable: how the service answers a write with a durable store. The write's
// handler runs under a DurabilityDeferral, so the engine returns once the change is
// committed; when it is not durable yet, the reply waits, deferred, until it is (the
// store's writer wakes it: no thread waits per request), and becomes a 503 when it never
// will be (the store was given up, or the engine stopped first), or is not yet after
// `durable_within` (the store is still retried: it may be). While the server drains, the
// reply's last poll blocks its I/O thread until the store has written the change or given
// it up (what was done is answered; nothing else waits then), until the drain's deadline
// (DrainDeadline: one moment for every reply, so replies drained one after another on one
// I/O thread take the drain's time once, not once each): then the answer is a 503 saying the change is not written and is lost unless the store
// takes it while the engine stops (a full disk must not keep the server from stopping).
// A reply the handler deferred itself (a call that waits for its context's end) is polled once the change is
// durable, and has its own deadline instead of `durable_within`. What a client is told
// happened is durable, as when the handler waited.
//
// Thread-safety: called on the thread that dispatches the request; the reply it returns
// is polled on its connection's I/O thread, and woken from the store's writer thread. The
// Engine outlives every reply.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "runtime/engine.h"
#include "server/router.h"

namespace flowrt::server {

// The moment by which every reply polled at the drain has its answer: `within` from the
// first time any of them asks. Until 2026-12-06 each reply waited `within` of its own, so
// three on one I/O thread outlasted the drain and the last was never answered.
// Thread-safety: any thread. Shared by the service's replies.
class DrainDeadline {
 public:
  explicit DrainDeadline(std::chrono::milliseconds within) : within_(within) {}
  // What is left of the drain's time (zero once it has run out); the first call starts it.
  std::chrono::milliseconds left();

 private:
  const std::chrono::milliseconds within_;
  std::once_flag started_;
  std::chrono::steady_clock::time_point until_;  // set once, under started_
};

Reply answer_when_durable(Engine& engine, const std::function<Reply()>& handler,
                          std::chrono::milliseconds durable_within, std::shared_ptr<DrainDeadline> drain);

}  // namespace flowrt::server
