// EventQueue: the one FIFO queue of trigger events, in commit order.
//
// Built on moodycamel::ConcurrentQueue, which orders items only per producer: every push
// goes through the one producer token, and pushes happen under the Dispatcher's commit
// lock (REQUIRES), so the queue order is the commit order across all producers. With a
// durable store the journal's writer thread is the one pusher instead (runtime/journal.h),
// in append order, which is commit order. Any thread
// may pop; items are claimed in queue order. The moodycamel header stays out of this one.
// size_approx() is exact while no push or pop runs; pops running meanwhile only lower it,
// and pushes are serialised by the commit lock, so a check under that lock never counts
// more events than are queued (the max_queued_events budget).
#pragma once

#include <cstddef>
#include <memory>

namespace flowrt {

class Context;

class EventQueue {
 public:
  EventQueue();
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // REQUIRES: the caller holds the commit lock, or is the journal's writer (one producer
  // at a time).
  void push(Context* event);
  bool try_pop(Context** event);
  size_t size_approx() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flowrt
