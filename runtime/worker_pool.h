// WorkerPool: the threads that run contexts.
//
// Work comes from two places: contexts made ready again (woken from a wait, or cancelled)
// in the ready queue, and new trigger events in the EventQueue; ready contexts go first.
// A semaphore holds one token per item, so idle workers sleep and a push wakes exactly
// one. Shutdown order: stop() stops accepting work, wakes every worker and joins them;
// contexts still queued stay queued (the engine decides what happens to them).
// Thread-safety: push_ready and notify may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/thread_annotations.h"

namespace flowrt {

class Context;
class EventQueue;

class WorkerPool {
 public:
  using Runner = std::function<void(Context*)>;

  WorkerPool(EventQueue& events, Runner runner);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void start(unsigned threads);
  void stop();
  unsigned threads() const;

  // Hands a ready context to a worker.
  void push_ready(Context* ctx);
  // `n` events were pushed to the EventQueue.
  void notify_events(size_t n);

  // Gives up on worker `id` (stuck in user code; see Watchdog): detaches it and starts a
  // replacement, unless stopping.
  void retire(std::thread::id id);

  // Without threads (simulation): is anything queued, and take the context a worker would
  // take next (ready ones first), or null.
  bool has_queued() const;
  Context* take_queued();

 private:
  void loop();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  EventQueue& events_;
  Runner runner_;
  mutable Mutex threads_mu_;
  std::vector<std::thread> threads_ GUARDED_BY(threads_mu_);
  std::atomic<bool> stopping_{false};
};

}  // namespace flowrt
